"""``python -m mamba_recall grid <experiment> --preset P``: the one command that runs any declared experiment
(:func:`mamba_recall.experiment.experiments`) through the run store and writes its bundle.

    python -m mamba_recall grid ch2_trained_dn --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall grid ch3_mqar_figa3 --preset paper --allow-long --members 7 --engine ray
    python -m mamba_recall grid ch4_edge_mix --preset ci --aggregate-only

The jobs whose run file is missing run (``--jobs`` processes, or Ray tasks with ``--engine ray``), the finished
ones are skipped, so the same command resumes; then the bundle ``results/<experiment>_<preset>.json`` is written from
what is finished (:func:`mamba_recall.runstore.grid_main`: ``--smoke``, ``--aggregate-only``, ``--no-estimate``,
``--store`` as every run-store runner). The jobs are the experiment's, so their run keys are those of the runner
that ran it before: finished runs stay finished.
"""

from __future__ import annotations

import argparse
import sys

from ..experiment import Experiment, experiment_named, experiments
from ..longrun import LongRunError
from ..presets import PRESETS
from ..runstore import GridStage, add_grid_args, grid_main

__all__ = ["grid_main_of", "main"]


def _no_bundle(preset, **kw) -> None:
    """The bundle of a stage that is not the last: none (the experiment's bundle is written once, at the end)."""
    return None


def grid_main_of(experiment: Experiment, args) -> object:
    """Run ``experiment`` with the parsed options ``args`` (:func:`add_grid_args` and ``--preset``): its stages in
    order (:attr:`Experiment.stages`, one by default), then its bundle; returns what its ``write`` returns.
    ValueError (from its ``make_jobs``) when it has no grid at ``args.preset``."""
    from ..results import smoke_run_store  # a smoke run's store is under _build/smoke/results, not results/runs

    jobs = experiment.grid_jobs(args.preset, smoke=args.smoke)
    stages = experiment.stages(jobs) if experiment.stages else [jobs]
    members = getattr(args, "members", 1)
    estimate = experiment.estimate
    if experiment.members_job:
        estimate = lambda left: experiment.estimate(left, members)  # noqa: E731 - times --members ensembles
    what = f"{experiment.name} at preset {args.preset}"
    last = len(stages) - 1
    then = [
        GridStage(
            experiment.run_job,
            stage,
            experiment.write if i == last else _no_bundle,
            estimate,
            f"{what} (stage {i + 1} of {len(stages)})",
            experiment.members_job,
        )
        for i, stage in enumerate(stages)
        if i > 0
    ]
    return grid_main(
        args,
        experiment.run_job,
        stages[0],
        experiment.write if last == 0 else _no_bundle,
        estimate=estimate,
        what=what,
        default_store=smoke_run_store(args.smoke),
        then=then,
        members_runner=experiment.members_job,
    )


def main(argv=None) -> int:
    names = [e.name for e in experiments()]
    ap = argparse.ArgumentParser(prog="python -m mamba_recall grid", description=__doc__.split("\n")[0])
    ap.add_argument("experiment", metavar="EXPERIMENT", help=f"a declared experiment: {', '.join(names)}")
    ap.add_argument("--preset", required=True, choices=PRESETS, help="the sizes to run (ci, cpu-hours, paper)")
    add_grid_args(ap, smoke="the preset's grid with a handful of steps (written under _build/smoke)")
    args = ap.parse_args(argv)
    try:
        experiment = experiment_named(args.experiment)
    except ValueError as exc:
        ap.error(str(exc))
    try:  # a preset at which the experiment has no grid: one line saying where it has one
        experiment.grid_jobs(args.preset, smoke=args.smoke)
    except (KeyError, ValueError) as exc:
        ap.error(f"{experiment.name} has no run-store grid at preset {args.preset}: {exc}")
    try:
        grid_main_of(experiment, args)
    except LongRunError as exc:  # the long-run guard refused to start: one line, with what to do
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
