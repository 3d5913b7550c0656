"""The run context: what one command, or one notebook kernel, runs under. Three settings, each read where it applies:

- ``allow_long``: a run estimated at over an hour may start (:mod:`mamba_recall.longrun`);
- ``smoke_dir``: a smoke run is on, and what it would write under ``results/`` goes to this folder instead
  (:mod:`mamba_recall.results`);
- ``command_git``: the git state of the command now running, taken once before it writes anything, recorded by
  every bundle and checkpoint it writes (:func:`mamba_recall.results.command_provenance`).

Who sets it, and for how long:

- a command line (a runner's ``main``, ``grid_main``, ``python -m mamba_recall ...``) and the run store's workers
  run their work inside ``with run_context(...)``: the settings hold for that block and are restored after it,
  however it ends;
- a notebook's first cell, :func:`mamba_recall.notebook.setup`, calls :func:`enter`: the settings hold for the rest
  of the kernel (a notebook has no block to enter);
- a process started by one of these (the run store's loky workers, ``reproduce``'s runners) reads them from its
  environment (:data:`ENV_ALLOW_LONG`, :data:`ENV_SMOKE_OUTPUTS`, set by :func:`child_environment` and by
  :func:`enter`), unless it is given them explicitly (a Ray task gets the driver's in its arguments).

:func:`current` is the context in force: the innermost ``run_context`` block, else what :func:`enter` set, else the
environment's. Nothing else in the library keeps these settings (``tests/base/test_context.py`` checks it).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
from pathlib import Path
from typing import Iterator

__all__ = [
    "ENV_ALLOW_LONG",
    "ENV_SMOKE_OUTPUTS",
    "RunContext",
    "child_environment",
    "current",
    "enter",
    "run_context",
]

#: ``1`` in a process's environment: runs over an hour may start there (``make reproduce ALLOW_LONG=1``, a worker of
#: a grid started with ``--allow-long``).
ENV_ALLOW_LONG = "MAMBA_RECALL_ALLOW_LONG"
#: A folder in a process's environment: a smoke run is on there, and writes under ``results/`` go to it instead.
ENV_SMOKE_OUTPUTS = "MAMBA_RECALL_SMOKE_OUTPUTS"
#: the variables a started process inherits the context through
_INHERITED = (ENV_ALLOW_LONG, ENV_SMOKE_OUTPUTS)


@dataclasses.dataclass(frozen=True)
class RunContext:
    """What a command or a notebook runs under (module docstring). Frozen: a change is a new context."""

    allow_long: bool = False
    smoke_dir: Path | None = None
    command_git: dict | None = None

    def __post_init__(self):
        if not isinstance(self.allow_long, bool):
            raise ValueError(f"allow_long must be True or False, got {self.allow_long!r}.")
        if self.smoke_dir is not None and not isinstance(self.smoke_dir, Path):
            object.__setattr__(self, "smoke_dir", Path(self.smoke_dir))
        if self.command_git is not None and not isinstance(self.command_git, dict):
            raise ValueError(f"command_git must be a git state (a dict) or None, got {self.command_git!r}.")


#: the innermost ``run_context`` block (per thread and task: a ``ContextVar``)
_BLOCK: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar("mamba_recall_run_context", default=None)
#: what :func:`enter` set for the rest of this process (a notebook kernel), or None
_ENTERED: RunContext | None = None


def from_environment() -> RunContext:
    """The context a process inherits from the one that started it (:data:`ENV_ALLOW_LONG`,
    :data:`ENV_SMOKE_OUTPUTS`); no command's git state (a worker is handed it explicitly)."""
    smoke = os.environ.get(ENV_SMOKE_OUTPUTS)
    return RunContext(allow_long=os.environ.get(ENV_ALLOW_LONG) == "1", smoke_dir=Path(smoke) if smoke else None)


def current() -> RunContext:
    """The context in force here: the innermost ``run_context`` block, else what :func:`enter` set, else the
    environment's (:func:`from_environment`)."""
    block = _BLOCK.get()
    if block is not None:
        return block
    return _ENTERED if _ENTERED is not None else from_environment()


def _export(ctx: RunContext) -> None:
    """Write ``ctx``'s inheritable settings into this process's environment, for the processes it starts."""
    _export_values(child_environment(ctx))


def _export_values(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def child_environment(ctx: RunContext | None = None) -> dict[str, str | None]:
    """The environment variables that hand ``ctx`` (default: :func:`current`) to a process started now (None:
    remove the variable)."""
    ctx = current() if ctx is None else ctx
    return {
        ENV_ALLOW_LONG: "1" if ctx.allow_long else None,
        ENV_SMOKE_OUTPUTS: str(ctx.smoke_dir) if ctx.smoke_dir is not None else None,
    }


@contextlib.contextmanager
def run_context(**changes) -> Iterator[RunContext]:
    """Run a block under the context in force with ``changes`` (``allow_long=``, ``smoke_dir=``,
    ``command_git=``); the context before it holds again after the block, however it ends. The processes the block
    starts inherit the inheritable settings (:func:`child_environment`)."""
    ctx = dataclasses.replace(current(), **changes)
    saved = {name: os.environ.get(name) for name in _INHERITED}
    token = _BLOCK.set(ctx)
    _export(ctx)
    try:
        yield ctx
    finally:
        _BLOCK.reset(token)
        _export_values(saved)  # the environment as it was before the block


def enter(**changes) -> RunContext:
    """Set the context of this process from now on (a notebook kernel: :func:`mamba_recall.notebook.setup`, called
    again by every notebook's first cell, replaces it): the context in force with ``changes``. Its inheritable
    settings go to the environment of the processes started later."""
    global _ENTERED
    ctx = dataclasses.replace(current(), **changes)
    _ENTERED = ctx
    _export(ctx)
    return ctx


def reset() -> None:
    """Forget what :func:`enter` set, and its environment variables: the process's context is the one it started
    with. For tests, which call ``setup`` in one process many times."""
    global _ENTERED
    _ENTERED = None
    for name in _INHERITED:
        os.environ.pop(name, None)
