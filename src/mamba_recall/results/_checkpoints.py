"""Small checkpoints: a ``.pt`` and its JSON sidecar, written together and checked against each other."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import torch

from .. import provenance as _prov
from ..paths import RESULTS_DIR
from ._bundles import _output_dir
from ._files import _check_content_hash, _hashed_json, _restore_nonfinite, _too_new, _write_together
from ._records import (
    SIDECAR_SCHEMA,
    SIDECAR_SCHEMA_VERSION,
    BundleError,
    BundleTooNew,
    CheckpointMissing,
    command_git_state,
    provenance,
)

CHECKPOINT_DIR = RESULTS_DIR / "checkpoints"


def checkpoint_file(prefix: str, name: str, preset: str, directory: Path | None = None) -> Path:
    """``<directory>/<prefix>_<name>_<preset>.pt`` (default directory ``results/checkpoints``): the file of a committed
    checkpoint (prefix: the chapter, e.g. ``ch1``), the preset in its name so that runs of different presets never
    overwrite each other."""
    return Path(directory or CHECKPOINT_DIR) / f"{prefix}_{name}_{preset}.pt"


def save_checkpoint(
    path: str | Path, payload: dict, sidecar: dict, *, command: str, device="cpu", wall_seconds: float | None = None
) -> Path:
    """Write a small checkpoint ``<path>.pt`` (``torch.save`` of ``payload``: tensors, numbers, lists, dicts)
    and its sidecar ``<path>.json``: ``sidecar`` plus the file's sha256 and size, the ``command`` that
    regenerates it, :func:`provenance`, the sidecar schema and its :data:`CONTENT_HASH` (strict JSON). Both files
    replace the old pair together, only once both were written (:func:`_write_together`). A smoke checkpoint
    (``_smoke`` in its name, or ``sidecar["smoke"]`` true) is never written under ``results/``. Returns the
    ``.pt`` path."""
    path = Path(path)
    if path.suffix != ".pt":
        raise ValueError(f"checkpoint path {path} must end in .pt.")
    smoke = "_smoke" in path.stem or sidecar.get("smoke") is True
    path = _output_dir(path.parent, smoke=smoke) / path.name
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    blob = buffer.getvalue()
    record = {
        **sidecar,
        "schema": SIDECAR_SCHEMA,
        "schema_version": SIDECAR_SCHEMA_VERSION,
        "file": path.name,
        "sha256": hashlib.sha256(blob).hexdigest(),
        "bytes": len(blob),
        "command": command,
        "provenance": provenance(device, wall_seconds, git=command_git_state()),
    }
    _write_together({path: blob, path.with_suffix(".json"): _hashed_json(record, sort_keys=False)})
    return path


def read_checkpoint(path: str | Path, *, regenerate: str) -> tuple[dict, dict]:
    """Load ``<path>.pt`` after checking it against the sha256 in its ``.json`` sidecar → ``(payload, sidecar)``.

    ``regenerate`` is the command that rebuilds the checkpoint; every error names it. Neither file there:
    :class:`CheckpointMissing` (a ``FileNotFoundError``: never made here; a caller may train live, saying so).
    One of the pair without the other, a sidecar that is not JSON or does not match its content hash, or a
    ``.pt`` that does not match the sidecar's sha256: :class:`BundleError` (corrupt: stop). A sidecar from a
    newer mamba_recall: :class:`BundleTooNew`. Legacy sidecars (no schema, no content hash) load as before.
    """
    path = Path(path)
    side = path.with_suffix(".json")
    if not path.exists() and not side.exists():
        raise CheckpointMissing(
            f"checkpoint {path} (and its sidecar {side.name}) is missing; regenerate it with `{regenerate}`."
        )
    if not side.exists() or not path.exists():
        there, gone = (path, side) if path.exists() else (side, path)
        raise BundleError(
            f"incomplete checkpoint: {there} is there but {gone.name} is missing (deleted, or a write was "
            f"interrupted), so it cannot be checked or loaded; delete {there.name} and regenerate both with "
            f"`{regenerate}`."
        )
    try:
        sidecar = json.loads(side.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BundleError(f"corrupt checkpoint sidecar {side} ({exc}); regenerate it with `{regenerate}`.") from exc
    if not isinstance(sidecar, dict):
        raise BundleError(f"corrupt checkpoint sidecar {side} (not a JSON object); regenerate it with `{regenerate}`.")
    _check_content_hash(sidecar, side, "checkpoint sidecar", f"`{regenerate}`")
    _restore_nonfinite(sidecar, side, "checkpoint sidecar", f"`{regenerate}`")
    version = sidecar.get("schema_version")
    if sidecar.get("schema") == SIDECAR_SCHEMA and isinstance(version, int) and version > SIDECAR_SCHEMA_VERSION:
        raise BundleTooNew(_too_new(f"checkpoint sidecar {side}", sidecar, version, SIDECAR_SCHEMA_VERSION))
    if _prov.sha256(path) != sidecar.get("sha256"):
        raise BundleError(
            f"checkpoint {path} does not match the sha256 hash in {side.name} (changed or truncated); "
            f"regenerate it with `{regenerate}`."
        )
    return torch.load(path, map_location="cpu", weights_only=True), sidecar
