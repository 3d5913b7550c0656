r"""INDUCTION HEADS (paper 003, §5.2, App. C.2, D.4), with the hard case of long-range recall.

:math:`y_t=x_{j(t)+1}` with :math:`j(t)=\max\{j<t:x_j=x_t\}`, or the blank class ``V`` if :math:`x_t` has not
occurred before; classes :math:`V\cup\{\times\}`, |V|+1. With probability ``p`` a sample is a *hard*
case: a token :math:`v^*` is removed from the vocabulary and placed only at the 1-based positions
:math:`r` and :math:`T-r`, :math:`r\sim\mathrm{Unif}\{1..\gamma T\}`, so recalling its successor spans
almost the whole sequence. Paper: T = 100, |V| ∈ {5, 10, 20, 40}, p = 0.75, γ = 0.1.
All positions are scored (labels are never −100); ``nonblank_mask`` selects the others.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["induction_heads", "induction_targets"]


def induction_targets(ids: np.ndarray, V: int) -> np.ndarray:
    """Brute-force targets (n, T): successor of the previous occurrence of the current token, else V."""
    ids = np.asarray(ids)
    n, T = ids.shape
    y = np.full((n, T), V, dtype=np.int64)
    last = np.full((n, V), -1, dtype=np.int64)  # last position of each token so far (before t)
    rows = np.arange(n)
    for t in range(T):
        prev = last[rows, ids[:, t]]
        ok = prev >= 0
        y[ok, t] = ids[ok, prev[ok] + 1]
        last[rows, ids[:, t]] = t
    return y


def induction_heads(n: int, T: int = 100, V: int = 10, p: float = 0.75, gamma: float = 0.1, seed: int = 0):
    """``ids, labels`` (n, T) int64 (labels in 0..V, V = blank). Needs T > 2V + 1, 0 ≤ p ≤ 1, 0 < γ ≤ 0.1·…"""
    for name, value, lo in (("n", n, 1), ("T", T, 2), ("V", V, 2)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}.")
    if T <= 2 * V + 1:
        raise ValueError(f"T={T} must exceed 2·V+1={2 * V + 1}.")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p (hard-case probability) must be in [0, 1], got {p}.")
    if not 0.0 < gamma <= 0.5 or int(gamma * T) < 1:
        raise ValueError(f"gamma must be in (0, 0.5] with gamma·T >= 1, got gamma={gamma}, T={T}.")
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, V, size=(n, T))
    hard = rng.random(n) < p
    vstar = rng.integers(0, V, size=n)
    # hard rows: iid uniform over V \ {v*} (shift ids ≥ v* by one), then v* at positions r and T−r (1-based)
    other = rng.integers(0, V - 1, size=(n, T))
    other = other + (other >= vstar[:, None])
    ids[hard] = other[hard]
    r = rng.integers(1, int(gamma * T) + 1, size=n)
    rows = np.nonzero(hard)[0]
    ids[rows, r[rows] - 1] = vstar[rows]
    ids[rows, T - r[rows] - 1] = vstar[rows]
    labels = induction_targets(ids, V)
    return torch.as_tensor(ids, dtype=torch.long), torch.as_tensor(labels, dtype=torch.long)
