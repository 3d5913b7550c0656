"""Fig. A.3 at the paper's T = 100 and |V| = 128 (``chapters/ch3_selectivity/runners/mqar_figa3.py``): the declared N sweep across κ,
7 seeds, judged by ``claims.ch3.check_figa3`` only once every job has finished."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mamba_recall.chapters.ch3_selectivity.runners import mqar_figa3 as M
from mamba_recall.presets import experiment
from mamba_recall.runstore import finished_runs, job_config, run_grid


def test_jobs_sweep_N_across_kappa_at_the_papers_T_and_V():
    """Each κ has N below, at and above Thm. 2's N = κ (the rule needs both sides), 7 seeds each (the paper's "best
    of 7"), at T = 100 and |V| = 128, with the Chapter 3 recipe; the first κ's jobs come first."""
    S = experiment(M.EXPERIMENT, "cpu-hours")
    jobs = M.jobs_for("cpu-hours")
    assert len(jobs) == len(S["kappa_N"]) * len(S["ds"]) * 7
    by_kappa = {}
    for j in jobs:
        c = j["config"]
        assert (c["T"], c["V"], c["mixer"], c["grid"]) == (100, 128, "s6", "figa3")
        by_kappa.setdefault(c["kappa"], set()).add(c["N"])
    for kappa, Ns in by_kappa.items():
        assert min(Ns) < kappa <= max(Ns)
    assert sorted(by_kappa) == [4, 8] and [j["config"]["kappa"] for j in jobs[:21]] == [4] * 21


def test_ci_preset_trains_nothing(capsys):
    """The runner is the grid of ``ch3_mqar_figa3`` under its name: at ``ci`` (no grid; the page reads the committed
    cpu-hours bundle) argparse's one line says where it has one, and nothing runs."""
    with pytest.raises(SystemExit) as exc:
        M.main(["--preset", "ci"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "ch3_mqar_figa3 has no run-store grid at preset ci" in err
    assert "cpu-hours, paper" in err


def test_smoke_end_to_end(tmp_path):
    """The smoke grid through the run store: an unfinished grid's bundle is *not run* with the resume command; the
    finished one is read through the claim's measurement, whose verdict on a smoke bundle is *not run* (not
    evidence)."""
    from mamba_recall.chapters.ch3_selectivity.claims import check_figa3

    jobs = M.jobs_for("cpu-hours", smoke=True)
    run_grid(M.RUNNER, jobs[:1], store=tmp_path, progress=False, log=lambda _: None)
    path = M.write_bundle("cpu-hours", store=tmp_path, smoke=True, log=lambda _: None)
    read = {"name": path.stem, "directory": path.parent, "record": False}
    v, bundle = check_figa3(**read)
    assert v.status == "not run" and f"1 of {len(jobs)} runs finished" in v.reason and bundle is None
    assert "runners.mqar_figa3 --preset cpu-hours" in v.reason
    run_grid(M.RUNNER, jobs, store=tmp_path, progress=False, log=lambda _: None)
    assert len(finished_runs(jobs, tmp_path)) == len(jobs)
    M.write_bundle("cpu-hours", store=tmp_path, smoke=True, log=lambda _: None)
    v, bundle = check_figa3(**read)
    assert len(bundle.tables["runs"]) == len(jobs) and set(bundle.tables["runs"].grid) == {"figa3"}
    assert v.status == "not run" and "not evidence" in v.reason  # a smoke bundle is never a verdict


def test_absent_bundle_is_not_run_with_its_command(tmp_path):
    from mamba_recall.chapters.ch3_selectivity.claims import check_figa3

    v, bundle = check_figa3(directory=tmp_path, record=False)
    assert v.status == "not run" and "runners.mqar_figa3 --preset cpu-hours" in v.reason and bundle is None


def test_paper_preset_trains_the_three_mixers_on_the_device_its_config_names(tmp_path):
    """The GPU size lists Mamba, Mamba-2 and S4D (|V| 512, 512, 256); one smoke job of each runs through the store
    and its record names the device the job resolved (here the CPU, or a GPU where the test machine has one)."""
    from mamba_recall.runstore import job_device

    jobs = M.jobs_for("paper", smoke=True)
    one_each = list({j["config"]["mixer"]: j for j in jobs}.values())
    assert sorted(j["config"]["mixer"] for j in one_each) == ["mamba2", "s4d", "s6"]
    run_grid(M.RUNNER, one_each, store=tmp_path, progress=False, log=lambda _: None)
    runs = finished_runs(one_each, tmp_path)
    assert len(runs) == 3
    for r in runs:
        assert r["config"]["device"] == "auto"
        assert r["provenance"]["device"].startswith(job_device(r["config"]))
        assert 0.0 <= r["result"]["row"]["accuracy"] <= 1.0


def test_members_give_the_bundle_of_one_model_per_job(tmp_path, monkeypatch):
    """``--members 7``: the seeds of each cell trained as one ensemble give the same runs, seed by seed, as one model
    per job (the smoke grid: every member stops where it stopped alone, the same test accuracy up to rounding)."""
    from mamba_recall import results

    for mod in (results, results._bundles):
        monkeypatch.setattr(mod, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(results._bundles, "SMOKE_RESULTS_DIR", tmp_path)
    args = ["--preset", "cpu-hours", "--smoke", "--no-estimate"]
    M.main(args + ["--store", str(tmp_path / "alone")])
    M.main(args + ["--store", str(tmp_path / "together"), "--members", "7"])
    jobs = M.jobs_for("cpu-hours", smoke=True)
    alone = {r["key"]: r for r in finished_runs(jobs, tmp_path / "alone")}
    together = {r["key"]: r for r in finished_runs(jobs, tmp_path / "together")}
    assert alone.keys() == together.keys() == {j["key"] for j in jobs}
    for key, r in together.items():
        a, b = alone[key]["result"]["row"], r["result"]["row"]
        assert b["steps"] == a["steps"] and b["accuracy"] == pytest.approx(a["accuracy"], abs=1e-3)
        seeds = sorted(j["seed"] for j in jobs if j["config"] == r["config"])
        assert r["result"]["ensemble"] == seeds == r["provenance"]["members"]
    with pytest.raises(SystemExit, match="--members 0: give an integer >= 1"):
        M.main(args + ["--store", str(tmp_path / "x"), "--members", "0"])


def test_members_of_a_mixer_without_ensemble_train_one_after_another():
    """Mamba-2 has no ensemble (its own convolutions, scalar Δ): ``run_members`` trains its seeds one at a time,
    exactly as ``run_job`` does, and says nothing of an ensemble."""
    job = next(j for j in M.jobs_for("paper", smoke=True) if j["config"]["mixer"] == "mamba2")
    c = replace(job_config(job), device="cpu")  # typed, as the job functions receive it
    got = M.run_members(c, [0, 1])
    assert [r["row"] for r in got] == [
        M.run_job(c, s)["row"] | {"seconds": r["row"]["seconds"]} for s, r in zip([0, 1], got)
    ]
    assert all("ensemble" not in r for r in got)
