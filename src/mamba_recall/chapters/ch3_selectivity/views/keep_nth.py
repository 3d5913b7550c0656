r"""Charts of Chapter 3's KEEP n-TH page (paper 003, §4.2, Fig. 1): the trained models' e^{−λΔ_t} against the
same models at initialisation.

Fig. 1 histograms the per-step decay :math:`e^{-\lambda\Delta_t}` (Eq. 5 with Eq. 7 for Mamba, Eq. 6 for S4D) of
trained KEEP n-TH models across T; by Lem. 2 a model that retains the kept token over T steps needs
:math:`\lambda\sum_r\Delta(x_r)` bounded, so the mass should move toward 1 as T grows. The untrained model (the
run's own initialisation, same test inputs) is drawn with it, so the chart shows what training changed.

* :func:`fig1_histogram_frame` / :func:`fig1_histogram_chart` — the 50-bin histograms of a bundle's ``decay`` and
  ``decay_untrained`` tables (:func:`mamba_recall.chapters.ch3_selectivity.claims.fig1_tables`), pooled over seeds,
  trained over untrained, one panel per (model, T).
* :func:`fig1_summary` — the ``fig1`` table's statistics per (model, T, weights), mean over seeds.
* :func:`fig1_trend_chart` — frac(e^{−λΔ} > 0.9 | t ≥ n) against T, trained and untrained, mean over seeds with
  each seed's value (the ``fig1`` table, :func:`mamba_recall.chapters.ch3_selectivity.claims.fig1_stats`).
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..claims import FIG1_MODELS

POSITIONS = {"after": "t ≥ n (retain)", "before": "t < n (forget)"}
MODEL_NAMES = {"s6+pe": "Mamba+PE", "s4d+pe": "S4D+PE", "s6": "Mamba", "s4d": "S4D"}
WEIGHTS = ["trained", "untrained"]


def _seeds_text(seeds) -> str:
    seeds = sorted({int(s) for s in seeds})
    return f"seed{'s' * (len(seeds) != 1)} {', '.join(map(str, seeds))}"


def fig1_histogram_frame(tables: dict, positions: str = "after", models=tuple(FIG1_MODELS)) -> pd.DataFrame:
    """Long frame (model, T, weights, bin, density, count, seeds) of the Fig. 1 histograms at ``positions``
    (``after``: t ≥ n, ``before``: t < n) for ``models`` at d = 32, N = 8: each bin's count summed over the seeds,
    divided by the total (the seeds pooled, as the values of one seed are pooled over sequences, channels, states
    and positions). ``tables``: ``decay`` and ``decay_untrained`` with a ``seed`` column (``fig1_tables``)."""
    if positions not in POSITIONS:
        raise ValueError(f"positions must be one of {sorted(POSITIONS)}, got {positions!r}.")
    for name in ("decay", "decay_untrained"):
        if name not in tables or "seed" not in tables[name]:
            raise ValueError(f"tables needs a {name!r} table with a seed column: pass claims.ch3.fig1_tables(bundle).")
    frames = []
    for weights, name in zip(WEIGHTS, ("decay", "decay_untrained")):
        t = tables[name]
        t = t[(t.bin >= 0) & (t.d == 32) & (t.N == 8) & t.model.isin(list(models))]
        g = t.groupby(["model", "T", "bin"]).agg(count=(positions, "sum"), seeds=("seed", "nunique")).reset_index()
        g["density"] = g["count"] / g.groupby(["model", "T"])["count"].transform("sum")
        frames.append(g.assign(weights=weights))
    if not len(frames[0]):
        raise ValueError(f"the decay table has no rows for {list(models)} at d = 32, N = 8.")
    out = pd.concat(frames, ignore_index=True)
    out["model"] = out.model.map(lambda m: MODEL_NAMES.get(m, m))
    return out


def fig1_histogram_chart(frame: pd.DataFrame, preset: str, seeds, positions: str = "after") -> alt.FacetChart:
    """The histograms of :func:`fig1_histogram_frame`: trained and untrained bars overlaid (not stacked) per bin,
    one panel per model (rows) and T (columns); the title names the preset and the seeds."""
    n_bins = int(frame.groupby(["model", "T", "weights"]).size().max())
    base = (
        alt.Chart(frame)
        .mark_bar(opacity=0.55, binSpacing=0)
        .encode(
            x=alt.X(
                "bin:Q",
                bin=alt.Bin(step=1.0 / n_bins, extent=[0, 1]),
                title="e^(−λΔ_t)",
                axis=alt.Axis(values=[0, 0.25, 0.5, 0.75, 1]),
            ),
            y=alt.Y("density:Q", stack=None, title="fraction of values"),
            color=alt.Color(
                "weights:N", scale=alt.Scale(domain=WEIGHTS), title=None, legend=alt.Legend(orient="bottom")
            ),
            tooltip=["model", "T", "weights", alt.Tooltip("bin:Q", title="bin from"), "density", "count"],
        )
        .properties(width=150, height=120)
    )
    return base.facet(
        row=alt.Row("model:N", title=None),
        column=alt.Column("T:O", title="T"),
        title=alt.TitleParams(
            f"Fig. 1: e^(−λΔ_t) at {POSITIONS[positions]}, trained vs at initialisation ({preset}, {_seeds_text(seeds)})",
            subtitle="d = 32, N = 8; 500 test sequences per run, pooled over channels, states, positions and seeds; "
            "untrained = each run's own initial weights",
        ),
    )


def fig1_trend_chart(stats: pd.DataFrame, preset: str) -> alt.LayerChart:
    """frac(e^{−λΔ} > 0.9 | t ≥ n) against T from the ``fig1`` table: the mean over seeds (line; solid trained, dashed
    untrained) and each seed (points), per model, at d = 32, N = 8."""
    s = stats[(stats.d == 32) & (stats.N == 8) & stats.model.isin(list(FIG1_MODELS))].copy()
    if s.empty:
        raise ValueError("the fig1 table has no Mamba+PE or S4D+PE rows at d = 32, N = 8.")
    s["model"] = s.model.map(MODEL_NAMES)
    title = "frac(e^(−λΔ) > 0.9 | t ≥ n)"
    y = alt.Y("frac_above_0_9_from_n:Q", title=title, scale=alt.Scale(domain=[0, 1]))
    base = alt.Chart(s).encode(x=alt.X("T:Q", scale=alt.Scale(zero=False)), color=alt.Color("model:N", title=None))
    means = base.mark_line(point=True).encode(
        y=alt.Y("mean(frac_above_0_9_from_n):Q", title=title), strokeDash=alt.StrokeDash("weights:N", title=None)
    )
    seeds = base.mark_point(opacity=0.5, size=20).encode(
        y=y, shape=alt.Shape("weights:N", legend=None), tooltip=["model", "T", "seed", "weights", "mean_from_n"]
    )
    return (means + seeds).properties(
        width=360,
        height=200,
        title=f"Fig. 1 across T ({preset}, {_seeds_text(s.seed)}): mean over seeds (lines) and each seed (points)",
    )


def fig1_summary(stats: pd.DataFrame) -> pd.DataFrame:
    """The ``fig1`` table (:func:`mamba_recall.chapters.ch3_selectivity.claims.fig1_stats`) of Mamba+PE and S4D+PE at d = 32, N = 8 as
    one row per (model, T, weights): the mean over seeds of frac(e^{−λΔ} > 0.9 | t ≥ n), frac(< 0.1 | t < n) and
    the histogram mean of e^{−λΔ} at t ≥ n, with the number of seeds."""
    s = stats[(stats.d == 32) & (stats.N == 8) & stats.model.isin(list(FIG1_MODELS))]
    cols = ["frac_above_0_9_from_n", "frac_below_0_1_before_n", "mean_from_n"]
    out = s.groupby(["model", "T", "weights"])[cols].mean()
    out["seeds"] = s.groupby(["model", "T", "weights"]).seed.nunique()
    return out.reset_index()
