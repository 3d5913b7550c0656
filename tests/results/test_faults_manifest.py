"""Injected faults in the results manifest and the commands around it (``manifest``, ``manifest --write``,
``reproduce``): a truncated bundle, sidecar or manifest, a deleted manifest or bundle, a full disk, a device the
machine lacks, and a manifest that names a command to run. Each gives one line naming the file and the fix, loses
nothing silently, and runs nothing the registry of runners does not hold.

Every fault is injected into a copy under ``tmp_path`` (the manifest module and the command line are pointed there
with monkeypatch); the committed ``results/`` is only read.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mamba_recall import atomic, cli, manifest
from mamba_recall.paths import REPO_ROOT

BUNDLE, CHECKPOINT = "ch2_thm5_cpu-hours", "ch1_k1_ci"


def _root(tmp_path: Path, claims=(("ch2_thm5_cpu-hours", ("002/Thm5-MHA-MN",)),)) -> Path:
    """A results folder under tmp_path with one bundle and one checkpoint, and its manifest."""
    root = tmp_path / "root"
    (root / "results" / "checkpoints").mkdir(parents=True)
    for path in (REPO_ROOT / "results").glob(f"{BUNDLE}.*"):
        shutil.copy2(path, root / "results" / path.name)
    for path in (REPO_ROOT / "results" / "checkpoints").glob(f"{CHECKPOINT}.*"):
        shutil.copy2(path, root / "results" / "checkpoints" / path.name)
    manifest.write(dict(claims), root=root)
    assert manifest.problems(root) == []
    return root


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """The copy, with the manifest module and the command line reading it instead of the committed results/."""
    root = _root(tmp_path)
    monkeypatch.setattr(manifest, "REPO_ROOT", root)
    monkeypatch.setattr(manifest, "RESULTS_DIR", root / "results")
    return root


def _main(argv, capsys) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# ------------------------------------------------------------------------------------- 5. a truncated bundle or sidecar


@pytest.mark.parametrize(
    "rel, what", [(f"{BUNDLE}.json", "result bundle"), (f"checkpoints/{CHECKPOINT}.json", "checkpoint sidecar")]
)
def test_a_truncated_bundle_or_sidecar_is_named_with_its_regenerate_command(root, rel, what, capsys):
    """Before: a raw JSONDecodeError from the manifest's scan (``manifest`` and ``manifest --write`` crashed)."""
    path = root / "results" / rel
    _truncate(path)
    with pytest.raises(manifest.ManifestError) as err:
        manifest.scan(root)
    message = str(err.value)
    assert str(path) in message and f"corrupt {what}" in message and "truncated" in message
    assert "regenerate it with: python -m mamba_recall" in message
    found = manifest.problems(root)
    assert any(str(path) in p and "regenerate it with" in p for p in found)
    assert not any("are missing" in p for p in found)  # corrupt, not reported a second time as gone
    before = (root / "results" / "manifest.json").read_bytes()
    for argv in (["manifest"], ["manifest", "--write"]):
        code, _, stderr = _main(argv, capsys)
        assert code == 1 and "Traceback" not in stderr and str(path) in stderr
    assert (root / "results" / "manifest.json").read_bytes() == before  # --write refused, the manifest unchanged


# ------------------------------------------------------------------------------------------ 6. the manifest itself


@pytest.mark.parametrize("damage", ["truncated", "not a list of entries", "malformed entry"])
def test_a_damaged_manifest_gives_one_line_naming_the_file_and_the_fix(root, damage, capsys, monkeypatch):
    """Before: ``manifest`` printed a JSON position naming no file and no fix; ``reproduce`` and ``manifest --write``
    crashed with a traceback."""
    path = root / "results" / "manifest.json"
    if damage == "truncated":
        _truncate(path)
    else:
        record = json.loads(path.read_text())
        if damage == "not a list of entries":
            record["entries"] = {"x": 1}
        else:
            del record["entries"][0]["files"]
        path.write_text(json.dumps(record))
    before = path.read_bytes()
    ran = []
    monkeypatch.setattr(cli._main.subprocess, "run", lambda *a, **k: ran.append(a))
    for argv in (["manifest"], ["manifest", "--write"], ["reproduce"]):
        code, _, stderr = _main(argv, capsys)
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert code == 1 and "Traceback" not in stderr, stderr
        assert str(path) in stderr and "git checkout results/manifest.json" in stderr, (argv, stderr)
        assert len(lines) == 1, (argv, lines)
    assert path.read_bytes() == before and ran == []


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.mark.parametrize("where", ["a tarball", "a clone that committed it"])
def test_write_without_a_manifest_refuses_instead_of_dropping_every_claim(root, where, capsys):
    """Before: deleting the manifest and running ``manifest --write`` wrote every entry with no claims (145 claim
    ids gone) and then reported every entry complete."""
    path = root / "results" / "manifest.json"
    if where != "a tarball":
        _git(root, "init", "-q")
        _git(root, "add", "results")
        _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results")
    path.unlink()
    code, out, stderr = _main(["manifest", "--write"], capsys)
    assert code == 1 and "Traceback" not in stderr
    assert "git checkout results/manifest.json" in stderr and "--scorecard" in stderr and "claims" in stderr
    assert not path.exists() and "every one complete" not in out


def test_a_new_repository_s_first_manifest_is_written_and_says_it_has_no_claims(root, capsys):
    """The contributing page's toy repository: no manifest was ever committed, so there are no claims to lose."""
    path = root / "results" / "manifest.json"
    path.unlink()
    _git(root, "init", "-q")
    _git(root, "add", "results")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results")
    code, out, _ = _main(["manifest", "--write"], capsys)
    assert code == 0 and "none committed" in out and "no claims" in out
    assert {e.name for e in manifest.load()} == {BUNDLE, CHECKPOINT}


def test_a_deleted_bundle_keeps_its_entry_and_is_reported_missing_with_its_command(root, capsys):
    """Before: ``manifest --write`` after a committed bundle was deleted dropped its entry (and its claims), and the
    loss went unnoticed."""
    for path in (root / "results").glob(f"{BUNDLE}.*"):
        path.unlink()
    code, _, stderr = _main(["manifest", "--write"], capsys)
    assert code == 1
    entries = {e.name: e for e in manifest.load()}
    assert entries[BUNDLE].claims == ("002/Thm5-MHA-MN",)  # kept, claims and all
    assert f"{BUNDLE}: in the manifest but its files" in stderr and "are missing; make it with `python -m" in stderr
    assert f"--drop {BUNDLE}" in stderr
    # removed on purpose: named, and the lost claim said
    code, out, _ = _main(["manifest", "--write", "--drop", BUNDLE], capsys)
    assert code == 0 and BUNDLE not in {e.name for e in manifest.load()}
    assert "note: 1 claim id(s) no longer read from a committed result: 002/Thm5-MHA-MN" in out


# ------------------------------------------------------------------------------------------ 7. a full disk


def test_a_full_disk_in_write_leaves_the_old_manifest_and_no_temporary_file(root, capsys, monkeypatch):
    """Before: a raw ENOSPC traceback and a stray manifest.json.tmp."""
    path = root / "results" / "manifest.json"
    before = path.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)  # the one atomic writer (mamba_recall.atomic)
    code, _, stderr = _main(["manifest", "--write"], capsys)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and "Traceback" not in stderr
    assert "No space left on device" in lines[0] and str(path) in lines[0] and "unchanged" in lines[0]
    assert path.read_bytes() == before
    assert sorted(p.name for p in (root / "results").glob("*manifest*")) == ["manifest.json"]  # no temporary file


# ------------------------------------------------------------------------------------------ 8. a device the machine lacks


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize(
    "argv", [["reproduce", "--device", "cuda"], ["reproduce", "--preset", "ci", "--device", "cuda"]]
)
def test_reproduce_on_cuda_without_a_gpu_is_one_line(root, argv, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(cli._main.subprocess, "run", lambda *a, **k: ran.append(a))
    code, _, stderr = _main(argv, capsys)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and lines[0].startswith("error: ") and "cuda" in lines[0].lower()
    assert ran == []


# ------------------------------------------------------------------------------------------ 9. the manifest is data


def _with_entry(root: Path, **fields) -> None:
    path = root / "results" / "manifest.json"
    record = json.loads(path.read_text())
    entry = {**record["entries"][0], **fields}
    record["entries"].append({**entry, "name": "evil"})
    path.write_text(json.dumps(record))


EVIL = [
    # a shell command written in the manifest: before, `reproduce` ran `python -c ...` as written
    {"command": "python -c \"open('/tmp/pwned', 'w').write('x')\"", "run": None},
    {"command": "python -m http.server 8000", "run": None},
    {"run": {"module": "http.server", "args": ["8000"]}},
    {"run": {"script": "tools/evil.py", "args": []}},
    {"run": {"module": "mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints", "args": ["--store", "/etc"]}},
    {"run": {"module": "mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints", "args": ["-c", "x"]}},
    {
        "run": {
            "module": "mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints",
            "args": ["--preset", "$(id)"],
        }
    },
    {"run": {"script": "benchmarks/scan.py", "args": ["--out", "/home/user/.bashrc"]}},
    {"run": {"module": "mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints", "args": "--preset ci"}},
]


@pytest.mark.parametrize("fields", EVIL, ids=range(len(EVIL)))
def test_reproduce_refuses_what_no_registered_runner_is(root, fields, capsys, monkeypatch):
    _with_entry(root, **{"command": "python -m x --preset ci", **fields})
    ran = []
    monkeypatch.setattr(cli._main.subprocess, "run", lambda *a, **k: ran.append(a))
    code, _, stderr = _main(["reproduce"], capsys)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 1 and ran == [], ran  # nothing ran, not even the good entries: checked before anything starts
    assert len(lines) == 1 and "refusing to run" in lines[0] and "registered runners" in lines[0], lines


def test_reproduce_runs_the_registered_runner_module_with_its_arguments(root, capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(cli._main.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    code, out, _ = _main(["reproduce"], capsys)
    assert code == 0
    entries = {e.name: e for e in manifest.load()}
    want = {tuple([sys.executable, "-m", e.run["module"], *e.run["args"]]) for e in entries.values() if e.run}
    assert {tuple(c) for c in calls} == want and len(calls) == len(want) >= 1
    # a runner module, or the grid command of declared experiments (what their bundles record)
    assert all(c[1] == "-m" and ("runners" in c[2] or c[2:4] == ["mamba_recall", "grid"]) for c in calls)
    assert "+ python -m mamba_recall.chapters." in out and "+ python -m mamba_recall grid " in out


def test_every_committed_run_is_a_registered_runner_that_passes_the_check():
    """The committed manifest stores what reproduce runs as data (runner module and arguments), and all of it
    passes the check that a tampered manifest fails."""
    from mamba_recall.runners import experiment_runners

    entries = manifest.load()
    runs = manifest.reproduce_runs(entries, ["bench", *experiment_runners()])
    checked = [manifest.checked_argv(r, c) for c, r in runs if not manifest.needs_gpu(c)]
    assert len(checked) >= 20
    assert all(
        e.run is not None for e in entries if e.kind in ("bundle", "checkpoint") and not manifest.needs_gpu(e.command)
    )
