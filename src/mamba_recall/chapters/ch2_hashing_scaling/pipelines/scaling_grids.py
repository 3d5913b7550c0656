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


def noninferior_cells(diffs, saturated, margin: float = 0.02, alpha: float = 0.05) -> dict:
    r"""002/Fig12's 'the full model always performs better' on the compared cells, three ways per cell (declared
    before the full-model run). ``diffs``: (cells, seeds), the paired-by-seed accuracy difference full − simplified;
    ``saturated``: (cells,), both models at ≥ 0.99 there.

    A cell **holds** when it is saturated or the lower end of its 95 % Student-t interval of the mean difference is
    ≥ −``margin``; it **fails** only when the upper end of its interval at the family-wise level 1 − ``alpha``/k
    (Bonferroni over the k compared cells that are not saturated) is below −``margin``, so that with full =
    simplified in every cell noise fails any cell with probability ≤ ``alpha``/2; otherwise it is undecided.
    Returns k, the shares holding and not failing (the interval [holding, not failing] the rule reads as
    ``cells_holding``: ≥ 1 holds only when every cell holds, fails when one cell fails, else undecided), and the
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
