"""Chapter 5's charts and explorers: capacity against D·N with every theory's line, the recall profile by pair
order at and below the edge of capacity, Δ at keys against the untrained twins, and the (D, N) explorer
(precomputed, in the HTML) and the live one (a tiny model, in Jupyter)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from mamba_recall.chapters.ch5_synthesis.pipelines import synthesis as syn
from mamba_recall.chapters.ch5_synthesis.pipelines.budgets import budget_label
from mamba_recall.theory.capacity import kappa_at
from mamba_recall.theory.mqar_constructions import construction_kappa

#: paper 002's laws as (label, law, a) for :func:`mamba_recall.theory.capacity.kappa_at`; ``rev_mV`` with the
#: authors' constant for full models (a = 5/8).
LAWS = (
    ("Eq. 77 (Thm 3)", "eq77", 3.0),
    ("Eq. 15 as printed", "eq15", 3.0),
    ("Eq. 15 corrected", "eq15_consistent", 3.0),
    ("authors' revision, a = 5/8", "rev_mV", 5 / 8),
)
CONSTRUCTION = "construction (003, Thm 2)"

__all__ = [
    "LAWS",
    "budgets_chart",
    "capacity_chart",
    "capacity_table",
    "convergence_chart",
    "convergence_charts",
    "convergence_frame",
    "fits_table",
    "law_error_table",
    "law_errors",
    "cell_explorer",
    "delta_chart",
    "law_table",
    "live_capacity_explorer",
    "profile_chart",
    "state_chart",
    "sweep_table",
    "profile_frame",
    "theory_table",
]

_LOG2 = alt.Scale(type="log", base=2)


def law_table(searches: pd.DataFrame, V: int, threshold: float = 0.5) -> pd.DataFrame:
    """Per cell and theory: the predicted κ*_θ, the measured geometric mean and the error log₂(measured/predicted)
    (paper 002's laws with N_eff = layers·N; paper 003's construction κ* = layers·N)."""
    import math

    cells = syn.cell_capacity(searches, threshold)
    rows = []
    for _, c in cells.iterrows():
        layers, D, N = int(c.layers), int(c.D), int(c.N)
        preds = [(label, kappa_at(V, D, N, threshold, law, a, layers)) for label, law, a in LAWS]
        preds.append((CONSTRUCTION, construction_kappa(N, layers)))
        for label, pred in preds:
            err = math.log2(c.kappa / pred) if pred > 0 and c.kappa > 0 else float("nan")
            rows.append({**c.to_dict(), "theory": label, "predicted": pred, "log2_error": err})
    return pd.DataFrame(rows)


def capacity_chart(
    searches: pd.DataFrame,
    V: int,
    threshold: float = 0.5,
    *,
    width: int = 420,
    title: str | None = None,
    y_axis: bool = True,
) -> alt.LayerChart:
    """κ*_θ against D·N on log axes: each cell's geometric mean over seeds with its 95 % interval (black; 1 and 2
    layers by shape, 2 layers at N_eff = 2N), the seeds (grey), each law of paper 002 (dashed lines) and paper 003's
    construction κ* = Λ N (crosses). ``y_axis=False`` draws no y axis (a panel beside one that has it, on a shared
    scale: :func:`budgets_chart`)."""
    laws = law_table(searches, V, threshold)
    cells = syn.cell_capacity(searches, threshold)
    cells = cells.assign(DN_eff=cells.D * cells.N * cells.layers, layers=cells.layers.astype(str) + " layer(s)")
    tag = f"kappa{round(threshold * 100)}"
    seeds = searches.dropna(subset=[tag]).assign(DN_eff=lambda d: d.D * d.N * d.layers, kappa=lambda d: d[tag])
    laws = (
        laws.assign(DN_eff=laws.D * laws.N * laws.layers).drop(columns="kappa").rename(columns={"predicted": "kappa"})
    )
    lines = laws[(laws.theory != CONSTRUCTION) & (laws.kappa >= 1) & (laws.layers == 1)]
    x = alt.X("DN_eff:Q", scale=_LOG2, title="D·N (2 layers: D·2N)")
    axis = alt.Axis(title=f"capacity κ* at {threshold:.0%} recall") if y_axis else None
    y = alt.Y("kappa:Q", scale=_LOG2, axis=axis)
    parts = []
    if len(lines):
        parts.append(
            alt.Chart(lines)
            .mark_line(strokeDash=[5, 3])
            .encode(x=x, y=y, color=alt.Color("theory:N", title="theory"), tooltip=["theory", "D", "N", "kappa"])
        )
    parts.append(
        alt.Chart(laws[laws.theory == CONSTRUCTION])
        .mark_point(shape="cross", size=70, color="#9467bd")
        .encode(x=x, y=y, tooltip=["theory", "layers", "D", "N", "kappa"])
    )
    if len(seeds):
        parts.append(
            alt.Chart(seeds)
            .mark_circle(color="#999", size=25)
            .encode(x=x, y=y, tooltip=["layers", "D", "N", "seed", "kappa"])
        )
    bars = cells.dropna(subset=["kappa_ci_low"])  # one seed has no interval: no bar drawn (and no empty layer)
    if len(bars):
        parts.append(
            alt.Chart(bars)
            .mark_rule(color="black")
            .encode(x=x, y=alt.Y("kappa_ci_low:Q", axis=axis), y2="kappa_ci_high:Q")
        )
    measured = cells.dropna(subset=["kappa"])
    if len(measured):
        parts.append(
            alt.Chart(measured)
            .mark_point(filled=True, color="black", size=70)
            .encode(
                x=x,
                y=y,
                shape=alt.Shape("layers:N", title="measured"),
                tooltip=["layers", "D", "N", alt.Tooltip("kappa:Q", format=".2f"), "per_seed", "censored"],
            )
        )
    return alt.layer(*parts).properties(
        width=width, height=300, title=title or f"capacity at {threshold:.0%} recall against D·N"
    )


def budgets_chart(short, *longer, threshold: float = 0.5) -> alt.HConcatChart:
    """κ*_θ against D·N at each training budget side by side: paper 002's code schedule (``short``, a
    ``ch5_capacity`` bundle) and each longer one committed (``longer``: ``ch5_capacity_long``, ``ch5_capacity_tuned``
    bundles, their finished cells only and titled PARTIAL with the job count while their grid runs; none: a panel
    saying the long budget has not run yet, its command and cost printed beside the chart). Each panel's title is its
    bundle's :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.budgets.budget_label`; the panels share their
    axes' scales, only the first draws the y axis, and the legends sit below the panels.

    The width does not depend on the data: the y axis's labels and the legends' entries (which grow with the
    cells committed) take no room beside the panels. Three panels and the axis take about 850 pixels, inside the
    964-pixel column of the page at a 1300-pixel window, so the chart is drawn unscaled there
    (``tools/browser_check.py``: no chart text below 10 pixels)."""
    bundles = [short, *(b for b in longer if b is not None)]
    width = 340 if len(bundles) <= 2 else 250
    panels = [
        capacity_chart(
            b.tables["searches"],
            b.config["job_config"]["V"],
            threshold,
            width=width,
            title=budget_label(b),
            y_axis=i == 0,
        )
        for i, b in enumerate(bundles)
    ]
    if len(bundles) == 1:
        note = pd.DataFrame({"y": [0, 1], "text": ["long budget (4× the steps):", "not run yet"]})
        panels.append(
            alt.Chart(note)
            .mark_text(size=13, align="center")
            .encode(y=alt.Y("y:O", axis=None), text="text:N")
            .properties(width=200, height=300, title="long budget")
        )
    # one x and one y scale for every panel: the budgets compare by eye at the same place on the page
    return (
        alt.hconcat(*panels)
        .resolve_scale(color="shared", x="shared", y="shared")
        .configure_legend(orient="bottom", direction="vertical", columns=2)
    )


def convergence_frame(probes: pd.DataFrame, steps: int, target: float) -> pd.DataFrame:
    """Per cell (layers, D, N): probes, how many stopped at the step cap and the share that converged (reached the
    target recall or stopped on the plateau rule before the cap), over every seed."""
    t = syn.budget_by_cell(probes, steps, target)
    return t.assign(converged=t.converged_share.map(lambda x: f"{x:.0%}")).drop(columns="converged_share")


def law_errors(short, *longer, threshold: float = 0.5) -> pd.DataFrame:
    """Per budget and theory, over the 1-layer cells of each bundle (its own V): the cells, and the error
    log₂(measured κ*_θ / predicted) as mean, min and max over cells (:func:`law_table`; a law predicting less than
    one pair has no finite error). Before each partial grid, the short budget is also read on the searches that grid
    has finished (as :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.budgets.fits_by_budget`)."""
    from mamba_recall.chapters.ch5_synthesis.pipelines.budgets import budget_searches

    frames = []
    for label, searches, b in budget_searches(short, longer):
        t = law_table(searches, b.config["job_config"]["V"], threshold)
        t = t[t.layers == 1].assign(err=lambda d: d.log2_error.replace([np.inf, -np.inf], np.nan))
        out = t.groupby("theory", sort=False).err.agg(cells="size", mean="mean", low="min", high="max")
        frames.append(out.reset_index().assign(budget=label))
    return pd.concat(frames, ignore_index=True)[["budget", "theory", "cells", "mean", "low", "high"]]


def _interval(x: float, ci) -> str:
    lo, hi = ci
    return f"{x:.2f} [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else (f"{x:.2f} (no interval)" if np.isfinite(x) else "—")


def capacity_table(short, *longer, threshold: float = 0.5) -> pd.DataFrame:
    """:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.budgets.capacity_by_budget`, printed: per budget and
    cell with finished searches, the searches (seeds), κ*_θ with its 95 % interval over seeds (censored seeds
    named), and the probes that converged."""
    from mamba_recall.chapters.ch5_synthesis.pipelines.budgets import capacity_by_budget

    t = capacity_by_budget(short, *longer, threshold=threshold)
    return pd.DataFrame(
        {
            "budget": t.budget,
            "cell (Λ, D, N)": [f"({r.layers}, {r.D}, {r.N})" for r in t.itertuples()],
            "D·N": t.D * t.N,
            "seeds": t.seeds,
            f"κ*{round(threshold * 100)} [95 %]": [
                _interval(r.kappa, (r.kappa_ci_low, r.kappa_ci_high))
                + (f", {r.censored} censored" if r.censored else "")
                for r in t.itertuples()
            ],
            "converged": [
                f"{r.probes - r.unconverged} of {r.probes} ({r.converged_share:.0%})" for r in t.itertuples()
            ],
        }
    )


def fits_table(short, *longer, threshold: float = 0.5) -> pd.DataFrame:
    """:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.budgets.fits_by_budget`, printed: α and (a, b) with
    their 95 % intervals per budget."""
    from mamba_recall.chapters.ch5_synthesis.pipelines.budgets import fits_by_budget

    t = fits_by_budget(short, *longer, threshold=threshold)
    return pd.DataFrame(
        {
            "budget": t.budget,
            "searches (cells)": [f"{r.searches} ({r.cells})" for r in t.itertuples()],
            "α (D·N)": [_interval(r.alpha, r.alpha_ci) for r in t.itertuples()],
            "a (D)": [_interval(r.a, r.a_ci) for r in t.itertuples()],
            "b (N)": [_interval(r.b, r.b_ci) for r in t.itertuples()],
        }
    )


def law_error_table(short, *longer, threshold: float = 0.5) -> pd.DataFrame:
    """:func:`law_errors`, printed: per theory (rows) and budget (columns), the mean log₂ error over the 1-layer
    cells with its range."""
    t = law_errors(short, *longer, threshold=threshold)
    t = t.assign(
        error=[
            f"{r.mean:+.2f} ({r.low:+.2f} to {r.high:+.2f}), {r.cells} cells" if np.isfinite(r.mean) else "< 1 pair"
            for r in t.itertuples()
        ]
    )
    order = list(dict.fromkeys(t.budget))
    return t.pivot(index="theory", columns="budget", values="error")[order].reindex(list(dict.fromkeys(t.theory)))


def sweep_table(preset: str = "cpu-hours") -> pd.DataFrame:
    """The learning-rate sweep as declared at ``preset`` (``ch5_capacity_lr_sweep``'s sizes): per cell, the κ of its
    one probe, its L, the rates swept and the steps (the long schedule)."""
    from mamba_recall.chapters.ch5_synthesis.configs import LR_SWEEP
    from mamba_recall.presets import experiment

    s = experiment(LR_SWEEP, preset)
    rates = ", ".join(f"{lr:g}" + (" (default)" if lr == s["default_lr"] else "") for lr in s["lrs"])
    return pd.DataFrame(
        [
            {
                "cell (Λ, D, N)": f"({layers}, {D}, {N})",
                "probe at κ": kappa,
                "L": s["L_per_kappa"] * kappa,
                "rates": rates,
                "seed": 0,
                "steps": s["steps"],
            }
            for layers, D, N, kappa in s["sweep_cells"]
        ]
    )


def sweep_results_table(sweep) -> pd.DataFrame:
    """The sweep's probes as run (``sweep``: a ``ch5_capacity_lr_sweep`` bundle, complete or partial): per cell
    (Λ, D, N) and its probe's κ, each rate's held-out recall with the steps it ran (``*``: converged, neither at the
    step cap nor on the ≈ 1/κ plateau), and the rate the declared rule picks
    (:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.lr_sweep.pick_rate`; "(not all rates run)" for a cell
    still running)."""
    rates, picked = sweep.tables["rates"], sweep.tables["picked"]
    cell = ["layers", "D", "N"]
    rates = rates.assign(
        shown=[f"{r.accuracy:.3f} ({r.steps_run}{'*' if r.converged else ''})" for r in rates.itertuples()]
    )
    t = rates.pivot_table(index=cell + ["kappa"], columns="lr", values="shown", aggfunc="first")
    t.columns = [f"lr {lr:g}: recall (steps)" for lr in t.columns]
    t = t.reset_index()
    pick = {(int(r.layers), int(r.D), int(r.N)): f"{r.lr:g}" for r in picked.itertuples()}
    t["picked"] = [pick.get((int(r.layers), int(r.D), int(r.N)), "(not all rates run)") for r in t.itertuples()]
    t.insert(0, "cell (Λ, D, N)", [f"({r.layers}, {r.D}, {r.N})" for r in t.itertuples()])
    return t.drop(columns=cell).rename(columns={"kappa": "probe at κ"}).fillna("not run yet")


def convergence_charts(short, *longer) -> alt.VConcatChart:
    """:func:`convergence_chart` of each budget's bundle, one above the other, each at its own steps and target
    and titled by its :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.budgets.budget_label`."""
    charts = []
    for b in (short, *longer):
        if b is not None:
            job = b.config["job_config"]
            chart = convergence_chart(b.tables["probes"], job["steps"], job["eval"]["target_accuracy"])
            charts.append(chart.properties(title=f"probes converged per cell, {budget_label(b)}"))
    return alt.vconcat(*charts)


def convergence_chart(probes: pd.DataFrame, steps: int, target: float) -> alt.Chart:
    """The share of converged probes in each cell (the verdicts' count: neither at the step cap nor stopped on the
    ≈ 1/κ plateau), as a D × N grid per number of layers (text: converged of all)."""
    t = syn.budget_by_cell(probes, steps, target)
    t = t.assign(
        label=(t.probes - t.unconverged).astype(str) + " of " + t.probes.astype(str),
        layers=t.layers.astype(str) + " layer(s)",
    )
    base = alt.Chart(t).encode(x=alt.X("D:O", title="D"), y=alt.Y("N:O", title="N", sort="descending"))
    cells = base.mark_rect().encode(
        color=alt.Color("converged_share:Q", title="converged", scale=alt.Scale(domain=[0, 1], scheme="blues")),
        tooltip=["layers", "D", "N", "probes", "at_cap", "unconverged", alt.Tooltip("converged_share:Q", format=".0%")],
    )
    text = base.mark_text(size=11).encode(
        text="label:N",
        color=alt.condition(alt.datum.converged_share > 0.6, alt.value("white"), alt.value("black")),
    )
    return (
        (cells + text)
        .properties(width=180, height=140)
        .facet(column=alt.Column("layers:N", title=None))
        .properties(title=f"probes converged (not at the {steps}-step cap, not on the 1/κ plateau), per cell")
    )


def state_chart(searches: pd.DataFrame, threshold: float = 0.5) -> alt.LayerChart:
    """Paper 003's state requirement against κ: the state columns each cell has (Λ·N) against the κ*_θ it reached
    (geometric mean over seeds, 95 % interval), coloured by D, with Thm 2's line Λ·N = κ (one key per column). A
    point left of the line holds fewer pairs than the construction's columns would, right of it more."""
    cells = syn.cell_capacity(searches, threshold)
    cells = cells.dropna(subset=["kappa"]).assign(state=lambda d: d.layers * d.N, D=lambda d: d.D.astype(str))
    if cells.empty:
        note = pd.DataFrame({"text": ["no uncensored capacity yet: no point to draw"]})
        return alt.Chart(note).mark_text(size=14).encode(text="text:N").properties(width=420, height=60)
    hi = float(
        max(
            cells.state.max(),
            cells.kappa_ci_high.max(skipna=True) if cells.kappa_ci_high.notna().any() else 0,
            cells.kappa.max(),
        )
    )
    line = pd.DataFrame({"kappa": [1.0, hi * 1.2], "state": [1.0, hi * 1.2]})
    x = alt.X("kappa:Q", scale=_LOG2, title=f"measured κ* at {threshold:.0%} recall")
    y = alt.Y("state:Q", scale=_LOG2, title="state columns Λ·N")
    parts = [
        alt.Chart(line).mark_line(color="#9467bd", strokeDash=[5, 3]).encode(x=x, y=y),
        alt.Chart(cells)
        .mark_point(filled=True, size=70)
        .encode(
            x=x,
            y=y,
            color=alt.Color("D:N", title="D"),
            shape=alt.Shape("layers:N", title="layers"),
            tooltip=["layers", "D", "N", alt.Tooltip("kappa:Q", format=".2f"), "per_seed"],
        ),
    ]
    bars = cells.dropna(subset=["kappa_ci_low"])
    if len(bars):
        parts.insert(1, alt.Chart(bars).mark_rule().encode(x="kappa_ci_low:Q", x2="kappa_ci_high:Q", y=y, color="D:N"))
    return alt.layer(*parts).properties(
        width=420, height=280, title="state columns against the pairs recalled (line: Thm 2, one key per column)"
    )


def theory_table(searches: pd.DataFrame, probes: pd.DataFrame, V: int, threshold: float = 0.5) -> pd.DataFrame:
    """The table of theories: for each, what it predicts for this model, what we measured, the error and where it
    stops applying (computed from the searches and probes; the verdicts are the registry's, below the table).

    Capacity theories (paper 002's laws, paper 003's construction), over the 1-layer cells: the error is
    log₂(measured κ*/predicted κ*) (mean, min, max over cells); "stops applying" lists the cells off by more than a
    factor 2 (or predicting fewer than one pair). Paper 004: primacy and recency (first / last quarter minus the
    middle) at the edge probes against the probes below capacity (recall 90–99 %). Paper 000: log(Δ keys / Δ
    elsewhere) of layer 0 at the edge probes, below capacity and in the untrained twins."""
    rows = []
    t = law_table(searches, V, threshold)
    t = t[t.layers == 1]
    for theory, g in t.groupby("theory", sort=False):
        e = g.log2_error.replace([np.inf, -np.inf], np.nan)
        off = g[(e.abs() > 1) | (g.predicted < 1)]
        what = (
            "κ* = N (one key per state column: a sufficient size, H2 reads κ*₉₀ ≥ N)"
            if theory == CONSTRUCTION
            else "κ* where p(κ) falls to 50 %"
        )
        measured = "κ*₅₀ " + ", ".join(
            f"D{int(r.D)}N{int(r.N)} {r.kappa:.1f}" for r in g.itertuples() if r.kappa == r.kappa
        )
        rows.append(
            {
                "theory": theory if theory == CONSTRUCTION else f"002, {theory}",
                "predicts": what,
                "measured": measured,
                "error, or the comparison": (
                    f"log₂ ratio {e.mean():+.2f} ({e.min():+.2f} to {e.max():+.2f})"
                    if e.notna().any()
                    else "no finite error"
                ),
                "where it stops applying": "off by > 2× at "
                + (", ".join(f"D{int(r.D)}N{int(r.N)}" for r in off.itertuples()) or "no cell"),
            }
        )
    edge = syn.edge_probes(probes, 0.5, min_kappa=4)
    below = syn.below_capacity_probes(probes)

    def ushape(p):
        shapes = [syn.u_shape(syn.pair_profile(s)) for s in p.by_pair]
        if not shapes:
            return "no probe"
        return f"primacy {np.mean([x['primacy'] for x in shapes]):+.3f}, recency {np.mean([x['recency'] for x in shapes]):+.3f}"

    rows.append(
        {
            "theory": "004, primacy and recency",
            "predicts": "a U over the pairs' order near capacity",
            "measured": f"edge ({len(edge)} probes): {ushape(edge)}",
            "error, or the comparison": f"below capacity ({len(below)} probes): {ushape(below)}",
            "where it stops applying": "see H4's verdict",
        }
    )

    def ratio(p, col):
        return f"{np.log(p[col]).mean():+.3f}" if len(p) else "no probe"

    best = probes[probes.accuracy >= 0.9]
    rows.append(
        {
            "theory": "000, Δ opens at keys",
            "predicts": "log(Δ keys / Δ elsewhere) > 0",
            "measured": f"edge {ratio(edge, 'delta0_key_ratio')}, recall ≥ 90 % {ratio(best, 'delta0_key_ratio')}",
            "error, or the comparison": f"untrained twins {ratio(probes, 'untrained_delta0_key_ratio')}",
            "where it stops applying": "see H5's verdict",
        }
    )
    return pd.DataFrame(rows)


def profile_frame(probes: pd.DataFrame, bins: int = 8) -> pd.DataFrame:
    """Recall by relative pair order (:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.synthesis.profile_bins`), pooled over probes, for the edge probes (recall nearest 50 %,
    κ ≥ 4) and the probes with recall in [0.9, 0.99) (below capacity, not at ceiling): mean and 95 % interval over
    probes."""
    from mamba_recall.runstore import mean_interval

    edge = syn.edge_probes(probes, 0.5, min_kappa=4).assign(where="edge (recall ≈ 50 %)")
    below = syn.below_capacity_probes(probes).assign(where="below capacity (recall 90–99 %)")
    rows = []
    for _, p in pd.concat([edge, below]).iterrows():
        for j, recall in enumerate(syn.profile_bins(syn.pair_profile(p.by_pair), bins)):
            rows.append({"where": p["where"], "bin": j, "recall": float(recall)})
    f = pd.DataFrame(rows)
    if f.empty:
        return f
    rows = []
    for (where, b), g in f.groupby(["where", "bin"]):
        st = mean_interval(g.recall.tolist(), bounds=(0.0, 1.0))  # the book's one mean and t-interval, over probes
        lo, hi = (st["ci_low"], st["ci_high"]) if st["n"] > 1 else (st["mean"], st["mean"])
        rows.append({"where": where, "bin": b, "mean": st["mean"], "count": st["n"], "ci_low": lo, "ci_high": hi})
    out = pd.DataFrame(rows)
    out["position"] = (out["bin"] + 0.5) / bins
    return out


def profile_chart(probes: pd.DataFrame, bins: int = 8) -> alt.LayerChart:
    """Recall by relative pair order: at the edge of capacity and below it (paper 004's U, if any)."""
    f = profile_frame(probes, bins)
    if f.empty:  # no probe with κ ≥ 4 yet: say so in the chart's place rather than draw empty axes
        note = pd.DataFrame({"text": ["no probe with κ ≥ 4 in these searches: no profile to draw"]})
        return alt.Chart(note).mark_text(size=14).encode(text="text:N").properties(width=420, height=60)
    x = alt.X(
        "position:Q", title="pair's place in the context (0 = first written, 1 = last)", scale=alt.Scale(domain=[0, 1])
    )
    color = alt.Color("where:N", title="probes")
    band = alt.Chart(f).mark_area(opacity=0.2, clip=True).encode(x=x, y="ci_low:Q", y2="ci_high:Q", color=color)
    line = (
        alt.Chart(f)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("mean:Q", title="recall", scale=alt.Scale(domain=[0, 1])),
            color=color,
            tooltip=["where", "position", alt.Tooltip("mean:Q", format=".3f"), "count"],
        )
    )
    return (band + line).properties(width=420, height=260, title="recall by the pair's order (mean over probes, 95 %)")


def u_band_table(probes: pd.DataFrame, searches: pd.DataFrame) -> pd.DataFrame:
    """Where a U would sit relative to capacity (:func:`mamba_recall.chapters.ch5_synthesis.pipelines.synthesis.u_by_recall`), printed:
    one row per recall band, primacy and recency as mean [95 % interval] over searches."""
    t = syn.u_by_recall(probes, searches)
    if t.empty:
        return t

    def shown(m, ci):
        lo, hi = ci
        return f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}]" if np.isfinite(lo) else f"{m:+.3f} (one search)"

    return pd.DataFrame(
        {
            "recall band": t["recall"],
            "probes": t["probes"],
            "searches": t["searches"],
            "κ / κ*₅₀ (median)": t["κ / κ*₅₀ (median)"].map(lambda x: f"{x:.2f}"),
            "primacy": [shown(m, c) for m, c in zip(t["primacy"], t["primacy 95 % CI"])],
            "recency": [shown(m, c) for m, c in zip(t["recency"], t["recency 95 % CI"])],
        }
    )


def delta_chart(probes: pd.DataFrame) -> alt.Chart:
    """log(Δ at keys / Δ elsewhere), layer 0, at every probe against its recall: trained (filled) and untrained
    twins (hollow)."""
    rows = []
    for _, p in probes.iterrows():
        for who, col in (("trained", "delta0_key_ratio"), ("untrained twin", "untrained_delta0_key_ratio")):
            rows.append(
                {
                    "model": who,
                    "recall": p.accuracy,
                    "log_ratio": float(np.log(p[col])),
                    "layers": p.layers,
                    "D": p.D,
                    "N": p.N,
                    "kappa": p.kappa,
                    "seed": p.seed,
                }
            )
    f = pd.DataFrame(rows)
    enc = dict(
        x=alt.X("recall:Q", title="recall of the trained model at this probe", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("log_ratio:Q", title="log(Δ at keys / Δ elsewhere), layer 0"),
        color=alt.Color("model:N", title="model", scale=alt.Scale(domain=["trained", "untrained twin"])),
        tooltip=["model", "layers", "D", "N", "kappa", "seed", alt.Tooltip("log_ratio:Q", format=".3f")],
    )
    base = alt.Chart(f)
    trained = base.transform_filter(alt.datum.model == "trained").mark_point(size=45, filled=True).encode(**enc)
    twins = base.transform_filter(alt.datum.model != "trained").mark_point(size=45, filled=False).encode(**enc)
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color="#666", strokeDash=[3, 3]).encode(y="y:Q")
    return (zero + twins + trained).properties(width=420, height=260, title="Δ at key tokens, every probe")


def cell_explorer(probes: pd.DataFrame) -> alt.VConcatChart:
    """Pick a (layers, D, N) cell from the menu: its recall against κ (every seed's probes) and the recall profile
    by pair order of each of its probes (runs in the browser over the committed probes)."""
    p = probes.assign(
        cell=lambda d: d.layers.astype(str) + " layer(s), D=" + d.D.astype(str) + ", N=" + d.N.astype(str)
    )
    cells = list(dict.fromkeys(p.sort_values(["layers", "D", "N"]).cell))
    pick = alt.param(name="cell", value=cells[0], bind=alt.binding_select(options=cells, name="cell "))
    curve = (
        alt.Chart(p)
        .mark_line(point=True)
        .encode(
            x=alt.X("kappa:Q", scale=_LOG2, title="κ pairs"),
            y=alt.Y("accuracy:Q", scale=alt.Scale(domain=[0, 1]), title="held-out recall"),
            color=alt.Color("seed:N"),
            tooltip=["cell", "seed", "kappa", alt.Tooltip("accuracy:Q", format=".3f"), "steps_run"],
        )
        .transform_filter(alt.datum.cell == pick)
        .add_params(pick)
        .properties(width=380, height=220, title="recall against κ (each seed's probes)")
    )
    rows = []
    for _, r in p.iterrows():
        acc = syn.pair_profile(r.by_pair).tolist()
        for i, a in enumerate(acc):
            rows.append({"cell": r.cell, "seed": r.seed, "kappa": r.kappa, "place": (i + 0.5) / len(acc), "recall": a})
    prof = (
        alt.Chart(pd.DataFrame(rows))
        .mark_line()
        .encode(
            x=alt.X("place:Q", title="pair's place in the context", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("recall:Q", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("kappa:O", title="κ"),
            detail="seed:N",
            tooltip=["seed", "kappa", alt.Tooltip("recall:Q", format=".3f")],
        )
        .transform_filter(alt.datum.cell == pick)
        .properties(width=380, height=220, title="recall by pair order at each probe")
    )
    return alt.vconcat(curve, prof).resolve_scale(color="independent")


def live_capacity_explorer(preset_sizes: dict, seed: int = 0):
    """ipywidgets: train one tiny full Mamba LM at (D, N, κ) for a few hundred steps and print its recall and its
    profile by pair order. Nothing trains until a person presses the button."""
    import ipywidgets as w

    from .runners.capacity import probe, resolved_config
    from mamba_recall.widgets import explorer

    def draw(D, N, kappa, steps):
        cfg = resolved_config(preset_sizes, 1, D, N)
        r = probe(cfg, seed, kappa, steps=steps)
        prof = " ".join(f"{a:.2f}" for a in r["by_pair"])
        print(
            f"D={D}, N={N}, κ={kappa}: recall {r['accuracy']:.3f} after {r['steps_run']} steps ({r['seconds']:.0f} s)"
        )
        print(f"by pair order (first written → last): {prof}")
        print(
            f"Δ at keys / elsewhere, layer 0: trained {r['delta'][0]['key_ratio']:.3f}, untrained {r['untrained']['delta'][0]['key_ratio']:.3f}"
        )

    return explorer(
        draw,
        {
            "D": w.Dropdown(options=[8, 16, 32], value=16, description="D"),
            "N": w.Dropdown(options=[2, 4, 8], value=4, description="N"),
            "kappa": w.Dropdown(options=[2, 4, 8, 16], value=4, description="κ"),
            "steps": w.IntSlider(value=300, min=50, max=1500, step=50, description="steps"),
        },
        default_view=False,
        button="train",
    )
