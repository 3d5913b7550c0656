"""Chapter 5's run-store experiments, declared once (:class:`mamba_recall.experiment.Experiment`): the capacity grid
at paper 002's step budget (``ch5_capacity``) and at 4x the steps (``ch5_capacity_long``, issue 52), the per-cell
learning-rate sweep at the long budget (``ch5_capacity_lr_sweep``) and the long grid at the rates it picks
(``ch5_capacity_tuned``, whose jobs exist once the sweep's bundle is committed complete), each named as its run-store
folder and bundle and run by that name (``python -m mamba_recall grid ch5_capacity_long --preset cpu-hours
--allow-long``; ``--aggregate-only --partial``: the bundle of a grid still running, marked partial). Their jobs, job
functions, estimates and bundle writers (which take ``partial``) are :mod:`.runners.capacity`'s."""

from __future__ import annotations

import functools

from mamba_recall.experiment import Experiment, sizes_from

from .configs import EXPERIMENTS as SIZES, LR_SWEEP
from .runners import capacity


def _budget(budget: str) -> Experiment:
    name = capacity.experiment_of(budget)
    return Experiment(
        name=name,
        sizes=sizes_from(SIZES, name),
        make_jobs=functools.partial(capacity.jobs_for, budget=budget),
        run_job=capacity.RUNNER,
        write=functools.partial(capacity.write_bundle, budget=budget),
        estimate=capacity.estimate,
        metrics=("n_probes", "train_seconds"),
        bounds={"n_probes": (0.0, float("inf")), "train_seconds": (0.0, float("inf"))},
    )


def _lr_sweep() -> Experiment:
    return Experiment(
        name=LR_SWEEP,
        sizes=sizes_from(SIZES, LR_SWEEP),
        make_jobs=capacity.sweep_jobs,
        run_job=capacity.SWEEP_RUNNER,
        write=capacity.write_sweep_bundle,
        estimate=capacity.sweep_estimate,
        metrics=("probe.accuracy", "probe.kappa", "probe.L", "probe.steps_run", "probe.seconds"),
        bounds={"accuracy": (0.0, 1.0)},
    )


EXPERIMENTS = (_budget("paper002"), _budget("long"), _lr_sweep(), _budget("tuned"))
