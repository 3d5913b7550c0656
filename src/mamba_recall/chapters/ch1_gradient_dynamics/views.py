"""Views of Chapter 1: Altair charts (static book, sliders run in the browser) and an ipywidgets
explorer that trains the |K| = 1 model live (Jupyter; nothing trains until a person acts)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import torch
from IPython.display import display


# Fig. 4's caption: dashed lines = first half d < |V|, solid = second half (and the output panel solid)
HALF_DASH = alt.StrokeDash(
    "half:N",
    title=None,
    scale=alt.Scale(domain=["first half (d < |V|)", "second half (d ≥ |V|)", "output"], range=[[4, 3], [1, 0], [1, 0]]),
)


def table1_chart(long: pd.DataFrame) -> alt.FacetChart:
    """Table 1 (App. A): query accuracy (%) of each model, ours beside the paper's, one panel per κ.

    ``long``: one row per (model ``label``, ``kappa``, ``source`` "ours" / "paper") with ``value`` in %, and ``T``.
    The models are named on the y axis (read across, never written over each other as column titles are),
    their two bars side by side; the panels stand next to each other."""
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("label:N", title=None, axis=alt.Axis(labelLimit=0)),
            yOffset=alt.YOffset("source:N", sort=["ours", "paper"]),
            x=alt.X("value:Q", title="query accuracy (%)", scale=alt.Scale(domain=[0, 100])),
            color=alt.Color("source:N", title=None, sort=["ours", "paper"]),
            tooltip=["label", "T", "kappa", "source", alt.Tooltip("value:Q", format=".1f")],
        )
        .properties(width=220, height=alt.Step(11))
        .facet(column=alt.Column("kappa:N", title=None, header=alt.Header(labelExpr="'κ = ' + datum.value")))
    )


def fig4_chart(frame: pd.DataFrame, title: str = "Fig. 4: probing the |K| = 1 model") -> alt.VConcatChart:
    """The four panels of Fig. 4 (output, state, input term, forgetting factor) over t, with a slider
    over t that moves a rule on every panel and shows the vectors at that t in bar charts.
    Dashed lines: first half d < |V|; solid: second half (the caption's convention)."""
    t_min, t_max = int(frame.t.min()), int(frame.t.max())
    t_sel = alt.param(
        name="t_sel",
        value=t_min + (t_max - t_min) // 2,
        bind=alt.binding_range(min=t_min, max=t_max, step=1, name="position t "),
    )
    panels = []
    for panel in ("output", "state", "input term", "forgetting factor"):
        sub = frame[frame.panel == panel]
        base = alt.Chart(sub).encode(x=alt.X("t:Q", title="position t"))
        lines = base.mark_line(strokeWidth=1.2).encode(
            y=alt.Y("value:Q", title=panel),
            color=alt.Color("dim:N", title="dim d"),
            strokeDash=HALF_DASH,
            tooltip=["t", "token", "event", "dim", alt.Tooltip("value:Q", format=".3f")],
        )
        rule = alt.Chart(sub).mark_rule(color="black").encode(x="t:Q").transform_filter(alt.datum.t == t_sel)
        bars = (
            alt.Chart(sub)
            .mark_bar()
            .encode(
                x=alt.X("dim:O", title="dim d"),
                y=alt.Y("value:Q", title=None),
                color=alt.Color("half:N", legend=None),
                tooltip=["dim", "event", alt.Tooltip("value:Q", format=".3f")],
            )
            .transform_filter(alt.datum.t == t_sel)
            .properties(width=200, height=120)
        )
        panels.append(alt.hconcat((lines + rule).properties(width=460, height=120), bars))
    tokens = frame[(frame.panel == "output") & (frame.dim == 0)][["t", "token", "event"]]
    strip = (
        alt.Chart(tokens)
        .mark_text(fontSize=10)
        .encode(
            x="t:Q",
            text="token:N",
            color=alt.Color("event:N", title="pair (x_{t-1}, x_t)"),
        )
        .properties(width=460, height=18)
    )
    # legends uncut ("second half (d ≥ |V|)" whole; set once for the chart: per encoding, Vega warns of conflicts)
    return alt.vconcat(strip, *panels).add_params(t_sel).properties(title=title).configure_legend(labelLimit=0)


def wdelta_heatmap(W: torch.Tensor, title: str, transposed: bool = False) -> alt.Chart:
    """Heat-map of W_Δ (2V × 2V). ``transposed=False``: PyTorch (out, in) — row = output channel,
    column = input coordinate; ``True``: the paper's Fig. 8 orientation (rows = input coordinates)."""
    A = _as_array(W)
    if transposed:
        return matrix_chart(A.T, title, "input coordinate (paper's row)", "output channel", height=220, fmt=".3f")
    return matrix_chart(A, title, "output channel (our row)", "input coordinate (our column)", height=220, fmt=".3f")


def _as_array(M) -> np.ndarray:
    return np.asarray(M.detach().cpu() if isinstance(M, torch.Tensor) else M, dtype=float)


def matrix_chart(
    M,
    title: str,
    row_title="row",
    col_title="column",
    width=220,
    lim: float | None = None,
    *,
    height: float | None = None,
    fmt: str = ".4f",
) -> alt.Chart:
    """A diverging heat-map of any matrix (for gradients, W_o, W_Δ); its colour scale runs over ± ``lim`` (default:
    the largest |entry| of ``M``), ``height`` defaults to ``width`` × rows / columns, tooltips show ``fmt``."""
    A = _as_array(M)
    rows, cols = np.meshgrid(np.arange(A.shape[0]), np.arange(A.shape[1]), indexing="ij")
    frame = pd.DataFrame({"row": rows.ravel(), "col": cols.ravel(), "value": A.ravel()})
    lim = float(lim) if lim else float(np.abs(A).max()) or 1.0
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("col:O", title=col_title),
            y=alt.Y("row:O", title=row_title),
            color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domain=[-lim, lim], reverse=True)),
            tooltip=["row", "col", alt.Tooltip("value:Q", format=fmt)],
        )
        .properties(width=width, height=width * A.shape[0] / A.shape[1] if height is None else height, title=title)
    )


def matrix_charts(mats: dict, row_title="row", col_title="column", width=220, shared: bool = True) -> alt.HConcatChart:
    """:func:`matrix_chart` of each ``{title: matrix}`` side by side. ``shared``: one colour scale over ± the largest
    |entry| of all of them (one legend; the panels compare in value); otherwise each panel has its own scale and
    legend (the panels compare in pattern only)."""
    lim = max((float(np.abs(_as_array(M)).max()) for M in mats.values()), default=0.0) or 1.0
    charts = [matrix_chart(M, t, row_title, col_title, width, lim if shared else None) for t, M in mats.items()]
    return alt.hconcat(*charts).resolve_scale(color="shared" if shared else "independent")


def bc_chart(model, ids, num_keys: int, title: str) -> alt.VConcatChart:
    """Figs. 5/6: B(x̂_t), C(x̂_t) (one line per state n) and the output over t, writes/reads marked."""
    from mamba_recall.tasks.latest_value import EVENT_NAMES, pair_events

    ids = torch.as_tensor(ids).reshape(1, -1)
    with torch.no_grad():
        logits, it = model(ids, return_internals=True)
    x = ids[0].numpy()
    ev = [EVENT_NAMES[e] for e in pair_events(x, num_keys)]
    charts = []
    for name, val in (("B(x̂_t)", it["B"][0]), ("C(x̂_t)", it["C"][0]), ("output y_t W_o", logits[0])):
        v = val.numpy()
        frame = pd.DataFrame(
            {
                "t": np.repeat(np.arange(len(x)), v.shape[1]),
                "component": np.tile(np.arange(v.shape[1]), len(x)),
                "value": v.ravel(),
                "token": np.repeat(x, v.shape[1]),
                "event": np.repeat(ev, v.shape[1]),
            }
        )
        line = (
            alt.Chart(frame)
            .mark_line(strokeWidth=1.2)
            .encode(
                x=alt.X("t:Q", title="position t"),
                y=alt.Y("value:Q", title=name),
                color="component:N",
                tooltip=["t", "token", "event", "component", alt.Tooltip("value:Q", format=".3f")],
            )
        )
        marks = (
            alt.Chart(frame.drop_duplicates("t"))
            .mark_rule(opacity=0.25)
            .encode(
                x="t:Q",
                color=alt.Color(
                    "event:N",
                    scale=alt.Scale(domain=[EVENT_NAMES[1], EVENT_NAMES[2]], range=["#d62728", "#2ca02c"]),
                    title="event",
                ),
            )
            .transform_filter(alt.FieldOneOfPredicate("event", [EVENT_NAMES[1], EVENT_NAMES[2]]))
        )
        charts.append(alt.layer(marks, line).resolve_scale(color="independent").properties(width=560, height=110))
    return alt.vconcat(*charts).properties(title=title)


def lemma_trajectory_chart(frame: pd.DataFrame) -> alt.Chart:
    """GD on M-th: key column, frequency diagonal, W[V,V], W[0,0] and accuracy over steps."""
    long = frame.melt(
        "step",
        value_vars=["key_column", "frequency_diag", "W[V,V]", "W[0,0]", "accuracy"],
        var_name="quantity",
        value_name="value",
    )
    return (
        alt.Chart(long)
        .mark_line()
        .encode(
            x="step:Q",
            y="value:Q",
            color="quantity:N",
            tooltip=["step", "quantity", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(width=520, height=240, title="Gradient descent from W_Δ = 0")
    )


def no_repeat_probability(V, T):
    r"""Birthday approximation of the chance that the T − 1 middle values of a Lemma 1 sequence are all distinct.

    Lemma 1's distribution (§4, App. D; ``tasks.latest_value.theory_batch``): :math:`x_0=x_T` is the key and
    :math:`x_1,\dots,x_{T-1}` are i.i.d. uniform on the :math:`|V|-1` values. Drawing them one by one, the
    :math:`(i+1)`-th misses the :math:`i` distinct values drawn before it with probability :math:`1-i/(|V|-1)`, so

    .. math::

        P(\text{no repeat})=\prod_{i=0}^{T-2}\Big(1-\frac{i}{|V|-1}\Big)
        \approx\exp\Big(-\sum_{i=0}^{T-2}\frac{i}{|V|-1}\Big)
        =\exp\Big(-\frac{(T-1)(T-2)}{2(|V|-1)}\Big),

    using :math:`1-u\le e^{-u}` (tight for :math:`u=i/(|V|-1)\ll1`). The one step :math:`W=-\eta G` adds to logit
    :math:`a` a token-frequency term :math:`\approx\frac2{|V|}\mathrm{count}(a)`: with no repeat the write term
    decides and the step is right; a repeated value can outvote the target :math:`x_1`. So the one-step accuracy
    is at least about this probability (above it once repeats are common: not every repeat outvotes
    :math:`x_1`, e.g. a repeat of :math:`x_1` itself helps it), which stays near 1 only while
    :math:`(T-1)(T-2)\ll2(|V|-1)`, i.e. :math:`|V|\gg T^2` — not the paper's :math:`|V|\gg T`.

    ``V``, ``T``: scalars or broadcastable arrays (|V| ≥ 2, T ≥ 2). Returns a float or an array of that shape."""
    V, T = np.asarray(V, dtype=np.float64), np.asarray(T, dtype=np.float64)
    if np.any(V < 2) or np.any(T < 2):
        raise ValueError(f"need |V| >= 2 and T >= 2 (Lemma 1's sequences x_0..x_T); got V={V}, T={T}.")
    p = np.exp(-(T - 1) * (T - 2) / (2 * (V - 1)))
    return float(p) if p.ndim == 0 else p


def one_step_chart(steps: pd.DataFrame, points: int = 60) -> alt.LayerChart:
    """One-step accuracy of W = −G against |V|/T², one line per T (``theory.gradient_lemma.one_step_table``:
    columns V, T, full_step, write_only, V_over_T2), with the birthday approximation
    exp(−(T−1)(T−2)/(2(|V|−1))) of :func:`no_repeat_probability` overlaid dashed, per T, over the same |V|/T² range
    where |V| ≥ T (below it the T − 1 values cannot all differ and the approximation means nothing)."""
    missing = {"V", "T", "full_step", "write_only", "V_over_T2"} - set(steps.columns)
    if missing:
        raise ValueError(f"steps lacks columns {sorted(missing)}; pass theory.gradient_lemma.one_step_table(...).")
    lo, hi = float(steps.V_over_T2.min()), float(steps.V_over_T2.max())
    ratio = np.geomspace(lo, hi, points)
    curve = pd.DataFrame(
        [
            {"T": int(T), "V_over_T2": r, "no_repeat": no_repeat_probability(r * T**2, T)}
            for T in sorted(steps["T"].unique())
            for r in ratio
            if r * T >= 1.0
        ]
    )  # |V| ≥ T
    x = alt.X("V_over_T2:Q", scale=alt.Scale(type="log"), title="|V| / T²")
    measured = (
        alt.Chart(steps)
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("full_step:Q", title="one-step accuracy"),
            color="T:N",
            tooltip=["V", "T", "full_step", "write_only"],
        )
    )
    birthday = (
        alt.Chart(curve)
        .mark_line(strokeDash=[4, 3], opacity=0.7)
        .encode(
            x=x,
            y="no_repeat:Q",
            color="T:N",
            tooltip=[
                "T",
                alt.Tooltip("V_over_T2:Q", format=".3g", title="|V|/T²"),
                alt.Tooltip("no_repeat:Q", format=".3f", title="exp(−(T−1)(T−2)/(2(|V|−1)))"),
            ],
        )
    )
    return (measured + birthday).properties(
        width=420, height=220, title="One step: measured (solid) and the birthday approximation (dashed)"
    )


def regime_explorer(sizes: dict, seed: int = 0, steps: int = 400, window: int = 48):
    """Jupyter: train the |K| = 1 model live (steps slider and a train button), pick a test sequence and a
    regime; shows the Fig. 4 panels and the regime's mean forgetting factor / input term. Nothing trains
    until a person presses the button or picks a sequence / regime (the notebook shows the default view
    above); see :func:`mamba_recall.widgets.explorer`."""
    import ipywidgets as w

    from mamba_recall.analysis.recall_probes import pair_table, probe_frame
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import train_recall
    from mamba_recall.widgets import explorer

    trained: dict = {}

    def draw(steps, sequence, regime):
        if trained.get("steps") != steps:
            print(f"training {steps} steps …")
            trained.update(steps=steps, tr=train_recall({**sizes, "steps": steps}, seed=seed))
        tr = trained["tr"]
        print(f"held-out query accuracy {tr.test_accuracy:.4f} ({steps} steps)")
        ids = tr.test_set.inputs[sequence]
        display(fig4_chart(probe_frame(tr.model, ids, 0, window), f"test sequence {sequence}"))
        tab = pair_table(tr.model)
        V = tr.model.vocab_size
        pick = {
            "write (0, v)": (0, slice(1, V)),
            "read (x, 0)": (slice(1, V), 0),
            "forget (v1, v2)": (slice(1, V), slice(1, V)),
        }[regime]
        f = tab["forget"][pick].reshape(-1, 2 * V).mean(0)
        i = tab["input_term"][pick].reshape(-1, 2 * V).mean(0)
        display(pd.DataFrame({"forgetting factor": f.numpy(), "input term": i.numpy()}).T.round(3))

    return explorer(
        draw,
        {
            "steps": w.IntSlider(value=steps, min=50, max=3000, step=50, description="steps"),
            "sequence": w.IntSlider(value=0, min=0, max=sizes["test_size"] - 1, description="sequence"),
            "regime": w.Dropdown(options=["write (0, v)", "read (x, 0)", "forget (v1, v2)"], description="regime"),
        },
        default_view=False,
        button="train",
        live=("sequence", "regime"),
        what="press train to train at the chosen steps; sequence and regime redraw the trained model",
    )


def full_readout_charts(readout: pd.DataFrame, stage: str = "trained", width: int = 160) -> alt.HConcatChart:
    """App. B, Fig. 7 on the full Mamba LM: one heat-map per seed of the |V| × 2|V| readout analogue
    (``analysis.full_mamba_readout``; the ``readout`` table of ``ch1_full_mamba_<preset>``: seed, stage, row, col,
    value), columns 0 … |V|−1 the previous token, |V| … 2|V|−1 the current one."""
    missing = {"seed", "stage", "row", "col", "value"} - set(readout.columns)
    if missing:
        raise ValueError(f"readout table lacks columns {sorted(missing)}; pass tables['readout'] of ch1_full_mamba.")
    rows = readout[readout.stage == stage]
    if rows.empty:
        raise ValueError(f"no readout rows at stage {stage!r}; stages present: {sorted(set(readout.stage))}.")
    # one colour scale over all seeds (± the largest |entry|)
    return matrix_charts(
        {
            f"full Mamba LM, seed {s} ({stage})": rows[rows.seed == s]
            .pivot(index="row", columns="col", values="value")
            .to_numpy()
            for s in sorted(set(rows.seed))
        },
        "logit a",
        "(previous, current) token",
        width=width,
    )
