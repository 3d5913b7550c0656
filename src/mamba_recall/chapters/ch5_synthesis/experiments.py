"""Chapter 5's run-store experiments, declared once (:class:`mamba_recall.experiment.Experiment`): the capacity grid
at paper 002's step budget (``ch5_capacity``) and at 4x the steps (``ch5_capacity_long``, issue 52), each named as
its run-store folder and bundle. Their jobs, job function, estimate and bundles are :mod:`.runners.capacity`'s."""

from __future__ import annotations

import functools

from mamba_recall.experiment import Experiment, sizes_from

from .configs import EXPERIMENTS as SIZES
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
        runner="ch5_capacity",
        part="" if budget == "paper002" else budget,
        extra_args="" if budget == "paper002" else f" --budget {budget}",
    )


EXPERIMENTS = (_budget("paper002"), _budget("long"))
