"""Chapter 2's run-store experiments, declared once (:class:`mamba_recall.experiment.Experiment`), each named as its
run-store folder and bundle and run by that name (``python -m mamba_recall grid <experiment> --preset P``): the
one-model-per-job figure grids (:mod:`.runners.figure_grids`), the ensembles of ``ch2_scaling`` and ``ch2_multihead`` at ci and paper
(:mod:`.runners.ensembles`; there the one route to Figs. 7, 8, 10–11 and Tab. 10), the reference grid, the trained D–N grid and the designed circuit's capacity per (D, N)
cell (:mod:`.runners.designed_capacity`). Their jobs, job functions, estimates and bundles are the runners'."""

from __future__ import annotations

import functools

from mamba_recall.experiment import Experiment, sizes_from

from .configs import EXPERIMENTS as SIZES
from .runners import designed_capacity, ensembles, figure_grids, reference_grid, trained_dn


#: the ranges of the accuracies (a share of queries) and of counts and times, to which their intervals are clipped
UNIT, NONNEGATIVE = (0.0, 1.0), (0.0, float("inf"))


def _figure(part: str) -> Experiment:
    return Experiment(
        name=figure_grids.experiment_name(part),
        sizes=sizes_from(SIZES, figure_grids.PARTS[part][0]),
        make_jobs=functools.partial(figure_grids.jobs_for, part),
        run_job=figure_grids.RUNNER,
        write=functools.partial(figure_grids.write_bundle, part),
        estimate=figure_grids.estimate,
        metrics=tuple(figure_grids.METRICS.get(part, ["best_accuracy"])),
        bounds={"best_accuracy": UNIT},
    )


def _ensembles(runner: str) -> Experiment:
    return Experiment(
        name=runner,
        sizes=sizes_from(SIZES, runner),
        make_jobs=functools.partial(ensembles.jobs_for, runner),
        run_job=ensembles.RUNNER,
        write=functools.partial(ensembles.write_bundle, runner),
        estimate=lambda left: ensembles.recorded_estimate(runner, left[0]["config"]["preset"])(left),
        metrics=("seconds",),
        bounds={"seconds": NONNEGATIVE},
    )


def _grid(module, metrics: tuple[str, ...]) -> Experiment:
    """A trained grid of regime R0's cells: the reference grid's job function and estimator, the module's cells."""
    return Experiment.of(
        module,
        SIZES,
        run_job=reference_grid.RUNNER,
        estimate=reference_grid.estimate,
        metrics=metrics,
        bounds={"best_accuracy": UNIT, "final_accuracy": UNIT, "steps_run": NONNEGATIVE},
    )


_TRAINED = ("best_accuracy", "final_accuracy", "steps_run")
EXPERIMENTS = (
    *(_figure(part) for part in figure_grids.PARTS),
    *(_ensembles(runner) for runner in ensembles.EXPERIMENTS),
    _grid(reference_grid, _TRAINED),
    _grid(trained_dn, _TRAINED),
    Experiment.of(designed_capacity, SIZES),
)
