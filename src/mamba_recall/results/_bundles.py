"""Where bundles go and how one is read: the smoke-output redirect (:func:`smoke_results_dir`: smoke runs
never write under ``results/``), :func:`save_bundle` and :func:`load_bundle` (one file; an experiment's evidence is
read through :func:`mamba_recall.results.evidence`, which calls it). The one module that reads ``RESULTS_DIR`` when
called (and ``SMOKE_RESULTS_DIR``): a test that moves the results folder patches it here."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import json
import time
from pathlib import Path

import pandas as pd

from ..paths import BUILD_DIR, RESULTS_DIR
from ..context import current
from ._files import (
    _check_content_hash,
    _hashed_json,
    _parse,
    _read_record,
    _restore_nonfinite,
    _write_together,
    read_together,
)
from ._records import (
    _REQUIRED,
    CONTENT_HASH,
    SCHEMA,
    SCHEMA_VERSION,
    Bundle,
    BundleError,
    BundleMissing,
    command_git_state,
    provenance,
    require_clean,
)

#: Where smoke runs write what would go under ``results/`` (the README's promise): bundles, checkpoints, run stores.
SMOKE_RESULTS_DIR = BUILD_DIR / "smoke" / "results"


def smoke_results_dir() -> Path:
    """Where a smoke run writes what would go under ``results/`` (:data:`SMOKE_RESULTS_DIR`, read when called: a test
    that moves it patches it here). A smoke run is one whose run context has it as ``smoke_dir``
    (:func:`mamba_recall.context.enter`, ``run_context``): ``setup(..., smoke=True)`` enters it for the kernel, and
    the processes the kernel starts inherit it. Nothing a smoke run saves lands under ``results/``; a bundle that says
    it is a smoke run is redirected whether or not a smoke run is on (:func:`save_bundle`)."""
    return Path(SMOKE_RESULTS_DIR)


def _smoke_root() -> Path | None:
    """The smoke folder while a smoke run is on (the run context's ``smoke_dir``: here, or inherited from the
    process that started this one), else None."""
    return current().smoke_dir


def smoke_active() -> bool:
    """True while a smoke run is on (``setup(..., smoke=True)``): its numbers are not evidence."""
    return _smoke_root() is not None


def _redirected(directory: Path, *, smoke: bool = False) -> Path:
    """``directory``, or its place under the smoke folder when it lies under ``results/`` and a smoke run is on
    (the run context's smoke folder) or the thing written says it is a smoke run (``smoke``)."""
    directory = Path(directory)
    target_root = _smoke_root()
    if target_root is None and not smoke:
        return directory
    target_root = target_root if target_root is not None else Path(SMOKE_RESULTS_DIR)
    results = Path(RESULTS_DIR).resolve()
    resolved = directory.resolve()
    if resolved == results or results in resolved.parents:
        return target_root / resolved.relative_to(results)
    return directory


def _output_dir(directory: Path, *, smoke: bool = False) -> Path:
    """:func:`_redirected`, saying so when a smoke run writes elsewhere than ``directory``."""
    target = _redirected(directory, smoke=smoke)
    if target.resolve() != Path(directory).resolve():
        print(f"smoke run: writing into {target} instead of {directory} (results/ holds real runs only)")
    return target


def written_path(path: Path, *, smoke: bool = False) -> Path:
    """Where a writer puts ``path`` in the run context in force (:func:`_redirected`): itself, or its place under
    the smoke folder during a smoke run or when the thing written says it is one (``smoke``)."""
    path = Path(path)
    return _redirected(path.parent, smoke=smoke) / path.name


def smoke_run_store(smoke: bool) -> Path | None:
    """The run store a runner's ``--smoke`` run uses by default (``_build/smoke/results/runs``; None: the usual
    one under ``results/``), for :func:`mamba_recall.runstore.grid_main`'s ``default_store``."""
    return Path(SMOKE_RESULTS_DIR) / "runs" if smoke else None


#: ``(bundle name, command)`` while a declared experiment's grid writes its bundle (:func:`recorded_command`)
_RECORDED: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("recorded_command", default=None)


@contextlib.contextmanager
def recorded_command(name: str, command: str):
    """While in this block, the bundle ``name`` is saved recording ``command``, whatever command its writer passes
    (:func:`save_bundle`): the grid of a declared experiment (:func:`mamba_recall.experiment.run_experiment`) records
    the one command that runs it, ``python -m mamba_recall grid <name> --preset P ...``, though its bundle is
    written by the runner code that wrote it before the registry. Other bundles are not affected."""
    token = _RECORDED.set((name, command))
    try:
        yield
    finally:
        _RECORDED.reset(token)


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

    ``command`` is the one command that regenerates the bundle (shown when loading fails; inside
    :func:`recorded_command` for this ``name``, the command given there). The JSON is strict
    (NaN and ±inf as ``null``) and carries its :data:`CONTENT_HASH`; the JSON and the CSVs replace the previous
    files together, only once all were written (:func:`_write_together`: a full disk leaves the old bundle
    intact). A smoke bundle (name ending ``_smoke``, or ``config["smoke"]`` true) is never written under
    ``results/``: it goes to :data:`SMOKE_RESULTS_DIR` (as everything does while a smoke run's context
    is on).
    """
    if not name or "/" in name or name.startswith("."):
        raise BundleError(f"bundle name {name!r} must be a plain file stem such as 'scan_bench_cpu'.")
    recorded = _RECORDED.get()
    if recorded is not None and recorded[0] == name:
        command = recorded[1]
    smoke = name.endswith("_smoke") or (isinstance(config, dict) and config.get("smoke") is True)
    directory = _output_dir((Path(directory) if directory else RESULTS_DIR), smoke=smoke)
    directory.mkdir(parents=True, exist_ok=True)
    # before the tables are written (they would dirty the tree themselves); inside a command, its one git state
    prov = provenance(device, wall_seconds, git=command_git_state())
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
    require_clean(f"bundle {name!r}", record["provenance"])
    path = directory / f"{name}.json"
    files[path] = _hashed_json(record, sort_keys=True)  # last: the JSON names the tables' hashes
    _write_together(files)
    return path


def read_bundle_record(path: Path) -> dict:
    """The JSON record of the bundle (or checkpoint sidecar) at ``path`` as written, its content hash checked and
    dropped and its non-finite values restored (NaN, not ``null``): what :func:`rewrite_bundle` takes back after a
    change (the migration of old names, :func:`mamba_recall.runstore.migrate_names`). :class:`BundleError` when it is
    not strict JSON or its hash is missing or does not match."""
    path = Path(path)
    regen = regenerate_command(path)
    record = _parse(path.read_bytes(), path, "result file", f"regenerate it with: {regen}")
    _check_content_hash(record, path, "result file", regen)
    record.pop(CONTENT_HASH, None)
    return _restore_nonfinite(record, path, "result file", regen)


def rewritten_bytes(record: dict, *, sort_keys: bool = True) -> bytes:
    """The bytes :func:`rewrite_bundle` writes for ``record``: strict JSON with its content hash (``sort_keys=False``:
    a checkpoint's sidecar, its keys in their order). What a migration that rewrites a file records as its sha256
    after, before it writes it."""
    return _hashed_json(record, sort_keys=sort_keys)


def rewrite_bundle(path: Path, record: dict, tables: dict[Path, bytes], *, sort_keys: bool = True) -> None:
    """Replace the bundle at ``path`` by ``record`` (as :func:`read_bundle_record` gives it, changed; its
    ``tables`` entries naming each table's sha256) and the table files ``tables`` (path -> new bytes), all together
    or none (:func:`_write_together`), the JSON written as :func:`save_bundle` writes it, with its content hash
    (``sort_keys=False``: as a checkpoint's sidecar is written, its keys in their order; :func:`rewritten_bytes`)."""
    _write_together({**tables, Path(path): rewritten_bytes(record, sort_keys=sort_keys)})


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
    from ..runners import experiment_runners

    runners = [r for r in experiment_runners() if path.stem == r or path.stem.startswith(r + "_")]
    if runners:
        preset = path.stem.rsplit("_", 1)[-1]
        at = f" --preset {preset}" if preset not in ("ci", path.stem) and "_" in path.stem else ""
        return f"python -m mamba_recall reproduce{at} --only {max(runners, key=len)}"
    return "`make reproduce` (no runner's name starts the file's name)"


#: How often :func:`load_bundle` reads a bundle whose table does not match its JSON before calling it corrupt (a
#: writer that takes no lock can replace the files between two reads; one that locks never lets a reader see that).
_READ_ATTEMPTS = 4


class _Changed(BundleError):
    """A table did not match the JSON read beside it: corrupt, or replaced while it was read (read again)."""


def _table_paths(path: Path, raw: bytes) -> list[Path]:
    """The table files a bundle's JSON text names (none when it does not parse: the caller reports that)."""
    try:
        record = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return []
    tables = record.get("tables") if isinstance(record, dict) else None
    if not isinstance(tables, dict):
        return []
    return [path.parent / str(t.get("file", "")) for t in tables.values() if isinstance(t, dict) and t.get("file")]


def _load_once(path: Path, data_keys: tuple[str, ...]) -> tuple[dict, dict, str]:
    """One consistent read of the bundle (its JSON and tables under the folder's shared lock, each file once,
    :func:`read_together`), checked and parsed from those bytes: ``(record, {table: DataFrame}, the command that
    regenerates it)``."""
    try:
        raw, blobs = read_together(path, lambda raw: _table_paths(path, raw))
    except FileNotFoundError:
        raise BundleMissing(f"no result bundle at {path}; make it with: {regenerate_command(path)}") from None
    record, regen = _read_record(
        raw,
        path,
        "result bundle",
        SCHEMA,
        SCHEMA_VERSION,
        fix=f"delete it and regenerate it with: {regenerate_command(path)}",
        regen=lambda record: record["command"] if isinstance(record.get("command"), str) else regenerate_command(path),
    )
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
        csv = path.parent / str(entry.get("file", "") if isinstance(entry, dict) else "")
        blob = blobs.get(csv)
        if blob is None or hashlib.sha256(blob).hexdigest() != entry.get("sha256"):
            raise _Changed(
                f"result bundle {path}: table {tname!r} ({csv.name}) is missing or does not match "
                f"its recorded sha256; regenerate it with: {regen}"
            )
        tables[tname] = pd.read_csv(io.BytesIO(blob))  # the very bytes whose hash was checked
    return record, tables, regen


def load_bundle(name_or_path: str | Path, *, data_keys: tuple[str, ...] = (), directory: Path | None = None) -> Bundle:
    """Load and validate a bundle; raise :class:`BundleError` naming the problem and the fix:
    :class:`BundleMissing` when there is no file (the only error a reader may answer with a fallback),
    :class:`BundleTooNew` when a newer mamba_recall wrote it, plain :class:`BundleError` when it is corrupt (not
    JSON, a bare ``NaN``, a field missing, its :data:`CONTENT_HASH` missing or not matching, a table's sha256 not
    matching)."""
    path = Path(name_or_path)
    if path.suffix != ".json":
        path = (Path(directory) if directory else RESULTS_DIR) / f"{name_or_path}.json"
    if not path.exists():
        raise BundleMissing(f"no result bundle at {path}; make it with: {regenerate_command(path)}")
    for attempt in range(_READ_ATTEMPTS):
        try:
            record, tables, regen = _load_once(path, data_keys)
            break
        except _Changed as exc:  # a writer that does not lock replaced a file between two reads: read again
            if attempt == _READ_ATTEMPTS - 1:
                raise BundleError(str(exc)) from None
            time.sleep(0.05 * (attempt + 1))
    return Bundle(
        record["name"],
        record["config"],
        record["data"],
        record["provenance"],
        regen,  # the recorded command (a required field, checked above)
        tables,
        path,
    )
