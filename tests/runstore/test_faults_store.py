"""Faults injected into the run store ("nothing lost, nothing silently wrong"): a read-only store, a result that
cannot be written, run files edited by hand or from a newer version, a runner that raises, two grids on one store,
a killed parallel grid, Ctrl-C, a NaN seed, and a scratch store's bundle. Every test works in ``tmp_path`` stores;
none touches the committed ``results/``."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mamba_recall import context, runstore
from mamba_recall.runstore import (
    DemoConfig,
    GridExit,
    GridInterrupted,
    JobsFailed,
    RunFileError,
    StoreNotWritable,
    aggregate,
    load_runs,
    make_job,
    mean_interval,
    pending,
    run_grid,
)

RUNNER = "mamba_recall.runstore:demo_job"
QUIET = dict(progress=False, log=lambda m: None)


def _demo(store, *extra, seeds=3, cells=2, sleep=0.0, jobs=1):
    return [
        sys.executable, "-m", "mamba_recall.runstore", "demo", "--seeds", str(seeds), "--cells", str(cells),
        "--sleep", str(sleep), "--jobs", str(jobs), "--store", str(store), *extra,
    ]  # fmt: skip


def _ran(log: Path) -> list[tuple[int, int]]:
    """(x, seed) of every job start the demo runner logged."""
    if not log.exists():
        return []
    return sorted((int(x), int(s)) for x, s, _ in (line.split() for line in log.read_text().splitlines()))


# ------------------------------------------------------------------ 1. a read-only store; a result that cannot be written


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders; see the test below")
def test_read_only_store_is_refused_before_any_job(tmp_path):
    store = tmp_path / "runs"
    (store / "demo.sleep").mkdir(parents=True)
    os.chmod(store / "demo.sleep", 0o555)
    try:
        jobs = runstore.demo_jobs(2, 1, 0.0, log=tmp_path / "log")
        with pytest.raises(StoreNotWritable, match="not writable.*no job was started.*chmod -R u\\+w"):
            run_grid(RUNNER, jobs, store=store, **QUIET)
        assert _ran(tmp_path / "log") == []
    finally:
        os.chmod(store / "demo.sleep", 0o755)


def test_store_that_cannot_be_written_is_refused_before_any_job(tmp_path):
    """(As root too:) the experiment's folder is a file, so nothing can be written in it."""
    store = tmp_path / "runs"
    store.mkdir()
    (store / "demo.sleep").write_text("not a folder")
    jobs = runstore.demo_jobs(2, 1, 0.0, log=tmp_path / "log")
    with pytest.raises(StoreNotWritable) as err:
        run_grid(RUNNER, jobs, store=store, **QUIET)
    assert str(store / "demo.sleep") in str(err.value) and "--store <a writable folder>" in str(err.value)
    assert _ran(tmp_path / "log") == [] and err.value.code != 0  # a SystemExit: the command exits with status 1
    out = subprocess.run(_demo(store), capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "not writable" in out.stderr and "Traceback" not in out.stderr


def test_result_that_cannot_be_written_is_kept_and_named(tmp_path, monkeypatch, capsys):
    """The store becomes unwritable while a job runs (its folder replaced by a file; chmod would not stop root):
    the finished result is kept in the fallback folder, named, and the grid ends non-zero."""
    store = tmp_path / "runs"
    monkeypatch.setattr(runstore._store, "UNSAVED_DIR", tmp_path / "unsaved")  # read by _save_unsaved there
    real = runstore.demo_job

    def job_then_break_the_store(config, seed):
        out = real(config, seed)
        folder = store / "demo.sleep"
        shutil.rmtree(folder)
        folder.write_text("the store went away")
        return out

    monkeypatch.setattr(runstore, "demo_job", job_then_break_the_store)
    (job,) = runstore.demo_jobs(1, 1, 0.0)
    with pytest.raises(JobsFailed) as err:
        run_grid(RUNNER, [job], store=store, **QUIET)
    (failure,) = err.value.failures
    kept = tmp_path / "unsaved" / "demo.sleep" / f"{job['key']}.json"
    assert failure["saved_at"] == str(kept) and kept.is_file()
    assert f"result kept at {kept}" in str(err.value) and "retry them with the same command" in str(err.value)
    assert f"the finished result is kept at {kept}" in capsys.readouterr().err
    rec = runstore.read_run(kept, job["key"])  # the genuine record, hash and all: copy it into the store
    assert rec["result"]["value"] == 0 and rec["sha256"] == runstore.record_hash(json.loads(kept.read_text()))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_result_kept_when_store_made_read_only_during_the_job(tmp_path, monkeypatch):
    store = tmp_path / "runs"
    monkeypatch.setattr(runstore._store, "UNSAVED_DIR", tmp_path / "unsaved")  # read by _save_unsaved there
    real = runstore.demo_job

    def job_then_chmod(config, seed):
        out = real(config, seed)
        os.chmod(store / "demo.sleep", 0o555)
        return out

    monkeypatch.setattr(runstore, "demo_job", job_then_chmod)
    (job,) = runstore.demo_jobs(1, 1, 0.0)
    try:
        with pytest.raises(JobsFailed, match="result kept at"):
            run_grid(RUNNER, [job], store=store, **QUIET)
    finally:
        os.chmod(store / "demo.sleep", 0o755)
    assert (tmp_path / "unsaved" / "demo.sleep" / f"{job['key']}.json").is_file()


# ------------------------------------------------------------------ 2. run files edited, from a newer version, malformed


def _one_run(tmp_path):
    store = tmp_path / "runs"
    (job,) = runstore.demo_jobs(1, 1, 0.0)
    run_grid(RUNNER, [job], store=store, **QUIET)
    path = runstore.job_path(job, store)
    return store, job, path, json.loads(path.read_text())


def test_run_file_carries_a_hash_and_an_edited_result_is_refused(tmp_path):
    store, job, path, rec = _one_run(tmp_path)
    assert rec["schema_version"] == runstore.SCHEMA_VERSION == 2 and rec["sha256"] == runstore.record_hash(rec)
    rec["result"]["value"] = 0.99  # a "better" number typed in by hand
    path.write_text(json.dumps(rec, indent=1, sort_keys=True))
    with pytest.raises(RunFileError, match=f"{path} does not match its sha256.*delete .* run the same grid command"):
        load_runs("demo.sleep", store)
    assert pending([job], store) == ([], [job])
    said = []
    run_grid(RUNNER, [job], store=store, progress=False, log=said.append)  # named, run again, replaced
    assert any("does not match its sha256" in s and "run again and replaced" in s for s in said)
    assert load_runs("demo.sleep", store)[0]["result"]["value"] == 0


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda r: dict(r, schema_version=3), "schema_version 3: written by a newer mamba_recall.*update mamba_recall"),
        (lambda r: [r], "holds a JSON list, not a run record"),
        (lambda r: {k: v for k, v in r.items() if k != "result"}, "lacks the field 'result'"),
        (lambda r: dict(r, seed="0"), "field 'seed' is a str, not a int"),
        (lambda r: dict(r, result=[1, 2]), "field 'result' is a list, not a dict"),
        (lambda r: dict(r, schema_version=0), "schema_version 0, which no mamba_recall wrote"),
    ],
)
def test_malformed_run_files_get_a_clear_error(tmp_path, edit, match):
    store, job, path, rec = _one_run(tmp_path)
    bad = edit(rec)
    if isinstance(bad, dict) and "sha256" in bad:
        bad["sha256"] = runstore.record_hash(bad)  # the hash is right: only the named fault remains
    path.write_text(json.dumps(bad))
    with pytest.raises(RunFileError, match=match) as err:
        load_runs("demo.sleep", store)
    assert str(path) in str(err.value)
    if "newer" in match:  # a newer version's run is never overwritten by this one
        with pytest.raises(RunFileError, match="newer"):
            pending([job], store)


def test_an_unhashed_version_1_run_is_refused_naming_the_file_and_the_fix(tmp_path):
    """The bypass of the hash (issue: 0.328 became 0.123 in ``ch1_table1_matched_cpu-hours``): an edited result,
    ``"schema_version": 1`` and no ``sha256``. It is refused when read, naming the file and the fix, and a grid does
    not run its job again over it (a store of genuine old runs is migrated, not recomputed); the committed store holds
    no version 1 file since its migration (tests/runstore/test_migrate.py), and every committed run reads."""
    store, job, path, rec = _one_run(tmp_path)
    legacy = {k: v for k, v in rec.items() if k not in ("sha256", "nonfinite")}
    legacy.update(schema_version=1)
    legacy["result"]["value"] = 0.123
    path.write_text(json.dumps(legacy))
    for read in (
        lambda: load_runs("demo.sleep", store),
        lambda: runstore.read_run(path),
        lambda: pending([job], store),
    ):
        with pytest.raises(runstore.UnhashedRunFile) as err:
            read()
        msg = str(err.value)
        assert f"run file {path} has schema_version 1 and no sha256" in msg and "no longer read" in msg
        assert f"delete {path} and run the same grid command again" in msg
        assert f"python -m mamba_recall.runstore migrate --store {store}" in msg
    with pytest.raises(runstore.UnhashedRunFile):
        run_grid(RUNNER, [job], store=store, **QUIET)
    assert json.loads(path.read_text())["result"]["value"] == 0.123  # not replaced behind the user's back
    committed = sorted(runstore.RUNS_DIR.glob("*/*.json"))
    assert committed and all(json.loads(p.read_text())["schema_version"] == runstore.SCHEMA_VERSION for p in committed)
    src = committed[0]
    dst = tmp_path / "copy" / src.parent.name / src.name
    dst.parent.mkdir(parents=True)
    dst.write_bytes(src.read_bytes())
    assert load_runs(src.parent.name, tmp_path / "copy")[0]["key"] == src.stem


# ------------------------------------------------------------------ 3. a runner that raises


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_failing_job_is_recorded_and_the_grid_goes_on(tmp_path, n_jobs):
    store = tmp_path / "runs"
    cmd = _demo(store, "--fail-seed", "1", seeds=3, cells=2, sleep=0.2, jobs=n_jobs)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 1 and "Traceback" not in text, text
    jobs = runstore.demo_jobs(3, 2, 0.2, fail_seeds=[1])
    done, left = pending(jobs, store)
    assert sorted(j["seed"] for j in left) == [1, 1] and len(done) == 4  # the healthy jobs beside them finished
    assert "2 of 6 jobs did not finish in the store:" in out.stderr
    for job in left:
        failed = json.loads(runstore.failure_path(job, store).read_text())
        assert failed["key"] == job["key"] and failed["seed"] == 1 and failed["config"] == job["config"]
        assert "RuntimeError: demo failure" in failed["error"] and "Traceback" in failed["traceback"]
        assert f"job {job['key']} (seed 1, config" in out.stderr
    assert "retry them with the same command (finished jobs are skipped): python -m mamba_recall.runstore demo" in (
        out.stderr
    )
    assert len(load_runs("demo.sleep", store)) == 4  # a failure is not counted as finished


def test_retried_job_that_succeeds_drops_its_failure_record(tmp_path, monkeypatch):
    store = tmp_path / "runs"
    (job,) = runstore.demo_jobs(1, 1, 0.0)
    real = runstore.demo_job
    monkeypatch.setattr(runstore, "demo_job", lambda c, s: 1 / 0)
    with pytest.raises(JobsFailed, match="ZeroDivisionError"):
        run_grid(RUNNER, [job], store=store, **QUIET)
    assert runstore.failure_path(job, store).is_file()
    monkeypatch.setattr(runstore, "demo_job", real)
    assert len(run_grid(RUNNER, [job], store=store, **QUIET)) == 1
    assert not runstore.failure_path(job, store).exists()


def test_grid_main_writes_the_finished_jobs_then_exits_nonzero(tmp_path, monkeypatch):
    import argparse

    monkeypatch.delenv(context.ENV_ALLOW_LONG, raising=False)
    jobs = runstore.demo_jobs(2, 1, 0.0, fail_seeds=[0])
    written = []
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="ci")
    runstore.add_grid_args(ap)
    args = ap.parse_args(["--no-estimate", "--store", str(tmp_path)])
    with pytest.raises(GridExit, match="1 of 2 jobs did not finish") as err:
        runstore.grid_main(
            args,
            RUNNER,
            jobs,
            lambda p, **k: written.append(len(pending(jobs, k["store"])[0])),
            estimate=None,
            what="d",
        )
    assert err.value.code == str(err.value) and written == [1]  # SystemExit(message): exit status 1


# ------------------------------------------------------------------ 4. claims: one job runs once


def _hold_claim(job, store):
    """A live process that holds ``job``'s claim until killed."""
    code = (
        "import sys, json, time; from pathlib import Path; from mamba_recall import runstore; "
        "job = json.loads(sys.argv[1]); fd, h = runstore._store._claim(runstore.claim_path(job, Path(sys.argv[2]))); "
        "print('held' if fd else h, flush=True); time.sleep(120)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(job), str(store)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_job_claimed_by_a_live_process_is_skipped_and_named(tmp_path):
    store = tmp_path / "runs"
    jobs = runstore.demo_jobs(2, 1, 0.0, log=tmp_path / "log")
    holder = _hold_claim(jobs[0], store)
    try:
        assert runstore.claimed_by(jobs[0], store)["pid"] == holder.pid
        said = []
        recs = run_grid(RUNNER, jobs, store=store, progress=False, log=said.append)
        assert [r["seed"] for r in recs] == [1] and _ran(tmp_path / "log") == [(0, 1)]
        assert "2 jobs: 0 finished (skipped), 1 being run by another process (skipped), 1 left" in said[0]
        assert any(f"skipped: being run by pid {holder.pid}" in s for s in said)
    finally:
        holder.kill()
        holder.wait()
    # its holder is dead (kill -9: no clean-up): the claim is stale and taken over
    assert runstore.claim_path(jobs[0], store).exists() and runstore.claimed_by(jobs[0], store) is None
    assert [r["seed"] for r in run_grid(RUNNER, jobs, store=store, **QUIET)] == [0]
    assert not runstore.claim_path(jobs[0], store).exists()


def test_two_grids_on_one_store_run_each_job_once(tmp_path):
    store, log = tmp_path / "runs", tmp_path / "log"
    cmd = _demo(store, "--log", str(log), seeds=4, cells=2, sleep=0.3)
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert _ran(log) == [(x, s) for x in range(2) for s in range(4)]  # every job once, none twice
    assert len(load_runs("demo.sleep", store)) == 8


def test_killed_parallel_grid_leaves_no_worker_running_queued_jobs(tmp_path):
    """kill -9 of a ``--jobs 2`` grid: its workers start no further job, and the same command run at once does not
    repeat a job a left-over worker is still running; in the end every job ran exactly once."""
    store, log = tmp_path / "runs", tmp_path / "log"
    cmd = _demo(store, "--log", str(log), seeds=6, cells=2, sleep=0.6, jobs=2)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and len(list((store / "demo.sleep").glob("*.json"))) < 2:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    started = _ran(log)
    assert len(started) < 12, "the grid finished before it was killed"
    time.sleep(2.0)  # longer than a job: a worker left behind would have started its queued jobs by now
    assert len(_ran(log)) <= len(started) + 2, "orphaned workers kept running queued jobs"
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    for _ in range(3):  # a job a dying worker still held was skipped (named): the same command finishes it
        if len(pending(runstore.demo_jobs(6, 2, 0.6, log=log), store)[1]) == 0:
            break
        time.sleep(1.0)
        subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
    runs = load_runs("demo.sleep", store)
    assert len(runs) == 12
    counts = {j: _ran(log).count(j) for j in set(_ran(log))}
    assert all(n == 1 for n in counts.values()), f"jobs run twice: {[j for j, n in counts.items() if n > 1]}"


# ------------------------------------------------------------------ 5. Ctrl-C


def test_loky_s_resource_tracker_is_started_without_its_clean_up_warnings(tmp_path, monkeypatch):
    """The one extra line a Ctrl-C'd ``--jobs 2`` grid printed once in about ten runs on a busy machine came from loky's
    resource tracker at its exit; the tracker takes this process's ``-W`` options, which now ignore its warnings."""
    from multiprocessing import util

    from mamba_recall.runstore import _engines

    monkeypatch.setattr(sys, "warnoptions", list(sys.warnoptions))
    _engines._run_locally("unused:run_job", [], tmp_path, lambda *a: None, n_jobs=2)
    assert f"-W{_engines.QUIET_RESOURCE_TRACKER}" in util._args_from_interpreter_flags()
    warn = "import warnings; warnings.warn('resource_tracker: /loky-1-x: FileNotFoundError(2)'); warnings.warn('other')"
    err = subprocess.run([sys.executable, *util._args_from_interpreter_flags(), "-c", warn],
                         capture_output=True, text=True).stderr  # fmt: skip
    assert "resource_tracker" not in err and "other" in err  # that warning alone


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, n_jobs):
    store = tmp_path / "runs"
    cmd = _demo(store, seeds=4, cells=2, sleep=0.8, jobs=n_jobs)
    # its own process group, as a terminal's: Ctrl-C reaches the grid's process and its workers alike
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list((store / "demo.sleep").glob("*.json")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    n = len(list((store / "demo.sleep").glob("*.json")))
    assert 1 <= n < 8
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [f"interrupted: {n} of 8 jobs finished; the same command resumes"], err
    assert "Traceback" not in out and len(out.splitlines()) == 2  # the count and the estimate only
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stdout
    assert f"8 jobs: {n} finished (skipped), {8 - n} left" in again
    assert not list((store / "demo.sleep").glob("*.claim")) or all(
        runstore.claimed_by({"experiment": "demo.sleep", "key": p.stem}, store) is None
        for p in (store / "demo.sleep").glob("*.claim")
    )


def test_interrupt_in_process_raises_grid_interrupted(tmp_path, monkeypatch, capsys):
    calls = []

    def interrupted(config, seed):
        calls.append(seed)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return {"value": seed}

    monkeypatch.setattr(runstore, "demo_job", interrupted)
    jobs = runstore.demo_jobs(3, 1, 0.0)
    with pytest.raises(GridInterrupted) as err:
        run_grid(RUNNER, jobs, store=tmp_path, **QUIET)
    assert err.value.code == 130
    assert capsys.readouterr().err == "interrupted: 1 of 3 jobs finished; the same command resumes\n"
    assert not list((tmp_path / "demo.sleep").glob("*.claim"))  # the claim is released on the way out


# ------------------------------------------------------------------ 6. a NaN seed


@pytest.mark.parametrize("where", [0, 1, 2])
def test_a_nan_seed_shows_in_the_aggregate(where):
    values = [0.5, 0.6, 0.7]
    values[where] = float("nan")
    st = mean_interval(values)
    assert st["n_nan"] == 1 and all(math.isnan(st[k]) for k in ("mean", "std", "ci_low", "ci_high"))
    runs = [
        {"config": {"x": 0}, "seed": s, "key": f"k{s}", "result": {"acc": v, "ok": 1.0}, "provenance": {}}
        for s, v in enumerate(values)
    ] + [{"config": {"x": 1}, "seed": 0, "key": "k9", "result": {"acc": 0.4, "ok": 1.0}, "provenance": {}}]
    table = aggregate(runs, by=["x"], metrics=["acc", "ok"]).set_index("x")
    row = table.loc[0]
    assert all(math.isnan(row[f"acc_{k}"]) for k in ("mean", "ci_low", "ci_high", "min", "max"))
    assert row["acc_n_nan"] == 1 and table.loc[1, "acc_n_nan"] == 0 and "nan" in row["acc_per_seed"]
    assert "ok_n_nan" not in table  # no NaN in that metric: the table is as before
    assert mean_interval([0.5, 0.6])["n_nan"] == 0


def test_null_metric_is_refused_naming_the_run():
    runs = [{"config": {"x": 0}, "seed": 0, "key": "k0", "result": {"acc": None}, "provenance": {}}]
    with pytest.raises(ValueError, match="run k0 \\(seed 0\\) has acc = None, not a number"):
        aggregate(runs, by=["x"], metrics=["acc"])


def test_store_writes_no_bare_nan(tmp_path):
    store = tmp_path / "runs"
    jobs = [make_job("demo.sleep", DemoConfig(x=0, sleep=0.0, nan_seeds=[1]), s) for s in range(2)]
    run_grid(RUNNER, jobs, store=store, **QUIET)
    text = runstore.job_path(jobs[1], store).read_text()
    assert "NaN" not in text and json.loads(text)["nonfinite"] == [{"path": ["value"], "value": "nan"}]
    json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in a run file"))
    runs = sorted(load_runs("demo.sleep", store), key=lambda r: r["seed"])
    assert math.isnan(runs[1]["result"]["value"]) and runs[0]["result"]["value"] == 0
    assert aggregate(runs, by=["x"], metrics=["value"]).loc[0, "value_n_nan"] == 1
    with pytest.raises(ValueError, match="NaN or infinite value"):
        make_job("demo.sleep", DemoConfig(x=0, sleep=float("inf")), 0)


# ------------------------------------------------------------------ 7. a scratch store's bundle


@pytest.fixture
def committed(tmp_path, monkeypatch):
    """A stand-in for the committed results (tmp_path/results, its store results/runs) and a writer of a demo grid's
    bundle in the runners' way (finished_status, then save_grid_bundle without a directory)."""
    from mamba_recall import results

    res = tmp_path / "results"
    monkeypatch.setattr(results, "RESULTS_DIR", res)
    monkeypatch.setattr(results._bundles, "RESULTS_DIR", res)  # where save_bundle reads it
    for name, module in list(sys.modules.items()):  # each module of the run-store package binds its own names
        if name == "mamba_recall.runstore" or name.startswith("mamba_recall.runstore."):
            for attr, value in (("RESULTS_DIR", res), ("RUNS_DIR", res / "runs")):
                if hasattr(module, attr):
                    monkeypatch.setattr(module, attr, value)
    monkeypatch.delenv(context.ENV_ALLOW_LONG, raising=False)
    jobs = runstore.demo_jobs(4, 1, 0.0)

    def write(preset, *, store, smoke, log):
        runs, data = runstore.finished_status(jobs, store, preset=preset, log=log)
        if not runs:
            return None
        tables = runstore.run_tables(runs, ["value"], by=["x"])
        return runstore.save_grid_bundle("demo_grid_ci", data, {}, command="demo", tables=tables, log=log)

    def main(*argv):
        import argparse

        ap = argparse.ArgumentParser()
        ap.add_argument("--preset", default="ci")
        runstore.add_grid_args(ap)
        return runstore.grid_main(ap.parse_args(["--no-estimate", *argv]), RUNNER, jobs, write, estimate=None, what="d")

    return res, jobs, main


def test_scratch_store_writes_its_bundle_beside_itself(tmp_path, committed):
    res, jobs, main = committed
    assert main() == res / "demo_grid_ci.json"  # the committed store: the committed results folder
    before = (res / "demo_grid_ci.json").read_bytes()
    scratch = tmp_path / "scratch" / "runs"
    run_grid(RUNNER, jobs[:1], store=scratch, **QUIET)
    assert main("--store", str(scratch), "--aggregate-only") == tmp_path / "scratch" / "demo_grid_ci.json"
    other = tmp_path / "elsewhere"
    run_grid(RUNNER, jobs[:2], store=other, **QUIET)
    assert main("--store", str(other), "--aggregate-only") == other / "_bundles" / "demo_grid_ci.json"
    inside = res / "runs_scratch"  # a scratch store inside results/ still does not write into results/
    run_grid(RUNNER, jobs[:2], store=inside, **QUIET)
    assert main("--store", str(inside), "--aggregate-only") == inside / "_bundles" / "demo_grid_ci.json"
    assert (res / "demo_grid_ci.json").read_bytes() == before
    assert json.loads((tmp_path / "scratch" / "demo_grid_ci.json").read_text())["data"]["jobs_finished"] == 1


def test_complete_bundle_is_not_replaced_by_an_incomplete_one(committed, capsys):
    res, jobs, main = committed
    main()
    before = (res / "demo_grid_ci.json").read_bytes()
    for job in jobs[:3]:  # three runs lost from the committed store
        runstore.job_path(job, res / "runs").unlink()
    with pytest.raises(GridExit) as err:
        main("--aggregate-only")
    assert err.value.code == str(err.value)  # SystemExit(message): printed, exit status 1
    msg = str(err.value)
    assert f"not replacing {res / 'demo_grid_ci.json'} (4 of 4 jobs, complete) by a bundle of 1 of 4 jobs" in msg
    assert "run the missing jobs first" in msg and msg in capsys.readouterr().err
    assert (res / "demo_grid_ci.json").read_bytes() == before
    main()  # the same command without --aggregate-only runs them and rewrites the complete bundle
    assert json.loads((res / "demo_grid_ci.json").read_text())["data"]["complete"]


def test_ch4_edge_scratch_store_writes_its_bundles_beside_itself(tmp_path):
    """Chapter 4's edge runner's bundles (through save_grid_bundle, as every grid's): from a scratch store they go
    beside it too (the edge grid's, 26 of 27 jobs, when asked with --partial), and the committed bundles are
    untouched; an empty scratch store aggregates nothing."""
    import shutil

    from mamba_recall.chapters.ch4_primacy_recency.runners import edge as ch4_edge
    from mamba_recall.paths import RESULTS_DIR

    names = ("ch4_edge_cpu-hours.json", "ch4_edge_checks_cpu-hours.json")
    before = {n: (RESULTS_DIR / n).read_bytes() for n in names}
    store = tmp_path / "runs"
    for experiment in ("ch4_edge", "ch4_edge_checks"):
        shutil.copytree(RESULTS_DIR / "runs" / experiment, store / experiment)
    ch4_edge.main(["--preset", "cpu-hours", "--aggregate-only", "--partial", "--store", str(store)])  # ch4_edge's grid
    ch4_edge.main(["--checks", "--preset", "cpu-hours", "--aggregate-only", "--store", str(store)])
    assert all((tmp_path / n).exists() for n in names)
    assert {n: (RESULTS_DIR / n).read_bytes() for n in names} == before
    empty = tmp_path / "empty" / "runs"
    empty.mkdir(parents=True)
    ch4_edge.main(["--preset", "cpu-hours", "--aggregate-only", "--store", str(empty)])
    ch4_edge.main(["--checks", "--preset", "cpu-hours", "--aggregate-only", "--store", str(empty)])
    assert not list((tmp_path / "empty").glob("*.json"))
