"""Chapter 5 at both training budgets (issue 52): a running grid's bundle is written only when asked and says it is
partial with its job count wherever it is shown; every number the page gives about a budget is computed from that
bundle's own config (its steps, target, V), not from a default; the per-cell learning-rate sweep picks its rate by
the declared rule and its smoke grid runs end to end."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pandas as pd
import pytest

from mamba_recall import results
from mamba_recall.chapters.ch5_synthesis import views
from mamba_recall.chapters.ch5_synthesis.configs import SWEEP_DEFAULT_LR, SWEEP_KAPPA, SWEEP_LRS
from mamba_recall.chapters.ch5_synthesis.pipelines import budgets
from mamba_recall.chapters.ch5_synthesis.pipelines.lr_sweep import pick_rate, picked_rates, sweep_kappa, sweep_kappas
from mamba_recall.chapters.ch5_synthesis.runners import capacity
from mamba_recall.experiment import grid_command
from mamba_recall.paths import RESULTS_DIR
from mamba_recall.runstore import finished_runs

TASK = "mqar (zoology, mamba_recall.tasks.mqar variant 'standard', power_a 1, pad 'full')"


# --- the partial bundle -------------------------------------------------------------------------------------------


def _scratch_store(tmp_path, n: int):
    """A scratch run store holding ``n`` of the long grid's committed runs."""
    jobs = capacity.jobs_for("cpu-hours", budget="long")
    runs = finished_runs(jobs)
    if len(runs) < n:
        pytest.skip(f"fewer than {n} committed runs of ch5_capacity_long")
    store = tmp_path / "scratch" / "runs"
    (store / "ch5_capacity_long").mkdir(parents=True)
    for r in runs[:n]:
        src = RESULTS_DIR / "runs" / "ch5_capacity_long" / f"{r['key']}.json"
        shutil.copy2(src, store / "ch5_capacity_long" / src.name)
    return store, len(jobs)


def test_an_unfinished_grid_writes_its_bundle_only_when_asked_and_marked_partial(tmp_path, capsys):
    """Through the one grid command: ``--aggregate-only`` on a grid with jobs left writes nothing and names the
    command that writes it marked; ``--aggregate-only --partial`` writes it beside the scratch store, marked partial,
    recording the experiment's grid command."""
    store, total = _scratch_store(tmp_path, 3)
    base = ["ch5_capacity_long", "--preset", "cpu-hours", "--aggregate-only", "--store", str(store)]
    assert grid_command(base) == 0
    assert not list((tmp_path / "scratch").glob("*.json"))
    err = capsys.readouterr().err
    want = "python -m mamba_recall grid ch5_capacity_long --preset cpu-hours --aggregate-only --partial"
    assert f"3 of {total} jobs finished" in err and want in err, err
    assert grid_command([*base, "--partial"]) == 0
    path = tmp_path / "scratch" / "ch5_capacity_long_cpu-hours.json"  # beside the scratch store, never into results/
    b = results.load_bundle(path)
    assert b.data["partial"] == f"3 of {total} jobs" and b.data["complete"] is False
    assert b.command == "python -m mamba_recall grid ch5_capacity_long --preset cpu-hours --allow-long"
    assert budgets.partial_label(b) == f"PARTIAL: 3 of {total} jobs"
    assert budgets.budget_label(b) == f"6000 steps, PARTIAL: 3 of {total} jobs"
    assert budgets.judged_bundle("short", b) == "short"  # a partial grid is shown, never judged
    # the charts and tables that show it carry the label
    assert f"PARTIAL: 3 of {total} jobs" in json.dumps(views.budgets_chart(b, b).to_dict())
    assert set(views.capacity_table(b).budget) == {f"6000 steps, PARTIAL: 3 of {total} jobs"}
    # the bundle writer called directly says and does the same
    said = []
    assert capacity.write_bundle("cpu-hours", store=store, budget="long", log=said.append) is None
    assert any(s.endswith(want) for s in said), said


def test_a_partial_bundle_never_replaces_a_complete_one(tmp_path, capsys):
    """A complete bundle beside the scratch store (the committed ``ch5_capacity`` one) is kept when the grid
    aggregates 3 of its jobs with ``--partial``: the command stops (status 1) naming both counts."""
    jobs = capacity.jobs_for("cpu-hours")
    runs = finished_runs(jobs)[:3]
    if len(runs) < 3:
        pytest.skip("fewer than 3 committed runs of ch5_capacity")
    store = tmp_path / "scratch" / "runs"
    (store / "ch5_capacity").mkdir(parents=True)
    for r in runs:
        shutil.copy2(RESULTS_DIR / "runs" / "ch5_capacity" / f"{r['key']}.json", store / "ch5_capacity")
    for path in RESULTS_DIR.glob("ch5_capacity_cpu-hours.*"):
        shutil.copy2(path, tmp_path / "scratch" / path.name)
    before = {p.name: p.read_bytes() for p in (tmp_path / "scratch").glob("ch5_capacity_cpu-hours.*")}
    assert json.loads(before["ch5_capacity_cpu-hours.json"])["data"]["complete"] is True
    argv = ["ch5_capacity", "--preset", "cpu-hours", "--aggregate-only", "--partial", "--store", str(store)]
    with pytest.raises(SystemExit) as stopped:
        grid_command(argv)
    assert stopped.value.code not in (0, None) and "not replacing" in str(stopped.value.code), stopped.value.code
    assert f"by a bundle of 3 of {len(jobs)} jobs" in str(stopped.value.code)
    assert {p.name: p.read_bytes() for p in (tmp_path / "scratch").glob("ch5_capacity_cpu-hours.*")} == before


def test_the_old_budget_options_name_the_experiment_s_grid_command(capsys):
    """The runner's ``--budget`` and ``--lr-sweep`` are gone: each stops with the grid command it meant."""
    assert capacity.main(["--preset", "ci", "--budget", "long", "--aggregate-only"]) == 2
    assert "python -m mamba_recall grid ch5_capacity_long --preset ci --allow-long" in capsys.readouterr().err
    assert capacity.main(["--budget", "long", "--lr-sweep"]) == 2
    assert "python -m mamba_recall grid ch5_capacity_lr_sweep --preset cpu-hours" in capsys.readouterr().err


def test_an_incomplete_bundle_without_its_mark_is_refused():
    b = SimpleNamespace(data={"complete": False, "jobs_finished": 3, "jobs_total": 36}, path="x.json", config={})
    with pytest.raises(ValueError, match="not marked partial.*--partial"):
        budgets.partial_label(b)
    assert budgets.partial_label(SimpleNamespace(data={"complete": True})) == ""


def test_the_committed_long_bundle_says_how_many_jobs_it_holds():
    path = RESULTS_DIR / "ch5_capacity_long_cpu-hours.json"
    if not path.exists():
        pytest.skip("no long-budget bundle committed")
    b = results.load_bundle(path)
    n = b.data["jobs_finished"]
    assert n == len(b.tables["searches"]) and b.data["jobs_total"] == 36
    if not b.data["complete"]:
        assert b.data["partial"] == f"{n} of 36 jobs" and budgets.partial_label(b) == f"PARTIAL: {n} of 36 jobs"


# --- numbers from each bundle's own config ------------------------------------------------------------------------


def _bundle(steps: int, V: int, steps_run: int, *, complete=True, partial=None):
    """Cells (1, 16, 4), (1, 32, 8) and (1, 16, 8) with 3 seeds; every probe stopped at ``steps_run`` with recall 0.8 (above the 1/κ plateau)."""
    searches, probes = [], []
    for D, N in ((16, 4), (32, 8), (16, 8)):
        for s in range(3):
            searches.append(dict(layers=1, D=D, N=N, seed=s, kappa50=D * N / 16 * (1 + 0.01 * s), kappa90=2.0))
            for k in (2, 4, 8):
                probes.append(dict(layers=1, D=D, N=N, seed=s, kappa=k, accuracy=0.8, steps_run=steps_run))
    data = {"complete": complete, "jobs_finished": 6, "jobs_total": 6 if complete else 36}
    if partial:
        data["partial"] = partial
    config = {"job_config": {"V": V, "steps": steps, "eval": {"target_accuracy": 0.99}, "data": {"task": TASK}}}
    tables = {"searches": pd.DataFrame(searches), "probes": pd.DataFrame(probes)}
    return SimpleNamespace(tables=tables, config=config, data=data, path=None)


def test_convergence_is_read_at_each_bundles_own_step_budget():
    short = _bundle(1500, 512, 1500)  # every probe at the 1,500-step cap: none converged
    long = _bundle(6000, 512, 1500, complete=False, partial="6 of 36 jobs")  # the same stop is early at 6,000
    t = budgets.capacity_by_budget(short, long)
    assert set(t[t.budget == "1500 steps"].converged_share) == {0.0}
    assert set(t[t.budget == "6000 steps, PARTIAL: 6 of 36 jobs"].converged_share) == {1.0}
    assert set(t.seeds) == {3}


def test_the_hypotheses_convergence_at_the_long_budget_is_read_at_its_steps():
    from mamba_recall.chapters.ch5_synthesis.claims.synthesis import budget_summary

    short, long = _bundle(1500, 512, 1500), _bundle(6000, 512, 1500, complete=False, partial="6 of 36 jobs")
    verdict = SimpleNamespace(status="inconclusive", reason="budget-bound (...)")
    t = budget_summary({"book/H3-law-magnitude": verdict}, short, long)
    assert t.loc[0, "converged"] == "0%"
    assert t.loc[0, "converged at 6000 steps, PARTIAL: 6 of 36 jobs"] == "100% of 27 probes"


def test_the_laws_are_inverted_at_each_bundles_own_vocabulary():
    small, large = _bundle(1500, 64, 500), _bundle(1500, 512, 500)
    a, b = views.law_errors(small), views.law_errors(large)
    eq15 = lambda t: t[t.theory == "Eq. 15 corrected"]["mean"].iloc[0]  # noqa: E731
    assert eq15(a) != pytest.approx(eq15(b))  # same κ*, another V: another prediction


def test_the_fits_compare_the_long_budget_with_the_short_one_on_the_same_searches():
    short = _bundle(1500, 512, 500)
    long = _bundle(6000, 512, 500, complete=False, partial="3 of 36 jobs")
    long.tables["searches"] = long.tables["searches"][long.tables["searches"].seed < 2]
    long.config["budget"] = "long"
    t = budgets.fits_by_budget(short, long)
    same = "1500 steps, the long grid's searches"
    assert list(t.budget) == ["1500 steps", same, "6000 steps, PARTIAL: 3 of 36 jobs"]
    assert list(t.searches) == [9, 6, 6]


def _three_budgets(long_complete=False, tuned_complete=False):
    short = _bundle(1500, 512, 1500)  # every probe at the cap
    long = _bundle(6000, 512, 6000, complete=long_complete, partial=None if long_complete else "6 of 36 jobs")
    tuned = _bundle(6000, 512, 500, complete=tuned_complete, partial=None if tuned_complete else "3 of 36 jobs")
    long.config["budget"], tuned.config["budget"] = "long", "tuned"
    tuned.tables["searches"] = tuned.tables["searches"][tuned.tables["searches"].seed < 1]
    return short, long, tuned


def test_three_budgets_side_by_side_and_the_verdicts_read_the_last_complete_one():
    """The tuned budget is named as such (its steps equal the long one's); each partial grid gets the short budget on
    its own searches before it; the verdicts read the tuned grid once complete, else the long one, else the short."""
    short, long, tuned = _three_budgets()
    assert budgets.budget_label(tuned) == "6000 steps, rate per cell, PARTIAL: 3 of 36 jobs"
    t = budgets.fits_by_budget(short, long, tuned)
    same = "1500 steps, the {} grid's searches".format
    assert list(t.budget) == [
        "1500 steps",
        same("long"),
        budgets.budget_label(long),
        same("tuned"),
        budgets.budget_label(tuned),
    ]
    assert list(t.searches) == [9, 9, 9, 3, 3]
    assert list(views.law_errors(short, long, tuned).budget.unique()) == list(t.budget)
    assert set(views.capacity_table(short, long, tuned).budget) == {
        "1500 steps",
        *map(budgets.budget_label, (long, tuned)),
    }
    assert budgets.judged_bundle(short, long, tuned) is short
    assert budgets.judged_bundle(short, *_three_budgets(long_complete=True)[1:]).config["budget"] == "long"
    both = _three_budgets(long_complete=True, tuned_complete=True)
    assert budgets.judged_bundle(*both) is both[2]
    assert budgets.judged_bundle(short, None, None) is short
    chart = views.budgets_chart(short, long, tuned).to_dict()
    assert len(chart["hconcat"]) == 3
    # its width does not grow with the data (page 5.1 at 1300 px: drawn unscaled, tools/browser_check.py): the
    # legends sit below the panels and only the first panel draws the (shared) y axis, whose labels widen with
    # the largest κ* committed
    assert chart["config"]["legend"]["orient"] == "bottom"
    y_axes = [[layer["encoding"]["y"].get("axis", {}) for layer in panel["layer"]] for panel in chart["hconcat"]]
    assert all(axis is not None for axis in y_axes[0]) and all(axis is None for p in y_axes[1:] for axis in p)


def test_a_budget_bound_reason_states_what_converged_at_the_other_budgets():
    """No prediction ("the long budget would settle it"): the measured share at each longer budget, on the committed
    bundles (the short budget complete, the longer ones partial while they run)."""
    from mamba_recall.chapters.ch5_synthesis.claims.synthesis import budget_reading, budget_summary, check_synthesis

    short = results.evidence("ch5_capacity", preset="cpu-hours")
    longer = [b for b in (budgets.long_bundle(), budgets.tuned_bundle()) if b is not None]
    if len(longer) < 2:
        pytest.skip("the long and tuned bundles are not both committed")
    v = check_synthesis("book/H3-law-magnitude", short, record=False, longer=longer)
    assert v.status == "inconclusive" and v.reason.startswith("budget-bound")
    assert "would settle" not in v.reason
    for b in longer:
        r = budget_reading("book/H3-law-magnitude", b)
        assert (
            0 < r["probes"] and f"{budgets.budget_label(b)}: {1 - r['share']:.0%} of {r['probes']} probes" in v.reason
        )
    alone = check_synthesis("book/H3-law-magnitude", short, record=False)
    assert "no longer budget is committed" in alone.reason
    t = budget_summary({"book/H3-law-magnitude": v}, short, *longer)
    assert [c for c in t.columns if c.startswith("converged at")] == [
        f"converged at {budgets.budget_label(b)}" for b in longer
    ]


def test_each_search_records_the_rate_its_run_trained_at():
    """The tuned grid's cells train at different rates: the bundle's searches carry each run's own rate, and its
    shared config names no single rate (a reader of the bundle is never told 10⁻² for a cell run at 3·10⁻²)."""
    runs = finished_runs(capacity.jobs_for("cpu-hours", budget="tuned"))
    if not runs:
        pytest.skip("no committed run of ch5_capacity_tuned")
    _, searches = capacity.tables(runs)
    # a cell is (layers, D, N): the two-layer (2, 16, 4) and the one-layer (1, 16, 4) train at their own rates
    want = {
        (r["config"]["layers"], r["config"]["D"], r["config"]["N"], r["seed"]): r["config"]["recipe"]["lr"]
        for r in runs
    }
    assert {(s.layers, s.D, s.N, s.seed): s.lr for s in searches.itertuples()} == want
    assert len(set(want.values())) > 1  # the sweep picked 3·10⁻² and 10⁻² in the first cells
    b = results.load_bundle(RESULTS_DIR / "ch5_capacity_tuned_cpu-hours.json")
    assert "per cell" in b.config["job_config"]["recipe"]["lr"]
    rates = {tuple(c[:3]): c[3] for c in b.config["rates"]}
    assert all(rates[(layers, D, N)] == lr for (layers, D, N, _), lr in want.items())


# --- the learning-rate sweep ---------------------------------------------------------------------------------------


def test_the_sweep_picks_the_best_rate_and_keeps_the_default_on_a_tie():
    assert pick_rate({0.003: 0.40, 0.01: 0.55, 0.03: 0.80}, 0.01) == 0.03
    assert pick_rate({0.003: 0.90, 0.01: 0.30, 0.03: 0.10}, 0.01) == 0.003
    assert pick_rate({0.003: 0.805, 0.01: 0.80, 0.03: 0.81}, 0.01) == 0.01  # within 0.01 of the best: the default
    assert pick_rate({0.003: 0.70, 0.01: 0.50, 0.03: 0.70}, 0.01) == 0.003  # an exact tie elsewhere: the smaller
    assert pick_rate({0.003: 0.05, 0.01: 0.05, 0.03: 0.05}, 0.01) == 0.01
    with pytest.raises(ValueError, match="default rate"):
        pick_rate({0.003: 0.5, 0.03: 0.6}, 0.01)
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        pick_rate({0.003: 1.5, 0.01: 0.6}, 0.01)
    rates = pd.DataFrame(
        [dict(layers=1, D=16, N=2, kappa=6, lr=lr, accuracy=a) for lr, a in ((0.003, 0.2), (0.01, 0.3), (0.03, 0.6))]
    )
    row = picked_rates(rates, 0.01).iloc[0]
    assert (row.lr, row.accuracy, row.default_accuracy, row.kappa) == (0.03, 0.6, 0.3, 6)


def test_the_sweeps_probe_sits_at_the_declared_rung():
    ladder = [2, 3, 4, 6, 8, 11, 16]
    assert sweep_kappa(2.97, ladder) == 6  # 1.5 × 2.97 = 4.45
    assert sweep_kappa(4.0, ladder) == 6  # 6.0 exactly: that rung
    assert sweep_kappa(20.0, ladder) == 16  # beyond the ladder: its last rung
    with pytest.raises(ValueError, match="censored"):
        sweep_kappa(float("nan"), ladder)


@pytest.mark.parametrize("preset", ["ci", "cpu-hours"])
def test_the_declared_kappa_table_is_the_rule_read_on_the_committed_short_budget(preset):
    from mamba_recall.chapters.ch5_synthesis.pipelines.synthesis import cell_capacity

    short = results.load_bundle(f"ch5_capacity_{preset}")
    assert short.data["complete"]
    want = sweep_kappas(cell_capacity(short.tables["searches"], 0.5), short.config["job_config"]["ladder"])
    assert {tuple(c[:3]): c[3] for c in SWEEP_KAPPA[preset]} == want


def test_the_sweep_is_declared_over_every_cell_at_three_rates_on_seed_0():
    jobs = capacity.sweep_jobs("cpu-hours")
    assert len(jobs) == 12 * 3 and {j["seed"] for j in jobs} == {0}
    assert {j["experiment"] for j in jobs} == {"ch5_capacity_lr_sweep"}
    assert sorted({j["config"]["recipe"]["lr"] for j in jobs}) == SWEEP_LRS and SWEEP_DEFAULT_LR in SWEEP_LRS
    assert {j["config"]["steps"] for j in jobs} == {6000}
    assert {(j["config"]["recipe"]["warmup"], j["config"]["recipe"]["hold"]) for j in jobs} == {(400, 1600)}
    with pytest.raises(ValueError, match="no κ per cell at preset paper"):
        capacity.sweep_jobs("paper")


def _sweep_runs(tmp_path):
    return sorted((tmp_path / "smoke" / "runs" / "ch5_capacity_lr_sweep").glob("*.json"))


def test_the_smoke_sweep_runs_and_the_tuned_grid_takes_its_rates_once_the_sweep_is_complete(
    tmp_path, monkeypatch, capsys
):
    """All through the grid command: the tuned grid stops naming the sweep's grid command while the sweep has no
    bundle or only a partial one; the sweep's smoke grid runs; once complete, the tuned grid takes its picked rates
    (and a partial sweep bundle never replaces the complete one)."""
    monkeypatch.setattr(results._bundles, "SMOKE_RESULTS_DIR", tmp_path / "smoke")
    sweep = ["ch5_capacity_lr_sweep", "--preset", "ci", "--smoke", "--no-estimate"]
    tuned = ["ch5_capacity_tuned", "--preset", "ci", "--smoke", "--aggregate-only"]
    first = "run the sweep first: python -m mamba_recall grid ch5_capacity_lr_sweep --preset ci --allow-long --smoke"
    with pytest.raises(SystemExit) as stopped:
        grid_command(tuned)  # no sweep bundle
    assert stopped.value.code == 2 and first in capsys.readouterr().err

    assert grid_command(sweep) == 0
    path = tmp_path / "smoke" / "ch5_capacity_lr_sweep_ci_smoke.json"
    b = results.load_bundle(path)
    rates, picked = b.tables["rates"], b.tables["picked"]
    assert b.data["complete"] and len(rates) == 2 * 3 and set(rates.lr) == set(SWEEP_LRS)
    assert b.command == "python -m mamba_recall grid ch5_capacity_lr_sweep --preset ci --allow-long"
    assert set(rates.kappa) == {8} and (rates.steps_run <= 4).all()
    assert len(picked) == 2 and set(picked.lr) <= set(SWEEP_LRS)

    # two probes gone: a partial bundle does not replace the complete one
    complete = path.read_bytes()
    for run in _sweep_runs(tmp_path)[:2]:
        run.unlink()
    with pytest.raises(SystemExit) as stopped:
        grid_command([*sweep, "--aggregate-only", "--partial"])
    assert stopped.value.code not in (0, None) and "not replacing" in str(stopped.value.code)
    assert path.read_bytes() == complete

    # with only the partial bundle there, the tuned grid still stops naming the sweep's grid command
    path.unlink()
    assert grid_command([*sweep, "--aggregate-only", "--partial"]) == 0
    assert results.load_bundle(path).data["partial"] == "4 of 6 jobs"
    with pytest.raises(SystemExit) as stopped:
        grid_command(tuned)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "incomplete: 4 of 6 jobs" in err and first in err, err

    # the same sweep command finishes it; then the tuned grid's jobs carry the picked rates
    assert grid_command(sweep) == 0
    picked = results.load_bundle(path).tables["picked"]
    capsys.readouterr()
    assert grid_command(tuned) == 0  # its grid exists now: counted (nothing run with --aggregate-only)
    tuned_jobs = capacity.jobs_for("ci", smoke=True, budget="tuned")
    assert f"{len(tuned_jobs)} jobs: 0 finished, {len(tuned_jobs)} left" in capsys.readouterr().out
    got = {(j["config"]["layers"], j["config"]["D"], j["config"]["N"]): j["config"]["recipe"]["lr"] for j in tuned_jobs}
    assert got == {(int(r.layers), int(r.D), int(r.N)): float(r.lr) for r in picked.itertuples()}
    assert {j["experiment"] for j in tuned_jobs} == {"ch5_capacity_tuned"}


def test_the_sweep_table_shows_each_rates_probe_and_the_rule_s_pick_only_for_finished_cells():
    rates = pd.DataFrame(
        [
            # a finished cell: 0.03 beats the default by more than the tie
            (1, 16, 4, 6, 0.003, 0.086, 3000, False),
            (1, 16, 4, 6, 0.01, 0.079, 2500, False),
            (1, 16, 4, 6, 0.03, 0.251, 3500, True),
            # a cell still running: one rate in
            (1, 64, 2, 16, 0.003, 0.060, 2500, False),
        ],
        columns=["layers", "D", "N", "kappa", "lr", "accuracy", "steps_run", "converged"],
    )
    full = rates.groupby(["layers", "D", "N"]).lr.transform("nunique") == 3
    sweep = SimpleNamespace(tables={"rates": rates, "picked": picked_rates(rates[full], 0.01)})
    t = views.sweep_results_table(sweep).set_index("cell (Λ, D, N)")
    assert t.loc["(1, 16, 4)", "picked"] == "0.03"
    assert t.loc["(1, 16, 4)", "lr 0.03: recall (steps)"] == "0.251 (3500*)"
    assert t.loc["(1, 16, 4)", "lr 0.01: recall (steps)"] == "0.079 (2500)"
    assert t.loc["(1, 64, 2)", "picked"] == "(not all rates run)"
    assert t.loc["(1, 64, 2)", "lr 0.01: recall (steps)"] == "not run yet"
    assert t.loc["(1, 64, 2)", "probe at κ"] == 16


def test_an_interrupted_search_replays_the_probes_it_kept(tmp_path, monkeypatch):
    """A search keeps each probe as it finishes (capacity.kept_probe); the same search run again (a grid stopped
    and resumed) trains only the probes it had not kept, and its run is the uninterrupted one's."""
    import dataclasses

    from mamba_recall.runstore import job_config

    monkeypatch.setattr(capacity, "PROBE_CACHE", tmp_path)
    job = capacity.jobs_for("ci", smoke=True)[0]
    # the smoke search, 40 steps, at a threshold its models pass, so that it probes both rungs (2, then 4)
    config, seed = dataclasses.replace(job_config(job), steps=40, thresholds=[0.01, 0.9]), job["seed"]
    first = capacity.run_job(config, seed)
    kept = {p.name: p for p in tmp_path.rglob("kappa*.json")}
    assert len(kept) == first["n_probes"] >= 2
    last = first["probes"][-1]["kappa"]
    kept[f"kappa{last}.json"].unlink()  # interrupted before its last probe was kept
    trained, real = [], capacity.probe
    monkeypatch.setattr(capacity, "probe", lambda c, s, k, **kw: trained.append(k) or real(c, s, k, **kw))
    again = capacity.run_job(config, seed)
    assert trained == [last]  # the kept probes were replayed, not trained again

    def without_time(r):
        return {**r, "train_seconds": None, "probes": [{**p, "seconds": None} for p in r["probes"]]}

    assert without_time(again) == without_time(first)
