"""Faults injected into the recording of verdicts (``claims.core.record_verdict``): a full disk while a verdict is
re-recorded must leave the previous record byte-identical (atomic replacement, one clear error), and a process
whose locale is not UTF-8 must record and read back non-ASCII text. Every file goes to ``tmp_path``."""

from __future__ import annotations

import builtins
import errno
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mamba_recall import claims
from mamba_recall.claims import core

ROOT = Path(__file__).resolve().parents[2]


def _claim():
    return next(c for c in sorted(claims.REGISTRY.values(), key=lambda c: c.id) if c.measure is not None)


class _FullDisk:
    """A file opened for writing on a disk that fills up: the first half of what is written lands, then
    ``OSError(ENOSPC)`` (as ``write(2)`` does when the device is full)."""

    def __init__(self, fh):
        self._fh = fh

    def write(self, data):
        self._fh.write(data[: len(data) // 2])
        self._fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()
        return False


def _fill_disk_under(monkeypatch, folder: Path) -> None:
    """Every file opened for writing under ``folder`` (by ``open`` or ``Path.write_text``) hits a full disk."""
    real_open = io.open

    def fake_open(file, mode="r", *args, **kwargs):
        fh = real_open(file, mode, *args, **kwargs)
        if any(m in mode for m in "wax+") and Path(os.fspath(file)).resolve().is_relative_to(folder.resolve()):
            return _FullDisk(fh)
        return fh

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)


def test_rerecording_on_a_full_disk_keeps_the_previous_verdict(tmp_path, monkeypatch):
    """Before: ``path.write_text`` truncated the previous verdict, wrote half of the new one and raised a raw
    ``OSError: [Errno 28]``; the scorecard then read a corrupt record. Now the new record goes to a temporary file
    beside it and replaces the old one only once complete: the old record is byte-identical, no temporary file is
    left, and the error is one line naming the folder, the kept record and the fix."""
    claim = _claim()
    path = core.record_verdict(core.not_run_verdict(claim, "first reason"), tmp_path)
    before = path.read_bytes()
    _fill_disk_under(monkeypatch, tmp_path)
    with pytest.raises(OSError) as info:
        core.record_verdict(core.not_run_verdict(claim, "second reason, a longer one " * 50), tmp_path)
    monkeypatch.undo()
    assert path.read_bytes() == before, "the full disk damaged the previous verdict"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name], "a temporary file was left behind"
    message = str(info.value)
    assert info.value.errno == errno.ENOSPC
    assert "no space left to record the verdict" in message and str(path) in message and "unchanged" in message
    assert "Free some disk space" in message and "\n" not in message
    assert core.load_verdicts(tmp_path)[claim.id].reason == "first reason"


def test_first_recording_on_a_full_disk_leaves_no_file(tmp_path, monkeypatch):
    """Before: a 0-byte or half-written record that ``load_verdicts`` then refused as corrupt."""
    _fill_disk_under(monkeypatch, tmp_path)
    with pytest.raises(OSError, match="nothing was written to"):
        core.record_verdict(core.not_run_verdict(_claim(), "a reason"), tmp_path)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
    assert core.load_verdicts(tmp_path) == {}


def test_failed_rename_keeps_the_previous_verdict(tmp_path, monkeypatch):
    """Any other failure (here the rename) also removes the temporary file and keeps the old record."""
    claim = _claim()
    path = core.record_verdict(core.not_run_verdict(claim, "first reason"), tmp_path)
    before = path.read_bytes()

    def refuse(src, dst):
        raise PermissionError(errno.EACCES, "injected", str(dst))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError, match="injected"):
        core.record_verdict(core.not_run_verdict(claim, "second reason"), tmp_path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


_LOCALE_SCRIPT = textwrap.dedent(
    """
    import locale, sys
    from pathlib import Path
    from mamba_recall import claims
    from mamba_recall.claims import core

    assert locale.getpreferredencoding(False).lower().replace("-", "") not in ("utf8",), locale.getpreferredencoding()
    folder = Path(sys.argv[1])
    claim = next(c for c in sorted(claims.REGISTRY.values(), key=lambda c: c.id) if c.measure is not None)
    path = core.record_verdict(core.not_run_verdict(claim, "needs a GPU ✅ κ = 4 — Δ"), folder)
    back = core.load_verdicts(folder)[claim.id]
    assert back.reason == "needs a GPU ✅ κ = 4 — Δ", back.reason
    print(path)
    """
)


def test_record_verdict_in_a_non_utf8_locale(tmp_path):
    """Before: with ``LANG=C`` (and UTF-8 mode off) ``write_text`` encoded with ASCII: ``UnicodeEncodeError`` on
    ✅ or κ, and a 0-byte verdict file left behind. Now every verdict is written and read as UTF-8, whatever the
    locale."""
    script = tmp_path / "record.py"
    script.write_text(_LOCALE_SCRIPT, encoding="utf-8")
    out = tmp_path / "scorecard"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONIOENCODING"))}
    env.update(LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONIOENCODING="", PYTHONCOERCECLOCALE="0")
    proc = subprocess.run([sys.executable, str(script), str(out)], cwd=ROOT, env=env, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    written = list(out.glob("*.json"))
    assert len(written) == 1 and written[0].stat().st_size > 0
    assert "✅ κ = 4" in written[0].read_text(encoding="utf-8")
    assert not list(out.glob(".*.tmp"))
