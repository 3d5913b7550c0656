"""Faults injected into ``python -m mamba_recall refresh``: an interrupt (SIGINT to the process, as Ctrl-C)
and a failing cell must leave the committed notebook byte-identical; only a complete, successful execution
replaces it. The notebooks are temporary copies (never the committed ``book/``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from mamba_recall import cli
from mamba_recall.paths import BUILD_DIR, REPO_ROOT


def _notebook(path: Path, second_cell: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    first = nbformat.v4.new_code_cell("print('fresh')")
    first.outputs = [nbformat.v4.new_output("stream", name="stdout", text="committed output\n")]
    nb.cells = [first, nbformat.v4.new_code_cell(second_cell)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path.read_bytes()


def _scratch(path: Path) -> Path:
    return BUILD_DIR / "refresh" / path.relative_to(path.anchor)


def test_refresh_interrupted_leaves_the_committed_notebook_unchanged(tmp_path):
    nb = tmp_path / "slow.ipynb"
    before = _notebook(nb, "import time\ntime.sleep(120)")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mamba_recall", "refresh", str(nb)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    scratch = _scratch(nb)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until the first cell has run (its output is in the scratch copy)
        if scratch.exists() and "fresh" in scratch.read_text(errors="replace"):
            break
        time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("refresh never executed the first cell")
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert nb.read_bytes() == before, "the interrupted refresh changed the committed notebook"
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "interrupted" in lines[0] and "unchanged" in lines[0], err
    assert "Traceback" not in err, err
    assert not list(tmp_path.glob(".*refresh-tmp")), "a temporary file was left beside the notebook"


def test_refresh_failing_cell_leaves_the_committed_notebook_unchanged(tmp_path, capsys):
    nb = tmp_path / "broken.ipynb"
    before = _notebook(nb, "raise ValueError('injected failure')")
    assert cli.main(["refresh", str(nb)]) == 1
    assert nb.read_bytes() == before
    err = capsys.readouterr().err
    assert "failed (PapermillExecutionError)" in err and str(_scratch(nb)) in err


def test_refresh_replaces_only_on_success(tmp_path):
    nb = tmp_path / "good.ipynb"
    _notebook(nb, "print(1 + 1)")
    assert cli.main(["refresh", str(nb)]) == 0
    outputs = [o.get("text") for cell in nbformat.read(nb, as_version=4).cells for o in cell.outputs]
    assert outputs == ["fresh\n", "2\n"]
    assert not list(tmp_path.glob(".*refresh-tmp"))
