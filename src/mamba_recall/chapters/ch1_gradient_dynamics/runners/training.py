"""Chapter 1 runner: retrain some of the models whose checkpoints the notebooks load (``ch1_checkpoints``).

    python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset ci|paper --only k1 wo

The declared experiment ``ch1_checkpoints`` (one model of each name of
:data:`~.cpu_hours_jobs.CHECKPOINT_MODELS` at seed 0, ``ci`` and ``paper``) runs by its name, ``python -m
mamba_recall grid ch1_checkpoints --preset ci``; this runner is that grid with ``--only`` picking models (the run-store
jobs of the others are left as they are; the bundle ``results/ch1_checkpoints_<preset>.json`` still lists every
finished model and records the grid command). Each writes ``results/checkpoints/ch1_<name>_<preset>.pt`` with a JSON
sidecar (config, sha256, accuracy, device); a listed checkpoint that is gone stops a notebook instead of being trained
live. Every other part of Chapter 1 is a declared experiment run by its name (:mod:`.cpu_hours`): given ``--parts``,
or ``--preset cpu-hours``, this runner stops naming that grid command. The models, their data, the training recipe
and the checkpoints' loaders (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.load_checkpoint`,
:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.load_or_train`, what the notebooks call)
are in :mod:`mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value`.
"""

from __future__ import annotations

from mamba_recall.results import command_provenance


@command_provenance()  # one git state for the command: the bundle's, from before the checkpoints were written
def main(argv=None):
    """``ch1_checkpoints`` with ``--only`` (:func:`.cpu_hours.checkpoints_main`), default preset ``paper``."""
    from . import cpu_hours

    return cpu_hours.checkpoints_main(argv)


if __name__ == "__main__":
    main()
