"""The one migration of version 1 (unhashed) run files to version 2 (:func:`mamba_recall.runstore.migrate_store`):
values unchanged, recorded, refused when a file fails its checks; and the committed store's migration
(``results/runs/MIGRATIONS.json``) checked against the files as they were. The committed tree is only read: the
migrations run on copies in ``tmp_path``."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import sys

import pytest

from mamba_recall import runstore
from mamba_recall.runstore import RunFileError, load_runs, migrate_store, run_grid

from test_migrate_names import undo_names

RUNNER = "mamba_recall.runstore:demo_job"


def as_version_1(rec: dict) -> dict:
    """The version 1 record a migrated (checked, NaN restored) record was made from: no ``sha256``, no
    ``nonfinite``, no ``provenance.schema_migration``."""
    old = {k: v for k, v in rec.items() if k not in ("sha256", "nonfinite")}
    old["provenance"] = {k: v for k, v in rec["provenance"].items() if k != "schema_migration"}
    old["schema_version"] = 1
    return old


def v1_text(rec: dict) -> str:
    return json.dumps(as_version_1(rec), indent=1, sort_keys=True) + "\n"  # as version 1 files were written


def test_the_committed_migration_changed_no_value():
    """Each file of the committed migration still holds the record it wrote (or a later run of its job), and the
    version 1 file it was made from, rebuilt from it, has the sha256 recorded before the migration: result, config
    and every other field are the version 1 file's, byte for byte."""
    record = json.loads((runstore.RUNS_DIR / runstore.MIGRATIONS_NAME).read_text())
    (migration,) = [m for m in record["migrations"] if m.get("from_schema_version") == 1]
    assert migration["to_schema_version"] == 2 and migration["n_files"] == len(migration["files"]) == 355
    assert migration["code_commit"] and migration["date"]
    # the files the name migrations rewrote since (tests/runstore/test_migrate_names.py): the record each replaced
    checked = 0
    for entry in migration["files"]:
        path = runstore.RUNS_DIR / entry["file"]
        rec, renamed = undo_names(runstore.RUNS_DIR, entry["file"], record)
        if renamed:  # the record as the first name migration found it
            if rec is None:  # its job was run again since: a record of its own
                continue
            for nf in rec["nonfinite"]:  # NaN back where the reader puts it (as_version_1 writes it bare)
                where = rec["result"]
                for step in nf["path"][:-1]:
                    where = where[step]
                where[nf["path"][-1]] = float(nf["value"])
        else:
            rec = runstore.read_run(path)
        if rec["sha256"] != entry["sha256"]:  # its job was run again since: a record of its own
            assert "schema_migration" not in rec["provenance"]
            continue
        assert rec["provenance"]["schema_migration"]["record"] == "results/runs/MIGRATIONS.json"
        assert hashlib.sha256(v1_text(rec).encode()).hexdigest() == entry["sha256_before"], path
        checked += 1
    assert checked > 300
    git = shutil.which("git") and subprocess.run(
        ["git", "cat-file", "-e", f"{migration['code_commit']}^{{commit}}"], cwd=runstore.RUNS_DIR, capture_output=True
    )
    assert not git or git.returncode == 0, "the migration's code commit is not in this repository"


def _v1_copy(tmp_path, folders=("ch1_table1_matched", "ch3_mqar_train")):
    """A store of version 1 files made from committed runs (migrated back), and their records as read before."""
    store = tmp_path / "runs"
    before = {}
    for folder in folders:
        for src in sorted((runstore.RUNS_DIR / folder).glob("*.json")):
            old = as_version_1(runstore.read_run(src))
            dst = store / folder / src.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
            before[(folder, src.stem)] = json.loads(dst.read_text())
    assert before
    return store, before


def test_migration_keeps_every_result_and_config_exactly_and_is_recorded(tmp_path):
    store, before = _v1_copy(tmp_path)
    with pytest.raises(runstore.UnhashedRunFile):  # unreadable before
        load_runs("ch1_table1_matched", store)
    said = []
    assert migrate_store(store, dry_run=True, log=said.append)["n_files"] == len(before)
    assert not (store / runstore.MIGRATIONS_NAME).exists() and "dry run" in said[0]
    entry = migrate_store(store, log=said.append)
    assert entry["n_files"] == len(before) and f"migrated {len(before)} run file(s)" in said[-1]
    after = {
        (r["experiment"], r["key"]): r for f in ("ch1_table1_matched", "ch3_mqar_train") for r in load_runs(f, store)
    }
    assert len(after) == len(before)
    for (folder, key), old in before.items():
        new = runstore.read_run(store / folder / f"{key}.json", key)
        assert new["result"] == old["result"] and new["config"] == old["config"]  # exactly, dict for dict
        assert new["seed"] == old["seed"] and new["schema_version"] == 2 and new["sha256"]
        assert as_version_1(new) == old
    record = json.loads((store / runstore.MIGRATIONS_NAME).read_text())
    assert record["schema"] == "mamba_recall.run_migrations" and record["migrations"] == [entry]
    assert entry["from_schema_version"] == 1 and entry["to_schema_version"] == 2 and "code_commit" in entry
    assert {f["file"] for f in entry["files"]} == {f"{f}/{k}.json" for f, k in before}
    assert migrate_store(store, log=said.append) is None and "nothing to migrate" in said[-1]  # once
    assert len(json.loads((store / runstore.MIGRATIONS_NAME).read_text())["migrations"]) == 1


def test_a_version_1_nan_moves_to_nonfinite_and_reads_back(tmp_path):
    store = tmp_path / "runs"
    (job,) = runstore.demo_jobs(1, 1, 0.0)
    (rec,) = run_grid(RUNNER, [job], store=store, progress=False, log=lambda m: None)
    rec["result"]["value"] = float("nan")
    path = runstore.job_path(job, store)
    path.write_text(json.dumps(as_version_1(rec)))  # a bare NaN, as version 1 files could hold
    migrate_store(store, log=lambda m: None)
    assert "NaN" not in path.read_text()
    (run,) = load_runs("demo.sleep", store)
    assert math.isnan(run["result"]["value"]) and run["nonfinite"] == [{"path": ["value"], "value": "nan"}]


def test_a_version_1_file_that_fails_its_checks_stops_the_migration_before_any_write(tmp_path):
    store, before = _v1_copy(tmp_path, folders=("ch1_table1_matched",))
    (folder, key), old = next(iter(before.items()))
    bad = store / folder / f"{key}.json"
    bad.write_text(json.dumps(dict(old, seed=old["seed"] + 100), indent=1, sort_keys=True) + "\n")  # key no longer
    texts = {p: p.read_text() for p in store.rglob("*.json")}
    with pytest.raises(RunFileError, match=f"nothing was migrated:\n  run file {bad} does not match its key"):
        migrate_store(store, log=lambda m: None)
    assert {p: p.read_text() for p in store.rglob("*.json")} == texts
    assert not (store / runstore.MIGRATIONS_NAME).exists()


def test_migrate_command(tmp_path):
    store, before = _v1_copy(tmp_path, folders=("ch1_table1_matched",))
    cmd = [sys.executable, "-m", "mamba_recall.runstore", "migrate", "--store", str(store)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and f"migrated {len(before)} run file(s) from schema version 1 to 2" in out.stdout
    assert len(load_runs("ch1_table1_matched", store)) == len(before)
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "nothing to migrate" in again.stdout


def test_a_checkpoint_made_by_a_several_experiment_command_gets_its_own_experiments_grid_command(tmp_path):
    from pathlib import Path

    from mamba_recall.experiment import experiments
    from mamba_recall.runstore._migrate import sidecar_command

    old = "python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset cpu-hours --allow-long"
    declared = experiments()
    assert (
        sidecar_command(Path("ch1_k2_cpu-hours_seed1.json"), old, declared)
        == "python -m mamba_recall grid ch1_mechanism --preset cpu-hours --allow-long"
    )
    # another checkpoint of that command is not guessed: it keeps what canonical_command gives, the command with its
    # runner's module renamed (MODULES_RENAMED), not the grid of ch1_checkpoints (which has none at cpu-hours)
    assert sidecar_command(Path("ch1_other_cpu-hours_seed0.json"), old, declared) == old.replace(
        "runners.training", "runners.checkpoints"
    )


def test_no_committed_checkpoint_records_a_command_its_runner_now_refuses():
    from mamba_recall.paths import RESULTS_DIR

    refused = "mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset cpu-hours"
    recorded = {p.name: json.loads(p.read_text()).get("command") for p in (RESULTS_DIR / "checkpoints").glob("*.json")}
    assert recorded, "no committed checkpoint sidecar found"
    assert [n for n, c in recorded.items() if isinstance(c, str) and refused in c] == []


def test_the_edge_family_s_sidecars_name_the_grid_command_by_a_recorded_reversible_rewrite():
    """The edge family's checkpoints were trained one recipe per command (``edge --recipes R``, which ``reproduce``
    would have run); the name migration rewrote each sidecar's command to the grid command of ``ch4_edge``
    (SIDECAR_EXPERIMENT_BEFORE), recorded with the file's sha256 before and after: each sidecar hashes as recorded,
    and set back to its command before it is, byte for byte, the file it replaced."""
    from mamba_recall.paths import REPO_ROOT, RESULTS_DIR
    from mamba_recall.runstore import MIGRATIONS_NAME, RUNS_DIR
    from mamba_recall.runstore._migrate import _sidecar_bytes

    grid = "python -m mamba_recall grid ch4_edge --preset cpu-hours --allow-long"
    record = json.loads((RUNS_DIR / MIGRATIONS_NAME).read_text())
    rewrites = [s for m in record["migrations"] for s in m.get("checkpoint_sidecars", []) if "sha256_before" in s]
    edge = [s for s in rewrites if s["file"].startswith("results/checkpoints/ch4_edge_")]
    assert len(edge) == 26 and {s["command"] for s in edge} == {grid}
    assert {s["command_before"].split("--recipes ")[1] for s in edge} == {
        "d2 --allow-long", "d2_bos --allow-long", "d2_smalldt --allow-long", "d4 --allow-long",
        "d4_long --allow-long", "d4_zinit --allow-long", "m2 --allow-long",
    }  # fmt: skip
    for s in edge:
        text = (REPO_ROOT / s["file"]).read_bytes()
        assert hashlib.sha256(text).hexdigest() == s["sha256"], s["file"]
        old = json.loads(text)
        old["command"] = s["command_before"]  # its command_before_migration is the first one's, kept as it was
        assert hashlib.sha256(_sidecar_bytes(old)).hexdigest() == s["sha256_before"], s["file"]
    trained = sorted(p.name for p in (RESULTS_DIR / "checkpoints").glob("ch4_edge_*_seed*.json"))
    recorded = {p: json.loads((RESULTS_DIR / "checkpoints" / p).read_text())["command"] for p in trained}
    assert not [p for p, c in recorded.items() if "--recipes" in c]  # no committed sidecar names the old command
