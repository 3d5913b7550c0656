r"""Chapter 2's trained grids as the book reads them: the run-store bundles of
:mod:`mamba_recall.chapters.ch2_hashing_scaling.runners.figure_grids` (Fig. 7, Figs. 10–11, Fig. 8 + Thm 5, Tab. 10 of paper 002 with 3
seeds; :func:`describe`) and of :mod:`mamba_recall.chapters.ch2_hashing_scaling.runners.reference_grid` (the authors' README reference
grid, compared with their published accuracies; :func:`comparison`). Both read a bundle the page loaded with
:func:`mamba_recall.results.evidence`.
"""

from __future__ import annotations

import pandas as pd

#: run-store part of ``ch2_scaling`` → the columns that name a cell of its bundle (the runner aggregates its runs by them)
CELL_COLUMNS = {
    "fig7": ["D", "N", "layers"],
    "fig10_11": ["task", "repeats", "layers", "post_query"],
    "fig8": ["pattern", "values", "M", "N"],
    "thm5": ["pattern", "values", "M", "N"],
    "tab10": ["row"],
}


def describe(bundle) -> tuple[str, pd.DataFrame]:
    """For the book: one line naming the bundle (preset, seeds, jobs finished, CPU time, commit, the command that
    remakes it) and its cells with the mean best accuracy over seeds, the 95 % interval, the per-seed values and
    the seed-max."""
    part, runs = bundle.config["part"], bundle.data["runs"]
    by = CELL_COLUMNS[part]
    cols = by + ["n_seeds", "best_accuracy_mean", "best_accuracy_ci_low", "best_accuracy_ci_high"]
    cols += ["best_accuracy_per_seed", "best_accuracy_max"]
    head = (
        f"bundle {bundle.name}: preset {bundle.config['preset']} ({bundle.config['reproduces']}), "
        f"{bundle.config['seeds']} seeds, {bundle.data['jobs_finished']} of {bundle.data['jobs_total']} runs, "
        f"{runs['cpu_seconds'] / 3600:.2f} CPU-hours on {', '.join(runs['devices'])}, commits "
        f"{', '.join(c[:10] for c in runs['commits'])}\nregenerate: {bundle.command}"
    )
    return head, bundle.tables["figure"][cols]


def comparison(bundle) -> pd.DataFrame:
    """For the book: a ``ch2_reference_grid`` bundle's comparison with the authors, one row per cell (D, N, seeds,
    our mean and 95 % interval, per-seed values, seed-max, theirs, differences)."""
    cols = [
        "D",
        "N",
        "n_seeds",
        "best_accuracy_mean",
        "best_accuracy_ci_low",
        "best_accuracy_ci_high",
        "best_accuracy_per_seed",
        "best_accuracy_max",
        "authors",
        "diff_mean",
        "diff_seed_max",
        "authors_within_rounding",
    ]
    table = bundle.tables["comparison"]
    return table[[c for c in cols if c in table]]


def best_of_replicates(runs, m: int, cell=("D", "N"), value: str = "acc") -> "pd.DataFrame":
    """The paper's estimand (App. J.5: the best of 10 seeds, because it asks whether a recall solution exists, not
    how often optimisation finds it) with replicates to carry an interval: the seeds of each cell, in seed order,
    are grouped m at a time into replicates (seeds 0…m−1 the first, m…2m−1 the second, …) and each replicate's
    ``value`` is the best of its m. ``runs``: one row per cell and seed (columns ``cell``, ``seed``, ``value``);
    returns one row per cell and replicate (``replicate``). ValueError when a cell's seeds do not fill whole
    replicates (a best-of-2 beside a best-of-3 would mix estimands). 002/Fig12 and 002/AppD-phase-transition read
    5 and 3 replicates, each the best of 3."""
    cell = list(cell)
    out = []
    for key, g in runs.sort_values("seed").groupby(cell, sort=True):
        seeds = list(g["seed"])
        if len(seeds) % m:
            raise ValueError(
                f"cell {dict(zip(cell, key if isinstance(key, tuple) else (key,)))} has {len(seeds)} seeds, not a "
                f"multiple of {m}: train whole replicates (m = {m} seeds each)."
            )
        vals = g[value].to_numpy()
        for r in range(len(seeds) // m):
            out.append({**dict(zip(cell, key if isinstance(key, tuple) else (key,))), "replicate": r,
                        value: float(vals[r * m:(r + 1) * m].max())})  # fmt: skip
    return pd.DataFrame(out)


def detectable_gap(k: int, n: int, spread: float, margin: float = 0.02, alpha: float = 0.05) -> float:
    r"""The failing side's power in :func:`noninferior_cells`, as the smallest true gap full − simplified (a
    positive number: the full model that much worse in one cell) that the cell fails at with probability ≥ ½:
    gap = margin + t_{1−α/2k, n−1} · spread/√n, for k compared cells, n replicates per cell and a replicate
    spread (the standard deviation of the paired difference across replicates). The median of the cell's
    family-wise upper end is −gap + t·spread/√n when the sample s.d. equals ``spread``, so at this gap it sits on
    −margin; the sample s.d.'s median lies a little below the spread, so the cell fails a little more often than
    half the time (0.5–0.7 at n = 3 and 5, simulated in the tests). 002/Fig12's rule states it at the paper grid's
    size (k ≈ 30)."""
    import math

    from mamba_recall.runstore import t_quantile

    return margin + t_quantile(1 - alpha / (2 * k), n - 1) * spread / math.sqrt(n)


def noninferior_cells(diffs, saturated, margin: float = 0.02, alpha: float = 0.05) -> dict:
    r"""002/Fig12's 'the full model always performs better' on the compared cells, three ways per cell (declared
    before the full-model run). ``diffs``: (cells, seeds), the paired-by-seed accuracy difference full − simplified;
    ``saturated``: (cells,), both models at ≥ 0.99 there.

    A cell **holds** when it is saturated or the lower end of its 95 % Student-t interval of the mean difference is
    ≥ −``margin``; it **fails** only when the upper end of its interval at the family-wise level 1 − ``alpha``/k
    (Bonferroni over the k compared cells that are not saturated) is below −``margin``, so that with full =
    simplified in every cell noise fails any cell with probability ≤ ``alpha``/2; otherwise it is undecided.
    Returns k, the shares holding and not failing (the interval [holding, not failing] the rule reads as
    ``cells_holding_fraction``: ≥ 1 holds only when every cell holds, fails when one cell fails, else undecided), and the
    per-cell classes."""
    import numpy as np

    from mamba_recall.runstore import t_quantile

    d = np.asarray(diffs, dtype=float)
    sat = np.asarray(saturated, dtype=bool)
    n = d.shape[1]
    mean, se = d.mean(axis=1), d.std(axis=1, ddof=1) / np.sqrt(n)
    k = max(int((~sat).sum()), 1)
    lower = mean - t_quantile(0.975, n - 1) * se
    upper_fw = mean + t_quantile(1 - alpha / (2 * k), n - 1) * se
    holds = sat | (lower >= -margin)
    fails = ~sat & (upper_fw < -margin)
    classes = np.where(holds, "holds", np.where(fails, "fails", "undecided"))
    return {
        "k": k,
        "holding_share": float(holds.mean()),
        "not_failing_share": float(1 - fails.mean()),
        "classes": classes.tolist(),
    }


# ------------------------------------------- App. D, "Phase transitions": the band reader of 002/AppD-phase-transition
def column_band(n_values, accuracy, floor: float = 0.0, low: float = 0.1, high: float = 0.9) -> float:
    r"""The width of one D column's transition, in doublings of N (at fixed D, doublings of D·N): the accuracy over
    the column's N is first made non-decreasing (an isotonic fit, ``scipy.optimize.isotonic_regression``), rescaled
    from the floor ``floor`` (the generator's chance level) to 1, q = (acc − floor)/(1 − floor), and the 10 % and 90 %
    crossings of q are read by linear interpolation in log₂ N between the two grid points around each;
    band = log₂ N₉₀ − log₂ N₁₀. NaN when the column does not cross both levels inside the grid (it starts above 10 %
    or ends below 90 %)."""
    import numpy as np
    from scipy.optimize import isotonic_regression

    x = np.log2(np.asarray(n_values, dtype=float))
    if len(x) < 2 or np.any(np.diff(x) <= 0):
        raise ValueError(f"column_band needs at least two N, strictly increasing; got {list(n_values)}.")
    q = (isotonic_regression(np.asarray(accuracy, dtype=float)).x - floor) / (1 - floor)

    def crossing(level):
        above = np.nonzero(q >= level)[0]
        if len(above) == 0 or above[0] == 0:
            return np.nan
        j = above[0]
        return x[j - 1] + (level - q[j - 1]) * (x[j] - x[j - 1]) / (q[j] - q[j - 1])

    return float(crossing(high) - crossing(low))


def phase_reading(cells, floor: float = 0.0, near: float = 0.05) -> dict:
    r"""002/AppD-phase-transition's reading of one (D, N) accuracy grid (``cells``: columns D, N, acc; one row per
    cell): the shares of cells near one (acc ≥ 1 − ``near``), near zero (acc − ``floor`` ≤ ``near``) and between
    (``share_transition``), and per D
    column that holds both (its lowest cell near zero, its highest near one) the band of :func:`column_band`; the
    reading is the median band over those columns (``median_band_octaves``; NaN when no column holds both).
    ``bands``: D → band, for the paired widening (:func:`band_widening`)."""
    import numpy as np

    acc = cells["acc"].to_numpy(dtype=float)
    bands = {}
    for D, col in cells.sort_values("N").groupby("D"):
        a = col["acc"].to_numpy(dtype=float)
        if a.min() - floor <= near and a.max() >= 1 - near:
            b = column_band(col["N"].to_numpy(), a, floor)
            if not np.isnan(b):
                bands[int(D)] = b
    one, zero = float(np.mean(acc >= 1 - near)), float(np.mean(acc - floor <= near))
    return {
        "share_near_one": one,
        "share_near_zero": zero,
        "share_transition": 1 - one - zero,
        "columns": len(bands),
        "median_band_octaves": float(np.median(list(bands.values()))) if bands else float("nan"),
        "bands": bands,
    }


def band_widening(smaller_v: dict, larger_v: dict) -> float:
    """How much wider the band is at the larger V than at the smaller one, in doublings, paired over the D columns
    both readings (:func:`phase_reading`) hold: the median of the per-column differences (NaN with none shared)."""
    import numpy as np

    shared = sorted(set(smaller_v["bands"]) & set(larger_v["bands"]))
    if not shared:
        return float("nan")
    return float(np.median([larger_v["bands"][d] - smaller_v["bands"][d] for d in shared]))


def eq78_shape_grid(V: int, Ds, Ns, dn_half: float) -> "pd.DataFrame":
    r"""The ideal theory's accuracy surface for the band reader's positive control: Eq. 78's form
    p = Φ(c·√(D·N))^{V/2} on the grid (cells with N ≤ D), with the scale c set so that p = ½ at D·N = ``dn_half``
    (Φ(c√dn_half) = 2^{−2/V}). The law's own scale at the paper's sizes (Eq. 77 at N_f = 16) puts every cell of the
    grid below 0.95 (the law is pessimistic, Chapter 2's finding), so the control keeps Eq. 78's shape and places
    its step inside the grid: it tests the reader, not the law."""
    import numpy as np
    from scipy.special import log_ndtr, ndtri

    c = ndtri(0.5 ** (2 / V)) / np.sqrt(dn_half)
    rows = [(D, N) for D in Ds for N in Ns if N <= D]
    d, n = (np.array(v, dtype=float) for v in zip(*rows))
    return pd.DataFrame({"D": d.astype(int), "N": n.astype(int), "acc": np.exp((V / 2) * log_ndtr(c * np.sqrt(d * n)))})
