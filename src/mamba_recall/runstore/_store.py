"""Writing into the run store: one job claimed (:func:`_claim`), computed with its provenance (:func:`_compute`)
and written atomically (:func:`_store_outcome`), or its failure recorded; a result that cannot be written is
kept elsewhere (:func:`_save_unsaved`).

Provenance and "clean": other people edit the working tree while a grid runs, so ``git status`` of the
whole tree says little about a run. A run records the commit ``HEAD`` and, as ``dirty_files``, the
library and runner files *this process imported* that differ from ``HEAD`` (modified or untracked), with
their sha256; ``git_clean`` is true when that list is empty. Both are taken once per process, right after
the runner is imported (the code in memory is the code on disk at that moment). The bundles of one command
(:func:`grid_main`) likewise share one git state, taken before the command writes any file.
"""

from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import importlib
import json
import os
import platform
import signal
import socket
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

from .. import provenance as _prov
from ..atomic import replace_file
from ..context import current, run_context
from ..determinism import cpu_fingerprint
from ._errors import RunFileError, StoreNotWritable, UnhashedRunFile
from ._config import JobConfig, config_record
from ._records import (
    FAILURE_SCHEMA,
    SCHEMA,
    SCHEMA_VERSION,
    _encode_result,
    _plain,
    check_record,
    json_result,
    claim_path,
    failure_path,
    job_config,
    job_path,
    output_gone,
    read_run,
    record_hash,
)

#: where a finished result goes when its run file cannot be written (the store turned read-only, the disk filled)
UNSAVED_DIR = Path(tempfile.gettempdir()) / "mamba_recall_unsaved"


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
    origin = state.get("origin") or _prov.code_origin()
    for path in _prov.outside_differences(origin):  # a package imported from outside the checkout that differs from it
        dirty[path] = _prov.sha256(Path(path))
    _PROCESS_PROVENANCE = {
        "git_commit": state["commit"],
        "git_clean": (not dirty) if code is not None else None,
        "dirty_files": dirty,
        "versions": _prov.versions(extra=("joblib",)),
        "platform": platform.platform(),
        "cpu": cpu_fingerprint(),  # which bits to expect (mamba_recall.determinism)
        "host_cpus": os.cpu_count(),
    }
    _PROCESS_PROVENANCE.update(_prov.naming_fields(state, origin))
    return _PROCESS_PROVENANCE


# ---------------------------------------------------------------------------------------------- running


def _resolve(runner: str) -> Callable:
    module, _, func = runner.partition(":")
    if not func:
        raise ValueError(f"runner {runner!r} must be 'package.module:function'.")
    return getattr(importlib.import_module(module), func)


#: the errors of a full disk (ENOSPC) or of a full quota (EDQUOT)
FULL_ERRNOS = tuple(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if e is not None)


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the quota) is full."""
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` at ``fd``'s position: every byte the store writes goes through here (the fault tests
    make it raise ENOSPC)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_atomic(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (:func:`mamba_recall.atomic.replace_file`: a full disk or a kill leaves
    the old file, or none, and no temporary file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, text.encode())


#: bytes the writable check writes (and fsyncs) in the store: a full disk refuses them, where an empty file passes
PROBE_BYTES = 4096


def full_fix(folder) -> str:
    """What to do about a full run store at ``folder``."""
    return (
        f"free space on its disk (df -h {folder}; e.g. delete _build/ or old checkpoints) or pass --store <a folder "
        "on another disk>, then run the same command (it runs only the missing jobs)"
    )


def check_writable(folder: Path) -> None:
    """Create ``folder`` and a probe file in it (:data:`PROBE_BYTES` written and fsync'd, then removed), or raise
    :class:`StoreNotWritable` naming the folder and the fix: run before any job starts, so a read-only or full store
    is not found after hours of training. (A real write, not ``os.access``: that says yes to root on a read-only
    folder; and not an empty one, which a full disk accepts.)"""
    folder = Path(folder)
    probe = folder / f".write-probe.{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
            probe.unlink()
    except OSError as exc:
        if disk_full(exc):
            raise StoreNotWritable(
                f"run store folder {folder} has no space left ({exc.strerror or exc}); no job was started. "
                f"{full_fix(folder)[0].upper()}{full_fix(folder)[1:]}."
            ) from exc
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
    try:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        _write_all(fd, json.dumps(me).encode())
    except OSError:  # a full disk: the caller names it (StoreFull); the lock ends with the close
        _release(fd, path)
        raise
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
    jobs: list[dict],
    store: str,
    threads: int = 1,
    allow_long: bool | None = None,
    parent: int | None = None,
    git: dict | None = None,
    members: bool = False,
) -> list[tuple[dict, str, dict | None]]:
    """Run one unit of work (in this process or a worker): one job, or with ``members`` the jobs of one config
    trained as one ensemble (:func:`_compute_unit`), and write their files. Returns ``(job, status, detail)`` for
    each job:

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
    grid's process handles it (one line, not a traceback per worker), and so is SIGTERM (the grid's process stops its
    workers: :func:`ignore_stop_signals`)."""
    if parent is not None:
        ignore_stop_signals()
        if not _pid_alive(parent):
            return [(job, "orphaned", None) for job in jobs]
    with run_context(**({} if allow_long is None else {"allow_long": allow_long})):
        return _run_one_here(runner, jobs, Path(store), threads, git, members)


def ignore_stop_signals() -> None:
    """In a worker process: Ctrl-C (SIGINT) and SIGTERM are the grid's process's to handle (it stops its workers,
    prints one line and exits); a worker that ended on them would be taken for a job that killed its worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def full_detail(job: dict, path: Path, exc: OSError) -> dict:
    """The ``("full", detail)`` outcome of a job whose claim or record could not be written for want of space."""
    return {"key": job["key"], "config": job["config"], "seed": job["seed"], "file": str(path),
            "folder": str(path.parent), "error": f"{type(exc).__name__}: {exc}"}  # fmt: skip


def _run_one_here(runner: str, jobs: list[dict], store: Path, threads: int, git: dict | None, members: bool) -> list:
    """:func:`_run_one`'s work, under the run context it set. A claim that cannot be written because the disk is full
    ends the unit at once: ``("full", detail)`` for that job (:func:`full_detail`), nothing run."""
    out, claims, todo = [], [], []
    try:
        for job in jobs:
            try:
                fd, holder = _claim(claim_path(job, store))
            except OSError as exc:
                if not disk_full(exc):
                    raise
                return [(job, "full", full_detail(job, claim_path(job, store), exc))]
            if fd is None:
                out.append((job, "claimed", holder))
                continue
            claims.append((fd, job))
            path = job_path(job, store)
            if path.is_file():
                try:
                    if output_gone(read_run(path, job["key"]), job) is None:  # else its checkpoint is made again
                        out.append((job, "finished", None))
                        continue
                except RunFileError as exc:
                    if "newer mamba_recall" in str(exc) or isinstance(exc, UnhashedRunFile):
                        raise
            todo.append(job)
        if todo:
            for job, outcome in zip(todo, _compute_unit(runner, todo, threads, git, members=members)):
                out.append((job, *_store_outcome(*outcome, job, store)))
        return out
    finally:
        for fd, job in claims:
            _release(fd, claim_path(job, store))


def job_device(config: JobConfig | dict) -> str:
    """The device a job trains on: its config's ``device`` (``"auto"``: a GPU when the process running the job sees
    one, e.g. one Ray assigned it), resolved here, in that process; ``"cpu"`` when the config names none (a typed
    config's record has none). ``config``: the typed config a job function receives, or a job's record (its
    ``config``, a dict: a run read back from its file). A job function passes it to its training, and the job's record
    names it (``provenance.device``)."""
    from ..devices import resolve_device

    record = config_record(config) if isinstance(config, JobConfig) else config
    return resolve_device(record.get("device", "cpu")).type


def _compute(runner: str, job: dict, threads: int, git: dict | None = None) -> tuple[str, dict]:
    """Run one job's function in this process and build what the store keeps, writing nothing (a Ray worker need
    not share the driver's disk): ``("done", record)`` (the complete record with its ``sha256``, NaN listed in
    ``nonfinite``) or ``("failed", failure)`` (key, config, seed, error, traceback, pid, host). ``git``: the grid
    command's git state (:func:`mamba_recall.results.command_git_state`), which the checkpoints the job writes
    record (taken here, in a worker, it would read the files earlier jobs of the grid have just written)."""
    return _compute_unit(runner, [job], threads, git, members=False)[0]


def _compute_unit(runner: str, jobs: list[dict], threads: int, git: dict | None, *, members: bool) -> list[tuple]:
    """:func:`_compute` of a unit of work: one job (``members`` False: ``runner(config, seed) -> dict``) or the jobs
    of one config trained together as one ensemble (``members`` True: ``runner(config, [seeds]) -> [dict per
    seed]``; each record's provenance adds ``members``, the seeds trained together, and its wall and CPU seconds are
    the ensemble's). Returns one ``(status, detail)`` per job; a raise fails every job of the unit."""
    from ..results import command_provenance

    try:
        fn = _resolve(runner)
        torch = sys.modules.get("torch")
        if torch is not None and threads:
            torch.set_num_threads(threads)
        prov = dict(process_provenance())
        start = time.perf_counter()
        cpu0 = time.process_time()
        with command_provenance(git):
            if members:
                results = fn(job_config(jobs[0]), [j["seed"] for j in jobs])
            else:
                results = [fn(job_config(jobs[0]), jobs[0]["seed"])]
        wall = time.perf_counter() - start
        if not (isinstance(results, list) and len(results) == len(jobs)):
            raise TypeError(f"runner {runner} returned {type(results).__name__}, not a list of {len(jobs)} results.")
        for result in results:
            if not isinstance(result, dict):
                raise TypeError(f"runner {runner} returned a {type(result).__name__}, not a dict of results.")
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM in the grid's process (GridTerminated): the grid's, not the job's
        raise
    except BaseException as exc:  # noqa: BLE001 - recorded with its traceback, reported at the end of the grid
        # SystemExit (sys.exit, argparse's error, a GridExit of a nested grid) too: it ends the job, not the grid
        trace = traceback.format_exc()
        return [("failed", _failure(runner, job, describe_error(exc), trace)) for job in jobs]
    prov.update(
        device=_prov.device_description(job_device(jobs[0]["config"])),
        wall_seconds=round(wall, 2),
        cpu_seconds=round(time.process_time() - cpu0, 2),
        created=_now(),
    )
    if members:
        prov["members"] = [j["seed"] for j in jobs]
    out = []
    for job, result in zip(jobs, results):
        try:  # a result that JSON cannot keep fails its job (recorded), never stored as a str() or lost
            out.append(("done", _record(runner, job, result, prov)))
        except Exception as exc:  # noqa: BLE001 - recorded with its traceback
            out.append(("failed", _failure(runner, job, describe_error(exc), traceback.format_exc())))
    return out


def describe_error(exc: BaseException) -> str:
    """What a job's failure record and the grid's summary say about ``exc``."""
    if isinstance(exc, SystemExit):
        code = exc.code
        said = "" if code is None or isinstance(code, int) else f" ({code})"
        status = code if isinstance(code, int) else (0 if code is None else 1)
        return (
            f"SystemExit: the job function ended its process (sys.exit, exit status {status}){said}; a job function "
            "returns its result or raises an exception"
        )
    return f"{type(exc).__name__}: {exc}"


def _record(runner: str, job: dict, result: dict, prov: dict) -> dict:
    clean, nonfinite = _encode_result(json_result(result, runner))
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
    return record


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
        kept = dict(_save_unsaved(path, text, exc), key=job["key"], config=job["config"], seed=job["seed"])
        if disk_full(exc):  # the grid stops: every further result would be lost the same way
            kept["folder"] = str(path.parent)
            return "full", kept
        return "unsaved", kept
    stale = failure_path(job, store)
    if stale.exists():
        try:
            stale.unlink()
        except OSError:
            pass
    return "done", check_record(json.loads(text), path)


def _command_git() -> dict | None:
    """The grid command's git state (the run context's ``command_git``), handed to the jobs (:func:`_compute`)."""
    return current().command_git
