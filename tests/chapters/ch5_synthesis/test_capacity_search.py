"""The κ search of Chapter 5 (mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search): bisection, crossings, censoring, profiles."""

import math

import pytest
import torch

from mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search import (
    check_ladder,
    crossing,
    monotone,
    recall_profile,
    search,
)
from mamba_recall.tasks.mqar import mqar

LADDER = [2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64]


def logistic(k50: float, width: float = 0.3):
    """A recall curve falling through 0.5 at κ = k50 (log-logistic)."""
    return lambda k: 1.0 / (1.0 + math.exp((math.log(k) - math.log(k50)) / width))


@pytest.mark.parametrize("k50", [2.5, 5.0, 9.0, 20.0, 50.0])
def test_search_finds_the_largest_rung_at_or_above_each_threshold(k50):
    f = logistic(k50)
    calls = []
    out = search(lambda k: calls.append(k) or f(k), LADDER, [0.9, 0.5])
    assert len(calls) == len(set(calls)) <= 8  # never the same probe twice; far fewer than the 11 rungs
    for thr in (0.5, 0.9):
        lo, hi = out["brackets"][thr]
        truth = max((i for i, k in enumerate(LADDER) if f(k) >= thr), default=-1)
        assert lo == truth and hi == truth + 1
        c = crossing(out["probes"], LADDER, thr, out["brackets"][thr])
        if c["kappa"] is not None:  # the interpolated κ* lies between the bracketing rungs
            assert LADDER[lo] <= c["kappa"] < LADDER[hi]
    if 2 < k50 < 64:
        assert crossing(out["probes"], LADDER, 0.5, out["brackets"][0.5])["kappa"] == pytest.approx(k50, rel=0.15)
    assert monotone(out["probes"])


def test_censored_at_both_ends_gives_no_number():
    out = search(lambda k: 0.0, LADDER, [0.5])
    assert crossing(out["probes"], LADDER, 0.5, out["brackets"][0.5]) == {
        "rung": None,
        "kappa": None,
        "censored": "below",
        "bound": 2,
    }
    out = search(lambda k: 1.0, LADDER, [0.5])
    c = crossing(out["probes"], LADDER, 0.5, out["brackets"][0.5])
    assert c["kappa"] is None and c["censored"] == "above" and c["rung"] == 64


def test_a_rising_pair_of_probes_is_reported_as_not_monotone():
    assert not monotone([[4, 0.2], [8, 0.6]])
    assert monotone([[8, 0.2], [4, 0.6], [16, 0.2]])


@pytest.mark.parametrize("bad", [[], [3, 2], [0, 1], [2, 2]])
def test_bad_ladder_is_refused(bad):
    with pytest.raises(ValueError, match="ladder"):
        check_ladder(bad, [0.5])


def test_bad_threshold_and_bad_probe_are_refused():
    with pytest.raises(ValueError, match="thresholds"):
        check_ladder(LADDER, [1.0])
    with pytest.raises(ValueError, match="accuracy in"):
        search(lambda k: float("nan"), LADDER, [0.5])


class Oracle(torch.nn.Module):
    """Answers every query right except those of pair ``wrong`` (their logits point at token 0)."""

    def __init__(self, V, kappa, wrong):
        super().__init__()
        self.V, self.kappa, self.wrong = V, kappa, wrong

    def forward(self, x):
        logits = torch.zeros(*x.shape, self.V)
        keys, values = x[:, 0 : 2 * self.kappa : 2], x[:, 1 : 2 * self.kappa : 2]
        match = keys.unsqueeze(1) == x.unsqueeze(2)  # (B, T, κ)
        pair = match.float().argmax(-1)
        ans = values.gather(1, pair)
        ans[pair == self.wrong] = 0
        logits.scatter_(2, ans.unsqueeze(-1), 1.0)
        return logits


def test_recall_profile_attributes_each_query_to_its_pair():
    V, kappa = 64, 6
    x, y = mqar(V, kappa, 4 * kappa, 200, 3)
    prof = recall_profile(Oracle(V, kappa, wrong=2), x, y, kappa)
    assert prof["by_pair"] == [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    assert prof["n_per_pair"] == [200] * kappa
    assert prof["accuracy"] == pytest.approx(5 / 6)
