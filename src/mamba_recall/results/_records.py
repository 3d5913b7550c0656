"""What a bundle is and records: the schemas, the errors a reader catches, :class:`Bundle`, and the provenance of a
number (:func:`provenance`), with the one git state of the command now running (:func:`command_provenance`)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import platform
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from .. import provenance as _prov
from ..context import current, run_context
from ..determinism import cpu_fingerprint
from ..provenance import device_description
from ..provenance import git_state as _git_state

SCHEMA = "mamba_recall.bundle"
SCHEMA_VERSION = 1
#: Checkpoint sidecars (:func:`save_checkpoint`) say which sidecar layout they follow; older ones have no version.
SIDECAR_SCHEMA = "mamba_recall.checkpoint"
SIDECAR_SCHEMA_VERSION = 1
#: The field of a bundle or sidecar holding the sha256 of its canonical JSON without that field.
CONTENT_HASH = "content_sha256"
#: The field listing where a bundle or sidecar had non-finite floats (written as ``null``): :func:`_strict`.
NONFINITE = "nonfinite"
_REQUIRED = {
    "schema": str,
    "schema_version": int,
    "name": str,
    "command": str,
    "config": dict,
    "data": dict,
    "tables": dict,
    "provenance": dict,
}


#: Set to "1" to refuse writing bundles from uncommitted library code (``save_bundle`` raises).
ENV_REQUIRE_CLEAN = "MAMBA_RECALL_REQUIRE_CLEAN"


class BundleError(ValueError):
    """A result bundle (or checkpoint) is missing, corrupt, from a newer library or does not match the expected
    schema. Catch :class:`BundleMissing` (not this) to fall back to weaker evidence: a corrupt bundle must stop."""


class BundleMissing(BundleError):
    """No bundle at the path (or no complete one for any preset): the only failure that a reader may answer by
    falling back (to the ``ci`` bundle, or "not run") and saying so. A bundle that exists is never this."""


class BundleTooNew(BundleError):
    """The bundle (or checkpoint sidecar) was written by a newer mamba_recall, in a schema this one cannot read:
    update mamba_recall; regenerating it with the old library would throw away newer numbers."""


class CheckpointMissing(FileNotFoundError):
    """Neither a checkpoint's ``.pt`` nor its sidecar exists: it was never made here. (One of the pair without the
    other is corrupt, :class:`BundleError`, never this: a deleted sidecar must not send a caller to train live.)"""


@dataclass
class Bundle:
    """A loaded result bundle. ``command``: the command that remakes it, as the bundle records it."""

    name: str
    config: dict
    data: dict
    provenance: dict
    command: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    path: Path | None = None

    @property
    def clean(self) -> bool | None:
        """True if the library code that made the bundle was committed (no ``dirty_files``: library files the
        process imported, or pyproject.toml, that differ from the commit), False if not, None for older bundles."""
        files = self.provenance.get("dirty_files")
        return None if files is None else not files


def command_git_state() -> dict | None:
    """The git state of the command now running (the run context's ``command_git``, :func:`command_provenance`), or
    None: what the run store hands to its worker processes so that their checkpoints record the command's state
    too."""
    return current().command_git


@contextlib.contextmanager
def command_provenance(state: dict | None = None):
    """One provenance per command: while this is active, every bundle :func:`save_bundle` writes in this process
    records the git state taken **once, on entry** (commit, ``git_dirty``, the uncommitted library files), not
    the state at its own writing. Without it, a command writing two bundles records ``git_dirty: true`` in the
    second one because the first one has just rewritten a tracked file. Enter it before the command writes any
    file (:func:`mamba_recall.runstore.grid_main` does; a runner's ``main`` is decorated with it). ``dirty_files``
    stays those uncommitted files that the process has imported by the time each bundle is written (a later bundle
    that used more library code names it too); ``device``, ``created`` and ``wall_seconds`` are each bundle's own.
    Nested use keeps the outer state. Checkpoint sidecars (:func:`save_checkpoint`) written in this process take the
    same state (a command writing three checkpoints would otherwise record the second and third as dirty, the first
    having rewritten a tracked file). ``state``: a state taken elsewhere, by the command that started this process
    (the run store's worker processes and Ray tasks get their grid command's, :func:`command_git_state`). The state is
    the run context's ``command_git`` for the block (:func:`mamba_recall.context.run_context`)."""
    held = current().command_git
    if held is not None:  # already inside a command: its state holds
        yield held
        return
    with run_context(command_git=state if state is not None else _git_state()) as ctx:
        yield ctx.command_git


def provenance(
    device: str | torch.device = "cpu", wall_seconds: float | None = None, *, git: dict | None = None
) -> dict:
    """Git commit, device, library versions and time: everything needed to say how a number was made (measured
    by :mod:`mamba_recall.provenance`). ``git``: a :func:`~mamba_recall.provenance.git_state` taken earlier (the
    command's, :func:`command_provenance`); default: now."""
    state = git if git is not None else _git_state()
    status, code = state["status"], state["code"]
    origin = state.get("origin") or _prov.code_origin()
    dirty = [_prov.relative(p) for p in _prov.uncommitted_imported(code)] if code is not None else None
    outside = _prov.outside_differences(origin)  # a package imported from elsewhere than the checkout's src/
    if outside:
        dirty = sorted({*(dirty or []), *outside})
    git_dirty = bool(status) if status is not None else None
    if outside or (dirty and not origin.get("in_checkout", True)):
        git_dirty = True
    out = {
        "git_commit": state["commit"],
        "git_dirty": git_dirty,
        "dirty_files": dirty,
        "device": device_description(device),
        "cpu": cpu_fingerprint(),  # which bits to expect: the same CPU type gives the same bits (determinism)
        "platform": platform.platform(),
        "versions": _prov.versions(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": wall_seconds,
    }
    return {**out, **_prov.naming_fields(state, origin)}


def require_clean(what: str, prov: dict, *, note: bool = True) -> None:
    """With ``MAMBA_RECALL_REQUIRE_CLEAN=1``: raise :class:`BundleError` when ``prov`` does not name committed code
    (:func:`mamba_recall.provenance.unclean_reason`: uncommitted or outside code, no commit); else say so on stderr
    when the code is uncommitted."""
    import os
    import sys

    reason = _prov.unclean_reason(prov)
    if reason is None:
        return
    if os.environ.get(ENV_REQUIRE_CLEAN) == "1":
        raise BundleError(f"{what} not written: {reason} ({ENV_REQUIRE_CLEAN}=1 refuses it; unset it to write anyway).")
    if note and prov.get("dirty_files"):
        print(
            f"note: {what} is made from uncommitted library code ({len(prov['dirty_files'])} files); its provenance "
            "lists them (dirty_files) and Bundle.clean is False.",
            file=sys.stderr,
        )
