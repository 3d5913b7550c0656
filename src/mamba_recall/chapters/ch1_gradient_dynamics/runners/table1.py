"""Chapter 1, Table 1 of paper 000: one-layer (simplified) Mamba vs small Transformers on the latest-value MQAR.

The rows' models (paper → ours), the training of one cell and the grid are in :mod:`mamba_recall.chapters.ch1_gradient_dynamics.training.table1`
(:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_cell`, :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_table`); the paper gives no TF
sizes ("similar model sizes"), optimiser, |V| or steps: all [choice]s, in the ``ch1_table1`` preset.

    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.table1 --preset ci
    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.table1 --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.table1 --preset paper --parts table1 --allow-long

The one runner of Table 1, one way at every preset: run-store jobs, one per cell and seed (resumable;
``results/runs/ch1_table1/``; options ``--allow-long``, ``--jobs``, ``--aggregate-only``, ``--smoke``, ``--store``;
:mod:`.cpu_hours`). Parts ``table1`` and ``table1_matched`` (the size-matched row 3); without ``--parts`` every preset
runs both (``ci``: seed 0; ``cpu-hours`` and ``paper``: 3 seeds). It writes ``results/ch1_table1_<preset>.json``
and ``results/ch1_table1_matched_<preset>.json``: every run (table ``runs``) and per cell the mean over seeds with its
95 % interval, the column ``accuracy`` (that mean) and the paper's number (table ``accuracy``).
"""

from __future__ import annotations

from mamba_recall.results import command_provenance


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    """The run-store grid (:mod:`.cpu_hours`) of ``ch1_table1``'s parts at the preset (default ``ci``)."""
    from . import cpu_hours

    return cpu_hours.store_main(argv, runner="ch1_table1", default_preset="ci")


if __name__ == "__main__":
    main()
