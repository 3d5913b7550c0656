"""The one layout every run-store bundle holds (``runstore.run_tables``): ``runs`` (one row per run: key, seed, its
cell's config entries, its metrics) and ``cells`` (each numeric metric's mean over seeds and 95 % interval per cell);
``save_grid_bundle`` refuses a bundle without them and ``Experiment.save_bundle`` a writer that makes them itself."""

from __future__ import annotations

import pandas as pd
import pytest

from mamba_recall import runstore
from mamba_recall.experiment import Experiment
from mamba_recall.runstore import GridStatus, run_tables


def _run(key, seed, config, result):
    return {
        "key": key,
        "seed": seed,
        "experiment": "demo",
        "config": config,
        "result": result,
        "provenance": {"wall_seconds": 1.0},
    }


def _grid():
    runs = []
    for D in (16, 4):
        for seed in (1, 0, 2):
            runs.append(
                _run(
                    f"k{D}_{seed}",
                    seed,
                    {"D": D, "recipe": {"lr": 0.01, "wd": 0.0}, "ladder": [1, 2], "name": "m"},
                    {
                        "row": {"accuracy": 0.5 + D / 100 + seed / 10, "steps": 10 * seed},
                        "curve": [1, 2],
                        "done": True,
                        "probe": {"kappa": D, "untrained": {"acc": 0.1}},
                    },
                )
            )
    return runs


def test_cells_are_the_config_entries_that_differ_and_metrics_are_named_by_their_last_name():
    t = run_tables(_grid(), ["row.accuracy", "row.steps"])
    runs, cells = t["runs"], t["cells"]
    assert list(runs.columns) == ["key", "seed", "D", "accuracy", "steps"]  # recipe, ladder, name: constant
    assert list(runs.D) == [4, 4, 4, 16, 16, 16] and list(runs.seed) == [0, 1, 2, 0, 1, 2]
    assert list(cells.D) == [4, 16] and list(cells.n_seeds) == [3, 3]
    accs = [0.5 + 0.16 + s / 10 for s in (0, 1, 2)]
    assert cells.accuracy_mean[1] == pytest.approx(sum(accs) / 3)
    assert cells.accuracy_ci_low[1] < cells.accuracy_mean[1] < cells.accuracy_ci_high[1]
    assert cells.seeds[0] == "0 1 2"


def test_a_nested_entry_that_differs_is_a_dotted_column_and_a_dict_metric_gives_its_leaves():
    runs = _grid()
    for r in runs[:3]:
        r["config"] = {**r["config"], "recipe": {"lr": 0.03, "wd": 0.0}}
    t = run_tables(runs, ["probe", "done"])
    assert list(t["runs"].columns) == ["key", "seed", "D", "recipe.lr", "kappa", "untrained.acc", "done"]
    # a bool is averaged as 1 or 0: its mean is a fraction
    assert "kappa_mean" in t["cells"] and list(t["cells"].done_mean) == [1.0, 1.0]


def test_a_metric_some_runs_lack_reads_none_and_is_aggregated_where_every_run_of_a_cell_has_it():
    runs = _grid()
    del runs[0]["result"]["row"]["steps"]  # a run of the D = 16 cell
    t = run_tables(runs, ["row.accuracy", "row.steps"], optional=["steps"])
    assert t["runs"].steps.isna().sum() == 1
    cells = t["cells"].set_index("D")
    assert cells.steps_mean[4] == 10.0 and pd.isna(cells.steps_mean[16]) and cells.n_seeds[16] == 3
    assert list(t["cells"].columns[:2]) == ["D", "seeds"]


def test_a_misspelt_metric_and_colliding_names_are_refused():
    runs = _grid()
    with pytest.raises(ValueError, match="in none of the 6 runs"):
        run_tables(runs, ["row.acuracy"])
    with pytest.raises(ValueError, match="named twice"):
        run_tables([dict(r, config={**r["config"], "n_seeds": r["seed"]}) for r in runs], ["row.accuracy"])
    with pytest.raises(ValueError, match="named twice"):
        run_tables([dict(r, config={**r["config"], "accuracy_mean": r["seed"]}) for r in runs], ["row.accuracy"])
    with pytest.raises(ValueError, match="both by and run_entries"):
        run_tables(runs, ["row.accuracy"], by=["D"], run_entries=["D"])


def test_declared_cells_bounds_and_refusals():
    runs = _grid()
    t = run_tables(runs, ["row.accuracy"], by=["D", "recipe.lr"], bounds={"accuracy": (0.0, 0.7)})
    assert list(t["cells"].columns[:2]) == ["D", "recipe.lr"]
    assert (t["cells"].accuracy_ci_high <= 0.7).all()
    with pytest.raises(ValueError, match="no run's config has"):
        run_tables(runs, ["row.accuracy"], by=["depth"])
    twice = [dict(r, result={**r["result"], "x": {"accuracy": 1.0}}) for r in runs]
    with pytest.raises(ValueError, match="twice"):
        run_tables(twice, ["row.accuracy", "x"])
    with pytest.raises(ValueError, match="named twice"):
        run_tables([dict(r, result={"D": 1.0}) for r in runs], ["D"])


def test_cells_of_entries_some_runs_lack_sort_missing_first():
    runs = _grid()
    for r in runs[3:]:
        r["config"] = {k: v for k, v in r["config"].items() if k != "D"}
    t = run_tables(runs, ["row.accuracy"])
    assert t["cells"].D.isna().tolist() == [True, False]
    del runs[0]["result"]["row"]["steps"]  # a metric one cell lacks, beside a cell entry of mixed kinds
    t = run_tables(runs, ["row.accuracy", "row.steps"], optional=["steps"])
    cells = t["cells"]
    assert cells.D.isna().tolist() == [True, False] and cells.steps_mean.isna().tolist() == [False, True]


def test_save_grid_bundle_refuses_a_bundle_without_the_layout(tmp_path):
    data = GridStatus({"complete": True, "jobs_finished": 1, "jobs_total": 1, "runs": {"wall_seconds": 1.0}})
    with pytest.raises(ValueError, match="lack the one layout"):
        runstore.save_grid_bundle("demo_ci", data, {}, command="x", tables={"fits": pd.DataFrame()}, directory=tmp_path)


def test_experiment_save_bundle_refuses_a_writer_that_makes_runs_or_cells_itself(tmp_path):
    e = Experiment(
        name="demo_grid",
        sizes={},
        make_jobs=lambda p, smoke=False: [],
        run_job="m:f",
        estimate=lambda left: (0.0, ""),
        metrics=("row.accuracy",),
    )
    with pytest.raises(ValueError, match="one layout"):
        e.save_bundle("ci", GridStatus(), {}, {"cells": pd.DataFrame()}, directory=tmp_path)
    with pytest.raises(TypeError, match="finished\\s+runs"):
        e.save_bundle("ci", {"complete": True}, {}, {}, directory=tmp_path)


def test_run_entries_are_shown_per_run_but_are_not_cells():
    runs = _grid()
    for r in runs:
        r["config"] = {**r["config"], "checkpoint": f"ckpt_{r['key']}.pt"}
    with pytest.raises(ValueError, match="mixes runs"):
        run_tables(runs, ["row.accuracy"], by=["D"])  # the checkpoint differs within a cell
    t = run_tables(runs, ["row.accuracy"], run_entries=["checkpoint"])
    assert list(t["runs"].columns) == ["key", "seed", "D", "checkpoint", "accuracy"]
    assert list(t["cells"].D) == [4, 16] and "checkpoint" not in t["cells"]
    with pytest.raises(ValueError, match="no run's config has"):
        run_tables(runs, ["row.accuracy"], run_entries=["model_name"])


def test_a_metric_only_some_runs_record_must_be_declared_optional_and_blanks_only_its_own_columns():
    runs = _grid()
    del runs[0]["result"]["row"]["steps"]
    with pytest.raises(ValueError, match="declared optional"):
        run_tables(runs, ["row.accuracy", "row.steps"])
    for r in runs:  # a metric named "n" beside the cells' n_seeds column
        r["result"]["n"] = 1.0
    del runs[0]["result"]["n"]
    cells = run_tables(runs, ["row.accuracy", "n"], optional=["n"])["cells"]
    assert list(cells.n_seeds) == [3, 3] and cells.n_mean.isna().tolist() == [False, True]
