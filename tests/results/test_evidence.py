"""``results.evidence(name)``, the one loader of an experiment's evidence: the strongest complete committed bundle wins,
an incomplete one is refused (or skipped for weaker evidence, saying so), a missing one names the command that makes
it; and no chapter module reads a bundle with ``load_bundle`` behind its back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mamba_recall import results

SRC = Path(results.__file__).resolve().parents[1]
COMMAND = "python -m mamba_recall.chapters.ch9_demo.runners.grid --preset {preset} --allow-long"


def _save(directory: Path, preset: str, *, complete: bool = True, **data) -> None:
    results.save_bundle(
        f"ch9_grid_{preset}",
        {"complete": complete, "jobs_finished": 9 if complete else 3, "jobs_total": 9, **data},
        {"preset": preset},
        command=COMMAND.format(preset=preset),
        directory=directory,
    )


def test_the_strongest_complete_preset_wins_and_is_named(tmp_path):
    said = []
    _save(tmp_path, "ci")
    assert results.evidence("ch9_grid", directory=tmp_path, log=said.append).name == "ch9_grid_ci"
    _save(tmp_path, "cpu-hours")
    assert results.evidence("ch9_grid", directory=tmp_path, log=said.append).name == "ch9_grid_cpu-hours"
    _save(tmp_path, "paper")
    assert results.evidence("ch9_grid", directory=tmp_path, log=said.append).name == "ch9_grid_paper"
    assert said == ["using ch9_grid_ci", "using ch9_grid_cpu-hours", "using ch9_grid_paper"]
    # a preset asked for is that preset's bundle, not the strongest one
    assert results.evidence("ch9_grid", preset="ci", directory=tmp_path).name == "ch9_grid_ci"
    assert results.evidence("ch9_grid", directory=tmp_path).name == "ch9_grid_paper"  # quiet by default


def test_an_incomplete_bundle_is_refused_or_skipped_saying_so(tmp_path):
    _save(tmp_path, "ci")
    _save(tmp_path, "cpu-hours", complete=False)
    with pytest.raises(results.BundleIncomplete, match=r"ch9_grid_cpu-hours is incomplete: 3 of 9 jobs") as info:
        results.evidence("ch9_grid", preset="cpu-hours", directory=tmp_path)
    assert COMMAND.format(preset="cpu-hours") in str(info.value)  # how to finish it
    assert isinstance(info.value, results.BundleMissing)  # a reader may answer it with weaker evidence, saying so
    said = []
    assert results.evidence("ch9_grid", directory=tmp_path, log=said.append).name == "ch9_grid_ci"
    assert said == ["using ch9_grid_ci; skipped ch9_grid_cpu-hours (incomplete: 3 of 9 jobs)"]
    # a page that shows a running grid beside the evidence asks for it, and gets it as it is
    partial = results.evidence("ch9_grid", preset="cpu-hours", directory=tmp_path, complete=False)
    assert partial.data["complete"] is False
    # nothing complete at all: refused, naming what was skipped and the command that finishes it
    (tmp_path / "ch9_grid_ci.json").unlink()
    with pytest.raises(results.BundleMissing, match="no complete bundle ch9_grid_<preset>") as info:
        results.evidence("ch9_grid", directory=tmp_path)
    assert "ch9_grid_cpu-hours (incomplete: 3 of 9 jobs)" in str(info.value)
    assert COMMAND.format(preset="cpu-hours") in str(info.value)


def test_lacks_skips_a_stronger_bundle_without_the_checked_cell(tmp_path):
    """Tab. A.1's S4D±PE at T = 20 is in Chapter 3's ci grid, not in the cpu-hours one: the check asks for the cell."""
    _save(tmp_path, "ci")
    _save(tmp_path, "cpu-hours")
    said = []
    lacks = lambda b: "no T = 20 cell" if b.config["preset"] == "cpu-hours" else None  # noqa: E731
    assert results.evidence("ch9_grid", directory=tmp_path, log=said.append, lacks=lacks).name == "ch9_grid_ci"
    assert said == ["using ch9_grid_ci; skipped ch9_grid_cpu-hours (no T = 20 cell)"]


def test_a_missing_bundle_names_the_command_that_makes_it(tmp_path):
    _save(tmp_path, "ci")
    with pytest.raises(results.BundleMissing, match="no result bundle ch9_grid_paper") as info:
        results.evidence("ch9_grid", preset="paper", directory=tmp_path)
    assert COMMAND.format(preset="paper") in str(info.value)  # the sibling's recorded command, its preset swapped
    with pytest.raises(results.BundleMissing, match="no complete bundle ch9_other_<preset>.*make one with: "):
        results.evidence("ch9_other", directory=tmp_path)
    # the committed results: a preset never run names its experiment's grid command at that preset
    with pytest.raises(results.BundleMissing) as info:
        results.evidence("ch2_reference_grid", preset="paper")
    assert "make it with: python -m mamba_recall grid ch2_reference_grid --preset paper --allow-long" in str(info.value)


def test_weaker_falls_back_only_when_absent_and_says_so(tmp_path):
    """A page shows the run's own preset: that bundle, or where it was never made the next weaker one, saying so."""
    _save(tmp_path, "ci")
    said = []
    assert results.evidence("ch9_grid", preset="ci", weaker=True, directory=tmp_path, log=said.append).name == (
        "ch9_grid_ci"
    )
    assert not said  # the asked preset's own bundle: nothing to say
    assert results.evidence("ch9_grid", preset="paper", weaker=True, directory=tmp_path, log=said.append).name == (
        "ch9_grid_ci"
    )
    assert len(said) == 1 and "no ch9_grid_paper bundle" in said[0] and "using the committed ci bundle" in said[0]
    assert COMMAND.format(preset="paper") in said[0]  # the command that makes the asked one
    _save(tmp_path, "cpu-hours")  # the strongest weaker one wins
    assert results.evidence("ch9_grid", preset="paper", weaker=True, directory=tmp_path, log=said.append).name == (
        "ch9_grid_cpu-hours"
    )
    with pytest.raises(results.BundleMissing, match="no result bundle ch9_grid_paper"):  # never without weaker
        results.evidence("ch9_grid", preset="paper", directory=tmp_path)
    _save(tmp_path, "paper", complete=False)  # an incomplete one is refused, not replaced
    with pytest.raises(results.BundleIncomplete):
        results.evidence("ch9_grid", preset="paper", weaker=True, directory=tmp_path, log=said.append)
    (tmp_path / "ch9_grid_paper.json").write_text("{not json")  # a corrupt one is an error, not a fallback
    with pytest.raises(results.BundleError, match="corrupt"):
        results.evidence("ch9_grid", preset="paper", weaker=True, directory=tmp_path, log=said.append)
    with pytest.raises(results.BundleMissing, match="no result bundle ch9_other_ci"):  # nothing weaker than ci
        results.evidence("ch9_other", preset="ci", weaker=True, directory=tmp_path)
    assert len(said) == 2


def test_weaker_without_a_log_prints(tmp_path, capsys):
    _save(tmp_path, "ci")
    assert results.evidence("ch9_grid", preset="cpu-hours", weaker=True, directory=tmp_path).name == "ch9_grid_ci"
    assert "no ch9_grid_cpu-hours bundle" in capsys.readouterr().out  # never silently


def test_a_corrupt_bundle_stops_instead_of_weaker_evidence(tmp_path):
    _save(tmp_path, "ci")
    _save(tmp_path, "cpu-hours")
    (tmp_path / "ch9_grid_cpu-hours.json").write_text("{not json")
    with pytest.raises(results.BundleError, match="corrupt") as info:
        results.evidence("ch9_grid", directory=tmp_path)
    assert not isinstance(info.value, results.BundleMissing)


def test_data_keys_are_required(tmp_path):
    _save(tmp_path, "ci", acc=0.5)
    assert results.evidence("ch9_grid", preset="ci", directory=tmp_path, data_keys=("acc",)).data["acc"] == 0.5
    with pytest.raises(results.BundleError, match=r"lacks data \['kappa'\]"):
        results.evidence("ch9_grid", directory=tmp_path, data_keys=("kappa",))


def test_no_chapter_module_reads_a_bundle_behind_evidence():
    calls = {}
    for path in sorted((SRC / "chapters").rglob("*.py")):
        found = re.findall(r"\b(load_bundle|load_strongest_bundle|load_preset_bundle)\(", path.read_text())
        if found:
            calls[path.relative_to(SRC).as_posix()] = sorted(set(found))
    assert not calls, (
        f"chapter modules read bundles directly: {calls}; read them with mamba_recall.results.evidence(name)"
    )


def test_an_ensembles_estimate_reads_its_bundle_through_evidence():
    """Chapter 2's ensembles time a grid by the seconds their committed bundle at that preset records per ensemble."""
    from mamba_recall.chapters.ch2_hashing_scaling.runners import ensembles

    jobs = ensembles.jobs_for("ch2_multihead", "ci")
    total, basis = ensembles.recorded_estimate("ch2_multihead", "ci")(jobs)
    recorded = ensembles._module("ch2_multihead").recorded_seconds(results.evidence("ch2_multihead", preset="ci"))
    assert total == pytest.approx(sum(recorded.values())) and total > 0 and "without a recorded time" not in basis
    paper = ensembles.jobs_for("ch2_multihead", "paper")  # never run: nothing recorded, said so
    assert ensembles.recorded_estimate("ch2_multihead", "paper")(paper) == (
        0,
        f"the seconds the committed ch2_multihead_paper records per ensemble; {len(paper)} of {len(paper)} without "
        "a recorded time, counted as 0",
    )


#: the loaders issue 54 removed, by where they were (the one bundle loader is ``evidence``, the one model loader
#: ``model_from_checkpoint``; Chapter 4's edge family is ``EdgeFamily(preset)``)
GONE = {
    "mamba_recall.results": "load_preset_bundle",
    "mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy": "load_edge_family",
}
#: the Chapter 4 pages that read the edge family through the removed one-line alias ``load_edge_family()``, whose
#: preset defaulted to cpu-hours: the same call, ``EdgeFamily("cpu-hours")``
EDGE_PAGES = ("01_serial_recall", "02_long_term_channels", "03_periodicity", "04_recency_state_init")
EDGE_PAGES += ("06_mamba2_heads", "07_model_comparison")


def test_the_removed_loaders_are_gone_and_nothing_calls_them():
    import importlib
    import json

    root = SRC.parents[1]
    for module, name in GONE.items():
        assert not hasattr(importlib.import_module(module), name), f"{module}.{name} is back"
    files = [*(root / "src").rglob("*.py"), *(root / "tests").rglob("*.py"), *(root / "tools").rglob("*.py")]
    files += list((root / "book").rglob("*.ipynb"))
    pattern = re.compile(r"\b(" + "|".join(GONE.values()) + r")\(")
    assert not [f for f in files if f != Path(__file__).resolve() and pattern.search(f.read_text())]
    for page in EDGE_PAGES:
        cells = json.loads((root / "book" / "04_primacy_recency" / f"{page}.ipynb").read_text())["cells"]
        code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        assert 'A.EdgeFamily("cpu-hours")' in code, f"{page} does not read the edge family with EdgeFamily"


def test_model_from_checkpoint_is_the_one_checkpoint_model_loader(tmp_path):
    """A checkpoint's model: the pair checked, built by the chapter's constructor from its sidecar, weights loaded."""
    import torch

    torch.manual_seed(0)
    saved = torch.nn.Linear(3, 2)
    path = results.save_checkpoint(
        tmp_path / "ch9_demo_ci.pt", saved.state_dict(), {"config": {"d_in": 3, "d_out": 2}}, command="make ch9"
    )
    build = lambda m: torch.nn.Linear(m["config"]["d_in"], m["config"]["d_out"])  # noqa: E731
    model, meta = results.model_from_checkpoint(path, build, regenerate="x")
    assert not model.training and meta["config"] == {"d_in": 3, "d_out": 2}
    assert torch.equal(model.weight, saved.weight) and torch.equal(model.bias, saved.bias)
    with pytest.raises(RuntimeError, match="size mismatch"):  # a constructor that does not fit the weights stops
        results.model_from_checkpoint(path, lambda m: torch.nn.Linear(4, 2), regenerate="x")
    with pytest.raises(results.CheckpointMissing, match="make ch9 --again"):
        results.model_from_checkpoint(tmp_path / "ch9_other_ci.pt", lambda m: None, regenerate="make ch9 --again")


def test_model_from_checkpoint_reads_the_weights_of_a_payload(tmp_path):
    """A ``.pt`` that keeps its state dict beside what built it (Chapter 4's S-models: ``state_dict``, config,
    vocabulary, history) loads through the same loader with ``weights``; one without that key is refused, naming
    the command that remakes it."""
    import torch

    torch.manual_seed(0)
    saved = torch.nn.Linear(3, 2)
    payload = {"state_dict": saved.state_dict(), "model_config": {"d_in": 3}, "history": [1, 2]}
    path = results.save_checkpoint(tmp_path / "ch9_payload_ci.pt", payload, {"d_in": 3}, command="make ch9")
    model, meta = results.model_from_checkpoint(
        path, lambda m: torch.nn.Linear(m["d_in"], 2), regenerate="x", weights="state_dict"
    )
    assert meta["d_in"] == 3 and torch.equal(model.weight, saved.weight) and torch.equal(model.bias, saved.bias)
    with pytest.raises(results.BundleError, match="holds no 'weights' entry.*regenerate it with `make ch9 again`"):
        results.model_from_checkpoint(path, lambda m: None, regenerate="make ch9 again", weights="weights")


def test_ch4_load_checkpoint_goes_through_the_one_loader_and_builds_the_pt_s_own_model():
    """Chapter 4's ``load_checkpoint`` builds its S-model through ``model_from_checkpoint`` from the config and
    vocabulary its sidecar records: the ``.pt``'s own (the trainer writes the same into both), its weights every one."""
    import torch

    from mamba_recall.chapters.ch4_primacy_recency.pipelines import primacy as A
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import _models

    calls = []
    real = _models.model_from_checkpoint

    def spy(*args, **kwargs):
        calls.append(kwargs.get("weights"))
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_models, "model_from_checkpoint", spy)
        for name in ("s_small", "s_m2"):
            model, vocab, side = A.load_checkpoint(model=name)
            blob, _ = A.read_smodel(A.checkpoint_path(name), name)
            assert side["train_config"]["model"] == blob["model_config"] and vocab == type(vocab)(**blob["vocab"])
            state = model.state_dict()
            assert state.keys() == blob["state_dict"].keys()
            assert all(torch.equal(state[k], blob["state_dict"][k]) for k in state) and not model.training
    assert calls == ["state_dict", "state_dict"]
