r"""Capacity of a trained model by a search over the number of pairs κ, and what each probe measures
(Chapter 5, the book's synthesis).

A *probe* trains one model at κ pairs and measures its held-out recall ``acc(κ)``. Recall falls as κ grows past
what the state holds, so for a threshold θ the capacity is

.. math::  \kappa^*_\theta = \max\{\kappa \in \text{ladder} : \mathrm{acc}(\kappa) \ge \theta\},

found by bisection over the ladder's indices (:func:`search`: about log₂ of the ladder's length probes per
threshold, shared between thresholds), not by a dense grid. The continuous estimate (:func:`crossing`)
interpolates log κ linearly in accuracy between the last rung at or above θ and the first below it:

.. math::  \log\kappa^*_\theta = \log\kappa_{lo} + \frac{a_{lo}-\theta}{a_{lo}-a_{hi}}(\log\kappa_{hi}-\log\kappa_{lo}).

A capacity outside the ladder is *censored*: ``("below", κ₀)`` when even the first rung is under θ,
``("above", κ_max)`` when the last rung is still at or above it; it is never replaced by a number.

Each probe also records (:func:`recall_profile`, :func:`delta_signature`):

* the recall profile over the pairs' order in the context (paper 004's serial-position curve: primacy and
  recency show as a U);
* the step size Δ of every layer averaged over channels at the context keys, the context values, the queries and
  the filler tokens (paper 000's mechanism: Δ opens at key tokens), for the trained model and for its untrained
  twin (the same seed before training: the control).

The data is zoology's MQAR (:func:`mamba_recall.tasks.mqar.mqar`, ``variant="standard"``): pair i is at positions
2i (key) and 2i + 1 (value) for i < κ; each key is queried once after the context, the label at the query.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import torch

from mamba_recall.tasks.mqar import IGNORE_INDEX

__all__ = [
    "check_ladder",
    "crossing",
    "data_options",
    "delta_signature",
    "monotone",
    "pair_index",
    "recall_profile",
    "search",
]


#: what the ``data.task`` line of a search's resolved config says, read back: the generator and its options
_TASK = re.compile(r"variant '(?P<variant>\w+)', power_a (?P<power_a>[0-9.eE+-]+), pad '(?P<pad>\w+)'")


def data_options(task: str) -> dict:
    """The MQAR generator a search's config names in words (its ``data.task``): ``{"variant", "power_a", "pad"}``,
    the options a probe passes to :func:`mamba_recall.tasks.mqar.mqar` and ``batch_fn`` (so the data are what the
    config says, not a library default). ValueError if ``task`` does not name them."""
    m = _TASK.search(task)
    if m is None:
        raise ValueError(f"the config's data.task {task!r} does not name the generator (variant, power_a, pad).")
    return {"variant": m["variant"], "power_a": float(m["power_a"]), "pad": m["pad"]}


def check_ladder(ladder: Sequence[int], thresholds: Sequence[float]) -> tuple[list[int], list[float]]:
    """The ladder (strictly increasing integers ≥ 1) and the thresholds (in (0, 1)), checked."""
    ladder = [int(k) for k in ladder]
    if not ladder or any(k < 1 for k in ladder) or any(b <= a for a, b in zip(ladder, ladder[1:])):
        raise ValueError(f"ladder must be strictly increasing integers >= 1, got {list(ladder)}.")
    thresholds = sorted(float(t) for t in thresholds)
    if not thresholds or any(not 0.0 < t < 1.0 for t in thresholds):
        raise ValueError(f"thresholds must be accuracies strictly between 0 and 1, got {thresholds}.")
    return ladder, thresholds


def search(probe: Callable[[int], float], ladder: Sequence[int], thresholds: Sequence[float]) -> dict:
    """Bisection over ``ladder`` for each threshold (lowest first; a probe is never repeated).

    ``probe(κ) -> accuracy``. Returns ``{"probes": [[κ, acc], ...] in the order run, "brackets": {θ: [lo, hi]}}``
    where ``lo``/``hi`` are ladder indices with acc(ladder[lo]) ≥ θ > acc(ladder[hi]) (−1 / len(ladder): the
    virtual rungs beyond the ends). The bisection trusts the rungs it has probed; :func:`monotone` says whether
    the probes it ran were in decreasing order of accuracy."""
    ladder, thresholds = check_ladder(ladder, thresholds)
    acc: dict[int, float] = {}
    order: list[list] = []

    def at(i: int) -> float:
        k = ladder[i]
        if k not in acc:
            a = float(probe(k))
            if not math.isfinite(a) or not 0.0 <= a <= 1.0:
                raise ValueError(f"probe({k}) returned {a!r}; an accuracy in [0, 1] is needed.")
            acc[k] = a
            order.append([k, a])
        return acc[k]

    brackets = {}
    for thr in thresholds:
        lo, hi = -1, len(ladder)
        for i, k in enumerate(ladder):  # what earlier thresholds already probed narrows the bracket
            if k in acc and acc[k] < thr:
                hi = min(hi, i)
        for i, k in enumerate(ladder):
            if k in acc and acc[k] >= thr and i < hi:
                lo = max(lo, i)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if at(mid) >= thr:
                lo = mid
            else:
                hi = mid
        brackets[thr] = [lo, hi]
    return {"probes": order, "brackets": brackets}


def crossing(probes: Sequence[Sequence[float]], ladder: Sequence[int], threshold: float, bracket) -> dict:
    """κ*_θ from a search's probes and bracket: ``{"rung": the largest probed κ at or above θ or None,
    "kappa": the interpolated κ*, or None when censored, "censored": None | "below" | "above"}``."""
    acc = {int(k): float(a) for k, a in probes}
    lo, hi = bracket
    if lo < 0:
        return {"rung": None, "kappa": None, "censored": "below", "bound": ladder[0]}
    if hi >= len(ladder):
        return {"rung": ladder[lo], "kappa": None, "censored": "above", "bound": ladder[-1]}
    k_lo, k_hi = ladder[lo], ladder[hi]
    a_lo, a_hi = acc[k_lo], acc[k_hi]
    w = (a_lo - threshold) / (a_lo - a_hi)  # a_lo ≥ θ > a_hi, so 0 ≤ w < 1
    kappa = math.exp(math.log(k_lo) + w * (math.log(k_hi) - math.log(k_lo)))
    return {"rung": k_lo, "kappa": kappa, "censored": None, "bound": None}


def monotone(probes: Sequence[Sequence[float]]) -> bool:
    """Whether accuracy never rises with κ over the probes run (the assumption the bisection makes)."""
    pts = sorted((int(k), float(a)) for k, a in probes)
    return all(b[1] <= a[1] for a, b in zip(pts, pts[1:]))


def pair_index(inputs: torch.Tensor, labels: torch.Tensor, kappa: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows, positions, pair index) of every query of a batch of zoology's MQAR with ``kappa`` pairs: the query
    token is a key; its pair is where that key sits in the context (keys at positions 0, 2, …, 2κ − 2)."""
    rows, pos = torch.nonzero(labels != IGNORE_INDEX, as_tuple=True)
    keys = inputs[:, 0 : 2 * kappa : 2]  # (B, κ)
    match = keys[rows] == inputs[rows, pos].unsqueeze(1)  # (Q, κ)
    if not bool(match.any(dim=1).all()):
        raise ValueError("a query token is not one of its sequence's context keys; is this zoology's MQAR?")
    return rows, pos, match.float().argmax(dim=1)


@torch.no_grad()
def recall_profile(model, inputs: torch.Tensor, labels: torch.Tensor, kappa: int, batch_size: int = 256) -> dict:
    """Held-out recall over all queries and by the queried pair's order in the context (0 = first written).

    Returns ``{"accuracy": float, "by_pair": [acc of pair 0, …, pair κ−1], "n_per_pair": [...]}`` (argmax over the
    whole vocabulary, as :func:`mamba_recall.train.evaluate`)."""
    was = model.training
    model.eval()
    try:
        preds = torch.cat([model(inputs[i : i + batch_size]).argmax(-1) for i in range(0, len(inputs), batch_size)])
    finally:
        model.train(was)
    rows, pos, pair = pair_index(inputs, labels, kappa)
    correct = (preds[rows, pos] == labels[rows, pos]).double()
    hits = torch.zeros(kappa, dtype=torch.float64).index_add_(0, pair, correct)
    counts = torch.zeros(kappa, dtype=torch.float64).index_add_(0, pair, torch.ones_like(correct))
    return {
        "accuracy": float(correct.mean()),
        "by_pair": (hits / counts.clamp(min=1)).tolist(),
        "n_per_pair": counts.long().tolist(),
    }


def delta_signature(model, inputs: torch.Tensor, labels: torch.Tensor, kappa: int) -> list[dict]:
    """Per layer, the mean Δ (over channels and sequences) at the context keys, the context values, the queries
    and the filler tokens, and ``key_ratio`` = Δ at keys over Δ at every other token (paper 000: > 1 when Δ opens
    at keys)."""
    from mamba_recall.analysis.channels import record_deltas

    deltas = record_deltas(model, inputs)  # list of (B, E, T) float64
    B, T = inputs.shape
    role = torch.full((B, T), 3, dtype=torch.long)  # 3 = filler
    role[:, 0 : 2 * kappa : 2] = 0  # keys
    role[:, 1 : 2 * kappa : 2] = 1  # values
    role[labels != IGNORE_INDEX] = 2  # queries
    out = []
    for d in deltas:
        m = d.mean(dim=1)  # (B, T): Δ averaged over channels
        means = {name: float(m[role == r].mean()) for r, name in enumerate(("key", "value", "query", "filler"))}
        means["key_ratio"] = means["key"] / float(m[role != 0].mean())
        out.append(means)
    return out
