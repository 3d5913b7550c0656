"""Chapter 3 views: static charts stay under Altair's row limit and serialise; presets are complete."""

import pandas as pd

from mamba_recall.presets import experiment
from mamba_recall.chapters.ch3_selectivity.configs import EXPERIMENTS
from mamba_recall.chapters.ch3_selectivity.views.selectivity import (
    haar_slider_chart,
    haar_slider_frame,
    mqar_grid,
    mqar_grid_chart,
)


def test_haar_slider_frame_fits_row_limit_in_both_presets():
    for preset in ("ci", "paper"):
        hs = experiment("ch3_haar", preset)
        frame = haar_slider_frame(hs["slider_js"], hs["slider_sharpness"], points=hs["slider_points"], quad_points=2001)
        assert len(frame) <= 5000
        spec = haar_slider_chart(frame).to_dict()
        assert {p["name"] for p in spec["params"]} >= {"j", "k", "sh"}


def test_mqar_grid_chart():
    frame = mqar_grid([4], [32], [8], n=20, draws=1).rename(columns={})
    assert set(frame.variant) and frame.accuracy.between(0, 1).all()
    mqar_grid_chart(frame).to_dict()


def test_ch3_presets_have_both_sizes():
    for name, sizes in EXPERIMENTS.items():
        assert name.startswith("ch3_") and {"ci", "paper"} <= set(sizes) <= {"ci", "cpu-hours", "paper"}
        for preset in sizes:
            assert isinstance(experiment(name, preset), dict)
    trained = {"ch3_keep_nth", "ch3_mqar_train", "ch3_mqar_figa3", "ch3_induction"}
    assert {n for n, s in EXPERIMENTS.items() if "cpu-hours" in s} == trained


def test_thm3_state_chart():
    import pytest

    from mamba_recall.theory.mqar_constructions import state_for_recall, thm3_state_for_recall
    from mamba_recall.chapters.ch3_selectivity.views.selectivity import thm3_state_chart

    need = state_for_recall(thm3_state_for_recall([4, 8], queries=400, draws=1, grid=[4, 8, 16, 32]))
    vl = thm3_state_chart(need).to_dict()  # the Vega-Lite dict
    assert len(vl["layer"]) == 2  # reference lines (log₂κ, κ) and the measured points
    refs = pd.DataFrame(vl["datasets"][vl["layer"][0]["data"]["name"]])
    assert set(refs.curve) == {"Thm. 3: N = log2 κ", "Thm. 2: N = κ"}
    with pytest.raises(ValueError, match="state_for_recall"):
        thm3_state_chart(need.drop(columns="N"))
