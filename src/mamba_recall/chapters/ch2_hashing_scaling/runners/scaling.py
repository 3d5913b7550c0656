r"""Chapter 2 runner: the recall scaling-law grids of paper 002, written as one result bundle.

    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.scaling --preset ci    [--device cpu] [--parts ...]
    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.scaling --preset paper --device cuda

writes ``results/ch2_scaling_<preset>.json`` (+ CSV tables) with:

* ``grid``  — Fig. 6 columns per regime and (D, N) cell: (a) Eq. 15 printed, (a′) Eq. 77, (a″) the authors'
  later-revision law (a = 3 / 5/4), (b) the designed Thm 2 circuit (full and values-only readouts),
  (c) the trained simplified model (max over seeds), (d) the trained full Mamba (paper preset only);
* ``multilayer`` — Fig. 7, accuracy vs (Λ, N), Alg. 2 with residual;
* ``repetition`` — Figs. 10–11, repeating keys / queries, 1..3 layers;
* ``ablation`` — Tab. 10: rows Base, A, B with the selective model (Δ, d_conv 4; Ā learned / Ā = I / no gate)
  and rows C, D, E with the linear model (d_conv 4 / 2 / none);
* ``speed`` — training steps/s of the simplified model and the speed-up from ensembling.

All trained simplified models of one experiment train **together** as one :class:`LinearMamba` ensemble
(members of different sizes are masked; see :mod:`mamba_recall.models.linear_mamba`), which is what
makes the paper preset (32×31 cells × 10 seeds × 3 regimes) fit a single GPU. All members of an
ensemble see the same data stream; seeds differ in the initialisation [ours].
"""

from __future__ import annotations

import argparse
import sys
import time

import pandas as pd
import torch

from mamba_recall.devices import resolve_device
from mamba_recall.models.linear_mamba import LinearMamba, SelectiveAblationMamba
from mamba_recall.presets import experiment, seeds
from ..configs import RECIPES
from mamba_recall.results import command_provenance, save_bundle
from mamba_recall.tasks.mqar import batch_fn, mqar
from mamba_recall.theory.capacity import p_success
from mamba_recall.theory.hashing_circuit import designed_accuracy
from ..training.ensemble import train_ensemble
from mamba_recall.runners import runner_command

PARTS = ("speed", "grid", "multilayer", "repetition", "ablation", "full")
#: How :func:`train_members` trains a group of simplified models: one batched ensemble, or each member alone.
WAYS = ("ensemble", "separate")
#: On the CPU one ensemble is faster while its activations stay in the cache; past that, training the members one
#: after the other is. Measured with ``python benchmarks/ch2_ensemble.py`` (model-steps per CPU second, one thread,
#: AMD EPYC with a 32 MiB L3; README, "Speed of the scans"): 12 members of V 64, D 32, N 16, batch 64, L 32
#: (9 MiB of activations by :func:`activation_bytes`): ensemble 209 vs separate 148; 8 members of V 512, D 32,
#: batch 128, L 64 (32 MiB): 27 vs 42; 8 members of V 1024, D 64, N 32, batch 128, L 64 (48 MiB): 8.9 vs 15.3.
CPU_ENSEMBLE_BYTES = 16 * 2**20
EVAL_SEED = seeds.MQAR_EVAL  # held-out data stream, disjoint from training seeds (base 0 + step)


def _cells(cfg):
    return [(d, n) for d in cfg["Ds"] for n in cfg["Ns"] if not (cfg.get("skip_N_gt_D") and n > d)]


def _chunks(seq, size):
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def activation_bytes(n_members: int, batch: int, L: int, d_inner: int, n_layer: int = 1) -> int:
    """float32 bytes of the main activations of one training step of an ensemble: per member and layer the
    (batch, L, d_inner) streams and the (batch, L, L) attention-form scores, ``4 n Λ B L (d_inner + L)``."""
    return 4 * n_members * n_layer * batch * L * (d_inner + L)


def default_way(device, n_members: int = 1, batch: int = 1, L: int = 1, d_inner: int = 1, n_layer: int = 1) -> str:
    """The faster way (:data:`WAYS`) to train a group of ``n_members`` simplified models on ``device``: always
    ``"ensemble"`` on a GPU; on the CPU ``"ensemble"`` up to :data:`CPU_ENSEMBLE_BYTES` of activations
    (:func:`activation_bytes`), ``"separate"`` above."""
    if torch.device(device).type != "cpu":
        return "ensemble"
    small = activation_bytes(n_members, batch, L, d_inner, n_layer) <= CPU_ENSEMBLE_BYTES
    return "ensemble" if small else "separate"


def _train_separately(model, make_batch, *, target_accuracy, **kw) -> list[float]:
    """Every member of the ensemble ``model`` trained alone (:meth:`LinearMamba.member_model`: same allocated size,
    same initial parameters, same data stream, all ``steps``), then the ensemble's rule applied to the evaluation
    records: stop at the first evaluation where *every* member has reached ``target_accuracy``, and return each
    member's best accuracy over the evaluations up to there -- the numbers :func:`train_ensemble` gives for
    ``model``, bit for bit on one machine (a member alone computes what it computes inside the ensemble)."""
    curves = []
    for e in range(model.n_members):
        r = train_ensemble(model.member_model(e), make_batch, **kw)
        curves.append([h["accuracy"][0] for h in r.evals])
    n_evals = len(curves[0])
    stop = next((i for i in range(n_evals) if all(c[i] >= target_accuracy for c in curves)), n_evals - 1)
    return [max(c[: stop + 1]) for c in curves]


def train_members(
    V,
    Nf,
    L,
    sizes,
    *,
    steps,
    batch,
    warmup,
    hold,
    n_eval,
    seed=0,
    device="cpu",
    task="mqar",
    task_kw=None,
    d_conv=2,
    residual=None,
    max_members=None,
    recipe="code",
    memory_gb=None,
    way=None,
):
    """Train one simplified model per entry of ``sizes`` ((D, N[, Λ]) tuples), grouped in ensembles of at most
    ``max_members``; return the list of held-out accuracies (best over evaluations, as the [code] runs).

    ``way`` (:data:`WAYS`; default: :func:`default_way` for each group on ``device``): ``"ensemble"`` trains a group
    as one batched :class:`LinearMamba`; ``"separate"`` trains its members one after the other as one-member models
    (:func:`_train_separately`). Both give the same numbers; they differ in speed only."""
    if way is not None and way not in WAYS:
        raise ValueError(f"unknown way {way!r}; use one of {WAYS}.")
    task_kw = task_kw or {}
    ev = mqar(V, Nf, L, n_eval, EVAL_SEED, variant="standard" if task == "mqar" else task, **task_kw)
    accs = []
    if max_members is None:  # as many members as the activations allow (≈ 4 saved copies, fp32)
        Dm, Nm = max(s[0] for s in sizes), max(s[1] for s in sizes)
        Lm = max(s[2] if len(s) > 2 else 1 for s in sizes)
        per_member = 4 * 4 * batch * (Nf * V + Lm * (L * L + L * (2 * Dm * 4 + 2 * Nm + Dm)))
        budget = (memory_gb or (20 if torch.device(device).type == "cuda" else 1)) * 2**30
        max_members = max(1, min(1024, int(budget // per_member)))
    for k, chunk in enumerate(_chunks(list(sizes), max_members)):
        Dm = max(s[0] for s in chunk)
        Nm = max(s[1] for s in chunk)
        Lm = max(s[2] if len(s) > 2 else 1 for s in chunk)
        res = residual if residual is not None else (Lm > 1)
        chunk_way = way or default_way(device, len(chunk), batch, L, 2 * Dm, Lm)
        model = LinearMamba(
            V,
            Dm,
            Nm,
            Lm,
            ensemble=len(chunk),
            member_sizes=chunk,
            d_conv=d_conv,
            residual=res,
            seed=seed + 7919 * k,
            device=device,
        )
        make_batch = batch_fn(V, Nf, L, batch, seed * seeds.TRAIN_STRIDE, task=task, **task_kw)
        kw = dict(
            steps=steps,
            eval_batch=ev,
            eval_every=max(50, steps // 6),
            seed=seed,
            device=device,
            recipe=recipe,
            overrides=dict(
                warmup=min(warmup, steps - 1),
                batch_size=batch,
                **({"hold": hold} if RECIPES[recipe]["schedule"] == "code" else {}),
            ),
        )
        if chunk_way == "separate":
            accs += _train_separately(model, make_batch, target_accuracy=0.999, **kw)
        else:
            accs += train_ensemble(model, make_batch, target_accuracy=0.999, **kw).best_accuracy
    return accs


def run_speed(cfg, device):
    c = cfg["speed"]
    mb = batch_fn(c["V"], c["Nf"], c["L"], c["batch"], 0)
    data = [mb(s) for s in range(c["steps"] + 2)]
    rows = []
    for n_members in c["ensembles"]:
        model = LinearMamba(c["V"], c["D"], c["N"], ensemble=n_members, seed=0, device=device)
        train_ensemble(model, lambda s: data[s], steps=2, device=device)  # warm-up
        if device.type == "cuda":
            torch.cuda.synchronize()
        r = train_ensemble(model, lambda s: data[s], steps=c["steps"], device=device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        rows.append(
            dict(ensemble=n_members, steps_per_s=r.steps_per_second, model_steps_per_s=n_members * r.steps_per_second)
        )
    base = rows[0]["model_steps_per_s"]
    for row in rows:
        row["speedup"] = row["model_steps_per_s"] / base
    return pd.DataFrame(rows)


def run_grid(cfg, device, log, way=None):
    rows = []
    cells = _cells(cfg)
    for name, (V, Nf, L) in cfg["regimes"].items():
        t0 = time.perf_counter()
        sizes = [(d, n) for (d, n) in cells for _ in range(cfg["seeds"])]
        accs = train_members(
            V,
            Nf,
            L,
            sizes,
            steps=cfg["steps"],
            batch=cfg["batch"],
            warmup=cfg["warmup"],
            hold=cfg["hold"],
            n_eval=cfg["n_eval"],
            device=device,
            way=way,
        )
        for i, (d, n) in enumerate(cells):
            per_seed = accs[i * cfg["seeds"] : (i + 1) * cfg["seeds"]]
            row = dict(
                regime=name,
                V=V,
                Nf=Nf,
                L=L,
                D=d,
                N=n,
                trained=max(per_seed),
                trained_mean=sum(per_seed) / len(per_seed),
                eq15=p_success(V, Nf, d, n, "eq15"),
                eq77=p_success(V, Nf, d, n, "eq77"),
                rev_a3=p_success(V, Nf, d, n, "rev_mV", a=3.0),
                rev_a54=p_success(V, Nf, d, n, "rev_mV", a=1.25),
                rev_a58=p_success(V, Nf, d, n, "rev_mV", a=0.625),
            )
            con = "code" if V >= d >= n else "iid"
            for readout in ("full", "values"):
                row[f"designed_{readout}"] = designed_accuracy(
                    V,
                    d,
                    n,
                    Nf,
                    L,
                    n_seq=cfg["designed_n_seq"],
                    seed=1000 + i,
                    construction=con,
                    readout=readout,
                    device=device,
                )
            row["designed_construction"] = con
            rows.append(row)
        log(f"grid {name}: {len(cells)} cells × {cfg['seeds']} seeds in {time.perf_counter() - t0:.0f} s")
    return pd.DataFrame(rows)


def run_multilayer(cfg, device, log, way=None):
    c = cfg["multilayer"]
    sizes = [(c["D"], n, lam) for lam in c["layers"] for n in c["Ns"] for _ in range(c["seeds"])]
    t0 = time.perf_counter()
    accs = train_members(
        c["V"],
        c["Nf"],
        c["L"],
        sizes,
        steps=c["steps"],
        batch=cfg["batch"],
        warmup=cfg["warmup"],
        hold=cfg["hold"],
        n_eval=cfg["n_eval"],
        device=device,
        way=way,
        residual=True,
    )
    rows = []
    for i in range(0, len(sizes), c["seeds"]):
        d, n, lam = sizes[i]
        rows.append(dict(D=d, N=n, layers=lam, N_eff=n * lam, acc=max(accs[i : i + c["seeds"]])))
    log(f"multilayer: {len(rows)} cells in {time.perf_counter() - t0:.0f} s")
    return pd.DataFrame(rows)


def run_repetition(cfg, device, log, way=None):
    c = cfg["repetition"]
    Ns = c["N"] if isinstance(c["N"], list) else [c["N"]]
    rows = []
    t0 = time.perf_counter()
    for kind, reps in (("repeated_keys", c["Nk"]), ("repeated_queries", c["Nq"])):
        for r in reps:
            L = 2 * c["Nf"] * (r + 1)
            L += L % 2
            V = max(c["V"], L + 2)
            kw = {"Nk": r} if kind == "repeated_keys" else {"Nq": r}
            sizes = [(c["D"], n, lam) for lam in c["layers"] for n in Ns for _ in range(c["seeds"])]
            accs = train_members(
                V,
                c["Nf"],
                L,
                sizes,
                steps=c["steps"],
                batch=c["batch"],
                warmup=cfg["warmup"],
                hold=cfg["hold"],
                n_eval=cfg["n_eval"],
                device=device,
                way=way,
                task=kind,
                task_kw=kw,
                residual=True,
            )
            for i in range(0, len(sizes), c["seeds"]):
                d, n, lam = sizes[i]
                rows.append(
                    dict(task=kind, repeats=r, V=V, L=L, D=d, N=n, layers=lam, acc=max(accs[i : i + c["seeds"]]))
                )
    log(f"repetition: {len(rows)} cells in {time.perf_counter() - t0:.0f} s")
    return pd.DataFrame(rows)


def train_selective_rows(row, c, cfg, device, seed=0, members=None):
    """Tab. 10 rows Base / A / B: ``members`` (default ``c["seeds"]``) members of one :class:`SelectiveAblationMamba`
    ensemble (d_conv 4), trained as the linear rows (:func:`train_members`: same data stream, recipe, schedule, early
    stop). App. K trains Base and A with half the batch (S = 112 vs 224) for the same 10 epochs, i.e. twice the
    steps: rows listed in ``c["half_batch_rows"]`` get batch ``c["batch"] // 2`` and ``2 · c["steps"]`` steps (same
    number of samples). ``seed``: initialisation ``seed`` and training stream ``seed · 100003 + step`` (as
    :func:`train_members`; the ci bundle's one ensemble is ``seed=0``)."""
    half = row in c.get("half_batch_rows", ())
    steps, batch = (2 * c["steps"], c["batch"] // 2) if half else (c["steps"], c["batch"])
    ev = mqar(c["V"], c["Nf"], c["L"], cfg["n_eval"], EVAL_SEED)
    n = c["seeds"] if members is None else members
    model = SelectiveAblationMamba(c["V"], c["D"], c["N"], row, d_conv=4, ensemble=n, seed=seed, device=device)
    r = train_ensemble(
        model,
        batch_fn(c["V"], c["Nf"], c["L"], batch, seed * 100003),
        steps=steps,
        eval_batch=ev,
        eval_every=max(50, steps // 6),
        target_accuracy=0.999,
        seed=seed,
        device=device,
        overrides=dict(warmup=min(cfg["warmup"], steps - 1), hold=cfg["hold"], batch_size=batch),
    )
    curve = [(h["step"], sum(h["accuracy"]) / len(h["accuracy"])) for h in r.history if "accuracy" in h]
    return r.best_accuracy, curve


def run_ablation(cfg, device, log, way=None):
    """Tab. 10: rows Base, A, B (selective :class:`SelectiveAblationMamba`, Δ and d_conv 4) and C, D, E (the linear
    :class:`LinearMamba`, no Δ: d_conv 4 / 2 / none); mean ± std and max over seeds, one row each."""
    c = cfg["ablation"]
    rows = []
    t0 = time.perf_counter()
    for row, label in (("Base", "Base (Mamba, no norm)"), ("A", "A (Base, Ā = I)"), ("B", "B (A, no gate)")):
        t1 = time.perf_counter()
        accs, curve = train_selective_rows(row, c, cfg, device)
        half = row in c.get("half_batch_rows", ())
        mean = sum(accs) / len(accs)
        std = (sum((a - mean) ** 2 for a in accs) / len(accs)) ** 0.5
        rows.append(
            dict(
                row=row,
                model=label,
                selective=True,
                d_conv=4,
                mean=mean,
                std=std,
                max=max(accs),
                steps=c["steps"] * (2 if half else 1),
                batch=c["batch"] // (2 if half else 1),
                seconds=round(time.perf_counter() - t1, 1),
                eval_curve=" ".join(f"{st}:{a:.3f}" for st, a in curve),
            )
        )
        log(f"ablation {row}: {mean:.3f} in {time.perf_counter() - t1:.0f} s")
    for row, label, d_conv in (
        ("C", "C (d_conv=4, linear)", 4),
        ("D", "D (d_conv=2) = Alg. 1", 2),
        ("E", "E (no Conv1D)", 0),
    ):
        t1 = time.perf_counter()
        accs = train_members(
            c["V"],
            c["Nf"],
            c["L"],
            [(c["D"], c["N"])] * c["seeds"],
            steps=c["steps"],
            batch=c["batch"],
            warmup=cfg["warmup"],
            hold=cfg["hold"],
            n_eval=cfg["n_eval"],
            device=device,
            way=way,
            d_conv=d_conv,
            residual=False,
        )
        mean = sum(accs) / len(accs)
        std = (sum((a - mean) ** 2 for a in accs) / len(accs)) ** 0.5
        rows.append(
            dict(
                row=row,
                model=label,
                selective=False,
                d_conv=d_conv,
                mean=mean,
                std=std,
                max=max(accs),
                steps=c["steps"],
                batch=c["batch"],
                seconds=round(time.perf_counter() - t1, 1),
                eval_curve="",
            )
        )
    log(f"ablation in {time.perf_counter() - t0:.0f} s")
    return pd.DataFrame(rows)


def run_full(cfg, device, log, backend="auto"):
    """Fig. 6(d)/Fig. 12: the full 1-layer Mamba (mamba-ssm layout, d_conv 2, expand 2, RMSNorm, tied), one
    model per cell and seed, trained with the shared loop (AdamW lr 1e-2, warmup + cosine, label smoothing 0.1)."""
    from mamba_recall.models.mamba import MambaLMHeadModel
    from mamba_recall.train import Recipe, Stopping, masked_cross_entropy, train

    c = cfg["full"]
    rows = []
    if not c["cells"]:
        return pd.DataFrame(columns=["regime", "D", "N", "full"])

    def loss_fn(logits, labels):
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100, label_smoothing=0.1
        )

    for name, (V, Nf, L) in cfg["regimes"].items():
        ev = mqar(V, Nf, L, cfg["n_eval"], EVAL_SEED)
        for d, n in c["cells"]:
            best = 0.0
            for s in range(c["seeds"]):
                torch.manual_seed(s)
                model = MambaLMHeadModel(
                    d, 1, V, d_state=n, d_conv=2, expand=2, pad_vocab_size_multiple=1, backend=backend, device=device
                )
                r = train(
                    model,
                    batch_fn(V, Nf, L, cfg["batch"], s * 100003),
                    steps=c["steps"],
                    recipe=Recipe(
                        lr=1e-2,
                        weight_decay=0.0,
                        betas=(0.9, 0.95),
                        schedule="linear_warmup_cosine",
                        warmup_steps=min(100, cfg["warmup"], c["steps"] - 1),
                        grad_clip=0.75,
                    ),
                    stop=Stopping(eval_every=max(50, min(500, c["steps"] // 6)), target_accuracy=0.999),
                    eval_batch=ev,
                    seed=s,
                    loss_fn=loss_fn,
                    device=device,
                    progress=False,
                )
                best = max(best, max(e["accuracy"] for e in r.evals))
            rows.append(dict(regime=name, D=d, N=n, full=best))
            log(f"full {name} D={d} N={n}: {best:.3f} ({r.seconds:.0f} s per run)")
    _ = masked_cross_entropy
    return pd.DataFrame(rows)


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="ci", choices=["ci", "paper"])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--parts", nargs="*", default=list(PARTS), choices=PARTS)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--way",
        default="auto",
        choices=("auto",) + WAYS,
        help="train each group of simplified models as one ensemble or member by member (same numbers; "
        "auto = the faster way for each group on the device, default_way)",
    )
    ap.add_argument("--out", default=None, help="bundle name (default ch2_scaling_<preset>)")
    ap.add_argument(
        "--merge", action="store_true", help="keep the other parts of an existing bundle and replace only --parts"
    )
    args = ap.parse_args(argv)
    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    if device.type == "cuda":  # TF32 matmuls: the ensemble einsums are the whole cost
        torch.backends.cuda.matmul.allow_tf32 = True
    cfg = experiment("ch2.scaling", args.preset)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    start = time.perf_counter()
    tables, data = {}, {"parts": list(args.parts), "seconds": {}}
    name = args.out or f"ch2_scaling_{args.preset}"
    if args.merge:
        from mamba_recall.results import load_bundle

        old = load_bundle(name)
        tables = {k: v for k, v in old.tables.items() if k not in args.parts}
        data["parts"] = sorted(set(old.data.get("parts", [])) | set(args.parts))
        data["seconds"] = {k: v for k, v in old.data.get("seconds", {}).items() if k not in args.parts}
    way = None if args.way == "auto" else args.way
    runners = dict(
        speed=lambda: run_speed(cfg, device),
        grid=lambda: run_grid(cfg, device, log, way),
        multilayer=lambda: run_multilayer(cfg, device, log, way),
        repetition=lambda: run_repetition(cfg, device, log, way),
        ablation=lambda: run_ablation(cfg, device, log, way),
        full=lambda: run_full(cfg, device, log),
    )
    for part in args.parts:
        t0 = time.perf_counter()
        tables[part] = runners[part]()
        data["seconds"][part] = round(time.perf_counter() - t0, 1)
        log(f"{part}: {data['seconds'][part]} s")
    cmd = (
        f"{runner_command('ch2_scaling')} --preset {args.preset} --device {args.device} "
        f"--parts {' '.join(data['parts'] if args.merge else args.parts)}"
    )
    path = save_bundle(
        name,
        data,
        {"preset": args.preset, **cfg},
        command=cmd,
        device=device,
        wall_seconds=round(sum(data["seconds"].values()) if args.merge else time.perf_counter() - start, 1),
        tables=tables,
    )
    print(path)


if __name__ == "__main__":
    main()
