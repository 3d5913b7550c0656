r"""Chapter 2 runner: the recall scaling-law figures of paper 002, at every preset, through the run store.

    python -m mamba_recall grid ch2_scaling --preset ci [--jobs 2]
    python -m mamba_recall grid ch2_scaling --preset paper --allow-long   (a GPU)
    python -m mamba_recall grid ch2_scaling --preset ci --only grid ablation

The experiment ``ch2_scaling`` (:mod:`..experiments`): its **ensemble parts** below, at ``ci`` and ``paper``, are one
run-store job each (resumable; options ``--jobs``, ``--allow-long``, ``--aggregate-only``, ``--smoke``, ``--store``,
``--only``), which trains each group of simplified models as one ensemble (:mod:`.ensembles`; at ``paper`` on a GPU
where the process running the job has one); ``--only`` runs some of them, the grid without it all. This runner's
``main`` is that grid under its name (:func:`.ensembles.command`), where ``--parts`` (as the committed pages print
it, e.g. ``python -m mamba_recall.chapters.ch2_hashing_scaling.runners.scaling --preset ci --parts grid ablation``)
is ``--only``. The finished parts make one bundle, ``results/ch2_scaling_<preset>.json`` (+ CSV tables), with:

* ``grid``  — Fig. 6 columns per regime and (D, N) cell: (a) Eq. 15 printed, (a′) Eq. 77, (a″) the authors'
  later-revision law (a = 3 / 5/4), (b) the designed Thm 2 circuit (full and values-only readouts),
  (c) the trained simplified model (max over seeds), (d) the trained full Mamba (paper preset only);
* ``multilayer`` — Fig. 7, accuracy vs (Λ, N), Alg. 2 with residual;
* ``repetition`` — Figs. 10–11, repeating keys / queries, 1..3 layers;
* ``ablation`` — Tab. 10: rows Base, A, B with the selective model (Δ, d_conv 4; Ā learned / Ā = I / no gate)
  and rows C, D, E with the linear model (d_conv 4 / 2 / none);
* ``speed`` — training steps/s of the simplified model and the speed-up from ensembling.

Figures 7, 10–11 and Tab. 10 with one model per job and seed (preset ``cpu-hours``) are the declared experiments
``ch2_fig7``, ``ch2_fig10_11`` and ``ch2_tab10`` (:mod:`.figure_grids`), run only by their names (``python -m mamba_recall
grid ch2_fig7 --preset cpu-hours --allow-long``); this runner given one of them, or ``--preset cpu-hours``, stops
naming those commands. At ``ci`` and ``paper`` the parts above are those figures' one route (those experiments refuse
these presets, naming ``--only multilayer`` / ``repetition`` / ``ablation`` here).

The trained simplified models of one call of :func:`..training.ensemble.train_members` (a regime of ``grid``, all of
``multilayer``, one (task, repeats) of ``repetition``, one linear row of ``ablation``) train **together** as
:class:`LinearMamba` ensembles (members of different sizes are masked; see :mod:`mamba_recall.models.linear_mamba`),
which is what makes the paper preset (32×31 cells × 10 seeds × 3 regimes) fit a single GPU. The members are cut into
chunks of as many as a memory budget holds (1 GiB on the CPU, 20 GiB on CUDA: at ``paper`` 6 against 1 for
``multilayer``; at ``ci`` each call is one chunk), and the members of chunk ``k``:

* share **one initialisation draw**, ``torch.manual_seed(seed + 7919 k)`` then tensors of shape (n_members, V,
  D_max), …: a member's initial weights are its slice, set by its place in the chunk and the chunk's maxima (D, N,
  Λ); a cell's "seeds" are adjacent members (seed 0 for every part), not seeds of their own;
* see **one data stream** (training batches ``seed · 100003 + step``, the held-out set ``EVAL_SEED``);
* **stop together**, at the first evaluation where every member has reached 0.999 (its best accuracy up to there).

So a member's numbers depend on its chunk and on the device, and a part is one run-store job (:mod:`.ensembles`),
never one job per (config, seed): that would train other models, change the committed ``ci`` numbers of every part
whose ensembles have more than one member, and make a member's result depend on which other jobs were left to run
(the appendix "Engineering notes", "Chapter 2's ensembles"). The per-seed evidence is the one-model grids at
``cpu-hours``. Tab. 10's rows Base, A, B train as one :class:`SelectiveAblationMamba` ensemble of ``seeds`` members
each (:func:`..training.ensemble.train_selective_rows`), with the same data stream and joint stop.
"""

from __future__ import annotations

import time

import pandas as pd
import torch

from mamba_recall.models.linear_mamba import LinearMamba
from mamba_recall.results import command_provenance
from mamba_recall.tasks.mqar import batch_fn, mqar
from mamba_recall.theory.capacity import p_success
from mamba_recall.theory.hashing_circuit import designed_accuracy
from ..training.ensemble import (
    EVAL_SEED,
    train_ensemble,
    train_members,
    train_selective_rows,
)

PARTS = ("speed", "grid", "multilayer", "repetition", "ablation", "full")


def _cells(cfg):
    return [(d, n) for d in cfg["Ds"] for n in cfg["Ns"] if not (cfg.get("skip_N_gt_D") and n > d)]


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


def run_grid(cfg, device, log):
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


def run_multilayer(cfg, device, log):
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
        residual=True,
    )
    rows = []
    for i in range(0, len(sizes), c["seeds"]):
        d, n, lam = sizes[i]
        rows.append(dict(D=d, N=n, layers=lam, N_eff=n * lam, acc=max(accs[i : i + c["seeds"]])))
    log(f"multilayer: {len(rows)} cells in {time.perf_counter() - t0:.0f} s")
    return pd.DataFrame(rows)


def run_repetition(cfg, device, log):
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


def run_ablation(cfg, device, log):
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


#: what each ensemble part runs: ``function(sizes, device, log)`` → its table
PART_FUNCTIONS = {
    "speed": lambda cfg, device, log: run_speed(cfg, device),
    "grid": run_grid,
    "multilayer": run_multilayer,
    "repetition": run_repetition,
    "ablation": run_ablation,
    "full": run_full,
}
#: the ensemble parts (``--only`` picks some, at ci and paper), each one run-store job (:mod:`.ensembles`)
ENSEMBLE_PARTS = PARTS


def ensemble_units(sizes: dict) -> list[dict]:
    """The run-store units of the ensemble parts: one per part, in :data:`PARTS` order."""
    return [{"part": p} for p in PARTS]


def unit_name(config: dict) -> str:
    return config["part"]


def run_unit(cfg: dict, unit: dict, device, log) -> dict[str, pd.DataFrame]:
    """One ensemble part (a run-store job of :mod:`.ensembles`): its table, named by the part."""
    return {unit["part"]: PART_FUNCTIONS[unit["part"]](cfg, device, log)}


def bundle_data(runs: list[dict]) -> dict:
    """The bundle's ``parts`` (finished, in :data:`PARTS` order) and ``seconds`` per part."""
    done = {r["config"]["part"]: r["result"]["seconds"] for r in runs}
    return {"parts": [p for p in PARTS if p in done], "seconds": {p: done[p] for p in PARTS if p in done}}


def recorded_seconds(bundle) -> dict[str, float]:
    return dict(bundle.data.get("seconds", {}))


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None) -> int:
    """``python -m mamba_recall grid ch2_scaling --preset P`` under this runner's command (:func:`.ensembles.command`:
    ``--parts`` is ``--only``; a one-model-per-job figure, or ``--preset cpu-hours``, stops naming its grid command)."""
    from . import ensembles

    return ensembles.command("ch2_scaling", argv)


if __name__ == "__main__":
    raise SystemExit(main())
