"""The one migration of renamed experiments' runs and bundles to today's names and keys
(:func:`mamba_recall.runstore.migrate_names`): on a scratch store, an old-named run becomes a finished run of today's
job, recorded, once; a run of no declared job stops it before any write. On the committed tree: every run sits in
the folder of its experiment under the key today's name gives, every bundle's ``run_keys`` are runs of the store,
and the committed name migration is reversible byte for byte (each file as it was before is rebuilt from the
migrated one and the record)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json

import joblib
import pandas as pd
import pytest

from mamba_recall import runstore
from mamba_recall.experiment import Experiment
from mamba_recall.paths import RESULTS_DIR
from mamba_recall.results import load_bundle, save_bundle
from mamba_recall.runstore import (
    DemoConfig,
    RunFileError,
    job_key,
    migrate_names,
    pending,
    read_run,
    record_hash,
    run_grid,
)
from mamba_recall.runstore._migrate import KEYED_BEFORE, MODULES_RENAMED, record_before

RUNNER = "mamba_recall.runstore:demo_job"
NAME = "ch3_keep_nth"  # keyed as "ch3.keep_train" before the migration
OLD_RUNNER = "mamba_recall.experiments.ch3_keep_nth:run_job"


def _jobs(preset: str, smoke: bool = False) -> list[dict]:
    if preset != "ci":
        raise ValueError("only ci")
    return [runstore.make_job(NAME, DemoConfig(x=x, sleep=0), 0) for x in range(2)]


EXPERIMENT = Experiment(
    name=NAME, sizes={"ci": None}, make_jobs=_jobs, run_job=RUNNER, estimate=lambda left: (0.0, "none")
)


def _old_store(tmp_path, xs=(0, 1)):
    """A store holding the demo runs of ``xs`` as they were written before the migration: in today's folder, under
    the old name ``ch3.keep_train`` (their ``experiment`` and the name their keys hash) and an old runner path."""
    store = tmp_path / "runs"
    old_jobs = [runstore.make_job(KEYED_BEFORE[NAME], DemoConfig(x=x, sleep=0), 0) for x in xs]
    run_grid(RUNNER, old_jobs, store=store, n_jobs=1, progress=False, log=lambda m: None)
    (store / KEYED_BEFORE[NAME]).rename(store / NAME)
    for path in (store / NAME).glob("*.json"):  # the old runner path, hashed as the old writer hashed it
        rec = json.loads(path.read_text())
        rec["runner"] = OLD_RUNNER
        rec["sha256"] = record_hash(rec)
        path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return store, old_jobs


def undo_names(store, file: str, record: dict, start: int = 0) -> tuple[dict | None, int]:
    """``(rec, n)``: the record the file ``file`` of ``store`` held before the name migrations of the migration
    record ``record`` (its ``kind: names`` entries from the ``start``-th on) that rewrote it, rebuilt from the file it
    is now by undoing each (:func:`~mamba_recall.runstore._migrate.record_before`), and how many did (``n``); ``rec``
    None when its job was run again since (a record of its own, not a migration's)."""
    steps = []
    for migration in [m for m in record["migrations"] if m.get("kind") == "names"][start:]:
        entry = next((f for f in migration["files"] if f["file"] == file), None)
        if entry is not None:
            steps.append(entry)
            file = entry["new_file"]
    rec = json.loads((store / file).read_text())
    for entry in reversed(steps):
        if rec["sha256"] != entry["sha256"]:
            return None, len(steps)
        rec = record_before(rec, entry)
    return rec, len(steps)


def _snapshot(folder):
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_old_named_run_migrates_to_today_s_key_name_and_runner_once(tmp_path):
    store, old_jobs = _old_store(tmp_path)
    new_jobs = EXPERIMENT.grid_jobs("ci")
    assert pending(new_jobs, store)[0] == []  # before: today's keys find nothing
    # a bundle of the grid as the old runner wrote it: the old keys in its data and its cells table
    keys = [j["key"] for j in old_jobs]
    cells = pd.DataFrame({"x": [0, 1], "run_keys": keys})
    save_bundle(
        f"{NAME}_ci",
        {"run_keys": keys},
        {"preset": "ci", "runner": OLD_RUNNER},
        command="python -m mamba_recall.experiments.ch3_keep_nth --preset ci",
        tables={"cells": cells},
        directory=tmp_path,
    )
    before = (tmp_path / f"{NAME}_ci.json").read_text()

    entry = migrate_names(store, tmp_path, experiments=[EXPERIMENT], derived={}, log=lambda m: None)

    done, left = pending(new_jobs, store)
    assert done == new_jobs and left == []  # the grid counts them finished
    for job, old in zip(new_jobs, old_jobs):
        rec = read_run(store / NAME / f"{job['key']}.json", job["key"])
        assert rec["experiment"] == NAME and rec["runner"] == RUNNER and rec["key"] == job_key(rec)
        assert rec["result"]["value"] == 10 * job["config"]["x"] + job["seed"]  # the demo job's result, unchanged
        assert rec["provenance"]["name_migration"]["record"].endswith("MIGRATIONS.json")
        assert not (store / NAME / f"{old['key']}.json").exists()
    record = json.loads((store / runstore.MIGRATIONS_NAME).read_text())
    names = next(m for m in record["migrations"] if m.get("kind") == "names" and m["n_files"])
    assert names == entry and names["n_files"] == 2
    assert {(f["file"], f["new_file"]) for f in names["files"]} == {
        (f"{NAME}/{o['key']}.json", f"{NAME}/{n['key']}.json") for o, n in zip(old_jobs, new_jobs)
    }
    assert {f["experiment_before"] for f in names["files"]} == {"ch3.keep_train"}
    assert {f["runner_before"] for f in names["files"]} == {OLD_RUNNER}

    bundle = load_bundle(tmp_path / f"{NAME}_ci.json")  # its content hash and table hash recomputed
    assert bundle.data["run_keys"] == [j["key"] for j in new_jobs]
    assert list(bundle.tables["cells"]["run_keys"]) == [j["key"] for j in new_jobs]
    assert bundle.config["runner"] == RUNNER
    assert (
        bundle.command
        == EXPERIMENT.command("ci")
        == "python -m mamba_recall grid ch3_keep_nth --preset ci --allow-long"
    )
    after = json.loads((tmp_path / f"{NAME}_ci.json").read_text())
    assert after["provenance"]["command_before_migration"] == json.loads(before)["command"]
    assert [b["file"] for b in names["bundles"]] == [str(tmp_path / f"{NAME}_ci.json")]

    frozen = _snapshot(tmp_path)
    assert migrate_names(store, tmp_path, experiments=[EXPERIMENT], derived={}, log=lambda m: None) is None
    assert _snapshot(tmp_path) == frozen  # a second run migrates nothing


def test_a_run_of_no_declared_job_stops_the_migration_before_any_write(tmp_path):
    store, _ = _old_store(tmp_path, xs=(0, 1, 7))  # x=7: a job the experiment does not declare
    frozen = _snapshot(tmp_path)
    with pytest.raises(RunFileError, match=r"(?s)1 run file\(s\).*cannot be migrated.*matches no job ch3_keep_nth"):
        migrate_names(store, tmp_path, experiments=[EXPERIMENT], derived={}, log=lambda m: None)
    assert _snapshot(tmp_path) == frozen and not (store / runstore.MIGRATIONS_NAME).exists()


def test_a_run_edited_after_it_was_written_stops_the_migration_before_any_write(tmp_path):
    store, _ = _old_store(tmp_path)
    path = sorted((store / NAME).glob("*.json"))[0]
    rec = json.loads(path.read_text())
    rec["result"]["value"] = 12345  # edited, its sha256 left as it was
    path.write_text(json.dumps(rec))
    frozen = _snapshot(tmp_path)
    with pytest.raises(RunFileError, match=r"does not match its sha256"):
        migrate_names(store, tmp_path, experiments=[EXPERIMENT], derived={}, log=lambda m: None)
    assert _snapshot(tmp_path) == frozen


def test_every_committed_run_has_today_s_name_and_key_and_every_bundle_s_runs_exist():
    runs = sorted(runstore.RUNS_DIR.glob("*/*.json"))
    assert len(runs) > 600
    for path in runs:
        rec = read_run(path)
        assert rec["experiment"] == path.parent.name, path
        assert (
            path.stem
            == job_key(rec)
            == joblib.hash({"experiment": path.parent.name, "config": rec["config"], "seed": rec["seed"]})
        ), path
        assert not rec["runner"].startswith("mamba_recall.experiments."), path
    keys = {p.stem: p.parent.name for p in runs}
    checked = 0
    for path in sorted(RESULTS_DIR.glob("*.json")):
        record = json.loads(path.read_text())
        data = record.get("data") if isinstance(record, dict) else None
        if not isinstance(data, dict) or "run_keys" not in data:
            continue
        missing = [k for k in data["run_keys"] if k not in keys]
        assert not missing, f"{path.name}: {len(missing)} run key(s) not in results/runs"
        assert "mamba_recall.experiments." not in record["command"], path.name
        checked += 1
    assert checked >= 25
    sidecars = sorted((RESULTS_DIR / "checkpoints").glob("*.json"))
    assert len(sidecars) > 60
    for path in sidecars:  # the commands that made the checkpoints name modules of today
        assert "mamba_recall.experiments." not in json.loads(path.read_text())["command"], path.name


def test_the_committed_name_migration_is_recorded_and_reversible():
    """Each run file the name migration wrote still holds the record it wrote (or a later run of its job), and the
    file it replaced, rebuilt from it and the record (old name, key and runner; no ``name_migration``), has the
    sha256 recorded before the migration, byte for byte."""
    record = json.loads((runstore.RUNS_DIR / runstore.MIGRATIONS_NAME).read_text())
    migrations = [m for m in record["migrations"] if m.get("kind") == "names"]
    names = next(m for m in migrations if m["n_files"])
    assert names["n_files"] == len(names["files"]) == 623 and names["code_commit"] and names["date"]
    assert len(names["bundles"]) >= 25
    # the later one of the renamed runner modules (MODULES_RENAMED): the same files, today's runner
    (runners,) = [m for m in migrations if m["n_files"] and m["why"].startswith("run files, bundles and checkpoint")]
    assert runners["n_files"] == len(runners["files"]) == 104 + 159 and len(runners["checkpoint_sidecars"]) == 10
    assert {f["why"] for f in runners["files"]} == {"runner module renamed"}
    assert all(f["file"] == f["new_file"] for f in runners["files"])
    for i, migration in enumerate(migrations):
        checked = 0
        for entry in migration["files"]:
            # the record this migration wrote: the file now, each later name migration that rewrote it undone
            rec, _ = undo_names(runstore.RUNS_DIR, entry["new_file"], record, start=i + 1)
            if rec is None or rec["sha256"] != entry["sha256"]:  # its job was run again since
                continue
            assert rec["provenance"]["name_migration"]["record"] == "results/runs/MIGRATIONS.json"
            old = record_before(rec, entry)
            text = json.dumps(old, indent=1, sort_keys=True, allow_nan=False) + "\n"
            assert hashlib.sha256(text.encode()).hexdigest() == entry["sha256_before"], entry["file"]
            checked += 1
        assert checked == migration["n_files"], (i, migration["date"])
    assert names["n_files"] == 623


def _runner_renamed_store(tmp_path):
    """A store holding committed runs of ``ch1_wo`` as they were written before Chapter 1's grid module was renamed:
    the same key, name and result, the runner at the old module path (hashed as the writer hashed it)."""
    store = tmp_path / "runs"
    (store / "ch1_wo").mkdir(parents=True)
    old_module = next(old for old, new in MODULES_RENAMED.items() if new.endswith("ch1_gradient_dynamics.runners.grid"))
    for path in sorted((runstore.RUNS_DIR / "ch1_wo").glob("*.json"))[:3]:
        rec = json.loads(path.read_text())
        rec["runner"] = f"{old_module}:run_job"
        rec["provenance"].pop("name_migration", None)
        rec["sha256"] = record_hash(rec)
        (store / "ch1_wo" / path.name).write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return store


def test_a_run_of_a_renamed_runner_module_is_rewritten_with_today_s_runner_in_place_once(tmp_path):
    from mamba_recall.experiment import experiment_named

    wo = experiment_named("ch1_wo")
    store = _runner_renamed_store(tmp_path)
    before = {p.name: json.loads(p.read_text()) for p in (store / "ch1_wo").glob("*.json")}
    old_runner = next(iter(before.values()))["runner"]
    assert old_runner.endswith("runners.cpu_hours:run_job") and wo.run_job.endswith("runners.grid:run_job")
    said = []
    assert migrate_names(store, tmp_path, experiments=[wo], derived={}, dry_run=True, log=said.append)["n_files"] == 3
    assert "dry run" in said[-1] and not (store / runstore.MIGRATIONS_NAME).exists()

    entry = migrate_names(store, tmp_path, experiments=[wo], derived={}, log=said.append)

    assert sorted(p.name for p in (store / "ch1_wo").glob("*.json")) == sorted(before)  # the same files, keys
    for name, old in before.items():
        rec = read_run(store / "ch1_wo" / name, old["key"])
        assert rec["runner"] == wo.run_job and rec["key"] == old["key"] == job_key(rec)
        assert rec["result"] == read_run(runstore.RUNS_DIR / "ch1_wo" / name)["result"]  # unchanged
        assert rec["provenance"]["name_migration"]["why"] == "runner module renamed"
    assert entry["n_files"] == 3 and {f["runner_before"] for f in entry["files"]} == {old_runner}
    assert {f["file"] for f in entry["files"]} == {f"ch1_wo/{n}" for n in before}
    record = json.loads((store / runstore.MIGRATIONS_NAME).read_text())
    assert record["migrations"] == [entry]
    for f in entry["files"]:  # reversible: the file it replaced, rebuilt, hashes as recorded
        rec, n = undo_names(store, f["file"], record)
        text = json.dumps(rec, indent=1, sort_keys=True) + "\n"
        assert n == 1 and hashlib.sha256(text.encode()).hexdigest() == f["sha256_before"]
    frozen = _snapshot(tmp_path)
    assert migrate_names(store, tmp_path, experiments=[wo], derived={}, log=lambda m: None) is None  # once
    assert _snapshot(tmp_path) == frozen


def test_a_run_whose_runner_is_no_former_name_of_its_experiment_s_stops_the_migration(tmp_path):
    from mamba_recall.experiment import experiment_named

    store = _runner_renamed_store(tmp_path)
    path = sorted((store / "ch1_wo").glob("*.json"))[0]
    rec = json.loads(path.read_text())
    rec["runner"] = "mamba_recall.chapters.ch1_gradient_dynamics.runners.nowhere:run_job"
    rec["sha256"] = record_hash(rec)
    path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    frozen = _snapshot(tmp_path)
    with pytest.raises(RunFileError, match="neither ch1_wo's job function .* nor a former name of it"):
        migrate_names(store, tmp_path, experiments=[experiment_named("ch1_wo")], derived={}, log=lambda m: None)
    assert _snapshot(tmp_path) == frozen


def test_old_runner_names_resolve_through_the_declared_history_to_today_s_modules():
    from mamba_recall.runners import runner_module
    from mamba_recall.runstore._migrate import MERGED_BEFORE, OLD_RUNNERS, today_command, today_module

    for old, new in MODULES_RENAMED.items():
        assert importlib.util.find_spec(old) is None and importlib.util.find_spec(new) is not None, old
        assert today_module(old) == new
    # a merged runner's old path resolves through the renames: ch1_cpu_hours ran as ch1_training, now ch1_checkpoints
    assert MERGED_BEFORE["ch1_cpu_hours"] == "ch1_training"
    assert today_module(OLD_RUNNERS + "ch1_cpu_hours") == runner_module("ch1_checkpoints")
    assert today_module(OLD_RUNNERS + "ch1_training") == runner_module("ch1_checkpoints")
    old = "python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset ci --only k1"
    assert today_command(old) == (
        "python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints --preset ci --only k1"
    )


def test_no_committed_record_names_a_module_that_does_not_exist():
    """Every run file's ``runner`` is its experiment's job function today, every bundle's ``config.runner`` a job
    function that imports, and every ``python -m`` command a bundle or checkpoint sidecar records names a module that
    exists (the renamed modules were migrated, MODULES_RENAMED)."""
    from mamba_recall.experiment import experiments

    job_functions = {e.name: e.run_job for e in experiments()}

    def exists(ref: str) -> bool:
        module, _, function = ref.partition(":")
        return importlib.util.find_spec(module) is not None and (
            not function or callable(getattr(importlib.import_module(module), function, None))
        )

    runners = {}
    for path in sorted(runstore.RUNS_DIR.glob("*/*.json")):
        runner = json.loads(path.read_text())["runner"]
        assert runner == job_functions.get(path.parent.name, runner), path
        runners.setdefault(runner, path)
    assert [(r, str(p)) for r, p in runners.items() if not exists(r)] == []
    records = [*RESULTS_DIR.glob("*.json"), *(RESULTS_DIR / "checkpoints").glob("*.json")]
    for path in records:
        record = json.loads(path.read_text())
        if not isinstance(record, dict):
            continue
        config = record.get("config") if isinstance(record.get("config"), dict) else {}
        if isinstance(config.get("runner"), str):
            assert exists(config["runner"]), (path.name, config["runner"])
        commands = [record.get("command")] + [e.get("command") for e in record.get("entries", []) or []]
        for command in [c for c in commands if isinstance(c, str) and " -m " in c]:
            module = command.split(" -m ", 1)[1].split()[0]
            assert exists(module), (path.name, command)
        for entry in record.get("entries", []) or []:  # the manifest's runs
            module = (entry.get("run") or {}).get("module")
            assert module is None or exists(module), (path.name, entry["name"], module)
