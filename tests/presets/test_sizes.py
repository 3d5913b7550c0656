"""The typed sizes (``presets/sizes.py``): checked when built, read as dicts, each field capped in a smoke run as it
declares. The fingerprint of every preset (values, order, constants, run-store keys) is
``tests/presets/test_preset_fingerprint.py``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from mamba_recall.presets import experiment
from mamba_recall.presets.sizes import AXIS, BATCH, COUNT, SAMPLES, STEPS, Sizes, fixed, matches, size


@dataclass(frozen=True, kw_only=True)
class Toy(Sizes):
    T: int = size()
    lr: float = size()
    ds: list[int] = size(AXIS)
    Ns: dict[str, list[int] | str] = size(AXIS)
    steps: int = size(STEPS)
    batch: int = size(BATCH)
    draws: int = size(COUNT)
    n: int = size(SAMPLES)
    max_j: int = size(fixed(2))
    grid: str = size(optional=True)


def _toy(**kw):
    base = dict(T=100, lr=3e-3, ds=[4, 8, 16], Ns={"s6": [1, 2, 3], "s4d": "2kappa"}, steps=2000, batch=128,
                draws=5, n=1000, max_j=9)  # fmt: skip
    return Toy(**(base | kw))


def test_typed_sizes_read_as_dicts_and_cap_each_field_as_declared():
    toy = _toy()
    assert toy.as_dict() == dict(T=100, lr=3e-3, ds=[4, 8, 16], Ns={"s6": [1, 2, 3], "s4d": "2kappa"}, steps=2000,
                                 batch=128, draws=5, n=1000, max_j=9)  # fmt: skip
    assert list(toy.as_dict()) == ["T", "lr", "ds", "Ns", "steps", "batch", "draws", "n", "max_j"]
    assert toy.smoke() == dict(T=100, lr=3e-3, ds=[4, 16], Ns={"s6": [1, 3], "s4d": "2kappa"}, steps=4, batch=8,
                               draws=2, n=16, max_j=2)  # fmt: skip
    d = toy.as_dict()
    d["ds"].append(32)  # a copy: the preset is not changed through what a caller reads
    assert toy.ds == [4, 8, 16] and dataclasses.replace(toy, steps=10).steps == 10 and toy.steps == 2000
    assert _toy(lr=1).lr == 1  # a float field takes an int


def test_an_optional_field_left_out_is_absent_from_the_dict():
    assert "grid" not in _toy().as_dict() and "grid" not in _toy().smoke()
    given = _toy(grid="micro")
    assert list(given.as_dict())[-1] == "grid" and given.smoke()["grid"] == "micro"
    with pytest.raises(TypeError, match="Toy.grid must be"):
        _toy(grid=3)


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(T="100"), rf"Toy.T must be <class 'int'>, got '100' \(str\); fix the preset in {__name__}\.$"),
        (dict(ds=[4, "8"]), r"Toy.ds must be list\[int\]"),
        (dict(steps=True), r"Toy.steps must be <class 'int'>, got True"),
        (dict(Ns={"s6": 3}), r"Toy.Ns must be dict\[str, list\[int\] \| str\]"),
    ],
)
def test_a_wrong_type_in_a_preset_names_the_field(kw, message):
    with pytest.raises(TypeError, match=message):
        _toy(**kw)


def test_one_checker_matches_every_annotation_the_sizes_and_the_job_configs_declare():
    """``matches``, the checker of both the typed sizes and the typed job configs (``runstore.JobConfig``): a float
    takes an int, a bool is no int, a tuple is checked item by item (and by length where it lists its items)."""
    from typing import Any

    assert matches(3, float) and not matches(True, int) and matches(None, int | None) and matches("x", Any)
    assert matches([1, 2], list[int]) and not matches((1, 2), list[int]) and not matches([1, 2.5], list[int])
    assert matches((1, 2, 3), tuple[int, ...]) and not matches((1, "2"), tuple[int, ...])
    assert matches((1, "a"), tuple[int, str]) and not matches((1, "a", 2), tuple[int, str])
    assert matches({"a": [1]}, dict[str, list[int]]) and not matches({1: [1]}, dict[str, list[int]])


@pytest.mark.parametrize(
    "chapter",
    [
        "ch0_selective_scan",
        "ch1_gradient_dynamics",
        "ch2_hashing_scaling",
        "ch3_selectivity",
        "ch4_primacy_recency",
        "ch5_synthesis",
    ],
)
def test_typed_chapters_read_every_preset_through_its_class(chapter):
    import importlib

    module = importlib.import_module(f"mamba_recall.chapters.{chapter}.configs")
    assert not hasattr(module, "SMOKE")  # typed sizes declare their smoke caps on their fields
    for name, presets in module.EXPERIMENTS.items():
        for preset, sizes in presets.items():
            assert isinstance(sizes, Sizes), (name, preset)
            assert experiment(name, preset) == sizes.as_dict() and experiment(name, preset, smoke=True) == sizes.smoke()


def test_a_plain_dict_preset_or_a_smoke_dict_is_refused_with_the_fix(monkeypatch):
    from mamba_recall import presets
    from mamba_recall.chapters.ch5_synthesis import configs as ch5

    monkeypatch.setattr(presets, "_EXPERIMENTS", {})
    monkeypatch.setitem(ch5.EXPERIMENTS, "ch5.untyped", {"ci": {"steps": 10}, "paper": {"steps": 100}})
    with pytest.raises(RuntimeError, match=r"'ch5.untyped' .* gives \['ci', 'paper'\] as plain dicts; give each"):
        presets._merge_chapter_sizes()
    monkeypatch.delitem(ch5.EXPERIMENTS, "ch5.untyped")
    monkeypatch.setattr(ch5, "SMOKE", {"ch5_capacity": {"steps": 1}}, raising=False)
    monkeypatch.setattr(presets, "_EXPERIMENTS", {})
    with pytest.raises(RuntimeError, match="has a SMOKE dict; declare each field's smoke cap on the field"):
        presets._merge_chapter_sizes()
