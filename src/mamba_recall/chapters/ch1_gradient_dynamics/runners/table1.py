"""Chapter 1, Table 1 of paper 000: one-layer (simplified) Mamba vs small Transformers on the latest-value MQAR.

The rows' models (paper → ours), the training of one cell and the grid are in :mod:`mamba_recall.chapters.ch1_gradient_dynamics.training.table1`
(:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_cell`, :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_table`); the paper gives no TF
sizes ("similar model sizes"), optimiser, |V| or steps: all [choice]s, in the ``ch1.table1`` preset.

``python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.table1 --preset ci|paper [--device cuda]`` writes
``results/ch1_table1_<preset>.json`` (+ CSV); the ``cpu-hours`` preset (3 seeds, early stopping on the training
set) runs through the run store: ``python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset cpu-hours --parts table1``.
"""

from __future__ import annotations

import argparse
import time

from mamba_recall.results import command_provenance
from mamba_recall.chapters.ch1_gradient_dynamics.training.table1 import run_table
from mamba_recall.runners import runner_command


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    from mamba_recall.presets import experiment
    from mamba_recall.results import save_bundle

    ap = argparse.ArgumentParser(description="Table 1 of paper 000")
    ap.add_argument("--preset", default="ci", choices=("ci", "paper"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    sizes = experiment("ch1.table1", args.preset)
    start = time.perf_counter()
    table = run_table(sizes, args.seed, args.device)
    print(table.to_string())
    save_bundle(
        f"ch1_table1_{args.preset}",
        {"n_cells": len(table)},
        {"preset": args.preset, "seed": args.seed, "sizes": sizes},
        command=f"{runner_command('ch1_table1')} --preset {args.preset} --device {args.device}",
        device=args.device,
        wall_seconds=time.perf_counter() - start,
        tables={"accuracy": table},
    )


if __name__ == "__main__":
    main()
