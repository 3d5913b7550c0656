"""Issue 30, one name per experiment: every checkpoint is named by one convention
(:func:`mamba_recall.results.checkpoint_file`), ``<experiment>[_<model>]_<preset>[_<key><value>…][_seed<s>]``, and a
committed one is renamed (:func:`mamba_recall.results.rename_checkpoint`) without losing how it was made."""

from __future__ import annotations

import json
import re

import pytest
import torch

from mamba_recall import manifest, results
from mamba_recall.paths import REPO_ROOT
from mamba_recall.presets import EXPERIMENTS

PRESETS = ("ci", "cpu-hours", "paper")


def test_the_one_convention():
    f = results.checkpoint_file
    assert f("ch1_k1", "ci").name == "ch1_k1_ci.pt"
    assert f("ch1_wo", "cpu-hours", model="identity", seed=3).name == "ch1_wo_identity_cpu-hours_seed3.pt"
    assert f("ch3_keep_nth", "cpu-hours", model="s6pe", T=50, seed=0).name == "ch3_keep_nth_s6pe_cpu-hours_T50_seed0.pt"
    assert f("ch3_keep_nth", "ci", model="s6pe", T=None).name == "ch3_keep_nth_s6pe_ci.pt"
    for bad in ("ch3.keep_nth", "keep_nth", "ch3"):
        with pytest.raises(ValueError, match="ch<N>_<name>, e.g. 'ch3_keep_nth'"):
            f(bad, "ci")


def test_every_committed_checkpoint_is_named_by_an_experiment_and_a_preset():
    """The stem of each checkpoint in the manifest starts with a known experiment's name, followed
    by an optional model and the preset it was made at (then its other parts and its seed)."""
    experiments = sorted(set(EXPERIMENTS) | {"ch4_edge", "ch4_edge_mix"}, key=len)
    checked = 0
    for entry in manifest.load():
        if entry.kind != "checkpoint":
            continue
        owners = [e for e in experiments if entry.name.startswith(e + "_")]
        assert owners, f"{entry.name}: no experiment's name starts it"
        rest = entry.name[len(owners[-1]) + 1 :]
        assert re.fullmatch(rf"([a-z0-9_]+_)?({'|'.join(PRESETS)})(_T\d+)?(_seed\d+)?", rest), entry.name
        checked += 1
    assert checked >= 80, checked


def test_a_renamed_checkpoint_loads_under_its_new_name_and_keeps_its_provenance(tmp_path):
    old = results.save_checkpoint(
        tmp_path / "ch9_old_ci.pt", {"w": torch.ones(2)}, {"config": {"a": 1}}, command="python -m x --preset ci"
    )
    before = json.loads(old.with_suffix(".json").read_text())
    new = results.rename_checkpoint(old, results.checkpoint_file("ch9_new", "ci", directory=tmp_path))
    assert not old.exists() and not old.with_suffix(".json").exists()
    payload, sidecar = results.read_checkpoint(new, regenerate="x")  # its sha256 and content hash check out
    assert torch.equal(payload["w"], torch.ones(2))
    assert sidecar["file"] == "ch9_new_ci.pt" and sidecar["renamed_from"] == ["ch9_old_ci.pt"]
    assert sidecar["provenance"] == before["provenance"] and sidecar["command"] == before["command"]
    with pytest.raises(ValueError, match="exists"):
        results.rename_checkpoint(new, new)


def test_the_committed_renames_are_recorded_in_their_sidecars():
    # (ch4_train_s_small_ci, once ch4_s_small.pt, was remade under its own name through the run store: no rename)
    for name, was in (("ch3_keep_nth_s6pe_cpu-hours_T50_seed0", "ch3_keep_s6pe_cpu-hours_T50_s0.pt"),):
        sidecar = json.loads((REPO_ROOT / f"results/checkpoints/{name}.json").read_text())
        assert sidecar["renamed_from"] == [was] and sidecar["file"] == f"{name}.pt"


def test_the_manifest_keeps_a_renamed_checkpoint_s_claims(tmp_path):
    """``manifest --write`` without a scorecard keeps each entry's claims by name; a checkpoint renamed since keeps
    those of its old name (its sidecar's ``renamed_from``), instead of silently losing them."""
    (tmp_path / "results" / "checkpoints").mkdir(parents=True)
    old = results.save_checkpoint(
        tmp_path / "results/checkpoints/ch9_old_ci.pt", {"w": torch.ones(1)}, {}, command="python -m x --preset ci"
    )
    manifest.write({"ch9_old_ci": ("009/Claim",)}, root=tmp_path)
    results.rename_checkpoint(old, results.checkpoint_file("ch9_new", "ci", directory=old.parent))
    manifest.write(root=tmp_path)
    entries = {e.name: e for e in manifest.load(tmp_path / "results" / "manifest.json")}
    assert set(entries) == {"ch9_new_ci"} and entries["ch9_new_ci"].claims == ("009/Claim",)
