"""Chapter 1, Table 1 of paper 000: one-layer (simplified) Mamba vs small Transformers on the latest-value MQAR.

The rows' models (paper → ours), the training of one cell and the grid are in :mod:`mamba_recall.chapters.ch1_gradient_dynamics.training.table1`
(:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_cell`, :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_table`); the paper gives no TF
sizes ("similar model sizes"), optimiser, |V| or steps: all [choice]s, in the ``ch1.table1`` preset.

    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.table1 --preset ci
    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.table1 --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.table1 --preset paper --parts table1 --allow-long

The one runner of Table 1, two ways. At ``ci`` it trains each cell once in this process and writes
``results/ch1_table1_ci.json`` (+ CSV). At ``cpu-hours`` and ``paper`` (or with ``--parts``) it runs Table 1 as
run-store jobs, one per cell and seed (3 seeds; parts ``table1`` and ``table1_matched``, the size-matched row 3;
options ``--allow-long``, ``--jobs``, ``--aggregate-only``, ``--smoke``, ``--store``; :mod:`.cpu_hours`), and writes
``results/ch1_table1_<preset>.json`` and ``results/ch1_table1_matched_<preset>.json`` with every run and each cell's
mean over seeds and its 95 % interval.
"""

from __future__ import annotations

import time

from mamba_recall.results import command_provenance
from mamba_recall.chapters.ch1_gradient_dynamics.training.table1 import run_table
from mamba_recall.runners import runner_command
from mamba_recall.runstore import one_process_parser, way_of


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    """The run-store parts (:mod:`.cpu_hours`) at ``cpu-hours`` and ``paper`` or with ``--parts``; the cells one by
    one at ``ci``."""
    from . import cpu_hours

    argv, preset, parts = way_of(argv, "ci")
    if preset != "ci" or parts is not None:
        return cpu_hours.store_main(argv, runner="ch1_table1")
    return cells_main(argv)


def cells_main(argv=None):
    from mamba_recall.presets import experiment
    from mamba_recall.results import save_bundle

    ap = one_process_parser(runner_command("ch1_table1"), "Table 1 of paper 000")
    ap.add_argument("--preset", default="ci", choices=("ci",))
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
