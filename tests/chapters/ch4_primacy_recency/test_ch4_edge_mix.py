"""Chapter 4's Table 1 on the edge family (``chapters/ch4_primacy_recency/runners/edge_mix.py``): the primary recipe's evidence seeds,
each fine-tuned on s_mix's mixture from its committed checkpoint, measured as the page measures s_mix."""

from __future__ import annotations

import pytest

from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import EdgeFamily, checkpoint_path
from mamba_recall.chapters.ch4_primacy_recency.runners import edge_mix as M
from mamba_recall.presets import experiment, seeds
from mamba_recall.results import load_bundle
from mamba_recall.runstore import finished_runs, run_grid


def test_jobs_fine_tune_the_primary_recipes_evidence_seeds():
    """The declared base seeds are the ones the chapter judges its primary recipe on (so Table 1 is measured on the
    chapter's models), each job warm-starts from that seed's committed edge checkpoint with s_mix's mixture and
    the edge recipe's model and vocabulary, on a stream seed no base model trained on."""
    fam = EdgeFamily("cpu-hours")
    S = experiment(M.EXPERIMENT, "cpu-hours")
    assert S["base_recipe"] == fam.primary
    assert S["base_seeds"] == [r["seed"] for r in fam.evidence_runs(fam.primary)]
    edge = experiment("ch4_edge", "cpu-hours")["recipes"][S["base_recipe"]]
    for job in M.jobs_for("cpu-hours"):
        r = job["config"]["recipe"]
        assert checkpoint_path(r["init_from"]).exists()
        assert r["init_from"] == f"edge_{S['base_recipe']}_cpu-hours_seed{job['seed']}"
        assert r["model"] == edge["model"] and r["vocab"] == edge["vocab"]
        assert r["mix"] == experiment("ch4_train_s_mix", "ci")["mix"] and r["steps"] == 5000
        assert r["seed"] == seeds.EDGE_MIX_OFFSET + job["seed"] and r["seed"] not in range(10)


def test_unknown_base_recipe_is_named(monkeypatch):
    import mamba_recall.chapters.ch4_primacy_recency.runners.edge_mix as mod

    real = mod.experiment
    monkeypatch.setattr(
        mod, "experiment", lambda name, preset, smoke=False: {**real(name, preset, smoke=smoke), "base_recipe": "d9"}
    )
    with pytest.raises(ValueError, match="base recipe 'd9' is not an edge recipe"):
        M.jobs_for("cpu-hours")


def test_smoke_end_to_end(tmp_path, monkeypatch):
    """One smoke job through the run store (a handful of steps): the fine-tuned checkpoint is written, the edge gate
    decides whether it counts, and a model past it carries Table 1's stored measurement with its swapped null; the
    bundle lists the seed's rows."""
    monkeypatch.setattr(M, "smoke_bundle_dir", lambda: tmp_path / "smoke_results")
    from mamba_recall.chapters.ch4_primacy_recency.claims import check_transfer_family

    jobs = M.jobs_for("cpu-hours", smoke=True)
    run_grid(M.RUNNER, jobs[:1], store=tmp_path, progress=False, log=lambda _: None)
    (run,) = finished_runs(jobs, tmp_path)
    res = run["result"]
    assert res["base"] == jobs[0]["config"]["recipe"]["init_from"]
    assert set(res["gate"]["metrics"]) == {"L2_random", "L2_repeated"}
    rec = res["measurement"]
    if res["gate"]["passed"] and sum(res["channels_per_layer"]):
        assert "not_run" in rec or rec["control"]["kind"] == "null"
    else:
        assert "not_run" in rec
    read = {"name": "ch4_edge_mix_cpu-hours_smoke", "directory": tmp_path / "smoke_results", "record": False}
    said = []
    assert M.write_bundle("cpu-hours", store=tmp_path, smoke=True, log=said.append) is None  # unfinished: not asked
    assert not (tmp_path / "smoke_results").exists() and "--aggregate-only --partial" in said[-1]
    path = M.write_bundle("cpu-hours", store=tmp_path, smoke=True, log=lambda _: None, partial=True)
    assert path.parent == tmp_path / "smoke_results"
    assert load_bundle(path).data["partial"] == f"1 of {len(jobs)} jobs"
    v, bundle = check_transfer_family(**read)  # one of the jobs' seeds finished: a partial bundle, not judged
    assert v.status == "not run" and f"1 of {len(jobs)} seeds finished" in v.reason and bundle is None
    run_grid(M.RUNNER, jobs, store=tmp_path, progress=False, log=lambda _: None)
    M.write_bundle("cpu-hours", store=tmp_path, smoke=True, log=lambda _: None)
    v, bundle = check_transfer_family(**read)
    assert bundle.data["complete"] and "partial" not in bundle.data
    assert len(bundle.data["records"]) == bundle.data["jobs_finished"] == len(jobs) and not set(
        bundle.tables["transfer"]["seed"]
    ) - {j["seed"] for j in jobs}
    assert v.status in ("not run", "inconclusive", "not testable here")  # a smoke model (a few steps) decides nothing


def test_absent_bundle_is_not_run_with_its_command(tmp_path):
    from mamba_recall.chapters.ch4_primacy_recency.claims import check_transfer_family

    v, bundle = check_transfer_family(directory=tmp_path, record=False)
    assert v.status == "not run" and "runners.edge_mix --preset cpu-hours" in v.reason and bundle is None
