"""Chapter 1 runner: the models whose checkpoints the notebooks load (``ch1_checkpoints``), all or some of them.

    python -m mamba_recall grid ch1_checkpoints --preset ci|paper                  # every model
    python -m mamba_recall grid ch1_checkpoints --preset ci|paper --only k1 wo     # retrain some of them

The declared experiment ``ch1_checkpoints`` (one model of each name of :data:`~.grid_jobs.CHECKPOINT_MODELS` at
seed 0, ``ci`` and ``paper``); this runner, named as its experiment, has that grid command as its ``main``
(:func:`mamba_recall.experiment.grid_command`, default ``--preset paper``), so the command each checkpoint's sidecar
records, ``python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints --preset ci --only k1``, is the
grid with its ``--only`` picking that model (the run-store jobs of the others are left as they are; the bundle
``results/ch1_checkpoints_<preset>.json`` still lists every finished model and records the grid command). Each job
writes ``results/checkpoints/ch1_<name>_<preset>.pt`` with a JSON sidecar (config, sha256, accuracy, device); a
listed checkpoint that is gone stops a notebook instead of being trained live. Every other part of Chapter 1 is a
declared experiment run by its name (:mod:`.grid`); given ``--preset cpu-hours``, this runner stops naming
those grid commands. The models, their data, the training recipe and the checkpoints' loaders
(:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.load_checkpoint`,
:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.load_or_train`, what the notebooks call)
are in :mod:`mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value`.
"""

from __future__ import annotations

from mamba_recall.experiment import runner_main

from .grid_jobs import CHECKPOINTS_EXPERIMENT


# one git state for the command (runner_main's): the bundle's, from before the checkpoints were written
main = runner_main(CHECKPOINTS_EXPERIMENT, "paper")


if __name__ == "__main__":
    raise SystemExit(main())
