"""Chapter 3's ``cpu-hours`` preset through the run store (seconds: the smoke-capped grids, 4 steps a run).

Checks that a grid resumes (finished jobs are skipped, only the missing ones run), that the bundle carries the mean
over seeds with its 95 % t-interval and the per-seed values, the training curves and the decay histograms, that the
claims of paper 003 read the per-run table as they read the ci bundle's, and that checkpoint names carry the preset
(the committed ci names unchanged).
"""

from __future__ import annotations

import math

import pytest

from mamba_recall import results
from mamba_recall.claims import check
from mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth import fig1_decay_pairs
from mamba_recall.chapters.ch3_selectivity.runners import (
    induction as ch3_induction,
    keep_nth as ch3_keep_nth,
    mqar_figa3 as ch3_mqar_figa3,
    mqar_train as ch3_mqar_train,
)
from mamba_recall.chapters.ch3_selectivity.training import selectivity
from mamba_recall.runstore import pending, run_grid, t_quantile_975


@pytest.fixture()
def tmp_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setattr(selectivity, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    return tmp_path / "checkpoints"


def test_checkpoint_names_follow_the_one_convention_and_carry_the_preset():
    assert selectivity.keep_checkpoint_name("ci", 20, 0) == "ch3_keep_nth_s6pe_ci_T20_seed0"
    assert selectivity.keep_checkpoint_name("paper", 20, 1) == "ch3_keep_nth_s6pe_paper_T20_seed1"
    assert selectivity.keep_checkpoint_name("cpu-hours", 50, 2) == "ch3_keep_nth_s6pe_cpu-hours_T50_seed2"
    assert selectivity.keep_checkpoint_name("cpu-hours") == "ch3_keep_nth_s6pe_cpu-hours"


def test_cpu_hours_grids_cover_the_paper_settings():
    keep = ch3_keep_nth.jobs_for("cpu-hours")
    table = {(j["config"]["model"], j["seed"]) for j in keep if j["config"]["T"] == 50}
    assert {m for m, _ in table} == {"s6+pe", "s6", "s4d+pe", "s4d", "transformer"}
    assert {s for _, s in table} == {0, 1, 2}
    sweep = {(j["config"]["model"], j["config"]["T"]) for j in keep}
    assert {T for m, T in sweep if m in ("s6+pe", "s4d+pe")} == {10, 20, 30, 40, 50}
    mqar = {(j["config"]["grid"], j["config"]["N"]) for j in ch3_mqar_train.jobs_for("cpu-hours")}
    assert {N for g, N in mqar if g == "micro"} == {1, 2, 3, 4, 8}
    ih = ch3_induction.jobs_for("cpu-hours")
    ds = {j["config"]["d"] for j in ih}
    V = {j["config"]["V"] for j in ih}.pop()
    assert min(ds) < 2 * V <= max(ds) and {j["config"]["mixer"] for j in ih} == {"s6", "s6_dT"}
    assert len({j["seed"] for j in keep}) == 3 and len({j["seed"] for j in ih}) == 5  # Fig. 3: the paper's best of 5


def test_keep_grid_resumes_and_bundles_intervals(tmp_path, tmp_checkpoints):
    store = tmp_path / "runs"
    jobs = ch3_keep_nth.jobs_for("cpu-hours", smoke=True)
    first = run_grid(ch3_keep_nth.RUNNER, jobs[:5], store=store, progress=False, log=lambda m: None)
    assert len(first) == 5
    lines = []
    rest = run_grid(ch3_keep_nth.RUNNER, jobs, store=store, progress=False, log=lines.append)
    assert len(rest) == len(jobs) - 5  # the 5 finished jobs were skipped, not run again
    assert lines[0].startswith(f"{len(jobs)} jobs: 5 finished (skipped), {len(jobs) - 5} left")
    assert not pending(jobs, store)[1]

    path = ch3_keep_nth.write_bundle("cpu-hours", store=store, smoke=True, directory=tmp_path, log=lambda m: None)
    b = results.load_bundle(path)
    assert b.data["complete"] and b.data["jobs_total"] == len(jobs)
    cells = b.tables["cells"]
    for col in ("accuracy_mean", "accuracy_ci_low", "accuracy_ci_high", "accuracy_per_seed", "n_seeds"):
        assert col in cells
    assert (cells.n_seeds == 2).all()
    runs = b.tables["runs"]
    for cell in cells.itertuples():
        accs = runs[(runs["T"] == cell.T) & (runs.model == cell.model)].sort_values("seed").accuracy.tolist()
        mean = sum(accs) / len(accs)
        half = t_quantile_975(1) * math.sqrt(sum((a - mean) ** 2 for a in accs)) / math.sqrt(2)
        assert cell.accuracy_mean == pytest.approx(mean)
        # the t-interval, clipped to an accuracy's range [0, 1] (the experiment's declared bounds)
        low, high = max(mean - half, 0.0), min(mean + half, 1.0)
        assert (cell.accuracy_ci_low, cell.accuracy_ci_high) == pytest.approx((low, high))
    curves = b.tables["curves"]
    assert set(curves.columns) >= {"T", "model", "seed", "step", "loss", "accuracy"}
    assert len(curves.groupby(["T", "model", "seed"])) == len(jobs)  # one curve per run
    assert set(b.tables["decay"].model) == {"s6+pe", "s6", "s4d+pe", "s4d"}

    # the claims read the per-run table of a cpu-hours bundle as they read the ci one's (tier: the preset)
    tab1 = check("003/Tab1", evidence=b, record=False)
    assert tab1.evidence["tier"] == "cpu-hours" and tab1.evidence["seeds"] == 2

    # Fig. 1: one (trained, untrained) pair per seed from the preset's checkpoints, at the largest T
    saved = sorted(p.name for p in tmp_checkpoints.glob("*.pt"))
    assert saved and all(n.startswith("ch3_keep_nth_s6pe_cpu-hours_T") for n in saved)
    pairs, ck = fig1_decay_pairs(20, preset="cpu-hours")
    assert ck["T"] == 50 and ck["preset"] == "cpu-hours" and len(pairs) == 2


@pytest.mark.parametrize("runner", [ch3_mqar_train, ch3_induction])
def test_mqar_and_induction_grids_bundle(tmp_path, runner):
    store = tmp_path / "runs"
    jobs = runner.jobs_for("cpu-hours", smoke=True)
    run_grid(runner.RUNNER, jobs, store=store, progress=False, log=lambda m: None)
    b = results.load_bundle(
        runner.write_bundle("cpu-hours", store=store, smoke=True, directory=tmp_path, log=lambda m: None)
    )
    cells, runs = b.tables["cells"], b.tables["runs"]
    assert len(runs) == len(jobs) and (cells.n_seeds == 2).all()
    assert (cells.accuracy_ci_low <= cells.accuracy_mean + 1e-12).all()
    assert (cells.accuracy_mean <= cells.accuracy_ci_high + 1e-12).all()
    assert len(b.tables["curves"]) >= len(jobs)


def test_ci_runs_through_the_run_store_like_every_preset(tmp_path, capsys):
    """``--preset ci`` is run-store jobs too (one bundle format at every preset): its jobs are the ci grid's cells."""
    jobs = ch3_keep_nth.jobs_for("ci")
    assert [j["config"]["model"] for j in jobs] == ["s6+pe", "s6", "s4d+pe", "s4d", "transformer"]
    assert {j["config"]["preset"] for j in jobs} == {"ci"} and all("device" not in j["config"] for j in jobs)
    with pytest.raises(SystemExit) as exc:  # Fig. A.3 has no ci grid: the grid command's one line says where it has
        ch3_mqar_figa3.main(["--preset", "ci"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "ch3_mqar_figa3 has no run-store grid at preset ci" in err
    assert "at cpu-hours, paper only" in err


def test_figa3_reads_the_n_sweep_grid_of_a_run_store_bundle():
    """The cpu-hours MQAR bundle holds two grids (micro |V| = 16, T = 24 and a paper cell |V| = 128, T = 100) with the
    same κ and N = 8: Fig. A.3's N sweep is read on the micro grid alone, not on the best of both."""
    import pandas as pd

    from mamba_recall.claims import get
    from mamba_recall.results import Bundle

    rows = [
        dict(grid="micro", T=24, V=16, kappa=4, d=32, N=N, mixer="s6", seed=s, accuracy=0.5 if N < 4 else 0.6)
        for N in (1, 2, 3, 4, 8)
        for s in (0, 1, 2)
    ]
    rows += [dict(grid="paper", T=100, V=128, kappa=4, d=64, N=8, mixer="s6", seed=s, accuracy=1.0) for s in (0, 1, 2)]
    b = Bundle("t", {"preset": "cpu-hours"}, {}, {"device": "cpu"}, "t", {"rows": pd.DataFrame(rows)}, None)
    m = get("003/FigA3").measure(b)
    assert m.values["mamba_best_above_kappa_min"] == 0.6 and m.values["mamba_best_below_kappa"] == 0.5
