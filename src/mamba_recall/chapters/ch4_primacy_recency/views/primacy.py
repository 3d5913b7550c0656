"""Charts and explorers of Chapter 4 (paper 004): recall-by-position curves, the channel map, live ablation.

Static book: Altair charts whose sliders / selections filter precomputed long-format tables in the
browser (offline renderer of :mod:`mamba_recall.plots`). Jupyter: :func:`ablation_explorer`, an
ipywidgets panel that re-runs the recall evaluation under a chosen ablation (its default view is drawn
as plain output; nothing is recomputed until a person acts, see :func:`mamba_recall.widgets.explorer`).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from mamba_recall.analysis import channels as ch
from mamba_recall.analysis.interventions import summary
from mamba_recall.plots import grid_param

__all__ = [
    "ablation_explorer",
    "channel_map_chart",
    "channel_map_frame",
    "curve_frame",
    "delta_heatmap",
    "layer_counts_chart",
    "recall_chart",
    "recall_explorer_chart",
    "transfer_chart",
    "transfer_explorer",
]


def curve_frame(correct: np.ndarray, **labels) -> pd.DataFrame:
    """Long table of one recall curve: k, acc, Wilson lo/hi, plus constant label columns."""
    s = summary(correct)
    df = pd.DataFrame({"k": np.arange(1, s["L"] + 1), "acc": s["acc"], "lo": s["lo"], "hi": s["hi"]})
    for key, val in labels.items():
        df[key] = val
    return df


def recall_chart(
    frame: pd.DataFrame, color: str = "condition", facet: str | None = None, title: str = "", width: int = 260
) -> alt.Chart:
    """Recall vs queried position with 95 % Wilson bands, one line per ``color``."""
    # faceted: the legend goes below the panels (beside them, the row would be wider than the book's column)
    legend = alt.Legend(orient="bottom", direction="vertical") if facet else alt.Legend()
    base = alt.Chart(frame).encode(
        x=alt.X("k:Q", title="queried position k"), color=alt.Color(f"{color}:N", legend=legend)
    )
    band = base.mark_area(opacity=0.18).encode(
        y=alt.Y("lo:Q", title="recall", scale=alt.Scale(domain=[0, 1])), y2="hi:Q"
    )
    line = base.mark_line(point=True).encode(y="acc:Q", tooltip=["k", color, alt.Tooltip("acc:Q", format=".3f")])
    chart = (band + line).properties(width=width, height=200)
    if facet:
        # three panels a row, so that the chart fits the book's column whatever the number of facets
        chart = chart.facet(facet=alt.Facet(f"{facet}:N", title=None), columns=3)
    return chart.properties(title=title) if title else chart


def recall_explorer_chart(frame: pd.DataFrame, Ls: list[int], conditions: list[str]) -> alt.Chart:
    """Recall explorer: a slider over L and a dropdown over the condition, filtering a
    precomputed table with columns L, condition, variant, k, acc, lo, hi."""
    L_slider, L_match = grid_param("L", list(Ls), Ls[0], "L ")
    cond = alt.param(name="cond", value=conditions[0], bind=alt.binding_select(options=conditions, name="condition "))
    frame = frame.assign(L_i=frame["L"].map({L: i for i, L in enumerate(Ls)}))
    base = (
        alt.Chart(frame)
        .transform_filter(f"{L_match('L_i')} && datum.condition == cond")
        .encode(x=alt.X("k:Q", title="queried position k"), color=alt.Color("variant:N"))
    )
    band = base.mark_area(opacity=0.18).encode(
        y=alt.Y("lo:Q", title="recall", scale=alt.Scale(domain=[0, 1])), y2="hi:Q"
    )
    line = base.mark_line(point=True).encode(
        y="acc:Q", tooltip=["L", "k", "variant", alt.Tooltip("acc:Q", format=".3f")]
    )
    return (
        (band + line)
        .add_params(L_slider, cond)
        .properties(width=480, height=240, title="Recall by position (choose L and a condition)")
    )


def channel_map_frame(stats: ch.ChannelStats, grid=ch.GRID) -> pd.DataFrame:
    """Per (layer, channel): S = ΣΔ, its rank within the layer, and long-term membership for every (τ, p)."""
    rows = []
    for layer, (S, M) in enumerate(zip(stats.S, stats.M)):
        order = np.argsort(S.numpy())
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        for tau in grid:
            P = ch.P_tau(M, tau).numpy()
            for p in grid:
                sel = P > p
                rows.append(
                    pd.DataFrame(
                        {
                            "layer": layer,
                            "channel": np.arange(len(S)),
                            "rank": rank,
                            "S": S.numpy(),
                            "P": P,
                            "tau": tau,
                            "p": p,
                            "long_term": sel,
                        }
                    )
                )
    return pd.concat(rows, ignore_index=True)


def channel_map_chart(frame: pd.DataFrame, grid=ch.GRID, tau0=0.7, p0=0.7) -> alt.Chart:
    """Channel map: layer × channel (sorted by S = ΣΔ), coloured by long-term membership;
    sliders for τ and p re-select from the precomputed closed-form table."""
    grid = list(grid)
    t, t_match = grid_param("tau", grid, tau0, "τ ")
    q, q_match = grid_param("p", grid, p0, "p ")
    frame = frame.assign(
        tau_i=frame["tau"].map({v: i for i, v in enumerate(grid)}),
        p_i=frame["p"].map({v: i for i, v in enumerate(grid)}),
        logS=np.log10(frame["S"].clip(lower=1e-8)),
    )
    return (
        alt.Chart(frame)
        .transform_filter(f"{t_match('tau_i')} && {q_match('p_i')}")
        .mark_rect()
        .encode(
            x=alt.X("rank:O", title="channel (sorted by S = ΣΔ within the layer)", axis=None),
            y=alt.Y("layer:O", title="layer"),
            color=alt.Color(
                "long_term:N", title="long-term", scale=alt.Scale(domain=[False, True], range=["#d9d9d9", "#d62728"])
            ),
            tooltip=["layer", "channel", alt.Tooltip("S:Q", format=".4f"), alt.Tooltip("P:Q", format=".2f")],
        )
        .add_params(t, q)
        .properties(
            width=560,
            height=28 * int(frame["layer"].nunique()),
            title="Long-term channels (slide τ and p; red = P(τ) > p)",
        )
    )


def layer_counts_chart(frame: pd.DataFrame) -> alt.Chart:
    """Bars of long-term channels per layer (Fig. 3a analogue); ``frame``: layer, count."""
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(x=alt.X("layer:O"), y=alt.Y("count:Q", title="long-term channels"), tooltip=["layer", "count"])
        .properties(width=220, height=180)
    )


def delta_heatmap(frame: pd.DataFrame, title: str) -> alt.Chart:
    """Fig. 7 analogue: mean Δ per layer × position, one panel per period k; ``frame``: k, layer, t, delta."""
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("t:O", title="position", axis=alt.Axis(values=list(range(0, 64, 8)))),
            y=alt.Y("layer:O"),
            color=alt.Color("delta:Q", title="mean Δ", scale=alt.Scale(scheme="viridis")),
            tooltip=["k", "layer", "t", alt.Tooltip("delta:Q", format=".4f")],
        )
        # four panels a row (the cpu-hours and paper presets have seven periods) within the book's column
        .properties(width=190, height=60)
        .facet(facet=alt.Facet("k:O", title="period k"), columns=4)
        .properties(title=title)
    )


def ablation_explorer(model, make_contexts, channel_sets: dict, *, Ls=(8, 16), default=("none", 8, "first triple")):
    """ipywidgets panel (Jupyter only): pick L, the channel set (none / identified / random …) and the
    ablation window; the recall curve is recomputed live with :func:`recall_by_position`.

    ``make_contexts(L, variant)`` → RecallContexts; ``channel_sets``: {name: {layer: channels}}.
    The default view is drawn as plain cell output; see :func:`mamba_recall.widgets.explorer`.
    """
    import ipywidgets as w
    from IPython.display import display

    from mamba_recall.analysis.interventions import first_triplet_steps, recall_by_position
    from mamba_recall.widgets import explorer

    windows = {"first triple": first_triplet_steps(), "all steps": "all"}

    def draw(name, L, window):
        frames = []
        for variant in ("repeated", "random"):
            c = recall_by_position(model, make_contexts(L, variant), channels=channel_sets[name], steps=windows[window])
            frames.append(curve_frame(c, variant=variant))
        display(
            recall_chart(pd.concat(frames), color="variant", title=f"L = {L}, ablation: {name} ({window})", width=420)
        )

    return explorer(
        draw,
        {
            "name": w.Dropdown(options=list(channel_sets), value=default[0], description="channels"),
            "L": w.Dropdown(options=list(Ls), value=default[1], description="L"),
            "window": w.Dropdown(options=list(windows), value=default[2], description="window"),
        },
    )


def transfer_display(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1 as the page shows it: scores in % to one decimal, relative drops as percentages."""
    show = table.copy()
    for col in ("base", "long-term", "random", "random sd"):
        show[col] = show[col].round(1)
    for col in ("rel. drop long-term", "rel. drop random"):
        show[col] = (100 * show[col]).round(1).astype(str) + " %"
    return show


def transfer_chart(table: pd.DataFrame, title: str = "Relative drop when Ā is zeroed at every step") -> alt.Chart:
    """Table 1 as bars: relative drop per task for the identified (long-term) channels and the random
    sets (mean, with ± sd over draws as a rule); columns from ``analysis.primacy.transfer_table``."""
    rows = []
    for d in table.to_dict("records"):
        sd = d["random sd"] / d["base"] if d["base"] > 0 else 0.0
        lt, rnd = d["rel. drop long-term"], d["rel. drop random"]
        rows.append({"task": d["task"], "condition": "long-term (identified)", "drop": lt, "lo": lt, "hi": lt})
        rows.append(
            {"task": d["task"], "condition": "random (same count)", "drop": rnd, "lo": rnd - sd, "hi": rnd + sd}
        )
    frame = pd.DataFrame(rows)
    base = alt.Chart(frame).encode(
        x=alt.X("condition:N", title=None, axis=alt.Axis(labels=False, ticks=False)),
        color=alt.Color("condition:N", title=None),
    )
    bars = base.mark_bar().encode(
        y=alt.Y("drop:Q", title="relative drop (1 − ablated/base)", axis=alt.Axis(format="%")),
        tooltip=["task", "condition", alt.Tooltip("drop:Q", format=".1%")],
    )
    rule = base.mark_rule(color="black").encode(y="lo:Q", y2="hi:Q")
    return (
        (bars + rule)
        .properties(width=110, height=200)
        .facet(column=alt.Column("task:N", title=None))
        .properties(title=title)
    )


def transfer_explorer(model, stats: ch.ChannelStats, sets: dict, *, n_random: int = 2):
    """Jupyter panel: pick (τ, p), identify the long-term channels on the recall prompt's statistics
    ``stats`` and recompute Table 1 on ``sets`` (the transfer tasks) with ``n_random`` random controls.
    Nothing is computed until a person presses "ablate" (the notebook shows the default table above)."""
    import ipywidgets as w
    from IPython.display import display

    from mamba_recall.chapters.ch4_primacy_recency.pipelines import primacy as A
    from mamba_recall.widgets import explorer

    def draw(tau, p):
        chans = ch.identify(stats, tau, p)
        table = A.transfer_ablation(model, sets, chans, n_random=n_random)
        if table is None:
            print(f"no channel has P({tau}) > {p}: nothing to ablate")
            return
        b = A.check_transfer(table)
        print(
            f"{sum(len(c) for c in chans)} channels ablated at every step; mean relative drop on the learned tasks "
            f"{100 * b['mean_rel_drop_targeted']:.1f} % (identified) vs {100 * b['mean_rel_drop_random']:.1f} % (random)"
        )
        display(table.round(3))
        display(transfer_chart(table))

    return explorer(
        draw,
        {
            "tau": w.SelectionSlider(options=list(ch.GRID), value=0.7, description="τ"),
            "p": w.SelectionSlider(options=list(ch.GRID), value=0.7, description="p"),
        },
        default_view=False,
        button="ablate",
    )


def family_curves_chart(
    curves: pd.DataFrame, models: pd.DataFrame, variant: str = "repeated", title: str = ""
) -> alt.Chart:
    """The edge family's recall by position: one row per recipe, one column per evaluated L, the mean over seeds
    with its 95 % t-interval (table ``curves`` of ``results/ch4_edge_<preset>.json``). Each column's header says
    whether L is inside the recipes' training range (``train_L_max`` of ``models``) or beyond it (extrapolation)."""
    L_max = int(models["train_L_max"].max())
    df = curves[curves["variant"] == variant].copy()
    df["L_label"] = [f"L = {L} ({'trained' if L <= L_max else 'beyond training'})" for L in df["L"]]
    order = [f"L = {L} ({'trained' if L <= L_max else 'beyond training'})" for L in sorted(df["L"].unique())]
    df["lo"] = df["acc_ci_low"].clip(0, 1)
    df["hi"] = df["acc_ci_high"].clip(0, 1)
    base = alt.Chart(df).encode(x=alt.X("k:Q", title="queried position k"), color=alt.Color("recipe:N"))
    band = base.mark_area(opacity=0.18).encode(
        y=alt.Y("lo:Q", title="recall", scale=alt.Scale(domain=[0, 1])), y2="hi:Q"
    )
    line = base.mark_line(point=True, size=1.5).encode(
        y="acc_mean:Q", tooltip=["recipe", "L", "k", alt.Tooltip("acc_mean:Q", format=".3f"), "acc_per_seed", "seeds"]
    )
    # one panel per L, wrapped into rows of four so the chart fits the book's column at full size
    chart = (
        (band + line)
        .properties(width=150, height=150)
        .facet(facet=alt.Facet("L_label:N", sort=order, title=None), columns=4)
    )
    return chart.properties(title=title or f"Edge family, {variant} relation: mean over seeds (95 % t-interval)")


def models_curves_chart(frame: pd.DataFrame, title: str = "") -> alt.Chart:
    """Recall by position of several committed models (``frame``: model, L, k, acc, lo, hi, trained): one column
    per L, its header marking whether L was inside the model's training range."""
    frame = frame.copy()
    frame["L_label"] = [
        f"L = {L} ({'trained' if t else 'beyond training'})" for L, t in zip(frame["L"], frame["trained"])
    ]
    base = alt.Chart(frame).encode(x=alt.X("k:Q", title="queried position k"), color=alt.Color("model:N"))
    band = base.mark_area(opacity=0.15).encode(
        y=alt.Y("lo:Q", title="recall", scale=alt.Scale(domain=[0, 1])), y2="hi:Q"
    )
    line = base.mark_line(point=True, size=1.5).encode(
        y="acc:Q", tooltip=["model", "L", "k", alt.Tooltip("acc:Q", format=".3f")]
    )
    chart = (band + line).properties(width=200, height=170).facet(column=alt.Column("L_label:N", title=None))
    return chart.properties(title=title) if title else chart


def _notice(text: str) -> alt.Chart:
    """A one-line chart that says what is missing (so a page built before a long run lands still renders)."""
    return (
        alt.Chart(pd.DataFrame({"t": [text]}))
        .mark_text(align="left", fontSize=12)
        .encode(text="t:N")
        .properties(width=600, height=30)
    )


def family_curves(fam, variant: str = "repeated") -> alt.Chart:
    """:func:`family_curves_chart` of a loaded :class:`~mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.EdgeFamily`, or a notice of
    what is not committed yet."""
    if fam.curves is None:
        return _notice(f"not committed yet: {fam.missing}")
    return family_curves_chart(fam.curves, fam.models, variant)


def family_learning_chart(fam, columns: int = 3) -> alt.Chart:
    """Every edge model's held-out gate metrics during training (one line per seed, dashed by metric: L = 4 and 8,
    random relation), one panel per recipe, the panels wrapped into rows of ``columns`` so the chart fits the
    book's column at full size (seven panels side by side were scaled to half size, 5-pixel text)."""
    if fam.bundle is None:
        return _notice(f"not committed yet: {fam.missing}")
    lc = fam.bundle.tables["learning"]
    lc = lc[lc["metric"].isin(["L4_random", "L8_random"])]
    line = (
        alt.Chart(lc)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q"),
            y=alt.Y("recall:Q", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("seed:N"),
            strokeDash="metric:N",
            tooltip=["model", "step", "metric", alt.Tooltip("recall:Q", format=".3f")],
        )
    )
    return line.properties(width=220, height=160).facet(
        facet=alt.Facet("recipe:N", title="recipe"),
        columns=columns,
        title="Held-out recall while training (the gate: ≥ 0.95 at L = 4, ≥ 0.80 at L = 8)",
    )


def family_for_comparison(fam, variant: str = "repeated") -> pd.DataFrame:
    """The family's mean curves as the table :func:`mamba_recall.chapters.ch4_primacy_recency.views.reference_curves.authors_vs_ours_chart`
    reads (model = "<recipe> (mean of n seeds)", L, k, acc, lo, hi, variant), lengths inside the training range."""
    if fam.curves is None:
        return pd.DataFrame(columns=["model", "L", "k", "acc", "lo", "hi", "variant"])
    L_max = int(fam.models["train_L_max"].max())
    c = fam.curves[(fam.curves["variant"] == variant) & (fam.curves["L"] <= L_max)]
    return pd.DataFrame(
        {
            "model": [f"{r} (mean of {n} seeds)" for r, n in zip(c["recipe"], c["n_seeds"])],
            "L": c["L"],
            "k": c["k"],
            "acc": c["acc_mean"],
            "lo": c["acc_ci_low"].clip(0, 1),
            "hi": c["acc_ci_high"].clip(0, 1),
            "variant": c["variant"],
        }
    )
