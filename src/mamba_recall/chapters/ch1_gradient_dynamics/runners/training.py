"""Chapter 1 runner: train the models of paper 000 on the latest-value MQAR, at every preset, as run-store jobs.

    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset ci|paper [--only k1 wo]
    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset cpu-hours --parts full_mamba --allow-long

One way at every preset: one run-store job per model and seed (resumable; ``results/runs/<experiment>/``; options
``--jobs``, ``--allow-long``, ``--aggregate-only``, ``--smoke``, ``--store``), the grid and its parts in
:mod:`.cpu_hours`. At ``ci`` and ``paper`` (part ``checkpoints``) it trains one model of each name (``--only``
picks some) at seed 0 with :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.train_recall`
and writes ``results/checkpoints/ch1_<name>_<preset>.pt`` with a JSON sidecar (config, sha256, accuracy, device)
plus the bundle ``results/ch1_checkpoints_<preset>.json``, which lists every finished model (a listed checkpoint
that is gone stops a notebook instead of being trained live). At ``cpu-hours`` it runs the parts ``models``,
``full_mamba``, ``wo`` and ``full_onehot`` with 3 seeds (or 5); at ``paper``, ``--parts full_mamba full_onehot``
runs the full Mamba LM's grid. Table 1's parts are :mod:`.table1`'s. The models, their data, the training recipe
and the checkpoints' loaders (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.load_checkpoint`,
:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.load_or_train`, what the notebooks call)
are in :mod:`mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value`.
"""

from __future__ import annotations

from mamba_recall.results import command_provenance


@command_provenance()  # one git state for the command: the bundle's, from before the checkpoints were written
def main(argv=None):
    """The run-store grid (:mod:`.cpu_hours`) of ``ch1_training``'s parts at the preset (default ``paper``)."""
    from . import cpu_hours

    return cpu_hours.store_main(argv, runner="ch1_training", default_preset="paper")


if __name__ == "__main__":
    main()
