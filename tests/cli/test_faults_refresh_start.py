"""Faults injected into ``python -m mamba_recall refresh`` beyond ``test_faults_refresh.py``: Ctrl-C (SIGINT to the
process) while the kernel starts or while the command loads, and a full disk (ENOSPC) while the execution or the
replacement notebook is written. Each must stop within a second or two with one line, the committed notebook
byte-identical. The notebooks are temporary copies (never the committed ``book/``); the kernels' slow start comes
from an IPython startup file in a temporary ``IPYTHONDIR``."""

from __future__ import annotations

import builtins
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from test_faults_verdicts import _FullDisk  # a file on a full disk: one helper for both tests

from mamba_recall import cli
from mamba_recall.paths import BUILD_DIR, REPO_ROOT

BOOK = REPO_ROOT / "book"


def _notebook(path: Path, second_cell: str = "print(1 + 1)") -> bytes:
    nb = nbformat.v4.new_notebook()
    first = nbformat.v4.new_code_cell("print('fresh')")
    first.outputs = [nbformat.v4.new_output("stream", name="stdout", text="committed output\n")]
    nb.cells = [first, nbformat.v4.new_code_cell(second_cell)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path.read_bytes()


def _book_bytes() -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(BOOK.rglob("*.ipynb"))}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").split()[2] != "Z"
    except OSError:
        return True


def _refresh(nb: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mamba_recall", "refresh", str(nb)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=env,
    )


def test_refresh_interrupted_while_its_kernel_starts(tmp_path):
    """Before: nbclient replaces the SIGINT handler while it starts the kernel and on Ctrl-C only queues a graceful
    shutdown, so ``refresh`` went on waiting for the kernel (still running 60 s after Ctrl-C in a probe).
    Now papermill runs in a worker thread, the main thread acts on Ctrl-C at once: the kernel is killed, one line
    names what was left, the committed notebook (and ``book/``) is untouched."""
    nb = tmp_path / "slow_start.ipynb"
    before, book_before = _notebook(nb), _book_bytes()
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    kernel_pid = tmp_path / "kernel.pid"
    (startup / "00-slow.py").write_text(
        f"import os, time\nopen({str(kernel_pid)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n",
        encoding="utf-8",
    )
    proc = _refresh(nb, env={**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")})
    deadline = time.monotonic() + 120
    while not (kernel_pid.exists() and kernel_pid.read_text(encoding="utf-8").strip()):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"the kernel never started its startup file: {proc.communicate()[1][-2000:]}")
        time.sleep(0.1)
    pid = int(kernel_pid.read_text(encoding="utf-8"))
    time.sleep(0.5)  # inside the startup file: the kernel has not answered kernel_info yet
    sent = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"refresh did not stop within 30 s of Ctrl-C during the kernel's start:\n{err[-2000:]}")
    took = time.monotonic() - sent
    assert took < 5, f"refresh took {took:.1f} s to act on Ctrl-C during the kernel's start"
    assert proc.returncode == 1, err
    assert nb.read_bytes() == before and _book_bytes() == book_before
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "interrupted" in lines[0] and "unchanged" in lines[0], err
    assert "Traceback" not in err, err
    assert not list(tmp_path.glob(".*refresh-tmp"))
    stop = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < stop:
        time.sleep(0.1)
    assert not _alive(pid), "the kernel outlived the interrupted refresh"


def test_interrupt_while_the_command_loads_gives_one_line(tmp_path):
    """Before: Ctrl-C in the first seconds (the CLI importing torch) printed a KeyboardInterrupt traceback."""
    nb = tmp_path / "any.ipynb"
    before = _notebook(nb)
    proc = _refresh(nb)
    time.sleep(1.0)  # python -m mamba_recall takes seconds to import the CLI (torch, papermill)
    sent = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 5
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "interrupted" in lines[0] and ("nothing" in lines[0] or "unchanged" in lines[0]), err
    assert nb.read_bytes() == before


def _fill_disk_for(monkeypatch, hit) -> None:
    """Files opened for writing whose path satisfies ``hit`` are on a full disk (``open`` and ``io.open``)."""
    real_open = io.open

    def fake_open(file, mode="r", *args, **kwargs):
        fh = real_open(file, mode, *args, **kwargs)
        if isinstance(file, (str, os.PathLike)) and any(m in mode for m in "wax+") and hit(Path(os.fspath(file))):
            return _FullDisk(fh)
        return fh

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)


@pytest.mark.parametrize("where", ["scratch execution", "replacement beside the notebook"])
def test_refresh_on_a_full_disk_gives_one_line_and_keeps_the_notebook(tmp_path, monkeypatch, capsys, where):
    """Before: the OSError [Errno 28] of papermill's write (or of the temporary file beside the notebook) came out
    of ``refresh`` as a raw traceback. Now: one line naming the notebook (unchanged), where the disk was full and the
    fix; no temporary file left beside the notebook."""
    nb = tmp_path / "full.ipynb"
    before = _notebook(nb)
    scratch = BUILD_DIR / "refresh" / nb.relative_to(nb.anchor)
    if where == "scratch execution":
        _fill_disk_for(monkeypatch, lambda p: p.resolve() == scratch.resolve())
    else:
        _fill_disk_for(monkeypatch, lambda p: p.name.endswith(".refresh-tmp"))
    assert cli.main(["refresh", str(nb)]) == 1
    monkeypatch.undo()
    assert nb.read_bytes() == before
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert "no space left on the device" in lines[0] and "unchanged" in lines[0] and "Free some disk space" in lines[0]
    assert str(scratch.parent if where == "scratch execution" else tmp_path) in lines[0], lines[0]
    assert "Traceback" not in err
    assert not list(tmp_path.glob(".*refresh-tmp"))
