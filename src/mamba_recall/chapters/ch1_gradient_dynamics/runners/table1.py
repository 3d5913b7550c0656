"""Chapter 1, Table 1 of paper 000: one-layer (simplified) Mamba vs small Transformers on the latest-value MQAR.

The rows' models (paper → ours), the training of one cell and the grid are in
:mod:`mamba_recall.chapters.ch1_gradient_dynamics.training.table1`; the paper gives no TF sizes ("similar model
sizes"), optimiser, |V| or steps: all [choice]s, in the ``ch1_table1`` preset. Table 1 is the declared experiment
``ch1_table1`` (one run-store job per cell and seed; :mod:`..experiments`); this runner is its grid command under
the experiment's own name, the same jobs and bundle::

    python -m mamba_recall grid ch1_table1 --preset paper --allow-long

Its size-matched row 3 and the open review's rows are the experiments ``ch1_table1_matched``, ``ch1_table1_rope``
and ``ch1_table1_seeds``, run by name (``python -m mamba_recall grid ch1_table1_matched --preset ci``).
"""

from __future__ import annotations

from mamba_recall.experiment import runner_main

EXPERIMENT = "ch1_table1"


main = runner_main(EXPERIMENT, "ci")


if __name__ == "__main__":
    raise SystemExit(main())
