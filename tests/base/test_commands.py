"""Every runner command the book and the library print names a runner that exists: ``python -m
mamba_recall.chapters.<chapter>.runners.<name>`` in the library's strings and docstrings, the book's pages and the
notebooks' sources (and the README). The commands are written out where a reader meets them; this keeps them from
naming a module that moved or never was (as the chapters' folders moved 216 of them)."""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

from mamba_recall.runners import experiment_runners, runner_name

ROOT = Path(__file__).resolve().parents[2]
#: a chapter's runner command (a placeholder such as ``runners.<name>``, followed by ``<``, is not one)
COMMAND = re.compile(r"python -m (mamba_recall\.chapters[\w.]*)(<?)")
#: the runner the contributing page's worked example has the reader write (``tests/book/test_contributing.py``)
EXAMPLE = "ch2_toy"


def _texts():
    for path in sorted((ROOT / "src").rglob("*.py")):
        yield path, path.read_text()
    for path in sorted((ROOT / "book").rglob("*.md")):
        yield path, path.read_text()
    for path in sorted((ROOT / "book").rglob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        yield path, "\n".join("".join(c["source"]) for c in cells)
    yield ROOT / "README.md", (ROOT / "README.md").read_text()


def test_every_written_runner_command_names_a_runner():
    runners = set(experiment_runners())
    bad, seen = [], 0
    for path, text in _texts():
        for match in COMMAND.finditer(text):
            module, placeholder = match.group(1).rstrip("."), match.group(2)
            name = runner_name(module)
            if placeholder or name == EXAMPLE:
                continue
            seen += 1
            if name is None or name not in runners:
                bad.append(f"{path.relative_to(ROOT)}: `python -m {module}` names no runner")
            elif not hasattr(importlib.import_module(module), "main"):
                bad.append(f"{path.relative_to(ROOT)}: {module} has no main")
    assert seen > 100, seen  # the pattern still finds the commands
    assert not bad, "\n".join(sorted(set(bad)))


def test_every_built_runner_command_names_a_runner():
    """``runner_command("chN_name")`` is how library code spells a command; a name that is no runner's raises only
    when that line runs (a not-run text, a load error), so each literal name is checked here."""
    runners = set(experiment_runners())
    bad, seen = [], 0
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "runner_command":
                seen += 1
                arg = node.args[0] if node.args else None
                if not (isinstance(arg, ast.Constant) and arg.value in runners):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)} names no runner")
    assert seen > 50, seen
    assert not bad, "\n".join(bad)
