"""The command line every run-store runner shares.

Every run-store runner has the same command-line flow: ``--allow-long`` (the long-run guard,
:func:`grid_context`, the run context's ``allow_long``), ``--store`` (the folder, default :data:`RUNS_DIR`), then either
run the missing jobs (``--jobs`` processes; the measured estimate unless ``--no-estimate``, checked against the
hour of :func:`mamba_recall.longrun.check_estimate`) or, with ``--aggregate-only``, count the finished ones;
then write the bundle from what is finished (``--smoke``: the preset's smoke-capped grid). ``--only`` runs (or
counts) a subset of the jobs, picked by their configs' values (:func:`select_jobs`); the bundle is still written from
every finished job of the grid, so a subset leaves it as unfinished as any grid with jobs left. A runner with a second
grid made from the first one's runs passes it as a :class:`GridStage`; a command's bundles share one provenance.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from ..context import current, run_context
from ..longrun import check_estimate
from ._engines import ENGINES, run_grid
from ._errors import BundleNotReplaced, GridExit, JobsFailed
from ._records import RUNS_DIR, pending

#: the run-store options, in the order most runners list them (``dest`` names)
GRID_OPTIONS = ("jobs", "smoke", "allow_long", "aggregate_only", "no_estimate", "store")
_GRID_HELP = {
    "jobs": "parallel processes, one torch thread each",
    "allow_long": "start even if the estimate is over an hour",
    "aggregate_only": "write the bundle from the finished jobs",
    "no_estimate": "skip the step-time measurement",
    "store": f"run store (default {RUNS_DIR})",
}


#: the ``--device`` of a runner whose jobs say their device (:func:`add_device_arg`)
JOB_DEVICE_HELP = (
    "checked only: the jobs say their device (ci, cpu-hours: cpu; paper: a GPU where the process running a job has one)"
)


def positive_int(value: str) -> int:
    """``--jobs``: a whole number >= 1 (argparse's one-line error otherwise)."""
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < 1:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not allowed: give the number of parallel processes, a whole number >= 1 (1: this process)"
        )
    return number


def add_device_arg(parser: argparse.ArgumentParser, help: str = JOB_DEVICE_HELP) -> None:
    """``--device auto|cpu|cuda`` (default auto), resolved when parsed (:func:`mamba_recall.devices.resolve_device`:
    auto is a GPU where there is one), so ``cuda`` on a machine without one stops with argparse's one line."""

    def checked(value: str) -> str:
        from ..devices import resolve_device

        try:  # an unknown name, or cuda without a GPU: ParameterError (a ValueError) naming the choices
            return resolve_device(value).type
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parser.add_argument("--device", default="auto", type=checked, metavar="{auto,cpu,cuda}", help=help)


def add_grid_args(parser: argparse.ArgumentParser, order: Iterable[str] = GRID_OPTIONS, **helps: str | None) -> None:
    """Add the run-store options ``--jobs`` (int, 1), ``--smoke``, ``--allow-long``, ``--aggregate-only``,
    ``--no-estimate`` (flags) and ``--store`` (folder, None) to ``parser`` in ``order`` (names as in
    :data:`GRID_OPTIONS`), then the engine options (:func:`add_engine_args`) and ``--only`` (:func:`add_only_arg`);
    ``helps[name]`` overrides an option's help text (None: none)."""
    order = tuple(order)
    unknown = (set(order) | set(helps)) - set(GRID_OPTIONS)
    if unknown or sorted(order) != sorted(GRID_OPTIONS):
        raise ValueError(
            f"add_grid_args: got order={order} and help texts for {sorted(helps)}; name each of {GRID_OPTIONS} "
            "once in order, and give help texts only for those."
        )
    for name in order:
        flag = "--" + name.replace("_", "-")
        help_ = helps.get(name, _GRID_HELP.get(name))
        if name == "jobs":
            parser.add_argument(flag, type=positive_int, default=1, help=help_)
        elif name == "store":
            parser.add_argument(flag, default=None, help=help_)
        else:
            parser.add_argument(flag, action="store_true", help=help_)
    add_engine_args(parser)
    add_only_arg(parser)


#: ``--only``'s help: what it picks and what the bundle then is
ONLY_HELP = (
    "run only the jobs whose config has these values: VALUE (the value of one config field, e.g. a model or part "
    "name) or FIELD=VALUE; values of one field: any of them, of several fields: all. The bundle is still written "
    "from every finished job (with jobs left it is unfinished, as any grid's)"
)


def add_only_arg(parser: argparse.ArgumentParser) -> None:
    """``--only VALUE|FIELD=VALUE ...`` (repeatable, the words add up; None when absent): the jobs :func:`grid_main`
    runs or counts, picked by :func:`select_jobs`."""
    parser.add_argument("--only", nargs="+", action="extend", default=None, metavar="VALUE|FIELD=VALUE", help=ONLY_HELP)


def as_only(argv: Sequence[str] | None, *flags: str) -> list[str]:
    """``argv`` (None: ``sys.argv[1:]``) with each of ``flags`` written ``--only``: the spelling of a runner's subset
    option that committed files record (a checkpoint's sidecar, a printed command) kept runnable as the grid's
    ``--only`` (e.g. ``ch2_scaling --parts grid`` is ``--only grid``, ``ch4_edge --recipes d4`` is ``--only d4``,
    ``ch4_train --models s_small`` is ``--only s_small``)."""
    words = list(sys.argv[1:] if argv is None else argv)
    return ["--only" if w in flags else w for w in words]


_PLAIN = (str, int, float, bool)


def _values(jobs: Sequence[Mapping]) -> dict[str, list[str]]:
    """Config field -> its distinct values (as ``str`` writes them, in job order) over ``jobs``' plain fields."""
    out: dict[str, dict[str, None]] = {}
    for job in jobs:
        for field, value in job["config"].items():
            if isinstance(value, _PLAIN):
                out.setdefault(field, {})[str(value)] = None
    return {f: list(v) for f, v in out.items()}


def _fields_apart(values: Mapping[str, list[str]]) -> str:
    """The fields whose values tell the jobs apart, with their values (what ``--only`` can pick)."""
    apart = {f: v for f, v in values.items() if len(v) > 1}
    shown = [f"{f} ({', '.join(v[:12])}{', …' if len(v) > 12 else ''})" for f, v in apart.items()]
    return "; ".join(shown) or "none (every job has the same plain fields)"


def only_selection(only: Sequence[str] | None, jobs: Sequence[Mapping], what: str) -> dict[str, set[str]] | None:
    """``--only``'s words resolved against ``jobs`` (those of the whole command): config field -> the values picked
    (None: no ``--only``). A word is ``FIELD=VALUE`` or a ``VALUE`` of exactly one plain field (str, int, float,
    bool; compared as ``str`` writes them). GridExit naming ``what``, the word and the fields and values that tell
    the jobs apart when a word matches no job, a bare value is in several fields (write ``FIELD=VALUE``), or the
    words together pick no job (``x=1 y=2`` where no job has both)."""
    if only is None:
        return None
    values = _values(jobs)
    chosen: dict[str, set[str]] = {}
    for word in only:
        field, sep, value = word.partition("=")
        if sep:
            if value not in values.get(field, ()):
                raise GridExit(
                    f"--only {word}: no job of {what} has {field} = {value!r}; the fields that tell its jobs apart: "
                    f"{_fields_apart(values)}."
                )
        else:
            value = word
            fields = [f for f, v in values.items() if value in v]
            if not fields:
                raise GridExit(
                    f"--only {word}: no job of {what} has the value {word!r}; the fields that tell its jobs apart: "
                    f"{_fields_apart(values)}."
                )
            if len(fields) > 1:
                raise GridExit(
                    f"--only {word}: {word!r} is a value of the fields {', '.join(fields)} of {what}'s jobs; write "
                    f"one of {', '.join(f + '=' + word for f in fields)}."
                )
            field = fields[0]
        chosen.setdefault(field, set()).add(value)
    if not select_jobs(list(jobs), chosen):
        raise GridExit(
            f"--only {' '.join(only)}: no job of {what} has all of these values (values of one field: any, of several "
            f"fields: all); the fields that tell its jobs apart: {_fields_apart(values)}."
        )
    return chosen


def select_jobs(jobs: list[dict], selection: Mapping[str, set[str]] | None) -> list[dict]:
    """The jobs of ``jobs`` that ``selection`` (:func:`only_selection`) picks: for every field of it, the job's value
    is one of its values (a job without that field is not picked); all of them when ``selection`` is None."""
    if selection is None:
        return jobs
    return [
        j
        for j in jobs
        if all(isinstance(j["config"].get(f), _PLAIN) and str(j["config"][f]) in v for f, v in selection.items())
    ]


def add_engine_args(parser: argparse.ArgumentParser) -> None:
    """``--engine local|ray``, ``--ray-address`` and ``--gpus-per-job`` (:func:`run_grid`'s engine options)."""
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: --jobs processes on this machine (default); ray: Ray tasks (pip install -e '.[cluster]')",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help="with --engine ray: an existing cluster (e.g. auto, ray://head:10001); default a local instance of "
        "--jobs CPUs",
    )
    parser.add_argument(
        "--gpus-per-job",
        type=float,
        default=0.0,
        help="with --engine ray: GPUs per job, fractional where small models share a card (e.g. 0.25)",
    )
    parser.add_argument(
        "--members",
        type=int,
        default=1,
        help="train up to this many seeds of one config together as one ensemble (one job's process, Ray task and "
        "GPU share); runners that can: ch3_mqar_train, ch3_mqar_figa3 (mixers s6, s4d)",
    )


def log_stderr(message: str) -> None:
    """The log of a runner's aggregation (stderr, flushed; stdout keeps the grid's progress)."""
    print(message, file=sys.stderr, flush=True)


def _log_stdout(message: str) -> None:
    print(message, flush=True)


def grid_store(args, default: Path | None = None) -> Path | None:
    """The ``--store`` folder (``default`` when not given; None means :data:`RUNS_DIR`)."""
    return Path(args.store) if args.store else default


def grid_context(args):
    """The run context of a grid command, as a ``with`` block: the context in force, with ``--allow-long`` when
    given and, with ``--smoke``, the smoke folder, so that nothing the command or its workers save lands under
    ``results/`` (:func:`mamba_recall.context.run_context`; the worker processes get both)."""
    from ..results import smoke_results_dir

    smoke = {"smoke_dir": smoke_results_dir()} if getattr(args, "smoke", False) else {}
    return run_context(allow_long=current().allow_long or bool(args.allow_long), **smoke)


def run_missing(
    runner: str, jobs: list[dict], args, *, store: Path | None, estimate, what: str, members_runner: str | None = None
) -> list[dict]:
    """:func:`run_grid` of ``jobs`` with ``--jobs`` processes, the ``estimate`` unless ``--no-estimate``, and the
    long-run guard naming ``what`` (e.g. ``"ch2_trained_dn at preset cpu-hours"``); the log on stdout."""
    return run_grid(
        runner,
        jobs,
        n_jobs=args.jobs,
        store=store,
        estimate=None if args.no_estimate else estimate,
        check_long=lambda s: check_estimate(s, what, "cpu"),
        log=_log_stdout,
        members_runner=members_runner,
        **engine_options(args),
    )


def engine_options(args) -> dict:
    """:func:`run_grid`'s engine keywords from parsed :func:`add_engine_args` options (defaults where absent)."""
    return {
        "engine": getattr(args, "engine", "local"),
        "address": getattr(args, "ray_address", None),
        "gpus_per_job": getattr(args, "gpus_per_job", 0.0),
        "members": getattr(args, "members", 1),
    }


def run_or_count(
    runner: str, jobs: list[dict], args, *, store: Path | None, estimate, what: str, members_runner: str | None = None
) -> None:
    """``--aggregate-only``: print how many of ``jobs`` are finished and left; else :func:`run_missing`."""
    if args.aggregate_only:
        done, left = pending(jobs, store)
        print(f"{len(jobs)} jobs: {len(done)} finished, {len(left)} left", flush=True)
    else:
        run_missing(runner, jobs, args, store=store, estimate=estimate, what=what, members_runner=members_runner)


@dataclass(frozen=True)
class GridStage:
    """A further stage of a runner's command (:func:`grid_main`'s ``then``): its jobs, run (or counted with
    ``--aggregate-only``) and aggregated after the stages before it. ``jobs`` is a list or ``jobs(store)`` (jobs
    made from the finished runs of an earlier stage, e.g. Chapter 4's claim checks of its trained models);
    ``write`` as :func:`grid_main`'s; ``estimate`` None: none printed and no long-run check (as ``--no-estimate``)."""

    runner: str
    jobs: list[dict] | Callable[[Path | None], list[dict]]
    write: Callable
    estimate: Callable[[list[dict]], tuple[float, str]] | None = None
    what: str = ""
    members_runner: str | None = None


def grid_main(
    args,
    runner: str,
    jobs: list[dict] | Callable[[Path | None], list[dict]],
    write,
    *,
    estimate,
    what: str,
    default_store: Path | None = None,
    then: Sequence[GridStage] = (),
    members_runner: str | None = None,
):
    """The whole flow of a runner's parsed ``args`` (:func:`add_grid_args`): :func:`grid_store`,
    :func:`run_or_count`, then ``write(args.preset, store=…, smoke=args.smoke, log=log_stderr)`` (the bundle
    from the finished jobs), whose value it returns; then the same for each stage of ``then``, in order.
    ``jobs`` may be ``jobs(store)``.

    ``--only`` (``args.only``, :func:`add_only_arg`) runs or counts only the jobs it picks, in every stage
    (:func:`select_jobs`); its words are resolved against the jobs of every stage whose jobs are a list, before any
    runs (when every stage's jobs are made from the store, against the first stage's, once made): a word that picks
    nothing stops the command (:func:`only_selection`). The bundles are written as without it.

    A stage whose jobs fail (:class:`JobsFailed`) or whose bundle is refused (:class:`BundleNotReplaced`) does not
    stop the later stages; at the end the command exits with status 1 and repeats what went wrong (with the
    command that retries). Ctrl-C ends it at once (:class:`GridInterrupted`, status 130).

    One provenance per command: everything runs inside :func:`mamba_recall.results.command_provenance`, so
    every bundle the command writes records the git state taken before it wrote any file (a second bundle
    does not say ``git_dirty`` because the first one rewrote a tracked file)."""
    from ..results import command_provenance

    stages = [GridStage(runner, jobs, write, estimate, what, members_runner), *then]
    k = getattr(args, "members", 1)
    if not (isinstance(k, int) and k >= 1) or (k > 1 and any(s.members_runner is None for s in stages)):
        raise GridExit(
            f"--members {k}: give an integer >= 1; above 1 only runners that train several seeds of one config as "
            f"one ensemble take it (ch3_mqar_train, ch3_mqar_figa3), and {runner.split(':')[0]} trains one model "
            "per job: drop --members."
        )
    store = grid_store(args, default_store)
    only = getattr(args, "only", None)
    listed = [j for s in stages if not callable(s.jobs) for j in s.jobs]
    selection = only_selection(only, listed, what) if listed else None
    out, problems = [], []
    with grid_context(args), command_provenance():
        for stage in stages:
            todo = stage.jobs(store) if callable(stage.jobs) else stage.jobs
            if only is not None and selection is None:  # jobs made from the store: resolved against the first's
                selection = only_selection(only, todo, stage.what or what)
            todo = select_jobs(todo, selection)
            try:
                run_or_count(
                    stage.runner,
                    todo,
                    args,
                    store=store,
                    estimate=stage.estimate,
                    what=stage.what,
                    members_runner=stage.members_runner,
                )
            except JobsFailed as exc:  # the finished jobs are still aggregated; the failures end the command
                problems.append(exc.message)
            try:
                out.append(stage.write(args.preset, store=store, smoke=args.smoke, log=log_stderr))
            except BundleNotReplaced as exc:
                problems.append(exc.message)
                out.append(None)
    if problems:
        raise GridExit("\n".join(problems))
    return out[0]
