"""Aggregation (:func:`aggregate`): per cell the mean over seeds, a 95 % Student-t interval
``mean ± t_{0.975, n-1} · s / √n`` (quantile :func:`t_quantile_975` from ``scipy.stats.t``; no interval for one
seed) and the per-seed values.
"""

from __future__ import annotations

import json
import math

from scipy.stats import t as _t


INTERVAL_METHOD = (
    "95 % Student-t interval over seeds, mean ± t_{0.975, n-1} · s / √n (s: sample standard "
    "deviation, n-1 denominator); t quantile from scipy.stats.t; no interval (NaN) for one seed. "
    "Bounds are not clipped to [0, 1]."
)


def t_quantile_975(df: int) -> float:
    """t_{0.975, df}, the 97.5 % quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``):
    the half-width factor of a two-sided 95 % interval (12.706 at df = 1, 4.303 at 2, → 1.960). NaN for df < 1.

    Bundles written before scipy was a dependency used a table of these quantiles to 3 decimals for
    df ≤ 30 and 1.96 + 2.4/df beyond (their ``interval_method`` says so); the table is within 4.8·10⁻⁴ of
    this (2.1·10⁻³ beyond df = 30), so their bounds are within that times s/√n (tests/analysis/test_stats.py).
    """
    if df < 1:
        return float("nan")
    return float(_t.ppf(0.975, df))


def mean_interval(values: list[float]) -> dict:
    """``{"n", "n_nan", "mean", "std", "ci_low", "ci_high"}`` (see :data:`INTERVAL_METHOD`). A NaN on any seed
    makes the mean, the std and the interval NaN (``n_nan`` says how many seeds were NaN): a failed seed is never
    averaged away."""
    vals = [float(v) for v in values]
    n = len(vals)
    n_nan = sum(math.isnan(v) for v in vals)
    nan = float("nan")
    if n == 0:
        return dict(n=0, n_nan=0, mean=nan, std=nan, ci_low=nan, ci_high=nan)
    if n_nan:
        return dict(n=n, n_nan=n_nan, mean=nan, std=nan, ci_low=nan, ci_high=nan)
    mean = sum(vals) / n
    if n == 1:
        return dict(n=1, n_nan=0, mean=mean, std=nan, ci_low=nan, ci_high=nan)
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    half = t_quantile_975(n - 1) * std / math.sqrt(n)
    return dict(n=n, n_nan=0, mean=mean, std=std, ci_low=mean - half, ci_high=mean + half)


def aggregate(runs: list[dict], by: list[str], metrics: list[str]):
    """One row per cell (the values of config keys ``by``): for each metric (a key of ``result``) the mean,
    95 % interval, min, max and the per-seed values (``"<metric>_per_seed"``, ordered by seed), plus the
    seeds and the keys of the runs. Runs of one cell must agree on every other config entry.

    A NaN on any seed shows: that cell's mean, interval, min and max are NaN (Python's ``min``/``max`` would pass
    over it or not depending on its place), and a ``"<metric>_n_nan"`` column counts the NaN seeds of each cell
    (present when any cell has one). A missing or non-numeric value raises, naming the run."""
    import pandas as pd

    cells: dict[tuple, list[dict]] = {}
    for rec in runs:
        cell = tuple(rec["config"][k] for k in by)
        cells.setdefault(cell, []).append(rec)
    rows, nan_metrics = [], set()
    for cell, recs in sorted(cells.items()):
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
            st = mean_interval(vals)
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
