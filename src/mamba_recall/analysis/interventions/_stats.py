"""The statistics, all from :mod:`scipy.stats`: the Wilson interval and the summary of a recall-by-position curve,
the paired bootstrap, McNemar's exact test, and the tests on two samples and counts (Welch, Spearman, χ²)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def _counts(name: str, v) -> np.ndarray:
    """``v`` as an int64 array, refusing non-integral values (a proportion's counts are whole numbers)."""
    arr = np.asarray(v)
    if arr.dtype == bool or np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    arr = arr.astype(float)
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ValueError(f"wilson needs whole-number counts; {name} = {v!r} is not (pass e.g. correct.sum(0)).")
    return arr.astype(np.int64)


def wilson(successes, n, z: float = 1.959963984540054):
    r"""Wilson score interval (lower, upper) for ``successes`` out of ``n`` (int arrays broadcast; default 95 %).

    With :math:`\hat p = s/n` and :math:`z = \Phi^{-1}(0.975)` (Wilson 1927; Newcombe 1998, method 3)::

        centre = (p̂ + z²/2n) / (1 + z²/n),   half = z/(1 + z²/n) · √(p̂(1−p̂)/n + z²/4n²)

    computed by ``scipy.stats.binomtest(s, n).proportion_ci(method="wilson")`` at confidence level
    2Φ(z) − 1 (exactly 0.95 for the default z); the bounds are 0 at s = 0 and 1 at s = n. Scalars in →
    ``np.float64`` out, arrays in → arrays of the broadcast shape.
    """
    s, m = np.broadcast_arrays(_counts("successes", successes), _counts("n", n))
    if np.any(m <= 0) or np.any(s < 0) or np.any(s > m):
        raise ValueError("wilson needs 0 <= successes <= n and n > 0.")
    if not z > 0:
        raise ValueError(f"z must be > 0 (1.96 for a 95 % interval), got {z!r}.")
    level = float(1 - 2 * stats.norm.sf(z))
    lo, hi = np.empty(s.shape), np.empty(s.shape)
    for i in np.ndindex(s.shape):
        ci = stats.binomtest(int(s[i]), int(m[i])).proportion_ci(confidence_level=level, method="wilson")
        lo[i], hi[i] = ci.low, ci.high
    return (lo[()], hi[()]) if s.ndim == 0 else (lo, hi)


def summary(correct: np.ndarray) -> dict:
    """acc(k), Wilson bands, middle third K_mid = {k : L/3 < k ≤ 2L/3}, primacy, recency, U-depth."""
    n, L = correct.shape
    acc = correct.mean(0)
    lo, hi = wilson(correct.sum(0), n)
    k = np.arange(1, L + 1)
    mid = (k > L / 3) & (k <= 2 * L / 3)
    mid_acc = float(acc[mid].mean())
    mlo, mhi = wilson(correct[:, mid].sum(), n * mid.sum())
    return {
        "L": L,
        "n": n,
        "acc": acc,
        "lo": lo,
        "hi": hi,
        "mid": mid_acc,
        "mid_lo": float(mlo),
        "mid_hi": float(mhi),
        "primacy": float(acc[0] - mid_acc),
        "recency": float(acc[-1] - mid_acc),
        "u_depth": float(0.5 * (acc[0] + acc[-1]) - mid_acc),
    }


def paired_bootstrap(a: np.ndarray, b: np.ndarray, stat=np.mean, n_boot: int = 2000, seed: int = 0):
    """Paired percentile bootstrap over prompts of ``stat(a) − stat(b)``: (estimate, lower 2.5 %, upper 97.5 %).

    a, b: (n,) one value per prompt, row i of both from the same prompt. Each of the ``n_boot`` resamples
    draws n prompt indices with replacement (the same indices for ``a`` and ``b``, which keeps the pairing)
    and recomputes the difference; the interval is the 2.5 % and 97.5 % quantiles of those differences
    (linear interpolation). ``scipy.stats.bootstrap(paired=True, method="percentile")`` with the legacy
    ``numpy.random.RandomState(seed)``, whose index draws (``randint(0, n, (n_boot, n))``) are the ones
    this function has always made, so committed intervals are reproduced exactly.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(
            f"paired_bootstrap needs one value per prompt, 1-D a and b; got shapes {a.shape} and "
            f"{b.shape} (average each prompt's row first, e.g. a.mean(1))."
        )
    if a.shape[0] != b.shape[0]:
        raise ValueError("paired_bootstrap needs the same number of rows (the same prompts) in a and b.")
    if a.shape[0] < 2:
        raise ValueError(f"paired_bootstrap needs at least 2 prompts, got {a.shape[0]}.")
    res = stats.bootstrap(
        (a, b),
        lambda x, y: stat(x) - stat(y),
        paired=True,
        vectorized=False,
        n_resamples=n_boot,
        confidence_level=0.95,
        method="percentile",
        random_state=np.random.RandomState(seed),
    )
    ci = res.confidence_interval
    return float(stat(a) - stat(b)), float(ci.low), float(ci.high)


def mcnemar_p(a: np.ndarray, b: np.ndarray) -> float:
    """Exact two-sided McNemar test for paired booleans ``a``, ``b`` (any shape, flattened and paired).

    Only the discordant pairs count: n₀₁ = #(¬a ∧ b), n₁₀ = #(a ∧ ¬b). Under H₀ (same success rate)
    n₁₀ ~ Binomial(n₀₁ + n₁₀, ½), so p = min(1, 2 · P[X ≤ min(n₀₁, n₁₀)]) —
    ``scipy.stats.binomtest(min(n01, n10), n01 + n10, 0.5).pvalue``; 1 when there is no discordant pair.
    """
    a, b = np.asarray(a, bool).ravel(), np.asarray(b, bool).ravel()
    if a.shape != b.shape:
        raise ValueError(f"mcnemar_p needs paired outcomes of the same size, got {a.size} and {b.size}.")
    n01, n10 = int((~a & b).sum()), int((a & ~b).sum())
    if n01 + n10 == 0:
        return 1.0
    return float(stats.binomtest(min(n01, n10), n01 + n10, 0.5).pvalue)


# ------------------------------------------------------------------------- tests on two samples and counts


def welch_test(a, b) -> tuple[float, float]:
    """Welch's two-sample t-test (unequal variances): (t, two-sided p).

    a: (n_a,), b: (n_b,), n ≥ 2 each. t = (ā − b̄) / √(s_a²/n_a + s_b²/n_b) with Welch–Satterthwaite
    degrees of freedom ν = (s_a²/n_a + s_b²/n_b)² / (s_a⁴/(n_a²(n_a−1)) + s_b⁴/(n_b²(n_b−1))) and
    p = 2 · P[T_ν > |t|]: ``scipy.stats.ttest_ind(a, b, equal_var=False)``. Both samples constant: (0, 1)
    if their means agree, else (inf, 0) (scipy returns NaN there).
    """
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"welch_test needs at least 2 values per sample, got {len(a)} and {len(b)}.")
    if a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b) == 0:
        return (0.0, 1.0) if a.mean() == b.mean() else (math.inf, 0.0)
    res = stats.ttest_ind(a, b, equal_var=False)
    return float(res.statistic), float(res.pvalue)


def spearman(x, y) -> float:
    """Spearman's rank correlation ρ of paired x, y (n,): Pearson's r of the ranks, ties given their average
    rank (``scipy.stats.spearmanr``); NaN when either is constant (no ranking)."""
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"spearman needs paired samples of the same length ≥ 2, got {len(x)} and {len(y)}.")
    if np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    return float(stats.spearmanr(x, y).statistic)


def chi2_uniform_p(counts, expected) -> float:
    """Pearson χ² goodness-of-fit p-value of ``counts`` (k,) against ``expected`` (k,), df = k − 1.

    χ² = Σ_i (counts_i − expected_i)² / expected_i, p = P[χ²_{k−1} ≥ χ²]: ``scipy.stats.chisquare``. The
    expected counts must be > 0 and sum to the observed total (e.g. ``counts.sum() * w / w.sum()`` for
    an even spread over units of widths ``w``); one category (df = 0) tests nothing: p = 1.
    """
    counts, expected = np.asarray(counts, float).ravel(), np.asarray(expected, float).ravel()
    if counts.shape != expected.shape:
        raise ValueError(f"counts and expected need the same length, got {len(counts)} and {len(expected)}.")
    if len(counts) < 2:
        return 1.0
    if np.any(expected <= 0):
        raise ValueError("expected counts must be > 0; drop the categories nothing is expected in.")
    if not np.isclose(counts.sum(), expected.sum(), rtol=1e-8, atol=0):
        raise ValueError(
            f"expected sums to {expected.sum()} but the counts to {counts.sum()}; scale it: "
            "expected * counts.sum() / expected.sum()."
        )
    return float(stats.chisquare(counts, expected).pvalue)
