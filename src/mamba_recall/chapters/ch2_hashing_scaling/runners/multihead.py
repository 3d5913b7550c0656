r"""Chapter 2 runner, multi-head part: the head patterns MQA / MKA / MVA / MHA of paper 002 (Fig. 8, 13–15, Thm 5).

    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.multihead --preset ci    [--device cpu]
    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.multihead --preset paper --device cuda
    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.multihead --preset cpu-hours --allow-long [--jobs 2]

Two ways of training, one command. At ``--preset cpu-hours``, or with ``--parts fig8 thm5``, it runs the run-store
parts (:mod:`.figs_cpu`: one model per job and seed, 3 seeds, resumable; bundles ``results/ch2_fig8_<preset>.json``
and ``results/ch2_thm5_<preset>.json``). At ``ci`` and ``paper`` it trains the ensembles below and
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

import sys
import time

import pandas as pd
import torch

from mamba_recall.devices import resolve_device
from mamba_recall.presets import experiment, seeds
from mamba_recall.results import command_provenance, save_bundle
from mamba_recall.tasks.mqar import mqar
from mamba_recall.theory.capacity import multihead_prediction
from ..pipelines.heads import NOISE_SEED, logit_noise
from ..training.heads import train_heads
from mamba_recall.runners import runner_command
from mamba_recall.runstore import one_process_parser, two_way

EVAL_SEED = seeds.MQAR_EVAL  # held-out stream, disjoint from the training stream (base 0 + step)
HIST_EDGES = [round(-1.0 + 0.1 * i, 2) for i in range(31)]  # normalised logit in [-1, 2]

# The runs whose outputs are committed in results/ (``make reproduce`` repeats them).


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
    """The run-store parts ``fig8`` and ``thm5`` (:mod:`.figs_cpu`) at ``--preset cpu-hours`` or with ``--parts``;
    the ensembles of :func:`run` at ``ci`` and ``paper``."""
    from . import figs_cpu

    return two_way(argv, "ci", lambda a: figs_cpu.store_main(a, runner="ch2_multihead"), ensemble_main)


def ensemble_main(argv=None):
    ap = one_process_parser(runner_command("ch2_multihead"), __doc__.split("\n")[0])
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
