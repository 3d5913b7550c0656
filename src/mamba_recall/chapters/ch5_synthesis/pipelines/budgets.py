"""Chapter 5 at its training budgets, side by side: paper 002's code schedule (``ch5_capacity``, 1,500 steps), the
long one (``ch5_capacity_long``, 4× the steps, the schedule stretched) and the long one at the learning rate the
declared sweep picked per cell (``ch5_capacity_tuned``). The longer budgets' committed bundles may be *partial* (a
grid still running: written only when asked, the grid command's ``--partial``, and marked ``data.partial`` = "k of n
jobs"). The verdicts read the last of these budgets whose grid is complete (:func:`judged_bundle`).

Every number here is read from a bundle and from its own config (its steps, target recall, V, its runs' rates), never
from a default: the same function gives every budget's."""

from __future__ import annotations

import pandas as pd

from mamba_recall.chapters.ch5_synthesis.pipelines import synthesis as syn

__all__ = [
    "budget_label",
    "budget_searches",
    "capacity_by_budget",
    "fits_by_budget",
    "judged_bundle",
    "long_bundle",
    "partial_label",
    "sweep_bundle",
    "tuned_bundle",
]


def _running_bundle(name: str, what: str, log):
    """The committed bundle of ``name`` (the strongest preset's, through :func:`mamba_recall.results.evidence`),
    complete or partial, or None when none is committed; an incomplete bundle that does not say it is partial was not
    written by ``--partial`` and is refused with the command that remakes it (:func:`partial_label`). ``log`` is told
    ``"<what>: <bundle>[, PARTIAL: k of n jobs]"``."""
    from mamba_recall.results import BundleMissing, evidence

    try:
        b = evidence(name, complete=False)
    except BundleMissing:
        return None
    label = partial_label(b)  # an unmarked incomplete bundle stops here
    log(f"{what}: {b.path.stem}" + (f", {label}" if label else ""))
    return b


def long_bundle(log=print):
    """The long budget's committed bundle (``ch5_capacity_long``), complete or partial, or None when none is
    committed (the page then shows its command and cost): :func:`_running_bundle`."""
    return _running_bundle("ch5_capacity_long", "long budget", log)


def tuned_bundle(log=print):
    """The tuned budget's committed bundle (``ch5_capacity_tuned``: the long schedule at the sweep's rate per cell),
    complete or partial, or None when none is committed: :func:`_running_bundle`."""
    return _running_bundle("ch5_capacity_tuned", "tuned budget", log)


def sweep_bundle(log=print):
    """The learning-rate sweep's committed bundle (``ch5_capacity_lr_sweep``), complete or partial, or None when
    none is committed (the page then shows the declared sweep, its command and cost): :func:`_running_bundle`."""
    from mamba_recall.chapters.ch5_synthesis.configs import LR_SWEEP

    return _running_bundle(LR_SWEEP, "learning-rate sweep", log)


def partial_label(bundle) -> str:
    """``"PARTIAL: k of n jobs"`` for a partial bundle, ``""`` for a complete one. ValueError for an incomplete
    bundle without its ``partial`` mark (one written implicitly), naming the command that writes it marked."""
    data = bundle.data
    if data.get("complete"):
        return ""
    if not data.get("partial"):
        raise ValueError(
            f"{bundle.path}: {data.get('jobs_finished')} of {data.get('jobs_total')} jobs, not marked partial; "
            "rewrite it with its experiment's grid command and --aggregate-only --partial (python -m mamba_recall "
            "grid <experiment> --preset P --aggregate-only --partial: a grid's unfinished bundle is written only when "
            "asked)."
        )
    return f"PARTIAL: {data['partial']}"


#: how the page names each budget (``config.budget`` of a ``ch5_capacity*`` bundle) after its steps
_BUDGET_NAMES = {"paper002": "", "long": "", "tuned": "rate per cell"}


def budget_label(bundle) -> str:
    """The budget of a bundle as the page names it, from its own config: ``"1500 steps"``, ``"6000 steps, PARTIAL: 14
    of 36 jobs"``, or ``"6000 steps, rate per cell, PARTIAL: 9 of 36 jobs"`` at the tuned budget."""
    parts = [f"{bundle.config['job_config']['steps']} steps", _BUDGET_NAMES.get(bundle.config.get("budget"), ""),
             partial_label(bundle)]  # fmt: skip
    return ", ".join(p for p in parts if p)


def judged_bundle(short, *longer):
    """The bundle the verdicts read: the last of the ``longer`` budgets (in declared order: long, tuned) whose grid is
    complete, else paper 002's budget's (``short``); a partial grid is shown, never judged."""
    done = [b for b in longer if b is not None and b.data.get("complete")]
    return done[-1] if done else short


def budget_searches(short, longer):
    """``[(label, searches, bundle)]``: each budget's searches, and before each partial longer budget the short
    budget's searches on the same (layers, D, N, seed) as that grid has finished (like with like while it runs),
    labelled by that grid's budget name (every label unique: the law table pivots on it)."""
    keys = ["layers", "D", "N", "seed"]
    sets = [(budget_label(short), short.tables["searches"], short)]
    for b in longer:
        if b is None:
            continue
        if partial_label(b):
            same = short.tables["searches"].merge(b.tables["searches"][keys], on=keys)
            sets.append((f"{budget_label(short)}, the {b.config.get('budget', 'longer')} grid's searches", same, short))
        sets.append((budget_label(b), b.tables["searches"], b))
    return sets


def _cells(bundle, threshold: float) -> pd.DataFrame:
    job = bundle.config["job_config"]
    searches, probes = bundle.tables["searches"], bundle.tables["probes"]
    cap = syn.cell_capacity(searches, threshold)
    seeds = searches.groupby(["layers", "D", "N"]).seed.nunique().rename("seeds").reset_index()
    conv = syn.budget_by_cell(probes, int(job["steps"]), float(job["eval"]["target_accuracy"]))
    return cap.merge(seeds, on=["layers", "D", "N"]).merge(conv, on=["layers", "D", "N"])


def capacity_by_budget(short, *longer, threshold: float = 0.5) -> pd.DataFrame:
    """Per budget (``short`` then each of ``longer``) and cell with finished searches: the searches (seeds)
    finished, κ*_θ (geometric mean over uncensored seeds, 95 % interval:
    :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.synthesis.cell_capacity`), the probes and the share that
    converged (:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.synthesis.budget_by_cell`, each bundle at its
    own steps and target)."""
    bundles = [short, *(b for b in longer if b is not None)]
    t = pd.concat([_cells(b, threshold).assign(budget=budget_label(b)) for b in bundles], ignore_index=True)
    cols = ["budget", "layers", "D", "N", "seeds", "censored", "kappa", "kappa_ci_low", "kappa_ci_high", "per_seed"]
    return t[cols + ["probes", "at_cap", "unconverged", "converged_share"]]


def fits_by_budget(short, *longer, threshold: float = 0.5) -> pd.DataFrame:
    """Per budget: the one-layer fits over every finished uncensored search,
    log κ*_θ = α log(D·N) + c and log κ*_θ = a log D + b log N + c, with their 95 % intervals
    (:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.synthesis.power_fit`, ``two_factor_fit``), the number
    of searches and of one-layer cells they rest on. Before each partial grid, a row fits the short budget on the
    same searches (cells and seeds) that grid has finished, so the two compare like with like."""
    rows = []
    for label, s, _ in budget_searches(short, longer):
        p, two = syn.power_fit(s, threshold, layers=1), syn.two_factor_fit(s, threshold, layers=1)
        one = s[s.layers == 1]
        rows.append(
            {
                "budget": label,
                "searches": p["n"],
                "cells": len(one.groupby(["D", "N"])),
                "alpha": p["alpha"],
                "alpha_ci": p["alpha_ci"],
                "a": two["a"],
                "a_ci": two["a_ci"],
                "b": two["b"],
                "b_ci": two["b_ci"],
            }
        )
    return pd.DataFrame(rows)
