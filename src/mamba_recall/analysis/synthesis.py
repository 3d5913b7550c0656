r"""Chapter 5: the four papers' theories of Mamba's recall, each turned into a prediction for the same measurements
(the ``searches`` and ``probes`` tables of :mod:`mamba_recall.experiments.ch5_capacity`).

* **Paper 002** (hashing, scaling laws): capacity grows with the product D·N. :func:`mamba_recall.theory.capacity.kappa_at` inverts each
  law's per-query success probability for the largest κ with p ≥ θ; :func:`power_fit` fits :math:`\log\kappa^* = \alpha\log(DN) + c` (prediction α = 1, Remark 1 /
  Eq. 17: D·N ≥ 2 N_f n_σ²), :func:`two_factor_fit` fits :math:`\log\kappa^* = a\log D + b\log N + c`
  (D·N: a = b = 1). Λ layers act as N_eff = Λ N (Thms 4/6): :func:`layer_ratios`.
* **Paper 003** (constructions): Thm 2 writes one key per state column, so it recalls κ pairs with N = κ whatever
  D is beyond what it needs: κ* = N, i.e. a = 0 and b = 1 in the two-factor fit.
* **Paper 004** (primacy and recency): near capacity the serial-position profile is a U: :func:`u_shape` reads
  primacy (first quarter minus middle) and recency (last quarter minus middle) from a probe's recall by pair order.
* **Paper 000** (gradient dynamics): Δ opens at key tokens: the probes' ``delta0_key_ratio`` (Δ at keys over Δ
  elsewhere, layer 0) against the untrained twin's.

Intervals are 95 % t-intervals (:func:`scipy.stats.t`), over seeds or regression residuals as each function says.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from ..runstore import mean_interval

__all__ = [
    "cell_capacity",
    "edge_probes",
    "layer_ratios",
    "power_fit",
    "two_factor_fit",
    "u_shape",
]


def _uncensored(searches: pd.DataFrame, threshold: float) -> tuple[pd.DataFrame, int]:
    col = f"kappa{round(threshold * 100)}"
    ok = searches[col].notna()
    return searches[ok].assign(kappa=searches.loc[ok, col].astype(float)), int((~ok).sum())


def _t_interval(est: float, se: float, dof: int) -> tuple[float, float]:
    if dof < 1 or not math.isfinite(se):
        return (float("nan"), float("nan"))
    q = stats.t.ppf(0.975, dof)
    return (est - q * se, est + q * se)


def power_fit(searches: pd.DataFrame, threshold: float = 0.5, layers: int = 1) -> dict:
    """Least squares :math:`\\log\\kappa^*_\\theta = \\alpha\\log(DN) + c` over every uncensored search of
    ``layers`` (each seed a point): α, its standard error and 95 % t-interval (n − 2 dof), the intercept, n, and
    how many searches were censored (left out: their κ* is outside the ladder)."""
    sub, censored = _uncensored(searches[searches.layers == layers], threshold)
    n = len(sub)
    if n < 3 or sub.eval("D * N").nunique() < 2:
        return {"alpha": float("nan"), "alpha_ci": (float("nan"),) * 2, "n": n, "censored": censored}
    r = stats.linregress(np.log(sub.D * sub.N), np.log(sub.kappa))
    return {
        "alpha": float(r.slope),
        "alpha_se": float(r.stderr),
        "alpha_ci": _t_interval(r.slope, r.stderr, n - 2),
        "intercept": float(r.intercept),
        "r2": float(r.rvalue**2),
        "n": n,
        "censored": censored,
    }


def two_factor_fit(searches: pd.DataFrame, threshold: float = 0.5, layers: int = 1) -> dict:
    """Least squares :math:`\\log\\kappa^* = a\\log D + b\\log N + c` (each uncensored search a point): a and b
    with standard errors and 95 % t-intervals (n − 3 dof)."""
    sub, censored = _uncensored(searches[searches.layers == layers], threshold)
    n = len(sub)
    nan2 = (float("nan"), float("nan"))
    if n < 4 or sub.D.nunique() < 2 or sub.N.nunique() < 2:
        return {"a": float("nan"), "b": float("nan"), "a_ci": nan2, "b_ci": nan2, "n": n, "censored": censored}
    X = np.column_stack([np.log(sub.D), np.log(sub.N), np.ones(n)])
    y = np.log(sub.kappa.to_numpy())
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    dof = n - 3
    s2 = float(resid @ resid) / dof
    se = np.sqrt(np.diag(s2 * np.linalg.inv(X.T @ X)))
    return {
        "a": float(coef[0]),
        "b": float(coef[1]),
        "a_se": float(se[0]),
        "b_se": float(se[1]),
        "a_ci": _t_interval(coef[0], se[0], dof),
        "b_ci": _t_interval(coef[1], se[1], dof),
        "n": n,
        "censored": censored,
    }


def cell_capacity(searches: pd.DataFrame, threshold: float = 0.5) -> pd.DataFrame:
    """Per (layers, D, N): the geometric mean κ*_θ over uncensored seeds with a 95 % t-interval on log κ, the seeds
    and the censored count."""
    col = f"kappa{round(threshold * 100)}"
    rows = []
    for (layers, D, N), g in searches.groupby(["layers", "D", "N"]):
        k = g[col].dropna().astype(float)
        st = mean_interval(np.log(k.to_numpy()).tolist())  # the book's one mean and t-interval, on log κ
        rows.append(
            {
                "layers": layers,
                "D": D,
                "N": N,
                "DN": D * N,
                "kappa": math.exp(st["mean"]),
                "kappa_ci_low": math.exp(st["ci_low"]),
                "kappa_ci_high": math.exp(st["ci_high"]),
                "per_seed": " ".join(f"{x:.2f}" for x in k),
                "n_seeds": st["n"],
                "censored": int(g[col].isna().sum()),
            }
        )
    return pd.DataFrame(rows)


def layer_ratios(searches: pd.DataFrame, threshold: float = 0.5) -> pd.DataFrame:
    """For each 2-layer cell (D, N) with a 1-layer cell (D, 2N) in the grid (Thms 4/6: N_eff = Λ N), per seed
    log₂ of κ*(2 layers, D, N) over κ*(1 layer, D, 2N)."""
    col = f"kappa{round(threshold * 100)}"
    s = searches.set_index(["layers", "D", "N", "seed"])[col]
    rows = []
    for (layers, D, N, seed), k2 in s.items():
        if layers != 2 or (1, D, 2 * N, seed) not in s.index:
            continue
        k1 = s[(1, D, 2 * N, seed)]
        ok = pd.notna(k2) and pd.notna(k1)
        rows.append(
            {
                "D": D,
                "N": N,
                "seed": seed,
                "kappa_2layers": k2,
                "kappa_1layer_2N": k1,
                "log2_ratio": math.log2(float(k2) / float(k1)) if ok else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def u_shape(by_pair) -> dict:
    """Primacy and recency of a recall profile by pair order (κ ≥ 4): the mean recall of the first quarter of the
    pairs (at least one) minus that of the middle, and of the last quarter minus the middle."""
    acc = np.asarray(by_pair, dtype=float)
    k = len(acc)
    if k < 4:
        raise ValueError(f"a U needs a first quarter, a middle and a last quarter: κ ≥ 4 pairs, got {k}.")
    q = max(1, k // 4)
    mid = acc[q : k - q].mean()
    return {"primacy": float(acc[:q].mean() - mid), "recency": float(acc[k - q :].mean() - mid)}


def edge_probes(probes: pd.DataFrame, target: float = 0.5, min_kappa: int = 4) -> pd.DataFrame:
    """Per search (layers, D, N, seed): its probe with κ ≥ ``min_kappa`` whose recall is nearest ``target`` (ties:
    the smaller κ)."""
    p = probes[probes.kappa >= min_kappa].assign(gap=lambda d: (d.accuracy - target).abs())
    p = p.sort_values(["layers", "D", "N", "seed", "gap", "kappa"])
    return p.groupby(["layers", "D", "N", "seed"], as_index=False).head(1).drop(columns="gap").reset_index(drop=True)
