"""Chapter 1, Table 1 of paper 000: one-layer (simplified) Mamba vs small Transformers on the latest-value MQAR.

The rows' models (paper → ours), the training of one cell and the grid are in :mod:`mamba_recall.chapters.ch1_gradient_dynamics.training.table1`
(:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_cell`, :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_table`); the paper gives no TF
sizes ("similar model sizes"), optimiser, |V| or steps: all [choice]s, in the ``ch1_table1`` preset.

    python -m mamba_recall grid ch1_table1 ch1_table1_matched --preset ci
    python -m mamba_recall grid ch1_table1 ch1_table1_matched --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall grid ch1_table1 --preset paper --allow-long

Table 1 and its size-matched row 3 (and the open review's rows ``ch1_table1_rope``, ``ch1_table1_seeds``) are declared
experiments (:mod:`..experiments`), run-store jobs, one per cell and seed (resumable; ``results/runs/<experiment>/``;
``ci``: seed 0; ``cpu-hours`` and ``paper``: 3 seeds), each run by its name. Each writes
``results/<experiment>_<preset>.json``: every run (table ``runs``) and per cell the mean over seeds with its 95 %
interval, the column ``accuracy`` (that mean) and the paper's number (table ``accuracy``). This module runs none of
them: called, it stops naming the grid command of what it was asked (:func:`.cpu_hours.refuse`).
"""

from __future__ import annotations

import argparse


def main(argv=None):
    """Stop with one line naming the grid command of the Table 1 experiments asked for (``--parts``, default the
    preset's Table 1 parts)."""
    from . import cpu_hours

    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--preset", default="ci", choices=["ci", "cpu-hours", "paper"])
    ap.add_argument("--parts", nargs="+", default=None, choices=[p for p in cpu_hours.PARTS if p.startswith("table1")])
    args, _ = ap.parse_known_args(argv)
    table = [p for p in cpu_hours.DEFAULT_PARTS[args.preset] if p.startswith("table1")]
    raise cpu_hours.refuse("ch1_table1", args.preset, args.parts, default=table)


if __name__ == "__main__":
    main()
