"""Result bundles: committed numbers that record how they were made.

A bundle is ``results/<name>.json``::

    {"schema": "mamba_recall.bundle", "schema_version": 1, "name": ..., "command": "how to regenerate",
     "config": {...}, "data": {...}, "tables": {"<table>": {"file": "<name>.<table>.csv", "sha256": ...}},
     "provenance": {"git_commit", "git_dirty", "device", "versions": {...}, "created", "wall_seconds"}}

Tables (pandas DataFrames) are written beside it as CSV and checked by hash when loaded. A command that writes
several bundles gives them one git state, taken before it writes anything (:func:`command_provenance`).
Loading validates the schema and names what is wrong and how to regenerate the bundle.

Nothing lost, nothing silently wrong:

* **Atomic writes.** A bundle's JSON and CSVs (and a checkpoint's ``.pt`` and sidecar) are written to temporary
  files in the same folder, fsynced, and renamed over the old files only after all of them were written
  (:func:`_write_together`): a full disk or a crash midway leaves the previous good files byte-identical.
* **A content hash.** Bundles (and sidecars) written now carry ``content_sha256``, the sha256 of their canonical
  JSON without that field (:func:`_content_sha256`), checked when loaded: a flipped digit that still parses is
  caught. Committed bundles written before it have none and load as before (legacy).
* **Strict JSON.** Non-finite floats (NaN, ±inf) are written as ``null`` (``allow_nan=False``) and listed with
  their place in ``nonfinite``, so loading gives back the same NaN (a None stays None); legacy bundles with a
  bare ``NaN`` still load.
* **Absent vs. corrupt.** Only an absent bundle raises :class:`BundleMissing`, the one failure a reader may
  answer with weaker evidence (saying so). A corrupt bundle raises :class:`BundleError` naming the file and the
  command that regenerates it, and one from a newer library raises :class:`BundleTooNew` (update mamba_recall).
* **Smoke runs** never write under ``results/``: a bundle that says it is one (its name ends in ``_smoke`` or its
  config has ``smoke: true``), and everything saved while :func:`redirect_smoke_outputs` is on, goes to
  ``_build/smoke/results/`` (:data:`SMOKE_RESULTS_DIR`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import io
import json
import math
import os
import platform
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from . import __version__
from . import provenance as _prov
from .paths import BUILD_DIR, RESULTS_DIR
from .provenance import device_description
from .provenance import git_state as _git_state

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


#: The git state of the command now running (:func:`command_provenance`), or None: each bundle takes its own.
_COMMAND_GIT: dict | None = None


def command_git_state() -> dict | None:
    """The git state of the command now running in this process (:func:`command_provenance`), or None: what the run
    store hands to its worker processes so that their checkpoints record the command's state too."""
    return _COMMAND_GIT


@contextlib.contextmanager
def command_provenance(state: dict | None = None):
    """One provenance per command: while this is active, every bundle :func:`save_bundle` writes in this process
    records the git state taken **once, on entry** (commit, ``git_dirty``, the uncommitted library files), not
    the state at its own writing. Without it, a command writing two bundles records ``git_dirty: true`` in the
    second one because the first one has just rewritten a tracked file. Enter it before the command writes any
    file (:func:`mamba_recall.runstore.grid_main` does). ``dirty_files`` stays those uncommitted files that the
    process has imported by the time each bundle is written (a later bundle that used more library code names
    it too); ``device``, ``created`` and ``wall_seconds`` are each bundle's own. Nested use keeps the outer
    state. Checkpoint sidecars (:func:`save_checkpoint`) written in this process take the same state (a command
    writing three checkpoints would otherwise record the second and third as dirty, the first having rewritten
    a tracked file). ``state``: a state taken elsewhere, by the command that started this process (the run store's
    worker processes and Ray tasks get their grid command's, :func:`command_git_state`)."""
    global _COMMAND_GIT
    if _COMMAND_GIT is not None:  # already inside a command: its state holds
        yield _COMMAND_GIT
        return
    _COMMAND_GIT = state if state is not None else _git_state()
    try:
        yield _COMMAND_GIT
    finally:
        _COMMAND_GIT = None


def provenance(
    device: str | torch.device = "cpu", wall_seconds: float | None = None, *, git: dict | None = None
) -> dict:
    """Git commit, device, library versions and time: everything needed to say how a number was made (measured
    by :mod:`mamba_recall.provenance`). ``git``: a :func:`~mamba_recall.provenance.git_state` taken earlier (the
    command's, :func:`command_provenance`); default: now."""
    state = git if git is not None else _git_state()
    status, code = state["status"], state["code"]
    return {
        "git_commit": state["commit"],
        "git_dirty": bool(status) if status is not None else None,
        "dirty_files": [_prov.relative(p) for p in _prov.uncommitted_imported(code)] if code is not None else None,
        "device": device_description(device),
        "platform": platform.platform(),
        "versions": _prov.versions(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": wall_seconds,
    }


#: Where smoke runs write what would go under ``results/`` (the README's promise): bundles, checkpoints, run stores.
SMOKE_RESULTS_DIR = BUILD_DIR / "smoke" / "results"

#: Where a smoke run (``setup(..., smoke=True)``) writes what would go under ``results/``; None otherwise.
_smoke_dir: Path | None = None

#: Set by :func:`redirect_smoke_outputs` (to the smoke folder) so that the worker processes of a smoke run (the run
#: store's ``--jobs``: separate processes, which do not share this module's state) redirect their writes too.
ENV_SMOKE_OUTPUTS = "MAMBA_RECALL_SMOKE_OUTPUTS"


def redirect_smoke_outputs(on: bool) -> None:
    """Smoke runs never write committed bundles or checkpoints: while ``on``, anything saved under
    ``results/`` goes to :data:`SMOKE_RESULTS_DIR` (``_build/smoke/results/``) instead (and says so), in this
    process and in the processes it starts (:data:`ENV_SMOKE_OUTPUTS`). ``setup`` switches it; a bundle that says
    it is a smoke run is redirected whether or not it is on (:func:`save_bundle`)."""
    global _smoke_dir
    _smoke_dir = Path(SMOKE_RESULTS_DIR) if on else None
    if on:
        os.environ[ENV_SMOKE_OUTPUTS] = str(_smoke_dir)
    else:
        os.environ.pop(ENV_SMOKE_OUTPUTS, None)


def _smoke_root() -> Path | None:
    """The smoke folder while a smoke run is on (here, or in the process that started this one), else None."""
    if _smoke_dir is not None:
        return _smoke_dir
    inherited = os.environ.get(ENV_SMOKE_OUTPUTS)
    return Path(inherited) if inherited else None


def smoke_active() -> bool:
    """True while a smoke run is on (``setup(..., smoke=True)``): its numbers are not evidence."""
    return _smoke_root() is not None


def _output_dir(directory: Path, *, smoke: bool = False) -> Path:
    """``directory``, or its place under the smoke folder when it lies under ``results/`` and a smoke run is on
    (:func:`redirect_smoke_outputs`) or the thing written says it is a smoke run (``smoke``)."""
    directory = Path(directory)
    target_root = _smoke_root()
    if target_root is None and not smoke:
        return directory
    target_root = target_root if target_root is not None else Path(SMOKE_RESULTS_DIR)
    results = Path(RESULTS_DIR).resolve()
    resolved = directory.resolve()
    if resolved == results or results in resolved.parents:
        target = target_root / resolved.relative_to(results)
        if target.resolve() != resolved:
            print(f"smoke run: writing into {target} instead of {directory} (results/ holds real runs only)")
        return target
    return directory


def smoke_run_store(smoke: bool) -> Path | None:
    """The run store a runner's ``--smoke`` run uses by default (``_build/smoke/results/runs``; None: the usual
    one under ``results/``), for :func:`mamba_recall.runstore.grid_main`'s ``default_store``."""
    return Path(SMOKE_RESULTS_DIR) / "runs" if smoke else None


# ------------------------------------------------------------------------------------------ writing files


def _write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and fsync it: the one low-level writer of bundles and checkpoints (the fault
    tests replace it with one that fills the disk midway)."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(directory: Path) -> None:
    """Make the renames in ``directory`` durable (where the platform can open a folder)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_together(files: dict[Path, bytes]) -> None:
    """Write every ``{path: bytes}`` without ever leaving a half-written file: each goes to a temporary file in its
    own folder (``.<name>.<random>.tmp``), fsynced; only when all were written are they renamed over the old files
    (``os.replace``, atomic within a folder), in the order given (the JSON that names the others' hashes last). A
    failure while writing (a full disk: ``OSError(ENOSPC)``) removes the temporary files and re-raises, leaving
    the previous files byte-identical. The renames take microseconds; a crash between two of them leaves new
    tables beside the old JSON, which loading reports (their sha256 does not match), never a silently wrong
    bundle."""
    temps: list[tuple[Path, Path]] = []
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
    for folder in {p.parent for p in files}:
        _fsync_dir(folder)


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


#: The floats ``null`` entries of :data:`NONFINITE` become: the very objects ``json`` gives a bare ``NaN`` in a
#: legacy file, so a value read from either compares equal to the other (``[nan] == [nan]`` holds by identity).
_NONFINITE_FLOATS = {
    "NaN": getattr(json.decoder, "NaN", float("nan")),
    "Infinity": getattr(json.decoder, "PosInf", float("inf")),
    "-Infinity": getattr(json.decoder, "NegInf", float("-inf")),
}


def _restore_nonfinite(record: dict, path: Path, what: str, regen: str) -> dict:
    """Put back the non-finite floats that :func:`_strict` wrote as ``null`` (legacy files have no list: a bare
    ``NaN`` in them is read as NaN by ``json``)."""
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
    """Raise :class:`BundleError` when ``record`` carries a content hash that its values do not match (legacy
    files without one pass)."""
    recorded = record.get(CONTENT_HASH)
    if recorded is None:
        return
    if recorded != _content_sha256(record):
        raise BundleError(
            f"corrupt {what} {path}: its values do not match the sha256 recorded in it ({CONTENT_HASH}; changed "
            f"or damaged since it was written); delete it and regenerate it with: {regen}"
        )


def save_bundle(
    name: str,
    data: dict,
    config: dict,
    *,
    command: str,
    device="cpu",
    wall_seconds=None,
    tables: dict[str, pd.DataFrame] | None = None,
    directory: Path | None = None,
) -> Path:
    """Write ``<directory>/<name>.json`` (and one CSV per table) with provenance; return the JSON path.

    ``command`` is the one command that regenerates the bundle (shown when loading fails). The JSON is strict
    (NaN and ±inf as ``null``) and carries its :data:`CONTENT_HASH`; the JSON and the CSVs replace the previous
    files together, only once all were written (:func:`_write_together`: a full disk leaves the old bundle
    intact). A smoke bundle (name ending ``_smoke``, or ``config["smoke"]`` true) is never written under
    ``results/``: it goes to :data:`SMOKE_RESULTS_DIR` (as everything does while :func:`redirect_smoke_outputs`
    is on).
    """
    if not name or "/" in name or name.startswith("."):
        raise BundleError(f"bundle name {name!r} must be a plain file stem such as 'scan_bench_cpu'.")
    smoke = name.endswith("_smoke") or (isinstance(config, dict) and config.get("smoke") is True)
    directory = _output_dir((Path(directory) if directory else RESULTS_DIR), smoke=smoke)
    directory.mkdir(parents=True, exist_ok=True)
    # before the tables are written (they would dirty the tree themselves); inside a command, its one git state
    prov = provenance(device, wall_seconds, git=_COMMAND_GIT)
    files: dict[Path, bytes] = {}
    table_index = {}
    for tname, frame in (tables or {}).items():
        csv = directory / f"{name}.{tname}.csv"
        files[csv] = frame.to_csv(index=False).encode("utf-8")
        table_index[tname] = {"file": csv.name, "sha256": hashlib.sha256(files[csv]).hexdigest()}
    record = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "command": command,
        "config": config,
        "data": data,
        "tables": table_index,
        "provenance": prov,
    }
    dirty = record["provenance"]["dirty_files"]
    if dirty:
        import sys

        if os.environ.get(ENV_REQUIRE_CLEAN) == "1":
            raise BundleError(
                f"bundle {name!r} not written: the library has uncommitted changes ({', '.join(dirty)}); "
                f"commit them first (or unset {ENV_REQUIRE_CLEAN})."
            )
        print(
            f"note: bundle {name!r} is made from uncommitted library code ({len(dirty)} files); its provenance "
            "lists them (dirty_files) and Bundle.clean is False.",
            file=sys.stderr,
        )
    path = directory / f"{name}.json"
    files[path] = _hashed_json(record, sort_keys=True)  # last: the JSON names the tables' hashes
    _write_together(files)
    return path


def _jsonable(obj):
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot store {type(obj).__name__} in a bundle; convert it to numbers, lists or dicts.")


def regenerate_command(path: Path) -> str:
    """The command that regenerates the bundle at ``path`` when its JSON cannot be read: the ``command``
    field if it survives in the text (bundles are written with sorted keys, so it comes first), else
    ``reproduce --only <runner>`` for the runner whose name starts the file's stem."""
    import re

    try:
        text = path.read_text(errors="replace")
    except OSError:
        text = ""
    found = re.search(r'"command":\s*"((?:[^"\\]|\\.)*)"', text)
    if found:
        try:
            return json.loads(f'"{found.group(1)}"')
        except json.JSONDecodeError:
            pass
    from .runners import experiment_runners

    runners = [r for r in experiment_runners() if path.stem == r or path.stem.startswith(r + "_")]
    if runners:
        preset = path.stem.rsplit("_", 1)[-1]
        at = f" --preset {preset}" if preset not in ("ci", path.stem) and "_" in path.stem else ""
        return f"python -m mamba_recall reproduce{at} --only {max(runners, key=len)}"
    return "`make reproduce` (no runner's name starts the file's name)"


def _too_new(what: str, record: dict, version: int, ours: int) -> str:
    """The message for a file a newer library wrote: update, do not regenerate (that would lose its numbers)."""
    prov = record.get("provenance") if isinstance(record.get("provenance"), dict) else {}
    by = (prov.get("versions") or {}).get("mamba_recall") if isinstance(prov.get("versions"), dict) else None
    return (
        f"{what} was written by a newer mamba_recall{f' ({by})' if by else ''} (schema v{version} > v{ours}, "
        f"which this mamba_recall {__version__} reads): update mamba_recall (`git pull` and "
        "`pip install -e .` in the repository) to read it; do not regenerate it with this older version."
    )


def load_bundle(name_or_path: str | Path, *, data_keys: tuple[str, ...] = (), directory: Path | None = None) -> Bundle:
    """Load and validate a bundle; raise :class:`BundleError` naming the problem and the fix:
    :class:`BundleMissing` when there is no file (the only error a reader may answer with a fallback),
    :class:`BundleTooNew` when a newer mamba_recall wrote it, plain :class:`BundleError` when it is corrupt (not
    JSON, a field missing, its :data:`CONTENT_HASH` or a table's sha256 not matching). Legacy bundles (no content
    hash, a bare ``NaN``) load as before."""
    path = Path(name_or_path)
    if path.suffix != ".json":
        path = (Path(directory) if directory else RESULTS_DIR) / f"{name_or_path}.json"
    if not path.exists():
        raise BundleMissing(f"no result bundle at {path}; make it with: {regenerate_command(path)}")
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BundleError(
            f"corrupt result bundle {path}: not valid JSON ({exc}; truncated?); delete it and "
            f"regenerate it with: {regenerate_command(path)}"
        ) from exc
    if not isinstance(record, dict):
        raise BundleError(
            f"corrupt result bundle {path}: the top level is not a JSON object; delete it and "
            f"regenerate it with: {regenerate_command(path)}"
        )
    regen = record.get("command") if isinstance(record.get("command"), str) else regenerate_command(path)
    _check_content_hash(record, path, "result bundle", regen)  # first: a flipped version digit is corruption
    _restore_nonfinite(record, path, "result bundle", regen)
    version = record.get("schema_version")
    if record.get("schema") == SCHEMA and isinstance(version, int) and version > SCHEMA_VERSION:
        raise BundleTooNew(_too_new(f"result bundle {path}", record, version, SCHEMA_VERSION))
    for key, typ in _REQUIRED.items():
        if not isinstance(record.get(key), typ):
            raise BundleError(
                f"corrupt result bundle {path}: field {key!r} is missing or not a {typ.__name__}; "
                f"regenerate it with: {regen}"
            )
    if record["schema"] != SCHEMA or record["schema_version"] != SCHEMA_VERSION:
        raise BundleError(
            f"result bundle {path} has schema {record['schema']!r} v{record['schema_version']}, "
            f"this library reads {SCHEMA!r} v{SCHEMA_VERSION}; regenerate it with: {regen}"
        )
    missing = [k for k in data_keys if k not in record["data"]]
    if missing:
        raise BundleError(f"result bundle {path} lacks data {missing}; regenerate it with: {regen}")
    tables = {}
    for tname, entry in record["tables"].items():
        csv = path.parent / str(entry.get("file", ""))
        if not csv.is_file() or _prov.sha256(csv) != entry.get("sha256"):
            raise BundleError(
                f"result bundle {path}: table {tname!r} ({csv.name}) is missing or does not match "
                f"its recorded sha256; regenerate it with: {regen}"
            )
        tables[tname] = pd.read_csv(csv)
    return Bundle(
        record["name"], record["config"], record["data"], record["provenance"], record["command"], tables, path
    )


def load_preset_bundle(
    stem: str, preset: str, *, data_keys: tuple[str, ...] = (), directory: Path | None = None, log=print
) -> Bundle:
    """Load the bundle ``<stem>_<preset>`` of a runner; if that preset's bundle was never made (a paper-size
    run needs a GPU) load ``<stem>_ci`` instead **and say so** through ``log``. A bundle that exists but is
    corrupt raises :class:`BundleError` (never replaced by another one)."""
    directory = Path(directory) if directory else RESULTS_DIR
    if preset != "ci" and not (directory / f"{stem}_{preset}.json").exists():
        log(
            f"no {stem}_{preset} bundle in {directory} (regenerate it with "
            f"`python -m mamba_recall reproduce --preset {preset} --only {stem}`); using the committed ci bundle "
            f"{stem}_ci"
        )
        preset = "ci"
    return load_bundle(f"{stem}_{preset}", data_keys=data_keys, directory=directory)


#: The presets in order of the strength of their evidence (the papers' whole grids, their settings on part of the
#: grid with 3 seeds, the small CI version).
EVIDENCE_ORDER = ("paper", "cpu-hours", "ci")


def load_strongest_bundle(
    stem: str, *, data_keys: tuple[str, ...] = (), directory: Path | None = None, log=print, lacks=None
) -> Bundle:
    """The committed bundle ``<stem>_<preset>`` with the strongest evidence (:data:`EVIDENCE_ORDER`), skipping
    bundles that say they are incomplete (``data.complete`` false: a grid still running) and **saying which one it
    uses** through ``log``; the bundle's ``config["preset"]`` (or its name) names the preset for the page.
    ``lacks(bundle) -> str | None``: what a bundle lacks for the caller's check (None: nothing), e.g. a grid cell a
    stronger preset's grid does not have; such a bundle is skipped too, with that reason in the log."""
    directory = Path(directory) if directory else RESULTS_DIR
    skipped = []
    for preset in EVIDENCE_ORDER:
        if not (directory / f"{stem}_{preset}.json").exists():
            continue
        bundle = load_bundle(f"{stem}_{preset}", data_keys=data_keys, directory=directory)
        if bundle.data.get("complete") is False:
            skipped.append(
                f"{stem}_{preset} (incomplete: {bundle.data.get('jobs_finished')} of "
                f"{bundle.data.get('jobs_total')} jobs)"
            )
            continue
        missing = lacks(bundle) if lacks is not None else None
        if missing:
            skipped.append(f"{stem}_{preset} ({missing})")
            continue
        log(f"using {stem}_{preset}" + (f"; skipped {', '.join(skipped)}" if skipped else ""))
        return bundle
    raise BundleMissing(
        f"no complete bundle {stem}_<preset> for any of {EVIDENCE_ORDER} in {directory}"
        + (f" (incomplete: {', '.join(skipped)})" if skipped else "")
        + "; regenerate one with "
        f"`python -m mamba_recall reproduce --only {stem}`."
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
        "provenance": provenance(device, wall_seconds, git=_COMMAND_GIT),
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
