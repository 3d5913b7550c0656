"""The grid engines of :func:`run_grid`: this process, ``n_jobs`` joblib processes (the loky backend,
:func:`_run_locally`) or Ray tasks (:func:`_run_on_ray`). With each, the driver claims the jobs and writes their
outcomes (:mod:`._store`); a runner that raises, or whose worker process dies, is listed at the end with the command
that retries it; Ctrl-C and SIGTERM end the grid with one line (:class:`GridInterrupted`, :class:`GridTerminated`); a
full disk ends it with one message (:class:`StoreFull`)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
from pathlib import Path
from typing import Callable

from ..context import run_context
from ..longrun import long_runs_allowed
from ..longrun import format_seconds as _fmt
from ._errors import GridInterrupted, GridTerminated, JobsFailed, RunFileError, StoreFull
from ._records import RUNS_DIR, _scan, claim_path, job_path, output_gone, read_run
from ._store import (
    _claim,
    _command_git,
    _compute_unit,
    _failure,
    _release,
    _run_one,
    _store_outcome,
    check_writable,
    claimed_by,
    disk_full,
    full_detail,
    full_fix,
    ignore_stop_signals,
)


def _describe_job(job: dict) -> str:
    return f"job {job['key']} ({job['experiment']}, seed {job['seed']}, config {json.dumps(job['config'], sort_keys=True)})"


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
    members: int = 1,
    members_runner: str | None = None,
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

    ``members > 1``: the jobs left that share a config (seeds of one recipe) run ``members`` at a time as one unit,
    ``members_runner(config, [seeds]) -> [result per seed]`` (e.g. one ensemble of small models: one process, one
    Ray task, one share of a GPU), each result still written under its own job's key; a unit counts as one job
    for ``n_jobs`` and ``gpus_per_job``. Each record's ``provenance.members`` names the seeds trained with it.

    Faults (nothing lost, nothing silently wrong):

    * the store is checked writable before any job starts (:class:`StoreNotWritable`); a result whose file still
      cannot be written is kept elsewhere and named (:func:`_save_unsaved`);
    * a job whose runner raises is recorded (:func:`failure_path`) and the grid goes on; at the end the failures
      are listed with the command that retries them, as :class:`JobsFailed` (exit status 1);
    * a job claimed by another live process (a second grid on this store, or a worker of a killed one) is skipped
      and named; a run file damaged or edited by hand is named and run again;
    * a job whose worker process dies (``os._exit``, SIGSEGV, SIGKILL from the OOM killer) is recorded as that
      job's failure (``worker died: signal 9 (SIGKILL, ...)``), the other workers' jobs go on
      (:func:`_run_locally`), and it is listed at the end like a job that raised; so is a job function that raises
      ``SystemExit``, or returns a result JSON cannot keep (:func:`json_result`);
    * a full disk (ENOSPC) stops the grid with one message naming the folder and the fix (:class:`StoreFull`);
      the files written so far are whole (atomic writes), a finished result that could not be written is kept
      elsewhere and named;
    * Ctrl-C prints one line, ``interrupted: N of M jobs finished; the same command resumes``, and ends with
      :class:`GridInterrupted` (exit status 130); SIGTERM likewise stops the workers, prints one line naming the
      command that resumes and ends with :class:`GridTerminated` (exit status 143).
    """
    store = Path(store or RUNS_DIR)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs={n_jobs!r}: the number of parallel processes, a whole number >= 1.")
    keys = [j["key"] for j in jobs]
    if len(set(keys)) != len(keys):
        raise ValueError("the grid lists the same job twice (same experiment, config and seed).")
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r}: use one of {', '.join(ENGINES)}.")
    if not (isinstance(gpus_per_job, (int, float)) and 0 <= gpus_per_job) or (gpus_per_job and engine != "ray"):
        raise ValueError(
            f"gpus_per_job={gpus_per_job!r}: a number >= 0, and only with engine='ray' (Ray assigns the devices)."
        )
    if not (isinstance(members, int) and members >= 1) or (members > 1 and not members_runner):
        raise ValueError(
            f"members={members!r}: an integer >= 1; above 1 the runner must train several seeds at once "
            f"(members_runner), and {runner} has none: run it with members=1."
        )
    ray_opts = {"address": address, "gpus_per_job": float(gpus_per_job)} if engine == "ray" else None
    work = (members_runner, members) if members > 1 else (runner, 1)
    previous_term = _catch_sigterm()
    try:
        return _run_grid(work, jobs, n_jobs, store, estimate, log, progress, check_long, ray_opts)
    except KeyboardInterrupt as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not interrupt the count
        try:
            done = _count_when_settled(jobs, store)
        except Exception:  # noqa: BLE001 - the count is a courtesy; the line is printed anyway
            done = "?"
        if isinstance(exc, Terminated):
            message = (
                f"terminated (SIGTERM): {done} of {len(jobs)} jobs finished, the workers stopped; resume with the same "
                f"command: {this_command()}"
            )
            print(message, file=sys.stderr, flush=True)
            raise GridTerminated(message) from None
        message = f"interrupted: {done} of {len(jobs)} jobs finished; the same command resumes"
        print(message, file=sys.stderr, flush=True)
        raise GridInterrupted(message) from None
    finally:
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        _restore_sigterm(previous_term)


def _is_our_worker(pid) -> bool:
    """Whether ``pid`` is a worker process this one started (its parent, read from ``/proc``; False where there is
    no ``/proc`` or the process is gone)."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, ValueError, TypeError):
        return False
    return int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid()


def _count_when_settled(jobs: list[dict], store, timeout: float = 10.0) -> int:
    """The finished jobs of the grid once its own workers have let go of their jobs (Ctrl-C reaches them too: a
    worker that had finished its job still writes its run, after this process took the interrupt), waiting at most
    ``timeout`` seconds; claims held by other processes (another command on the same store) are not waited for."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holders = (claimed_by(j, store) for j in jobs)
        if not any(h is not None and _is_our_worker(h.get("pid")) for h in holders):
            break
        time.sleep(0.05)
    return len(_scan(jobs, store)[0])


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the grid's main thread by :func:`_on_sigterm`: it takes Ctrl-C's way out (the workers
    stopped, the claims released, one line), then :class:`GridTerminated`. A ``KeyboardInterrupt``, so that no
    ``except Exception`` of a job function (or :func:`_compute_unit`) takes it for the job's own failure."""


_NOT_SET = object()


def _on_sigterm(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not interrupt the way out
    raise Terminated()


def _catch_sigterm():
    """Route SIGTERM to :class:`Terminated` while a grid runs (in the main thread only, where Python runs signal
    handlers); returns the handler to restore."""
    if threading.current_thread() is not threading.main_thread():
        return _NOT_SET
    return signal.signal(signal.SIGTERM, _on_sigterm)


def _restore_sigterm(previous) -> None:
    if previous is not _NOT_SET:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def units(jobs: list[dict], members: int) -> list[list[dict]]:
    """The units of work of ``jobs``: each job alone (``members`` 1), or the jobs of one experiment and config
    (its seeds) in groups of up to ``members``, in the order of their first job."""
    if members == 1:
        return [[j] for j in jobs]
    groups: dict[str, list[dict]] = {}
    for j in jobs:
        groups.setdefault(json.dumps([j["experiment"], j["config"]], sort_keys=True), []).append(j)
    return [g[i : i + members] for g in groups.values() for i in range(0, len(g), members)]


def _run_grid(work, jobs, n_jobs, store, estimate, log, progress, check_long, ray_opts=None) -> list[dict]:
    runner, members = work
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
        todo = units(left, members)
        if estimate is not None:
            seconds, basis = estimate(left)
            per = seconds / max(1, min(n_jobs, len(todo)))
            grouped = f" in {len(todo)} units of up to {members} members" if members > 1 else ""
            log(f"estimated {_fmt(per)} for {len(left)} jobs{grouped} with --jobs {n_jobs} ({basis})")
            if check_long is not None:
                check_long(per)
        from tqdm.auto import tqdm

        bar = tqdm(total=len(left), desc=left[0]["experiment"], unit="job", disable=not progress, smoothing=0.1)

        def take(job, status, detail):
            if status == "full":
                raise _store_full(detail, jobs, store)
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
                _run_on_ray(runner, todo, store, take, n_jobs, log=log, members=members > 1, **ray_opts)
            else:
                _run_locally(runner, todo, store, take, n_jobs, members=members > 1)
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


#: loky's resource tracker, a process of its own started with this process's ``-W`` options, warns at its exit about
#: the semaphores of workers that Ctrl-C stopped ("resource_tracker: /loky-…: FileNotFoundError", once in about ten
#: interrupted ``--jobs 2`` grids on a busy 2-core machine): a line of joblib's own clean-up after the one line an
#: interrupted grid prints, about no job and no result, so the tracker is started with it ignored
QUIET_RESOURCE_TRACKER = "ignore:resource_tracker:UserWarning"


def _run_locally(runner, todo: list[list[dict]], store: Path, take, n_jobs: int, members: bool = False) -> None:
    """Run the units ``todo`` (:func:`units`) in this process (``n_jobs`` 1) or in ``n_jobs`` worker processes and
    hand each job's outcome to ``take`` as it arrives.

    The workers: one loky executor of one process per slot (one torch thread and one BLAS thread each; the parent's
    long-run permission, pid and git state handed to :func:`_run_one`), each given one unit at a time. A worker that
    dies running a unit (``os._exit``, SIGSEGV, SIGKILL from the OOM killer) breaks only its own executor, so the
    job that killed it is known: it is recorded as failed (:func:`_worker_died`), a fresh worker takes the slot, and
    the other workers' jobs go on (one shared pool, as ``joblib.Parallel``'s, stops every job with a
    ``TerminatedWorkerError`` that names none). Ctrl-C and SIGTERM kill the workers (they ignore both:
    :func:`ignore_stop_signals`); their claims end with them."""
    if n_jobs == 1:
        for unit in todo:
            for job, status, detail in _run_one(runner, unit, str(store), members=members):
                take(job, status, detail)
        return
    from concurrent.futures import FIRST_COMPLETED, wait

    from joblib.externals.loky.process_executor import BrokenProcessPool  # TerminatedWorkerError's base

    if QUIET_RESOURCE_TRACKER not in sys.warnoptions:  # before loky starts its tracker, which takes our -W options
        sys.warnoptions.append(QUIET_RESOURCE_TRACKER)
    allowed, me, git = long_runs_allowed(), os.getpid(), _command_git()
    queue = list(reversed(todo))
    running: dict = {}  # future -> (executor, unit)
    executors: list = []

    def submit(ex):
        unit = queue.pop()
        running[ex.submit(_run_one, runner, unit, str(store), 1, allowed, me, git, members)] = (ex, unit)

    try:
        for _ in range(min(n_jobs, len(todo))):
            executors.append(_worker_executor())
            submit(executors[-1])
        while running:
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in finished:
                ex, unit = running.pop(future)
                try:
                    outcomes = future.result()
                except BrokenProcessPool as exc:  # this unit's worker died: its jobs failed, the others go on
                    codes = _exit_codes(ex, exc)
                    ex.shutdown(wait=False, kill_workers=True)
                    executors.remove(ex)
                    outcomes = _worker_died(runner, unit, store, codes, exc)
                    ex = None
                for job, status, detail in outcomes:
                    take(job, status, detail)
                if queue:
                    if ex is None:
                        ex = _worker_executor()
                        executors.append(ex)
                    submit(ex)
    finally:
        for ex in executors:
            ex.shutdown(wait=False, kill_workers=True)


#: thread limits of a worker process (one BLAS / OpenMP thread each, as joblib's ``inner_max_num_threads=1``)
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS", "NUMEXPR_NUM_THREADS")  # fmt: skip


def _worker_executor():
    """A loky executor of one worker process (one thread each; Ctrl-C and SIGTERM ignored: the grid's process
    handles them)."""
    from joblib.externals.loky import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=1, initializer=ignore_stop_signals, env={name: "1" for name in _THREAD_VARS})


_SIGNAL_NOTES = {
    "SIGKILL": "SIGKILL, e.g. the OOM killer: the job may need more memory than was free",
    "SIGSEGV": "SIGSEGV, a segmentation fault in native code",
    "SIGABRT": "SIGABRT, an abort in native code",
    "SIGBUS": "SIGBUS, a bus error in native code",
    "SIGTERM": "SIGTERM, sent to the worker",
}


def _exit_codes(ex, exc) -> list[int]:
    """The exit codes of ``ex``'s dead worker (negative: the signal that killed it), from the process itself or else
    from loky's message (``The exit codes of the workers are {SIGKILL(-9)}``)."""
    codes = [p.exitcode for p in getattr(ex, "_processes", {}).values() if getattr(p, "exitcode", None) is not None]
    return codes or [int(c) for c in re.findall(r"\w+\((-?\d+)\)", str(exc))]


def describe_exit(codes: list[int]) -> str:
    """``worker died: signal 9 (SIGKILL, e.g. the OOM killer ...)``, ``worker died: exit status 3 (...)``."""
    if not codes:
        return "worker died (its exit status is unknown)"
    code = codes[0]
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"worker died: signal {-code} ({_SIGNAL_NOTES.get(name, name)})"
    return f"worker died: exit status {code} (os._exit, or a crash that bypassed Python's exceptions)"


def _worker_died(runner, unit: list[dict], store: Path, codes: list[int], exc) -> list[tuple]:
    """The outcomes of a unit whose worker died: each job failed (its ``.failed`` record names the cause), unless
    its run file was written before the worker died (then it is finished). The dead worker's claims are taken over
    and removed (the kernel released their locks); a job another process claimed meanwhile is left to it."""
    cause = describe_exit(codes)
    error = f"{cause} while running this job"
    trace = f"{type(exc).__name__}: {exc}\n(the job's own traceback died with its process)"
    out = []
    for job in unit:
        fd, holder = _claim(claim_path(job, store))
        if fd is None:
            out.append((job, "claimed", holder))
            continue
        try:
            path = job_path(job, store)
            try:
                if path.is_file() and output_gone(rec := read_run(path, job["key"]), job) is None:
                    out.append((job, "done", rec))
                    continue
            except RunFileError:
                pass
            out.append((job, *_store_outcome("failed", _failure(runner, job, error, trace), job, store)))
        finally:
            _release(fd, claim_path(job, store))
    return out


def _store_full(detail: dict, jobs: list[dict], store: Path) -> StoreFull:
    """The one error of a grid whose store filled: the folder, what finished, where a finished result was kept, the
    fix and the command that resumes."""
    try:
        done = len(_scan(jobs, store)[0])
    except Exception:  # noqa: BLE001 - the count is a courtesy
        done = "?"
    kept = (
        f" The finished result of job {detail['key']} could not be written; it is kept at {detail['saved_at']}: copy "
        f"it to {detail['file']} once there is space."
        if "saved_at" in detail
        else ""
    )
    return StoreFull(
        f"the run store's disk is full: no space left to write in {detail['folder']} ({detail['error']}). "
        f"{done} of {len(jobs)} jobs are finished and kept whole; no further job was started.{kept} To go on, "
        f"{full_fix(detail['folder'])}: {this_command()}"
    )


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


def _ray_task(runner: str, jobs: list[dict], allowed: bool, git: dict | None = None, members: bool = False) -> list:
    """A Ray task: one unit of work (a job, or an ensemble of one config's seeds) computed in a worker (one torch
    thread, the driver's long-run permission), each job's record or failure sent back to the driver, which writes
    it (:func:`_store_outcome`)."""
    with run_context(allow_long=allowed):
        return _compute_unit(runner, jobs, 1, git, members=members)


def _run_on_ray(
    runner, todo: list[list[dict]], store: Path, take, n_jobs: int, *, log, address=None, gpus_per_job=0.0,
    members: bool = False,
) -> None:  # fmt: skip
    """Run the units ``todo`` (:func:`units`) as Ray tasks and hand each job's outcome to ``take`` as it arrives.

    The driver claims every job first (:func:`_claim`: a second grid on the store skips them, a job claimed
    elsewhere is skipped here), submits one task per unit (``num_cpus=1``, ``num_gpus=gpus_per_job``: Ray places
    them and sets ``CUDA_VISIBLE_DEVICES``; ``max_retries=3``: a unit whose worker dies, e.g. a preempted node, is
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
        if threading.current_thread() is threading.main_thread():  # ray.init set its own (sys.exit): ours again
            signal.signal(signal.SIGTERM, _on_sigterm)
        log(f"ray: {'joined ' + address if address else f'a local instance with {n_jobs} CPUs'}")
    task = ray.remote(num_cpus=1, num_gpus=gpus_per_job, max_retries=3)(_ray_task)
    claims, refs = {}, {}
    allowed = long_runs_allowed()
    git = _command_git()
    try:
        for unit in todo:
            mine = []
            for job in unit:
                try:
                    fd, holder = _claim(claim_path(job, store))
                except OSError as exc:
                    if not disk_full(exc):
                        raise
                    take(job, "full", full_detail(job, claim_path(job, store), exc))  # raises StoreFull
                if fd is None:
                    take(job, "claimed", holder)
                    continue
                if job_path(job, store).is_file():  # finished by another grid since the scan
                    _release(fd, claim_path(job, store))
                    take(job, "finished", None)
                    continue
                claims[job["key"]] = (fd, job)
                mine.append(job)
            if mine:
                refs[task.remote(runner, mine, allowed, git, members)] = mine
        waiting = list(refs)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            mine = refs[ready[0]]
            try:
                outcomes = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # the task was lost beyond its retries (not a raise: see _compute)
                outcomes = [("failed", _failure(runner, job, f"{type(exc).__name__}: {exc}", str(exc))) for job in mine]
            for job, (status, detail) in zip(mine, outcomes):
                outcome = _store_outcome(status, detail, job, store)
                fd, _ = claims.pop(job["key"])
                _release(fd, claim_path(job, store))
                take(job, *outcome)
    except KeyboardInterrupt:
        held = [ref for ref, mine in refs.items() if any(job["key"] in claims for job in mine)]
        # only the tasks still running are cancelled: force-cancelling one whose result is arriving at that moment
        # aborts the driver inside Ray ("Tried to complete task that was not pending", task_manager.cc, Ray 2.x; CI,
        # once). A finished task's result is not stored here: its claim is released below and the job runs again.
        _, cancelled = ray.wait(held, num_returns=len(held), timeout=0) if held else ([], [])
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
