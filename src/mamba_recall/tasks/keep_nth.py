r"""KEEP n-TH (paper 003, §4.1, App. D.2): remember the n-th token and output it from then on.

Tokens :math:`x_t\sim\mathrm{Unif}\{0..|V|-1\}` iid, :math:`t=1..T`; the target is :math:`y_t=x_n` at
:math:`t=n..T` (1-based; App. D.2 scores from :math:`t=n`, where the target is the current token) and −100 (ignored) before.
Paper setting: KEEP FIFTH (n = 5), |V| = 128, T ∈ {10, …, 50}. Copying the current token is right
only at t = n, i.e. accuracy 1/(T−n+1); chance is 1/|V|.
"""

from __future__ import annotations

import numpy as np
import torch

from .mqar import IGNORE_INDEX

__all__ = ["copy_baseline", "keep_nth"]


def keep_nth(n: int, T: int, V: int = 128, nth: int = 5, seed: int = 0):
    """``ids, labels`` (n, T) int64: ``labels[:, t-1] = ids[:, nth-1]`` for t ≥ nth, −100 before."""
    for name, value, lo in (("n", n, 1), ("T", T, 1), ("V", V, 2), ("nth", nth, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}.")
    if nth > T:
        raise ValueError(f"nth={nth} must be <= T={T} (the kept token must be in the sequence).")
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, V, size=(n, T))
    labels = np.full((n, T), IGNORE_INDEX, dtype=np.int64)
    labels[:, nth - 1 :] = ids[:, nth - 1 : nth]
    return torch.as_tensor(ids, dtype=torch.long), torch.as_tensor(labels, dtype=torch.long)


def copy_baseline(T: int, nth: int = 5) -> float:
    """Accuracy of copying the current token: right only at t = n, i.e. 1/(T − n + 1)."""
    return 1.0 / (T - nth + 1)
