"""``ch4_train`` through the run store: one job per S-model at ci and paper, the warm-started recipe in a second
stage after the model it starts from, the bundle of every finished model, and a second run that trains nothing."""

from __future__ import annotations

import pytest

from mamba_recall import results
from mamba_recall.chapters.ch4_primacy_recency.runners import train as T


def test_the_jobs_of_each_preset():
    ci = T.jobs_for("ci")
    assert [j["config"]["model"] for j in ci] == ["s_small", "s_small_seed1", "s_mix", "s_m2"]
    assert [j["seed"] for j in ci] == [j["config"]["recipe"]["seed"] for j in ci] == [0, 1, 1, 0]
    assert all("device" not in j["config"] for j in ci)  # ci trains on the CPU
    paper = T.jobs_for("paper")
    assert {j["config"]["model"] for j in paper} == set(T.MODELS) and {j["config"]["device"] for j in paper} == {"auto"}
    assert [j["config"]["model"] for j in T.jobs_for("ci", ["s_deep"])] == ["s_deep"]  # made on request, in no grid
    with pytest.raises(ValueError, match="train at ci, paper"):
        T.jobs_for("cpu-hours")
    assert T.model_file("s_small", "ci", smoke=True).name == "ch4_train_s_small_ci_smoke.pt"
    assert T.model_file("s_small", "ci", smoke=True).is_relative_to(results.BUILD_DIR / "smoke")  # never results/


def test_a_smoke_grid_trains_the_warm_start_after_its_source_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(results, "SMOKE_RESULTS_DIR", tmp_path / "smoke")
    monkeypatch.setattr(results._bundles, "SMOKE_RESULTS_DIR", tmp_path / "smoke")  # where the writers read it
    store = tmp_path / "runs"
    args = ["--preset", "ci", "--smoke", "--store", str(store), "--jobs", "1", "--only", "s_small", "s_mix"]
    assert T.main(args) == 0
    out = capsys.readouterr()
    log = out.out + out.err
    assert log.index("[s_small] done") < log.index("[s_mix] done")  # s_mix's stage comes after s_small's
    assert (tmp_path / "smoke/checkpoints/ch4_train_s_mix_ci_smoke.pt").is_file()
    (bundle,) = store.parent.rglob("ch4_train_ci_smoke.json")
    b = results.load_bundle(bundle)
    assert list(b.tables["models"].model) == ["s_small", "s_mix"] and not b.data["complete"]  # 2 of the 4
    files = {p: p.stat().st_mtime_ns for p in store.rglob("*.json")}
    recorded = ["--models" if a == "--only" else a for a in args]  # as the committed sidecars spell it
    assert T.main(recorded) == 0
    assert {p: p.stat().st_mtime_ns for p in store.rglob("*.json")} == files  # nothing trained again


@pytest.mark.parametrize("flag", ["--models", "--model", "--only"])
def test_models_is_the_grids_only_and_s_deep_is_in_no_ci_grid(flag, tmp_path):
    """``--models`` and ``--model`` (the recorded spellings) are the grid's ``--only``: at ci, ``s_deep`` (its CPU recipe
    stalled, not committed) is no job of the grid, and the command stops naming the models that are."""
    args = ["--preset", "ci", "--aggregate-only", "--store", str(tmp_path / "runs"), flag, "s_deep"]
    with pytest.raises(SystemExit) as exc:
        T.main(args)
    assert exc.value.code == (
        "--only s_deep: no job of ch4_train at preset ci (stage 1 of 2) has the value 's_deep'; the fields that tell "
        "its jobs apart: model (s_small, s_small_seed1, s_m2, s_mix)."
    )
    assert not (tmp_path / "runs").exists()  # nothing counted or written
