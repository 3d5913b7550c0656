"""The chart builders keep every chart within the book's 964-px article column at a 1300-px window and set no text
below 10 px (the browser check fails a chart whose text is drawn smaller, e.g. a wide chart shrunk to fit)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def _values(spec, key):
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == key:
                yield v
            yield from _values(v, key)
    elif isinstance(spec, list):
        for v in spec:
            yield from _values(v, key)


def test_no_chart_text_set_below_10_px():
    from mamba_recall.chapters.ch1_gradient_dynamics.views import fig4_chart
    from mamba_recall.chapters.ch2_hashing_scaling.views import reference_grid_chart

    rows = [
        dict(t=t, panel=p, dim=d, value=0.1 * d, token=str(t), event="noise", half="output" if p == "output" else "")
        for t in range(4)
        for p in ("output", "state", "input term", "forgetting factor")
        for d in range(2)
    ]
    table = pd.DataFrame(
        dict(D=[8, 8], N=[8, 16], best_accuracy_mean=[0.9, 0.95], best_accuracy_ci_low=[0.88, 0.94])
    ).assign(best_accuracy_ci_high=[0.92, 0.96], authors=[0.9, 0.96], diff_mean=[0.0, -0.01])
    for chart in (fig4_chart(pd.DataFrame(rows)), reference_grid_chart(table, "reference grid")):
        sizes = list(_values(chart.to_dict(), "fontSize"))
        assert sizes and min(sizes) >= 10


def test_facet_charts_wrap_into_rows():
    from mamba_recall.chapters.ch4_primacy_recency.views.primacy import delta_heatmap, recall_chart

    heat = pd.DataFrame([dict(k=k, layer=0, t=t, delta=0.5) for k in (1, 2, 4, 8, 16, 32, 64) for t in range(64)])
    curves = pd.DataFrame([dict(k=1, acc=0.5, lo=0.4, hi=0.6, condition="c", L=f"L = {L}") for L in range(6)])
    assert delta_heatmap(heat, "Δ").to_dict()["columns"] == 4
    assert recall_chart(curves, facet="L").to_dict()["columns"] == 3


def test_training_curves_panels_shrink_with_the_number_of_columns():
    from mamba_recall.chapters.ch3_selectivity.views.selectivity import training_curves_chart

    def width(ds):
        frame = pd.DataFrame([dict(grid="g", d=d, N=1, seed=0, step=0, loss=1.0, accuracy=0.5) for d in ds])
        return training_curves_chart(frame, "ci").to_dict()["spec"]["width"]

    assert width([32]) == 220
    assert 4 * width([8, 16, 32, 64]) + 60 <= 800
    assert 8 * width(range(8)) + 140 <= 800


def test_matrix_charts_share_one_colour_domain():
    from mamba_recall.chapters.ch1_gradient_dynamics.views import matrix_charts

    mats = {"a": np.eye(3), "b": 4 * np.eye(3)}
    spec = matrix_charts(mats).to_dict()
    domains = [c["encoding"]["color"]["scale"]["domain"] for c in spec["hconcat"]]
    assert domains == [[-4.0, 4.0], [-4.0, 4.0]]
    assert matrix_charts(mats, shared=False).to_dict()["resolve"]["scale"]["color"] == "independent"


def test_table1_chart_names_the_models_on_its_axis_not_in_column_titles():
    from mamba_recall.chapters.ch1_gradient_dynamics.views import table1_chart

    long = pd.DataFrame(
        [
            dict(label=m, kappa=k, T=128, source=s, value=50.0)
            for m in ("a", "b")
            for k in (1, 4)
            for s in ("ours", "paper")
        ]
    )
    spec = table1_chart(long).to_dict()
    assert spec["facet"]["column"]["field"] == "kappa"
    assert spec["spec"]["encoding"]["y"]["field"] == "label"
    assert spec["spec"]["encoding"]["y"]["axis"]["labelLimit"] == 0  # the names whole


def test_chapter_2_panels_and_legends_have_plain_titles():
    from mamba_recall.chapters.ch2_hashing_scaling.views import grid_heatmaps, trained_dn_chart

    cols = ["eq15", "eq77", "rev_a3", "designed_full", "designed_values", "trained"]
    frame = pd.DataFrame([dict(D=d, N=n, **{c: 0.5 for c in cols}) for d in (8, 16) for n in (8, 16)])
    spec = grid_heatmaps(frame, cols, "t").to_dict()
    shown = {r["column"] for r in next(iter(spec["datasets"].values()))}
    assert shown == {
        "Eq. 15 as printed",
        "Eq. 77 (Thm 3)",
        "later law, a = 3",
        "designed, full",
        "designed, values",
        "trained",
    }
    assert spec["encoding"]["column"]["sort"][0] == "Eq. 15 as printed"
    cells = pd.DataFrame(
        dict(DN=[64, 128], line=["row", "row"], eq77=[0.5, 0.9], rev_a54=[0.4, 0.8], D=[8, 8], N=[8, 16])
    ).assign(best_accuracy_mean=0.5, best_accuracy_ci_low=0.4, best_accuracy_ci_high=0.6)
    laws = {r.get("law") for d in trained_dn_chart(cells).to_dict()["datasets"].values() for r in d} - {None}
    assert laws == {"Eq. 77 (Thm 3)", "later law, a = 5/4"}


def test_grid_param_binds_the_value():
    from mamba_recall.plots import grid_param

    even, match = grid_param("tau", [0.5, 0.7, 0.9], 0.7, "τ ")
    d = even.param.to_dict()
    assert d["value"] == 0.7 and d["bind"]["input"] == "range" and d["bind"]["step"] == 0.2
    assert match("tau_i").startswith("abs([0.5, 0.7, 0.9][datum.tau_i] - tau) <= 0.0999")
    uneven, _ = grid_param("V", [256, 512, 1024], 512, "V ")
    d = uneven.param.to_dict()
    assert d["value"] == 512 and d["bind"]["input"] == "radio" and d["bind"]["options"] == [256, 512, 1024]
