r"""The run store: every training run is a *job*, its result a small JSON file written the moment it ends.

A job is ``(experiment, config, seed)`` with ``config`` **fully resolved** (sizes, steps, optimiser recipe,
evaluation seed and schedule: nothing left to a default that could change later). Its key is
``joblib.hash`` of the three (dict keys sorted, so the key does not depend on the order of entries), and its
result lives at::

    results/runs/<experiment>/<key>.json
      {"schema": "mamba_recall.run", "schema_version": 1, "key", "experiment", "config", "seed", "runner",
       "result": {...}, "provenance": {"git_commit", "git_clean", "dirty_files", "device", "versions",
                                       "created", "wall_seconds", "host_cpus"}}

:func:`run_grid` runs the jobs whose file is missing and skips the others, so the same command resumes a
grid after an interruption (Ctrl-C, a killed session, another day or another machine: the files are
committed). Files are written atomically (a temporary file, then ``os.replace``), so an interrupted job
leaves nothing behind and is simply run again. Before starting, it prints how many jobs are finished and
left and an estimated time from a *measured* step time (the runner's ``estimate``); while running, a tqdm
bar with an ETA. ``n_jobs > 1`` runs jobs in separate processes (``joblib.Parallel``, the loky backend),
each with one torch thread; ``n_jobs=1`` runs them in this process, also with one thread.

Machinery (see README "Run store"): ``joblib.hash`` keys the jobs and ``joblib.Parallel`` runs them; the
store itself is plain JSON files rather than ``joblib.Memory``'s pickles, because the results are committed
and read by people and by the book (one reviewable JSON per run), and because ``Memory`` also keys on the
function's source, so any edit to a runner would silently orphan every finished run.

Provenance and "clean": other people edit the working tree while a grid runs, so ``git status`` of the
whole tree says little about a run. A run records the commit ``HEAD`` and, as ``dirty_files``, the
library and runner files *this process imported* that differ from ``HEAD`` (modified or untracked), with
their sha256; ``git_clean`` is true when that list is empty. Both are taken once per process, right after
the runner is imported (the code in memory is the code on disk at that moment). The bundles of one command
(:func:`grid_main`) likewise share one git state, taken before the command writes any file.

Aggregation (:func:`aggregate`): per cell the mean over seeds, a 95 % Student-t interval
``mean ± t_{0.975, n-1} · s / √n`` (quantile :func:`t_quantile_975` from ``scipy.stats.t``; no interval for one
seed) and the per-seed values.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import importlib
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import joblib
from scipy.stats import t as _t

from .longrun import allow_long_runs, check_estimate, long_runs_allowed
from .longrun import format_seconds as _fmt
from .paths import REPO_ROOT, RESULTS_DIR

__all__ = [
    "RUNS_DIR",
    "SCHEMA",
    "job_key",
    "make_job",
    "job_path",
    "load_runs",
    "pending",
    "run_grid",
    "aggregate",
    "t_quantile_975",
    "INTERVAL_METHOD",
    "process_provenance",
    "runs_summary",
    "finished_status",
    "save_grid_bundle",
    "GRID_OPTIONS",
    "add_grid_args",
    "grid_store",
    "run_missing",
    "run_or_count",
    "grid_main",
    "GridStage",
    "log_stderr",
]

SCHEMA = "mamba_recall.run"
SCHEMA_VERSION = 1
RUNS_DIR = RESULTS_DIR / "runs"


# ---------------------------------------------------------------------------------------------- jobs


def _plain(obj):
    """The JSON form of ``obj`` (tuples → lists, numpy/torch scalars → numbers), so that the key of a job
    built in memory equals the key of the same job read back from its file."""
    return json.loads(json.dumps(obj, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


def make_job(experiment: str, config: dict, seed: int) -> dict:
    """A job: ``{"experiment", "config", "seed"}`` in plain JSON form, with its ``key``."""
    if not experiment or "/" in experiment or experiment.startswith("."):
        raise ValueError(f"experiment name {experiment!r} must be a plain name such as 'ch2.reference_grid'.")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}.")
    job = {"experiment": experiment, "config": _plain(config), "seed": seed}
    job["key"] = job_key(job)
    return job


def job_key(job: dict) -> str:
    """``joblib.hash`` (md5 of the pickled, key-sorted dict) of (experiment, config, seed)."""
    return joblib.hash({"experiment": job["experiment"], "config": _plain(job["config"]), "seed": job["seed"]})


def job_path(job: dict, store: Path | None = None) -> Path:
    return Path(store or RUNS_DIR) / job["experiment"] / f"{job['key']}.json"


def pending(jobs: Iterable[dict], store: Path | None = None) -> tuple[list[dict], list[dict]]:
    """``(finished, left)``: the jobs whose result file exists (and is a valid run of that job), the others."""
    done, left = [], []
    for job in jobs:
        path = job_path(job, store)
        ok = False
        if path.is_file():
            try:
                rec = json.loads(path.read_text())
                ok = rec.get("schema") == SCHEMA and rec.get("key") == job["key"]
            except (json.JSONDecodeError, UnicodeDecodeError):
                ok = False
        (done if ok else left).append(job)
    return done, left


def load_runs(experiment: str, store: Path | None = None) -> list[dict]:
    """Every stored run of ``experiment`` (records whose key matches their content; others raise)."""
    folder = Path(store or RUNS_DIR) / experiment
    runs = []
    for path in sorted(folder.glob("*.json")):
        try:
            rec = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"corrupt run file {path} ({exc}); delete it and re-run the grid command, which "
                "runs only the missing jobs."
            ) from exc
        if rec.get("schema") != SCHEMA or job_key(rec) != rec.get("key") or path.stem != rec.get("key"):
            raise ValueError(
                f"run file {path} does not match its key (edited by hand?); delete it and re-run the grid command."
            )
        runs.append(rec)
    return runs


def finished_runs(jobs: list[dict], store: Path | None = None) -> list[dict]:
    """The stored runs of exactly these ``jobs`` (one experiment), for aggregating one preset's grid."""
    experiments = {j["experiment"] for j in jobs}
    if len(experiments) != 1:
        raise ValueError(f"finished_runs takes the jobs of one experiment, got {sorted(experiments)}.")
    keys = {j["key"] for j in jobs}
    return [r for r in load_runs(experiments.pop(), store) if r["key"] in keys]


# ---------------------------------------------------------------------------------------------- provenance

_PROCESS_PROVENANCE: dict | None = None


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def _imported_repo_files() -> list[Path]:
    files = set()
    root = REPO_ROOT.resolve()
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if not f:
            continue
        p = Path(f).resolve()
        if p.suffix == ".py" and root in p.parents:
            files.add(p)
    return sorted(files)


def process_provenance(refresh: bool = False) -> dict:
    """Commit, the imported repository files that differ from it (with sha256), versions, device: taken once
    per process (see the module docstring) unless ``refresh``."""
    global _PROCESS_PROVENANCE
    if _PROCESS_PROVENANCE is not None and not refresh:
        return _PROCESS_PROVENANCE
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=all", "--", "src", "pyproject.toml")
    changed = set()
    if status is not None:
        for line in status.splitlines():
            path = line[3:].split(" -> ")[-1].strip().strip('"')
            changed.add((REPO_ROOT / path).resolve())
    imported = _imported_repo_files()
    dirty = {}
    for p in imported:
        if p in changed:
            dirty[str(p.relative_to(REPO_ROOT.resolve()))] = hashlib.sha256(p.read_bytes()).hexdigest()
    versions = {"python": platform.python_version(), "joblib": joblib.__version__}
    for name in ("torch", "numpy", "mamba_recall"):
        mod = sys.modules.get(name)
        if mod is not None:
            versions[name] = getattr(mod, "__version__", "?")
    _PROCESS_PROVENANCE = {
        "git_commit": commit.strip() if commit else None,
        "git_clean": (not dirty) if status is not None else None,
        "dirty_files": dirty,
        "versions": versions,
        "platform": platform.platform(),
        "host_cpus": os.cpu_count(),
    }
    return _PROCESS_PROVENANCE


def _device_description() -> str:
    torch = sys.modules.get("torch")
    if torch is None:
        return f"cpu: {platform.processor() or platform.machine()} (no torch)"
    return f"cpu: {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"


# ---------------------------------------------------------------------------------------------- running


def _resolve(runner: str) -> Callable:
    module, _, func = runner.partition(":")
    if not func:
        raise ValueError(f"runner {runner!r} must be 'package.module:function'.")
    return getattr(importlib.import_module(module), func)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _run_one(runner: str, job: dict, store: str, threads: int = 1, allow_long: bool | None = None) -> dict:
    """Run one job (in this process or a worker) and write its file; returns the record. ``allow_long``: the
    parent's long-run permission, set in a worker process (a fresh process would otherwise refuse a job that
    the parent's ``--allow-long`` allowed)."""
    if allow_long is not None:
        allow_long_runs(allow_long)
    fn = _resolve(runner)
    torch = sys.modules.get("torch")
    if torch is not None and threads:
        torch.set_num_threads(threads)
    prov = dict(process_provenance())
    start = time.perf_counter()
    cpu0 = time.process_time()
    result = fn(job["config"], job["seed"])
    wall = time.perf_counter() - start
    prov.update(
        device=_device_description(),
        wall_seconds=round(wall, 2),
        cpu_seconds=round(time.process_time() - cpu0, 2),
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )
    record = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "key": job["key"],
        "experiment": job["experiment"],
        "config": job["config"],
        "seed": job["seed"],
        "runner": runner,
        "result": _plain(result),
        "provenance": prov,
    }
    _write_atomic(job_path(job, Path(store)), json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def run_grid(
    runner: str,
    jobs: list[dict],
    *,
    n_jobs: int = 1,
    store: Path | None = None,
    estimate: Callable[[list[dict]], tuple[float, str]] | None = None,
    log=print,
    progress: bool = True,
    check_long: Callable[[float], None] | None = None,
) -> list[dict]:
    """Run every job of ``jobs`` whose result file is missing; return the records written now.

    ``runner``: ``"package.module:function"``, called as ``function(config, seed) -> dict`` (JSON-able).
    ``estimate(jobs_left) -> (seconds for one process, how it was measured)`` is printed before anything
    starts (divided by ``n_jobs`` for parallel processes, an optimistic bound on a busy machine);
    ``check_long(seconds)`` may refuse to start (the long-run guard). ``n_jobs > 1``: separate processes.
    """
    store = Path(store or RUNS_DIR)
    keys = [j["key"] for j in jobs]
    if len(set(keys)) != len(keys):
        raise ValueError("the grid lists the same job twice (same experiment, config and seed).")
    done, left = pending(jobs, store)
    log(f"{len(jobs)} jobs: {len(done)} finished (skipped), {len(left)} left; store {store}")
    if not left:
        return []
    if estimate is not None:
        seconds, basis = estimate(left)
        per = seconds / max(1, min(n_jobs, len(left)))
        log(f"estimated {_fmt(per)} for {len(left)} jobs with --jobs {n_jobs} ({basis})")
        if check_long is not None:
            check_long(per)
    from tqdm.auto import tqdm

    bar = tqdm(total=len(left), desc=left[0]["experiment"], unit="job", disable=not progress, smoothing=0.1)
    records = []
    try:
        if n_jobs == 1:
            for job in left:
                records.append(_run_one(runner, job, str(store)))
                bar.update(1)
        else:
            from joblib import Parallel, delayed

            par = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered", inner_max_num_threads=1)
            allowed = long_runs_allowed()
            for rec in par(delayed(_run_one)(runner, job, str(store), 1, allowed) for job in left):
                records.append(rec)
                bar.update(1)
    finally:
        bar.close()
    return records


# ---------------------------------------------------------------------------------------------- aggregation

INTERVAL_METHOD = (
    "95 % Student-t interval over seeds, mean ± t_{0.975, n-1} · s / √n (s: sample standard "
    "deviation, n-1 denominator); t quantile from scipy.stats.t; no interval (NaN) for one seed. "
    "Bounds are not clipped to [0, 1]."
)


def t_quantile_975(df: int) -> float:
    """t_{0.975, df}, the 97.5 % quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``):
    the half-width factor of a two-sided 95 % interval (12.706 at df = 1, 4.303 at 2, → 1.960). NaN for df < 1.

    Bundles written before scipy was a dependency used a table of these quantiles to 3 decimals for
    df ≤ 30 and 1.96 + 2.4/df beyond (their ``interval_method`` says so); the table is within 4.8·10⁻⁴ of
    this (2.1·10⁻³ beyond df = 30), so their bounds are within that times s/√n (tests/test_stats.py).
    """
    if df < 1:
        return float("nan")
    return float(_t.ppf(0.975, df))


def mean_interval(values: list[float]) -> dict:
    """``{"n", "mean", "std", "ci_low", "ci_high"}`` (see :data:`INTERVAL_METHOD`)."""
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        return dict(n=0, mean=float("nan"), std=float("nan"), ci_low=float("nan"), ci_high=float("nan"))
    mean = sum(vals) / n
    if n == 1:
        return dict(n=1, mean=mean, std=float("nan"), ci_low=float("nan"), ci_high=float("nan"))
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    half = t_quantile_975(n - 1) * std / math.sqrt(n)
    return dict(n=n, mean=mean, std=std, ci_low=mean - half, ci_high=mean + half)


def aggregate(runs: list[dict], by: list[str], metrics: list[str]):
    """One row per cell (the values of config keys ``by``): for each metric (a key of ``result``) the mean,
    95 % interval, min, max and the per-seed values (``"<metric>_per_seed"``, ordered by seed), plus the
    seeds and the keys of the runs. Runs of one cell must agree on every other config entry."""
    import pandas as pd

    cells: dict[tuple, list[dict]] = {}
    for rec in runs:
        cell = tuple(rec["config"][k] for k in by)
        cells.setdefault(cell, []).append(rec)
    rows = []
    for cell, recs in sorted(cells.items()):
        recs = sorted(recs, key=lambda r: r["seed"])
        rest = {json.dumps({k: v for k, v in r["config"].items() if k not in by}, sort_keys=True) for r in recs}
        if len(rest) > 1:
            raise ValueError(
                f"cell {dict(zip(by, cell))} mixes runs of different configs; aggregate one config at a time."
            )
        seeds = [r["seed"] for r in recs]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"cell {dict(zip(by, cell))} has the same seed twice.")
        row = dict(zip(by, cell))
        row["seeds"] = " ".join(str(s) for s in seeds)
        for m in metrics:
            vals = [r["result"][m] for r in recs]
            st = mean_interval(vals)
            row.update(
                {
                    f"{m}_mean": st["mean"],
                    f"{m}_ci_low": st["ci_low"],
                    f"{m}_ci_high": st["ci_high"],
                    f"{m}_std": st["std"],
                    f"{m}_min": min(vals),
                    f"{m}_max": max(vals),
                    f"{m}_per_seed": " ".join(f"{v:.4f}" for v in vals),
                }
            )
        row["n_seeds"] = len(recs)
        row["wall_seconds"] = round(sum(r["provenance"].get("wall_seconds") or 0 for r in recs), 1)
        row["run_keys"] = " ".join(r["key"] for r in recs)
        rows.append(row)
    return pd.DataFrame(rows)


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
    data = {
        "complete": len(runs) == len(jobs),
        "jobs_finished": len(runs),
        "jobs_total": len(jobs),
        "interval_method": INTERVAL_METHOD,
        "runs": runs_summary(runs),
        "run_keys": sorted(r["key"] for r in runs),
    }
    return runs, data


def save_grid_bundle(
    name: str, data: dict, config: dict, *, command: str, tables: dict, directory: Path | None = None, log=print
) -> Path:
    """Write a run-store bundle (:func:`mamba_recall.results.save_bundle`, device ``cpu``, wall time the runs'
    summed ``data["runs"]["wall_seconds"]``; ``data`` as :func:`finished_status` starts it) and log how many of
    the grid's jobs it aggregates."""
    from .results import save_bundle

    path = save_bundle(
        name,
        data,
        config,
        command=command,
        device="cpu",
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
            blob = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=REPO_ROOT, capture_output=True).stdout
            out[path] = bool(blob) and hashlib.sha256(blob).hexdigest() == sha
    return dict(sorted(out.items()))


def runs_summary(runs: list[dict]) -> dict:
    """What a bundle records about the runs it aggregates: counts, commits, whether any was not clean
    (and which files, and whether each one's content as run is the committed one now), total wall and CPU time."""
    commits = sorted({r["provenance"].get("git_commit") or "?" for r in runs})
    dirty = sorted({f for r in runs for f in r["provenance"].get("dirty_files", {})})
    head = _git("rev-parse", "HEAD")
    return {
        "runs": len(runs),
        "commits": commits,
        "all_clean": all(r["provenance"].get("git_clean") for r in runs),
        "dirty_files": dirty,
        "dirty_files_as_run_equal_HEAD": dirty_files_committed_since(runs),
        "HEAD": head.strip() if head else None,
        "wall_seconds": round(sum(r["provenance"].get("wall_seconds") or 0 for r in runs), 1),
        "cpu_seconds": round(sum(r["provenance"].get("cpu_seconds") or 0 for r in runs), 1),
        "devices": sorted({r["provenance"].get("device", "?") for r in runs}),
    }


# ---------------------------------------------------------------------------------------------- command line
#
# Every run-store runner has the same command-line flow: ``--allow-long`` (the long-run guard,
# :func:`mamba_recall.longrun.allow_long_runs`), ``--store`` (the folder, default :data:`RUNS_DIR`), then either
# run the missing jobs (``--jobs`` processes; the measured estimate unless ``--no-estimate``, checked against the
# hour of :func:`mamba_recall.longrun.check_estimate`) or, with ``--aggregate-only``, count the finished ones;
# then write the bundle from what is finished (``--smoke``: the preset's smoke-capped grid). A runner with a second
# grid made from the first one's runs passes it as a :class:`GridStage`; a command's bundles share one provenance.

#: the run-store options, in the order most runners list them (``dest`` names)
GRID_OPTIONS = ("jobs", "smoke", "allow_long", "aggregate_only", "no_estimate", "store")
_GRID_HELP = {
    "jobs": "parallel processes, one torch thread each",
    "allow_long": "start even if the estimate is over an hour",
    "aggregate_only": "write the bundle from the finished jobs",
    "no_estimate": "skip the step-time measurement",
    "store": f"run store (default {RUNS_DIR})",
}


def add_grid_args(parser: argparse.ArgumentParser, order: Iterable[str] = GRID_OPTIONS, **helps: str | None) -> None:
    """Add the run-store options ``--jobs`` (int, 1), ``--smoke``, ``--allow-long``, ``--aggregate-only``,
    ``--no-estimate`` (flags) and ``--store`` (folder, None) to ``parser`` in ``order`` (names as in
    :data:`GRID_OPTIONS`); ``helps[name]`` overrides an option's help text (None: none)."""
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
            parser.add_argument(flag, type=int, default=1, help=help_)
        elif name == "store":
            parser.add_argument(flag, default=None, help=help_)
        else:
            parser.add_argument(flag, action="store_true", help=help_)


def log_stderr(message: str) -> None:
    """The log of a runner's aggregation (stderr, flushed; stdout keeps the grid's progress)."""
    print(message, file=sys.stderr, flush=True)


def _log_stdout(message: str) -> None:
    print(message, flush=True)


def grid_store(args, default: Path | None = None) -> Path | None:
    """Apply ``--allow-long`` to this process and return the ``--store`` folder (``default`` when not given; None
    means :data:`RUNS_DIR`)."""
    if args.allow_long:
        allow_long_runs(True)
    return Path(args.store) if args.store else default


def run_missing(runner: str, jobs: list[dict], args, *, store: Path | None, estimate, what: str) -> list[dict]:
    """:func:`run_grid` of ``jobs`` with ``--jobs`` processes, the ``estimate`` unless ``--no-estimate``, and the
    long-run guard naming ``what`` (e.g. ``"ch2.trained_dn at preset cpu-hours"``); the log on stdout."""
    return run_grid(
        runner,
        jobs,
        n_jobs=args.jobs,
        store=store,
        estimate=None if args.no_estimate else estimate,
        check_long=lambda s: check_estimate(s, what, "cpu"),
        log=_log_stdout,
    )


def run_or_count(runner: str, jobs: list[dict], args, *, store: Path | None, estimate, what: str) -> None:
    """``--aggregate-only``: print how many of ``jobs`` are finished and left; else :func:`run_missing`."""
    if args.aggregate_only:
        done, left = pending(jobs, store)
        print(f"{len(jobs)} jobs: {len(done)} finished, {len(left)} left", flush=True)
    else:
        run_missing(runner, jobs, args, store=store, estimate=estimate, what=what)


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
):
    """The whole flow of a runner's parsed ``args`` (:func:`add_grid_args`): :func:`grid_store`,
    :func:`run_or_count`, then ``write(args.preset, store=…, smoke=args.smoke, log=log_stderr)`` (the bundle
    from the finished jobs), whose value it returns; then the same for each stage of ``then``, in order.
    ``jobs`` may be ``jobs(store)``.

    One provenance per command: everything runs inside :func:`mamba_recall.results.command_provenance`, so
    every bundle the command writes records the git state taken before it wrote any file (a second bundle
    does not say ``git_dirty`` because the first one rewrote a tracked file)."""
    from .results import command_provenance

    store = grid_store(args, default_store)
    stages = [GridStage(runner, jobs, write, estimate, what), *then]
    out = []
    with command_provenance():
        for stage in stages:
            todo = stage.jobs(store) if callable(stage.jobs) else stage.jobs
            run_or_count(stage.runner, todo, args, store=store, estimate=stage.estimate, what=stage.what)
            out.append(stage.write(args.preset, store=store, smoke=args.smoke, log=log_stderr))
    return out[0]


# ---------------------------------------------------------------------------------------------- demo / tests


def demo_job(config: dict, seed: int) -> dict:
    """A tiny fake experiment (the tests' and the README's example): sleeps ``config["sleep"]`` seconds and
    returns a number that depends on the config and the seed, its process and whether it may run long."""
    time.sleep(float(config["sleep"]))
    return {"value": config["x"] * 10 + seed, "pid": os.getpid(), "long_allowed": long_runs_allowed()}


def main(argv=None):
    ap = argparse.ArgumentParser(description="The run store's demo grid (a fake experiment that sleeps).")
    ap.add_argument("command", choices=["demo"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cells", type=int, default=2)
    ap.add_argument("--sleep", type=float, default=0.2)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--store", default=None)
    args = ap.parse_args(argv)
    jobs = [
        make_job("demo.sleep", {"x": x, "sleep": args.sleep}, s) for x in range(args.cells) for s in range(args.seeds)
    ]
    store = Path(args.store) if args.store else None
    recs = run_grid(
        "mamba_recall.runstore:demo_job",
        jobs,
        n_jobs=args.jobs,
        store=store,
        estimate=lambda left: (args.sleep * len(left), f"{args.sleep} s per job, as configured"),
        progress=False,
    )
    print(f"ran {len(recs)} jobs", flush=True)


if __name__ == "__main__":
    main()
