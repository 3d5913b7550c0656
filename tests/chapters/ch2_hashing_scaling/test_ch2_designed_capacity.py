"""Chapter 2's designed-circuit capacity (Remark 1 measured), the declared experiment ``ch2_designed_capacity`` run by
``python -m mamba_recall grid``: one run-store job per (D, N) cell and readout, the bundle's tables assembled from the
finished jobs (capacity per cell and level, then the fits and the laws' errors over all cells)."""

from __future__ import annotations

import math

import pytest

from mamba_recall.chapters.ch2_hashing_scaling.runners import designed_capacity as DC
from mamba_recall.experiment import experiment_named
from mamba_recall.presets import experiment
from mamba_recall.theory.designed_capacity import LAWS_COMPARED, facts_capacity, fit_power_law, law_capacities


def test_jobs_are_one_per_cell_and_readout_with_the_preset_s_seed():
    for preset in ("ci", "cpu-hours", "paper"):
        sizes = experiment(DC.EXPERIMENT, preset)
        jobs = DC.jobs_for(preset)
        assert [(j["config"]["D"], j["config"]["N"], j["config"]["readout"]) for j in jobs] == [
            (d, n, r) for d, n in sizes["cells"] for r in sizes["readouts"]
        ]
        assert {j["seed"] for j in jobs} == {sizes["seed"]} and len({j["key"] for j in jobs}) == len(jobs)
        assert all(j["config"]["V"] == sizes["V"] and j["config"]["n_queries"] == sizes["n_queries"] for j in jobs)
    e = experiment_named(DC.EXPERIMENT)
    assert e.run_job == DC.RUNNER and e.write is DC.write_bundle
    seconds, basis = e.estimate(DC.jobs_for("cpu-hours"))
    assert 15 * 6.9 == pytest.approx(seconds) and "recorded, not measured here" in basis


def test_the_grid_writes_the_bundle_from_its_jobs_and_resumes(smoke_store, smoke_grid):
    b = smoke_grid(DC.EXPERIMENT, "ci")
    sizes = experiment(DC.EXPERIMENT, "ci", smoke=True)
    assert b.data["complete"] and b.data["jobs_total"] == len(sizes["cells"]) == 2
    assert set(b.tables) == {"runs", "cells", "capacity", "fits", "law_errors"}
    cap = b.tables["capacity"]
    assert list(cap.columns[: len(DC.ROW_FIELDS)]) == list(DC.ROW_FIELDS)
    # one cell against the library function it measures, and each law's N_f* beside it
    V, (D, N) = sizes["V"], sizes["cells"][0]
    ref = facts_capacity(V, D, N, tuple(sizes["levels"]), n_queries=sizes["n_queries"], seed=sizes["seed"])
    for level in sizes["levels"]:
        row = cap[(cap["D"] == D) & (cap["N"] == N) & (cap["level"] == level)].iloc[0]
        want = ref["capacity"][level]
        assert (row["Nf"], bool(row["censored"]), row["acc_at"]) == (want["Nf"], want["censored"], want["acc_at"])
        assert row["evaluations"] == len(ref["evaluations"])
        for col, pred in law_capacities(V, D, N, level).items():
            assert row[col] == pred if pred < V // 2 else math.isnan(row[col])
    # the fits are the library's over all usable cells
    fits = b.tables["fits"]
    for level in sizes["levels"]:
        usable = cap[(cap["level"] == level) & (cap["Nf"] >= sizes["min_fit_Nf"]) & ~cap["censored"]]
        got = fits[(fits["level"] == level) & (fits["subset"] == "all cells") & (fits["series"] == "measured")]
        want = fit_power_law(list(usable["DN"]), list(usable["Nf"]))
        assert int(got["n"].iloc[0]) == want["n"] == len(usable)
    assert len(b.tables["law_errors"]) == len(sizes["levels"]) * len(LAWS_COMPARED)
    assert set(b.data["exponents"]) == {f"{level:g}/values" for level in sizes["levels"]}
    folder = smoke_store / "runs" / DC.EXPERIMENT
    before = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")}
    assert len(before) == 2
    smoke_grid(DC.EXPERIMENT, "ci")  # the same command again: nothing runs
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")} == before


def test_a_row_with_other_fields_is_refused():
    row = dict.fromkeys(DC.ROW_FIELDS, 1) | {"level": 0.5, "readout": "values", "censored": False, "extra": 0}
    with pytest.raises(ValueError, match="run_job and ROW_FIELDS disagree"):
        DC.capacity_tables([row], 2048, 4)
