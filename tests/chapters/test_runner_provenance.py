"""Every runner's command line records one git state, taken before it writes anything: ``main`` of every module in
a chapter's ``runners`` package is decorated with ``results.command_provenance()``. Without it a runner that writes an
intermediate checkpoint (``ch4_train``: every ``checkpoint_every`` steps) rewrote a tracked file before its final
sidecar took the git state, so the committed S-model checkpoints read as made from a dirty tree."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from mamba_recall import results
from mamba_recall.runstore import JobConfig

CHAPTERS = Path(__file__).resolve().parents[2] / "src" / "mamba_recall" / "chapters"


def _decorators(path: Path) -> list[str] | None:
    """The decorators of the module's ``main``; a ``main = runner_main(...)`` counts as decorated with
    ``command_provenance()`` (:func:`mamba_recall.experiment.runner_main` decorates the ``main`` it makes, tested
    below)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            return [ast.unparse(d) for d in node.decorator_list]
        if (
            isinstance(node, ast.Assign)
            and [ast.unparse(t) for t in node.targets] == ["main"]
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) == "runner_main"
        ):
            return ["command_provenance()"]
    return None


def test_every_runner_main_takes_one_provenance_for_the_command():
    runners = {f"{p.parts[-3]}.{p.stem}": _decorators(p) for p in sorted(CHAPTERS.glob("ch*/runners/[!_]*.py"))}
    with_main = {name: decs for name, decs in runners.items() if decs is not None}
    assert len(with_main) >= 15, sorted(with_main)
    missing = sorted(name for name, decs in with_main.items() if "command_provenance()" not in decs)
    assert not missing, f"runners whose main does not take one provenance: {missing}"


def test_a_decorated_command_records_the_state_from_before_its_first_write(tmp_path, monkeypatch):
    states = iter(
        [{"commit": "abc", "status": "", "code": ""}, {"commit": "abc", "status": " M results/a.pt", "code": ""}]
    )
    monkeypatch.setattr(results._records, "_git_state", lambda: next(states))

    @results.command_provenance()
    def main():
        results.save_checkpoint(tmp_path / "a.pt", {"w": 1}, {}, command="c")  # an intermediate checkpoint
        results.save_checkpoint(tmp_path / "a.pt", {"w": 2}, {}, command="c")  # the final one: same git state

    main()
    assert json.loads((tmp_path / "a.json").read_text())["provenance"]["git_dirty"] is False


def test_a_runner_main_made_by_runner_main_runs_its_grid_inside_one_provenance(monkeypatch):
    """``main = runner_main(EXPERIMENT, preset)``: the experiment's grid command under the runner's own command,
    ``--preset`` defaulting to the given one, run inside the command's one git state."""
    from mamba_recall import experiment
    from mamba_recall.context import current

    state = {"commit": "abc", "status": "", "code": ""}
    monkeypatch.setattr(results._records, "_git_state", lambda: state)
    seen = []

    def grid_command(argv, *, name, prog, default_preset):
        seen.append((argv, name, prog, default_preset, current().command_git))
        return 0

    monkeypatch.setattr(experiment, "grid_command", grid_command)
    main = experiment.runner_main("ch1_checkpoints", "paper")
    assert main(["--smoke"]) == 0
    prog = "python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints"
    assert seen == [(["--smoke"], "ch1_checkpoints", prog, "paper", state)]
    assert main.__name__ == main.__qualname__ == "main"
    assert "grid ch1_checkpoints --preset P" in main.__doc__ and "default preset ``paper``" in main.__doc__
    assert current().command_git is None  # the state is the command's only


@dataclass(frozen=True, kw_only=True)
class CheckpointAt(JobConfig):
    """The job config of :func:`write_two_checkpoints`: the checkpoint file ``out``."""

    out: str


def write_two_checkpoints(config: CheckpointAt, seed: int) -> dict:
    """A run-store job that writes an intermediate and a final checkpoint, as ch4_edge's do."""
    out = Path(config.out)
    results.save_checkpoint(out, {"w": seed}, {}, command="c")
    results.save_checkpoint(out, {"w": seed + 1}, {}, command="c")
    return {"ok": 1}


def test_a_run_store_job_records_its_grid_commands_state_not_its_own(tmp_path, monkeypatch):
    """A worker process (loky or Ray) is not inside the grid command's ``command_provenance``: the driver hands its
    state to each job, so a job's checkpoints do not read the files earlier jobs of the grid wrote as a dirty tree."""
    from mamba_recall import runstore

    monkeypatch.setattr(
        results._records, "_git_state", lambda: {"commit": "abc", "status": " M results/x.pt", "code": ""}
    )
    job = runstore.make_job("demo.ckpt", CheckpointAt(out=str(tmp_path / "a.pt")), 0)
    status, _ = runstore._store._compute(
        "test_runner_provenance:write_two_checkpoints", job, 1, {"commit": "abc", "status": "", "code": ""}
    )
    assert status == "done"
    assert json.loads((tmp_path / "a.json").read_text())["provenance"]["git_dirty"] is False
    # no state handed over: its own, now
    runstore._store._compute("test_runner_provenance:write_two_checkpoints", job, 1)
    assert json.loads((tmp_path / "a.json").read_text())["provenance"]["git_dirty"] is True
