"""Small checkpoints: a ``.pt`` and its JSON sidecar, written together and checked against each other."""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path

import torch

from ..paths import RESULTS_DIR
from ._bundles import _output_dir
from ._files import _hashed_json, _read_record, _write_together, read_together
from ._records import (
    CONTENT_HASH,
    SIDECAR_SCHEMA,
    SIDECAR_SCHEMA_VERSION,
    BundleError,
    CheckpointMissing,
    command_git_state,
    provenance,
    require_clean,
)

CHECKPOINT_DIR = RESULTS_DIR / "checkpoints"


#: an experiment's name: ``ch<N>_<name>`` (``ch3_keep_nth``), as in the presets and the run store
_EXPERIMENT = re.compile(r"ch\d+_[a-z0-9_]+")


def checkpoint_file(
    experiment: str,
    preset: str,
    *,
    model: str | None = None,
    seed: int | None = None,
    directory: Path | None = None,
    **parts,
) -> Path:
    """The one name of a committed checkpoint: ``<directory>/<experiment>[_<model>]_<preset>[_<key><value>…][_seed<s>].pt``
    (default directory ``results/checkpoints``). ``ch3_keep_nth``'s Mamba+PE
    at ``cpu-hours``, T = 10, seed 0 is ``ch3_keep_nth_s6pe_cpu-hours_T10_seed0.pt``; ``ch1_k1`` at ``ci`` is
    ``ch1_k1_ci.pt``. The preset is in every name, so runs of different presets never overwrite each other; a
    ``parts`` value of None is left out. ValueError for an experiment not named ``ch<N>_<name>``."""
    if not _EXPERIMENT.fullmatch(experiment):
        raise ValueError(f"checkpoint of {experiment!r}: name the experiment as ch<N>_<name>, e.g. 'ch3_keep_nth'.")
    name = experiment + (f"_{model}" if model else "") + f"_{preset}"
    name += "".join(f"_{k}{v}" for k, v in parts.items() if v is not None)
    name += "" if seed is None else f"_seed{seed}"
    return Path(directory or CHECKPOINT_DIR) / f"{name}.pt"


def rename_checkpoint(old: str | Path, new: str | Path) -> Path:
    """Move the checkpoint ``old`` (``.pt`` and sidecar) to ``new``, checked first (:func:`read_checkpoint`): the
    sidecar's ``file`` becomes the new name and ``renamed_from`` records the old one; its provenance (how the weights
    were made) is kept. Both new files are written together before the old pair is removed, so an interruption
    leaves the old pair or both. ValueError if ``new`` exists. Returns the new ``.pt`` path."""
    old, new = Path(old), Path(new)
    if new.exists() or new.with_suffix(".json").exists():
        raise ValueError(f"cannot rename {old.name} to {new.name}: {new} exists; remove it first.")
    _, sidecar = read_checkpoint(old, regenerate=f"the command in {old.with_suffix('.json').name}")
    sidecar.pop(CONTENT_HASH)  # checked on reading; its non-finite values are restored, so none is lost here
    sidecar = {**sidecar, "file": new.name, "renamed_from": sidecar.get("renamed_from", []) + [old.name]}
    _write_together({new: old.read_bytes(), new.with_suffix(".json"): _hashed_json(sidecar, sort_keys=False)})
    old.unlink()
    old.with_suffix(".json").unlink()
    return new


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
    require_clean(f"checkpoint {path.name}", record["provenance"], note=False)
    _write_together({path: blob, path.with_suffix(".json"): _hashed_json(record, sort_keys=False)})
    return path


def read_checkpoint(path: str | Path, *, regenerate: str) -> tuple[dict, dict]:
    """Load ``<path>.pt`` after checking it against the sha256 in its ``.json`` sidecar → ``(payload, sidecar)``.

    ``regenerate`` is the command that rebuilds the checkpoint; every error names it. Neither file there:
    :class:`CheckpointMissing` (a ``FileNotFoundError``: never made here; a caller may train live, saying so).
    One of the pair without the other, a sidecar that is not JSON or does not match its content hash, or a
    ``.pt`` that does not match the sidecar's sha256: :class:`BundleError` (corrupt: stop). A sidecar from a
    newer mamba_recall: :class:`BundleTooNew`. A sidecar without its content hash, or with a bare NaN, is refused as
    corrupt (:class:`BundleError` naming ``regenerate``): every committed one is hashed and strict.
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
    try:  # the pair as one writer left it (the folder's shared lock), each file read once
        raw, blobs = read_together(side, lambda raw: [path])
    except FileNotFoundError:
        raise BundleError(
            f"incomplete checkpoint: {side.name} vanished while {path} was read; regenerate both with `{regenerate}`."
        ) from None
    blob = blobs[path]
    if blob is None:
        raise BundleError(
            f"incomplete checkpoint: {side} is there but {path.name} is missing (deleted, or a write was "
            f"interrupted); delete {side.name} and regenerate both with `{regenerate}`."
        )
    sidecar, _ = _read_record(
        raw,
        side,
        "checkpoint sidecar",
        SIDECAR_SCHEMA,
        SIDECAR_SCHEMA_VERSION,
        fix=f"delete {side.name} and {path.name} and regenerate both with `{regenerate}`.",
        regen=lambda _: f"`{regenerate}`",
    )
    named = sidecar.get("file")
    if named is not None and named != path.name:
        raise BundleError(
            f"checkpoint sidecar {side} belongs to {named!r}, not to {path.name!r} beside which it sits (the expected "
            f"checkpoint): a pair copied or renamed by hand (a rename goes through results.rename_checkpoint); "
            f"restore {path.name} and {side.name} (`git checkout {_shown(path)} {_shown(side)}`) or regenerate both "
            f"with `{regenerate}`."
        )
    if hashlib.sha256(blob).hexdigest() != sidecar.get("sha256"):
        raise BundleError(
            f"checkpoint {path} does not match the sha256 hash in {side.name} (changed or truncated); "
            f"regenerate it with `{regenerate}`."
        )
    return torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True), sidecar


def model_from_checkpoint(
    path: str | Path, build, *, regenerate: str, weights: str | None = None
) -> tuple[torch.nn.Module, dict]:
    """The model of a committed checkpoint: ``(model in eval mode, sidecar)``. The pair is checked by
    :func:`read_checkpoint` (errors name ``regenerate``, the command that makes it), the model is made by
    ``build(sidecar)`` (the chapter's constructor, from the config and seed its sidecar records) and loaded with the
    saved weights, every key matching. The ``.pt`` is the state dict itself, or (``weights`` given) a dict that holds
    it under the key ``weights`` beside what else its trainer kept (Chapter 4's S-models: ``state_dict`` with their
    model config, vocabulary and training history); :class:`BundleError` naming ``regenerate`` when it has no such
    key. The one model loader of the chapters' checkpoints: they differ only in their path (:func:`checkpoint_file`),
    constructor and ``weights``."""
    state, sidecar = read_checkpoint(path, regenerate=regenerate)
    if weights is not None:
        if not isinstance(state, dict) or weights not in state:
            raise BundleError(
                f"checkpoint {path} holds no {weights!r} entry (its weights), so it is not a checkpoint of this kind; "
                f"regenerate it with `{regenerate}`."
            )
        state = state[weights]
    model = build(sidecar)
    model.load_state_dict(state)
    return model.eval(), sidecar


def _shown(path: Path) -> str:
    """``path`` relative to the results folder's parent (``results/checkpoints/x.pt``) where it lies under it."""
    try:
        return Path(path).resolve().relative_to(Path(RESULTS_DIR).resolve().parent).as_posix()
    except (ValueError, OSError):
        return str(path)
