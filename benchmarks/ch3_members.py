"""Chapter 3 training throughput: K seeds of one MQAR config as one ensemble against the K models one at a time.

    python benchmarks/ch3_members.py [--members 7] [--steps 30] [--kappa 4] [--N 8] [--d 64] [--T 100] [--V 128]
        [--mixer s6|s4d] [--batch 64] [--device cpu|cuda]

Prints model-steps per second (models × steps / seconds) of paper 003's 1-layer MQAR model (the chapter's recipe,
:func:`mamba_recall.chapters.ch3_selectivity.runners.mqar_train.resolved_config`; default Fig. A.3's cpu-hours cell T = 100,
|V| = 128, κ = 4, N = 8, d = 64) trained (a) one model at a time (``train_one``, what one run-store job does) and
(b) as one ensemble of K members (``train_members``, what one ``--members K`` unit does), one torch thread, after
an untimed warm-up of each. The plan (``python -m mamba_recall plan --estimate``) times the same two ways per
grid. On a busy machine the numbers move with the load: compare them side by side from one run. A script of the
repository, not a module of the library; it prints its table and writes no bundle.
"""

from __future__ import annotations

import argparse
import time


def ch3_throughput(
    *, members=7, steps=30, kappa=4, N=8, d=64, T=100, V=128, mixer="s6", batch=64, device="cpu"
):  # fmt: skip
    """Rows ``{"way", "models", "seconds", "cpu_seconds", "model_steps_per_s", "model_steps_per_cpu_s"}``."""
    import pandas as pd
    import torch
    from ch2_ensemble import throughput_row  # benchmarks/ (this script's folder is on the path)

    from mamba_recall.chapters.ch3_selectivity.runners.mqar_train import resolved_config, train_members, train_one
    from mamba_recall.presets import experiment

    torch.set_num_threads(1)
    cfg = dict(experiment("ch3_mqar_figa3", "cpu-hours"), T=T, V=V, batch=batch, steps=steps)
    c = resolved_config(cfg, kappa, d, mixer, N)
    seeds = list(range(members))
    ways = {
        "one model at a time": lambda n: [train_one(c, s, steps=n, device=device) for s in seeds],
        f"one ensemble of {members}": lambda n: train_members(c, seeds, steps=n, device=device),
    }
    rows = []
    for way, run in ways.items():
        run(2)  # warm-up (kernels, caches)
        if device == "cuda":
            torch.cuda.synchronize()
        start, cpu = time.perf_counter(), time.process_time()
        run(steps)
        if device == "cuda":
            torch.cuda.synchronize()
        secs, cpu = time.perf_counter() - start, time.process_time() - cpu
        rows.append(throughput_row(way, members, steps, secs, cpu))
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in dict(members=7, steps=30, kappa=4, N=8, d=64, T=100, V=128, batch=64).items():
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--mixer", default="s6", choices=["s6", "s4d"])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args(argv)
    table = ch3_throughput(**vars(args))
    print(
        f"Chapter 3 MQAR training throughput, {args.mixer} T={args.T}, |V|={args.V}, κ={args.kappa}, N={args.N}, "
        f"d={args.d}, batch {args.batch}, {args.steps} steps, {args.device}, one thread (seconds include each run's "
        "held-out evaluation at its last step and its test):"
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    a, b = table["model_steps_per_s"]
    print(f"the ensemble trains {b / a:.2f}x the model-steps per second of one model at a time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
