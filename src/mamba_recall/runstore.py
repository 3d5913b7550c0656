r"""The run store: every training run is a *job*, its result a small JSON file written the moment it ends.

A job is ``(experiment, config, seed)`` with ``config`` **fully resolved** (sizes, steps, optimiser recipe,
evaluation seed and schedule: nothing left to a default that could change later). Its key is
``joblib.hash`` of the three (dict keys sorted, so the key does not depend on the order of entries), and its
result lives at::

    results/runs/<experiment>/<key>.json
      {"schema": "mamba_recall.run", "schema_version": 2, "key", "experiment", "config", "seed", "runner",
       "result": {...}, "nonfinite": [{"path", "value"}], "sha256",
       "provenance": {"git_commit", "git_clean", "dirty_files", "device", "versions",
                      "created", "wall_seconds", "host_cpus"}}

``sha256`` covers the whole record (:func:`record_hash`), so a result edited by hand is refused when read
(:func:`check_record`: schema, version, fields and types too, each error naming the file and the fix). NaN and
infinities of a result are stored as ``null`` and listed in ``nonfinite`` (bare ``NaN`` is not JSON), and restored
when read. Version 1 files (the committed runs written before the hash) are read as they are.

Faults (tests/base/test_faults_store.py): the store is checked writable before any job; a result that still cannot be
written is kept under :data:`UNSAVED_DIR` and named; a runner that raises is recorded in ``<key>.failed`` and the
grid goes on, listing the failures and the command that retries them at the end (exit status 1); each job is
claimed (``<key>.claim``, a ``flock`` the kernel releases when its process dies) so two grids on one store, or the
workers of a killed one, never run a job twice; Ctrl-C prints one line and exits with status 130.

:func:`run_grid` runs the jobs whose file is missing and skips the others, so the same command resumes a
grid after an interruption (Ctrl-C, a killed session, another day or another machine: the files are
committed). Files are written atomically (a temporary file, then ``os.replace``), so an interrupted job
leaves nothing behind and is simply run again. Before starting, it prints how many jobs are finished and
left and an estimated time from a *measured* step time (the runner's ``estimate``); while running, a tqdm
bar with an ETA. ``n_jobs > 1`` runs jobs in separate processes (``joblib.Parallel``, the loky backend),
each with one torch thread; ``n_jobs=1`` runs them in this process, also with one thread.

Machinery (see the appendix "Engineering notes", "The run store"): ``joblib.hash`` keys the jobs and ``joblib.Parallel`` runs them; the
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
import fcntl
import hashlib
import importlib
import json
import math
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import joblib
from scipy.stats import t as _t

from .longrun import allow_long_runs, check_estimate, long_runs_allowed
from .longrun import format_seconds as _fmt
from . import provenance as _prov
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
#: version 2 adds ``sha256`` (over the whole record) and ``nonfinite``; version 1 files (the committed runs written
#: before them) are read as they are, without a hash to check
SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (1, 2)
FAILURE_SCHEMA = "mamba_recall.run_failure"
RUNS_DIR = RESULTS_DIR / "runs"
#: where a finished result goes when its run file cannot be written (the store turned read-only, the disk filled)
UNSAVED_DIR = Path(tempfile.gettempdir()) / "mamba_recall_unsaved"


class RunFileError(ValueError):
    """A run file that cannot be trusted (not JSON, edited by hand, a newer schema, a missing field): the message
    names the file and the fix."""


class GridExit(SystemExit):
    """Ends a grid command with a message and an exit status, without a Python traceback (a ``SystemExit``: a
    command's ``main`` need not catch it). ``message`` is what was wrong and what to do."""

    exit_status = 1

    def __init__(self, message: str):
        super().__init__(message if self.exit_status == 1 else self.exit_status)
        self.message = message

    def __str__(self) -> str:
        return self.message


class StoreNotWritable(GridExit):
    """The run store cannot be written: found before any job starts."""


class JobsFailed(GridExit):
    """Some jobs raised (or their result could not be saved in the store); the others ran. ``failures``: one dict
    per job (``key``, ``config``, ``seed``, ``error``, and ``file`` or ``saved_at``)."""

    def __init__(self, message: str, failures: list[dict]):
        super().__init__(message)
        self.failures = failures


class GridInterrupted(GridExit):
    """Ctrl-C (SIGINT) or SIGTERM: the one-line message is printed, exit status 130."""

    exit_status = 130


class BundleNotReplaced(GridExit):
    """A complete bundle would have been replaced by one aggregating fewer jobs."""


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
    bad = _nonfinite_paths(job["config"])
    if bad:
        raise ValueError(
            f"job config of {experiment} has a NaN or infinite value at {bad[0]['path']}; a config must be finite "
            "(give the setting as a number or a string)."
        )
    job["key"] = job_key(job)
    return job


def job_key(job: dict) -> str:
    """``joblib.hash`` (md5 of the pickled, key-sorted dict) of (experiment, config, seed)."""
    return joblib.hash({"experiment": job["experiment"], "config": _plain(job["config"]), "seed": job["seed"]})


def job_path(job: dict, store: Path | None = None) -> Path:
    return Path(store or RUNS_DIR) / job["experiment"] / f"{job['key']}.json"


def failure_path(job: dict, store: Path | None = None) -> Path:
    """``<key>.failed`` beside the job's run file: the record of its last failure (not a ``.json``, so never
    read as a run)."""
    return job_path(job, store).with_suffix(".failed")


def claim_path(job: dict, store: Path | None = None) -> Path:
    """``<key>.claim`` beside the job's run file: locked by the process running the job (:func:`_claim`)."""
    return job_path(job, store).with_suffix(".claim")


# -- the record: hash, non-finite numbers, validation


def record_hash(record: dict) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of ``record`` without its ``sha256`` field: any edit of
    a run file (its result, config, seed, provenance) changes it."""
    body = {k: v for k, v in record.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _nonfinite_paths(obj, path=()) -> list[dict]:
    """``[{"path": [...], "value": "nan" | "inf" | "-inf"}]``: where ``obj`` (plain JSON form) holds a NaN or an
    infinity."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return [{"path": list(path), "value": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _nonfinite_paths(v, (*path, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _nonfinite_paths(v, (*path, i))]
    return []


def _set_path(obj, path: list, value):
    for step in path[:-1]:
        obj = obj[step]
    obj[path[-1]] = value


def _encode_result(result: dict) -> tuple[dict, list[dict]]:
    """``result`` with every NaN and infinity replaced by ``null`` (JSON has no NaN; Python's bare ``NaN`` is not
    JSON), and the list of where they were (the record's ``nonfinite``), so that reading restores them."""
    bad = _nonfinite_paths(result)
    for entry in bad:
        _set_path(result, entry["path"], None)
    return result, bad


def _fix(path: Path) -> str:
    return f"delete {path} and run the same grid command again (it runs only the missing jobs)"


_FIELDS = {
    "schema": str,
    "schema_version": int,
    "key": str,
    "experiment": str,
    "config": dict,
    "seed": int,
    "runner": str,
    "result": dict,
    "provenance": dict,
}
_FIELDS_V2 = {"sha256": str, "nonfinite": list}


def check_record(rec, path: Path, key: str | None = None) -> dict:
    """The run read from ``path`` (its JSON ``rec``), checked: a dict of schema :data:`SCHEMA`, a version this
    library reads (a newer one: update mamba_recall), every field present with its type, the key matching the
    content and the file name (and ``key`` when given), and (version 2) the ``sha256`` over the whole record, so a
    result edited by hand is refused. NaN and infinities stored as ``null`` (``nonfinite``) are restored. Raises
    :class:`RunFileError` naming the file and the fix."""
    if not isinstance(rec, dict):
        raise RunFileError(f"run file {path} holds a JSON {type(rec).__name__}, not a run record; {_fix(path)}.")
    if rec.get("schema") != SCHEMA:
        raise RunFileError(f"run file {path} has schema {rec.get('schema')!r}, not {SCHEMA!r}; {_fix(path)}.")
    version = rec.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise RunFileError(
            f"run file {path} has schema_version {version}: written by a newer mamba_recall (this one reads "
            f"versions {', '.join(map(str, READABLE_SCHEMA_VERSIONS))}); update mamba_recall (git pull, then "
            "pip install -e .) and run the command again."
        )
    if version not in READABLE_SCHEMA_VERSIONS or isinstance(version, bool):
        raise RunFileError(
            f"run file {path} has schema_version {version!r}, which no mamba_recall wrote; {_fix(path)}."
        )
    fields = dict(_FIELDS, **(_FIELDS_V2 if version >= 2 else {}))
    for name, kind in fields.items():
        if name not in rec:
            raise RunFileError(f"run file {path} lacks the field {name!r}; {_fix(path)}.")
        value = rec[name]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise RunFileError(
                f"run file {path}: field {name!r} is a {type(value).__name__}, not a {kind.__name__}; {_fix(path)}."
            )
    if job_key(rec) != rec["key"] or Path(path).stem != rec["key"] or (key is not None and rec["key"] != key):
        raise RunFileError(f"run file {path} does not match its key (edited by hand?); {_fix(path)}.")
    if version >= 2:
        if record_hash(rec) != rec["sha256"]:
            raise RunFileError(
                f"run file {path} does not match its sha256: edited after it was written (a result changed by "
                f"hand is not a run); {_fix(path)}."
            )
        try:
            for entry in rec["nonfinite"]:
                _set_path(rec["result"], entry["path"], float(entry["value"]))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise RunFileError(f"run file {path} has a malformed 'nonfinite' list ({exc}); {_fix(path)}.") from exc
    return rec


def read_run(path: Path, key: str | None = None) -> dict:
    """The checked run at ``path`` (:func:`check_record`); a file that is not JSON raises :class:`RunFileError`."""
    try:
        rec = json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunFileError(f"corrupt run file {path} ({exc}); {_fix(path)}.") from exc
    return check_record(rec, path, key)


def _scan(jobs: Iterable[dict], store: Path | None = None) -> tuple[list[dict], list[dict], dict[str, str]]:
    """``(finished, left, damaged)``; ``damaged``: key → why its file is not a valid run (it is run again and
    replaced). A file written by a newer mamba_recall is not replaced: it raises."""
    done, left, damaged = [], [], {}
    for job in jobs:
        path = job_path(job, store)
        if not path.is_file():
            left.append(job)
            continue
        try:
            read_run(path, job["key"])
        except RunFileError as exc:
            if "newer mamba_recall" in str(exc):
                raise
            damaged[job["key"]] = str(exc)
            left.append(job)
            continue
        done.append(job)
    return done, left, damaged


def pending(jobs: Iterable[dict], store: Path | None = None) -> tuple[list[dict], list[dict]]:
    """``(finished, left)``: the jobs whose result file exists and is a valid run of that job
    (:func:`check_record`), the others. A run file written by a newer mamba_recall raises :class:`RunFileError`."""
    done, left, _ = _scan(jobs, store)
    return done, left


def load_runs(experiment: str, store: Path | None = None) -> list[dict]:
    """Every stored run of ``experiment``, each checked (:func:`check_record`); a file that fails raises
    :class:`RunFileError` naming it and the fix."""
    folder = Path(store or RUNS_DIR) / experiment
    return [read_run(path) for path in sorted(folder.glob("*.json"))]


def finished_runs(jobs: list[dict], store: Path | None = None) -> list[dict]:
    """The stored runs of exactly these ``jobs`` (one experiment), for aggregating one preset's grid; none for no
    jobs (a stage whose jobs depend on runs not finished yet)."""
    if not jobs:
        return []
    experiments = {j["experiment"] for j in jobs}
    if len(experiments) != 1:
        raise ValueError(f"finished_runs takes the jobs of one experiment, got {sorted(experiments)}.")
    keys = {j["key"] for j in jobs}
    return [r for r in load_runs(experiments.pop(), store) if r["key"] in keys]


# ---------------------------------------------------------------------------------------------- provenance

_PROCESS_PROVENANCE: dict | None = None


def process_provenance(refresh: bool = False) -> dict:
    """Commit, the imported library files that differ from it (with sha256), versions, device: taken once per
    process (see the module docstring) unless ``refresh``; measured by :mod:`mamba_recall.provenance`."""
    global _PROCESS_PROVENANCE
    if _PROCESS_PROVENANCE is not None and not refresh:
        return _PROCESS_PROVENANCE
    state = _prov.git_state()
    code = state["code"]
    dirty = {_prov.relative(p): _prov.sha256(p) for p in _prov.uncommitted_imported(code or "") if p.suffix == ".py"}
    _PROCESS_PROVENANCE = {
        "git_commit": state["commit"],
        "git_clean": (not dirty) if code is not None else None,
        "dirty_files": dirty,
        "versions": _prov.versions(extra=("joblib",)),
        "platform": platform.platform(),
        "host_cpus": os.cpu_count(),
    }
    return _PROCESS_PROVENANCE


# ---------------------------------------------------------------------------------------------- running


def _resolve(runner: str) -> Callable:
    module, _, func = runner.partition(":")
    if not func:
        raise ValueError(f"runner {runner!r} must be 'package.module:function'.")
    return getattr(importlib.import_module(module), func)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def check_writable(folder: Path) -> None:
    """Create ``folder`` and a probe file in it (then remove it), or raise :class:`StoreNotWritable` naming the
    folder and the fix: run before any job starts, so a read-only store is not found after hours of training.
    (A real write, not ``os.access``: that says yes to root on a read-only folder.)"""
    folder = Path(folder)
    probe = folder / f".write-probe.{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise StoreNotWritable(
            f"run store folder {folder} is not writable ({exc.strerror or exc}); no job was started. Make it "
            f"writable (e.g. chmod -R u+w {folder}) or pass --store <a writable folder>, then run the same command."
        ) from exc


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed but not yet reaped, counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _claim(path: Path) -> tuple[int | None, dict | None]:
    """Claim a job: ``(fd, None)`` when this process now holds it, ``(None, holder)`` when another live process
    does (``holder``: its ``pid``, ``host``, ``since``, as it wrote them).

    The claim is an exclusive ``flock`` on ``<key>.claim``, held while the job runs: the kernel releases it when the
    holder ends in any way (``kill -9`` included), so a claim left by a dead process is taken over, and a live
    one is never broken on a guess. The file names the holder (pid, host) for the message of whoever is refused;
    :func:`_release` deletes it. A lock taken on a file that was meanwhile deleted is retried on the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
            except ValueError:
                holder = {}
            os.close(fd)
            return None, holder
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "since": _now()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(me).encode(), 0)
    return fd, None


def _release(fd: int, path: Path) -> None:
    try:
        path.unlink()
    except OSError:  # gone, or its folder was made unwritable: the lock itself ends with the close
        pass
    os.close(fd)


def claimed_by(job: dict, store: Path | None = None) -> dict | None:
    """The live process running ``job`` now (``{"pid", "host", "since"}``), or None."""
    path = claim_path(job, store)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # no claim (or no folder to hold one: the writable check names that)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            return json.loads(os.pread(fd, 4096, 0) or b"{}") or {"pid": "?", "host": "?"}
        except ValueError:
            return {"pid": "?", "host": "?"}
    finally:
        os.close(fd)
    return None


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _describe_job(job: dict) -> str:
    return f"job {job['key']} ({job['experiment']}, seed {job['seed']}, config {json.dumps(job['config'], sort_keys=True)})"


def _save_unsaved(path: Path, text: str, exc: OSError) -> dict:
    """A finished result whose run file could not be written: kept under :data:`UNSAVED_DIR` (else printed whole
    on stderr), never dropped."""
    fallback = UNSAVED_DIR / path.parent.name / path.name
    try:
        fallback.parent.mkdir(parents=True, exist_ok=True)
        fallback.write_text(text)
        where = str(fallback)
    except OSError:
        print(f"the record of {path} (could be saved nowhere):\n{text}", file=sys.stderr, flush=True)
        where = "stderr (above)"
    print(
        f"could not write {path} ({exc.strerror or exc}); the finished result is kept at {where}: copy it to "
        f"{path} once the store is writable (nothing needs to run again).",
        file=sys.stderr,
        flush=True,
    )
    return {"file": str(path), "saved_at": where, "error": f"{type(exc).__name__}: {exc}"}


def _run_one(
    runner: str,
    job: dict,
    store: str,
    threads: int = 1,
    allow_long: bool | None = None,
    parent: int | None = None,
    git: dict | None = None,
) -> tuple[str, dict | None]:
    """Run one job (in this process or a worker) and write its file. Returns ``(status, detail)``:

    * ``("done", record)``: ran, and its run file is written;
    * ``("failed", failure)``: the runner raised; the failure (key, config, seed, error, traceback) is written to
      :func:`failure_path` and returned;
    * ``("unsaved", where)``: ran, but its file could not be written; the result is kept elsewhere (see
      :func:`_save_unsaved`);
    * ``("claimed", holder)``: another live process runs it (:func:`_claim`); ``("finished", None)``: its file
      appeared meanwhile; ``("orphaned", None)``: the grid's process (``parent``) is gone, so a worker left behind
      by a killed grid starts nothing more.

    ``allow_long``: the parent's long-run permission, set in a worker process (a fresh process would otherwise
    refuse a job that the parent's ``--allow-long`` allowed). In a worker (``parent`` given) Ctrl-C is ignored: the
    grid's process handles it (one line, not a traceback per worker)."""
    if parent is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if not _pid_alive(parent):
            return "orphaned", None
    if allow_long is not None:
        allow_long_runs(allow_long)
    store = Path(store)
    path = job_path(job, store)
    fd, holder = _claim(claim_path(job, store))
    if fd is None:
        return "claimed", holder
    try:
        if path.is_file():
            try:
                read_run(path, job["key"])
                return "finished", None
            except RunFileError as exc:
                if "newer mamba_recall" in str(exc):
                    raise
        return _run_claimed(runner, job, store, threads, git)
    finally:
        _release(fd, claim_path(job, store))


def _compute(runner: str, job: dict, threads: int, git: dict | None = None) -> tuple[str, dict]:
    """Run one job's function in this process and build what the store keeps, writing nothing (a Ray worker need
    not share the driver's disk): ``("done", record)`` (the complete record with its ``sha256``, NaN listed in
    ``nonfinite``) or ``("failed", failure)`` (key, config, seed, error, traceback, pid, host). ``git``: the grid
    command's git state (:func:`mamba_recall.results.command_git_state`), which the checkpoints the job writes
    record (taken here, in a worker, it would read the files earlier jobs of the grid have just written)."""
    from .results import command_provenance

    try:
        fn = _resolve(runner)
        torch = sys.modules.get("torch")
        if torch is not None and threads:
            torch.set_num_threads(threads)
        prov = dict(process_provenance())
        start = time.perf_counter()
        cpu0 = time.process_time()
        with command_provenance(git):
            result = fn(job["config"], job["seed"])
        wall = time.perf_counter() - start
        if not isinstance(result, dict):
            raise TypeError(f"runner {runner} returned a {type(result).__name__}, not a dict of results.")
    except Exception as exc:  # noqa: BLE001 - recorded with its traceback, reported at the end of the grid
        return "failed", _failure(runner, job, f"{type(exc).__name__}: {exc}", traceback.format_exc())
    prov.update(
        device=_prov.device_description(),
        wall_seconds=round(wall, 2),
        cpu_seconds=round(time.process_time() - cpu0, 2),
        created=_now(),
    )
    clean, nonfinite = _encode_result(_plain(result))
    record = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "key": job["key"],
        "experiment": job["experiment"],
        "config": job["config"],
        "seed": job["seed"],
        "runner": runner,
        "result": clean,
        "nonfinite": nonfinite,
        "provenance": _plain(prov),
    }
    record["sha256"] = record_hash(record)
    return "done", record


def _failure(runner: str, job: dict, error: str, trace: str) -> dict:
    return {
        "schema": FAILURE_SCHEMA,
        "key": job["key"],
        "experiment": job["experiment"],
        "config": job["config"],
        "seed": job["seed"],
        "runner": runner,
        "error": error,
        "traceback": trace,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "created": _now(),
    }


def _store_outcome(status: str, detail: dict, job: dict, store: Path) -> tuple[str, dict]:
    """Write what :func:`_compute` returned (in the process that holds the job's claim): a record atomically under
    its key (a stale failure file removed), or the failure to :func:`failure_path`. Returns ``(status, detail)``
    as :func:`_run_one` does."""
    if status == "failed":
        fpath = failure_path(job, store)
        try:
            _write_atomic(fpath, json.dumps(detail, indent=1, sort_keys=True, default=str) + "\n")
            detail["file"] = str(fpath)
        except OSError:
            detail["file"] = None
        return "failed", detail
    path = job_path(job, store)
    text = json.dumps(detail, indent=1, sort_keys=True, allow_nan=False) + "\n"
    try:
        _write_atomic(path, text)
    except OSError as exc:
        return "unsaved", dict(_save_unsaved(path, text, exc), key=job["key"], config=job["config"], seed=job["seed"])
    stale = failure_path(job, store)
    if stale.exists():
        try:
            stale.unlink()
        except OSError:
            pass
    return "done", check_record(json.loads(text), path)


def _command_git() -> dict | None:
    """The grid command's git state, handed to the jobs (:func:`_compute`)."""
    from .results import command_git_state

    return command_git_state()


def _run_claimed(runner: str, job: dict, store: Path, threads: int, git: dict | None = None) -> tuple[str, dict | None]:
    return _store_outcome(*_compute(runner, job, threads, git), job, store)


def this_command() -> str:
    """The command line of this process, as typed (``python -m <module> args``): the command that resumes or
    retries a grid."""
    import shlex

    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    head = ["python", "-m", spec.name] if spec is not None and spec.name else ["python", sys.argv[0]]
    if head[-1].endswith(".__main__"):
        head[-1] = head[-1][: -len(".__main__")]
    return " ".join(shlex.quote(a) for a in head + sys.argv[1:])


def _failure_message(failures: list[dict], total: int) -> str:
    lines = [f"{len(failures)} of {total} jobs did not finish in the store:"]
    for f in failures:
        where = (
            f"result kept at {f['saved_at']} (copy it to {f['file']})"
            if "saved_at" in f
            else f"{f['error']}; traceback in {f.get('file') or 'the log above'}"
        )
        lines.append(f"  job {f['key']} (seed {f['seed']}, config {json.dumps(f['config'], sort_keys=True)}): {where}")
    lines.append(f"retry them with the same command (finished jobs are skipped): {this_command()}")
    return "\n".join(lines)


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
    engine: str = "local",
    address: str | None = None,
    gpus_per_job: float = 0.0,
) -> list[dict]:
    """Run every job of ``jobs`` whose result file is missing; return the records written now.

    ``runner``: ``"package.module:function"``, called as ``function(config, seed) -> dict`` (JSON-able).
    ``estimate(jobs_left) -> (seconds for one process, how it was measured)`` is printed before anything
    starts (divided by ``n_jobs`` for parallel processes, an optimistic bound on a busy machine);
    ``check_long(seconds)`` may refuse to start (the long-run guard). ``n_jobs > 1``: separate processes.

    ``engine``: ``"local"`` (this process, or ``n_jobs`` joblib processes) or ``"ray"`` (:func:`_run_on_ray`: each
    job a Ray task with one CPU and ``gpus_per_job`` GPUs, fractional where small models share a card; on a local
    Ray instance of ``n_jobs`` CPUs, or on the cluster at ``address``). The store's semantics are the same with
    both: the driver claims each job, the worker computes its record and sends it back, the driver writes it.

    Faults (nothing lost, nothing silently wrong):

    * the store is checked writable before any job starts (:class:`StoreNotWritable`); a result whose file still
      cannot be written is kept elsewhere and named (:func:`_save_unsaved`);
    * a job whose runner raises is recorded (:func:`failure_path`) and the grid goes on; at the end the failures
      are listed with the command that retries them, as :class:`JobsFailed` (exit status 1);
    * a job claimed by another live process (a second grid on this store, or a worker of a killed one) is skipped
      and named; a run file damaged or edited by hand is named and run again;
    * Ctrl-C prints one line, ``interrupted: N of M jobs finished; the same command resumes``, and ends with
      :class:`GridInterrupted` (exit status 130).
    """
    store = Path(store or RUNS_DIR)
    keys = [j["key"] for j in jobs]
    if len(set(keys)) != len(keys):
        raise ValueError("the grid lists the same job twice (same experiment, config and seed).")
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}: use one of {', '.join(ENGINES)}.")
    if not (isinstance(gpus_per_job, (int, float)) and 0 <= gpus_per_job) or (gpus_per_job and engine != "ray"):
        raise ValueError(
            f"gpus_per_job={gpus_per_job!r}: a number >= 0, and only with engine='ray' (Ray assigns the devices)."
        )
    ray_opts = {"address": address, "gpus_per_job": float(gpus_per_job)} if engine == "ray" else None
    try:
        return _run_grid(runner, jobs, n_jobs, store, estimate, log, progress, check_long, ray_opts)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not interrupt the count
        try:
            done = len(_scan(jobs, store)[0])
        except Exception:  # noqa: BLE001 - the count is a courtesy; the line is printed anyway
            done = "?"
        message = f"interrupted: {done} of {len(jobs)} jobs finished; the same command resumes"
        print(message, file=sys.stderr, flush=True)
        raise GridInterrupted(message) from None
    finally:
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _run_grid(runner, jobs, n_jobs, store, estimate, log, progress, check_long, ray_opts=None) -> list[dict]:
    done, left, damaged = _scan(jobs, store)
    busy = {j["key"]: h for j in left if (h := claimed_by(j, store)) is not None}
    log(
        f"{len(jobs)} jobs: {len(done)} finished (skipped), "
        + (f"{len(busy)} being run by another process (skipped), " if busy else "")
        + f"{len(left) - len(busy)} left; store {store}"
    )
    for key, why in damaged.items():
        log(f"{why.split(';')[0]}: it is run again and replaced")
    skipped = [(j, busy[j["key"]]) for j in left if j["key"] in busy]
    left = [j for j in left if j["key"] not in busy]
    records, failures = [], []
    if left:
        for folder in sorted({job_path(j, store).parent for j in left}):
            check_writable(folder)
        if estimate is not None:
            seconds, basis = estimate(left)
            per = seconds / max(1, min(n_jobs, len(left)))
            log(f"estimated {_fmt(per)} for {len(left)} jobs with --jobs {n_jobs} ({basis})")
            if check_long is not None:
                check_long(per)
        from tqdm.auto import tqdm

        bar = tqdm(total=len(left), desc=left[0]["experiment"], unit="job", disable=not progress, smoothing=0.1)
        by_key = {j["key"]: j for j in left}

        def take(job, status, detail):
            if status == "done":
                records.append(detail)
            elif status in ("failed", "unsaved"):
                failures.append(detail)
                if status == "failed":
                    log(f"{_describe_job(job)} failed: {detail['error']} (traceback in {detail['file']})")
            elif status == "claimed":
                skipped.append((job, detail))
            bar.update(1)

        try:
            if ray_opts is not None:
                _run_on_ray(runner, left, store, take, n_jobs, log=log, **ray_opts)
            elif n_jobs == 1:
                for job in left:
                    take(job, *_run_one(runner, job, str(store)))
            else:
                from joblib import Parallel, delayed

                par = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered", inner_max_num_threads=1)
                allowed, me, git = long_runs_allowed(), os.getpid(), _command_git()

                def one(job):
                    return job["key"], _run_one(runner, job, str(store), 1, allowed, me, git)

                for key, (status, detail) in par(delayed(one)(job) for job in left):
                    take(by_key[key], status, detail)
        finally:
            bar.close()
    for job, holder in skipped:
        log(
            f"{_describe_job(job)} skipped: being run by pid {holder.get('pid', '?')} on {holder.get('host', '?')} "
            f"since {holder.get('since', '?')}; run the same command after it ends to include it"
        )
    if failures:
        raise JobsFailed(_failure_message(failures, len(jobs)), failures)
    return records


# ---------------------------------------------------------------------------------------------- Ray engine
#: the grid engines: local processes (joblib, nothing to install) or Ray tasks (``pip install -e '.[cluster]'``)
ENGINES = ("local", "ray")


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError(
            "engine 'ray' needs Ray: pip install -e '.[cluster]' (or pip install 'mamba-recall[cluster]'); "
            "or run the grid with --engine local."
        ) from None
    return ray


def _ray_task(runner: str, job: dict, allowed: bool, git: dict | None = None) -> tuple[str, dict]:
    """A Ray task: one job computed in a worker (one torch thread, the driver's long-run permission), its record
    or failure sent back to the driver, which writes it (:func:`_store_outcome`)."""
    allow_long_runs(allowed)
    return _compute(runner, job, 1, git)


def _run_on_ray(runner, left, store: Path, take, n_jobs: int, *, log, address=None, gpus_per_job=0.0) -> None:
    """Run the jobs ``left`` as Ray tasks and hand each outcome to ``take`` as it arrives.

    The driver claims every job first (:func:`_claim`: a second grid on the store skips them, a job claimed
    elsewhere is skipped here), submits one task per job (``num_cpus=1``, ``num_gpus=gpus_per_job``: Ray places
    them and sets ``CUDA_VISIBLE_DEVICES``; ``max_retries=3``: a job whose worker dies, e.g. a preempted node, is
    run again), and writes each record itself, so the workers need not share its disk. A job that raises comes
    back as its failure (recorded, the grid goes on); one whose task is lost beyond its retries is recorded the
    same way. Ctrl-C cancels the tasks still running and releases the claims; the same command resumes. Ray is
    started here (``n_jobs`` CPUs, or joined at ``address``, e.g. ``auto`` or ``ray://head:10001``) and stopped at
    the end if this function started it."""
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        kw = {"address": address} if address else {"num_cpus": n_jobs}
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False, **kw)
        log(f"ray: {'joined ' + address if address else f'a local instance with {n_jobs} CPUs'}")
    task = ray.remote(num_cpus=1, num_gpus=gpus_per_job, max_retries=3)(_ray_task)
    claims, refs = {}, {}
    allowed = long_runs_allowed()
    git = _command_git()
    try:
        for job in left:
            fd, holder = _claim(claim_path(job, store))
            if fd is None:
                take(job, "claimed", holder)
                continue
            if job_path(job, store).is_file():  # finished by another grid since the scan
                _release(fd, claim_path(job, store))
                take(job, "finished", None)
                continue
            claims[job["key"]] = (fd, job)
            refs[task.remote(runner, job, allowed, git)] = job
        waiting = list(refs)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            job = refs[ready[0]]
            try:
                status, detail = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # the task was lost beyond its retries (not a raise: see _compute)
                status, detail = "failed", _failure(runner, job, f"{type(exc).__name__}: {exc}", str(exc))
            outcome = _store_outcome(status, detail, job, store)
            fd, _ = claims.pop(job["key"])
            _release(fd, claim_path(job, store))
            take(job, *outcome)
    except KeyboardInterrupt:
        cancelled = [ref for ref, job in refs.items() if job["key"] in claims]
        for ref in cancelled:
            ray.cancel(ref, force=True)
        if (
            cancelled
        ):  # ray.cancel only asks: wait (briefly) until each task has stopped, so none starts after we return
            ray.wait(cancelled, num_returns=len(cancelled), timeout=30)
        raise
    finally:
        for fd, job in claims.values():
            _release(fd, claim_path(job, store))
        if started:
            ray.shutdown()


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
    this (2.1·10⁻³ beyond df = 30), so their bounds are within that times s/√n (tests/analysis/test_stats.py).
    """
    if df < 1:
        return float("nan")
    return float(_t.ppf(0.975, df))


def mean_interval(values: list[float]) -> dict:
    """``{"n", "n_nan", "mean", "std", "ci_low", "ci_high"}`` (see :data:`INTERVAL_METHOD`). A NaN on any seed
    makes the mean, the std and the interval NaN (``n_nan`` says how many seeds were NaN): a failed seed is never
    averaged away."""
    vals = [float(v) for v in values]
    n = len(vals)
    n_nan = sum(math.isnan(v) for v in vals)
    nan = float("nan")
    if n == 0:
        return dict(n=0, n_nan=0, mean=nan, std=nan, ci_low=nan, ci_high=nan)
    if n_nan:
        return dict(n=n, n_nan=n_nan, mean=nan, std=nan, ci_low=nan, ci_high=nan)
    mean = sum(vals) / n
    if n == 1:
        return dict(n=1, n_nan=0, mean=mean, std=nan, ci_low=nan, ci_high=nan)
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    half = t_quantile_975(n - 1) * std / math.sqrt(n)
    return dict(n=n, n_nan=0, mean=mean, std=std, ci_low=mean - half, ci_high=mean + half)


def aggregate(runs: list[dict], by: list[str], metrics: list[str]):
    """One row per cell (the values of config keys ``by``): for each metric (a key of ``result``) the mean,
    95 % interval, min, max and the per-seed values (``"<metric>_per_seed"``, ordered by seed), plus the
    seeds and the keys of the runs. Runs of one cell must agree on every other config entry.

    A NaN on any seed shows: that cell's mean, interval, min and max are NaN (Python's ``min``/``max`` would pass
    over it or not depending on its place), and a ``"<metric>_n_nan"`` column counts the NaN seeds of each cell
    (present when any cell has one). A missing or non-numeric value raises, naming the run."""
    import pandas as pd

    cells: dict[tuple, list[dict]] = {}
    for rec in runs:
        cell = tuple(rec["config"][k] for k in by)
        cells.setdefault(cell, []).append(rec)
    rows, nan_metrics = [], set()
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
            vals = []
            for r in recs:
                v = r["result"].get(m)
                if not isinstance(v, (int, float)):
                    raise ValueError(
                        f"run {r['key']} (seed {r['seed']}) has {m} = {v!r}, not a number; aggregate numeric "
                        "metrics only (a NaN is stored as NaN, never as null)."
                    )
                vals.append(v)
            st = mean_interval(vals)
            row.update(
                {
                    f"{m}_mean": st["mean"],
                    f"{m}_ci_low": st["ci_low"],
                    f"{m}_ci_high": st["ci_high"],
                    f"{m}_std": st["std"],
                    f"{m}_min": float("nan") if st["n_nan"] else min(vals),
                    f"{m}_max": float("nan") if st["n_nan"] else max(vals),
                    f"{m}_per_seed": " ".join(f"{v:.4f}" for v in vals),
                }
            )
            if st["n_nan"]:
                nan_metrics.add(m)
            row[f"{m}_n_nan"] = st["n_nan"]
        row["n_seeds"] = len(recs)
        row["wall_seconds"] = round(sum(r["provenance"].get("wall_seconds") or 0 for r in recs), 1)
        row["run_keys"] = " ".join(r["key"] for r in recs)
        rows.append(row)
    for row in rows:  # the NaN counts only of metrics with a NaN somewhere (other tables stay as they were)
        for m in metrics:
            if m not in nan_metrics:
                row.pop(f"{m}_n_nan")
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
    return runs, data


class GridStatus(dict):
    """The ``data`` dict :func:`finished_status` returns, remembering (as the attribute ``store``, not a key: it is
    not written into the bundle) the run store it was counted in, so that :func:`save_grid_bundle` writes the
    bundle of a scratch store beside that store (:func:`bundle_directory`)."""

    store: Path | None = None


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
    """Write a run-store bundle (:func:`mamba_recall.results.save_bundle`, device ``cpu``, wall time the runs'
    summed ``data["runs"]["wall_seconds"]``; ``data`` as :func:`finished_status` starts it) and log how many of
    the grid's jobs it aggregates.

    ``directory`` None: the results folder for the committed store, beside the store for a scratch one
    (:func:`bundle_directory` of the store ``data`` was counted in), so ``--store X`` never rewrites the
    committed bundles. A bundle that would replace a complete one (or one of more jobs of the same grid) by fewer
    finished jobs is refused with :class:`BundleNotReplaced`, naming both counts."""
    from . import results

    if directory is None:
        directory = bundle_directory(getattr(data, "store", None))
    target = Path(directory or results.RESULTS_DIR) / f"{name}.json"
    why = _replaces_evidence(target, data)
    if why:
        log(why)
        raise BundleNotReplaced(why)
    path = results.save_bundle(
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
    head = _prov.git("rev-parse", "HEAD")
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
    add_engine_args(parser)


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
        **engine_options(args),
    )


def engine_options(args) -> dict:
    """:func:`run_grid`'s engine keywords from parsed :func:`add_engine_args` options (defaults where absent)."""
    return {
        "engine": getattr(args, "engine", "local"),
        "address": getattr(args, "ray_address", None),
        "gpus_per_job": getattr(args, "gpus_per_job", 0.0),
    }


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

    A stage whose jobs fail (:class:`JobsFailed`) or whose bundle is refused (:class:`BundleNotReplaced`) does not
    stop the later stages; at the end the command exits with status 1 and repeats what went wrong (with the
    command that retries). Ctrl-C ends it at once (:class:`GridInterrupted`, status 130).

    One provenance per command: everything runs inside :func:`mamba_recall.results.command_provenance`, so
    every bundle the command writes records the git state taken before it wrote any file (a second bundle
    does not say ``git_dirty`` because the first one rewrote a tracked file)."""
    from .results import command_provenance

    store = grid_store(args, default_store)
    stages = [GridStage(runner, jobs, write, estimate, what), *then]
    out, problems = [], []
    with command_provenance():
        for stage in stages:
            todo = stage.jobs(store) if callable(stage.jobs) else stage.jobs
            try:
                run_or_count(stage.runner, todo, args, store=store, estimate=stage.estimate, what=stage.what)
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


# ---------------------------------------------------------------------------------------------- demo / tests


def demo_job(config: dict, seed: int) -> dict:
    """A tiny fake experiment (the tests' and the README's example): sleeps ``config["sleep"]`` seconds and
    returns a number that depends on the config and the seed, its process and whether it may run long.

    Optional entries, for the fault tests: ``log`` (a file: one line ``x seed pid`` is appended when the job
    starts, so a test can count how often each job ran), ``fail_seeds`` (these seeds raise after the sleep) and
    ``nan_seeds`` (these seeds return ``value`` NaN)."""
    if config.get("log"):
        with open(config["log"], "a") as f:
            f.write(f"{config['x']} {seed} {os.getpid()}\n")
    time.sleep(float(config["sleep"]))
    if seed in config.get("fail_seeds", ()):
        raise RuntimeError(f"demo failure: seed {seed} is in fail_seeds")
    value = float("nan") if seed in config.get("nan_seeds", ()) else config["x"] * 10 + seed
    return {"value": value, "pid": os.getpid(), "long_allowed": long_runs_allowed()}


def demo_jobs(seeds: int = 3, cells: int = 2, sleep: float = 0.2, fail_seeds=(), log: str | None = None) -> list[dict]:
    """The demo grid: ``cells`` × ``seeds`` jobs of :func:`demo_job` (optional entries only when given, so the
    keys of the plain grid do not change)."""
    extra = {}
    if fail_seeds:
        extra["fail_seeds"] = sorted(fail_seeds)
    if log:
        extra["log"] = str(log)
    return [make_job("demo.sleep", {"x": x, "sleep": sleep, **extra}, s) for x in range(cells) for s in range(seeds)]


def main(argv=None):
    ap = argparse.ArgumentParser(description="The run store's demo grid (a fake experiment that sleeps).")
    ap.add_argument("command", choices=["demo"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cells", type=int, default=2)
    ap.add_argument("--sleep", type=float, default=0.2)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--store", default=None)
    ap.add_argument("--fail-seed", type=int, action="append", default=[], help="this seed's jobs raise")
    ap.add_argument("--log", default=None, help="append 'x seed pid' to this file as each job starts")
    add_engine_args(ap)
    args = ap.parse_args(argv)
    jobs = demo_jobs(args.seeds, args.cells, args.sleep, args.fail_seed, args.log)
    store = Path(args.store) if args.store else None
    recs = run_grid(
        "mamba_recall.runstore:demo_job",
        jobs,
        n_jobs=args.jobs,
        store=store,
        estimate=lambda left: (args.sleep * len(left), f"{args.sleep} s per job, as configured"),
        progress=False,
        **engine_options(args),
    )
    print(f"ran {len(recs)} jobs", flush=True)


if __name__ == "__main__":
    main()
