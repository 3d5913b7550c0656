"""Charts and explorers of Chapter 2 (paper 002): heatmaps of matrices (weights, G operators, hash tables,
attention maps), (D, N) accuracy heatmaps with browser-side sliders for V and N_f, and an ipywidgets
explorer that trains a tiny simplified Mamba and shows its hash table."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import torch
from IPython.display import display

from mamba_recall.presets import seeds
from mamba_recall.plots import grid_param

__all__ = [
    "matrix_heatmap",
    "matrices_row",
    "theory_slider_chart",
    "grid_heatmaps",
    "line_chart",
    "hash_table_explorer",
    "theory_grid_frame",
    "multihead_heatmaps",
    "multihead_noise_chart",
    "multihead_explorer",
    "reference_grid_chart",
    "capacity_loglog_chart",
    "trained_dn_chart",
]


def _pool(M: np.ndarray, max_cells: int) -> tuple[np.ndarray, int, int]:
    """Mean-pool a matrix so that each side has at most ``max_cells`` entries (keeps signs)."""
    r = int(np.ceil(M.shape[0] / max_cells))
    c = int(np.ceil(M.shape[1] / max_cells))
    if r == 1 and c == 1:
        return M, 1, 1
    R, C = -(-M.shape[0] // r) * r, -(-M.shape[1] // c) * c
    P = np.zeros((R, C))
    P[: M.shape[0], : M.shape[1]] = M
    return P.reshape(R // r, r, C // c, c).mean((1, 3)), r, c


def matrix_heatmap(
    M,
    title: str,
    *,
    x_title="column",
    y_title="row",
    max_cells: int = 64,
    width=220,
    height=220,
    diverging: bool = True,
) -> alt.Chart:
    """A heatmap of a 2-D array (rows top to bottom), mean-pooled to ≤ ``max_cells`` per side."""
    M = torch.as_tensor(M).detach().double().cpu().numpy()
    P, r, c = _pool(M, max_cells)
    rows, cols = np.indices(P.shape)
    lim = float(np.abs(P).max()) or 1.0
    # 3 significant digits relative to the largest entry keep the embedded page small
    frame = pd.DataFrame(
        {
            "row": rows.ravel() * r,
            "col": cols.ravel() * c,
            "value": np.round(P.ravel(), max(0, 2 - int(np.floor(np.log10(lim))))),
        }
    )
    scale = alt.Scale(scheme="redblue", domain=[-lim, lim], reverse=True) if diverging else alt.Scale(scheme="viridis")
    pooled = f" (pooled {r}×{c})" if r * c > 1 else ""
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("col:O", title=x_title + pooled, axis=alt.Axis(labels=False, ticks=False)),
            y=alt.Y("row:O", title=y_title, axis=alt.Axis(labels=False, ticks=False)),
            color=alt.Color("value:Q", scale=scale, legend=None),
            tooltip=["row", "col", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(title=title, width=width, height=height)
    )


def matrices_row(mats: dict, **kw) -> alt.HConcatChart:
    """Several :func:`matrix_heatmap` side by side: ``{title: matrix}``."""
    return alt.hconcat(*[matrix_heatmap(M, t, **kw) for t, M in mats.items()]).resolve_scale(color="independent")


#: Plain titles of the laws' and the grids' code names (the columns of the run-store tables), for panels and legends.
PLAIN = {
    "eq15": "Eq. 15 as printed",
    "eq15_printed": "Eq. 15 as printed",
    "eq15_consistent": "Eq. 15 corrected",
    "eq15_corrected": "Eq. 15 corrected",
    "eq77": "Eq. 77 (Thm 3)",
    "eq17": "Eq. 17",
    "remark1": "Remark 1",
    "rev_mV": "authors' later law",
    "rev_a3": "later law, a = 3",
    "rev_a54": "later law, a = 5/4",
    "designed_full": "designed, full",
    "designed_values": "designed, values",
    "trained": "trained",
    "full": "full Mamba",
    "acc": "measured",
}


def plain(name: str) -> str:
    """The plain title of a law's or a grid's code name (:data:`PLAIN`); other names as they are."""
    return PLAIN.get(name, name)


def theory_grid_frame(Vs, Nfs, Ds, Ns, laws=("eq15", "eq15_consistent", "eq77", "rev_mV")) -> pd.DataFrame:
    """Long frame (V_i, Nf_i, D, N, law, p) of the probabilistic laws over the grid (V_i, Nf_i: positions in
    ``Vs``, ``Nfs``)."""
    from mamba_recall.theory.capacity import p_success

    rows = []
    for vi, V in enumerate(Vs):
        for fi, Nf in enumerate(Nfs):
            if V < 4 * Nf:
                continue
            for law in laws:
                for D in Ds:
                    for N in Ns:
                        rows.append(dict(V_i=vi, Nf_i=fi, D=D, N=N, law=law, p=round(p_success(V, Nf, D, N, law), 4)))
    return pd.DataFrame(rows)


def theory_slider_chart(frame: pd.DataFrame, Vs, Nfs, V0, Nf0, measured: pd.DataFrame | None = None) -> alt.Chart:
    """(D, N) heatmaps of every law (columns), sliders over V and N_f (positions in ``Vs``/``Nfs``).
    ``frame`` from :func:`theory_grid_frame`.
    ``measured`` (optional; columns V, Nf, D, N, source, p) adds the measured grids as more columns."""
    v_sl, v_match = grid_param("V", Vs, V0, "V ")
    f_sl, f_match = grid_param("Nf", Nfs, Nf0, "N_f ")
    data = frame.rename(columns={"law": "source"})
    if measured is not None and len(measured):
        m = measured.copy()
        m["V_i"] = m["V"].map(lambda v: Vs.index(v) if v in Vs else -1)
        m["Nf_i"] = m["Nf"].map(lambda v: Nfs.index(v) if v in Nfs else -1)
        data = pd.concat([data, m[data.columns]], ignore_index=True)
    data = data.assign(source=data["source"].map(plain))
    return (
        alt.Chart(data)
        .mark_rect()
        .encode(
            x=alt.X("D:O", title="D"),
            y=alt.Y("N:O", title="N", sort="descending"),
            color=alt.Color("p:Q", scale=alt.Scale(domain=[0, 1], scheme="viridis"), title="accuracy / p"),
            # three panels a row: six side by side would be wider than the book's column
            facet=alt.Facet("source:N", title=None, columns=3),
            tooltip=["source", "D", "N", alt.Tooltip("p:Q", format=".3f")],
        )
        .add_params(v_sl, f_sl)
        .transform_filter(f"{v_match('V_i')} && {f_match('Nf_i')}")
        .properties(width=150, height=150, title="predicted p(success) and measured accuracy over (D, N)")
    )


def grid_heatmaps(frame: pd.DataFrame, columns: list[str], title: str) -> alt.Chart:
    """(D, N) heatmaps of several accuracy columns of one regime (Fig. 6 layout)."""
    long = frame.melt(id_vars=["D", "N"], value_vars=columns, var_name="column", value_name="acc")
    long["column"] = long["column"].map(plain)
    size = 130 if len(columns) <= 5 else 100
    return (
        alt.Chart(long)
        .mark_rect()
        .encode(
            x=alt.X("D:O"),
            y=alt.Y("N:O", sort="descending"),
            color=alt.Color("acc:Q", scale=alt.Scale(domain=[0, 1], scheme="viridis")),
            column=alt.Column("column:N", sort=[plain(c) for c in columns], title=None),
            tooltip=["column", "D", "N", alt.Tooltip("acc:Q", format=".3f")],
        )
        # one row (Fig. 6 layout) within the book's column: six or seven panels are drawn smaller
        .properties(width=size, height=size, title=title)
    )


def reference_grid_chart(table: pd.DataFrame, title: str) -> alt.Chart:
    """The authors' reference grid: per (D, N) cell our mean with its 95 % interval over seeds (dot and bar) beside
    the authors' number (cross), and a (D, N) heatmap of the difference ours − theirs."""
    t = table.copy()
    t["cell"] = [f"D={d}, N={n}" for d, n in zip(t["D"], t["N"])]
    order = list(t["cell"])
    base = alt.Chart(t).encode(x=alt.X("cell:N", sort=order, title="(D, N) cell"))
    ours = base.mark_point(filled=True, color="steelblue").encode(
        y=alt.Y("best_accuracy_mean:Q", title="validation accuracy", scale=alt.Scale(domain=[0, 1])),
        tooltip=[
            "cell",
            alt.Tooltip("best_accuracy_mean:Q", format=".4f", title="ours (mean)"),
            alt.Tooltip("best_accuracy_ci_low:Q", format=".4f"),
            alt.Tooltip("best_accuracy_ci_high:Q", format=".4f"),
            alt.Tooltip("authors:Q", format=".2f"),
            alt.Tooltip("diff_mean:Q", format="+.4f"),
        ],
    )
    bars = base.mark_rule(color="steelblue").encode(y="best_accuracy_ci_low:Q", y2="best_accuracy_ci_high:Q")
    theirs = base.mark_point(shape="cross", color="darkorange", size=60).encode(y="authors:Q")
    dots = (bars + ours + theirs).properties(
        width=420, height=220, title=f"{title}: ours (blue, mean ± 95 % CI) vs authors (orange ×)"
    )
    diff = (
        alt.Chart(t)
        .mark_rect()
        .encode(
            x=alt.X("D:O"),
            y=alt.Y("N:O", sort="descending"),
            color=alt.Color(
                "diff_mean:Q", scale=alt.Scale(domain=[-0.02, 0.02], scheme="redblue"), title="ours − theirs"
            ),
            tooltip=["D", "N", alt.Tooltip("diff_mean:Q", format="+.4f")],
        )
        + alt.Chart(t)
        .mark_text(fontSize=10)
        .encode(x="D:O", y=alt.Y("N:O", sort="descending"), text=alt.Text("diff_mean:Q", format="+.3f"))
    ).properties(width=180, height=180, title="mean difference (ours − theirs)")
    return alt.hconcat(dots, diff)


def capacity_loglog_chart(
    cap: pd.DataFrame, laws=("remark1", "eq15_printed", "eq15_corrected"), title: str = "facts recalled vs D·N"
) -> alt.Chart:
    """Facts recalled N_f* (largest N_f at accuracy ≥ level) against D·N on log axes, measured (dots; censored
    cells hollow) and each law's prediction (lines), one panel per accuracy level."""
    rows = []
    for _, r in cap.iterrows():
        rows.append(
            dict(DN=r["DN"], level=f"{r['level']:.0%}", series="measured", Nf=r["Nf"], censored=bool(r["censored"]))
        )
        for law in laws:
            if r.get(law) == r.get(law) and r.get(law, 0) > 0:
                rows.append(dict(DN=r["DN"], level=f"{r['level']:.0%}", series=plain(law), Nf=r[law], censored=False))
    long = pd.DataFrame(rows)
    long = long[long["Nf"] > 0]
    long = long.groupby(["DN", "level", "series"], as_index=False).agg(Nf=("Nf", "mean"), censored=("censored", "max"))
    enc = dict(
        x=alt.X("DN:Q", scale=alt.Scale(type="log", base=2), title="D·N"),
        y=alt.Y("Nf:Q", scale=alt.Scale(type="log", base=2), title="facts recalled N_f*"),
        color=alt.Color("series:N", sort=["measured", *map(plain, laws)], legend=alt.Legend(labelLimit=0)),
        tooltip=["series", "DN", alt.Tooltip("Nf:Q", format=".1f"), "censored"],
    )
    base = alt.Chart(long)
    lines = base.transform_filter("datum.series != 'measured'").mark_line(strokeDash=[4, 2]).encode(**enc)
    pts = (
        base.transform_filter("datum.series == 'measured'")
        .mark_point(size=50, filled=True)
        .encode(**enc, shape=alt.Shape("censored:N", title="censored (≥)"))
    )
    return (
        (lines + pts)
        .properties(width=260, height=220)
        .facet(column=alt.Column("level:N", title="accuracy level"))
        .properties(title=title)
    )


def trained_dn_chart(
    cells: pd.DataFrame, laws=("eq77", "eq15_printed", "eq15_corrected", "rev_a54"), title: str = "trained models"
) -> alt.Chart:
    """Trained accuracy (mean ± 95 % CI over seeds) against D·N on a log axis, with each law's predicted accuracy."""
    t = cells.copy()
    enc_x = alt.X("DN:Q", scale=alt.Scale(type="log", base=2), title="D·N")
    long = t.melt(id_vars=["DN", "line"], value_vars=[c for c in laws if c in t], var_name="law", value_name="p")
    long["law"] = long["law"].map(plain)
    lines = (
        alt.Chart(long)
        .mark_line(strokeDash=[4, 2], point=True)
        .encode(
            x=enc_x,
            y=alt.Y("p:Q", scale=alt.Scale(domain=[0, 1]), title="accuracy"),
            color=alt.Color("law:N", legend=alt.Legend(labelLimit=0)),
            detail="line:N",
            tooltip=["law", "DN", alt.Tooltip("p:Q", format=".3f")],
        )
    )
    bars = (
        alt.Chart(t)
        .mark_rule(color="black", clip=True)
        .encode(x=enc_x, y=alt.Y("best_accuracy_ci_low:Q"), y2="best_accuracy_ci_high:Q")
    )
    dots = (
        alt.Chart(t)
        .mark_point(filled=True, color="black", size=50)
        .encode(
            x=enc_x,
            y="best_accuracy_mean:Q",
            shape="line:N",
            tooltip=["D", "N", alt.Tooltip("best_accuracy_mean:Q", format=".3f")],
        )
    )
    return (lines + bars + dots).properties(width=360, height=220, title=title)


def line_chart(frame: pd.DataFrame, x: str, y: str, color: str, title: str, log_x=False) -> alt.Chart:
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{x}:Q", scale=alt.Scale(type="log", base=2) if log_x else alt.Scale()),
            y=alt.Y(f"{y}:Q", scale=alt.Scale(domain=[0, 1])),
            color=f"{color}:N",
            tooltip=[x, y, color],
        )
        .properties(width=320, height=220, title=title)
    )


def _train_tiny(V, Nf, D, N, steps, seed):
    from mamba_recall.models.linear_mamba import LinearMamba
    from mamba_recall.tasks.mqar import batch_fn, mqar
    from mamba_recall.train import evaluate
    from .training.ensemble import train_ensemble

    L = 4 * Nf
    model = LinearMamba(V, D, N, seed=seed)
    ev = mqar(V, Nf, L, 200, seeds.MQAR_EVAL)
    train_ensemble(model, batch_fn(V, Nf, L, 64, seed), steps=steps, overrides=dict(warmup=20, hold=20), num_threads=1)
    return model, float(evaluate(model, *ev, per_member=True)[0])


def hash_table_explorer(V=64, Nf=8, D=32, N=8, steps=150, seed=0):
    """ipywidgets: train a tiny simplified Mamba at (V, N_f, D, N) and show its hash table H''_t next to the
    ideal H_t (Fig. 3). Nothing trains until a person presses the button (the notebook draws the default
    view); see :func:`mamba_recall.widgets.explorer`."""
    import ipywidgets as w

    from mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing import hash_tables, ideal_table
    from mamba_recall.tasks.mqar import mqar
    from mamba_recall.widgets import explorer

    def draw(V, Nf, D, N, steps):
        if V <= 4 * Nf:
            print(f"MQAR needs V > L = 4 N_f = {4 * Nf}: raise V or lower N_f.")
            return
        model, acc = _train_tiny(V, Nf, D, N, steps, seed)
        x, _ = mqar(V, Nf, 4 * Nf, 1, 7)
        H2 = hash_tables(model, model.member_weights(0), x, 2 * Nf - 1)["H2"][0]
        ideal = ideal_table(x[0, 0 : 2 * Nf : 2], x[0, 1 : 2 * Nf : 2], V)
        print(f"held-out accuracy {acc:.3f}")
        h = V // 2
        display(
            matrices_row(
                {"ideal H_t (values × keys)": ideal[h:, :h], "model H''_t (values × keys)": H2[h:, :h]}, max_cells=64
            )
        )

    return explorer(
        draw,
        {
            "V": w.IntSlider(value=V, min=32, max=256, step=32, description="V"),
            "Nf": w.IntSlider(value=Nf, min=2, max=16, description="Nf"),
            "D": w.IntSlider(value=D, min=4, max=128, step=4, description="D"),
            "N": w.IntSlider(value=N, min=1, max=64, description="N"),
            "steps": w.IntSlider(value=steps, min=50, max=1000, step=50, description="steps"),
        },
        default_view=False,
        button="train",
    )


def multihead_heatmaps(grid: pd.DataFrame, columns=("acc", "eq77"), patterns=("MQA", "MKA", "MVA", "MHA")) -> alt.Chart:
    """Fig. 8 layout: one (N, M) heatmap per head pattern (columns) and per quantity (rows: trained accuracy,
    Thm 5 + Eq. 77 prediction). A click on a cell highlights that N in every panel. ``grid`` from the
    ``ch2_multihead`` bundle (columns pattern, M, N and ``columns``)."""
    long = grid[["pattern", "M", "N", *columns]].melt(
        id_vars=["pattern", "M", "N"], value_vars=list(columns), var_name="quantity", value_name="value"
    )
    pick = alt.selection_point(fields=["N"], on="click", clear="dblclick")
    return (
        alt.Chart(long)
        .mark_rect()
        .encode(
            x=alt.X("N:O", title="state size N"),
            y=alt.Y("M:O", sort="descending", title="heads M"),
            color=alt.Color("value:Q", scale=alt.Scale(domain=[0, 1], scheme="viridis"), title="accuracy / p"),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(0.35)),
            column=alt.Column("pattern:N", sort=list(patterns), title=None),
            row=alt.Row("quantity:N", sort=list(columns), title=None),
            tooltip=["pattern", "M", "N", "quantity", alt.Tooltip("value:Q", format=".3f")],
        )
        .add_params(pick)
        .properties(width=120, height=110, title="head patterns over (N, M) at fixed D (Fig. 8); click a column")
    )


def multihead_noise_chart(noise: pd.DataFrame, hist: pd.DataFrame, N0: int) -> alt.Chart:
    """Fig. 15 (left): relative variance of the empty / wrong output entries vs M, one line per pattern, with a
    slider over N; Fig. 14 (right): histograms of the normalised logits (correct / wrong / empty) of MHA, one
    line per M, at the slider's N."""
    Ns = sorted(noise["N"].unique().tolist())
    n_sl = alt.param(name="N_sel", value=int(N0), bind=alt.binding_select(options=Ns, name="state size N "))
    long = noise.melt(
        id_vars=["pattern", "M", "N"],
        value_vars=["rel_var_empty", "rel_var_wrong"],
        var_name="entries",
        value_name="rel_var",
    )
    left = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("M:O", title="heads M"),
            y=alt.Y("rel_var:Q", scale=alt.Scale(type="log"), title="variance / margin²"),
            color="pattern:N",
            strokeDash="entries:N",
            tooltip=["pattern", "M", "N", "entries", alt.Tooltip("rel_var:Q", format=".4f")],
        )
        .add_params(n_sl)
        .transform_filter(alt.datum.N == n_sl)
        .properties(width=260, height=220, title="Fig. 15: output-entry noise vs heads")
    )
    right = (
        alt.Chart(hist[hist["pattern"] == "MHA"])
        .mark_line()
        .encode(
            x=alt.X("bin:Q", title="(logit − mean empty) / margin"),
            y=alt.Y("frac:Q", title="fraction"),
            color=alt.Color("M:O", scale=alt.Scale(scheme="viridis")),
            strokeDash="entry:N",
            tooltip=["M", "entry", "bin", "frac"],
        )
        .add_params(n_sl)
        .transform_filter(alt.datum.N == n_sl)
        .properties(width=300, height=220, title="Fig. 14: MHA logits at the query (per M)")
    )
    return alt.hconcat(left, right)


def multihead_explorer(V=64, Nf=8, D=32, steps=150, seed=0):
    """ipywidgets: train a tiny multi-head simplified Mamba-2 at (pattern, M, N) and print its accuracy next to
    the Thm 5 / Eq. 77 prediction. Nothing trains until a person presses the button."""
    import ipywidgets as w

    from mamba_recall.models.linear_mamba import MultiHeadLinearMamba
    from mamba_recall.tasks.mqar import batch_fn, mqar
    from mamba_recall.theory.capacity import multihead_prediction
    from mamba_recall.train import evaluate
    from .training.ensemble import train_ensemble
    from mamba_recall.widgets import explorer

    def draw(pattern, M, N, steps):
        L = 4 * Nf
        if (2 * D) % M:
            print(f"D_in = {2 * D} is not divisible by M = {M}.")
            return
        model = MultiHeadLinearMamba(V, D, N, M, pattern, seed=seed)
        train_ensemble(
            model,
            batch_fn(V, Nf, L, 64, seed),
            steps=steps,
            overrides=dict(warmup=20, hold=20, grad_clip=5.0),
            num_threads=1,
        )
        acc = float(evaluate(model, *mqar(V, Nf, L, 200, seeds.MQAR_EVAL), per_member=True)[0])
        pred = multihead_prediction(V, Nf, D, N, M, pattern)
        print(
            f"{pattern}, M={M}, N={N}: held-out accuracy {acc:.3f}; Thm 5: N' = {pred['N_eff']}, "
            f"Eq. 77 p = {pred['p_eq77']:.3f}"
        )

    return explorer(
        draw,
        {
            "pattern": w.Dropdown(options=["MQA", "MKA", "MVA", "MHA"], value="MHA", description="pattern"),
            "M": w.Dropdown(options=[1, 2, 4, 8], value=4, description="M"),
            "N": w.IntSlider(value=2, min=1, max=16, description="N"),
            "steps": w.IntSlider(value=steps, min=50, max=1000, step=50, description="steps"),
        },
        default_view=False,
        button="train",
    )
