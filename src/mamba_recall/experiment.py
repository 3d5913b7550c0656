"""Experiments declared once: :class:`Experiment` and the one registry of them (:func:`experiments`).

An experiment is one run-store grid: its name (the run-store folder ``results/runs/<name>/`` and the bundle
``results/<name>_<preset>.json``), its typed sizes per preset, its jobs as ``(config, seed)`` pairs, the job function
``run_job(config, seed) -> dict``, the metrics its runs record, and how its bundle is written from the finished runs.
Every job's config is typed: a frozen dataclass (:class:`mamba_recall.runstore.JobConfig`, declared beside the job
function: a runner's in its chapter's ``runners/job_configs.py``), which the job function receives as it is
(``config.D``) and the run store turns into the record its key hashes
(:meth:`~mamba_recall.runstore.JobConfig.to_record`: the dict the job had before it was typed, so every key stayed);
:func:`mamba_recall.runstore.make_job` refuses a dict. Each chapter lists its experiments in one place,
``chapters/<chapter>/experiments.py``, as a tuple ``EXPERIMENTS``; :func:`experiments` reads those lists, in chapter
order, by the same ``importlib`` scan of the chapter packages that finds the runners
(:func:`mamba_recall.runners.chapter_modules`), so nothing imports upwards.
A runner module that declares one experiment names its parts as :meth:`Experiment.of` reads them (``EXPERIMENT``,
``jobs_for``, ``RUNNER``, ``write_bundle``, ``estimate``, ``METRICS``), and its bundle writer ends in
:meth:`Experiment.save_bundle`. Every bundle starts with one layout: the table ``runs`` (one row per run: key, seed,
its cell's config entries, its metrics) and the table ``cells`` (each metric's mean over seeds and 95 % interval per
cell), made from the finished runs (:func:`mamba_recall.runstore.run_tables`); the writer's own tables follow.
``python -m mamba_recall plan`` lists the registry's grids; ``python -m mamba_recall grid <name> --preset P`` runs
one (:func:`grid_command`)::

    python -m mamba_recall grid ch2_trained_dn --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall grid ch3_mqar_figa3 --preset paper --allow-long --members 7 --engine ray
    python -m mamba_recall grid ch4_edge_mix --preset ci --aggregate-only

The jobs whose run file is missing run (``--jobs`` processes, or Ray tasks with ``--engine ray``), the finished ones
are skipped, so the same command resumes; then the bundle ``results/<name>_<preset>.json`` is written from what is
finished (:func:`mamba_recall.runstore.grid_main`: ``--smoke``, ``--aggregate-only``, ``--no-estimate``,
``--store`` as every run-store runner). The jobs are the experiment's, so their run keys are those of the runner
that ran it before: finished runs stay finished. A runner with one experiment is this command under its old name
(:func:`grid_command` with ``name``; its ``main`` is ``runner_main(EXPERIMENT, default_preset)``, :func:`runner_main`).

Every declared experiment runs by its name: a runner given one of them (``--parts fig8``, ``--preset cpu-hours``)
stops naming this command. ``--partial`` writes the bundle of a grid still running from its finished runs, marked
partial (``data.partial``: "k of n jobs"), where the experiment's writer takes it (Chapter 5's)::

    python -m mamba_recall grid ch5_capacity_long --preset cpu-hours --aggregate-only --partial
"""

from __future__ import annotations

import argparse
import functools
import inspect
import sys
from dataclasses import dataclass, field as _field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:
    from .runstore import JobConfig

__all__ = [
    "Experiment",
    "experiments",
    "experiment_named",
    "grid_command",
    "runner_main",
    "run_experiment",
    "sizes_at",
    "sizes_from",
]


def sizes_from(table: Mapping[str, Mapping[str, Any]], *names: str) -> dict[str, Any]:
    """An experiment's ``sizes`` from its chapter's configs table (``configs.EXPERIMENTS``: entry -> preset ->
    typed sizes): preset -> sizes for one entry; preset -> {entry: sizes} for an experiment made from several (the
    presets they all define)."""
    missing = [n for n in names if n not in table]
    if not names or missing:
        raise ValueError(f"sizes_from: name entries of the chapter's configs; {missing or 'none'} given are not there.")
    if len(names) == 1:
        return dict(table[names[0]])
    presets = [p for p in table[names[0]] if all(p in table[n] for n in names)]
    return {p: {n: table[n][p] for n in names} for p in presets}


def sizes_at(sizes: Mapping[str, Any], preset: str, *, smoke: bool = False) -> dict[str, Any]:
    """The plain dict of an experiment's typed sizes at ``preset`` (``sizes``: preset -> a
    :class:`~mamba_recall.presets.sizes.Sizes`), each field capped as it declares with ``smoke``: what a
    ``make_jobs`` declared beside its sizes reads. ValueError naming the presets it has when ``preset`` is not one
    (the experiment has no grid there: ``plan`` and the fingerprints pass over it)."""
    if preset not in sizes:
        raise ValueError(f"no sizes at preset {preset!r}; this experiment has {', '.join(sizes) or 'none'}.")
    return sizes[preset].smoke() if smoke else sizes[preset].as_dict()


#: the fields :meth:`Experiment.of` reads from a runner module, each -> the module attribute it is declared as
_MODULE_ATTRIBUTES = {
    "name": "EXPERIMENT",
    "make_jobs": "jobs_for",
    "run_job": "RUNNER",
    "write": "write_bundle",
    "estimate": "estimate",
    "metrics": "METRICS",
}


@dataclass(frozen=True)
class Experiment:
    """One run-store grid, declared once.

    ``make_jobs(preset, smoke=False)``: the run-store jobs (``runstore.make_job``, each named ``name``) at
    ``preset``; a ValueError or KeyError saying why when the experiment has no grid at that preset. ``run_job``:
    the job function ``run_job(config, seed) -> dict`` as the run store and its run records name it,
    ``"module:function"`` (a worker process imports it by that name). ``write(preset, *, store, smoke, log)``: the
    bundle from the finished runs (a ``write`` that also takes ``partial`` writes an unfinished grid's, marked
    partial: the grid's ``--partial``, :meth:`writes_partial`); None (the default): :meth:`write_runs`, the one
    layout (per-seed runs and cells over seeds of ``metrics``). ``estimate(jobs_left) -> (cpu_seconds, basis)`` (with ``members_job``:
    ``estimate(jobs_left, members)``). ``members_job``: ``"module:function"`` of ``(config, seeds) -> [result per
    seed]``, which trains a config's seeds as one ensemble (``--members``).
    ``sizes``: preset -> the typed sizes the jobs are made from (an experiment made from several entries of its
    chapter's configs: preset -> {entry: sizes}). ``metrics``: what its runs record that its bundle's one layout
    shows, dotted paths into a run's result (``row.accuracy``; a path to a dict: each of its leaves), each numeric
    one aggregated over seeds (:func:`mamba_recall.runstore.run_tables`); ``bounds``: ``{metric leaf: (lo, hi)}``,
    the range its interval is clipped to (an accuracy's [0, 1]); ``run_entries``: the config entries that name one
    run's own model and differ between the seeds of a cell (a checkpoint, a model name), not cell coordinates;
    ``optional_metrics``: the metric columns only some runs record (Chapter 1's probe of its |K| = 1 models).
    ``check_store(preset, smoke, store)``: raises (a ValueError naming the problem and the fix) when a grid run on
    ``--store`` cannot be this experiment's, called before any of its jobs runs (``ch4_edge_checks``: a store holding
    other finished edge models than the grid's own). Its one command is :meth:`command`. ``stages`` and
    ``members_presets`` below."""

    name: str
    sizes: Mapping[str, Any]
    make_jobs: Callable[..., list[dict]]
    run_job: str
    estimate: Callable[..., tuple[float, str]]
    metrics: tuple[str, ...] = ()
    write: Callable[..., Any] | None = None
    members_job: str | None = None
    stages: Callable[[list[dict]], list[list[dict]]] | None = None
    members_presets: tuple[str, ...] = ()
    check_store: Callable[[str, bool, Any], None] | None = None
    bounds: Mapping[str, tuple[float, float]] = _field(default_factory=dict)
    run_entries: tuple[str, ...] = ()
    optional_metrics: tuple[str, ...] = ()

    @classmethod
    def of(cls, module, sizes_table: Mapping[str, Mapping[str, Any]], *entries: str, **fields: Any) -> Experiment:
        """The experiment a runner ``module`` declares: ``name`` its ``EXPERIMENT``, ``make_jobs`` its ``jobs_for``,
        ``run_job`` its ``RUNNER``, ``write`` its ``write_bundle``, ``estimate`` its ``estimate``, ``metrics`` its
        ``METRICS`` (as a tuple) (:data:`_MODULE_ATTRIBUTES`), ``sizes`` :func:`sizes_from` its chapter's configs table
        ``sizes_table`` at ``entries`` (default: the one entry named as the experiment). ``fields``: any field of
        :class:`Experiment` given here instead (the module's attribute is then not read; ``sizes`` is always made
        from ``entries``). AttributeError naming the module and the attribute when one not given here is missing."""
        if "sizes" in fields:
            raise TypeError(
                f"Experiment.of({module.__name__}): sizes come from the configs table; name its entries instead "
                "(Experiment.of(module, SIZES, 'entry', ...))."
            )
        for field, attribute in _MODULE_ATTRIBUTES.items():
            if field in fields:
                continue
            if not hasattr(module, attribute):
                raise AttributeError(
                    f"Experiment.of: {module.__name__} declares no {attribute} (the experiment's {field}); declare "
                    f"it there or pass {field}= to Experiment.of."
                )
            value = getattr(module, attribute)
            fields[field] = tuple(value) if field == "metrics" else value
        return cls(sizes=sizes_from(sizes_table, *(entries or (fields["name"],))), **fields)

    def __post_init__(self):
        if not self.name or not self.name.replace("_", "").isalnum():
            raise ValueError(f"experiment name {self.name!r}: a plain name such as 'ch2_reference_grid'.")
        for field in ("make_jobs", "write", "estimate"):
            if not callable(getattr(self, field)) and not (field == "write" and self.write is None):
                raise TypeError(f"experiment {self.name}: {field} must be callable, got {getattr(self, field)!r}.")
        for field in ("run_job", "members_job"):
            ref = getattr(self, field)
            if ref is not None and (not isinstance(ref, str) or ref.count(":") != 1):
                raise TypeError(f"experiment {self.name}: {field} must be 'module:function', got {ref!r}.")

    def grid_jobs(self, preset: str, smoke: bool = False) -> list[dict]:
        """The run-store jobs at ``preset`` (``smoke``: the preset's smoke-capped grid); ValueError if one of them
        is not this experiment's (its store folder and bundle would drift from its name)."""
        jobs = self.make_jobs(preset, smoke=smoke) if smoke else self.make_jobs(preset)
        stray = sorted({j["experiment"] for j in jobs} - {self.name})
        if stray:
            raise ValueError(
                f"experiment {self.name} at preset {preset} makes jobs named {stray}; a declared experiment's jobs "
                "carry its own name (fix its make_jobs)."
            )
        return jobs

    def jobs(self, preset: str) -> list[tuple[JobConfig, int]]:
        """The grid at ``preset`` as ``(config, seed)`` pairs, each config fully resolved (its run key hashes its
        record) and as the job function receives it: typed, a :class:`~mamba_recall.runstore.JobConfig`."""
        from .runstore import job_config

        return [(job_config(j), j["seed"]) for j in self.grid_jobs(preset)]

    def bundle(self, preset: str) -> str:
        """The bundle's name at ``preset``: ``results/<bundle>.json``."""
        return f"{self.name}_{preset}"

    def command(self, preset: str) -> str:
        """The one command that runs this grid at ``preset`` and writes its bundle (:func:`command_line`)."""
        return command_line(self.name, preset)

    def writes_partial(self) -> bool:
        """Whether its declared ``write`` takes ``partial``: with jobs left, a bundle from the finished runs marked
        partial (:func:`mamba_recall.runstore.partial_status`; the grid command's ``--partial``)."""
        return self.write is not None and "partial" in inspect.signature(self.write).parameters

    def bundle_writer(self, partial: bool = False) -> Callable[..., Any]:
        """What writes the bundle from the finished runs: the declared ``write``, else :meth:`write_runs`; the
        bundle ``<name>_<preset>`` records :meth:`command`, the one command of this grid, whichever runner code writes
        it (:func:`mamba_recall.results.recorded_command`). ``partial``: the bundle of an unfinished grid too, marked
        partial (only a ``write`` that takes it, :meth:`writes_partial`; ValueError otherwise)."""
        write = self.write if self.write is not None else self.write_runs
        if partial:
            if not self.writes_partial():
                raise ValueError(
                    f"experiment {self.name}: its bundle writer writes no partial bundle; drop --partial (an "
                    "unfinished grid's bundle says complete: false)."
                )
            write = functools.partial(write, partial=True)

        def write_recording_command(preset: str, **kw):
            from .results import recorded_command

            with recorded_command(self.bundle(preset), self.command(preset)):
                return write(preset, **kw)

        return write_recording_command

    def write_runs(self, preset: str, *, store=None, smoke: bool = False, log=print):
        """The bundle ``results/<name>_<preset>.json`` (``_smoke`` appended for a smoke run; beside a scratch
        ``store``) of an experiment that declares no ``write``: the one layout alone (:meth:`save_bundle`), from the
        finished runs of the grid at ``preset``; its config records the entries every run's config shares
        (``shared``, :func:`mamba_recall.runstore.shared_config`: what the ``runs`` table leaves out). None when no
        job has finished."""
        from .runstore import finished_status, shared_config

        runs, data = finished_status(self.grid_jobs(preset, smoke=smoke), store, preset=preset, log=log)
        if not runs:
            return None
        config = {"preset": preset, "smoke": smoke, "runner": self.run_job, "shared": shared_config(runs)}
        return self.save_bundle(preset, data, config, {}, smoke=smoke, log=log)

    def layout(self, data, *, by: Sequence[str] | None = None) -> dict:
        """The one layout of the runs ``data`` counted (the :class:`~mamba_recall.runstore.GridStatus`
        ``finished_status`` returned): ``{"runs": ..., "cells": ...}`` (:func:`mamba_recall.runstore.run_tables`)
        from this experiment's ``metrics``, ``run_entries`` and ``bounds``, cells over ``by`` (None: the config
        entries that differ between the runs). What :meth:`save_bundle` writes, and what a writer derives its own
        tables from (a figure's columns beside the cells) rather than aggregating the runs a second time. TypeError
        for a plain dict (it has lost the runs) or a status that counted no finished run."""
        from .runstore import GridStatus, run_tables

        if not isinstance(data, GridStatus) or not data.finished:
            raise TypeError(
                f"experiment {self.name}: the layout needs the GridStatus finished_status returned with the finished "
                "runs it counted (a plain dict copy has lost them: copy it with GridStatus.with_fields; with no "
                "finished run there is no bundle to write)."
            )
        return run_tables(
            data.finished,
            self.metrics,
            by=by,
            run_entries=self.run_entries,
            bounds=self.bounds,
            optional=self.optional_metrics,
        )

    def save_bundle(
        self,
        preset: str,
        data,
        config: dict,
        tables: dict,
        *,
        smoke: bool = False,
        by: Sequence[str] | None = None,
        name: str | None = None,
        directory=None,
        log=print,
    ):
        """Save the bundle ``results/<name>_<preset>.json`` (``_smoke`` appended for a smoke run; beside a scratch
        store; ``name``: another bundle name, ``directory``: another folder) from ``data`` (the
        :class:`~mamba_recall.runstore.GridStatus` that ``finished_status`` returned, copied with ``with_fields``),
        ``config`` and ``tables`` (name -> DataFrame), recording :meth:`command`, the one command of this grid, a
        smoke run's too (:func:`mamba_recall.runstore.save_grid_bundle`): the tail of every bundle writer of a
        declared experiment. The bundle starts with the one layout, the tables ``runs`` and ``cells`` made from the
        finished runs ``data`` counted, this experiment's ``metrics`` and ``bounds``, cells over the config entries
        ``by`` (None: those that differ between the runs) (:func:`mamba_recall.runstore.run_tables`); ``tables``
        follow. ValueError if ``tables`` names ``runs`` or ``cells`` itself. Returns the JSON's path."""
        from .runstore import LAYOUT, save_grid_bundle

        own = sorted(set(LAYOUT) & set(tables))
        if own:
            raise ValueError(
                f"experiment {self.name}: its writer makes the tables {own} itself; those are the one layout "
                "Experiment.save_bundle makes from the runs. Name the writer's table after what it holds."
            )
        layout = self.layout(data, by=by)
        name = name or self.bundle(preset) + ("_smoke" if smoke else "")
        return save_grid_bundle(
            name, data, config, command=self.command(preset), tables={**layout, **tables}, directory=directory, log=log
        )


def command_line(names: str | Sequence[str], preset: str, *, smoke: bool = False) -> str:
    """The one command line that runs the declared experiments ``names`` (one name, or several run one after another)
    at ``preset``: ``python -m mamba_recall grid <names> --preset P --allow-long`` (``smoke``: ``--smoke`` in place of
    ``--allow-long``, the smoke-capped grid). What every bundle, checkpoint sidecar and "not run" message names."""
    names = names if isinstance(names, str) else " ".join(names)
    return f"python -m mamba_recall grid {names} --preset {preset} " + ("--smoke" if smoke else "--allow-long")


@functools.cache
def experiments() -> tuple[Experiment, ...]:
    """Every declared experiment, in chapter order then each chapter's ``EXPERIMENTS`` order. RuntimeError naming
    the chapter if a chapter's list holds something else or a name is declared twice."""
    from .runners import chapter_modules

    out: dict[str, Experiment] = {}
    for chapter, module in chapter_modules("experiments").items():
        declared = getattr(module, "EXPERIMENTS", None)
        if not isinstance(declared, tuple) or not all(isinstance(e, Experiment) for e in declared):
            raise RuntimeError(f"{module.__name__}.EXPERIMENTS must be a tuple of Experiment; fix {chapter}.")
        for e in declared:
            if e.name in out:
                raise RuntimeError(f"experiment {e.name!r} is declared twice (again in {module.__name__}).")
            if not e.name.startswith(chapter.split("_", 1)[0] + "_"):
                raise RuntimeError(f"experiment {e.name!r} of {chapter}: name it {chapter.split('_', 1)[0]}_<what>.")
            out[e.name] = e
    return tuple(out.values())


def experiment_named(name: str) -> Experiment:
    """The declared experiment ``name``; ValueError listing the declared ones if there is none."""
    for e in experiments():
        if e.name == name:
            return e
    raise ValueError(f"no experiment named {name!r}; the declared ones are {', '.join(e.name for e in experiments())}.")


def _no_bundle(preset, **kw) -> None:
    """The bundle of a stage that is not the last: none (the experiment's bundle is written once, at the end)."""
    return None


def run_experiment(experiment: Experiment | Sequence[Experiment], args) -> object:
    """Run ``experiment`` (or several, one after another, in one command: one provenance for all their bundles) with
    the parsed options ``args`` (``--preset`` and the run store's, :func:`mamba_recall.runstore.add_grid_args`;
    ``--partial``, :meth:`Experiment.bundle_writer`): each one's stages in order (:attr:`Experiment.stages`, one by
    default), then its bundle; returns what the first
    stage's ``write`` returns (None when that stage is not an experiment's last). A ``--smoke`` run's store is under
    ``_build/smoke/results``, never ``results/runs``. ValueError (from a ``make_jobs``) when one has no grid at
    ``args.preset``."""
    from .results import smoke_run_store
    from .runstore import GridStage, grid_main

    members, partial = getattr(args, "members", 1), getattr(args, "partial", False)
    stages: list[GridStage] = []
    for e in [experiment] if isinstance(experiment, Experiment) else list(experiment):
        if e.check_store is not None:  # before any job runs: a store this grid cannot use is refused first
            e.check_store(args.preset, args.smoke, getattr(args, "store", None))
        jobs = e.grid_jobs(args.preset, smoke=args.smoke)
        parts = e.stages(jobs) if e.stages else [jobs]
        estimate = e.estimate
        if e.members_job:
            estimate = functools.partial(lambda left, e: e.estimate(left, members), e=e)
        what = f"{e.name} at preset {args.preset}"
        for i, part in enumerate(parts):
            stages.append(
                GridStage(
                    e.run_job,
                    part,
                    e.bundle_writer(partial) if i == len(parts) - 1 else _no_bundle,
                    estimate,
                    what if len(parts) == 1 else f"{what} (stage {i + 1} of {len(parts)})",
                    e.members_job,
                )
            )
    first, *then = stages
    return grid_main(
        args,
        first.runner,
        first.jobs,
        first.write,
        estimate=first.estimate,
        what=first.what,
        default_store=smoke_run_store(args.smoke),
        then=then,
        members_runner=first.members_runner,
    )


def grid_command(
    argv: Sequence[str] | None = None,
    *,
    name: str | None = None,
    prog: str = "python -m mamba_recall grid",
    default_preset: str | None = None,
) -> int:
    """The command line that runs declared experiments (module docstring): ``EXPERIMENT [EXPERIMENT ...] --preset
    P`` and the run store's options (several: one after another, in one command); with ``name``, that experiment's runner
    under its own command (no positional name, ``--preset``
    defaulting to ``default_preset``, ``--device`` accepted and checked: the jobs say their device). ``--partial``:
    the bundle of an unfinished grid, marked partial (:meth:`Experiment.bundle_writer`). An unknown name, a preset at
    which the experiment has no grid (a grid made from another's bundle that is not complete yet, as
    ``ch5_capacity_tuned`` from its sweep, names the command that finishes that one), or ``--partial`` for an
    experiment whose writer does not take it stops with one line; so does the long-run guard (exit status 2)."""
    from .longrun import LongRunError
    from .presets import ALL_PRESETS
    from .runstore import add_device_arg, add_grid_args

    ap = argparse.ArgumentParser(
        prog=prog,
        description="Run declared experiments through the run store (the finished jobs are skipped, so the same "
        "command resumes) and write each one's bundle results/<experiment>_<preset>.json.",
    )
    if name is None:
        known = ", ".join(e.name for e in experiments())
        ap.add_argument(
            "experiment", metavar="EXPERIMENT", nargs="+", help=f"declared experiments, run in order: {known}"
        )
    else:
        add_device_arg(ap)
    ap.add_argument(
        "--preset",
        required=default_preset is None,
        default=default_preset,
        choices=ALL_PRESETS,
        help="the sizes to run (ci, cpu-hours, paper)",
    )
    add_grid_args(ap, smoke="the preset's grid with a handful of steps (written under _build/smoke)")
    ap.add_argument(
        "--partial",
        action="store_true",
        help="with jobs left, write the bundle from the finished ones, marked partial ('k of n jobs'; a complete "
        "bundle is never replaced by one), for the experiments whose bundle writer takes it (without it they write "
        "only a complete grid's bundle): " + (", ".join(e.name for e in experiments() if e.writes_partial()) or "none"),
    )
    args = ap.parse_args(argv)
    try:
        chosen = [experiment_named(n) for n in ([name] if name else dict.fromkeys(args.experiment))]
    except ValueError as exc:
        ap.error(str(exc))
    for experiment in chosen:
        if args.partial and not experiment.writes_partial():
            ap.error(
                f"{experiment.name} writes no partial bundle (its bundle writer does not take one): drop --partial."
            )
        try:  # a preset at which the experiment has no grid: one line saying where it has one
            experiment.grid_jobs(args.preset, smoke=args.smoke)
        except (KeyError, ValueError) as exc:
            ap.error(f"{experiment.name} has no run-store grid at preset {args.preset}: {exc}")
        if experiment.check_store is not None:  # a store it cannot use: one line, before any job of any grid runs
            try:
                experiment.check_store(args.preset, args.smoke, args.store)
            except ValueError as exc:
                ap.error(f"{experiment.name} --store {args.store}: {exc}")
    try:
        run_experiment(chosen, args)
    except LongRunError as exc:  # the long-run guard refused to start: one line, with what to do
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def runner_main(name: str, default_preset: str, *, runner: str | None = None) -> Callable[..., int]:
    """The ``main(argv=None) -> int`` of a runner module whose command is experiment ``name``'s grid command: the
    run store's options, the same jobs and bundle (:func:`grid_command` with ``name``), under the runner's own command
    (:func:`mamba_recall.runners.runner_command` of ``runner``, default ``name``: the runner named as its experiment),
    ``--preset`` defaulting to ``default_preset``. It takes one git state for the command, before it writes anything
    (:func:`mamba_recall.results.command_provenance`), as every runner's ``main``. A runner module declares it as
    ``main = runner_main(EXPERIMENT, "ci")`` and keeps its ``if __name__ == "__main__"`` guard (``python -m``)."""
    from .results import command_provenance
    from .runners import runner_command

    @command_provenance()
    def main(argv: Sequence[str] | None = None) -> int:
        return grid_command(argv, name=name, prog=runner_command(runner or name), default_preset=default_preset)

    main.__doc__ = (
        f"``python -m mamba_recall grid {name} --preset P`` under this runner's command, default preset "
        f"``{default_preset}`` (:func:`mamba_recall.experiment.grid_command`: the run store's options, the same jobs "
        "and bundle; made by :func:`mamba_recall.experiment.runner_main`)."
    )
    main.__qualname__ = "main"
    return main
