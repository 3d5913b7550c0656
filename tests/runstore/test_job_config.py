"""Typed job configs (issue 54, "typed configs reach the job"): a :class:`~mamba_recall.runstore.JobConfig` is
checked when built, its record is the dict a job's key hashes (so a config written as a dataclass keeps the key its
dict had), the job function receives it typed, and bad input names the field and the fix."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from mamba_recall.runstore import JobConfig, job_config, job_key, make_job, omitted_if_none, run_grid


@dataclass(frozen=True, kw_only=True)
class Schedule(JobConfig):
    n: int
    every: int


@dataclass(frozen=True, kw_only=True)
class Cell(JobConfig):
    D: int
    lr: float
    name: str
    levels: tuple[int, ...]
    recipe: dict[str, Any]
    eval: Schedule
    layers: int | None = omitted_if_none()


_CELL = Cell(D=8, lr=1e-3, name="a", levels=(1, 2), recipe={"betas": [0.9, 0.99]}, eval=Schedule(n=4, every=2))
_DICT = {
    "D": 8,
    "lr": 1e-3,
    "name": "a",
    "levels": [1, 2],
    "recipe": {"betas": [0.9, 0.99]},
    "eval": {"n": 4, "every": 2},
}


def test_a_typed_config_keys_and_records_as_its_dict_and_reads_back_typed():
    typed = make_job("demo_typed", _CELL, 3)
    assert typed["config"] == _DICT and typed["key"] == job_key(
        {"experiment": "demo_typed", "config": _DICT, "seed": 3}
    )
    assert list(typed["config"]) == list(_DICT)  # field order: the record's key order
    json.dumps(typed)  # a job stays plain JSON
    assert job_config(typed) == _CELL and typed["config_type"] == f"{__name__}:Cell"
    with_layers = make_job("demo_typed", Cell(**{**_CELL.__dict__, "layers": 2}), 3)
    assert with_layers["config"] == {**_DICT, "layers": 2}
    assert Cell.from_record(with_layers["config"]).layers == 2


def run_typed(config, seed: int) -> dict:
    """A job function that needs its config typed."""
    assert isinstance(config, Cell), type(config)
    return {"value": config.D * config.lr + seed + config.eval.n}


def test_the_job_function_receives_the_config_typed(tmp_path):
    jobs = [make_job("demo_typed", _CELL, s) for s in range(2)]
    run_grid(f"{__name__}:run_typed", jobs, store=tmp_path, log=lambda *a, **k: None)
    values = sorted(json.loads(p.read_text())["result"]["value"] for p in (tmp_path / "demo_typed").glob("*.json"))
    assert values == [8 * 1e-3 + 4, 8 * 1e-3 + 5]


def test_bad_input_names_the_field_and_the_fix():
    with pytest.raises(TypeError, match=r"Cell\.D must be <class 'int'>, got '8' \(str\); give it that type"):
        Cell(**{**_CELL.__dict__, "D": "8"})
    with pytest.raises(TypeError, match=r"Cell\.levels must be tuple\[int, \.\.\.\]"):
        Cell(**{**_CELL.__dict__, "levels": (1, 2.5)})
    with pytest.raises(TypeError, match=r"unknown fields \['Dd'\], missing fields \['D'\]; its fields are D, lr"):
        Cell.from_record({**{k: v for k, v in _DICT.items() if k != "D"}, "Dd": 8})
    with pytest.raises(TypeError, match=r"Schedule\.every must be <class 'int'>, got True"):
        Cell.from_record({**_DICT, "eval": {"n": 4, "every": True}})
    for bad in ([1, 2], _DICT):  # every job is typed: a dict too names the class to declare and where
        with pytest.raises(
            TypeError,
            match=rf"a job's config is a JobConfig .*, got {type(bad).__name__}; declare its fields as a JobConfig "
            r"subclass .* beside the job function that reads it \(a chapter's runners declare theirs in "
            r"chapters/<chapter>/runners/job_configs\.py\)",
        ):
            make_job("demo_typed", bad, 0)
    with pytest.raises(
        TypeError, match=r"a job of demo_typed \(config \{'D': 8, .*\) names no config_type: make jobs with .*make_job"
    ):
        job_config({"experiment": "demo_typed", "config": _DICT, "seed": 3})  # a record is not a job
    with pytest.raises(ValueError, match="does not read back from its record"):
        make_job("demo_typed", Cell(**{**_CELL.__dict__, "recipe": {"betas": (0.9, 0.99)}}), 0)
