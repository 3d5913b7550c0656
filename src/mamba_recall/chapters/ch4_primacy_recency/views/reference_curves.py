"""Charts of the authors' own recall-by-position curves of paper 004 (Fig. 2), beside the book's S-models.

Both sources are drawn on the relative axis x = (k−1)/(L−1) of :mod:`mamba_recall.chapters.ch4_primacy_recency.pipelines.reference_curves`
(0 = the first fact, 1 = the last), so curves of different lengths L line up; y is recall with its 95 % Wilson
band. The authors' curves are labelled as theirs ("authors' Falcon Mamba 7B (their result files)"): they are
external reference data, not this project's runs.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from mamba_recall.chapters.ch4_primacy_recency.pipelines.reference_curves import (
    AUTHORS_LABEL,
    OURS_LABEL,
    on_relative_axis,
)

__all__ = ["authors_chart", "authors_vs_ours_chart", "comparison_frame"]

_X = alt.X("x:Q", title="relative position (k − 1)/(L − 1)", scale=alt.Scale(domain=[0, 1]))
_Y_BAND = alt.Y("lo:Q", title="recall", scale=alt.Scale(domain=[0, 1]))
_TOOLTIP = [
    "source:N",
    "variant:N",
    "L:O",
    "k:Q",
    alt.Tooltip("acc:Q", format=".2f"),
    alt.Tooltip("lo:Q", format=".2f"),
    alt.Tooltip("hi:Q", format=".2f"),
]


def _layers(base: alt.Chart, color: alt.Color, detail: list[str]) -> alt.LayerChart:
    band = (
        base.transform_filter("isValid(datum.lo) && isValid(datum.hi)")
        .mark_area(opacity=0.15)
        .encode(y=_Y_BAND, y2="hi:Q", color=color, detail=detail)
    )
    line = base.mark_line(point=True).encode(y="acc:Q", color=color, detail=detail, tooltip=_TOOLTIP)
    return band + line


def authors_chart(curves: pd.DataFrame, width: int = 300) -> alt.FacetChart:
    """The authors' curves (the table of ``load_authors_curves``), one line per L with its Wilson band, one
    panel per relation variant (repeated = their ``same_relation``, random = ``varied``)."""
    frame = curves.assign(source=AUTHORS_LABEL)
    base = alt.Chart(frame).encode(x=_X)
    return (
        _layers(base, alt.Color("L:O", title="L", scale=alt.Scale(scheme="viridis")), ["L:O"])
        .properties(width=width, height=200)
        .facet(column=alt.Column("variant:N", title=None))
        .properties(title=f"Recall by relative position: {AUTHORS_LABEL}, 20 prompts per position")
    )


def comparison_frame(authors: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """One long table of both sources on the relative axis: ``source`` (the authors' label, or "ours: <model>"),
    ``variant``, ``L``, ``k``, ``x``, ``acc``, ``lo``, ``hi`` (NaN where our table has no bands)."""
    ours = on_relative_axis(ours)
    ours = ours.assign(source=OURS_LABEL + ": " + ours["model"].astype(str))
    for col in ("lo", "hi", "variant"):
        if col not in ours.columns:
            ours = ours.assign(**{col: float("nan") if col != "variant" else "(one variant)"})
    cols = ["source", "variant", "L", "k", "x", "acc", "lo", "hi"]
    return pd.concat([authors.assign(source=AUTHORS_LABEL)[cols], ours[cols]], ignore_index=True)


def authors_vs_ours_chart(
    authors: pd.DataFrame, ours: pd.DataFrame, layout: str = "beside", width: int = 280
) -> alt.FacetChart:
    """The authors' curves and ours (``model``, ``L``, ``k``, ``acc``; ``lo``/``hi``/``variant`` optional) on
    the same normalised axis, one column per relation variant.

    ``layout="beside"``: one row per source, a line per L (colour); ``layout="over"``: both sources in one
    panel, coloured by source, a line per (source, L) — the tooltip names L."""
    frame = comparison_frame(authors, ours)
    if layout == "beside":
        color, detail = alt.Color("L:O", title="L", scale=alt.Scale(scheme="viridis")), ["L:O"]
        header = alt.Header(labelAngle=0, labelAlign="left", labelLimit=0)
        facet = dict(row=alt.Row("source:N", title=None, header=header), column=alt.Column("variant:N", title=None))
    elif layout == "over":
        legend = alt.Legend(orient="bottom", direction="vertical", labelLimit=0)
        color = alt.Color("source:N", title=None, legend=legend)
        detail = ["source:N", "L:O"]
        facet = dict(column=alt.Column("variant:N", title=None))
    else:
        raise ValueError(f"layout must be 'beside' or 'over', got {layout!r}.")
    base = alt.Chart(frame).encode(x=_X)
    return (
        _layers(base, color, detail)
        .properties(width=width, height=200)
        .facet(**facet)
        .properties(title="Recall by relative position: the authors' model (their result files) and ours")
    )
