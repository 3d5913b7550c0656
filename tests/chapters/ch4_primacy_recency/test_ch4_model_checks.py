"""``ch4_model_checks``, the claims of §4.1–§4.4 judged on each committed S-model, as a declared experiment: one
run-store job per model (``python -m mamba_recall grid ch4_model_checks --preset ci``), one bundle
``results/ch4_model_checks_<preset>.json``, and the runner's own ``--checkpoint PATH --name X`` on any checkpoint."""

from __future__ import annotations

import json

import pytest

from mamba_recall import results
from mamba_recall.chapters.ch4_primacy_recency.runners import model_checks as M
from mamba_recall.experiment import experiment_named, grid_command
from mamba_recall.paths import REPO_ROOT
from mamba_recall.presets import PresetError, experiment

COMMITTED = "ch4_model_checks_ci"


def test_one_job_per_model_naming_its_checkpoint_and_hash():
    jobs = experiment_named(M.EXPERIMENT).grid_jobs("ci")
    assert [j["config"]["model"] for j in jobs] == experiment(M.EXPERIMENT, "ci")["models"]
    for job in jobs:
        c = job["config"]
        sidecar = json.loads((REPO_ROOT / c["checkpoint"]).with_suffix(".json").read_text())
        assert c["checkpoint"] == f"results/checkpoints/ch4_train_{c['model']}_ci.pt"
        assert c["checkpoint_sha256"] == sidecar["sha256"] and c["sizes_preset"] == "ci" and not c["smoke"]
    (smoke,) = M.jobs_for("ci", smoke=True)  # a smoke run: the first model, at the ci sizes
    assert smoke["config"]["model"] == jobs[0]["config"]["model"] and smoke["key"] != jobs[0]["key"]
    with pytest.raises(PresetError, match="no 'cpu-hours' preset"):
        M.jobs_for("cpu-hours")


def test_the_committed_bundle_is_the_grid_s_one_layout_of_every_model():
    b = results.load_bundle(COMMITTED)
    models = experiment(M.EXPERIMENT, "ci")["models"]
    assert b.command == "python -m mamba_recall grid ch4_model_checks --preset ci --allow-long"
    assert b.data["complete"] and b.data["jobs_finished"] == len(models) == 3
    claims, cards = M.judged_claims(b.data["results"]), b.tables["models"]
    assert list(claims.columns) == ["model", "claim_id", "status", "ours", "reason"]
    # the bundle holds measurements, never a verdict: the statuses are the rules' reading now
    assert "claims" not in b.tables and {"runs", "cells"} <= set(b.tables)
    assert all("status" not in rec for r in b.data["results"] for rec in r["measurements"].values())
    assert list(cards.model) == models and cards.converged.all()
    for m in models:  # every claim of §4.1–§4.4, in the order claim_inputs measures them
        assert list(claims[claims.model == m].claim_id) == list(M.CLAIM_IDS)


def test_the_grid_judges_one_model_into_a_scratch_store_and_resumes(tmp_path, capsys):
    """The grid route on one model (a smoke run: the first model of the list at the ci sizes) into a scratch store:
    the bundle beside the store, our numbers those of the committed bundle for that model (the same library calls),
    every status *not run* (a smoke run is never evidence); the same command again judges nothing."""
    store = tmp_path / "runs"
    argv = [M.EXPERIMENT, "--preset", "ci", "--smoke", "--store", str(store), "--no-estimate"]
    assert grid_command(argv) == 0
    (run,) = store.glob(f"{M.EXPERIMENT}/*.json")
    b = results.load_bundle(tmp_path / f"{COMMITTED}_smoke.json")
    claims = M.judged_claims(b.data["results"])
    assert set(claims.model) == {"s_small"} and set(claims.status) == {"not run"}
    committed = M.judged_claims(results.load_bundle(COMMITTED).data["results"])
    ours = committed[committed.model == "s_small"].reset_index(drop=True)
    assert claims["ours"].equals(ours["ours"]) and claims["claim_id"].equals(ours["claim_id"])
    written = run.stat().st_mtime_ns
    capsys.readouterr()
    assert grid_command(argv) == 0
    assert run.stat().st_mtime_ns == written and "1 finished (skipped), 0 left" in capsys.readouterr().out


def test_the_runner_judges_any_checkpoint_by_its_own_option(tmp_path, monkeypatch):
    """``--checkpoint PATH --name X``: any checkpoint measured, the bundle ``ch4_model_checks_<X>_<preset>`` with the
    experiment's ``models`` table and ``data.results``; on a committed model its judged verdicts are the committed
    bundle's for it."""
    committed = M.judged_claims(results.load_bundle(COMMITTED).data["results"])
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(results._bundles, "RESULTS_DIR", tmp_path)  # where save_bundle reads it
    path = "results/checkpoints/ch4_train_s_mix_ci.pt"
    assert M.main(["--checkpoint", str(REPO_ROOT / path), "--name", "mixed"]) == 0
    b = results.load_bundle(tmp_path / "ch4_model_checks_mixed_ci.json")
    assert b.command.startswith(f"{M.runner_command(M.EXPERIMENT)} --checkpoint ") and "--name mixed" in b.command
    theirs = committed[committed.model == "s_mix"].drop(columns="model").reset_index(drop=True)
    judged = M.judged_claims(b.data["results"])
    assert judged.drop(columns="model").equals(theirs) and set(judged.model) == {"mixed"}


def test_the_runner_s_command_line():
    with pytest.raises(SystemExit):
        M.main(["--checkpoint", "x.pt"])  # needs --name
    with pytest.raises(SystemExit):
        M.main(["--checkpoint", "x.pt", "--name", "../x"])  # the name names a bundle
    with pytest.raises(SystemExit):
        M.main(["--model", "s_small"])  # the declared models run by the grid: no per-model option
    with pytest.raises(SystemExit):
        M.main(["--preset", "cpu-hours", "--aggregate-only"])  # no grid at that preset: one line saying so
    with pytest.raises(FileNotFoundError, match="regenerate"):
        M.check_checkpoint(REPO_ROOT / "nonexistent" / "ch4_x.pt", "x")


def test_plan_lists_the_grid_complete_at_ci():
    from mamba_recall import plan

    row = plan.plan("ci", log=lambda *a: None).set_index("experiment").loc[M.EXPERIMENT]
    assert (row.jobs, row.finished, row.left, row.committed) == (3, 3, 0, True)
    assert (
        row.bundle == COMMITTED
        and row.command == f"python -m mamba_recall grid {M.EXPERIMENT} --preset ci --allow-long"
    )


def test_stored_measurements_judge_as_check_judges_the_same_inputs():
    """What a job stores (:func:`measure_inputs`) and page 4.7 judges (:func:`judged_claims`) reads as
    ``check(claim, *args, ctx=, side=)`` read the same inputs inside the job before: status, numbers and reason, claim
    by claim, on the committed s_small."""
    from types import SimpleNamespace

    import torch

    from mamba_recall.claims import check

    path = REPO_ROOT / "results/checkpoints/ch4_train_s_small_ci.pt"
    model, vocab, side = M.load_checkpoint(path)
    side = {"source": str(path.relative_to(REPO_ROOT)), **side}
    ctx = SimpleNamespace(preset="ci", device=torch.device("cpu"), smoke=False)
    inputs = M.claim_inputs(model, vocab, "ci", "cpu")
    judged = M.judged_claims([{"model": "s_small", "measurements": M.measure_inputs(inputs, ctx=ctx, side=side)}])
    assert list(judged.claim_id) == list(M.CLAIM_IDS)
    for row in judged.itertuples():
        v = check(row.claim_id, *inputs[row.claim_id], ctx=ctx, side=side, record=False)
        assert (row.status, row.ours, row.reason) == (v.status, v.ours, v.reason), row.claim_id
