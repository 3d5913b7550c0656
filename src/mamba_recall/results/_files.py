"""Writing and checking the files of bundles and checkpoint sidecars: atomic writes (:func:`_write_together`),
strict JSON with the non-finite floats listed (:func:`_strict`, :func:`_restore_nonfinite`), the content hash
(:func:`_content_sha256`, :func:`_check_content_hash`) and the message for a file from a newer library."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import secrets
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no locks (each file is still replaced atomically)
    fcntl = None

import torch

from .. import __version__
from ..atomic import fsync_dir
from ._records import CONTENT_HASH, NONFINITE, BundleError, BundleTooNew

# ------------------------------------------------------------------------------------------ writing files


def _write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and fsync it: the one low-level writer of bundles and checkpoints (the fault
    tests replace it with one that fills the disk midway)."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


@contextlib.contextmanager
def folder_lock(folder: Path, *, shared: bool = False):
    """Hold an ``fcntl.flock`` on ``folder`` itself for the block: exclusive for a writer (:func:`_write_together`),
    shared for a reader (:func:`read_together`). Two writers of the same folder take turns, and a reader never reads
    while a writer replaces a bundle's files, so it never sees the new tables beside the old JSON. The folder, not a
    lock file beside each bundle, is locked: no file is ever left in ``results/`` (nor in a folder a caller lists).
    Where a folder cannot be locked (no ``fcntl``, a filesystem without flock) the block runs unlocked."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(folder, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


def read_together(path: Path, others) -> tuple[bytes, dict[Path, bytes | None]]:
    """``(bytes of path, {other: bytes or None when absent})`` read under the folder's shared lock (:func:`folder_lock`):
    one consistent state of a bundle (its JSON, then the tables ``others(json bytes)`` names) or of a checkpoint. Each
    file is read once; the caller checks the hashes on these very bytes and parses them."""
    path = Path(path)
    with folder_lock(path.parent, shared=True):
        raw = path.read_bytes()
        out: dict[Path, bytes | None] = {}
        for other in others(raw):
            try:
                out[other] = Path(other).read_bytes()
            except (FileNotFoundError, IsADirectoryError):
                out[other] = None
    return raw, out


def _write_together(files: dict[Path, bytes]) -> None:
    """Write every ``{path: bytes}`` without ever leaving a half-written file: each goes to a temporary file in its
    own folder (``.<name>.<random>.tmp``), fsynced; only when all were written are they renamed over the old files
    (``os.replace``, atomic within a folder), in the order given (the JSON that names the others' hashes last). A
    failure while writing (a full disk: ``OSError(ENOSPC)``) removes the temporary files and re-raises, leaving
    the previous files byte-identical. The writes and renames happen under the folder's exclusive lock
    (:func:`folder_lock`): two writers of one bundle take turns (never the tables of one beside the JSON of the other),
    and readers (:func:`read_together`) wait for the renames. A crash between two renames leaves new tables beside
    the old JSON, which loading reports (their sha256 does not match), never a silently wrong bundle."""
    temps: list[tuple[Path, Path]] = []
    folders = sorted({Path(p).parent for p in files}, key=str)
    with contextlib.ExitStack() as locks:
        for folder in folders:  # in one order: two writers never wait on each other's second folder
            locks.enter_context(folder_lock(folder))
        try:
            for path, data in files.items():
                tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
                temps.append((tmp, path))
                _write_file(tmp, data)
            while temps:
                tmp, path = temps[0]
                os.replace(tmp, path)
                temps.pop(0)
        finally:
            for tmp, _ in temps:
                with contextlib.suppress(OSError):
                    tmp.unlink()
        for folder in folders:
            fsync_dir(folder)


def _plain(obj):
    """``obj`` as plain JSON values: tensors and numpy values as lists and numbers, paths as strings (non-finite
    floats stay floats here; :func:`_strict` takes them out)."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, torch.Tensor) or (hasattr(obj, "tolist") and hasattr(obj, "dtype")):
        return _plain(obj.tolist())
    return _plain(_jsonable(obj))


def _strict(record: dict) -> dict:
    """``record`` (plain JSON values) with every non-finite float written as ``null`` and listed, with where it
    was, in :data:`NONFINITE` (``[[path, "NaN" | "Infinity" | "-Infinity"], ...]``, a path being the keys and list
    indices from the top), so that the file is strict JSON and loading gives back the same floats
    (:func:`_restore_nonfinite`): a NaN stays a NaN, a None stays a None."""
    found: list = []

    def walk(value, path):
        if isinstance(value, dict):
            return {k: walk(v, [*path, k]) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, [*path, i]) for i, v in enumerate(value)]
        if isinstance(value, float) and not math.isfinite(value):
            found.append([path, "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"])
            return None
        return value

    out = walk({k: v for k, v in record.items() if k != NONFINITE}, [])
    if found:
        out[NONFINITE] = found
    return out


#: The floats ``null`` entries of :data:`NONFINITE` become: one object each, so two reads of a file compare equal
#: (``[nan] == [nan]`` holds by identity).
_NONFINITE_FLOATS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _restore_nonfinite(record: dict, path: Path, what: str, regen: str) -> dict:
    """Put back the non-finite floats that :func:`_strict` wrote as ``null`` and listed in :data:`NONFINITE` (the
    only way a file holds one: a bare ``NaN`` is refused when it is parsed, :func:`_parse`)."""
    entries = record.pop(NONFINITE, None) or []
    try:
        for where, text in entries:
            if text not in _NONFINITE_FLOATS or not where:
                raise ValueError(text)
            container = record
            for key in where[:-1]:
                container = container[key]
            if container[where[-1]] is not None:
                raise ValueError(where)
            container[where[-1]] = _NONFINITE_FLOATS[text]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise BundleError(
            f"corrupt {what} {path}: its list of non-finite values ({NONFINITE}) does not match its values "
            f"({exc!r}); regenerate it with: {regen}"
        ) from exc
    return record


def _content_sha256(record: dict) -> str:
    """The sha256 of ``record`` without its :data:`CONTENT_HASH` field, as canonical JSON (sorted keys, no
    spaces, ASCII): the same for the record as written and as read back, changed by any changed value."""
    body = {k: v for k, v in record.items() if k != CONTENT_HASH}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _hashed_json(record: dict, *, sort_keys: bool) -> bytes:
    """``record`` as strict JSON text (non-finite floats as null, listed in :data:`NONFINITE`) with its
    :data:`CONTENT_HASH`; the hash is taken over the record as it will be read back (keys as strings), so
    loading reproduces it."""
    plain = _strict(json.loads(json.dumps(_plain(record))))
    plain[CONTENT_HASH] = _content_sha256(plain)
    return (json.dumps(plain, indent=1, sort_keys=sort_keys, allow_nan=False) + "\n").encode()


def _check_content_hash(record: dict, path: Path, what: str, regen: str) -> None:
    """Raise :class:`BundleError` when ``record`` carries no content hash (every bundle and sidecar this library
    writes has one, so its values could not be checked: written by hand or by a version before hashes) or one that
    its values do not match."""
    recorded = record.get(CONTENT_HASH)
    if recorded is None:
        raise BundleError(
            f"{what} {path} carries no content hash ({CONTENT_HASH}), so its values cannot be checked (written by "
            f"hand, or by a mamba_recall before hashes, which this one no longer reads); regenerate it with: {regen}"
        )
    if recorded != _content_sha256(record):
        raise BundleError(
            f"corrupt {what} {path}: its values do not match the sha256 recorded in it ({CONTENT_HASH}; changed "
            f"or damaged since it was written); delete it and regenerate it with: {regen}"
        )


def _jsonable(obj):
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot store {type(obj).__name__} in a bundle; convert it to numbers, lists or dicts.")


def _bare_constant(constant: str):
    """``json``'s hook for a bare ``NaN``, ``Infinity`` or ``-Infinity``: refused (:func:`_parse`)."""
    raise ValueError(f"a bare {constant}")


def _parse(raw: bytes | str, path: Path, what: str, fix: str) -> dict:
    """The JSON object in ``raw`` (the bytes of a bundle or checkpoint sidecar), as strict JSON: :class:`BundleError`
    ending in ``fix`` (what to delete and how to remake it) when it is not JSON, holds a bare ``NaN`` or
    ``Infinity`` (this library writes a non-finite float as ``null`` listed in :data:`NONFINITE`, :func:`_strict`) or
    its top level is not an object."""
    try:
        record = json.loads(raw, parse_constant=_bare_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BundleError(f"corrupt {what} {path}: not valid JSON ({exc}; truncated?); {fix}") from exc
    except ValueError as exc:
        raise BundleError(
            f"corrupt {what} {path}: {exc} in it, not strict JSON (a non-finite number is written as null and "
            f"listed in {NONFINITE}; written by hand or by an old mamba_recall); {fix}"
        ) from exc
    if not isinstance(record, dict):
        raise BundleError(f"corrupt {what} {path}: the top level is not a JSON object; {fix}")
    return record


def _read_record(raw: bytes, path: Path, what: str, schema: str, ours: int, *, fix: str, regen) -> tuple[dict, str]:
    """The JSON object of a bundle or checkpoint sidecar from its bytes ``raw``, checked as both are: strict JSON
    whose top level is an object (:func:`_parse`; else :class:`BundleError` ending in ``fix``, what to delete and how
    to remake it); then its content hash, required (:func:`_check_content_hash`), its non-finite values restored
    (:func:`_restore_nonfinite`), and :class:`BundleTooNew` when it is ``schema`` at a version above ``ours``.
    ``regen(record)``: the command that remakes it, named by those errors (a bundle records its own) and returned
    with the record: ``(record, command)``."""
    record = _parse(raw, path, what, fix)
    command = regen(record)
    _check_content_hash(record, path, what, command)  # first: a flipped version digit is corruption
    _restore_nonfinite(record, path, what, command)
    version = record.get("schema_version")
    if record.get("schema") == schema and isinstance(version, int) and version > ours:
        raise BundleTooNew(_too_new(f"{what} {path}", record, version, ours))
    return record, command


def _too_new(what: str, record: dict, version: int, ours: int) -> str:
    """The message for a file a newer library wrote: update, do not regenerate (that would lose its numbers)."""
    prov = record.get("provenance") if isinstance(record.get("provenance"), dict) else {}
    by = (prov.get("versions") or {}).get("mamba_recall") if isinstance(prov.get("versions"), dict) else None
    return (
        f"{what} was written by a newer mamba_recall{f' ({by})' if by else ''} (schema v{version} > v{ours}, "
        f"which this mamba_recall {__version__} reads): update mamba_recall (`git pull` and "
        "`pip install -e .` in the repository) to read it; do not regenerate it with this older version."
    )
