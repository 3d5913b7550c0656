"""A grid's bundle: the status fields and the summary of its runs that its ``data`` starts with
(:func:`finished_status`, :func:`runs_summary`; an unfinished grid's marked partial, :func:`partial_status`), where
it goes (:func:`bundle_directory`: a scratch store's beside that store, never into the committed results) and writing
it without losing evidence (:func:`save_grid_bundle`)."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
from pathlib import Path

from .. import provenance as _prov
from ..paths import REPO_ROOT, RESULTS_DIR
from ._aggregate import INTERVAL_METHOD
from ._errors import BundleNotReplaced
from ._records import RUNS_DIR, finished_runs


def finished_status(jobs: list[dict], store: Path | None = None, *, preset: str, log=print) -> tuple[list[dict], dict]:
    """The finished runs of ``jobs`` and the status fields every run-store bundle's ``data`` starts with:
    ``complete`` (all jobs finished), ``jobs_finished``, ``jobs_total``, ``interval_method``, ``runs``
    (:func:`runs_summary`, with ``wall_seconds``) and ``run_keys``. With no finished job it logs so and returns
    ``([], {})``: there is nothing to aggregate."""
    runs = finished_runs(jobs, store)
    if not runs:
        name = jobs[0]["experiment"] if jobs else "(an empty grid)"
        log(f"no finished jobs of {name} at preset {preset}; nothing to aggregate.")
        return [], {}
    data = GridStatus(
        {
            "complete": len(runs) == len(jobs),
            "jobs_finished": len(runs),
            "jobs_total": len(jobs),
            "interval_method": INTERVAL_METHOD,
            "runs": runs_summary(runs),
            "run_keys": sorted(r["key"] for r in runs),
        }
    )
    data.store = None if store is None else Path(store)
    data.finished = runs
    return runs, data


class GridStatus(dict):
    """The ``data`` dict :func:`finished_status` returns, remembering (as attributes, not keys: they are not written
    into the bundle) the run store it was counted in (``store``), so that :func:`save_grid_bundle` writes the
    bundle of a scratch store beside that store (:func:`bundle_directory`), and the finished runs it counted
    (``finished``, the run records), whose one layout every bundle starts with (:func:`~._layout.run_tables`)."""

    store: Path | None = None
    finished: list[dict] = []

    def with_fields(self, **first) -> GridStatus:
        """A copy with the keys ``first`` ahead of this status's own, remembering the same store (a plain
        ``{**status}`` copy forgets it, and :func:`save_grid_bundle` refuses such a copy)."""
        out = GridStatus({**first, **self})
        out.store, out.finished = self.store, self.finished
        return out


def partial_status(data: GridStatus, partial: bool, *, what: str, command: str, log=print) -> GridStatus | None:
    """``data`` (:func:`finished_status`) as a bundle may record it: a complete grid's as it is; an unfinished one's
    only when asked (``partial``: the grid command's ``--partial``), then marked ``partial: "k of n jobs"`` first in
    its ``data`` (what a page that shows a running grid reads and labels); else None, logged with the command that
    writes it marked (``command`` and ``--aggregate-only --partial``). ``what`` names the grid (``"ch5_capacity_long
    at preset cpu-hours"``). A partial bundle never replaces a complete one (:func:`save_grid_bundle` refuses it)."""
    if data["complete"]:
        return data
    done = f"{data['jobs_finished']} of {data['jobs_total']} jobs"
    if not partial:
        log(
            f"{what}: {done} finished; a bundle of an unfinished grid is written only when asked (--partial), and is "
            f"then marked partial; none written. To write one: {command} --aggregate-only --partial"
        )
        return None
    return data.with_fields(partial=done)


def is_default_store(store: Path | None) -> bool:
    """Whether ``store`` is the committed run store :data:`RUNS_DIR` (None means it)."""
    return store is None or Path(store).resolve() == Path(RUNS_DIR).resolve()


def bundle_directory(store: Path | None) -> Path | None:
    """Where the bundle of a grid counted in ``store`` goes: None (the results folder,
    :data:`mamba_recall.results.RESULTS_DIR`) for the committed store; for any other (scratch) store, beside it,
    never into the committed results: its parent when the store is a folder named ``runs`` (``X/runs`` → ``X``,
    the layout of ``results/runs`` → ``results``) and that parent is not the committed results folder, else the
    store's own ``_bundles`` subfolder."""
    if is_default_store(store):
        return None
    store = Path(store)
    if store.name == "runs" and store.resolve().parent != Path(RESULTS_DIR).resolve():
        return store.parent
    return store / "_bundles"


def _replaces_evidence(path: Path, data: dict) -> str | None:
    """Why writing ``data`` at ``path`` would lose evidence (a complete bundle replaced by an incomplete one, or one
    of the same grid with fewer finished jobs), or None."""
    try:
        old = json.loads(path.read_text())["data"]
        old_done, old_total, old_complete = old["jobs_finished"], old["jobs_total"], bool(old["complete"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no bundle there, or not a run-store bundle: nothing to keep
    new_done, new_total = data.get("jobs_finished"), data.get("jobs_total")
    if (old_complete and not data.get("complete")) or (old_total == new_total and new_done < old_done):
        return (
            f"not replacing {path} ({old_done} of {old_total} jobs{', complete' if old_complete else ''}) by a "
            f"bundle of {new_done} of {new_total} jobs: run the missing jobs first (the same command without "
            "--aggregate-only), or aggregate a partial grid from a scratch --store, whose bundle goes beside it"
        )
    return None


def save_grid_bundle(
    name: str, data: dict, config: dict, *, command: str, tables: dict, directory: Path | None = None, log=print
) -> Path:
    """Write a run-store bundle (:func:`mamba_recall.results.save_bundle`; its device the one its runs name, e.g. a
    GPU's for a paper grid run there, or ``cpu`` where they name none; wall time the runs' summed
    ``data["runs"]["wall_seconds"]``; ``data`` as :func:`finished_status` starts it) and log how many of
    the grid's jobs it aggregates.

    ``directory`` None: the results folder for the committed store, beside the store for a scratch one
    (:func:`bundle_directory` of the store ``data`` was counted in), so ``--store X`` never rewrites the
    committed bundles. A bundle that would replace a complete one (or one of more jobs of the same grid) by fewer
    finished jobs is refused with :class:`BundleNotReplaced`, naming both counts. ``tables`` hold the one layout,
    ``runs`` and ``cells`` (:func:`~._layout.run_tables`; :meth:`mamba_recall.experiment.Experiment.save_bundle`
    makes them from the experiment's declared metrics): ValueError without them."""
    from .. import results
    from ._layout import LAYOUT

    if directory is None:
        if not isinstance(data, GridStatus):
            # a plain dict has lost the store its jobs were counted in: defaulting to results/ would let a scratch
            # ``--store`` rewrite the committed bundles (the fault of issue 50, Chapter 3's runners)
            raise TypeError(
                "save_grid_bundle needs the GridStatus finished_status returned (it remembers the run store), or an "
                "explicit directory; a plain dict copy of it forgets the store. Copy it with GridStatus.with_fields."
            )
        directory = bundle_directory(data.store)
    if not set(LAYOUT) <= set(tables):
        raise ValueError(
            f"bundle {name}: its tables {sorted(tables)} lack the one layout {list(LAYOUT)}; write it through its "
            "experiment (Experiment.save_bundle), which makes them from the finished runs."
        )
    target = Path(directory or results.RESULTS_DIR) / f"{name}.json"
    why = _replaces_evidence(target, data)
    if why:
        log(why)
        raise BundleNotReplaced(why)
    devices = (data.get("runs") or {}).get("devices") or []
    path = results.save_bundle(
        name,
        data,
        config,
        command=command,
        device="; ".join(devices) if devices and "?" not in devices else "cpu",
        wall_seconds=data["runs"]["wall_seconds"],
        tables=tables,
        directory=directory,
    )
    log(f"wrote {path} ({data['jobs_finished']} of {data['jobs_total']} jobs)")
    return path


def dirty_files_committed_since(runs: list[dict], rev: str = "HEAD") -> dict[str, bool]:
    """For every file a run recorded as uncommitted: is the exact content it ran with (its sha256) the file's
    content at ``rev``? (True: that code is committed now, so the run is reproducible from ``rev``.)"""
    out = {}
    for rec in runs:
        for path, sha in rec["provenance"].get("dirty_files", {}).items():
            if out.get(path) is False:
                continue
            try:
                blob = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=REPO_ROOT, capture_output=True).stdout
            except OSError:  # no git on PATH: the committed content cannot be read, so it is not shown to match
                blob = b""
            out[path] = bool(blob) and hashlib.sha256(blob).hexdigest() == sha
    return dict(sorted(out.items()))


def runs_summary(runs: list[dict]) -> dict:
    """What a bundle records about the runs it aggregates: counts, commits, whether any was not clean
    (and which files, and whether each one's content as run is the committed one now), total wall and CPU time
    (``math.fsum``: exactly rounded, so the same runs read in another order give the same total to the last digit;
    a plain ``sum`` in file order rounded 278.85 to 278.9 or 278.8)."""
    commits = sorted({r["provenance"].get("git_commit") or "?" for r in runs})
    dirty = sorted({f for r in runs for f in r["provenance"].get("dirty_files", {})})
    head = _prov.git("rev-parse", "HEAD")
    return {
        "runs": len(runs),
        "commits": commits,
        "all_clean": all(r["provenance"].get("git_clean") for r in runs),
        "dirty_files": dirty,
        "dirty_files_as_run_equal_HEAD": dirty_files_committed_since(runs),
        "HEAD": head.strip() if head else None,
        "wall_seconds": round(math.fsum(r["provenance"].get("wall_seconds") or 0 for r in runs), 1),
        "cpu_seconds": round(math.fsum(r["provenance"].get("cpu_seconds") or 0 for r in runs), 1),
        "devices": sorted({r["provenance"].get("device", "?") for r in runs}),
    }
