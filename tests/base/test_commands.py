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
            if placeholder:
                continue
            seen += 1
            if name is None or name not in runners:
                bad.append(f"{path.relative_to(ROOT)}: `python -m {module}` names no runner")
            elif not hasattr(importlib.import_module(module), "main"):
                bad.append(f"{path.relative_to(ROOT)}: {module} has no main")
    assert seen > 100, seen  # the pattern still finds the commands
    assert not bad, "\n".join(sorted(set(bad)))


#: ``--parts a b`` after a written command (up to the end of its line, a backtick or a quote)
PARTS = re.compile(r"--parts((?:\s+[a-z][\w]*)+)")


def test_every_written_command_with_parts_names_parts_its_runner_runs():
    """A written ``--parts`` names parts of that runner: a part another runner owns (``PART_RUNNER``) is refused by
    the runner's parser, so the command a reader copies would stop (05_table1 named ch1_training's for Table 1's)."""
    from mamba_recall.chapters.ch1_gradient_dynamics.runners.cpu_hours_jobs import PART_RUNNER
    from mamba_recall.chapters.ch2_hashing_scaling.runners.figs_cpu import PART_RUNNER as CH2_PART_RUNNER

    owner = {**PART_RUNNER, **CH2_PART_RUNNER}
    bad, seen = [], 0
    for path, text in _texts():
        for match in COMMAND.finditer(text):
            name = runner_name(match.group(1).rstrip("."))
            rest = re.split(r"[`\n\"']", text[match.end() :], maxsplit=1)[0]
            for parts in PARTS.findall(rest):
                for part in parts.split():
                    if part in owner:
                        seen += 1
                        if owner[part] != name:
                            bad.append(f"{path.relative_to(ROOT)}: --parts {part} is {owner[part]}'s, not {name}'s")
    assert seen > 10, seen  # the pattern still finds them
    assert not bad, "\n".join(sorted(set(bad)))


def test_every_built_runner_command_names_a_runner():
    """``runner_command("chN_name")`` is how library code spells a command; a name that is no runner's raises only
    when that line runs (a not-run text, a load error), so each literal name is checked here (and Chapter 1's table of
    which runner runs each run-store part, whose names are passed as variables)."""
    from mamba_recall.chapters.ch1_gradient_dynamics.runners.cpu_hours_jobs import PART_RUNNER
    from mamba_recall.chapters.ch2_hashing_scaling.runners.figs_cpu import PART_RUNNER as CH2_PART_RUNNER

    runners = set(experiment_runners())
    bad, seen = [], 0
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "runner_command":
                seen += 1
                arg = node.args[0] if node.args else None
                if not isinstance(arg, ast.Constant):
                    continue  # a name computed at run time (a part's runner): runner_command raises on a bad one
                if arg.value not in runners:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)} names no runner")
    assert seen > 50, seen
    assert not bad, "\n".join(bad)
    assert set(PART_RUNNER.values()) | set(CH2_PART_RUNNER.values()) <= runners


def test_a_merged_runner_s_module_names_the_runner_it_joined():
    """``ch2_figs_cpu`` became parts of ``ch2_scaling`` and ``ch2_multihead`` (one runner per result family): run as a
    command, its module (the home of the job function the run records name) says which runner to run instead, and
    ``reproduce --only`` refuses its old name, listing the runners."""
    import subprocess
    import sys

    from mamba_recall.runners import runner_command

    fig = "mamba_recall.chapters.ch2_hashing_scaling.runners.figs_cpu"
    out = subprocess.run(
        [sys.executable, "-m", "mamba_recall", "reproduce", "--only", "ch2_figs_cpu"], capture_output=True, text=True
    )
    assert (
        out.returncode != 0 and "unknown runner(s) ch2_figs_cpu; known:" in out.stderr and "ch2_scaling" in out.stderr
    )
    out = subprocess.run([sys.executable, "-m", fig, "--preset", "cpu-hours"], capture_output=True, text=True)
    assert out.returncode != 0 and f"run {runner_command('ch2_scaling')} (parts fig7" in out.stderr
    assert f"or {runner_command('ch2_multihead')} (parts fig8, thm5) with the same arguments" in out.stderr


def test_every_committed_result_s_command_names_parts_its_runner_runs():
    """The runners that share a run-store grid (Chapter 1's ``cpu_hours``, Chapter 2's ``figs_cpu``) each run only
    their own parts (``PART_RUNNER``); the command that remakes each committed result, as run today, names only parts
    of its runner, so ``make reproduce`` cannot stop on a part that moved to another runner."""
    from mamba_recall import manifest
    from mamba_recall.chapters.ch1_gradient_dynamics.runners.cpu_hours_jobs import PART_RUNNER as CH1
    from mamba_recall.chapters.ch2_hashing_scaling.runners.figs_cpu import PART_RUNNER as CH2
    from mamba_recall.chapters.ch2_hashing_scaling.runners.scaling import PARTS as ENSEMBLE_PARTS

    from mamba_recall.experiment import experiment_named

    owner = {**CH1, **CH2, **{p: "ch2_scaling" for p in ENSEMBLE_PARTS}}
    checked = grids = 0
    for entry in manifest.load():
        runner, flags = manifest.parse_command(entry.command)
        for part in flags.get("--parts", ()):
            assert owner.get(part) == runner, f"{entry.name}: --parts {part} is {owner.get(part)}'s, not {runner}'s"
            checked += 1
        if entry.kind == "bundle" and entry.command.startswith("python -m mamba_recall grid "):
            # a declared experiment's grid command: the one experiment whose bundle this is, its command exactly
            experiment = experiment_named(runner)
            assert entry.name == experiment.bundle(entry.preset), (entry.name, entry.command)
            assert entry.command == experiment.command(entry.preset), entry.name
            grids += 1
    assert checked + grids >= 20 and grids >= 30, (checked, grids)
