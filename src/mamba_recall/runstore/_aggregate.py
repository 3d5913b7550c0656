"""Seeds to an interval, in one place: :func:`mean_interval` combines per-seed values (mean over seeds, 95 %
Student-t interval ``mean ± t_{0.975, n-1} · s / √n`` with the quantile :func:`t_quantile_975` from
``scipy.stats.t``, no interval for one seed, the per-seed values; optionally clipped to the quantity's range and
optionally over paired differences), :func:`least_squares` fits y on several regressors with 95 % t-intervals on
each coefficient (:func:`regression_interval`: a line, its slope and intercept), and :func:`aggregate` applies :func:`mean_interval` to every cell of a grid. Every other module of the
library that turns seeds into an interval (``claims.core.across_seeds``, the chapters) calls these; no other module
computes a t quantile (tests/claims/test_seeds.py).
"""

from __future__ import annotations

import json
import math

from scipy.stats import t as _t


INTERVAL_METHOD = (
    "95 % Student-t interval over seeds, mean ± t_{0.975, n-1} · s / √n (s: sample standard "
    "deviation, n-1 denominator); t quantile from scipy.stats.t; no interval (NaN) for one seed. "
    "An interval is clipped to its quantity's declared range where one is declared (an accuracy's [0, 1]), else not."
)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``), for a level other than
    the 95 % interval's (a family-wise bound: p = 1 − α/(2k)); NaN for df < 1."""
    if df < 1:
        return float("nan")
    return float(_t.ppf(p, df))


def t_quantile_975(df: int) -> float:
    """t_{0.975, df}, the 97.5 % quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``):
    the half-width factor of a two-sided 95 % interval (12.706 at df = 1, 4.303 at 2, → 1.960). NaN for df < 1.

    Bundles written before scipy was a dependency used a table of these quantiles to 3 decimals for
    df ≤ 30 and 1.96 + 2.4/df beyond (their ``interval_method`` says so); the table is within 4.8·10⁻⁴ of
    this (2.1·10⁻³ beyond df = 30), so their bounds are within that times s/√n (tests/analysis/test_stats.py).
    """
    return t_quantile(0.975, df)


def t_interval(estimate: float, se: float, df: int) -> tuple[float, float]:
    """The 95 % t-interval ``estimate ± t_{0.975, df} · se`` of an estimate with standard error ``se`` and ``df``
    degrees of freedom; ``(nan, nan)`` for df < 1 or a non-finite ``se`` (no interval, never a made-up one)."""
    nan = float("nan")
    if df < 1 or not math.isfinite(se):
        return (nan, nan)
    half = t_quantile_975(df) * se
    return (estimate - half, estimate + half)


def _check_bounds(bounds) -> tuple[float, float] | None:
    if bounds is None:
        return None
    try:
        if isinstance(bounds, (str, bytes)):
            raise TypeError(bounds)
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds={bounds!r}: give the quantity's range as a pair (lo, hi), e.g. (0.0, 1.0) for an accuracy."
        ) from None
    if not lo <= hi:
        raise ValueError(f"bounds={bounds!r}: the lower end is above the upper one; give (lo, hi) with lo ≤ hi.")
    return lo, hi


def mean_interval(values, *, bounds=None, paired_with=None) -> dict:
    """Per-seed ``values`` combined: ``{"n", "n_nan", "mean", "std", "ci_low", "ci_high", "per_seed"}`` (see
    :data:`INTERVAL_METHOD`), the one function by which the library turns seeds into an interval.

    * A NaN on any seed makes the mean, the std and the interval NaN (``n_nan`` says how many seeds were NaN): a
      failed seed is never averaged away. One seed has a mean and no interval (NaN bounds).
    * ``bounds=(lo, hi)``: the quantity's declared range (an accuracy or a fraction: ``(0, 1)``); the interval is
      clipped to it (a bound past the range is a value the quantity cannot take). The mean is not changed.
    * ``paired_with``: the other arm's per-seed values, seed for seed (same length, same order): the result is the
      mean paired difference ``values − paired_with`` and its interval, and ``per_seed`` holds the differences.
      ``bounds`` then is the range of the difference.
    """
    vals = [float(v) for v in values]
    if paired_with is not None:
        other = [float(v) for v in paired_with]
        if len(other) != len(vals):
            raise ValueError(
                f"paired_with has {len(other)} values for {len(vals)} seeds: pair the two arms seed for seed "
                "(the same seeds, in the same order)."
            )
        vals = [a - b for a, b in zip(vals, other)]
    rng = _check_bounds(bounds)
    n = len(vals)
    n_nan = sum(math.isnan(v) for v in vals)
    nan = float("nan")
    out = dict(n=n, n_nan=n_nan, mean=nan, std=nan, ci_low=nan, ci_high=nan, per_seed=vals)
    if n == 0 or n_nan:
        return out
    mean = sum(vals) / n
    out["mean"] = mean
    if n == 1:
        return out
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    half = t_quantile_975(n - 1) * std / math.sqrt(n)
    lo, hi = mean - half, mean + half
    if rng is not None:
        lo, hi = min(max(lo, rng[0]), rng[1]), max(min(hi, rng[1]), rng[0])
    out.update(std=std, ci_low=lo, ci_high=hi)
    return out


def least_squares(columns, y) -> dict:
    r"""Ordinary least squares of ``y`` on the named regressors ``columns`` (``{name: values}``, one value per point)
    and an intercept, :math:`y \approx \sum_j \beta_j x_j + c`, the one regression with t-intervals of the library:
    ``{"coef": {name: β_j, "intercept": c}, "se": {...}, "ci": {...}, "n", "dof", "r2"}``.

    Fitted on centred data (each regressor minus its mean :math:`\bar x`, shape (p,), and :math:`y - \bar y`), which
    keeps a fit far from the origin as well conditioned as one at it: with :math:`X_c` (n × p) the centred regressors,
    :math:`\hat\beta = (X_c^\top X_c)^{-1}X_c^\top y_c` (``numpy.linalg.lstsq``), :math:`c = \bar y - \bar x^\top
    \hat\beta`, the residual variance :math:`s^2 = \lVert y_c - X_c\hat\beta\rVert^2/(n-p-1)`,
    :math:`\mathrm{Cov}(\hat\beta) = s^2 (X_c^\top X_c)^{-1}`, :math:`\mathrm{Var}(c) = s^2/n + \bar x^\top
    \mathrm{Cov}(\hat\beta)\,\bar x`, and each 95 % interval :math:`\hat\beta_j \pm t_{0.975, n-p-1}\,\mathrm{se}_j`
    (:func:`t_interval`). No fit, every number NaN (never a made-up one): fewer than p + 2 points, a non-finite value,
    or regressors that do not determine the fit (a constant column, two proportional ones: :math:`X_c` of rank below p).
    Its last bits depend on the machine's LAPACK (compare fits made elsewhere at a relative 1e-12, not bit for bit).
    Take logs before the call for a power law."""
    import numpy as np

    names = list(columns)
    if "intercept" in names:
        raise ValueError("least_squares: 'intercept' is the fit's own term; name the regressor otherwise.")
    cols = [[float(v) for v in columns[k]] for k in names]
    ys = [float(v) for v in y]
    for k, c in zip(names, cols):
        if len(c) != len(ys):
            raise ValueError(f"least_squares: {len(c)} values of {k!r} for {len(ys)} y values; give one y per point.")
    n, p = len(ys), len(names)
    nan = float("nan")
    terms = [*names, "intercept"]
    out = dict(
        coef=dict.fromkeys(terms, nan),
        se=dict.fromkeys(terms, nan),
        ci={k: (nan, nan) for k in terms},
        n=n,
        dof=n - p - 1,
        r2=nan,
    )
    X = np.array(cols, dtype=float).reshape(p, n).T
    Y = np.asarray(ys, dtype=float)
    if n < p + 2 or not (np.isfinite(X).all() and np.isfinite(Y).all()):
        return out
    xbar, ybar = X.mean(axis=0), Y.mean()
    Xc, Yc = X - xbar, Y - ybar
    if np.linalg.matrix_rank(Xc) < p:
        return out
    try:
        beta, *_ = np.linalg.lstsq(Xc, Yc, rcond=None)
        cov_unit = np.linalg.inv(Xc.T @ Xc)
    except np.linalg.LinAlgError:  # singular to working precision: the regressors do not determine the fit
        return out
    resid = Yc - Xc @ beta
    sse = float(resid @ resid)
    dof = n - p - 1
    s2 = sse / dof
    cov = s2 * cov_unit
    icpt = float(ybar - xbar @ beta)
    isd = math.sqrt(s2 / n + float(xbar @ cov @ xbar))
    for k, b, v in zip(names, beta, np.diag(cov)):
        out["coef"][k], out["se"][k] = float(b), math.sqrt(float(v))
        out["ci"][k] = t_interval(float(b), out["se"][k], dof)
    out["coef"]["intercept"], out["se"]["intercept"] = icpt, isd
    out["ci"]["intercept"] = t_interval(icpt, isd, dof)
    syy = float(Yc @ Yc)
    out["r2"] = 1 - sse / syy if syy else nan
    return out


def regression_interval(x, y) -> dict:
    """A line ``y ≈ slope · x + intercept`` by :func:`least_squares` (one regressor): ``{"slope", "slope_se",
    "slope_ci", "intercept", "intercept_se", "intercept_ci", "n", "r2"}``, the 95 % intervals with n − 2 degrees of
    freedom. Fewer than 3 points or a constant ``x``: every number NaN (no fit, never a made-up one). Take logs
    before the call for a power law."""
    xs, ys = list(x), list(y)
    if len(xs) != len(ys):
        raise ValueError(f"regression_interval: {len(xs)} x values for {len(ys)} y values; give one y per x.")
    fit = least_squares({"slope": xs}, ys)
    return dict(
        slope=fit["coef"]["slope"],
        slope_se=fit["se"]["slope"],
        slope_ci=fit["ci"]["slope"],
        intercept=fit["coef"]["intercept"],
        intercept_se=fit["se"]["intercept"],
        intercept_ci=fit["ci"]["intercept"],
        n=fit["n"],
        r2=fit["r2"],
    )


def sort_key(value) -> tuple:
    """A key that orders one column's values of mixed kinds: missing (None) first, then numbers, then text (a cell
    whose entry some runs lack sorts beside the others instead of raising a TypeError)."""
    if value is None:
        return (0, 0)
    if isinstance(value, (bool, int, float)):
        return (1, value)
    return (2, str(value))


def aggregate(runs: list[dict], by: list[str], metrics: list[str], *, bounds: dict | None = None):
    """One row per cell (the values of config keys ``by``): for each metric (a key of ``result``) the mean,
    95 % interval, min, max and the per-seed values (``"<metric>_per_seed"``, ordered by seed), plus the
    seeds and the keys of the runs, each metric combined by :func:`mean_interval`. Runs of one cell must agree on
    every other config entry. ``bounds``: ``{metric: (lo, hi)}``, the declared range of a metric whose interval is
    clipped to it (:func:`mean_interval`); a metric not named there is not clipped.

    A NaN on any seed shows: that cell's mean, interval, min and max are NaN (Python's ``min``/``max`` would pass
    over it or not depending on its place), and a ``"<metric>_n_nan"`` column counts the NaN seeds of each cell
    (present when any cell has one). A missing or non-numeric value raises, naming the run."""
    import pandas as pd

    bounds = dict(bounds or {})
    unknown = sorted(set(bounds) - set(metrics))
    if unknown:
        raise ValueError(f"bounds name {unknown}, which are not among the metrics aggregated {metrics}.")
    cells: dict[tuple, list[dict]] = {}
    for rec in runs:
        cell = tuple(rec["config"][k] for k in by)
        cells.setdefault(cell, []).append(rec)
    rows, nan_metrics = [], set()
    for cell, recs in sorted(cells.items(), key=lambda kv: tuple(map(sort_key, kv[0]))):
        recs = sorted(recs, key=lambda r: r["seed"])
        rest = {json.dumps({k: v for k, v in r["config"].items() if k not in by}, sort_keys=True) for r in recs}
        if len(rest) > 1:
            raise ValueError(
                f"cell {dict(zip(by, cell))} mixes runs of different configs; aggregate one config at a time."
            )
        seeds = [r["seed"] for r in recs]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"cell {dict(zip(by, cell))} has the same seed twice.")
        row = dict(zip(by, cell))
        row["seeds"] = " ".join(str(s) for s in seeds)
        for m in metrics:
            vals = []
            for r in recs:
                v = r["result"].get(m)
                if not isinstance(v, (int, float)):
                    raise ValueError(
                        f"run {r['key']} (seed {r['seed']}) has {m} = {v!r}, not a number; aggregate numeric "
                        "metrics only (a NaN is stored as NaN, never as null)."
                    )
                vals.append(v)
            st = mean_interval(vals, bounds=bounds.get(m))
            row.update(
                {
                    f"{m}_mean": st["mean"],
                    f"{m}_ci_low": st["ci_low"],
                    f"{m}_ci_high": st["ci_high"],
                    f"{m}_std": st["std"],
                    f"{m}_min": float("nan") if st["n_nan"] else min(vals),
                    f"{m}_max": float("nan") if st["n_nan"] else max(vals),
                    f"{m}_per_seed": " ".join(f"{v:.4f}" for v in vals),
                }
            )
            if st["n_nan"]:
                nan_metrics.add(m)
            row[f"{m}_n_nan"] = st["n_nan"]
        row["n_seeds"] = len(recs)
        row["wall_seconds"] = round(sum(r["provenance"].get("wall_seconds") or 0 for r in recs), 1)
        row["run_keys"] = " ".join(r["key"] for r in recs)
        rows.append(row)
    for row in rows:  # the NaN counts only of metrics with a NaN somewhere (other tables stay as they were)
        for m in metrics:
            if m not in nan_metrics:
                row.pop(f"{m}_n_nan")
    return pd.DataFrame(rows)
