"""The D·N scaling law on the designed circuit: the fast query-only evaluation equals the model, the fit is right."""

from __future__ import annotations

import math

import torch

from mamba_recall.tasks.mqar import mqar
from mamba_recall.theory.designed_capacity import circuit_predictions, facts_capacity, fit_power_law, law_capacities
from mamba_recall.theory.hashing_circuit import designed_accuracy, designed_model, thm2_weights


def test_query_only_evaluation_equals_the_designed_model():
    V, D, N, Nf, L = 128, 32, 16, 16, 64
    x, y = mqar(V, Nf, L, 20, 7)
    model = designed_model(V, D, N, seed=0)
    mask = y != -100
    for readout in ("values", "full"):
        pred, lab = circuit_predictions(
            thm2_weights(V, D, N, 0, "code"), x, y, readout=readout, chunk=16, dtype=torch.float64
        )
        logits = model(x)
        if readout == "values":
            logits[..., : V // 2] = -float("inf")
        assert torch.equal(pred, logits.argmax(-1)[mask]) and torch.equal(lab, y[mask])
        acc = float((pred == lab).double().mean())
        assert acc == designed_accuracy(V, D, N, Nf, L, n_seq=20, data_seed=7, readout=readout)


def test_fit_power_law_recovers_an_exact_law():
    xs = [2**k for k in range(4, 12)]
    f = fit_power_law(xs, [0.03 * x**1.0 for x in xs])
    assert abs(f["exponent"] - 1) < 1e-9 and abs(f["prefactor"] - 0.03) < 1e-9 and f["r2"] > 0.999999
    g = fit_power_law(xs, [0.03 * x * (1.1 if i % 2 else 0.9) for i, x in enumerate(xs)])
    assert g["ci_low"] < 1 < g["ci_high"]
    assert math.isnan(fit_power_law([1, 2], [1, 2])["exponent"])


def test_facts_capacity_brackets_the_level():
    res = facts_capacity(512, 32, 32, (0.5, 0.9), n_queries=300)
    c5, c9 = res["capacity"][0.5], res["capacity"][0.9]
    assert 0 < c9["Nf"] <= c5["Nf"] and c5["acc_at"] >= 0.5 > c5["acc_above"]
    assert law_capacities(512, 32, 32, 0.5)["remark1"] > 0
