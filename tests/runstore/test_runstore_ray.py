"""The run store on Ray (``--engine ray``): the same store semantics as the local engine, on a local Ray instance of
two CPUs. Results equal the local engine's (the demo grid and a real grid, bit for bit on a CPU); a grid resumes
with only its missing jobs; a failing job is recorded and named; Ctrl-C ends with one line and the same command
resumes. Ray comes from the ``cluster`` extra (``pip install -e '.[cluster]'``; ``make venv`` installs it)."""

from __future__ import annotations

import json
import os

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[cluster]'")

from mamba_recall import runstore  # noqa: E402

DEMO = "mamba_recall.runstore:demo_job"


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance (2 CPUs) for the module; run_grid joins it and leaves it running."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _results(store, experiment):
    return {r["key"]: (r["seed"], r["result"]) for r in runstore.load_runs(experiment, store)}


def test_a_real_grid_on_ray_is_bit_identical_to_the_local_engine_and_resumes(local_ray, tmp_path):
    """Chapter 2's Fig. 7 grid at the smoke cap (8 trained models) through its one command line (``python -m
    mamba_recall grid ch2_fig7``), local and Ray."""
    from mamba_recall import results
    from mamba_recall.experiment import grid_command

    def fig7(argv):
        assert grid_command(["ch2_fig7", *argv]) == 0

    args = ["--preset", "cpu-hours", "--smoke", "--no-estimate"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(results, "RESULTS_DIR", tmp_path)
        mp.setattr(results._bundles, "RESULTS_DIR", tmp_path)
        mp.setattr(results._bundles, "SMOKE_RESULTS_DIR", tmp_path)
        fig7(args + ["--store", str(tmp_path / "local")])
        fig7(args + ["--store", str(tmp_path / "ray"), "--engine", "ray", "--jobs", "2"])
        a, b = _results(tmp_path / "local", "ch2_fig7"), _results(tmp_path / "ray", "ch2_fig7")
        assert len(a) == 8 and a == b  # every number of every result, exactly
        assert not list((tmp_path / "ray").rglob("*.claim")), "every claim is released"
        folder = tmp_path / "ray" / "ch2_fig7"
        before = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")}
        gone = sorted(before)[0]
        (folder / gone).unlink()  # an interrupted grid: only the missing job runs again
        fig7(args + ["--store", str(tmp_path / "ray"), "--engine", "ray", "--jobs", "2"])
        after = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")}
        assert after.keys() == before.keys() and [n for n in after if after[n] != before[n]] == [gone]
        assert _results(tmp_path / "ray", "ch2_fig7") == a


def test_a_failing_job_on_ray_is_recorded_and_named(local_ray, tmp_path):
    jobs = runstore.demo_jobs(seeds=2, cells=2, sleep=0.01, fail_seeds=[1])
    with pytest.raises(runstore.JobsFailed) as exc:
        runstore.run_grid(DEMO, jobs, n_jobs=2, store=tmp_path, engine="ray", progress=False, log=lambda m: None)
    message = str(exc.value.message)
    failed = [j for j in jobs if j["seed"] == 1]
    assert message.startswith("2 of 4 jobs did not finish") and "retry them with the same command" in message
    for job in failed:
        assert job["key"] in message and "demo failure: seed 1 is in fail_seeds" in message
        record = json.loads(runstore.failure_path(job, tmp_path).read_text())
        assert record["error"].startswith("RuntimeError: demo failure") and "Traceback" in record["traceback"]
    runs = runstore.load_runs("demo.sleep", tmp_path)
    assert len(runs) == 2  # the other jobs finished and were written
    assert {r["result"]["pid"] for r in runs} - {os.getpid()}, "the Ray jobs ran in workers, not in the driver"
    assert [r["result"]["value"] for r in sorted(runs, key=lambda r: r["config"]["x"])] == [0, 10]
    assert not list(tmp_path.rglob("*.claim")), "every claim is released"


def test_bad_engine_options_say_what_to_use(tmp_path):
    jobs = runstore.demo_jobs(seeds=1, cells=1, sleep=0.0)
    with pytest.raises(ValueError, match="engine='spark': use one of local, ray"):
        runstore.run_grid(DEMO, jobs, store=tmp_path, engine="spark")
    with pytest.raises(ValueError, match="only with engine='ray'"):
        runstore.run_grid(DEMO, jobs, store=tmp_path, gpus_per_job=0.5)


_CTRL_C_DRIVER = """
import json, sys
from pathlib import Path
from mamba_recall import runstore

store, log = Path(sys.argv[1]), sys.argv[2]
jobs = runstore.demo_jobs(seeds=3, cells=1, sleep=1.0, log=log)
real = runstore._engines._store_outcome  # what _run_on_ray calls


def interrupted_after_the_first(*args):
    real(*args)
    raise KeyboardInterrupt


runstore._engines._store_outcome = interrupted_after_the_first
try:
    runstore.run_grid("mamba_recall.runstore:demo_job", jobs, n_jobs=2, store=store, engine="ray", progress=False,
                      log=lambda m: None)
    interrupted = False
except runstore.GridInterrupted:
    interrupted = True
claims_left = len(list(store.rglob("*.claim")))
runstore._engines._store_outcome = real
started = len(Path(log).read_text().splitlines())
rest = runstore.run_grid("mamba_recall.runstore:demo_job", jobs, n_jobs=2, store=store, engine="ray",
                         progress=False, log=lambda m: None)
print(json.dumps(dict(interrupted=interrupted, claims_left=claims_left, rest=len(rest),
                      stored=len(runstore.load_runs("demo.sleep", store)),
                      rerun=len(Path(log).read_text().splitlines()) - started)))
"""


def test_ctrl_c_on_a_ray_grid_cancels_releases_and_the_same_grid_resumes(tmp_path):
    """Ctrl-C arrives in the driver while it writes the first result back: the running tasks are cancelled, every
    claim is released, one line is printed (GridInterrupted, exit status 130); run again, only the jobs without a
    file run (each job's start is logged by the job itself). The command-line path of Ctrl-C (a real SIGINT) is
    tests/runstore/test_faults_store.py's, shared by both engines.

    The driver is a process of its own, as a grid command is, with its own Ray instance: inside a pytest-xdist
    worker, the force-cancel of the running tasks ended the worker itself about once in six runs ("node down: Not
    properly terminated", 2026-11-27; never in 14 runs outside xdist), which took the whole test session with it."""
    import subprocess
    import sys

    log = tmp_path / "starts.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    p = subprocess.run(
        [sys.executable, "-c", _CTRL_C_DRIVER, str(tmp_path / "store"), str(log)],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert "interrupted: 1 of 3 jobs finished; the same command resumes" in p.stderr
    assert out["interrupted"] and out["claims_left"] == 0, out  # the claims are released
    assert out["rest"] == 2 and out["stored"] == 3, out
    assert out["rerun"] == 2, out  # only the two jobs without a file ran again


def test_members_on_ray_one_task_per_unit_equal_the_local_engine(local_ray, tmp_path):
    """``--members``: the seeds of one config as one Ray task (one ensemble per worker), each result under its key."""
    jobs = runstore.demo_jobs(seeds=3, cells=2, sleep=0.01)
    members = "mamba_recall.runstore:demo_members"
    quiet = dict(progress=False, log=lambda m: None)
    runstore.run_grid(DEMO, jobs, store=tmp_path / "local", **quiet)
    runstore.run_grid(
        DEMO, jobs, n_jobs=2, store=tmp_path / "ray", engine="ray", members=2, members_runner=members, **quiet
    )
    local, on_ray = _results(tmp_path / "local", "demo.sleep"), _results(tmp_path / "ray", "demo.sleep")
    assert local.keys() == on_ray.keys() and len(local) == 6
    assert all(local[k][1]["value"] == on_ray[k][1]["value"] for k in local)
    runs = runstore.load_runs("demo.sleep", tmp_path / "ray")
    units = {tuple(r["provenance"]["members"]) for r in runs}
    assert units == {(0, 1), (2,)}  # 3 seeds in units of up to 2, per cell
    by_unit = {}
    for r in runs:
        by_unit.setdefault((r["config"]["x"], tuple(r["provenance"]["members"])), set()).add(r["result"]["pid"])
    assert all(len(p) == 1 for p in by_unit.values()) and not list((tmp_path / "ray").rglob("*.claim"))
