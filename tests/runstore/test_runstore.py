"""The run store: keys, resume after an interruption, parallel processes, aggregation."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pandas as pd
import pytest

from mamba_recall import runstore
from mamba_recall.runstore import (
    DemoConfig,
    JobConfig,
    aggregate,
    job_key,
    load_runs,
    make_job,
    mean_interval,
    omitted_if_none,
    pending,
    run_grid,
)


@dataclass(frozen=True, kw_only=True)
class Toy(JobConfig):
    """A job config of the key tests: ``x``, and ``betas`` (a tuple, recorded as a list) when given."""

    x: int
    betas: tuple[float, ...] | None = omitted_if_none()


def test_key_ignores_dict_order_and_tuple_vs_list():
    """A job's key is that of its record read back from its file: key order and tuple vs list do not change it."""
    a = make_job("demo.sleep", Toy(x=1, betas=(0.9, 0.95)), 0)
    assert a["config"] == {"x": 1, "betas": [0.9, 0.95]}
    for config in ({"betas": [0.9, 0.95], "x": 1}, {"x": 1, "betas": (0.9, 0.95)}):  # a record, as written or read
        assert job_key({"experiment": "demo.sleep", "config": config, "seed": 0}) == a["key"]
    assert (
        make_job("demo.sleep", DemoConfig(x=1, sleep=0.0), 1)["key"]
        != make_job("demo.sleep", DemoConfig(x=1, sleep=0.0), 0)["key"]
    )
    assert (
        make_job("demo.sleep", DemoConfig(x=1, sleep=0.0), 0)["key"]
        != make_job("demo.other", DemoConfig(x=1, sleep=0.0), 0)["key"]
    )
    with pytest.raises(ValueError, match="seed must be an integer"):
        make_job("demo.sleep", DemoConfig(x=1, sleep=0.0), 1.5)


def _demo_cmd(store, seeds=4, cells=2, sleep=0.4):
    return [
        sys.executable,
        "-m",
        "mamba_recall.runstore",
        "demo",
        "--seeds",
        str(seeds),
        "--cells",
        str(cells),
        "--sleep",
        str(sleep),
        "--store",
        str(store),
    ]


def test_interrupted_grid_resumes_only_missing_jobs(tmp_path):
    """Kill the grid command after a few jobs, run the same command again: only the missing jobs run."""
    store = tmp_path / "runs"
    folder = store / "demo.sleep"
    total = 8
    proc = subprocess.Popen(_demo_cmd(store), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and len(list(folder.glob("*.json"))) < 2:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # no clean-up, as a killed session
    proc.wait()
    first = {p.name: p.read_text() for p in folder.glob("*.json")}
    assert 2 <= len(first) < total, f"the grid was not interrupted mid-way ({len(first)} of {total})"

    out = subprocess.run(_demo_cmd(store), capture_output=True, text=True, timeout=120, check=True).stdout
    assert f"{total} jobs: {len(first)} finished (skipped), {total - len(first)} left" in out
    assert f"ran {total - len(first)} jobs" in out
    after = {p.name: p.read_text() for p in folder.glob("*.json")}
    assert len(after) == total
    assert all(after[name] == text for name, text in first.items())  # finished jobs were not re-run
    # a third run has nothing to do
    out = subprocess.run(_demo_cmd(store), capture_output=True, text=True, timeout=120, check=True).stdout
    assert f"{total} jobs: {total} finished (skipped), 0 left" in out and "ran 0 jobs" in out
    runs = load_runs("demo.sleep", store)
    assert sorted((r["config"]["x"], r["seed"]) for r in runs) == [(x, s) for x in range(2) for s in range(4)]
    prov = runs[0]["provenance"]
    assert {
        "git_commit",
        "git_clean",
        "dirty_files",
        "wall_seconds",
        "cpu_seconds",
        "device",
        "versions",
        "created",
    } <= set(prov)


def test_parallel_processes_and_aggregate(tmp_path):
    jobs = [make_job("demo.sleep", DemoConfig(x=x, sleep=0.05), s) for x in range(2) for s in range(3)]
    recs = run_grid(
        "mamba_recall.runstore:demo_job", jobs, n_jobs=2, store=tmp_path, progress=False, log=lambda m: None
    )
    assert len(recs) == 6 and len({r["result"]["pid"] for r in recs} - {os.getpid()}) >= 1
    assert pending(jobs, tmp_path) == (jobs, [])
    table = aggregate(load_runs("demo.sleep", tmp_path), by=["x"], metrics=["value"])
    row = table.set_index("x").loc[1]
    assert row["value_mean"] == 11 and row["n_seeds"] == 3 and row["value_per_seed"] == "10.0000 11.0000 12.0000"
    half = 0.95 * math.sqrt(2 / (1 - 0.95**2)) * 1.0 / math.sqrt(3)  # t_{0.975, 2} = 4.3027 in closed form; s = 1
    assert row["value_ci_high"] == pytest.approx(11 + half, rel=1e-14)
    assert row["value_ci_low"] == pytest.approx(11 - half, rel=1e-14)


def test_mean_interval_and_corrupt_file(tmp_path):
    assert math.isnan(mean_interval([0.5])["ci_low"])
    st = mean_interval([0.2, 0.4])  # t_{0.975, 1} = tan(0.475 π) = 12.7062 (Cauchy quantile)
    assert st["ci_high"] == pytest.approx(0.3 + math.tan(0.475 * math.pi) * math.sqrt(0.02) / math.sqrt(2), rel=1e-13)
    assert st["std"] == pytest.approx(math.sqrt(0.02)) and "scipy.stats.t" in runstore.INTERVAL_METHOD
    job = make_job("demo.sleep", DemoConfig(x=0, sleep=0.0), 0)
    path = runstore.job_path(job, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{truncated")
    assert pending([job], tmp_path) == ([], [job])  # a corrupt file is run again
    with pytest.raises(ValueError, match="corrupt run file"):
        load_runs("demo.sleep", tmp_path)
    run_grid("mamba_recall.runstore:demo_job", [job], store=tmp_path, progress=False, log=lambda m: None)
    assert json.loads(path.read_text())["result"]["value"] == 0


def test_cpu_hours_preset_is_optional():
    from mamba_recall.presets import ALL_PRESETS, PRESETS, PresetError, check_preset, experiment, presets_defining

    assert PRESETS == ("ci", "paper") and "cpu-hours" in ALL_PRESETS and check_preset("cpu-hours") == "cpu-hours"
    with pytest.raises(PresetError, match="'cpu-hours' \\(the papers' own settings"):
        check_preset("cpu_hours")
    assert "ch2_reference_grid" in presets_defining("cpu-hours")
    without = next(n for n in presets_defining("ci") if n not in presets_defining("cpu-hours"))
    with pytest.raises(PresetError, match="has no 'cpu-hours' preset"):
        experiment(without, "cpu-hours")
    grid = experiment("ch2_reference_grid", "cpu-hours")
    assert (grid["V"], grid["Nf"], grid["L"], grid["batch"], grid["steps"], grid["seeds"]) == (512, 16, 64, 32, 2000, 3)


def test_ch2_reference_grid_smoke(tmp_path, monkeypatch):
    """The runner end to end at the smoke cap: jobs in a store, a bundle with the resolved config and intervals."""
    import inspect

    from mamba_recall import results
    from mamba_recall.chapters.ch2_hashing_scaling.runners import reference_grid as grid
    from mamba_recall.presets import experiment

    if "smoke" not in inspect.signature(experiment).parameters:
        pytest.skip("presets.experiment has no smoke cap in this tree")

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(results._bundles, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(results._bundles, "SMOKE_RESULTS_DIR", tmp_path)  # smoke bundles stay in tmp_path
    store = tmp_path / "runs"
    grid.main(["--preset", "cpu-hours", "--smoke", "--store", str(store), "--no-estimate"])
    bundle = results.load_bundle("ch2_reference_grid_cpu-hours_smoke", directory=tmp_path)
    cells = bundle.tables["comparison"]
    assert len(cells) == 3 and set(cells["n_seeds"]) == {2}  # D ∈ {16, 64} × N ∈ {8, 32}, N ≤ D; 2 seeds
    assert {"best_accuracy_mean", "best_accuracy_ci_low", "best_accuracy_per_seed", "authors", "diff_mean"} <= set(
        cells
    )
    # the one layout: the same cells' numbers, and one row per run
    pd.testing.assert_frame_equal(bundle.tables["cells"], cells[list(bundle.tables["cells"].columns)])
    assert len(bundle.tables["runs"]) == 6
    job = bundle.config["job_config"]
    assert (
        job["recipe"]["name"] == "code" and job["recipe"]["batch_size"] == 8 and job["eval"]["seed"] == grid.EVAL_SEED
    )
    assert bundle.data["complete"] and "Student-t" in bundle.data["interval_method"]
    before = sorted(p.name for p in (store / grid.EXPERIMENT).glob("*.json"))
    grid.main(["--preset", "cpu-hours", "--smoke", "--store", str(store), "--no-estimate"])  # nothing left to run
    assert sorted(p.name for p in (store / grid.EXPERIMENT).glob("*.json")) == before


def test_bundles_from_uncommitted_code_are_marked_or_refused(tmp_path, monkeypatch):
    from mamba_recall import provenance, results

    monkeypatch.setattr(
        provenance,
        "git",
        lambda *a: (
            " M src/mamba_recall/results/_bundles.py\n?? src/mamba_recall/y.py\n M src/mamba_recall/runstore/_records.py"
            if "--" in a
            else ("abc" if a[0] == "rev-parse" else "")
        ),
    )
    results.save_bundle("b_ci", {}, {}, command="c", directory=tmp_path)
    b = results.load_bundle("b_ci", directory=tmp_path)
    # only files this process imported count (y.py was never imported)
    assert b.clean is False and b.provenance["dirty_files"] == [
        "src/mamba_recall/results/_bundles.py",
        "src/mamba_recall/runstore/_records.py",
    ]
    monkeypatch.setenv(results.ENV_REQUIRE_CLEAN, "1")
    with pytest.raises(results.BundleError, match="uncommitted changes"):
        results.save_bundle("c_ci", {}, {}, command="c", directory=tmp_path)
    monkeypatch.setattr(provenance, "git", lambda *a: "abc" if a[0] == "rev-parse" else "")
    results.save_bundle("d_ci", {}, {}, command="c", directory=tmp_path)
    assert results.load_bundle("d_ci", directory=tmp_path).clean is True


def test_ch2_trained_dn_smoke(tmp_path, monkeypatch):
    from mamba_recall import results
    from mamba_recall.chapters.ch2_hashing_scaling.runners import trained_dn as dn

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(results._bundles, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(results._bundles, "SMOKE_RESULTS_DIR", tmp_path)  # smoke bundles stay in tmp_path
    dn.main(["--preset", "ci", "--smoke", "--store", str(tmp_path / "runs"), "--no-estimate"])
    bundle = results.load_bundle("ch2_trained_dn_ci_smoke", directory=tmp_path)
    cells, errors = bundle.tables["predictions"], bundle.tables["law_errors"]
    assert len(cells) == 2 and {"eq15_corrected", "err_rev_a54", "best_accuracy_ci_low"} <= set(cells)
    assert set(errors["law"]) == {"eq77", "eq15_printed", "eq15_corrected", "rev_a54"}
    assert bundle.config["job_config"]["recipe"]["name"] == "code"


def test_dirty_files_as_run_compared_with_head():
    import hashlib
    import subprocess

    from mamba_recall.paths import REPO_ROOT

    blob = subprocess.run(["git", "show", "HEAD:pyproject.toml"], cwd=REPO_ROOT, capture_output=True).stdout
    runs = [
        {
            "provenance": {
                "dirty_files": {
                    "pyproject.toml": hashlib.sha256(blob).hexdigest(),
                    "src/mamba_recall/runstore.py": "0" * 64,
                }
            }
        }
    ]
    assert runstore.dirty_files_committed_since(runs) == {"pyproject.toml": True, "src/mamba_recall/runstore.py": False}


def test_reference_grid_comparison_loads_from_the_committed_bundle():
    from mamba_recall.chapters.ch2_hashing_scaling.pipelines.scaling_grids import comparison
    from mamba_recall.chapters.ch2_hashing_scaling.runners.reference_grid import AUTHORS
    from mamba_recall.results import evidence

    table = comparison(evidence("ch2_reference_grid", preset="cpu-hours"))
    assert {(int(d), int(n)) for d, n in zip(table["D"], table["N"])} == set(AUTHORS)
    assert {"best_accuracy_ci_low", "authors", "diff_mean"} <= set(table)


# ------------------------------------------------------------------------------------- members: seeds as one unit
DEMO = "mamba_recall.runstore:demo_job"
MEMBERS = "mamba_recall.runstore:demo_members"


def test_units_group_the_seeds_of_one_config():
    jobs = runstore.demo_jobs(seeds=3, cells=2, sleep=0)
    assert [[j["seed"] for j in u] for u in runstore.units(jobs, 1)] == [[0], [1], [2], [0], [1], [2]]
    grouped = runstore.units(jobs, 2)
    assert [[j["seed"] for j in u] for u in grouped] == [[0, 1], [2], [0, 1], [2]]
    assert all(len({json.dumps(j["config"], sort_keys=True) for j in u}) == 1 for u in grouped)


def test_members_write_each_job_under_its_own_key_and_resume(tmp_path):
    jobs = runstore.demo_jobs(seeds=3, cells=2, sleep=0)
    run_grid(DEMO, jobs, store=tmp_path / "alone", progress=False, log=lambda m: None)
    run_grid(DEMO, jobs, store=tmp_path / "together", members=3, members_runner=MEMBERS, progress=False,
             log=lambda m: None)  # fmt: skip
    alone = {r["key"]: r for r in load_runs("demo.sleep", tmp_path / "alone")}
    together = {r["key"]: r for r in load_runs("demo.sleep", tmp_path / "together")}
    assert alone.keys() == together.keys() == {j["key"] for j in jobs}
    for key, r in together.items():
        assert r["result"]["value"] == alone[key]["result"]["value"]
        assert r["provenance"]["members"] == [0, 1, 2] and "members" not in alone[key]["provenance"]
    pids = {r["result"]["pid"] for r in together.values()}
    assert len(pids) == 1  # one process ran them all (n_jobs 1)
    log = []
    assert run_grid(DEMO, jobs, store=tmp_path / "together", members=3, members_runner=MEMBERS, progress=False,
                    log=log.append) == []  # fmt: skip
    assert "6 finished (skipped)" in log[0]


def test_a_failing_unit_records_every_member(tmp_path):
    jobs = runstore.demo_jobs(seeds=2, cells=2, sleep=0, fail_seeds=[1])
    with pytest.raises(runstore.JobsFailed) as info:
        run_grid(DEMO, jobs, store=tmp_path, members=2, members_runner=MEMBERS, progress=False, log=lambda m: None)
    failed = {(f["config"]["x"], f["seed"]) for f in info.value.failures}
    assert failed == {(0, 0), (0, 1), (1, 0), (1, 1)}  # seed 1 raised, and its ensemble's other member with it
    assert "demo failure: seed 1" in info.value.failures[0]["error"]
    assert len(list(tmp_path.rglob("*.failed"))) == 4 and not list(tmp_path.rglob("*.json"))


def test_members_need_a_runner_that_trains_several_seeds(tmp_path):
    jobs = runstore.demo_jobs(seeds=2, cells=1, sleep=0)
    with pytest.raises(ValueError, match="members_runner"):
        run_grid(DEMO, jobs, store=tmp_path, members=2, progress=False)
    with pytest.raises(ValueError, match="integer >= 1"):
        run_grid(DEMO, jobs, store=tmp_path, members=0, members_runner=MEMBERS, progress=False)


def test_members_in_joblib_processes(tmp_path):
    jobs = runstore.demo_jobs(seeds=2, cells=2, sleep=0)
    run_grid(DEMO, jobs, store=tmp_path, n_jobs=2, members=2, members_runner=MEMBERS, progress=False,
             log=lambda m: None)  # fmt: skip
    runs = load_runs("demo.sleep", tmp_path)
    assert sorted(r["result"]["value"] for r in runs) == [0, 1, 10, 11]
    by_cell = {}
    for r in runs:
        by_cell.setdefault(r["config"]["x"], set()).add(r["result"]["pid"])
    assert all(len(p) == 1 for p in by_cell.values())  # a unit's members ran in one process


def test_a_job_s_declared_output_is_not_part_of_its_key_and_decides_a_record_that_names_no_file(tmp_path):
    """``make_job(..., output=)``: the file a job writes, outside its key; a finished record that names no checkpoint
    of its own counts as finished only while that file exists (a record that names one is checked by its own)."""
    from mamba_recall.runstore import output_gone

    plain = make_job("ch9_toy", Toy(x=1), 0)
    out = tmp_path / "model.pt"
    job = make_job("ch9_toy", Toy(x=1), 0, output=str(out))
    assert job["key"] == plain["key"] and job["output"] == str(out) and "output" not in plain
    rec = {"result": {"accuracy": 1.0}}
    assert output_gone(rec, job) == f"its checkpoint {out} is missing" and output_gone(rec, plain) is None
    out.write_bytes(b"weights")
    assert output_gone(rec, job) is None
