"""Every runner's command line records one git state, taken before it writes anything: ``main`` of every module in
``mamba_recall.experiments`` is decorated with ``results.command_provenance()``. Without it a runner that writes an
intermediate checkpoint (``ch4_train``: every ``checkpoint_every`` steps) rewrote a tracked file before its final
sidecar took the git state, so the committed S-model checkpoints read as made from a dirty tree."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from mamba_recall import results

EXPERIMENTS = Path(__file__).resolve().parents[2] / "src" / "mamba_recall" / "experiments"


def _decorators(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            return [ast.unparse(d) for d in node.decorator_list]
    return None


def test_every_runner_main_takes_one_provenance_for_the_command():
    runners = {p.stem: _decorators(p) for p in sorted(EXPERIMENTS.glob("ch*.py"))}
    with_main = {name: decs for name, decs in runners.items() if decs is not None}
    assert len(with_main) >= 15, sorted(with_main)
    missing = sorted(name for name, decs in with_main.items() if "command_provenance()" not in decs)
    assert not missing, f"runners whose main does not take one provenance: {missing}"


def test_a_decorated_command_records_the_state_from_before_its_first_write(tmp_path, monkeypatch):
    states = iter(
        [{"commit": "abc", "status": "", "code": ""}, {"commit": "abc", "status": " M results/a.pt", "code": ""}]
    )
    monkeypatch.setattr(results, "_git_state", lambda: next(states))

    @results.command_provenance()
    def main():
        results.save_checkpoint(tmp_path / "a.pt", {"w": 1}, {}, command="c")  # an intermediate checkpoint
        results.save_checkpoint(tmp_path / "a.pt", {"w": 2}, {}, command="c")  # the final one: same git state

    main()
    assert json.loads((tmp_path / "a.json").read_text())["provenance"]["git_dirty"] is False
