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
    assert v.evidence["seeds"] == 3
    assert "similar model sizes" not in v.ours  # read, not set aside for its size
    # its κ = 4 runs (and the Mamba's) stopped on the 1,000-step cap below their bars: undecided, as row 1 reads
    # them, and the reason does not send the reader to more seeds (referee-J)
    assert v.status == "inconclusive" and "stopped on the step cap below its bar: RoPE T=128 κ=4" in v.ours
    assert "would not settle the undecided part" in v.reason and "more seeds would settle it" not in v.reason
    assert v.evidence["source"].endswith("ch1_table1_rope_cpu-hours.json")


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
