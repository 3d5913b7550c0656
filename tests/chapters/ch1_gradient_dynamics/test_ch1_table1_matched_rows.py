"""Table 1's rows read at similar model sizes where their bundles are committed: row 4 on the size-matched RoPE
Transformer (``ch1_table1_rope``), row 3's deciding cell on seeds 3-5 (``ch1_table1_seeds``)."""

import pandas as pd
import pytest

from mamba_recall.chapters.ch1_gradient_dynamics.claims import check_table1, load_seeds, table1
from mamba_recall.presets import experiment


def _quiet(stem):
    return load_seeds(stem, log=lambda *_: None)


def test_rope_row_is_read_at_similar_size():
    seeds, rope = _quiet("ch1_table1"), _quiet("ch1_table1_rope")
    if seeds is None or rope is None:
        pytest.skip("no committed ch1_table1 / ch1_table1_rope cpu-hours bundle")
    runs = rope.tables["rows"]
    assert set(runs.model) == {"tf2_conv_rope"} and set(runs.seed) == {0, 1, 2}
    mamba = seeds.tables["rows"]
    assert runs.params.max() <= table1.SIMILAR_SIZE * mamba[mamba.model == "mamba"].params.max()
    v = check_table1("000/Table1-rope", seeds, pd.DataFrame(), None, record=False)
    # every committed seed of the size-matched model: 0-2, and κ = 1 on seeds 3-5 (ch1_table1_seeds; referee-P)
    assert v.evidence["seeds"] == (6 if _quiet("ch1_table1_seeds") is not None else 3)
    assert "similar model sizes" not in v.ours  # read, not set aside for its size
    assert "ch1_table1_rope_cpu-hours.json" in v.evidence["source"]  # the record cites every bundle it reads


def test_capped_cells_are_undecided_and_the_longer_runs_decide_them(monkeypatch):
    """Rows 1 and 4 at κ = 4: on the 1,000-step runs every Mamba and size-matched RoPE run stopped on its cap below its
    bar, so both rows read those cells undecided and their reason does not send the reader to more seeds
    (referee-J). The reruns to the target or 8× the cap (ch1_table1_k4, no plateau stop) decide a cell where the run
    reached the target or ended flat (training accuracy up ≤ 0.002 over its last 2,000 steps); the Mamba's seeds 0
    and 1 end flat at 0.983-0.984, below 99 %, and seed 2 still rising, so both rows stay inconclusive on that one
    cell, and row 4 reads all six seeds of its RoPE model."""
    seeds, k4 = _quiet("ch1_table1"), _quiet("ch1_table1_k4")
    if seeds is None or k4 is None:
        pytest.skip("no committed ch1_table1 / ch1_table1_k4 cpu-hours bundle")
    rows = k4.tables["rows"]
    assert set(rows.kappa) == {4} and set(rows.stopped) <= {"target", "flat", "steps"} and rows.steps_run.max() <= 8000
    mamba = rows[rows.model == "mamba"].set_index("seed")
    assert (mamba.accuracy < 0.99).all() and list(mamba.stopped) == ["flat", "flat", "steps"]
    row1 = check_table1("000/Table1-mamba", seeds, pd.DataFrame(), None, record=False)
    assert row1.status == "inconclusive" and row1.ours.count("stopped on the step cap below 99 %: T=128 κ=4") == 1
    assert "ch1_table1_k4_cpu-hours.json" in row1.evidence["source"]
    v = check_table1("000/Table1-rope", seeds, pd.DataFrame(), None, record=False)
    assert v.status == "inconclusive" and v.evidence["seeds"] == 6
    assert v.ours.count("stopped on the step cap below its bar: Mamba T=128 κ=4") == 1
    assert "would not settle the undecided part" in v.reason and "more seeds would settle it" not in v.reason
    # without the longer runs every κ = 4 cell is capped, the RoPE model's too
    monkeypatch.setattr(table1, "LONGER_BUNDLES", ())
    v = check_table1("000/Table1-rope", seeds, pd.DataFrame(), None, record=False)
    assert v.status == "inconclusive" and "stopped on the step cap below its bar: RoPE T=128 κ=4" in v.ours


def test_row3_reads_six_seeds_of_its_deciding_cell():
    seeds, matched, more = _quiet("ch1_table1"), _quiet("ch1_table1_matched"), _quiet("ch1_table1_seeds")
    if seeds is None or matched is None or more is None:
        pytest.skip("no committed ch1_table1 / _matched / _seeds cpu-hours bundle")
    assert set(more.tables["rows"].seed) == {3, 4, 5}
    v = check_table1("000/Table1-tf1-conv", seeds, pd.DataFrame(), None, record=False, matched=matched)
    assert v.evidence["seeds"] == 6


def test_more_seeds_jobs_start_at_seed_3():
    from mamba_recall.chapters.ch1_gradient_dynamics.runners.grid_jobs import jobs_for

    sizes = experiment("ch1_table1_seeds", "cpu-hours")
    assert sizes["first_seed"] == 3 and sizes["num_keys"] == [1] and sizes["conv_width"] == 4
    jobs = jobs_for("cpu-hours", parts=["table1_seeds", "table1_rope"])
    assert {j["seed"] for j in jobs if j["experiment"] == "ch1_table1_seeds"} == {3, 4, 5}
    assert {j["seed"] for j in jobs if j["experiment"] == "ch1_table1_rope"} == {0, 1, 2}
    assert all(j["config"]["sizes"]["tf_d_model"] == 8 for j in jobs)


def test_a_run_at_its_cap_is_finished_only_where_its_curve_is_flat():
    """training.table1.stop_reason / tail_gain (referee-P): a rerun to the target or the cap that ends on the cap
    counts as finished ("flat") only where its training-set accuracy rose at most 0.002 over its last 2,000 steps; a
    curve still climbing stays at the cap ("steps", undecided below its bar), and a curve shorter than the window
    cannot show a flat end."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.table1 import stop_reason, tail_gain

    flat = [[s, 0.97 + (0.0001 if s > 6000 else 0.0)] for s in range(100, 8001, 100)]
    climbing = [[s, 0.90 + s * 1e-5] for s in range(100, 8001, 100)]
    assert tail_gain(flat) == pytest.approx(0.0001) and tail_gain(climbing) == pytest.approx(0.02)
    assert stop_reason({"stopped": "steps", "train_curve": flat}) == "flat"
    assert stop_reason({"stopped": "steps", "train_curve": climbing}) == "steps"
    assert stop_reason({"stopped": "target", "train_curve": climbing[:5]}) == "target"
    assert stop_reason({"stopped": "steps", "train_curve": flat[:10]}) == "steps"  # 1,000 steps cannot show it
    assert stop_reason({"stopped": "plateau"}) == "plateau"
    # the measurements read "flat" as finished: a cell below its bar there is decided, "steps" is not
    rows = pd.DataFrame(
        {"model": "mamba", "T": 128, "kappa": [1, 4], "accuracy": [1.0, 0.97], "stopped": ["target", "flat"]}
    )
    assert table1._capped_short(rows, "mamba", 0.99) == []
    assert table1._capped_short(rows.assign(stopped=["target", "steps"]), "mamba", 0.99) == [(128, 4)]
