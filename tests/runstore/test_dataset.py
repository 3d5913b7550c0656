"""Every committed run as one table (``results/dataset/runs.parquet`` and its ``DATACARD.md``,
:func:`mamba_recall.runstore.write_dataset`): one row per run file, every experiment, values read back equal to the
run files', the same bytes on two writes, a stale dataset refused by the check, and the committed dataset current
(so every commit that adds or changes run files regenerates it: ``python -m mamba_recall dataset --write``). The
committed tree is only read: the writes go to ``tmp_path``."""

from __future__ import annotations

import json
import math
import shutil

import pandas as pd
import pytest

from mamba_recall import cli, runstore
from mamba_recall.runstore import DATASET_COMMAND, DATASET_DIR, RUNS_DIR, check_dataset, write_dataset
from mamba_recall.runstore._dataset import IDENTITY, column_type

RUN_FILES = sorted(RUNS_DIR.glob("*/*.json"))


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    """The dataset of the committed runs, written once into a temporary folder, read back with pandas."""
    folder = tmp_path_factory.mktemp("dataset")
    done = write_dataset(out=folder)
    return done, pd.read_parquet(done["path"]), (folder / "DATACARD.md").read_text()


def test_one_row_per_committed_run_file_and_every_experiment(committed):
    done, runs, card = committed
    assert done["rows"] == len(runs) == len(RUN_FILES) > 600
    assert runs["key"].is_unique
    experiments = {p.parent.name for p in RUN_FILES}
    assert set(runs["experiment"]) == experiments
    counts = runs["experiment"].value_counts()
    for experiment in experiments:
        n = len(list((RUNS_DIR / experiment).glob("*.json")))
        assert counts[experiment] == n
        assert f"| {experiment} | {n} |" in card  # the data card's count is generated from the runs
    assert list(runs.sort_values(["experiment", "key"])["key"]) == list(runs["key"])  # rows sorted


def test_values_read_back_equal_the_run_files(committed):
    """A config value, metrics (a NaN one too), the non-scalar result leaves and provenance read back from the
    Parquet file equal the JSON's."""
    _, runs, _ = committed
    rows = runs.set_index("key")
    path = next(  # a run that records its torch version (the oldest ones record fewer versions)
        p
        for p in RUN_FILES
        if p.parent.name == "ch2_reference_grid" and "torch" in json.loads(p.read_text())["provenance"]["versions"]
    )
    rec = json.loads(path.read_text())
    row = rows.loc[rec["key"]]
    assert row["experiment"] == "ch2_reference_grid" and row["seed"] == rec["seed"]
    assert rec["experiment"] == "ch2_reference_grid" and row["sha256"] == rec["sha256"]
    assert "experiment_recorded" not in rows.columns  # every run records today's name: one column holds it
    assert row["config.recipe.lr"] == rec["config"]["recipe"]["lr"]
    assert row["config.N"] == rec["config"]["N"]
    assert json.loads(row["config.recipe.betas"]) == rec["config"]["recipe"]["betas"]  # a list: its JSON text
    assert row["result.final_accuracy"] == rec["result"]["final_accuracy"]
    assert row["provenance.git_commit"] == rec["provenance"]["git_commit"]
    assert row["provenance.versions.torch"] == rec["provenance"]["versions"]["torch"]
    kept = json.loads(row["result_json"])
    lists = {k: v for k, v in rec["result"].items() if isinstance(v, list)}
    assert lists and all(kept[k] == v for k, v in lists.items())
    # a metric the run file stores as null with its place in ``nonfinite``: NaN in its column
    path = next(p for p in RUN_FILES if json.loads(p.read_text())["nonfinite"])
    rec = json.loads(path.read_text())
    entry = rec["nonfinite"][0]
    column = "result." + ".".join(map(str, entry["path"]))
    assert math.isnan(rows.loc[rec["key"], column]) and entry["value"] == "nan"
    assert json.loads(rows.loc[rec["key"], "nonfinite"]) == rec["nonfinite"]


def test_column_types_follow_their_values():
    assert column_type([True, None, False]) == "bool" and column_type([1, None, 2]) == "int64"
    assert column_type([1, 0.5, None]) == "float64" and column_type(["a", None]) == "string"
    assert column_type([None, None]) == "string"
    assert column_type([1, "a"]) == column_type([[1, 2], 3]) == column_type([{}]) == "json"  # mixed, lists, dicts
    assert column_type([0.5, 2**53 + 1]) == "json"  # as a float the integer would change


def test_an_empty_store_is_refused_with_the_fix(tmp_path):
    (tmp_path / "runs" / "ch2_fig7").mkdir(parents=True)
    with pytest.raises(ValueError, match="holds no run files .* run a grid first"):
        write_dataset(tmp_path / "runs", tmp_path / "dataset")


def test_every_run_records_today_s_name_and_job_function(committed):
    """The data card's caveat: each run's recorded experiment is its folder's name and its ``runner`` a job function
    that imports today (the runs of older names and module paths were migrated)."""
    import importlib

    _, runs, card = committed
    for runner in set(runs["runner"]):
        module, function = runner.split(":")
        assert callable(getattr(importlib.import_module(module), function)), runner
    assert "every run records today's name of its experiment" in card


def test_a_run_in_another_experiment_s_folder_is_refused_with_the_fix(tmp_path):
    src = next(p for p in RUN_FILES if p.parent.name == "ch2_reference_grid")
    (tmp_path / "ch2_trained_dn").mkdir()
    shutil.copy2(src, tmp_path / "ch2_trained_dn" / src.name)
    with pytest.raises(
        ValueError, match="records experiment 'ch2_reference_grid' but sits in results/runs/ch2_trained"
    ):
        write_dataset(store=tmp_path, out=tmp_path / "out")


def test_columns_are_typed_and_sorted_by_group(committed):
    _, runs, _ = committed
    names = list(runs.columns)
    k = len(IDENTITY)
    assert names[:k] == list(IDENTITY) and "experiment_recorded" not in names
    groups = [n.split(".")[0] for n in names[k:]]
    assert groups == sorted(groups, key=["config", "result", "result_json", "provenance"].index)
    for group in ("config", "result", "provenance"):
        mine = [n for n in names if n.startswith(group + ".")]
        assert mine == sorted(mine)
    assert runs["seed"].dtype == "int64" and runs["provenance.git_clean"].dtype == bool
    assert runs["result.final_accuracy"].dtype == "float64"


def test_two_writes_give_the_same_bytes(tmp_path):
    store = _few_runs(tmp_path)
    first, second = tmp_path / "a", tmp_path / "b"
    write_dataset(store, first)
    write_dataset(store, second)
    for name in ("runs.parquet", "DATACARD.md"):
        assert (first / name).read_bytes() == (second / name).read_bytes()


def _few_runs(tmp_path):
    """A store of a few committed runs: two experiments, the second with a NaN metric."""
    store = tmp_path / "runs"
    for experiment, n in (("ch2_reference_grid", 3), ("ch4_edge_checks", 2)):
        (store / experiment).mkdir(parents=True)
        for path in sorted((RUNS_DIR / experiment).glob("*.json"))[:n]:
            shutil.copy(path, store / experiment / path.name)
    return store


def test_the_check_refuses_a_stale_dataset_and_names_the_command(tmp_path):
    store, out = _few_runs(tmp_path), tmp_path / "dataset"
    assert check_dataset(store, out) == [f"{out}/runs.parquet is missing; run `{DATASET_COMMAND}` and commit {out}/."]
    write_dataset(store, out)
    assert check_dataset(store, out) == []
    # a run added to the store after the dataset was written
    extra = sorted((RUNS_DIR / "ch2_reference_grid").glob("*.json"))[3]
    shutil.copy(extra, store / "ch2_reference_grid" / extra.name)
    problems = check_dataset(store, out)
    assert len(problems) == 2 and all(DATASET_COMMAND in p for p in problems)
    assert "5 rows for 6 runs" in problems[0] and "1 run(s) not in it" in problems[0]
    assert "DATACARD.md is not current" in problems[1]
    write_dataset(store, out)
    assert check_dataset(store, out) == []
    # a value changed (a run replaced by a later run of the same job, whose file is valid): same rows, other values
    path = store / "ch2_reference_grid" / extra.name
    rec = json.loads(path.read_text())
    rec["result"]["final_accuracy"] = 0.5
    rec["sha256"] = runstore.record_hash(rec)
    path.write_text(json.dumps(rec))
    (problem,) = check_dataset(store, out)
    assert "values or types differ" in problem and "DATACARD" not in problem  # the card's counts are unchanged


def test_the_command_exits_non_zero_on_a_stale_dataset(tmp_path, monkeypatch, capsys):
    store, out = _few_runs(tmp_path), tmp_path / "dataset"
    monkeypatch.setattr(runstore._dataset, "RUNS_DIR", store)
    monkeypatch.setattr(runstore._dataset, "DATASET_DIR", out)
    assert cli.main(["dataset"]) == 1
    err = capsys.readouterr().err
    assert DATASET_COMMAND in err and "error: the committed dataset (results/dataset) is not current." in err
    assert cli.main(["dataset", "--write"]) == 0
    assert "5 runs x" in capsys.readouterr().out
    assert cli.main(["dataset"]) == 0


def test_the_committed_dataset_is_current():
    """The committed ``results/dataset`` matches the committed runs: a commit that adds or changes run files must
    regenerate it (``python -m mamba_recall dataset --write``) and commit it with them."""
    assert (DATASET_DIR / "runs.parquet").is_file()
    assert check_dataset() == []


def test_without_a_checkout_the_command_stops_with_one_line(monkeypatch, capsys):
    from mamba_recall import paths

    monkeypatch.setattr(paths, "CHECKOUT_FOUND", False)
    assert cli.main(["dataset"]) == 1
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: no checkout of the Mamba recall book found for results/runs")
