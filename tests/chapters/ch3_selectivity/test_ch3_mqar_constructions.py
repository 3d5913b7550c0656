"""The sweeps of paper 003's explicit MQAR constructions, the declared experiment ``ch3_mqar_constructions`` run by
``python -m mamba_recall grid``: one run-store job per (κ, |V|) pair, the bundle's tables the jobs' rows in job
order."""

from __future__ import annotations

import numpy as np
import pytest

from mamba_recall.chapters.ch3_selectivity.runners import mqar_constructions as MC
from mamba_recall.experiment import experiment_named
from mamba_recall.presets import experiment
from mamba_recall.theory.mqar_constructions import VARIANTS, construction_accuracy


def test_jobs_are_the_sweep_s_kappa_v_pairs():
    for preset in ("ci", "paper"):
        s = experiment(MC.EXPERIMENT, preset)
        jobs = MC.jobs_for(preset)
        pairs = [(k, V) for V in s["Vs"] for k in s["kappas"]] + [(k, s["big_V"]) for k in s["big_kappas"]]
        assert [(j["config"]["kappa"], j["config"]["V"]) for j in jobs] == list(dict.fromkeys(pairs))
        assert [j["config"]["keys_and_columns"] for j in jobs] == [V == s["Vs"][0] for _, V in dict.fromkeys(pairs)]
        assert {j["seed"] for j in jobs} == {MC.DATA_SEED}
    with pytest.raises(ValueError, match="has no 'cpu-hours' preset"):
        experiment_named(MC.EXPERIMENT).grid_jobs("cpu-hours")
    seconds, basis = experiment_named(MC.EXPERIMENT).estimate(MC.jobs_for("ci"))
    assert seconds == pytest.approx(14.1) and "recorded, not measured here" in basis


def test_the_grid_writes_the_bundle_from_its_jobs(smoke_grid):
    b = smoke_grid(MC.EXPERIMENT, "ci")
    s = experiment(MC.EXPERIMENT, "ci", smoke=True)
    assert b.data["complete"] and b.data["variants"] == list(VARIANTS)
    assert {t: list(b.tables[t].columns) for t in MC.TABLES} == {t: list(c) for t, c in MC.TABLES.items()}
    jl, keys, cols = b.tables["jl"], b.tables["thm3_keys"], b.tables["thm2_N"]
    # one point of each table against the library function it measures
    kappa, V, p, n, T = s["kappas"][0], s["Vs"][0], s["ps"][0], s["sweep_sequences"], s["T"]
    accs = [
        construction_accuracy("thm2", kappa, V, n=n, T=T, seed=1, jl_seed=d, p=p, bias="corrected")
        for d in range(s["draws"])
    ]
    row = jl[(jl["kappa"] == kappa) & (jl["V"] == V) & (jl["p"] == p) & (jl["variant"] == "Thm 2, corrected bias")]
    assert (row["max"].item(), row["mean"].item()) == (max(accs), float(np.mean(accs)))
    assert (row["d"].item(), row["N"].item()) == (kappa + p, kappa)
    assert set(keys["V"]) == set(cols["V"]) == {V}  # the key sizes and state columns at the first |V| only
    one = cols[(cols["kappa"] == kappa) & (cols["N"] == 1)]["accuracy"].item()
    assert one == construction_accuracy("thm2", kappa, V, n=n, T=T, seed=1, N=1)
    assert not ((jl["variant"].str.startswith("Thm 4")) & (jl["kappa"] * jl["p"] > MC.THM4_MAX_KAPPA_P)).any()
