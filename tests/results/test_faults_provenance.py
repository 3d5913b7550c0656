"""Injected faults in how a number records the code that made it, in checkpoint pairs and in bundles read while they are
rewritten: provenance names the code that ran or ``MAMBA_RECALL_REQUIRE_CLEAN=1`` refuses it, a swapped checkpoint
pair is named, and a reader never sees half of one write beside half of another.

Every fault is injected into a copy under ``tmp_path`` (a copy of the package, a tarball-like copy of the checkout
without ``.git``, a PATH without git, a bundle hammered by threads); the committed tree is only read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from mamba_recall import provenance, results
from mamba_recall.paths import REPO_ROOT, RESULTS_DIR

SRC = Path(provenance.__file__).resolve().parent  # the package under test

#: What the child process runs: the provenance it records, then a bundle written with MAMBA_RECALL_REQUIRE_CLEAN=1
#: (refused: the message on stdout, no traceback).
_CHILD = """
import json, os, sys
from mamba_recall import results
prov = results.provenance()
os.environ["MAMBA_RECALL_REQUIRE_CLEAN"] = "1"
try:
    results.save_bundle("x_ci", {}, {}, command="c", directory=sys.argv[1])
    refused = None
except results.BundleError as exc:
    refused = str(exc)
import mamba_recall
print(json.dumps({"prov": prov, "refused": refused, "package": mamba_recall.__file__}))
"""


def _child(tmp_path: Path, env: dict, cwd: Path | None = None) -> dict:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(out)],
        env={**env, "OMP_NUM_THREADS": "1"},
        cwd=cwd or tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _copy_package(dest: Path) -> Path:
    shutil.copytree(SRC, dest / "mamba_recall", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return dest / "mamba_recall"


def test_edited_code_imported_from_outside_the_checkout_is_dirty_and_refused(tmp_path):
    """Fault 1: another PYTHONPATH (or a plain ``pip install .``) plus MAMBA_RECALL_ROOT: the git state of the
    checkout says nothing about the code that ran. Before the fix the bundle recorded ``git_dirty: false`` (the
    checkout clean) and REQUIRE_CLEAN let it through."""
    pkg = _copy_package(tmp_path / "elsewhere")
    with open(pkg / "results" / "_files.py", "a") as f:
        f.write("\nCHANGED = True  # an edit the checkout does not have\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "elsewhere"), "MAMBA_RECALL_ROOT": str(REPO_ROOT)}
    got = _child(tmp_path, env)
    assert Path(got["package"]).resolve() == (pkg / "__init__.py").resolve()
    prov = got["prov"]
    assert prov["git_dirty"] is True
    assert f"{pkg.resolve()}/results/_files.py" in prov["dirty_files"]
    assert prov["code"]["in_checkout"] is False and prov["code"]["package"] == str(pkg.resolve())
    assert len(prov["code"]["sha256"]) == 64  # the code that ran, named without git
    assert got["refused"] and "outside the checkout" in got["refused"] and "pip install -e ." in got["refused"]
    assert not list((tmp_path / "out").iterdir())  # nothing written


def test_the_checkout_s_own_package_records_no_code_origin():
    """The usual case (an editable install, or PYTHONPATH=src): the package is the checkout's, nothing extra."""
    origin = provenance.code_origin()
    assert origin == {"package": str((REPO_ROOT / "src" / "mamba_recall").resolve()), "in_checkout": True}
    assert "code" not in results.provenance()


def test_a_tarball_checkout_records_no_commit_with_its_reason_and_is_refused(tmp_path):
    """Fault 1: a copy of the checkout without .git (a tarball) with an edited src: before, ``git_commit: null``
    was accepted by REQUIRE_CLEAN."""
    root = tmp_path / "tarball"
    (root / "results").mkdir(parents=True)
    shutil.copy2(REPO_ROOT / "_toc.yml", root / "_toc.yml")
    pkg = _copy_package(root / "src")
    with open(pkg / "paths.py", "a") as f:
        f.write("\n# edited in the tarball\n")
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "MAMBA_RECALL_ROOT": str(root)}
    got = _child(tmp_path, env, cwd=root)
    prov = got["prov"]
    assert prov["git_commit"] is None and "not a git checkout" in prov["git_reason"]
    assert "code" not in prov  # the package is the checkout's own src/
    assert got["refused"] and "no git commit is recorded" in got["refused"] and "git clone" in got["refused"]


def test_no_git_on_path_records_a_reason_and_require_clean_names_the_fix(tmp_path, monkeypatch):
    """Fault 2: no git on PATH. The provenance records ``git_commit: null`` and why (no FileNotFoundError), and
    REQUIRE_CLEAN refuses with a message naming the fix."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    state = provenance.git_state()
    assert state["commit"] is None and "git is not installed" in state["reason"]
    prov = results.provenance()
    assert prov["git_commit"] is None and prov["git_dirty"] is None and "install git" in prov["git_reason"]
    results.save_bundle("ok_ci", {}, {}, command="c", directory=tmp_path / "b")  # recorded, not refused
    assert results.load_bundle("ok_ci", directory=tmp_path / "b").provenance["git_reason"] == prov["git_reason"]
    monkeypatch.setenv(results.ENV_REQUIRE_CLEAN, "1")
    with pytest.raises(results.BundleError, match=r"no git commit is recorded \(git is not installed.*install git"):
        results.save_bundle("no_ci", {}, {}, command="c", directory=tmp_path / "b")
    assert not (tmp_path / "b" / "no_ci.json").exists()


def test_no_git_in_a_child_process_gives_no_traceback(tmp_path):
    """Fault 2 as a user meets it: a process with no git on PATH writes (or, with REQUIRE_CLEAN, refuses) cleanly."""
    empty = tmp_path / "bin"
    empty.mkdir()
    got = _child(tmp_path, {**os.environ, "PATH": str(empty)})
    assert got["prov"]["git_commit"] is None and "git is not installed" in got["prov"]["git_reason"]
    assert "no git commit is recorded" in got["refused"]


# ------------------------------------------------------------------------------------------ a swapped checkpoint pair


def test_a_checkpoint_pair_copied_over_another_is_named(tmp_path):
    """Fault 3: ``ch1_k1_masked_ci.{pt,json}`` copied over ``ch1_k1_ci.{pt,json}``: the hashes agree with each
    other, so it loaded as k1's weights. Now the sidecar must name the file it sits beside."""
    src = RESULTS_DIR / "checkpoints"
    for suffix in (".pt", ".json"):
        shutil.copy2(src / f"ch1_k1_masked_ci{suffix}", tmp_path / f"ch1_k1_ci{suffix}")
    regen = "python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints --preset ci"
    with pytest.raises(results.BundleError) as err:
        results.read_checkpoint(tmp_path / "ch1_k1_ci.pt", regenerate=regen)
    message = str(err.value)
    assert "'ch1_k1_masked_ci.pt'" in message and "'ch1_k1_ci.pt'" in message and regen in message
    # the genuine pair still loads
    for suffix in (".pt", ".json"):
        shutil.copy2(src / f"ch1_k1_ci{suffix}", tmp_path / f"ch1_k1_ci{suffix}")
    payload, sidecar = results.read_checkpoint(tmp_path / "ch1_k1_ci.pt", regenerate=regen)
    assert sidecar["file"] == "ch1_k1_ci.pt"


# ------------------------------------------------------------------------------------------ read while rewritten


def _write_version(directory: Path, v: int) -> None:
    frame = pd.DataFrame({"v": [v] * 200, "x": list(range(200))})
    results.save_bundle(
        "race_ci", {"v": v}, {"v": v}, command="c", tables={"t": frame, "u": frame}, directory=directory
    )


def test_a_bundle_read_while_two_writers_rewrite_it_is_never_mixed_nor_falsely_corrupt(tmp_path):
    """Fault 4: readers load a bundle while two writers rewrite it. Before the fix: false "does not match its recorded
    sha256" errors (the JSON of one write, the tables of the next), silently mixed bundles (the hash checked on one
    read of a table, the table parsed from a second read), and two writers left the JSON of one beside the tables of
    the other. Now each file is read once under the folder's shared lock and writers take turns."""
    _write_version(tmp_path, 0)
    errors: list[str] = []
    loads = [0]
    stop = threading.Event()

    def writer(offset: int) -> None:
        v = offset
        while not stop.is_set():
            _write_version(tmp_path, v)
            v += 2

    def reader() -> None:
        while not stop.is_set():
            try:
                b = results.load_bundle("race_ci", directory=tmp_path)
            except results.BundleError as exc:
                errors.append(f"false error: {exc}")
                continue
            loads[0] += 1
            values = {b.data["v"], b.config["v"], *b.tables["t"]["v"], *b.tables["u"]["v"]}
            if len(values) != 1:
                errors.append(f"mixed bundle: {sorted(values)}")

    threads = [threading.Thread(target=writer, args=(k,)) for k in (1, 2)]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(4)
    stop.set()
    for t in threads:
        t.join()
    assert errors == [], errors[:5]
    assert loads[0] > 20
    results.load_bundle("race_ci", directory=tmp_path)  # the last write left a whole bundle
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race_ci.json", "race_ci.t.csv", "race_ci.u.csv"]


def test_a_table_parsed_is_the_table_whose_hash_was_checked(tmp_path, monkeypatch):
    """Fault 4, the silent half: a table replaced between the hash check and the parse was parsed unchecked."""
    _write_version(tmp_path, 1)
    real = pd.read_csv
    swapped = []

    def read_csv(source, *a, **kw):
        if not swapped:  # a writer (taking no lock) replaces the table just before it is parsed
            swapped.append(1)
            (tmp_path / "race_ci.t.csv").write_text("v,x\n99,0\n")
        return real(source, *a, **kw)

    monkeypatch.setattr(pd, "read_csv", read_csv)
    b = results.load_bundle("race_ci", directory=tmp_path)
    assert set(b.tables["t"]["v"]) == {1}
