r"""Chapter 2 runner, multi-head part: the head patterns MQA / MKA / MVA / MHA of paper 002 (Fig. 8, 13–15, Thm 5).

    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.multihead --preset ci    [--device cpu]
    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.multihead --preset paper --device cuda

writes ``results/ch2_multihead_<preset>.json`` with tables

* ``grid``  — per (pattern, M, N): trained accuracy (max over seeds, best over evaluations), the Eq. 77
  prediction with the Thm 5 effective state (N' = M N for MHA, N otherwise) and N';
* ``noise`` — Fig. 15: statistics of the output logits at query positions of every trained model: the correct
  entry, the *wrong* entries (values of the other facts in the context) and the *empty* entries (values absent
  from the context); raw variances and variances relative to the squared margin (mean correct − mean empty);
* ``hist``  — Fig. 14: histograms of the normalised logits ``(y − mean_empty) / (mean_correct − mean_empty)``.

All models of one (pattern, M) train together as one :class:`MultiHeadLinearMamba` ensemble (members differ in N
and seed; the same data stream, seeds change the initialisation [ours]) with the authors' N–M recipe
(AdamW lr 1e-2, β = (0.9, 0.95), wd 0, warmup → hold → cosine, clip 5, label smoothing 0.1).
"""

from __future__ import annotations

import argparse
import sys
import time

import pandas as pd
import torch

from mamba_recall.devices import resolve_device
from mamba_recall.models.linear_mamba import MultiHeadLinearMamba
from mamba_recall.presets import experiment, seeds
from mamba_recall.results import command_provenance, save_bundle
from mamba_recall.tasks.mqar import batch_fn, mqar
from mamba_recall.theory.capacity import multihead_prediction
from ..training.ensemble import train_ensemble
from mamba_recall.runners import runner_command

EVAL_SEED = seeds.MQAR_EVAL  # held-out stream, disjoint from the training stream (base 0 + step)
NOISE_SEED = seeds.MQAR_NOISE
HIST_EDGES = [round(-1.0 + 0.1 * i, 2) for i in range(31)]  # normalised logit in [-1, 2]

# The runs whose outputs are committed in results/ (``make reproduce`` repeats them).


@torch.no_grad()
def logit_noise(model: MultiHeadLinearMamba, x: torch.Tensor, y: torch.Tensor, V: int, Nf: int) -> list[dict]:
    """Per member: logit statistics at the query positions (Fig. 14/15). x, y (B, L) from :func:`mqar`.

    correct = logit of the target value; wrong = logits of the other N_f − 1 context values; empty = logits of
    the V/2 − N_f value tokens absent from the context. Returns one dict per member (raw moments, variances
    relative to the squared margin, and normalised values for the histograms)."""
    model.eval()
    logits = model(x) if model.ensemble is not None else model(x)[None]  # (n_members, B, L, V)
    model.train()
    ctx_vals = x[:, 1 : 2 * Nf : 2]  # (B, N_f)
    in_ctx = torch.zeros(x.shape[0], V, dtype=torch.bool)
    in_ctx.scatter_(1, ctx_vals, True)
    b_idx, t_idx = (y != -100).nonzero(as_tuple=True)
    target = y[b_idx, t_idx]
    out = []
    for e in range(logits.shape[0]):
        q = logits[e, b_idx, t_idx].double()  # (Q, V)
        correct = q.gather(1, target[:, None])[:, 0]
        is_val = torch.zeros(V, dtype=torch.bool)
        is_val[V // 2 :] = True
        ctx = in_ctx[b_idx]
        wrong_mask = ctx & is_val[None]
        wrong_mask[torch.arange(len(target)), target] = False
        empty_mask = (~ctx) & is_val[None]
        wrong, empty = q[wrong_mask], q[empty_mask]
        margin = float(correct.mean() - empty.mean())
        scale = margin if abs(margin) > 1e-9 else 1.0
        norm = {
            k: ((v - empty.mean()) / scale).float()
            for k, v in (("correct", correct), ("wrong", wrong), ("empty", empty))
        }
        out.append(
            dict(
                mean_correct=float(correct.mean()),
                mean_wrong=float(wrong.mean()),
                mean_empty=float(empty.mean()),
                var_correct=float(correct.var()),
                var_wrong=float(wrong.var()),
                var_empty=float(empty.var()),
                margin=margin,
                rel_var_wrong=float(wrong.var()) / scale**2,
                rel_var_empty=float(empty.var()) / scale**2,
                norm=norm,
            )
        )
    return out


def train_heads(
    cfg: dict,
    pattern: str,
    M: int,
    states: list[int],
    ev,
    *,
    init_seed: int,
    seed: int = 0,
    values: str | None = None,
    device="cpu",
):
    """Train one :class:`MultiHeadLinearMamba` ensemble of ``pattern`` with ``M`` heads, one member per entry of
    ``states`` (its N), with the N–M recipe of ``cfg`` (the [code] schedule warmup → hold → cosine, clip
    ``cfg["grad_clip"]``, batch ``cfg["batch"]``, early stop at 0.999 on ``ev``); return ``(model on the CPU, result
    of train_ensemble)``. Initialisation ``init_seed``; training stream ``seed · 100003 + step`` (``seed=0``: the ci
    grid's one stream shared by every ensemble); ``values`` (default ``cfg["values"]``): how heads read the values."""
    V, Nf, L, D = cfg["V"], cfg["Nf"], cfg["L"], cfg["D"]
    model = MultiHeadLinearMamba(
        V,
        D,
        max(states),
        M,
        pattern,
        values=cfg["values"] if values is None else values,
        ensemble=len(states),
        member_states=states,
        seed=init_seed,
        device=device,
    )
    r = train_ensemble(
        model,
        batch_fn(V, Nf, L, cfg["batch"], seed * seeds.TRAIN_STRIDE),
        steps=cfg["steps"],
        eval_batch=ev,
        eval_every=max(50, cfg["steps"] // 6),
        target_accuracy=0.999,
        seed=seed,
        device=device,
        recipe="code",
        overrides=dict(
            warmup=min(cfg["warmup"], cfg["steps"] - 1),
            hold=cfg["hold"],
            grad_clip=cfg["grad_clip"],
            batch_size=cfg["batch"],
        ),
    )
    return model.cpu(), r


def run(cfg: dict, device, log) -> dict[str, pd.DataFrame]:
    V, Nf, L, D = cfg["V"], cfg["Nf"], cfg["L"], cfg["D"]
    ev = mqar(V, Nf, L, cfg["n_eval"], EVAL_SEED)
    xn, yn = mqar(V, Nf, L, cfg["n_noise"], NOISE_SEED)
    grid, noise, hist = [], [], []
    edges = torch.tensor(HIST_EDGES)
    for pi, pattern in enumerate(cfg["patterns"]):
        for mi, M in enumerate(cfg["Ms"]):
            t0 = time.perf_counter()
            states = [n for n in cfg["Ns"] for _ in range(cfg["seeds"])]
            model, r = train_heads(cfg, pattern, M, states, ev, init_seed=1000 * pi + 10 * mi, device=device)
            stats = logit_noise(model, xn, yn, V, Nf)
            for i, N in enumerate(cfg["Ns"]):
                sl = slice(i * cfg["seeds"], (i + 1) * cfg["seeds"])
                accs = r.best_accuracy[sl]
                best = max(range(sl.start, sl.stop), key=lambda j: r.best_accuracy[j])
                pred = multihead_prediction(V, Nf, D, N, M, pattern)
                grid.append(
                    dict(
                        pattern=pattern,
                        M=M,
                        N=N,
                        D=D,
                        V=V,
                        Nf=Nf,
                        L=L,
                        acc=max(accs),
                        acc_mean=sum(accs) / len(accs),
                        N_eff=pred["N_eff"],
                        eq77=pred["p_eq77"],
                        steps_run=r.steps_run,
                    )
                )
                st = stats[best]
                noise.append(
                    dict(pattern=pattern, M=M, N=N, acc=max(accs), **{k: v for k, v in st.items() if k != "norm"})
                )
                for kind, vals in st["norm"].items():
                    counts = torch.histogram(vals.clamp(HIST_EDGES[0], HIST_EDGES[-1]), bins=edges)[0]
                    frac = (counts / max(1, vals.numel())).tolist()
                    for b, f in enumerate(frac):
                        hist.append(
                            dict(
                                pattern=pattern,
                                M=M,
                                N=N,
                                entry=kind,
                                bin=round(HIST_EDGES[b] + 0.05, 2),
                                frac=round(f, 5),
                            )
                        )
            log(
                f"{pattern} M={M}: {len(states)} members, {r.steps_run} steps, {time.perf_counter() - t0:.0f} s, "
                f"acc " + " ".join(f"{a:.2f}" for a in r.best_accuracy)
            )
    return dict(grid=pd.DataFrame(grid), noise=pd.DataFrame(noise), hist=pd.DataFrame(hist))


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="ci", choices=["ci", "paper"])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="bundle name (default ch2_multihead_<preset>)")
    args = ap.parse_args(argv)
    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    cfg = experiment("ch2.multihead", args.preset)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    start = time.perf_counter()
    tables = run(cfg, device, log)
    wall = round(time.perf_counter() - start, 1)
    name = args.out or f"ch2_multihead_{args.preset}"
    cmd = f"{runner_command('ch2_multihead')} --preset {args.preset} --device {args.device}"
    path = save_bundle(
        name,
        {"seconds": wall, "hist_edges": HIST_EDGES},
        {"preset": args.preset, **cfg},
        command=cmd,
        device=device,
        wall_seconds=wall,
        tables=tables,
    )
    log(f"done in {wall} s")
    print(path)


if __name__ == "__main__":
    main()
