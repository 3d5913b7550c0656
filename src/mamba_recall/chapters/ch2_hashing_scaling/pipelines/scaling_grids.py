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
