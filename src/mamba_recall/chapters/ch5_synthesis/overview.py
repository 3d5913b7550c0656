"""Chapter 5's overview page, generated where its numbers change: ``book/05_synthesis/overview.md`` holds the marker
:data:`LONGER_BUDGETS`, and the book's build replaces it (:data:`BLOCKS`, read by
:func:`mamba_recall.cli._run.fill_chapter_blocks`) with the longer budgets' numbers as the committed bundles give them
when the book is built: which searches each running grid has finished, κ*₅₀ per cell at every budget, the fits
(α; a, b) with their 95 % intervals, each law's mean error, and the share of converged probes per budget and per
hypothesis. The page never quotes a partial grid's numbers by hand, so they cannot fall behind its runs.

Every number is the page 5.1's (the same functions: :mod:`~mamba_recall.chapters.ch5_synthesis.views`,
:mod:`~mamba_recall.chapters.ch5_synthesis.pipelines.budgets`, :func:`~mamba_recall.chapters.ch5_synthesis.claims.
synthesis.budget_reading`), read descriptively: no verdict reads a partial grid
(:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.budgets.judged_bundle`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["BLOCKS", "LONGER_BUDGETS", "longer_budgets"]

#: the marker in ``book/05_synthesis/overview.md`` that :func:`longer_budgets` replaces
LONGER_BUDGETS = "<!-- CH5_LONGER_BUDGETS -->"


def _table(frame: pd.DataFrame) -> str:
    """``frame`` as a MyST (pipe) table, its index dropped, ``|`` in a cell escaped."""
    cols = [str(c) for c in frame.columns]
    cell = lambda v: str(v).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


#: the overview's short names of the budgets (page 5.1 spells them out: :func:`~mamba_recall.chapters.
#: ch5_synthesis.pipelines.budgets.budget_label`), so that a table of five budgets fits a phone's width
_SHORT = {"paper002": "1,500 steps", "long": "long", "tuned": "tuned"}


def _short(label: str, bundles) -> str:
    """The short name of a budget column ``label`` (:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.budgets.
    budget_searches`' labels): ``"long (20/36)"``, ``"1,500 on long's"`` (the short budget on the searches the long
    grid has finished), ``"1,500 steps"``."""
    from .pipelines.budgets import budget_label

    for b in bundles:
        name = _SHORT[b.config.get("budget", "paper002")]
        own = budget_label(b)
        if label == own:
            d = b.data
            return name if d.get("complete") else f"{name} ({d['jobs_finished']}/{d['jobs_total']})"
        if label.endswith(f"the {b.config.get('budget')} grid's searches"):
            return f"1,500 on {name}'s"
    raise ValueError(f"{label!r} names none of the budgets' bundles")


def _cells(bundle) -> str:
    s = bundle.tables["searches"]
    cells = s.groupby(["layers", "D", "N"]).seed.nunique()
    return ", ".join(f"({la}, {d}, {n}) ×{k}" for (la, d, n), k in cells.items())


def longer_budgets(log=lambda *_: None) -> str:
    """The Markdown of :data:`LONGER_BUDGETS` from the committed ``ch5_capacity*`` bundles at ``cpu-hours``: per
    longer budget (6,000 steps; 6,000 steps at the sweep's rate per cell) its bundle, finished searches and cells
    (Λ, D, N) × seeds, then the tables of page 5.1 (capacity per cell, fits, law errors) and the converged share of
    every hypothesis's probes at each budget. A budget with no committed bundle says so, with its command."""
    from mamba_recall.results import evidence

    from .claims.synthesis import budget_reading
    from .pipelines import budgets
    from . import views
    from mamba_recall.claims import claims_of

    short = evidence("ch5_capacity", preset="cpu-hours")
    named = {
        "long, 6,000 steps": budgets.long_bundle(log),
        "tuned, 6,000 steps at the sweep's rate per cell": budgets.tuned_bundle(log),
    }
    longer = [b for b in named.values() if b is not None]
    out = []
    for what, b in named.items():
        if b is None:
            out.append(f"- **{what}**: no bundle committed yet.")
            continue
        data = b.data
        state = f"{data['jobs_finished']} of {data['jobs_total']} searches committed" + (
            "" if data.get("complete") else " (partial: shown, never judged)"
        )
        train = float(b.tables["searches"].train_seconds.sum())
        out.append(
            f"- **{what}** (`{b.path.stem}`): {state}, {train:,.0f} s of training; cells (Λ, D, N) × seeds: {_cells(b)}."
        )
    if not longer:
        return "\n".join(out) + "\n"
    bundles = (short, *longer)
    short_of = lambda label: _short(label, bundles)  # noqa: E731
    cap = views.capacity_table(short, *longer)
    col = next(c for c in cap.columns if c.startswith("κ*"))
    pivot = cap.pivot(index="cell (Λ, D, N)", columns="budget", values=col)
    order = list(dict.fromkeys(cap.budget))
    cells = list(dict.fromkeys(cap["cell (Λ, D, N)"]))
    pivot = pivot.reindex(index=cells, columns=order).fillna("—").rename(columns=short_of).reset_index()
    fits = views.fits_table(short, *longer).assign(budget=lambda t: t.budget.map(short_of))
    errors = views.law_error_table(short, *longer).rename(columns=short_of)
    means = errors.map(lambda e: e.split(" (")[0] if isinstance(e, str) and "(" in e else e).reset_index()
    hyps = [c.id for c in claims_of(chapter=5) if c.id.startswith("book/H")]
    conv = []
    for cid in hyps:
        row = {"hypothesis": cid.split("/", 1)[1].split("-", 1)[0]}
        for b in (short, *longer):
            r = budget_reading(cid, b)
            row[short_of(budgets.budget_label(b))] = (
                f"{1 - r['share']:.0%} of {r['probes']}" if r["probes"] else "none yet"
            )
        conv.append(row)
    total = {short_of(budgets.budget_label(b)): _converged(b) for b in bundles}
    out += [
        "",
        "**κ\\*₅₀ per cell** (geometric mean over seeds, 95 % interval; long: 6,000 steps, tuned: 6,000 steps at the "
        "sweep's rate per cell, (k/36): the jobs committed of an unfinished grid):",
        "",
        _table(pivot),
        "",
        "**The fits over one-layer searches**, log κ\\*₅₀ = α log(D·N) + c and a log D + b log N + c (95 % "
        'intervals; "1,500 on long\'s": the 1,500-step searches of the cells and seeds the long grid has finished, '
        "like with like):",
        "",
        _table(fits),
        "",
        "**Each law's mean error**, log₂(measured κ\\*₅₀ / predicted) over the one-layer cells (below zero: the law "
        "predicts more than the models hold):",
        "",
        _table(means.rename(columns={"theory": "law"})),
        "",
        "**Converged probes** (reached the target, not stopped at the step cap or on the ≈ 1/κ plateau): "
        + "; ".join(f"{k}: {v}" for k, v in total.items())
        + ". Per hypothesis (the rule asks 90 % before any verdict):",
        "",
        _table(pd.DataFrame(conv)),
    ]
    return "\n".join(out) + "\n"


def _converged(bundle) -> str:
    """``"40 of 88 (45%): 30 at the cap, 18 on the plateau"`` over every probe of ``bundle``: the per-cell counts of
    :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.synthesis.budget_by_cell` summed (a probe that did not
    converge stopped at the cap or on the ≈ 1/κ plateau)."""
    from .pipelines import synthesis as syn

    job = bundle.config["job_config"]
    cells = syn.budget_by_cell(bundle.tables["probes"], int(job["steps"]), float(job["eval"]["target_accuracy"]))
    n, cap, unconverged = (int(cells[c].sum()) for c in ("probes", "at_cap", "unconverged"))
    share = (n - unconverged) / n if n else np.nan
    return f"{n - unconverged} of {n} ({share:.0%}): {cap} at the cap, {unconverged - cap} on the plateau"


#: marker → the function that writes its block (the build's :func:`mamba_recall.cli._run.fill_chapter_blocks`)
BLOCKS = {LONGER_BUDGETS: longer_budgets}
