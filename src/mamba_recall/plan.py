"""A plan of every run-store grid before anyone pays for a device: ``python -m mamba_recall plan --preset P``.

For each run-store grid (one row per declared experiment, by its name) at preset ``P``: its jobs, how many are
finished in the store and how many are left, with ``--estimate`` the CPU-hours of the jobs left as the experiment's
own estimator measures them on this machine (one thread, every job at its full step budget: an upper bound, since
early stopping shortens jobs; on a machine shared with other work the step times, hence the estimate, grow), and
the command that runs it (``--engine ray`` puts it on a GPU box or a cluster; the appendix "Engineering notes", "Grids on Ray"), and
the bundle it writes (``results/<experiment>_<P>.json``, one name per experiment) with whether one is committed: the
jobs left of a grid whose bundle is not committed are not missing from the book, they are a grid nobody has run at
``P`` (Chapter 2's Thm 5 grid and Chapter 4's edge family at ``ci``, for instance, whose ``ci`` sizes serve tests
and smoke runs; Chapter 2's other one-model figure grids have none at ``ci`` or ``paper``, where the ensembles of
``ch2_scaling`` and ``ch2_multihead`` make those figures). An experiment with no run-store grid at ``P`` says so instead of a number. No GPU timing is committed, so every estimate
is a CPU's; the scorecard's "not run" lines point here.

Many small models per job: a grid whose runner trains the seeds of one config as one ensemble (``--members``:
Chapter 3's MQAR grids, mixers s6 and s4d) is planned that way at a GPU preset (``paper``), where it pays: a GPU
trains one small model far below its capacity. ``members`` is the grid's largest number of seeds per config,
``units`` the units of work left (each one process, one Ray task, one GPU share), the estimate times one ensemble
per unit and the command carries ``--members``. On this CPU an ensemble of 7 trains 1.03x (Fig. A.3's T = 100,
d = 64 cell) to 1.33x (the micro-MQAR) the model-steps per second of one model at a time
(``benchmarks/ch3_members.py``), so the ``cpu-hours`` grids keep one model per job.

The grids are the declared experiments (:mod:`mamba_recall.experiment`'s one registry); nothing below imports this
module.
"""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from .experiment import experiments
from .paths import RESULTS_DIR
from .runstore import pending, units

__all__ = ["Grid", "grids", "plan", "format_plan", "main"]


@dataclass(frozen=True)
class Grid:
    """One run-store grid: ``jobs(preset)`` (raises when the experiment has no grid at that preset), its
    ``estimate(jobs_left) -> (cpu_seconds, basis)`` and the command that runs it (``{preset}`` filled in).
    ``members``: the runner trains a config's seeds as one ensemble, and ``estimate(jobs_left, members)`` times
    that, planned at the presets ``members_presets`` (a GPU's, where an ensemble pays). ``experiment``: the declared
    experiment's name (its run-store folder, its bundle stem and the word of its grid command)."""

    experiment: str
    jobs: Callable[[str], list[dict]]
    estimate: Callable[..., tuple[float, str]]
    command: str
    members: bool = False
    members_presets: tuple[str, ...] = ()


def grids() -> list[Grid]:
    """Every run-store grid: the declared experiments (:func:`mamba_recall.experiment.experiments`), in chapter
    order, each with the one command that runs it (``python -m mamba_recall grid <experiment> --preset P``)."""
    return [
        Grid(
            e.name,
            e.grid_jobs,
            e.estimate,
            e.command("{preset}"),
            members=e.members_job is not None,
            members_presets=e.members_presets,
        )
        for e in experiments()
    ]


#: the columns of a grid that has no jobs at the preset (its ``note`` says why)
_NO_GRID = dict.fromkeys(("jobs", "finished", "left", "units"), 0) | dict.fromkeys(("command", "bundle"), "")
_NO_GRID |= {"members": 1, "cpu_hours_left": None, "committed": False}


def plan(preset: str, *, estimate: bool = False, store=None, log=print) -> pd.DataFrame:
    """The table of :func:`grids` at ``preset``: experiment, jobs, finished, left, the estimated CPU-hours of the
    jobs left (``estimate=True``: measured here by the experiment's estimator), the command, the bundle(s) it writes
    (``bundle``: ``<experiment>_<preset>``) and whether each is committed under ``results/`` (``committed``);
    ``note`` says why a grid has no jobs at this preset."""
    rows = []
    for g in grids():
        row = {"experiment": g.experiment}
        try:
            jobs = g.jobs(preset)
        except Exception as exc:  # noqa: BLE001 - an experiment without a grid at this preset: named, not fatal
            why = f"its {preset} sizes have no {exc} entry" if isinstance(exc, KeyError) else str(exc)
            rows.append({**row, **_NO_GRID, "note": why})
            continue
        done, left = pending(jobs, store)
        k = _members(jobs) if g.members and preset in g.members_presets else 1
        hours = None
        if estimate and left:
            log(f"measuring {g.experiment} ({len(left)} jobs left) ...")
            hours = (g.estimate(left, k) if g.members else g.estimate(left))[0] / 3600
        command = g.command.format(preset=preset) + (f" --members {k}" if k > 1 else "")
        bundles = sorted({f"{j['experiment']}_{preset}" for j in jobs})
        rows.append(
            dict(
                row,
                jobs=len(jobs),
                finished=len(done),
                left=len(left),
                members=k,
                units=len(units(left, k)),
                cpu_hours_left=hours,
                command=command,
                bundle=" ".join(bundles),
                committed=bool(bundles) and all((RESULTS_DIR / f"{b}.json").is_file() for b in bundles),
                note="",
            )
        )
    return pd.DataFrame(rows)


def _members(jobs: list[dict]) -> int:
    """The largest number of seeds that share one config among ``jobs`` (the members of one ensemble)."""
    return max(len(u) for u in units(jobs, len(jobs))) if jobs else 1


#: the widest line ``plan`` prints (a terminal's 100 columns): the table's numbers, then each command wrapped
WIDTH = 100


def _wrap(text: str, indent: str = "", first: str = "") -> list[str]:
    """``text`` in lines of at most :data:`WIDTH` characters, the first starting with ``first``, the rest with
    ``indent`` (words are never split: a path or an option stays whole)."""
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _command_lines(command: str, indent: str) -> list[str]:
    """A shell command wrapped at :data:`WIDTH` with `` \\`` continuations (the lines after the first indented two
    more), so it can be copied as it is."""
    lines = textwrap.wrap(
        command,
        WIDTH - 2,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line + (" \\" if i < len(lines) - 1 else "") for i, line in enumerate(lines)]


def format_plan(table: pd.DataFrame, preset: str, estimate: bool = False) -> str:
    """What ``plan`` prints, no line wider than :data:`WIDTH`: the numbers of each grid (one row each), the
    command and bundle of each grid, the grids with no run-store grid at ``preset`` and why, and the totals."""
    have = table[table["note"] == ""]
    numbers = ["experiment", "jobs", "finished", "left", "units", "members"]
    shown = have[numbers].copy()
    shown["committed"] = have["committed"].map({True: "yes", False: "no"})
    if estimate:
        shown["cpu_hours_left"] = have["cpu_hours_left"].map(lambda h: "" if pd.isna(h) else f"{h:.1f}")
    out = [shown.to_string(index=False)] if len(shown) else []
    if len(have):
        out += ["", "the command of each grid (and the bundle it writes, committed or not):"]
        for r in have.itertuples():
            state = "committed" if r.committed else "not committed"
            out += _wrap(f"{r.experiment} -> {r.bundle} ({state})", indent="    ", first="  ")
            out += _command_lines(r.command, "    ")
    missing = table[table["note"] != ""]
    if len(missing):
        out += ["", f"no run-store grid at preset {preset!r}:"]
        for r in missing.itertuples():
            out += _wrap(f"{r.experiment}: {r.note}", indent="    ", first="  ")
    unmade = have[~have.committed & (have.left > 0)]
    out += [
        "",
        f"{int(have.jobs.sum())} jobs at preset {preset!r}: {int(have.finished.sum())} finished, "
        f"{int(have.left.sum())} left in {int(have.units.sum())} units of work;",
    ]
    if len(unmade):
        out.append(f"{int(unmade.left.sum())} of them in grids whose bundle is not committed at {preset}")
        out += _wrap(
            "(grids nobody has run at this preset, not missing evidence): " + ", ".join(unmade.bundle),
            indent="  ",
            first="  ",
        )
    out.append(
        f"about {have.cpu_hours_left.fillna(0).sum():.1f} CPU-hours left (measured here, one thread)"
        if estimate
        else "--estimate measures the CPU-hours left"
    )
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mamba-recall plan", description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="cpu-hours", help="the preset whose grids to list (cpu-hours, paper, ci)")
    ap.add_argument(
        "--estimate",
        action="store_true",
        help="measure the step times of the jobs left here (one thread) and print CPU-hours per grid (minutes)",
    )
    ap.add_argument("--store", default=None, help="run store (default results/runs)")
    args = ap.parse_args(argv)
    from .presets import check_preset

    check_preset(args.preset)
    table = plan(args.preset, estimate=args.estimate, store=args.store)
    print(format_plan(table, args.preset, estimate=args.estimate))
    return 0
