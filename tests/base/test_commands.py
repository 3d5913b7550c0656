"""Every runner command the book and the library print names a runner that exists: ``python -m
mamba_recall.chapters.<chapter>.runners.<name>`` (and every grid command a declared experiment) in the library's
strings and docstrings, the book's pages and the
notebooks' sources (and the README). The commands are written out where a reader meets them; this keeps them from
naming a module that moved or never was (as the chapters' folders moved 216 of them)."""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

from mamba_recall.runners import experiment_runners, runner_module, runner_name

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
        if path == ROOT / "src/mamba_recall/runstore/_migrate.py":
            continue  # the migration's declared history: the commands runners of old names recorded
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
    assert seen > 30, seen  # the pattern still finds the commands (most results now run by their grid command: 40 left)
    assert not bad, "\n".join(sorted(set(bad)))


#: a written grid command and the names after it (a placeholder such as ``<experiment>`` is not one)
GRID = re.compile(r"python -m mamba_recall grid((?: +ch\d+_\w+)+)")


def test_every_written_grid_command_names_declared_experiments():
    """Each ``python -m mamba_recall grid NAME ...`` the book and the library print names declared experiments only
    (a name that is not one stops the command with the list of the declared ones)."""
    from mamba_recall.experiment import experiments

    declared = {e.name for e in experiments()} | {"ch1_orthogonality"}  # + the contributing guide's worked example
    bad, seen = [], 0
    for path, text in _texts():
        for match in GRID.finditer(text):
            for name in match.group(1).split():
                seen += 1
                if name not in declared:
                    bad.append(f"{path.relative_to(ROOT)}: grid {name} is no declared experiment")
    assert seen > 40, seen  # the pattern still finds them
    assert not bad, "\n".join(sorted(set(bad)))


#: ``--parts a b`` after a written command (up to the end of its line, a backtick or a quote)
PARTS = re.compile(r"--parts((?:\s+[a-z][\w]*)+)")


def _declared_parts() -> dict[str, str]:
    """The ``--parts`` names of the old routes (Chapter 1's grid parts, Chapter 2's one-model figures) -> the declared
    experiment each is now, run only by ``python -m mamba_recall grid <experiment>``."""
    from mamba_recall.chapters.ch1_gradient_dynamics.runners.grid_jobs import PARTS as CH1
    from mamba_recall.chapters.ch2_hashing_scaling.runners import figure_grids

    return {**CH1, **{p: figure_grids.experiment_name(p) for p in figure_grids.PARTS}}


def test_every_written_command_with_parts_names_parts_its_runner_runs():
    """A written ``--parts`` after a runner command names that runner's own parts (Chapter 2's ensemble parts), never
    a declared experiment's (a runner given one stops naming the grid command, so the command a reader copies would
    stop): those are written as ``python -m mamba_recall grid <experiment>``."""
    from mamba_recall.chapters.ch2_hashing_scaling.runners.scaling import ENSEMBLE_PARTS

    declared = _declared_parts()
    bad, seen = [], set()
    for path, text in _texts():
        for match in COMMAND.finditer(text):
            name = runner_name(match.group(1).rstrip("."))
            rest = re.split(r"[`\n\"']", text[match.end() :], maxsplit=1)[0]
            for parts in PARTS.findall(rest):
                for part in parts.split():
                    seen.add((name, part))
                    if part in declared:
                        bad.append(f"{path.relative_to(ROOT)}: {name} --parts {part}: write grid {declared[part]}")
                    elif name == "ch2_scaling" and part not in ENSEMBLE_PARTS:
                        bad.append(f"{path.relative_to(ROOT)}: --parts {part} is no part of {name}")
    assert {("ch2_scaling", "grid"), ("ch2_scaling", "ablation")} <= seen, seen  # the runner's docstring: still found
    assert not bad, "\n".join(sorted(set(bad)))


def test_every_built_runner_command_names_a_runner():
    """``runner_command("chN_name")`` is how library code spells a command; a name that is no runner's raises only
    when that line runs (a not-run text, a load error), so each literal name is checked here (and Chapter 1's table of
    the ensembles' runners, whose names are passed as variables)."""
    from mamba_recall.chapters.ch2_hashing_scaling.runners.ensembles import EXPERIMENTS as ENSEMBLE_RUNNERS

    runners = set(experiment_runners())
    bad, seen = [], 0
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("runner_command", "runner_main"):
                seen += 1
                if node.func.id == "runner_main":  # its runner= (default: the experiment's name, checked below)
                    given = [k.value for k in node.keywords if k.arg == "runner"]
                    if not given:
                        continue
                    arg = given[0]
                else:
                    arg = node.args[0] if node.args else None
                if not isinstance(arg, ast.Constant):
                    continue  # a name computed at run time (a part's runner): runner_command raises on a bad one
                if arg.value not in runners:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)} names no runner")
    assert seen > 45, seen  # 50 now (ch4_train's recorded commands are its grid's, Experiment.command)
    assert not bad, "\n".join(bad)
    assert set(ENSEMBLE_RUNNERS) <= runners


def test_every_runner_main_made_by_runner_main_is_its_own_modules_command(capsys):
    """A runner's ``main = runner_main(EXPERIMENT, preset)`` names its command by the experiment (``runner=``
    otherwise): its usage line is ``python -m`` of the runner's own module, so a runner whose experiment is named
    otherwise and that does not say ``runner=`` fails here, not when its ``--help`` first runs."""
    made = []
    for name in experiment_runners():
        module = importlib.import_module(runner_module(name))
        main = module.main
        if getattr(getattr(main, "__wrapped__", None), "__qualname__", "") != "runner_main.<locals>.main":
            continue
        made.append(name)
        try:
            main(["--help"])
        except SystemExit as exc:
            assert exc.code == 0, (name, exc.code)
        usage = capsys.readouterr().out.split()
        assert usage[:4] == ["usage:", "python", "-m", module.__name__], (name, usage[:4])
    assert len(made) >= 11, made  # Chapters 1-4's runners whose command is their one experiment's grid


def _run(module: str, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True)


CH1 = "mamba_recall.chapters.ch1_gradient_dynamics.runners."
CH2 = "mamba_recall.chapters.ch2_hashing_scaling.runners."


def test_a_runner_given_a_declared_experiment_stops_naming_its_grid_command():
    """One route per result: a runner given the part of a declared experiment (``--only fig8``, or ``--parts fig8`` as
    committed pages print it), or a preset at which its work is declared experiments, stops with one line naming the
    exact grid command(s) to run instead (a runner that is a grid: argparse's usage, then that line, status 2), and
    runs nothing; the helper modules of the old routes say the same when run."""
    cases = [
        (
            CH2 + "scaling",
            ["--preset", "cpu-hours", "--parts", "fig8"],
            "grid ch2_fig8 --preset cpu-hours --allow-long",
            1,
        ),
        (CH2 + "scaling", ["--only", "fig7", "tab10"], "grid ch2_fig7 ch2_tab10 --preset cpu-hours --allow-long", 1),
        (CH2 + "scaling", ["--preset", "cpu-hours"], "grid ch2_fig7 ch2_fig10_11 ch2_tab10 --preset cpu-hours", 2),
        (CH2 + "multihead", ["--preset", "cpu-hours"], "grid ch2_fig8 ch2_thm5 --preset cpu-hours --allow-long", 2),
        (
            CH1 + "checkpoints",
            ["--preset", "cpu-hours"],
            "grid ch1_mechanism ch1_table1 ch1_full_mamba ch1_wo ch1_table1_matched ch1_full_onehot --preset cpu-hours",
            2,
        ),
        (CH2 + "figure_grids", [], "grid ch2_fig7 ch2_fig10_11 ch2_fig8 ch2_thm5 ch2_tab10 --preset cpu-hours", 1),
    ]
    for module, args, grid, status in cases:
        out = _run(module, *args, "--store", "/nonexistent-store")
        lines = out.stderr.strip().splitlines()
        assert out.returncode == status, (module, args, out.stderr)
        if status == 1:  # the runner's own line
            assert len(lines) == 1 and lines[0].startswith("error: "), (module, args, lines)
        else:  # argparse's: the usage, then the one line
            assert lines[0].startswith("usage: ") and ": error: " in lines[-1], (module, args, lines)
        assert f"python -m mamba_recall {grid}" in lines[-1], (module, args, lines)
        assert out.stdout == "", (module, args)  # nothing ran


def test_a_runner_that_is_a_grid_has_the_run_store_s_only_and_no_parts_of_its_own():
    """The runner ``ch1_checkpoints`` is its experiment's grid under its own command: ``--only`` (the run store's, which the
    checkpoints' recorded ``--only k1`` is) picks its models; it has no ``--parts``."""
    out = _run(CH1 + "checkpoints", "--help")
    assert out.returncode == 0 and "--only VALUE|FIELD=VALUE" in out.stdout and "--parts" not in out.stdout


def test_every_committed_result_s_command_names_parts_its_runner_runs():
    """The command that remakes each committed result names ``--parts`` only of its runner's own (Chapter 2's
    ensemble parts), never a declared experiment's; a bundle of a declared experiment records its grid command
    exactly, so ``make reproduce`` runs each result by its one route."""
    from mamba_recall import manifest
    from mamba_recall.chapters.ch2_hashing_scaling.runners.scaling import PARTS as ENSEMBLE_PARTS
    from mamba_recall.experiment import experiment_named

    declared = _declared_parts()
    checked = grids = 0
    for entry in manifest.load():
        runner, flags = manifest.parse_command(entry.command)
        for part in flags.get("--parts", ()):
            assert part not in declared, f"{entry.name}: --parts {part} is grid {declared[part]}"
            assert runner == "ch2_scaling" and part in ENSEMBLE_PARTS, f"{entry.name}: --parts {part} of {runner}"
            checked += 1
        if entry.kind == "bundle" and entry.command.startswith("python -m mamba_recall grid "):
            # a declared experiment's grid command: the one experiment whose bundle this is, its command exactly
            experiment = experiment_named(runner)
            assert entry.name == experiment.bundle(entry.preset), (entry.name, entry.command)
            assert entry.command == experiment.command(entry.preset), entry.name
            grids += 1
    assert grids >= 30, (checked, grids)
