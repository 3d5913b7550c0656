"""Chapter 2 training throughput: one ensemble of n models against the n models trained separately.

    python benchmarks/ch2_ensemble.py [--steps 20] [--members 8] [--processes 1 2] [--D 64] [--N 32] [--V 1024]
        [--batch 128] [--Nf 16] [--L 64]

Prints model-steps per second (models × steps / wall seconds) of the simplified linear Mamba of paper 002
(default R2, D = 64, N = 32, batch 128) trained (a) as one :class:`LinearMamba` ensemble of n = ``--members``
members in one process, one torch thread, and (b) as separate single models in P processes (``joblib.Parallel``), one thread
each, every process training ``members / P`` models one after the other (``P = 1`` is the ``--way separate`` of
:mod:`mamba_recall.chapters.ch2_hashing_scaling.runners.scaling`, whose CPU default, ``default_way``, was set from this comparison).
On a busy machine the numbers move with the load: compare them side by side from one run. A script of the
repository, not a module of the library; it prints its table and writes no bundle.
"""

from __future__ import annotations

import argparse
import time


def _train_separate(V, Nf, L, D, N, batch, steps, models, seed=0):
    import torch

    torch.set_num_threads(1)
    from mamba_recall.models.linear_mamba import LinearMamba
    from mamba_recall.tasks.mqar import batch_fn
    from mamba_recall.chapters.ch2_hashing_scaling.training.ensemble import train_ensemble

    data = [batch_fn(V, Nf, L, batch, 0)(s) for s in range(steps)]
    start, cpu = time.perf_counter(), time.process_time()
    for m in range(models):
        model = LinearMamba(V, D, N, ensemble=1, seed=seed + m)
        train_ensemble(model, lambda s: data[s], steps=steps, overrides={"batch_size": batch})
    return time.perf_counter() - start, time.process_time() - cpu


def _train_ensemble(V, Nf, L, D, N, batch, steps, members):
    import torch

    torch.set_num_threads(1)
    from mamba_recall.models.linear_mamba import LinearMamba
    from mamba_recall.tasks.mqar import batch_fn
    from mamba_recall.chapters.ch2_hashing_scaling.training.ensemble import train_ensemble

    data = [batch_fn(V, Nf, L, batch, 0)(s) for s in range(steps)]
    model = LinearMamba(V, D, N, ensemble=members, seed=0)
    start, cpu = time.perf_counter(), time.process_time()
    train_ensemble(model, lambda s: data[s], steps=steps, overrides={"batch_size": batch})
    return time.perf_counter() - start, time.process_time() - cpu


def throughput_row(way: str, models: int, steps: int, seconds: float, cpu_seconds: float, **extra) -> dict:
    """One row of a training-throughput table: ``models`` × ``steps`` model-steps over ``seconds`` of wall time and
    over ``cpu_seconds`` (``benchmarks/ch3_members.py`` prints the same columns)."""
    return dict(
        way=way,
        models=models,
        **extra,
        seconds=seconds,
        cpu_seconds=cpu_seconds,
        model_steps_per_s=models * steps / seconds,
        model_steps_per_cpu_s=models * steps / cpu_seconds,
    )


def ch2_throughput(V=1024, Nf=16, L=64, D=64, N=32, batch=128, steps=20, members=8, processes=(1, 2)):
    """Rows ``{"way", "models", "processes", "seconds", "wall_with_startup", "cpu_seconds", "model_steps_per_s",
    "model_steps_per_cpu_s"}`` (see the module docstring). ``cpu_seconds``: the training processes' CPU time,
    summed over the processes, which a machine shared with other jobs inflates less than the wall clock."""
    import pandas as pd
    from joblib import Parallel, delayed

    rows = []
    _train_separate(V, Nf, L, D, N, batch, 2, 1)  # warm-up
    secs, cpu = _train_ensemble(V, Nf, L, D, N, batch, steps, members)
    rows.append(
        throughput_row(
            f"one ensemble of {members}", members, steps, secs, cpu, processes=1, wall_with_startup=float("nan")
        )
    )
    for p in processes:
        if members % p:
            continue
        start = time.perf_counter()
        worker = Parallel(n_jobs=p, backend="loky", inner_max_num_threads=1)(
            delayed(_train_separate)(V, Nf, L, D, N, batch, steps, members // p, seed=100 * i) for i in range(p)
        )
        wall = time.perf_counter() - start
        secs = max(w for w, _ in worker)  # the training loops (they run concurrently); wall adds process start-up
        cpu = sum(c for _, c in worker)
        rows.append(throughput_row("separate models", members, steps, secs, cpu, processes=p, wall_with_startup=wall))
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--members", type=int, default=8)
    ap.add_argument("--processes", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--D", type=int, default=64)
    ap.add_argument("--N", type=int, default=32)
    ap.add_argument("--V", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--Nf", type=int, default=16, help="facts per sequence")
    ap.add_argument("--L", type=int, default=64, help="sequence length")
    args = ap.parse_args(argv)
    table = ch2_throughput(
        V=args.V,
        Nf=args.Nf,
        L=args.L,
        D=args.D,
        N=args.N,
        batch=args.batch,
        steps=args.steps,
        members=args.members,
        processes=tuple(args.processes),
    )
    print(
        f"Chapter 2 training throughput, linear Mamba V={args.V}, D={args.D}, N={args.N}, batch {args.batch}, "
        f"{args.steps} steps (seconds: the training loops; wall_with_startup adds the worker processes' start):"
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    from mamba_recall.chapters.ch2_hashing_scaling.training.ensemble import default_way

    by_wall = table.loc[table["model_steps_per_s"].idxmax()]
    by_cpu = table.loc[table["model_steps_per_cpu_s"].idxmax()]
    print(
        f"faster here: {by_wall['way']} ({by_wall['processes']} process(es)) by the wall clock, {by_cpu['way']} "
        f"({by_cpu['processes']}) by CPU time; ch2_scaling's default for this group on the CPU: --way "
        f"{default_way('cpu', args.members, args.batch, args.L, 2 * args.D)} (training.ensemble.default_way)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
