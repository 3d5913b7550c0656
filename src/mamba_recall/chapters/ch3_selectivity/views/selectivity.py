"""Charts and explorers of Chapter 3 (paper 003): the wavelet sliders and the MQAR-construction explorer.

* :func:`haar_slider_frame` / :func:`haar_slider_chart` — Altair sliders over (j, k, sharpness
  log₁₀|w_Δ|) drawing ψ_{j,k} and its S6 approximation g^{M₁} − 2g^{M₂} + g^{M₃} (Thm. 1, Fig. A.1),
  precomputed so they run in the static book.
* :func:`mqar_grid` / :func:`mqar_grid_chart` — accuracy of each MQAR construction (as printed / corrected)
  against the code size p, with κ and |V| sliders (static); :func:`mqar_explorer` — the live ipywidgets
  version (κ, |V|, d, N → accuracy), built only in Jupyter.
* :func:`training_curves_chart` — every trained MQAR run's held-out accuracy over training steps, one panel per
  (grid, d).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from mamba_recall.theory.haar import haar_psi, wavelet_from_bases
from mamba_recall.theory.mqar_constructions import VARIANTS, construction_accuracy, theory_dims


def haar_slider_frame(js=(0, 1, 2), sharpness=(1, 2, 3, 4), points: int = 161, quad_points: int = 40_001):
    """Wide frame (j, k, sharpness, s, psi, s6) of ψ_{j,k} and its 3-basis S6 approximation
    (kept under Altair's 5000-row limit: 7 (j, k) × 4 sharpness × 161 points by default)."""
    s = np.linspace(0.0, 1.0, quad_points)
    pick = np.linspace(0, quad_points - 1, points).astype(int)
    frames = []
    for j in js:
        for k in range(2**j):
            psi = haar_psi(j, k, s[pick])
            psi[-1] = psi[-2]
            for sh in sharpness:
                approx, _ = wavelet_from_bases(j, k, -(10.0**sh), s)
                frames.append(pd.DataFrame(dict(j=j, k=k, sharpness=sh, s=s[pick], psi=psi, s6=approx[pick])))
    return pd.concat(frames, ignore_index=True)


def haar_slider_chart(frame: pd.DataFrame) -> alt.Chart:
    js, shs = sorted(frame.j.unique()), sorted(frame.sharpness.unique())
    j = alt.param(
        "j", value=int(js[-1]), bind=alt.binding_range(min=int(js[0]), max=int(js[-1]), step=1, name="scale j ")
    )
    k = alt.param(
        "k", value=0, bind=alt.binding_range(min=0, max=2 ** int(js[-1]) - 1, step=1, name="shift k (< 2^j) ")
    )
    sh = alt.param(
        "sh",
        value=int(shs[len(shs) // 2]),
        bind=alt.binding_range(min=int(shs[0]), max=int(shs[-1]), step=1, name="sharpness log10|w_Δ| "),
    )
    return (
        alt.Chart(frame)
        .transform_filter((alt.datum.j == j) & (alt.datum.k == k) & (alt.datum.sharpness == sh))
        .transform_fold(["psi", "s6"], as_=["curve", "value"])
        .mark_line()
        .encode(
            x=alt.X("s:Q", title="s"),
            y=alt.Y("value:Q", title="value"),
            color=alt.Color("curve:N", title=None, scale=alt.Scale(domain=["psi", "s6"])),
            strokeDash=alt.StrokeDash("curve:N", legend=None),
        )
        .add_params(j, k, sh)
        .properties(
            width=520, height=240, title="Haar wavelet ψ_jk (psi) and its S6 approximation g1 − 2 g2 + g3 (s6), Thm. 1"
        )
    )


def mqar_grid(kappas, Vs, ps, n: int = 100, T: int = 100, draws: int = 2) -> pd.DataFrame:
    """Best-of-``draws`` accuracy of every variant in :data:`VARIANTS` on a (κ, |V|, p) grid."""
    rows = []
    for kappa in kappas:
        for V in Vs:
            for p in ps:
                for name, (cons, kw) in VARIANTS.items():
                    accs = [
                        construction_accuracy(cons, kappa, V, n=n, T=T, seed=1, jl_seed=s, **kw(p))
                        for s in range(draws)
                    ]
                    dims = theory_dims(cons, kappa, V, p=p)
                    rows.append(dict(kappa=kappa, V=V, p=p, variant=name, accuracy=max(accs), d=dims["d"], N=dims["N"]))
    return pd.DataFrame(rows)


def mqar_grid_chart(frame: pd.DataFrame) -> alt.Chart:
    ks, Vs = sorted(frame.kappa.unique()), sorted(frame.V.unique())
    kp = alt.param("kappa", value=int(ks[0]), bind=alt.binding_select(options=[int(v) for v in ks], name="κ "))
    vp = alt.param("V", value=int(Vs[-1]), bind=alt.binding_select(options=[int(v) for v in Vs], name="|V| "))
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("p:Q", title="JL code size p"),
            y=alt.Y("accuracy:Q", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("variant:N"),
            tooltip=["variant", "p", "d", "N", "accuracy"],
        )
        .add_params(kp, vp)
        .transform_filter((alt.datum.kappa == kp) & (alt.datum.V == vp))
        .properties(width=480, height=260, title="MQAR constructions: as printed vs corrected (best of draws)")
    )


def mqar_explorer(kappa: int = 8, V: int = 128, p: int = 16, N: int | None = None, n: int = 200):
    """ipywidgets explorer (Jupyter): construction, κ, |V|, p (sets d) and N (Thm 2) → accuracy. Prints the
    default setting's accuracy as plain output; each change of a control recomputes it
    (:func:`mamba_recall.widgets.explorer`)."""
    import ipywidgets as w

    from mamba_recall.widgets import explorer

    def draw(construction, kappa, V, p, N):
        if construction.startswith("Thm 2, one-hot"):
            acc = construction_accuracy("thm2", kappa, V, n=n, N=N)
            print(f"d = {kappa + V}, N = {N}: accuracy {acc:.3f} on {n} sequences")
            return
        cons, kw = VARIANTS[construction]
        acc = construction_accuracy(cons, kappa, V, n=n, **kw(p))
        dims = theory_dims(cons, kappa, V, p=p)
        print(f"d = {dims['d']}, N = {dims['N']}: accuracy {acc:.3f} on {n} sequences")

    return explorer(
        draw,
        {
            "construction": w.Dropdown(
                options=list(VARIANTS) + ["Thm 2, one-hot (N columns)"],
                value="Thm 2, corrected bias",
                description="construction",
            ),
            "kappa": w.IntSlider(value=kappa, min=2, max=32, description="κ"),
            "V": w.IntSlider(value=V, min=16, max=512, step=16, description="|V|"),
            "p": w.IntSlider(value=p, min=2, max=64, description="p"),
            "N": w.IntSlider(value=N or kappa, min=1, max=32, description="N (Thm 2)"),
        },
    )


def thm3_state_chart(need: pd.DataFrame) -> alt.LayerChart:
    """Thm. 3's state size against κ on log–log axes: the smallest N = p_k with 99 % recall
    (``need``: :func:`~mamba_recall.theory.mqar_constructions.state_for_recall`, columns kappa, N, accuracy) beside
    the theorem's N = log₂κ (dashed) and Thm. 2's N = κ (dotted)."""
    missing = {"kappa", "N", "accuracy"} - set(need.columns)
    if missing:
        raise ValueError(f"need lacks columns {sorted(missing)}; pass theory.mqar_constructions.state_for_recall(...).")
    measured = need[np.isfinite(need.N)].assign(curve="measured (99 % recall)")
    kappas = np.geomspace(float(need.kappa.min()), float(need.kappa.max()), 40)
    refs = pd.concat(
        [
            pd.DataFrame(dict(kappa=kappas, N=np.log2(kappas), curve="Thm. 3: N = log2 κ")),
            pd.DataFrame(dict(kappa=kappas, N=kappas, curve="Thm. 2: N = κ")),
        ]
    )
    curves = ["measured (99 % recall)", "Thm. 3: N = log2 κ", "Thm. 2: N = κ"]
    color = alt.Color("curve:N", title=None, scale=alt.Scale(domain=curves))
    x = alt.X("kappa:Q", scale=alt.Scale(type="log", base=2), title="keys κ")
    y = alt.Y("N:Q", scale=alt.Scale(type="log", base=2), title="state size N = p_k")
    lines = (
        alt.Chart(refs)
        .mark_line()
        .encode(
            x=x,
            y=y,
            color=color,
            strokeDash=alt.StrokeDash(
                "curve:N", legend=None, scale=alt.Scale(domain=curves[1:], range=[[6, 3], [2, 2]])
            ),
        )
    )
    points = (
        alt.Chart(measured)
        .mark_line(point=True)
        .encode(x=x, y=y, color=color, tooltip=["kappa", "N", alt.Tooltip("accuracy:Q", format=".4f")])
    )
    return (lines + points).properties(
        width=480, height=260, title="Thm. 3 (Mamba-2): state size for 99 % MQAR recall against κ"
    )


def training_curves_chart(curves: pd.DataFrame, preset: str) -> alt.FacetChart:
    """Held-out accuracy against the training step of every MQAR run (the ``curves`` table of a run-store bundle:
    grid, d, N, seed, step, loss, accuracy): one line per (N, seed), coloured by N, one panel per grid (rows) and d
    (columns). The panels are as wide as the book's column allows (at most 220 px) and the legend sits below them."""
    n_cols = max(1, int(curves["d"].nunique()))
    width = max(80, min(220, (760 - 20 * (n_cols - 1)) // n_cols))
    return (
        alt.Chart(curves)
        .mark_line()
        .encode(
            x="step:Q",
            y="accuracy:Q",
            color=alt.Color("N:O", legend=alt.Legend(orient="bottom")),
            detail="seed:N",
            tooltip=["grid", "d", "N", "seed", "step", "loss", "accuracy"],
        )
        .properties(width=width, height=150)
        .facet(row="grid:N", column="d:O", title=f"{preset}: training curves (held-out accuracy)")
    )


def figa3_chart(runs: pd.DataFrame, exact: float) -> alt.LayerChart:
    """Fig. A.3's N sweep, one point per trained model (the ``rows`` table of ``ch3_mqar_figa3``: κ, N, seed,
    accuracy): test accuracy against the state size N, one panel per κ, coloured by the side of Thm. 2's N = κ the
    model is on, with the rule's line for an exact solution (``exact``, e.g. 0.99). Panels 170 px wide, so that two
    fit a phone's column."""
    frame = runs.assign(side=np.where(runs.N < runs.kappa, "N < κ", "N ≥ κ"), exact=exact)
    points = (
        alt.Chart()
        .mark_circle(size=60, opacity=0.7)
        .encode(
            x=alt.X("N:O", title="state size N"),
            y=alt.Y("accuracy:Q", scale=alt.Scale(domain=[0, 1]), title="test accuracy"),
            color=alt.Color("side:N", title=None, legend=alt.Legend(orient="bottom")),
            tooltip=["kappa", "N", "d", "seed", alt.Tooltip("accuracy:Q", format=".4f"), "steps"],
        )
    )
    line = alt.Chart().mark_rule(color="black", strokeDash=[4, 3]).encode(y="exact:Q")
    return (
        alt.layer(points, line, data=frame)
        .properties(width=170, height=180)
        .facet(column=alt.Column("kappa:O", title="κ"), title=f"Fig. A.3 sweep: each seed (dashed: exact, {exact})")
        .resolve_scale(x="independent")  # each κ shows its own N values
    )
