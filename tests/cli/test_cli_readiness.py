"""The command line before it starts anything (issue: the library and its command line outside a checkout, and
JupyterLab): ``--version``; every command that needs the book's files stops with one line when there is no
checkout; a notebook command without the ``book`` extra, or with a scan backend this machine cannot run, stops with
one line before any kernel starts (no progress bar); ``plan`` prints no line wider than 100 characters; ``lab``
opens JupyterLab on copies of ``book/`` under ``_build/lab`` (never ``book/`` itself), with ``--allow-root`` as
root. Nothing here writes into the checkout: the lab folder is a temporary one."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

import mamba_recall
from mamba_recall import cli, paths, plan
from mamba_recall.cli import _main

ROOT = Path(__file__).resolve().parents[2]


def _never(*args, **kwargs):
    raise AssertionError("the command started although it should have stopped first")


def _one_line(captured) -> str:
    lines = [line for line in (captured.out + captured.err).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    return lines[0]


# --------------------------------------------------------------------------- --version


def test_version_is_printed_and_is_the_package_s(capsys):
    assert mamba_recall.__version__ == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"mamba_recall {mamba_recall.__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "mamba_recall", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == f"mamba_recall {mamba_recall.__version__}"


# --------------------------------------------------------------------------- no checkout: one line, nothing started


@pytest.mark.parametrize(
    "argv, needed",
    [
        (["run", "0"], "_toc.yml"),
        (["book"], "_toc.yml"),
        (["refresh"], "_toc.yml"),
        (["check-outputs"], "_toc.yml"),
        (["reproduce"], "results/manifest.json"),
        (["manifest"], "results/manifest.json"),
        (["manifest", "--write"], "results/manifest.json"),
        (["plan"], "results/runs"),
        (["lab"], "book/"),
    ],
)
def test_every_checkout_command_stops_with_one_line_without_a_checkout(argv, needed, monkeypatch, capsys):
    monkeypatch.setattr(paths, "CHECKOUT_FOUND", False)
    for name in ("execute", "build_book", "refresh_committed_outputs", "reproduce", "lab", "check_outputs"):
        monkeypatch.setattr(_main, name, _never)
    monkeypatch.setattr(plan, "plan", _never)
    assert cli.main(argv) == 1
    line = _one_line(capsys.readouterr())
    assert line.startswith(f"error: no checkout of the Mamba recall book found for {needed} ")
    assert "set MAMBA_RECALL_ROOT=" in line


# --------------------------------------------------------------------------- the book extra, the backend


@pytest.mark.parametrize("command", [["run", "0"], ["book"], ["refresh"], ["lab"]])
def test_a_missing_book_extra_is_named_before_anything_starts(command, monkeypatch, capsys):
    for module in ("papermill", "jupyterlab"):
        monkeypatch.setitem(sys.modules, module, None)  # find_spec then says "not installed"
    for name in ("execute", "build_book", "refresh_committed_outputs", "lab"):
        monkeypatch.setattr(_main, name, _never)
    assert cli.main(command) == 1
    line = _one_line(capsys.readouterr())  # no progress bar: nothing ran
    missing = "jupyterlab" if command == ["lab"] else "papermill"
    assert line == (
        f"error: `mamba-recall {command[0]}` needs the book extra, and {missing} is not installed here: "
        "pip install 'mamba_recall[book]' (in a checkout: pip install -e '.[book]')."
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_mamba_ssm_backend_on_a_cpu_stops_run_with_one_true_line(monkeypatch, capsys):
    monkeypatch.setattr(_main, "execute", _never)
    assert cli.main(["run", "0", "--backend", "mamba_ssm"]) == 1
    line = _one_line(capsys.readouterr())
    assert line.startswith("error: backend='mamba_ssm'") and "runs only on a CUDA machine" in line
    assert "pip install mamba-ssm causal-conv1d --no-build-isolation" in line
    assert "pip install 'mamba_recall[gpu]'" not in line  # no package index has mamba_recall
    assert "backend='fused'" in line


def test_a_backend_error_in_a_notebook_is_its_one_line(tmp_path):
    """Under papermill (``-p backend mamba_ssm`` on a CPU machine) the cell's error is the message, not a
    20-line traceback: :class:`BackendUnavailableError` renders as one line in IPython."""
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from mamba_recall.scan import BackendUnavailableError\n"
            "raise BackendUnavailableError('backend=mamba_ssm cannot run here; pick backend=fused')"
        )
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    with pytest.raises(PapermillExecutionError) as info:
        papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"), progress_bar=False)
    assert info.value.ename == "BackendUnavailableError"
    assert info.value.traceback == ["BackendUnavailableError: backend=mamba_ssm cannot run here; pick backend=fused"]


# --------------------------------------------------------------------------- plan's width


@pytest.mark.parametrize("preset", ["cpu-hours", "ci"])
def test_plan_prints_no_line_wider_than_100_and_every_command_whole(preset):
    table = plan.plan(preset)
    text = plan.format_plan(table, preset)
    assert max(len(line) for line in text.splitlines()) <= plan.WIDTH == 100
    joined = re.sub(r" \\\n\s+", " ", text)  # the wrapped commands, joined back as a shell would
    for command in table[table.note == ""].command:
        assert command in joined, command
    for phrase in (f"no run-store grid at preset {preset!r}", f"jobs at preset {preset!r}"):
        assert phrase in text
    assert "--estimate measures the CPU-hours left" in text


# --------------------------------------------------------------------------- make lab


def test_lab_opens_copies_of_the_book_never_book_itself(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(_main, "BUILD_DIR", tmp_path / "_build")
    monkeypatch.setattr(
        _main.subprocess, "run", lambda argv, **kw: calls.append(argv) or subprocess.CompletedProcess(argv, 0)
    )
    assert cli.main(["lab", "--no-browser", "--port", "8899"]) == 0
    (argv,) = calls
    lab_dir = tmp_path / "_build" / "lab"
    assert argv[:3] == [sys.executable, "-m", "jupyterlab"] and f"--notebook-dir={lab_dir}" in argv
    assert not any(a.startswith("--notebook-dir") and "book" in Path(a.split("=", 1)[1]).parts for a in argv)
    assert argv[-3:] == ["--no-browser", "--port", "8899"]
    committed = sorted(p.relative_to(ROOT / "book") for p in (ROOT / "book").rglob("*.ipynb"))
    assert committed and sorted(p.relative_to(lab_dir) for p in lab_dir.rglob("*.ipynb")) == committed
    assert "book/ itself is never written" in capsys.readouterr().out
    # the Makefile's lab target is this command (and no longer JupyterLab on book/)
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "-m mamba_recall lab $(LAB_ARGS)" in recipe and "--notebook-dir=book" not in recipe


def test_lab_adds_allow_root_only_as_root(monkeypatch):
    lab_dir = Path("/somewhere/_build/lab")
    assert "--allow-root" in _main.lab_command(lab_dir, [], as_root=True)
    assert "--allow-root" not in _main.lab_command(lab_dir, [], as_root=False)
    assert _main.lab_command(lab_dir, ["--allow-root"], as_root=True).count("--allow-root") == 1
    monkeypatch.setattr(_main.os, "geteuid", lambda: 0, raising=False)
    assert "--allow-root" in _main.lab_command(lab_dir, [])
    monkeypatch.setattr(_main.os, "geteuid", lambda: 1000, raising=False)
    assert "--allow-root" not in _main.lab_command(lab_dir, [])


def test_lab_copies_keep_a_reader_s_changes_until_the_committed_page_changes(tmp_path):
    source, lab_dir = tmp_path / "book", tmp_path / "lab"
    (source / "ch" / ".ipynb_checkpoints").mkdir(parents=True)
    (source / "ch" / "a.ipynb").write_text("committed a")
    (source / "ch" / "b.ipynb").write_text("committed b")
    (source / "ch" / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_text("never copied")
    assert _main.prepare_lab(source, lab_dir) == {"new": ["ch/a.ipynb", "ch/b.ipynb"], "updated": [], "kept": []}
    assert not (lab_dir / "ch" / ".ipynb_checkpoints").exists()
    (lab_dir / "ch" / "a.ipynb").write_text("a after Run All")  # the reader's exploration (autosave)
    (source / "ch" / "b.ipynb").write_text("committed b, version 2")  # a git pull
    done = _main.prepare_lab(source, lab_dir)
    assert done == {"new": [], "updated": ["ch/b.ipynb"], "kept": ["ch/a.ipynb"]}
    assert (lab_dir / "ch" / "a.ipynb").read_text() == "a after Run All"
    assert (lab_dir / "ch" / "b.ipynb").read_text() == "committed b, version 2"
    assert (source / "ch" / "a.ipynb").read_text() == "committed a"  # book/ is only read
    assert _main.prepare_lab(source, lab_dir, fresh=True)["updated"] == ["ch/a.ipynb", "ch/b.ipynb"]
    assert (lab_dir / "ch" / "a.ipynb").read_text() == "committed a"


# --------------------------------------------------------------------------- the user's cache folder


def test_user_cache_dir_follows_each_platform_s_convention(tmp_path):
    home = Path.home()
    assert paths.user_cache_dir("numba", env={}, platform="linux") == home / ".cache" / "mamba_recall" / "numba"
    assert paths.user_cache_dir("numba", env={"XDG_CACHE_HOME": str(tmp_path)}, platform="linux") == (
        tmp_path / "mamba_recall" / "numba"
    )
    assert (
        paths.user_cache_dir(env={"XDG_CACHE_HOME": "relative"}, platform="linux") == home / ".cache" / "mamba_recall"
    )
    assert paths.user_cache_dir(env={}, platform="darwin") == home / "Library" / "Caches" / "mamba_recall"
    assert paths.user_cache_dir(env={"LOCALAPPDATA": str(tmp_path)}, platform="win32") == tmp_path / "mamba_recall"
    assert paths.PACKAGE_IN_CHECKOUT  # this checkout's editable install keeps the kernels in scan/__pycache__
