"""Chapter 4's three edge bundles (``ch4_edge``, ``ch4_edge_checks``, ``ch4_edge_mix``) are written through the run
store's one bundle writer (:func:`mamba_recall.runstore.save_grid_bundle`): a bundle of fewer finished runs never
replaces the committed one (:class:`~mamba_recall.runstore.BundleNotReplaced`, the file left byte for byte), and an
unfinished grid's bundle is written only when asked (``partial``), marked ``partial: "k of n jobs"``.

Each case runs the writer on a scratch store ``tmp/runs`` whose folders link to the committed run folders, the
writer's own folder holding fewer of its committed runs; its bundle goes beside the store (``tmp/``), where a copy of
the committed bundle is put for the refusal case."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mamba_recall.chapters.ch4_primacy_recency.runners import edge, edge_mix
from mamba_recall.paths import RESULTS_DIR
from mamba_recall.runstore import RUNS_DIR, BundleNotReplaced

#: bundle -> (its experiment's run folder, its writer)
WRITERS = {
    "ch4_edge_cpu-hours": ("ch4_edge", edge.write_bundle),
    "ch4_edge_checks_cpu-hours": ("ch4_edge_checks", edge.write_checks_bundle),
    "ch4_edge_mix_cpu-hours": ("ch4_edge_mix", edge_mix.write_bundle),
}


def _fewer_runs_store(root: Path, experiment: str, drop: int = 1) -> tuple[Path, int]:
    """``root/runs``: every committed run folder linked, but ``experiment``'s holds its committed runs less the last
    ``drop`` (by file name); returns the store and how many runs that folder keeps."""
    store = root / "runs"
    store.mkdir(parents=True)
    for folder in sorted(Path(RUNS_DIR).iterdir()):
        if not folder.is_dir():
            continue
        if folder.name != experiment:
            (store / folder.name).symlink_to(folder)
            continue
        (store / folder.name).mkdir()
        files = sorted(folder.glob("*.json"))[:-drop]
        for f in files:
            (store / folder.name / f.name).symlink_to(f)
    return store, len(files)


def _copy_committed(bundle: str, into: Path) -> dict[Path, bytes]:
    """The committed bundle's JSON and table CSVs copied into ``into``: {copied path: its bytes}."""
    out = {}
    for f in sorted(Path(RESULTS_DIR).glob(f"{bundle}.*")):
        if f.suffix in (".json", ".csv") and f.name.split(".")[0] == bundle:
            shutil.copy2(f, into / f.name)
            out[into / f.name] = f.read_bytes()
    return out


@pytest.mark.parametrize("bundle", sorted(WRITERS))
def test_fewer_runs_never_replace_the_committed_bundle(bundle, tmp_path):
    """From a store with one committed run fewer, the writer (asked for a partial bundle, as ``--partial``) is
    refused where the committed bundle lies, and the committed files are left byte for byte."""
    experiment, write = WRITERS[bundle]
    committed = json.loads((Path(RESULTS_DIR) / f"{bundle}.json").read_text())["data"]
    store, kept = _fewer_runs_store(tmp_path, experiment)
    assert kept < committed["jobs_finished"]
    before = _copy_committed(bundle, tmp_path)
    assert tmp_path / f"{bundle}.json" in before and len(before) >= 2  # the JSON and its tables
    said = []
    with pytest.raises(BundleNotReplaced, match=f"by a bundle of {kept} of"):
        write("cpu-hours", store=store, log=said.append, partial=True)
    assert "not replacing" in said[-1] and f"{committed['jobs_finished']} of {committed['jobs_total']} jobs" in said[-1]
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([p.name for p in before] + ["runs"])


@pytest.mark.parametrize("bundle", sorted(WRITERS))
def test_an_unfinished_grid_writes_nothing_unless_asked(bundle, tmp_path):
    """With a job left and no committed bundle beside the store: without ``partial`` nothing is written (the log
    names the ``--aggregate-only --partial`` command); with it, the bundle is marked ``partial: "k of n jobs"`` and
    records the runs it aggregates."""
    experiment, write = WRITERS[bundle]
    store, kept = _fewer_runs_store(tmp_path, experiment)
    said = []
    assert write("cpu-hours", store=store, log=said.append) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]
    assert "none written" in said[-1] and "--aggregate-only --partial" in said[-1]
    path = Path(write("cpu-hours", store=store, log=lambda *a: None, partial=True))
    assert path == tmp_path / f"{bundle}.json"
    data = json.loads(path.read_text())["data"]
    assert data["complete"] is False and data["jobs_finished"] == kept == len(data["run_keys"])
    assert data["partial"] == f"{kept} of {data['jobs_total']} jobs"
