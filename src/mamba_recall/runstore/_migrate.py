"""Migrating a store's run files to the current schema, once, under a recorded migration
(``python -m mamba_recall.runstore migrate [--store FOLDER] [--dry-run]``, :func:`migrate_store`).

Version 1 run files (written before run files carried a hash) have no ``sha256``, so nothing showed that one was not
edited after it was written; and a version 2 file edited by hand could pass for one by saying ``"schema_version": 1``
and dropping its hash. The reader (:func:`check_record`) now reads hashed records only; a store's version 1 files are
rewritten once as version 2: the same record (key, experiment, config, seed, runner, result, provenance), NaN and
infinities moved to ``nonfinite`` as version 2 keeps them, ``provenance.schema_migration`` saying when and by which
record, and the ``sha256`` over the whole. Each file is checked before it is replaced (its key against its content,
as the version 1 reader did) and after (read back through :func:`check_record`: its ``result`` and ``config`` equal
the version 1 file's, exactly), and written atomically.

The migration is recorded in ``MIGRATIONS.json`` at the top of the store (beside the experiments' folders, so never
read as a run): per migration the date, the schema versions, the code's commit (and its uncommitted run-store
files, if any), the command, and per file its path, the sha256 of the version 1 file as it was (``git show
<commit>:<path>`` gives it back) and the new record's hash. Nothing is written when any version 1 file fails its
checks (they are listed with the fix), nor when there is nothing to migrate.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import sys
from pathlib import Path

from ._errors import RunFileError
from ._records import (
    RUNS_DIR,
    SCHEMA,
    SCHEMA_VERSION,
    _encode_result,
    _fix,
    check_legacy_record,
    check_record,
    record_hash,
    repo_relative,
)
from ._store import _write_atomic

MIGRATIONS_NAME = "MIGRATIONS.json"
MIGRATIONS_SCHEMA = "mamba_recall.run_migrations"
COMMAND = "python -m mamba_recall.runstore migrate"


def _same(a, b) -> bool:
    """Equal as JSON (NaN equal to NaN; keys in any order)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def upgrade_record(rec: dict, note: dict) -> dict:
    """The version :data:`SCHEMA_VERSION` record of the checked version 1 record ``rec``: the same fields, NaN and
    infinities of the result in ``nonfinite``, ``note`` as ``provenance.schema_migration``, and the ``sha256``."""
    new = json.loads(json.dumps(rec))  # a deep copy (NaN kept)
    new["result"], new["nonfinite"] = _encode_result(new["result"])
    new["schema_version"] = SCHEMA_VERSION
    new["provenance"]["schema_migration"] = dict(note)
    new["sha256"] = record_hash(new)
    return new


def _code_state() -> dict:
    from .. import provenance as _prov

    dirty = _prov.git("status", "--porcelain", "--", "src/mamba_recall/runstore")
    return {
        "code_commit": _prov.git("rev-parse", "HEAD"),
        "code_uncommitted": sorted(line[3:] for line in (dirty or "").splitlines() if line.strip()),
    }


def migrate_store(store: Path | None = None, *, dry_run: bool = False, log=print) -> dict | None:
    """Rewrite every version 1 run file of ``store`` (default :data:`RUNS_DIR`) as a version 2 record and append the
    migration to ``<store>/MIGRATIONS.json`` (see the module docstring); returns the migration's entry, or None when
    there was nothing to migrate. ``dry_run``: check and report, write nothing. Raises :class:`RunFileError` (nothing
    written) when a version 1 file fails its checks."""
    store = Path(store or RUNS_DIR)
    todo, problems = [], []
    for path in sorted(store.glob("*/*.json")):
        text = path.read_text()
        try:
            rec = json.loads(text)
        except ValueError:
            continue  # not a version 1 record; the reader names it
        if not (isinstance(rec, dict) and rec.get("schema") == SCHEMA and rec.get("schema_version") == 1):
            continue
        try:
            check_legacy_record(rec, path)
        except RunFileError as exc:
            problems.append(str(exc))
            continue
        todo.append((path, text, rec))
    if problems:
        raise RunFileError(
            f"{len(problems)} version 1 run file(s) of {store} fail their checks, so nothing was migrated:\n  "
            + "\n  ".join(problems)
            + f"\nfix or delete them, then run `{COMMAND}` again."
        )
    if not todo:
        log(f"{store}: no version 1 run file; nothing to migrate.")
        return None
    date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    record_path = store / MIGRATIONS_NAME
    note = {"from_schema_version": 1, "date": date, "record": repo_relative(record_path)}
    files, upgraded = [], []
    for path, text, rec in todo:
        new = upgrade_record(rec, note)
        back = check_record(json.loads(json.dumps(new, allow_nan=False)), path)
        old_prov = dict(rec["provenance"])
        new_prov = {k: v for k, v in back["provenance"].items() if k != "schema_migration"}
        same = all(_same(back[k], rec[k]) for k in ("key", "experiment", "config", "seed", "runner", "result"))
        if not (same and _same(new_prov, old_prov)):
            raise RunFileError(f"migrating {path} would change its record; nothing was migrated. {_fix(path)}.")
        files.append(
            {
                "file": str(path.relative_to(store)),
                "sha256_before": hashlib.sha256(text.encode()).hexdigest(),
                "sha256": new["sha256"],
            }
        )
        upgraded.append((path, new))
    entry = {
        "date": date,
        "from_schema_version": 1,
        "to_schema_version": SCHEMA_VERSION,
        "why": "version 1 run files carried no sha256: the reader now refuses unhashed records",
        "command": COMMAND + ("" if store == RUNS_DIR else f" --store {store}"),
        **_code_state(),
        "n_files": len(files),
        "files": files,
    }
    if dry_run:
        log(f"{store}: {len(files)} version 1 run file(s) would be migrated to version {SCHEMA_VERSION} (dry run).")
        return entry
    record = {"schema": MIGRATIONS_SCHEMA, "migrations": []}
    if record_path.is_file():
        record = json.loads(record_path.read_text())
        if record.get("schema") != MIGRATIONS_SCHEMA:
            raise RunFileError(f"{record_path} is not a migration record ({record.get('schema')!r}); move it away.")
    record["migrations"].append(entry)
    # the record first: a migration interrupted half-way is recorded, and the same command migrates the rest
    _write_atomic(record_path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    for path, new in upgraded:
        _write_atomic(path, json.dumps(new, indent=1, sort_keys=True, allow_nan=False) + "\n")
    log(
        f"{store}: migrated {len(files)} run file(s) from schema version 1 to {SCHEMA_VERSION} (results unchanged, "
        f"each now hashed); recorded in {record_path}."
    )
    return entry


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        prog=COMMAND, description="Rewrite a run store's version 1 (unhashed) run files as hashed version 2 records."
    )
    ap.add_argument("--store", default=None, help=f"run store (default {RUNS_DIR})")
    ap.add_argument("--dry-run", action="store_true", help="check and count, write nothing")
    args = ap.parse_args(argv)
    try:
        migrate_store(Path(args.store) if args.store else None, dry_run=args.dry_run)
    except RunFileError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(1) from None
