"""The run context (``mamba_recall.context``): what a command or a notebook kernel runs under, in one place.

A ``with run_context(...)`` block holds its settings for the block and restores the ones before it however the block
ends; ``enter`` (a notebook's ``setup``) holds them for the rest of the process; a process started inside either
inherits the long-run permission and the smoke folder through its environment. No other module keeps these settings
(an audit below: no ``global`` statement and no write to the context's environment variables outside the module)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mamba_recall import context, longrun, results
from mamba_recall.context import ENV_ALLOW_LONG, ENV_SMOKE_OUTPUTS, RunContext, current, enter, run_context

SRC = Path(context.__file__).resolve().parent


@pytest.fixture(autouse=True)
def _process_context(monkeypatch):
    """Each test starts from a process that inherited nothing (and forgets what ``enter`` set)."""
    monkeypatch.delenv(ENV_ALLOW_LONG, raising=False)
    monkeypatch.delenv(ENV_SMOKE_OUTPUTS, raising=False)
    context.reset()
    yield
    context.reset()


def test_a_block_holds_its_settings_and_restores_the_ones_before_it_even_on_error(tmp_path):
    assert current() == RunContext() and not longrun.long_runs_allowed()
    with run_context(allow_long=True, smoke_dir=tmp_path) as ctx:
        assert current() is ctx and longrun.long_runs_allowed() and results.smoke_active()
        assert os.environ[ENV_ALLOW_LONG] == "1" and os.environ[ENV_SMOKE_OUTPUTS] == str(tmp_path)
        with run_context(allow_long=False):  # nested: changes one setting, keeps the rest
            assert not longrun.long_runs_allowed() and current().smoke_dir == tmp_path
        assert longrun.long_runs_allowed()
    assert current() == RunContext() and ENV_ALLOW_LONG not in os.environ and ENV_SMOKE_OUTPUTS not in os.environ
    with pytest.raises(KeyError), run_context(allow_long=True):
        raise KeyError("the block fails")
    assert not longrun.long_runs_allowed()


def test_enter_holds_for_the_process_and_a_block_inside_it_returns_to_it(tmp_path):
    enter(allow_long=True)
    with run_context(allow_long=False, smoke_dir=tmp_path):
        assert not longrun.long_runs_allowed() and results.smoke_active()
    assert longrun.long_runs_allowed() and not results.smoke_active() and os.environ[ENV_ALLOW_LONG] == "1"
    enter(allow_long=False)  # a notebook's setup, run again: replaces it
    assert current() == RunContext() and ENV_ALLOW_LONG not in os.environ


def test_command_provenance_is_the_contexts_git_state_for_the_command_only():
    state = {"commit": "abc", "status": "", "code": ""}
    assert results.command_git_state() is None
    with results.command_provenance(state) as held:
        assert held is state and current().command_git is state
        with results.command_provenance({"commit": "other", "status": "", "code": ""}) as inner:
            assert inner is state  # nested use keeps the command's state
    assert results.command_git_state() is None


def test_a_process_started_in_a_block_inherits_its_permission_and_smoke_folder(tmp_path):
    code = "from mamba_recall import context; c = context.current(); print(c.allow_long, c.smoke_dir)"
    with run_context(allow_long=True, smoke_dir=tmp_path):
        inside = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    after = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert inside.split() == ["True", str(tmp_path)] and after.split() == ["False", "None"]


def test_bad_settings_are_refused_with_what_is_wrong():
    with pytest.raises(ValueError, match="allow_long must be True or False, got 'yes'"):
        enter(allow_long="yes")
    with pytest.raises(TypeError):
        with run_context(allow_longg=True):  # a misspelled setting
            pass
    assert current() == RunContext()


def test_no_other_module_keeps_the_run_contexts_settings():
    """No ``global`` statement outside the context module (the process-wide switches it replaced were module
    globals) except the run store's one-time provenance cache, and no module but it writes the context's environment
    variables."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "context.py" and path.parent == SRC:
            continue
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Global) and node.names != ["_PROCESS_PROVENANCE"]:
                offenders.append(f"{rel}:{node.lineno}: global {', '.join(node.names)}")
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                target = ast.unparse(node)
                names = ("ENV_ALLOW_LONG", "ENV_SMOKE_OUTPUTS", ENV_ALLOW_LONG, ENV_SMOKE_OUTPUTS)
                if target.startswith("os.environ[") and any(n in target for n in names):
                    offenders.append(f"{rel}:{node.lineno}: {target} = ...")
    assert not offenders, offenders
