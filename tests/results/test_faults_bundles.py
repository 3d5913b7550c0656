"""Injected faults in bundles and checkpoints: nothing lost, nothing silently wrong.

Every test injects its fault into a copy under ``tmp_path`` (a full disk by a writer that raises ``ENOSPC``
midway, one flipped byte, a deleted sidecar) and points the loader there: the committed ``results/`` is only read.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from mamba_recall import context, results
from mamba_recall.paths import RESULTS_DIR

REGEN = "python -m mamba_recall.experiments.fake --preset ci"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _full_disk_at(monkeypatch, fail_at: int) -> list[Path]:
    """Replace the low-level writer: the ``fail_at``-th file written gets half its bytes, then ENOSPC."""
    written: list[Path] = []
    real = results._files._write_file

    def writer(path: Path, data: bytes) -> None:
        written.append(Path(path))
        if len(written) - 1 == fail_at:
            Path(path).write_bytes(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(results._files, "_write_file", writer)
    return written


def _copy_bundle(stem: str, dest: Path) -> Path:
    """Copy ``results/<stem>.json`` and its tables into ``dest``; return the copy of the JSON."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in RESULTS_DIR.glob(f"{stem}.*"):
        if f.name == f"{stem}.json" or (f.suffix == ".csv" and f.name.count(".") == 2):
            shutil.copy2(f, dest / f.name)
    return dest / f"{stem}.json"


def _flip(path: Path, offset: int, new: bytes) -> None:
    data = bytearray(path.read_bytes())
    assert len(new) == 1 and data[offset : offset + 1] != new
    data[offset : offset + 1] = new
    path.write_bytes(bytes(data))


# ------------------------------------------------------------------------------------ 1. a full disk


@pytest.mark.parametrize("fail_at", [0, 1], ids=["while-writing-the-csv", "while-writing-the-json"])
def test_full_disk_leaves_previous_bundle_byte_identical(tmp_path, monkeypatch, fail_at):
    table = pd.DataFrame({"x": [1, 2, 3], "acc": [0.5, 0.75, 1.0]})
    results.save_bundle("b", {"acc": 0.9}, {"preset": "ci"}, command=REGEN, tables={"t": table}, directory=tmp_path)
    before = _snapshot(tmp_path)
    written = _full_disk_at(monkeypatch, fail_at)
    bigger = pd.DataFrame({"x": list(range(500)), "acc": [0.25] * 500})
    with pytest.raises(OSError) as info:
        results.save_bundle(
            "b", {"acc": 0.1}, {"preset": "ci"}, command=REGEN, tables={"t": bigger}, directory=tmp_path
        )
    assert info.value.errno == errno.ENOSPC
    assert len(written) == fail_at + 1 and all(p.parent == tmp_path for p in written)
    assert _snapshot(tmp_path) == before  # byte-identical, and no temporary file left behind
    assert results.load_bundle("b", directory=tmp_path).data == {"acc": 0.9}


@pytest.mark.parametrize("fail_at", [0, 1], ids=["while-writing-the-pt", "while-writing-the-sidecar"])
def test_full_disk_leaves_previous_checkpoint_byte_identical(tmp_path, monkeypatch, fail_at):
    path = tmp_path / "ch9_m_ci.pt"
    results.save_checkpoint(path, {"w": torch.ones(4)}, {"config": {"d": 4}}, command=REGEN)
    before = _snapshot(tmp_path)
    _full_disk_at(monkeypatch, fail_at)
    with pytest.raises(OSError) as info:
        results.save_checkpoint(path, {"w": torch.zeros(4096)}, {"config": {"d": 4096}}, command=REGEN)
    assert info.value.errno == errno.ENOSPC
    assert _snapshot(tmp_path) == before
    state, meta = results.read_checkpoint(path, regenerate=REGEN)
    assert torch.equal(state["w"], torch.ones(4)) and meta["config"] == {"d": 4}


def test_saved_files_replace_the_old_ones_whole(tmp_path):
    """The normal path still works: the second save replaces both files, leaving no temporary file."""
    table = pd.DataFrame({"x": [1]})
    results.save_bundle("b", {"v": 1}, {}, command=REGEN, tables={"t": table}, directory=tmp_path)
    results.save_bundle("b", {"v": 2}, {}, command=REGEN, tables={"t": table.assign(x=[2])}, directory=tmp_path)
    assert sorted(_snapshot(tmp_path)) == ["b.json", "b.t.csv"]
    b = results.load_bundle("b", directory=tmp_path)
    assert b.data == {"v": 2} and b.tables["t"]["x"].tolist() == [2]


# ------------------------------------------------------------------------- 2. corrupt is not absent


def _ch2_fig7_dir(tmp_path, monkeypatch) -> Path:
    """A results folder in tmp with the committed ci bundle that ``strongest_fig_bundle`` falls back to."""
    folder = tmp_path / "results"
    _copy_bundle("ch2_scaling_ci", folder)
    monkeypatch.setattr(results, "RESULTS_DIR", folder)
    monkeypatch.setattr(results._bundles, "RESULTS_DIR", folder)  # where the loaders read it
    return folder


def test_absent_stronger_bundle_still_falls_back_to_ci(tmp_path, monkeypatch):
    from mamba_recall.chapters.ch2_hashing_scaling import claims as ch2

    _ch2_fig7_dir(tmp_path, monkeypatch)
    assert ch2.strongest_fig_bundle("fig7").name == "ch2_scaling_ci"


def test_corrupt_committed_bundle_stops_instead_of_falling_back(tmp_path, monkeypatch):
    from mamba_recall.chapters.ch2_hashing_scaling import claims as ch2

    folder = _ch2_fig7_dir(tmp_path, monkeypatch)
    copy = _copy_bundle("ch2_fig7_cpu-hours", folder)
    text = copy.read_bytes()
    _flip(copy, text.index(b'"config"') + len(b'"config"'), b";")  # ':' -> ';': not JSON any more
    with pytest.raises(results.BundleError) as info:
        ch2.strongest_fig_bundle("fig7")
    assert not isinstance(info.value, results.BundleMissing)
    message = str(info.value)
    assert (
        str(copy) in message
        and "regenerate it with: python -m mamba_recall grid ch2_fig7 --preset cpu-hours --allow-long" in message
    )


def test_one_digit_in_a_committed_table_stops(tmp_path, monkeypatch):
    from mamba_recall.chapters.ch2_hashing_scaling import claims as ch2

    folder = _ch2_fig7_dir(tmp_path, monkeypatch)
    _copy_bundle("ch2_fig7_cpu-hours", folder)
    csv = folder / "ch2_fig7_cpu-hours.runs.csv"
    text = csv.read_bytes()
    at = re.search(rb"\n[^\n]*?([0-8])", text).start(1)  # a digit in the first data row
    _flip(csv, at, bytes([text[at] + 1]))
    with pytest.raises(results.BundleError, match="ch2_fig7_cpu-hours.runs.csv.*regenerate it with: python -m"):
        ch2.strongest_fig_bundle("fig7")


def test_one_digit_in_a_hashed_bundle_stops(tmp_path, monkeypatch):
    """A bundle written now carries its content hash: a changed digit that still parses is caught."""
    from mamba_recall.chapters.ch2_hashing_scaling import claims as ch2

    folder = _ch2_fig7_dir(tmp_path, monkeypatch)
    path = results.save_bundle("ch2_fig7_cpu-hours", {"complete": True, "acc": 0.912}, {"preset": "cpu-hours"},
                               command=REGEN, directory=folder)  # fmt: skip
    assert results.load_bundle(path).data["acc"] == 0.912
    at = path.read_bytes().index(b"0.912") + 2
    _flip(path, at, b"8")  # 0.912 -> 0.812: still valid JSON
    assert json.loads(path.read_text())["data"]["acc"] == 0.812
    with pytest.raises(results.BundleError, match=f"{re.escape(str(path))}.*content_sha256.*{re.escape(REGEN)}"):
        ch2.strongest_fig_bundle("fig7")


def test_a_bundle_or_sidecar_without_a_content_hash_is_refused_naming_its_command(tmp_path):
    """Every bundle and sidecar this library writes carries its content hash, and every committed one does
    (:func:`test_every_committed_bundle_and_sidecar_is_strict_and_hashed`): one without it cannot be checked, so it is
    refused, naming the problem and the command that remakes it (no legacy reading)."""
    path = results.save_bundle("unhashed", {"v": 1}, {}, command=REGEN, directory=tmp_path)
    record = json.loads(path.read_text())
    del record[results.CONTENT_HASH]
    path.write_text(json.dumps(record))
    with pytest.raises(results.BundleError, match=f"carries no content hash .*regenerate it with: {re.escape(REGEN)}$"):
        results.load_bundle(path)
    with pytest.raises(results.BundleError, match="carries no content hash"):
        results.read_bundle_record(path)  # the migration's reader refuses it too
    pt = results.save_checkpoint(tmp_path / "m.pt", {"w": torch.ones(1)}, {"loss": 0.5}, command=REGEN)
    side = json.loads(pt.with_suffix(".json").read_text())
    del side[results.CONTENT_HASH]
    pt.with_suffix(".json").write_text(json.dumps(side))
    with pytest.raises(
        results.BundleError, match=f"checkpoint sidecar .*m.json carries no content hash.*{re.escape(REGEN)}"
    ):
        results.read_checkpoint(pt, regenerate=REGEN)


def test_a_bare_nan_is_refused_as_corrupt(tmp_path):
    """A non-finite float is written as null and listed in ``nonfinite``; a bare ``NaN`` (not strict JSON) is
    refused before its hash is read, naming the fix."""
    path = results.save_bundle("bare", {"v": float("nan")}, {}, command=REGEN, directory=tmp_path)
    text = path.read_text()
    assert '"v": null' in text and '"NaN"' in text  # the value as null, its place listed
    path.write_text(text.replace('"v": null', '"v": NaN'))
    with pytest.raises(results.BundleError, match=f"a bare NaN in it, not strict JSON.*{re.escape(REGEN)}"):
        results.load_bundle(path)


def _edge_dir(tmp_path) -> Path:
    folder = tmp_path / "results"
    _copy_bundle("ch4_edge_cpu-hours", folder)
    _copy_bundle("ch4_edge_checks_cpu-hours", folder)
    return folder


def test_edge_family_corrupt_bundle_is_not_uncommitted(tmp_path):
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import EdgeFamily

    folder = _edge_dir(tmp_path)
    assert EdgeFamily("cpu-hours", directory=folder).missing == ""  # the intact copies load
    copy = folder / "ch4_edge_checks_cpu-hours.json"
    _flip(copy, copy.read_bytes().rindex(b"}"), b")")  # the last brace: truncated-looking JSON
    with pytest.raises(results.BundleError) as info:
        EdgeFamily("cpu-hours", directory=folder)
    assert str(copy) in str(info.value)
    assert "grid ch4_edge_checks --preset cpu-hours" in str(info.value).split("regenerate it with:")[1]


def test_edge_family_absent_bundle_is_uncommitted(tmp_path):
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import EdgeFamily

    folder = _edge_dir(tmp_path)
    (folder / "ch4_edge_checks_cpu-hours.json").unlink()
    fam = EdgeFamily("cpu-hours", directory=folder)
    assert "claim checks" in fam.missing and "--checks" in fam.missing


def test_every_except_bundle_error_in_src_catches_only_absence():
    """Audit: no fallback in the library catches ``BundleError`` itself (that includes corrupt bundles)."""
    src = Path(results.__file__).parents[1]  # the whole library (results is a package)
    offenders = [
        f"{p.relative_to(src)}:{n}"
        for p in src.rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"except\s*\(?[^)]*\bBundleError\b", line)
    ]
    assert offenders == []


# ------------------------------------------------------------------------- 3. written by a newer library


def _rehash(record: dict) -> dict:
    record[results.CONTENT_HASH] = results._files._content_sha256(record)
    return record


def test_bundle_from_a_newer_library_says_update(tmp_path):
    path = results.save_bundle("new", {"v": 1}, {}, command=REGEN, directory=tmp_path)
    record = json.loads(path.read_text())
    record["schema_version"] = results.SCHEMA_VERSION + 1
    path.write_text(json.dumps(_rehash(record)))
    with pytest.raises(results.BundleTooNew) as info:
        results.load_bundle(path)
    message = str(info.value)
    assert "newer mamba_recall" in message and "update mamba_recall" in message
    assert f"v{results.SCHEMA_VERSION + 1} > v{results.SCHEMA_VERSION}" in message
    assert "do not regenerate" in message
    record["schema_version"] = 0  # an older one: regenerate
    path.write_text(json.dumps(_rehash(record)))
    with pytest.raises(results.BundleError, match="regenerate it with"):
        results.load_bundle(path)


def test_checkpoint_sidecar_from_a_newer_library_says_update(tmp_path):
    path = results.save_checkpoint(tmp_path / "m.pt", {"w": torch.ones(2)}, {"config": {}}, command=REGEN)
    side = path.with_suffix(".json")
    record = json.loads(side.read_text())
    assert record["schema"] == results.SIDECAR_SCHEMA
    record["schema_version"] = results.SIDECAR_SCHEMA_VERSION + 1
    side.write_text(json.dumps(_rehash(record)))
    with pytest.raises(results.BundleTooNew, match="newer mamba_recall.*update mamba_recall"):
        results.read_checkpoint(path, regenerate=REGEN)


def test_checkpoint_sidecar_one_digit_stops(tmp_path):
    path = results.save_checkpoint(tmp_path / "m.pt", {"w": torch.ones(2)}, {"accuracy": 0.93}, command=REGEN)
    side = path.with_suffix(".json")
    _flip(side, side.read_bytes().index(b"0.93") + 3, b"1")
    with pytest.raises(results.BundleError, match=f"m.json.*content_sha256.*{re.escape(REGEN)}"):
        results.read_checkpoint(path, regenerate=REGEN)


# ------------------------------------------------------------------------- 4. a deleted sidecar


@pytest.fixture
def ch1_copy(tmp_path, monkeypatch):
    """Chapter 1's committed k2 checkpoint copied to tmp, its loader pointed there, and live training forbidden."""
    import mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value as tr

    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for suffix in (".pt", ".json"):
        shutil.copy2(tr.CHECKPOINT_DIR / f"ch1_k2_ci{suffix}", folder)
    monkeypatch.setattr(tr, "CHECKPOINT_DIR", folder)

    def no_training(*args, **kwargs):
        raise AssertionError("load_or_train trained a live model")

    monkeypatch.setattr(tr, "train_recall", no_training)
    return tr, folder


def test_intact_checkpoint_copy_loads(ch1_copy):
    tr, folder = ch1_copy
    assert tr.load_checkpoint("k2", "ci")[1]["name"] == "k2"


@pytest.mark.parametrize("deleted", [".json", ".pt"])
def test_half_a_checkpoint_stops_instead_of_training_live(ch1_copy, deleted):
    tr, folder = ch1_copy
    gone = folder / f"ch1_k2_ci{deleted}"
    gone.unlink()
    with pytest.raises(results.BundleError) as info:
        tr.load_or_train("k2", "ci")
    message = str(info.value)
    assert (
        gone.name in message
        and "python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints --preset ci --only k2" in message
    )


def test_absent_checkpoint_never_made_trains_live(ch1_copy, monkeypatch):
    """Neither file, and no committed bundle lists it (a preset never run here): training live is by design."""
    tr, folder = ch1_copy
    model, _ = tr.load_checkpoint("k2", "ci")
    for f in folder.iterdir():
        f.unlink()
    monkeypatch.setattr(tr, "train_recall", lambda *a, **k: SimpleNamespace(model=model))
    assert tr.load_or_train("k2", "ci").source == "live"


def test_absent_checkpoint_a_committed_bundle_lists_stops(tmp_path, monkeypatch, ch1_copy):
    tr, _ = ch1_copy
    root = tmp_path / "repo"
    _copy_bundle("ch1_checkpoints_ci", root / "results")
    (root / "results" / "checkpoints").mkdir()  # the listed checkpoints are gone
    monkeypatch.setattr(tr, "RESULTS_DIR", root / "results")
    monkeypatch.setattr(tr, "CHECKPOINT_DIR", root / "results" / "checkpoints")
    with pytest.raises(results.CheckpointMissing, match="ch1_k2_ci.pt.*ch1_checkpoints_ci lists.*--only k2"):
        tr.load_or_train("k2", "ci")


def _ch1_ci_copy(root: Path, keep) -> None:
    """A repository copy under ``root`` with the committed ``ch1_checkpoints_ci`` bundle, the ci checkpoints and
    the run-store records of the models ``keep(name)`` says to keep (part ``checkpoints``)."""
    from mamba_recall.paths import REPO_ROOT

    _copy_bundle("ch1_checkpoints_ci", root / "results")
    shutil.copy2(REPO_ROOT / "_toc.yml", root / "_toc.yml")
    (root / "results" / "checkpoints").mkdir()
    for f in (RESULTS_DIR / "checkpoints").glob("ch1_*_ci.*"):
        shutil.copy2(f, root / "results" / "checkpoints" / f.name)
    runs = root / "results" / "runs" / "ch1_checkpoints"
    runs.mkdir(parents=True)
    for f in (RESULTS_DIR / "runs" / "ch1_checkpoints").glob("*.json"):
        rec = json.loads(f.read_text())
        if rec["config"]["preset"] == "ci" and keep(rec["config"]["model"]):
            shutil.copy2(f, runs / f.name)


def _ch1_checkpoints(root: Path, *args: str, env: dict | None = None):
    """``ch1_checkpoints`` in the repository copy ``root`` (one thread); ``env`` overrides the environment (a value of
    None unsets that variable)."""
    import subprocess
    import sys

    env = {**os.environ, "MAMBA_RECALL_ROOT": str(root), "OMP_NUM_THREADS": "1", **(env or {})}
    env = {k: v for k, v in env.items() if v is not None}
    cmd = [sys.executable, "-m", "mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints", *args]
    return subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)


def test_a_run_of_some_models_keeps_the_other_rows_of_the_checkpoint_bundle(tmp_path):
    """``ch1_checkpoints --only k1_masked`` trains that model's run-store job and rewrites its checkpoint and the bundle,
    which still lists the four others, whose jobs are finished (a bundle that forgot them would let a missing
    committed checkpoint be trained live instead of stopping)."""
    root = tmp_path / "repo"
    _ch1_ci_copy(root, keep=lambda name: name != "k1_masked")
    before = (root / "results/checkpoints/ch1_k1_masked_ci.json").read_text()
    _ch1_checkpoints(root, "--preset", "ci", "--only", "k1_masked")
    bundle = results.load_bundle(root / "results" / "ch1_checkpoints_ci.json")
    assert list(bundle.data["models"]) == ["k1", "k1_masked", "k2", "k4", "wo"]
    assert bundle.data["complete"] and "--only" not in bundle.command
    assert (root / "results/checkpoints/ch1_k1_masked_ci.json").read_text() != before  # made again, by this run


def test_a_committed_chapter3_checkpoint_whose_record_names_none_is_made_again_by_its_command(tmp_path):
    """Chapter 3's committed KEEP n-TH runs were written before run records named their checkpoint. Their jobs
    declare it (``output``), so ``keep_nth --preset ci``, the command a missing checkpoint's error names, runs the
    job whose checkpoint is gone again (and only that one), writes the file back, and its new record names it."""
    import subprocess
    import sys

    from mamba_recall.paths import REPO_ROOT
    from mamba_recall.runstore import read_run

    root = tmp_path / "repo"
    _copy_bundle("ch3_keep_nth_ci", root / "results")
    shutil.copy2(REPO_ROOT / "_toc.yml", root / "_toc.yml")
    runs = root / "results" / "runs" / "ch3_keep_nth"
    runs.mkdir(parents=True)
    for f in (RESULTS_DIR / "runs" / "ch3_keep_nth").glob("*.json"):
        if json.loads(f.read_text())["config"]["preset"] == "ci":
            shutil.copy2(f, runs / f.name)
    assert len(list(runs.glob("*.json"))) == 5
    assert not any("checkpoint" in read_run(f)["result"] for f in runs.glob("*.json"))  # as committed
    pt = root / "results/checkpoints/ch3_keep_nth_s6pe_ci_T20_seed0.pt"
    env = {**os.environ, "MAMBA_RECALL_ROOT": str(root), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "mamba_recall.chapters.ch3_selectivity.runners.keep_nth", "--preset", "ci"]
    out = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    log = out.stdout + out.stderr
    assert "its checkpoint results/checkpoints/ch3_keep_nth_s6pe_ci_T20_seed0.pt is missing: it is run again" in log
    assert "1 to run" in log or "1 left" in log, log
    assert pt.is_file() and results.read_checkpoint(pt, regenerate="keep_nth --preset ci")
    named = [read_run(f)["result"] for f in runs.glob("*.json") if "checkpoint" in read_run(f)["result"]]
    assert [r["checkpoint"] for r in named] == ["results/checkpoints/ch3_keep_nth_s6pe_ci_T20_seed0.pt"]
    again = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    assert "is missing" not in again.stdout + again.stderr  # finished now, by its record's own checkpoint


# ------------------------------------------------------------------------- 5. smoke runs stay out of results/


@pytest.fixture
def smoke_dirs(tmp_path, monkeypatch):
    real, smoke = tmp_path / "results", tmp_path / "_build" / "smoke" / "results"
    real.mkdir()
    monkeypatch.setattr(results, "RESULTS_DIR", real)  # read by the run store's save_grid_bundle
    for name, value in (("RESULTS_DIR", real), ("SMOKE_RESULTS_DIR", smoke)):
        monkeypatch.setattr(results._bundles, name, value)  # where the writers and the smoke folder read them
    monkeypatch.delenv(context.ENV_SMOKE_OUTPUTS, raising=False)
    return real, smoke


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_runner_save_path_with_smoke_writes_nothing_under_results(smoke_dirs):
    """The run-store runners' save path (``save_grid_bundle``, directory None: ``results/``) of a smoke run."""
    from mamba_recall.runstore import GridStatus, save_grid_bundle

    real, smoke = smoke_dirs
    data = GridStatus(jobs_finished=1, jobs_total=1, runs={"wall_seconds": 1.0})  # counted in the committed store
    table = {"runs": pd.DataFrame({"key": ["k"], "seed": [0]}), "cells": pd.DataFrame({"acc": [0.5]})}
    path = save_grid_bundle("ch2_fig7_cpu-hours_smoke", data, {"smoke": True}, command=REGEN, tables=table)
    path2 = results.save_bundle("unmarked_name", {}, {"smoke": True}, command=REGEN)  # said by its config
    ck = results.save_checkpoint(
        real / "checkpoints" / "edge_m_seed0_smoke.pt", {"w": torch.ones(1)}, {}, command=REGEN
    )
    assert _files(real) == []
    assert path.parent == path2.parent == smoke and ck.parent == smoke / "checkpoints"
    assert results.load_bundle("ch2_fig7_cpu-hours_smoke", directory=smoke).data["jobs_total"] == 1
    assert results.smoke_run_store(True) == smoke / "runs" and results.smoke_run_store(False) is None


def test_smoke_context_redirects_every_write(smoke_dirs):
    real, smoke = smoke_dirs
    with context.run_context(smoke_dir=results.smoke_results_dir()):
        path = results.save_bundle("anything_ci", {}, {}, command=REGEN)
        ck = results.save_checkpoint(real / "checkpoints" / "m.pt", {"w": torch.ones(1)}, {}, command=REGEN)
    assert _files(real) == [] and path.parent == smoke and ck.parent == smoke / "checkpoints"
    assert results.save_bundle("real_ci", {}, {}, command=REGEN).parent == real  # after the block: results/


def test_smoke_worker_process_redirects_too(smoke_dirs, monkeypatch):
    """A run-store worker of a smoke run (``--jobs 2``: another process, e.g. Chapter 3's KEEP job saving its
    checkpoint) knows only the environment its parent set: it writes under the smoke folder too."""
    real, smoke = smoke_dirs
    with context.run_context(smoke_dir=results.smoke_results_dir()):
        inherited = os.environ[context.ENV_SMOKE_OUTPUTS]  # what a process started in the block inherits
    assert context.ENV_SMOKE_OUTPUTS not in os.environ and not results.smoke_active()
    monkeypatch.setenv(context.ENV_SMOKE_OUTPUTS, inherited)  # the worker: no block of its own, environment inherited
    ck = results.save_checkpoint(real / "checkpoints" / "ch3_m_T10_s0.pt", {"w": torch.ones(1)}, {}, command=REGEN)
    assert results.smoke_active() and _files(real) == [] and ck.parent == smoke / "checkpoints"


def test_smoke_runners_run_store_defaults_outside_results():
    """The run-store runners' ``--smoke`` run store is under ``_build/smoke/results``, never ``results/runs``."""
    import inspect

    from mamba_recall.chapters.ch2_hashing_scaling.runners import (
        ensembles as ch2_ensembles,
        reference_grid as ch2_reference_grid,
        trained_dn as ch2_trained_dn,
    )

    from mamba_recall.experiment import run_experiment  # the one grid command's (every runner's that is a grid)

    assert "smoke_run_store(args.smoke)" in inspect.getsource(run_experiment)
    for runner in (ch2_reference_grid, ch2_trained_dn):
        assert "grid_command(" in inspect.getsource(runner.main), runner.__name__
    assert "grid_command(" in inspect.getsource(ch2_ensembles.command)  # ch2_scaling's and ch2_multihead's main


# ------------------------------------------------------------------------- 6. strict JSON


def test_nan_is_written_as_null_and_read_back_as_nan(tmp_path):
    import math

    nan, inf = float("nan"), float("inf")
    data = {"x": nan, "y": [1.0, inf, -inf], "t": torch.tensor([nan, 2.0]), "none": None, "ok": 0.5, 3: [nan]}
    path = results.save_bundle("nan", data, {"eps": nan}, command=REGEN, directory=tmp_path)
    text = path.read_text()

    def refuse(constant):
        raise ValueError(f"bare {constant} in strict JSON")

    raw = json.loads(text, parse_constant=refuse)  # strict JSON: no bare NaN / Infinity
    assert raw["data"]["x"] is None and raw["data"]["y"] == [1.0, None, None]
    b = results.load_bundle(path)
    assert math.isnan(b.data["x"]) and b.data["y"] == [1.0, inf, -inf] and math.isnan(b.config["eps"])
    assert math.isnan(b.data["t"][0]) and b.data["t"][1] == 2.0 and math.isnan(b.data["3"][0])
    assert b.data["none"] is None and b.data["ok"] == 0.5  # a None is not turned into a NaN


def test_nan_in_a_checkpoint_sidecar_round_trips(tmp_path):
    import math

    path = results.save_checkpoint(tmp_path / "m.pt", {"w": torch.ones(1)}, {"loss": float("nan")}, command=REGEN)
    assert json.loads(path.with_suffix(".json").read_text(), parse_constant=float.fromhex)["loss"] is None
    assert math.isnan(results.read_checkpoint(path, regenerate=REGEN)[1]["loss"])


def test_every_committed_bundle_and_sidecar_is_strict_and_hashed():
    """What lets the loader refuse a file without a content hash or with a bare NaN: every committed bundle (the
    external reference data's too) and checkpoint sidecar is strict JSON with its content hash, and loads."""
    bundles = sorted(RESULTS_DIR.glob("*.json")) + sorted(RESULTS_DIR.glob("external/*/*.json"))
    sidecars = sorted(RESULTS_DIR.glob("checkpoints/*.json"))
    assert len(bundles) > 40 and len(sidecars) > 40, (len(bundles), len(sidecars))

    def refuse(constant):
        raise ValueError(f"bare {constant}")

    nonfinite = 0
    for path in bundles + sidecars:
        record = json.loads(path.read_text(), parse_constant=refuse)
        if record.get("schema") == "mamba_recall.manifest":
            continue  # the manifest is no bundle (results/manifest.json, tests/base/test_manifest.py)
        assert results.CONTENT_HASH in record, path
        nonfinite += results.NONFINITE in record
        if path.parent.name == "checkpoints":
            results.read_checkpoint(path.with_suffix(".pt"), regenerate="x")
        else:
            assert results.load_bundle(path).name == record["name"], path
    assert nonfinite, "expected committed files with non-finite values (listed in nonfinite)"
