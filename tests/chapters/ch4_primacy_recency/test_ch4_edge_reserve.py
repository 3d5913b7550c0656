"""Chapter 4's edge family: the reserve-seed protocol of the 4-layer recipe d4 (chapters/ch4_primacy_recency/configs.py, declared before any
reserve seed ran): a recipe with reserve seeds is judged on the first three seeds, in seed order, past the edge gate,
an unfinished seed blocking those after it; a recipe without reserves keeps its three seeds, all of which must pass."""

from __future__ import annotations

import pytest

from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import EdgeFamily
from mamba_recall.chapters.ch4_primacy_recency.claims import check_family, family_table
from mamba_recall.chapters.ch4_primacy_recency.runners import edge as E
from mamba_recall.chapters.ch4_primacy_recency.runners import edge_jobs as J  # where jobs_for reads the sizes
from mamba_recall.presets import experiment

SIZES = experiment(E.EXPERIMENT, "cpu-hours")


def _run(recipe: str, seed: int, passed: bool) -> dict:
    """A checks record as the run store keeps it (only what the selection reads, plus one stored measurement)."""
    value = 1.0 if passed else 0.5
    return {
        "config": {"recipe_name": recipe},
        "seed": seed,
        "result": {
            "gate": {"passed": passed, "metrics": {"L2_random": value, "L2_repeated": value}},
            "measurements": {"004/Fig3a": {"not_run": "synthetic"}},
            "at": 16,
            "L_p": 16,
        },
    }


def _runs(recipe: str, outcomes: dict[int, bool]) -> list[dict]:
    return [_run(recipe, k, ok) for k, ok in outcomes.items()]


def test_presets_declare_d4_reserves_outside_the_recipe():
    for preset in ("cpu-hours", "paper"):
        sizes = experiment(E.EXPERIMENT, preset)
        assert E.reserve_seeds(sizes) == {"d4": (3, 4, 5), "d4_zinit": (3, 4, 5)}
        for recipe in ("d4", "d4_zinit"):  # the recipe (hence its jobs' configs) is untouched
            assert "reserve_seeds" not in sizes["recipes"][recipe]
        assert E.declared_seeds(sizes, "d4") == (0, 1, 2, 3, 4, 5) and E.declared_seeds(sizes, "d2") == (0, 1, 2)


def test_reserves_skip_failures_in_seed_order():
    """0 passes, 1 and 2 fail, 3 and 4 pass → judged on 0, 3, 4 (seed 5, untrained, is not needed)."""
    runs = _runs("d4", {0: True, 1: False, 2: False, 3: True, 4: True})
    sel = E.evidence_seeds("d4", runs, SIZES)
    assert sel.evidence == (0, 3, 4) and sel.complete and sel.reserve == (3, 4, 5)
    assert sel.passed == (0, 3, 4) and sel.pending == (5,)
    assert "seed(s) 1, 2 failed it" in sel.why
    assert sel.summary().startswith("d4: seeds passing 0, 3, 4 of seeds 0–4 trained (3 of 6 declared seeds 0–5;")
    assert "seed 1 failed (L2_random 0.500, L2_repeated 0.500)" in sel.summary()
    assert E.primary_recipe(runs, SIZES) == "d4"  # d4 is first of PRIMARY_ORDER


def test_first_three_passing_count_later_seeds_do_not():
    runs = _runs("d4", {0: True, 1: True, 2: False, 3: True, 4: True, 5: True})
    assert E.evidence_seeds("d4", runs, SIZES).evidence == (0, 1, 3)


def test_a_pending_seed_blocks_the_seeds_after_it():
    """Seed 3 has not finished: 4 and 5 (both passed) cannot count before it, whatever finished first."""
    runs = _runs("d4", {0: True, 1: False, 2: False, 4: True, 5: True})
    sel = E.evidence_seeds("d4", runs, SIZES)
    assert sel.evidence == (0,) and not sel.complete and sel.pending == (3,)
    assert "seed 3 has not finished, so seeds 4, 5 cannot count before it" in sel.why
    assert E.primary_recipe(runs, SIZES) is None
    # once seed 3 finishes (passing), the same seeds count as if every run had finished in order
    done = E.evidence_seeds("d4", runs + [_run("d4", 3, True)], SIZES)
    assert done.evidence == (0, 3, 4) and done.complete


def test_fewer_than_three_passing_is_not_primary_and_says_why():
    runs = _runs("d4", {0: True, 1: False, 2: False, 3: False, 4: True, 5: False})
    sel = E.evidence_seeds("d4", runs, SIZES)
    assert not sel.complete and sel.evidence == (0, 4)
    assert sel.why == "not complete: only 2 of its declared seeds 0–5 passed the edge gate (0, 4), 3 are needed"
    # the next recipe of PRIMARY_ORDER with 3 passing seeds is primary instead
    other = _runs("d2_bos", {0: True, 1: True, 2: True})
    assert E.primary_recipe(runs + other, SIZES) == "d2_bos"
    fam = EdgeFamily.from_runs(runs + other)
    assert "not complete: only 2 of its declared seeds 0–5 passed" in fam.status()
    assert fam.status().startswith(
        "d2_bos: 3 of 3 checked seeds past the edge gate, d4: seeds passing 0, 4 of seeds 0–5"
    )
    assert "on the first 3 seeds of 0–5 past the gate, in seed order" in fam.status()  # the rule, from the library


def test_recipes_without_reserves_keep_the_old_rule():
    """Three seeds, all must pass; one failing seed keeps the recipe from being primary and stays in its verdicts."""
    ok = _runs("d2_bos", {0: True, 1: True, 2: True})
    sel = E.evidence_seeds("d2_bos", ok, SIZES)
    assert sel.evidence == (0, 1, 2) and sel.complete and sel.reserve == ()
    bad = _runs("d2_bos", {0: True, 1: False, 2: True})
    sel = E.evidence_seeds("d2_bos", bad, SIZES)
    assert sel.evidence == (0, 1, 2) and not sel.complete and sel.why == "seed(s) 1 failed the edge gate"
    two = _runs("d2_bos", {0: True, 2: True})
    assert E.evidence_seeds("d2_bos", two, SIZES).why == "seed(s) 1 not checked yet"
    assert E.primary_recipe(bad, SIZES) is None and E.primary_recipe(two, SIZES) is None
    fam = EdgeFamily.from_runs(bad)
    line, rule = fam.status().split(". ", 1)
    assert line == "d2_bos: 2 of 3 checked seeds past the edge gate"  # today's text
    assert rule == E.primary_rule(SIZES) and rule.startswith(
        "primary recipe: the first of d4, d4_long, d4_zinit, d2_bos"
    )


def test_bad_inputs_name_the_fix():
    with pytest.raises(ValueError, match="not one of its declared seeds"):
        E.evidence_seeds("d2", _runs("d2", {3: True}), SIZES)
    with pytest.raises(ValueError, match="two checks records of d4 seed 0"):
        E.evidence_seeds("d4", _runs("d4", {0: True}) * 2, SIZES)
    with pytest.raises(ValueError, match="unknown edge recipe 'd9'"):
        E.reserve_seeds({**SIZES, "reserve_seeds": {"d9": [3]}})
    with pytest.raises(ValueError, match="distinct integers ≥ seeds = 3 in increasing order"):
        E.reserve_seeds({**SIZES, "reserve_seeds": {"d4": [4, 3]}})
    with pytest.raises(ValueError, match="distinct integers"):
        E.reserve_seeds({**SIZES, "reserve_seeds": {"d4": [2, 3]}})


def test_check_family_judges_the_evidence_seeds():
    """check_family and the family table judge d4 on the seeds the rule picks (0, 3, 4), not on all trained seeds."""
    runs = _runs("d4", {0: True, 1: False, 2: False, 3: True, 4: True, 5: False})
    fam = EdgeFamily.from_runs(runs)
    assert [r["seed"] for r in fam.evidence_runs("d4")] == [0, 3, 4]
    v = check_family("004/Fig3a", fam, "d4", record=False)
    assert v.status == "not run" and "synthetic" in v.reason
    assert list(family_table(fam).columns) == ["d4 (3 seeds)"]
    blocked = EdgeFamily.from_runs(_runs("d4", {0: False, 2: True}))
    v = check_family("004/Fig3a", blocked, "d4", record=False)
    assert v.status == "not run" and "no checked seed of the edge family's recipe d4 counts yet" in v.reason
    assert "seed 1 has not finished" in v.reason


def test_jobs_grow_by_the_reserves_and_keep_their_keys(monkeypatch):
    """Adding the reserves adds the jobs of seeds 3–5 of d4 and d4_zinit only: every job of the grid without them
    keeps its config and key."""
    jobs = {j["key"]: j for j in E.jobs_for("cpu-hours")}
    sizes = E.edge_sizes("cpu-hours", False)
    monkeypatch.setattr(J, "edge_sizes", lambda preset, smoke: {k: v for k, v in sizes.items() if k != "reserve_seeds"})
    before = {j["key"]: j for j in E.jobs_for("cpu-hours")}
    assert len(jobs) == 27 and len(before) == 21 and set(before) <= set(jobs)
    assert all(jobs[k]["config"] == j["config"] for k, j in before.items())
    new = [j for k, j in jobs.items() if k not in before]
    assert sorted((j["config"]["recipe_name"], j["seed"]) for j in new) == [
        (r, k) for r in ("d4", "d4_zinit") for k in (3, 4, 5)
    ]
    assert all(j["config"]["recipe"]["seed"] == j["seed"] for j in new)
    assert all(j["config"]["model_name"] == f"edge_{j['config']['recipe_name']}_cpu-hours_seed{j['seed']}" for j in new)


def test_committed_jobs_and_bundle_keep_their_numbers():
    """The committed training runs are found under the same keys (26 of 27 jobs finished: the seeds 0-5 of d4 and
    d4_zinit all trained, d4_long's seed 2 not), the committed checks bundle's primary recipe is what the rule picks
    from its runs, d4 counts its seeds 0 and 3, the two of its six that passed the edge gate, so it is not complete,
    and d4_zinit counts its seeds 1, 3 and 5, so it is the primary recipe."""
    import json

    from mamba_recall.paths import RESULTS_DIR
    from mamba_recall.runstore import finished_runs

    from mamba_recall.runstore import RUNS_DIR

    jobs = {j["key"]: j for j in E.jobs_for("cpu-hours")}
    assert len(jobs) == 27 and len(finished_runs(list(jobs.values()))) == 26
    for path in sorted((RUNS_DIR / E.EXPERIMENT).glob("*.json")):  # every committed run: same key, same config
        stored = json.loads(path.read_text())
        assert jobs[path.stem]["config"] == stored["config"]
    checks = E.checks_jobs("cpu-hours")
    assert len(checks) == 26 and len(finished_runs(checks)) == 26
    bundle = json.loads((RESULTS_DIR / "ch4_edge_checks_cpu-hours.json").read_text())
    runs = [{"recipe": r["recipe"], "seed": r["seed"], "gate": r["gate"]} for r in bundle["data"]["records"]]
    assert E.primary_recipe(runs, SIZES) == bundle["data"]["primary_recipe"] == "d4_zinit"
    sel = E.evidence_seeds("d4", runs, SIZES)
    assert sel.evidence == (0, 3) and not sel.complete
    assert "only 2 of its declared seeds 0–5 passed the edge gate (0, 3), 3 are needed" in sel.why
    sel = E.evidence_seeds("d4_zinit", runs, SIZES)
    assert sel.evidence == (1, 3, 5) and sel.complete
    fam = EdgeFamily("cpu-hours")
    assert fam.primary == "d4_zinit" and [r["seed"] for r in fam.evidence_runs("d4_zinit")] == [1, 3, 5]
    assert [r["seed"] for r in fam.evidence_runs("d2_bos")] == [0, 1, 2]
    assert [r["seed"] for r in fam.evidence_runs("d2_smalldt")] == [0, 1, 2]  # failing seeds stay in its verdicts


def test_aggregation_with_the_protocol_reproduces_the_committed_bundles(tmp_path, monkeypatch):
    """Both bundles re-aggregated from the committed run store with this code (into a temporary directory; the edge
    bundle by the grid, the checks bundle by the runner's --checks): every
    table byte-for-byte the committed CSV, the data and the config the same apart from the command's git state."""
    import json

    from mamba_recall import results
    from mamba_recall.paths import RESULTS_DIR

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(results._bundles, "RESULTS_DIR", tmp_path)  # where save_bundle reads it
    E.main(["--preset", "cpu-hours", "--aggregate-only"])  # 26 of 27 jobs: no bundle unless asked for a partial one
    assert not (tmp_path / "ch4_edge_cpu-hours.json").exists()
    E.main(["--preset", "cpu-hours", "--aggregate-only", "--partial"])  # the edge bundle, marked partial
    E.main(["--checks", "--preset", "cpu-hours", "--aggregate-only"])  # the checks bundle
    git = {"HEAD", "all_clean", "dirty_files", "dirty_files_as_run_equal_HEAD"}
    for name in ("ch4_edge_cpu-hours", "ch4_edge_checks_cpu-hours"):
        ours, committed = (  # data and config as loaded: a NaN is written as null (listed in "nonfinite"), read as NaN
            dict(json.loads((d / f"{name}.json").read_text()), data=b.data, config=b.config)
            for d in (tmp_path, RESULTS_DIR)
            for b in [results.load_bundle(d / f"{name}.json")]
        )
        assert sorted(ours["tables"]) == sorted(committed["tables"])
        for table in committed["tables"]:
            assert (tmp_path / f"{name}.{table}.csv").read_bytes() == (RESULTS_DIR / f"{name}.{table}.csv").read_bytes()
        for b in (ours, committed):  # the runs' summary (data["runs"]) holds the command's git state too
            b["data"]["runs"] = {k: v for k, v in b["data"]["runs"].items() if k not in git}
        changed = {k for k in committed["data"] if committed["data"][k] != ours["data"].get(k)}
        assert list(ours["data"]) == list(committed["data"])
        assert changed == set() and ours["config"] == committed["config"]
        if name == "ch4_edge_cpu-hours":
            assert ours["config"]["sizes"]["reserve_seeds"] == {"d4": [3, 4, 5], "d4_zinit": [3, 4, 5]}


def test_plan_counts_the_edge_family_as_its_committed_bundle_does():
    """``plan`` at cpu-hours reads ch4_edge as its committed bundle records it, 26 of its 27 jobs: the one left is
    d4_long's seed 2, a run genuinely missing (stopped at step 12,000 of 16,000 and never finished, so no run file
    and no checkpoint; the overview says so), about an hour on one thread (seeds 0 and 1 took 3,721 s and 2,982 s).
    The grid command that would run it is the experiment's own."""
    from mamba_recall import plan
    from mamba_recall.paths import RESULTS_DIR
    from mamba_recall.results import load_bundle
    from mamba_recall.runstore import pending

    row = plan.plan("cpu-hours", log=lambda *a: None).set_index("experiment").loc["ch4_edge"]
    data = load_bundle("ch4_edge_cpu-hours").data
    assert (row.jobs, row.finished, row.left) == (data["jobs_total"], data["jobs_finished"], 1) == (27, 26, 1)
    assert data["partial"] == "26 of 27 jobs" and data["complete"] is False  # written marked (the grid's --partial)
    assert row.committed and row.command == "python -m mamba_recall grid ch4_edge --preset cpu-hours --allow-long"
    _, left = pending(E.jobs_for("cpu-hours"))
    assert [(j["config"]["recipe_name"], j["seed"]) for j in left] == [("d4_long", 2)]
    assert not (RESULTS_DIR / "checkpoints" / "ch4_edge_d4_long_cpu-hours_seed2.json").exists()
    assert data["seeds_per_recipe"]["d4_long"] == 2
