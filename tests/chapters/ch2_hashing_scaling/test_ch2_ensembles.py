"""Chapter 2's ensembles through the run store (runners/ensembles.py): ``ch2_scaling``'s parts and ``ch2_multihead``'s
(pattern, M) ensembles at ci and paper are run-store jobs, their tables survive the run file, a later ``--parts`` adds
a part to the bundle without training the others again (what ``--merge`` did), and the bundle's tables are the jobs'
rows in the preset's order."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mamba_recall import results
from mamba_recall.chapters.ch2_hashing_scaling.runners import ensembles, multihead, scaling
from mamba_recall.runstore import job_key, pending


def test_a_table_survives_the_run_file_with_its_columns_order_and_numbers():
    frame = pd.DataFrame({"z": [1, 2], "a": [0.1 + 0.2, float("nan")], "m": ["x", "y"], "b": [True, False]})
    back = ensembles.record_frame(ensembles.frame_record(frame))
    assert list(back.columns) == ["z", "a", "m", "b"] and back["a"][0] == 0.1 + 0.2 and math.isnan(back["a"][1])
    assert list(back.dtypes) == list(frame.dtypes)


def test_one_job_per_ensemble_at_ci_and_paper_and_none_at_cpu_hours():
    parts = [j["config"]["part"] for j in ensembles.jobs_for("ch2_scaling", "ci")]
    assert parts == list(scaling.PARTS)
    heads = ensembles.jobs_for("ch2_multihead", "ci")
    sizes = heads[0]["config"]["sizes"]
    assert [(j["config"]["pattern"], j["config"]["M"]) for j in heads] == [
        (p, m) for p in sizes["patterns"] for m in sizes["Ms"]
    ]
    assert all("device" not in j["config"] for j in heads)  # ci trains on the CPU
    assert {j["config"]["device"] for j in ensembles.jobs_for("ch2_multihead", "paper")} == {"auto"}
    with pytest.raises(
        ValueError,
        match="at cpu-hours its figures train one model per job, declared experiments run by name: python -m "
        "mamba_recall grid ch2_fig7 ch2_fig10_11 ch2_tab10 --preset cpu-hours",
    ):
        ensembles.jobs_for("ch2_scaling", "cpu-hours")
    # the grid's --only picks a part's job out of the grid: the same job, whichever parts are asked for
    from mamba_recall.runstore import only_selection, select_jobs

    jobs = ensembles.jobs_for("ch2_scaling", "ci")
    picked = select_jobs(jobs, only_selection(["grid", "ablation"], jobs, "ch2_scaling at preset ci"))
    assert [j["config"]["part"] for j in picked] == ["grid", "ablation"]
    assert [job_key(j) for j in picked] == [job_key(j) for j in jobs if j["config"]["part"] in ("grid", "ablation")]


def _bundle(store, name):
    (path,) = [p for p in store.parent.rglob(f"{name}.json")]
    return results.load_bundle(path)


def test_a_later_part_joins_the_bundle_without_training_the_others_again(tmp_path, capsys):
    """The runner is the grid of ``ch2_scaling``; ``--parts`` (as committed pages print it) is the grid's ``--only``:
    the parts picked run, and the bundle is the grid's, from every finished part, unfinished while parts are left."""
    store = tmp_path / "runs"
    args = ["--preset", "ci", "--smoke", "--store", str(store), "--no-estimate"]
    scaling.main([*args, "--parts", "speed", "grid"])
    first = {p: p.stat().st_mtime_ns for p in store.rglob("*.json")}
    b = _bundle(store, "ch2_scaling_ci_smoke")
    assert b.data["parts"] == ["speed", "grid"] and not b.data["complete"] and b.data["jobs_finished"] == 2
    assert b.command == "python -m mamba_recall grid ch2_scaling --preset ci --allow-long"
    scaling.main([*args, "--only", "multilayer"])
    assert all(p.stat().st_mtime_ns == t for p, t in first.items())  # the finished ensembles were not run again
    b = _bundle(store, "ch2_scaling_ci_smoke")
    assert b.data["parts"] == ["speed", "grid", "multilayer"] and set(b.tables) == {
        "runs",
        "cells",
        "speed",
        "grid",
        "multilayer",
    }
    jobs = ensembles.jobs_for("ch2_scaling", "ci", smoke=True)
    assert len(pending(jobs, store)[0]) == 3


def test_the_multihead_bundle_is_its_ensembles_rows_in_order(tmp_path):
    store = tmp_path / "runs"
    multihead.main(["--preset", "ci", "--smoke", "--store", str(store), "--no-estimate", "--jobs", "1"])
    b = _bundle(store, "ch2_multihead_ci_smoke")
    assert b.data["complete"] and set(b.tables) == {"runs", "cells", "grid", "noise", "hist"}
    sizes = b.config
    pattern, M = sizes["patterns"][-1], sizes["Ms"][-1]  # the last ensemble, trained again here: the same rows
    import torch

    again = multihead.run_unit(sizes, {"pattern": pattern, "M": M}, torch.device("cpu"), lambda m: None)
    got = b.tables["grid"][(b.tables["grid"].pattern == pattern) & (b.tables["grid"].M == M)].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, again["grid"], check_dtype=False)
    order = list(dict.fromkeys(zip(b.tables["grid"].pattern, b.tables["grid"].M)))
    assert order == [(p, m) for p in sizes["patterns"] for m in sizes["Ms"]]
