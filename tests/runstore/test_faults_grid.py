"""Faults injected into a running grid (issue: "the run store under fault"): a worker process that dies outright, a
job function returning what JSON cannot keep or raising ``SystemExit``, SIGTERM, a full disk, ``--jobs 0``. Every
test works in ``tmp_path`` stores; none writes into the committed ``results/``."""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from mamba_recall import atomic, runstore
from mamba_recall.runstore import JobsFailed, StoreFull, StoreNotWritable, load_runs, pending, run_grid
from test_faults_store import QUIET, RUNNER, _demo, _ran  # the demo grid's command and log, one helper for both


def _leftovers(store: Path) -> list[str]:
    """Temporary or half-written files left in the store (an atomic write leaves none)."""
    return sorted(p.name for p in store.rglob("*") if p.is_file() and (p.name.startswith(".") or p.suffix == ".tmp"))


# ------------------------------------------------------------------ 1. a worker process that dies outright


@pytest.mark.parametrize(
    "die, cause",
    [
        ("kill", "worker died: signal 9 (SIGKILL, e.g. the OOM killer"),
        ("segv", "worker died: signal 11 (SIGSEGV, a segmentation fault"),
        ("exit", "worker died: exit status 3"),
    ],
)
def test_a_job_that_kills_its_worker_is_recorded_and_the_others_finish(tmp_path, die, cause):
    """``--jobs 2``, seed 1 of both cells ends its worker process (SIGKILL as from the OOM killer, a segfault,
    ``os._exit``): those two jobs get a ``.failed`` record naming them and the cause, the four others finish (the
    healthy job running beside a dying one included), and the grid ends with status 1 and a line per failed job."""
    store, log = tmp_path / "runs", tmp_path / "log"
    cmd = _demo(store, "--die-seed", "1", "--die", die, "--log", str(log), seeds=3, cells=2, sleep=0.3, jobs=2)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "Traceback" not in text and "TerminatedWorkerError" not in out.stderr.split("did not finish")[0], text
    jobs = runstore.demo_jobs(3, 2, 0.3, log=log, die_seeds=[1], die=die)
    done, left = pending(jobs, store)
    assert sorted(j["seed"] for j in left) == [1, 1] and len(done) == 4, text
    assert "2 of 6 jobs did not finish in the store:" in out.stderr
    for job in left:
        failed = json.loads(runstore.failure_path(job, store).read_text())
        assert failed["key"] == job["key"] and failed["seed"] == 1 and cause in failed["error"]
        assert f"job {job['key']} (seed 1, config" in out.stderr
    assert out.stderr.count(cause) >= 2
    assert "retry them with the same command (finished jobs are skipped): python -m mamba_recall.runstore demo" in (
        out.stderr
    )
    counts = {j: _ran(log).count(j) for j in set(_ran(log))}
    assert all(n == 1 for n in counts.values()), counts  # no healthy job was killed and run again
    assert not list(store.rglob("*.claim")) or all(
        runstore.claimed_by({"experiment": "demo.sleep", "key": p.stem}, store) is None for p in store.rglob("*.claim")
    )
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)  # a rerun runs the two again only
    assert again.returncode == 1 and "6 jobs: 4 finished (skipped), 2 left" in again.stdout


# ------------------------------------------------------------------ 2. results JSON cannot keep as they are


def test_numpy_and_torch_results_are_stored_faithfully(tmp_path, monkeypatch):
    def arrays(config, seed):
        return {
            "f32": np.float32(0.5), "i64": np.int64(7), "b": np.bool_(True), "arr": np.arange(3),
            "t0": torch.tensor(0.25), "t1": torch.tensor([1.0, 2.0], requires_grad=True), "m": np.eye(2),
            "nan": np.float64("nan"), "tup": (1, 2),
        }  # fmt: skip

    monkeypatch.setattr(runstore, "demo_job", arrays)
    (job,) = runstore.demo_jobs(1, 1, 0.0)
    (rec,) = run_grid(RUNNER, [job], store=tmp_path, **QUIET)
    (read,) = load_runs("demo.sleep", tmp_path)
    for r in (rec, read):
        res = r["result"]
        assert res["f32"] == 0.5 and res["i64"] == 7 and res["b"] is True and res["arr"] == [0, 1, 2]
        assert res["t0"] == 0.25 and res["t1"] == [1.0, 2.0] and res["m"] == [[1.0, 0.0], [0.0, 1.0]]
        assert res["tup"] == [1, 2] and res["nan"] != res["nan"]
        assert type(res["f32"]) is float and type(res["i64"]) is int


@pytest.mark.parametrize(
    "value, said",
    [
        ({1, 2}, "result['bad'] as a set (its order is not kept)"),
        (object(), "result['bad'] as a object (builtins.object)"),
        (np.zeros(20_000), "result['bad'] as a ndarray of 20000 numbers"),
        (torch.tensor([1 + 2j]), "result['bad'] as a Tensor of dtype torch.complex64"),
        (Path("x"), "as a PosixPath"),
    ],
)
def test_a_result_json_cannot_keep_fails_its_job_with_a_record(tmp_path, monkeypatch, value, said):
    """Never a silent ``str()`` ("{1, 2}" read back as a string): the job fails, its ``.failed`` record names where
    the value is, its type and the fix; the other job of the grid is stored."""

    def bad_for_seed_1(config, seed):
        return {"value": seed, **({"bad": value} if seed == 1 else {})}

    monkeypatch.setattr(runstore, "demo_job", bad_for_seed_1)
    jobs = runstore.demo_jobs(2, 1, 0.0)
    with pytest.raises(JobsFailed, match="1 of 2 jobs did not finish") as err:
        run_grid(RUNNER, jobs, store=tmp_path, **QUIET)
    (failure,) = err.value.failures
    assert failure["seed"] == 1 and "TypeError" in failure["error"] and said in failure["error"]
    assert "return plain JSON values" in failure["error"]
    record = json.loads(runstore.failure_path(jobs[1], tmp_path).read_text())
    assert said in record["error"]
    assert [r["seed"] for r in load_runs("demo.sleep", tmp_path)] == [0]
    assert not runstore.job_path(jobs[1], tmp_path).exists()


# ------------------------------------------------------------------ 3. a job function that raises SystemExit


def test_system_exit_in_a_job_fails_that_job_only(tmp_path, monkeypatch):
    def exits(config, seed):
        if seed == 1:
            sys.exit(2)
        return {"value": seed}

    monkeypatch.setattr(runstore, "demo_job", exits)
    jobs = runstore.demo_jobs(3, 1, 0.0)
    with pytest.raises(JobsFailed, match="1 of 3 jobs did not finish") as err:
        run_grid(RUNNER, jobs, store=tmp_path, **QUIET)
    assert err.value.code == str(err.value)  # the grid's own exit (status 1), not the job's SystemExit(2)
    (failure,) = err.value.failures
    assert "SystemExit" in failure["error"] and "exit status 2" in failure["error"]
    assert runstore.failure_path(jobs[1], tmp_path).is_file()
    assert sorted(r["seed"] for r in load_runs("demo.sleep", tmp_path)) == [0, 2]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_system_exit_in_a_grid_command_is_named_and_the_grid_goes_on(tmp_path, n_jobs):
    store = tmp_path / "runs"
    out = subprocess.run(_demo(store, "--exit-seed", "1", seeds=3, cells=1, jobs=n_jobs), capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 1 and "1 of 3 jobs did not finish in the store:" in out.stderr, out.stdout + out.stderr
    assert "SystemExit: the job function ended its process (sys.exit, exit status 2)" in out.stderr
    assert len(load_runs("demo.sleep", store)) == 2


# ------------------------------------------------------------------ 4. SIGTERM


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_sigterm_stops_the_workers_prints_one_line_and_exits_nonzero(tmp_path, n_jobs):
    """``kill <pid>`` of the grid's process only (as a scheduler or a ``timeout`` does): the workers are stopped (no
    job starts or finishes after the grid ended), one line says what finished and the command that resumes, exit
    status 143; the same command then finishes the grid."""
    store, log = tmp_path / "runs", tmp_path / "log"
    cmd = _demo(store, "--log", str(log), seeds=4, cells=2, sleep=1.0, jobs=n_jobs)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list((store / "demo.sleep").glob("*.json")):
        time.sleep(0.05)
    time.sleep(0.2)  # the next jobs have started
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, out + err
    n = len(list((store / "demo.sleep").glob("*.json")))
    assert 1 <= n < 8
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [
        f"terminated (SIGTERM): {n} of 8 jobs finished, the workers stopped; resume with the same command: "
        f"python -m mamba_recall.runstore demo --seeds 4 --cells 2 --sleep 1.0 --jobs {n_jobs} --store {store} "
        f"--log {log}"
    ], err
    started = len(_ran(log))
    time.sleep(2.5)  # longer than a job: a worker left running would have finished a job or started another
    assert len(list((store / "demo.sleep").glob("*.json"))) == n and len(_ran(log)) == started
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stdout
    assert f"8 jobs: {n} finished (skipped), {8 - n} left" in again


# ------------------------------------------------------------------ 5. a full disk


def _full_after(monkeypatch, allowed: int):
    """Every store write after the first ``allowed`` raises ENOSPC, as a disk that fills."""
    real, calls = runstore._store._write_all, []

    def write_all(fd, data):
        calls.append(len(data))
        if len(calls) > allowed:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data)

    def write(fh, data):  # the run records' writer (mamba_recall.atomic), on the same full disk
        calls.append(len(data))
        if len(calls) > allowed:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(fh, data)

    real_write = atomic._write
    monkeypatch.setattr(runstore._store, "_write_all", write_all)
    monkeypatch.setattr(atomic, "_write", write)
    return calls


def test_a_full_disk_is_refused_before_any_job(tmp_path, monkeypatch):
    """The writable check writes (and fsyncs) real bytes: an empty probe passed on a full disk."""
    _full_after(monkeypatch, 0)
    store = tmp_path / "runs"
    jobs = runstore.demo_jobs(2, 1, 0.0, log=tmp_path / "log")
    with pytest.raises(StoreNotWritable) as err:
        run_grid(RUNNER, jobs, store=store, **QUIET)
    assert f"run store folder {store / 'demo.sleep'} has no space left" in str(err.value)
    assert "no job was started" in str(err.value) and "--store <a folder on another disk>" in str(err.value)
    assert _ran(tmp_path / "log") == [] and _leftovers(store) == []


@pytest.mark.parametrize("allowed, kept", [(3, False), (4, True)])
def test_a_disk_that_fills_during_the_grid_stops_it_with_one_clear_error(tmp_path, monkeypatch, allowed, kept):
    """Writes: the probe, job 0's claim, job 0's record, job 1's claim, job 1's record. The disk fills at job 1's
    claim (nothing of job 1 runs) or at its record (job 1 ran: its result is kept elsewhere and named). Either way
    one error names the folder, what finished and the fix; no half-written or temporary file is left; no further
    job starts; the same command finishes the grid once there is space."""
    monkeypatch.setattr(runstore._store, "UNSAVED_DIR", tmp_path / "unsaved")
    _full_after(monkeypatch, allowed)
    store, log = tmp_path / "runs", tmp_path / "log"
    jobs = runstore.demo_jobs(3, 1, 0.0, log=log)
    with pytest.raises(StoreFull) as err:
        run_grid(RUNNER, jobs, store=store, **QUIET)
    msg = str(err.value)
    assert f"no space left to write in {store / 'demo.sleep'}" in msg and "No space left on device" in msg
    assert "1 of 3 jobs are finished and kept whole; no further job was started" in msg
    assert "free space on its disk" in msg and "--store <a folder on another disk>" in msg and err.value.code == msg
    assert _ran(log) == ([(0, 0), (0, 1)] if kept else [(0, 0)])  # job 2 never started
    assert [r["seed"] for r in load_runs("demo.sleep", store)] == [0]
    assert not runstore.job_path(jobs[1], store).exists() and _leftovers(store) == []
    unsaved = tmp_path / "unsaved" / "demo.sleep" / f"{jobs[1]['key']}.json"
    assert unsaved.is_file() == kept and (f"kept at {unsaved}" in msg) == kept
    if kept:
        assert runstore.read_run(unsaved, jobs[1]["key"])["result"]["value"] == 1
    monkeypatch.undo()
    assert len(run_grid(RUNNER, jobs, store=store, **QUIET)) == 2


def test_writes_are_atomic_and_fsynced(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(runstore._store.os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    (job,) = runstore.demo_jobs(1, 1, 0.0)
    run_grid(RUNNER, [job], store=tmp_path, **QUIET)
    assert len(synced) >= 2 and _leftovers(tmp_path) == []  # the probe and the record


# ------------------------------------------------------------------ 6. --jobs 0


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_jobs_below_one_is_argparse_s_one_line_error(value, capsys):
    ap = argparse.ArgumentParser(prog="grid")
    runstore.add_grid_args(ap)
    with pytest.raises(SystemExit) as err:
        ap.parse_args(["--jobs", value])
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1] == (
        f"grid: error: argument --jobs: {value!r} is not allowed: give the number of parallel processes, a whole "
        "number >= 1 (1: this process)"
    )
    assert ap.parse_args(["--jobs", "3"]).jobs == 3


def test_demo_command_and_run_grid_refuse_jobs_zero(tmp_path):
    out = subprocess.run(_demo(tmp_path, jobs=0), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "a whole number >= 1" in out.stderr
    with pytest.raises(ValueError, match="n_jobs=0: the number of parallel processes, a whole number >= 1"):
        run_grid(RUNNER, runstore.demo_jobs(1, 1, 0.0), n_jobs=0, store=tmp_path, **QUIET)
