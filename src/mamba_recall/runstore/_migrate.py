"""Migrating a store's run files to the current schema and names, once each, under a recorded migration
(``python -m mamba_recall.runstore migrate [--store FOLDER] [--results FOLDER] [--dry-run]``: :func:`migrate_store`,
then :func:`migrate_names`).

Schema. Version 1 run files (written before run files carried a hash) have no ``sha256``, so nothing showed that one
was not edited after it was written; and a version 2 file edited by hand could pass for one by saying
``"schema_version": 1`` and dropping its hash. The reader (:func:`check_record`) reads hashed records only; a store's
version 1 files are rewritten once as version 2: the same record (key, experiment, config, seed, runner, result,
provenance), NaN and infinities moved to ``nonfinite`` as version 2 keeps them, ``provenance.schema_migration``
saying when and by which record, and the ``sha256`` over the whole. Each file is checked before it is replaced (its
key against its content, as the version 1 reader did) and after (read back through :func:`check_record`: its
``result`` and ``config`` equal the version 1 file's, exactly), and written atomically.

Names. Experiments were renamed twice after their runs were written (:data:`KEYED_BEFORE`); their runs kept the old
name in ``experiment``, the old key, and the old runner path, which the library used to map at read time. Each such
run is rewritten once under today's name (its folder), the key that name gives (the same config and seed) and today's
job function, with ``provenance.name_migration`` and a new ``sha256``; the bundles that list their keys or record an
old command are rewritten to match (:func:`migrate_names`), so that the reader hashes today's names only. Runner
modules were renamed too (:data:`MODULES_RENAMED`): a run whose ``runner`` names a renamed module keeps its key and
file and is rewritten with today's job function (``provenance.name_migration.why``: runner module renamed), and the
bundles' ``config.runner`` and the commands that bundles and checkpoint sidecars record name today's module.

Each migration is recorded in ``MIGRATIONS.json`` at the top of the store (beside the experiments' folders, so never
read as a run): its date, the code's commit (and its uncommitted run-store files, if any), the command, and per file
its path (and new path), the sha256 of the file as it was (``git show <commit>:<path>`` gives it back) and the new
record's hash. Nothing is written when any file fails its checks (they are listed with the fix), nor when there is
nothing to migrate, so the command can be run again at any time.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import importlib
import json
import re
import shlex
import sys
from pathlib import Path

import joblib

from ._errors import RunFileError
from ._records import (
    _FIELDS,
    RUNS_DIR,
    SCHEMA,
    SCHEMA_VERSION,
    _encode_result,
    _plain,
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


def _append_migration(record_path: Path, entry: dict) -> None:
    """Append ``entry`` to the store's migration record ``record_path`` (created if absent), written atomically;
    RunFileError when the file there is not a migration record."""
    record = {"schema": MIGRATIONS_SCHEMA, "migrations": []}
    if record_path.is_file():
        record = json.loads(record_path.read_text())
        if record.get("schema") != MIGRATIONS_SCHEMA:
            raise RunFileError(f"{record_path} is not a migration record ({record.get('schema')!r}); move it away.")
    record["migrations"].append(entry)
    _write_atomic(record_path, json.dumps(record, indent=1, sort_keys=True) + "\n")


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
    # the record first: a migration interrupted half-way is recorded, and the same command migrates the rest
    _append_migration(record_path, entry)
    for path, new in upgraded:
        _write_atomic(path, json.dumps(new, indent=1, sort_keys=True, allow_nan=False) + "\n")
    log(
        f"{store}: migrated {len(files)} run file(s) from schema version 1 to {SCHEMA_VERSION} (results unchanged, "
        f"each now hashed); recorded in {record_path}."
    )
    return entry


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        prog=COMMAND,
        description="Rewrite a run store's version 1 (unhashed) run files as hashed version 2 records, then its runs "
        "and bundles still under an experiment's old name or key under today's (each migration recorded once in "
        "the store's MIGRATIONS.json).",
    )
    ap.add_argument("--store", default=None, help=f"run store (default {RUNS_DIR})")
    ap.add_argument("--results", default=None, help="the bundles' folder (default: the store's parent)")
    ap.add_argument("--dry-run", action="store_true", help="check and count, write nothing")
    args = ap.parse_args(argv)
    store = Path(args.store) if args.store else None
    try:
        migrate_store(store, dry_run=args.dry_run)
        migrate_names(store, Path(args.results) if args.results else None, dry_run=args.dry_run)
    except RunFileError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(1) from None


# ------------------------------------------------------------------------------------------------ names


#: The experiments renamed after their runs were keyed: today's name -> the name their keys hashed until the name
#: migration (:func:`migrate_names`). Two renames happened: some experiments took the name of their runner
#: (``ch3.keep_train`` became ``ch3.keep_nth``), then every name's dot became ``_`` (``ch3.keep_nth`` became
#: ``ch3_keep_nth``); the runs kept the key of the name they were first keyed with, and the name they were written
#: under in their ``experiment`` field. The migration's history, read by nothing else: the reader hashes today's
#: name only (:func:`mamba_recall.runstore.job_key`). Never edit an entry.
KEYED_BEFORE = {
    "ch1_checkpoints": "ch1.checkpoints",
    "ch1_full_mamba": "ch1.cpu_hours_full_mamba",
    "ch1_full_onehot": "ch1.cpu_hours_full_onehot",
    "ch1_mechanism": "ch1.cpu_hours_models",
    "ch1_table1": "ch1.cpu_hours_table1",
    "ch1_table1_matched": "ch1.cpu_hours_table1_matched",
    "ch1_wo": "ch1.cpu_hours_wo",
    "ch2_fig10_11": "ch2.fig10_11",
    "ch2_fig7": "ch2.fig7",
    "ch2_fig8": "ch2.fig8",
    "ch2_multihead": "ch2.multihead",
    "ch2_reference_grid": "ch2.reference_grid",
    "ch2_scaling": "ch2.scaling",
    "ch2_tab10": "ch2.tab10",
    "ch2_thm5": "ch2.thm5",
    "ch2_trained_dn": "ch2.trained_dn",
    "ch3_induction": "ch3.ih_train",
    "ch3_keep_nth": "ch3.keep_train",
    "ch3_mqar_figa3": "ch3.mqar_figa3",
    "ch3_mqar_train": "ch3.mqar_train",
    "ch4_edge": "ch4.edge",
    "ch4_edge_checks": "ch4.edge_checks",
    "ch4_edge_mix": "ch4.edge_mix",
    "ch4_train": "ch4.train",
    "ch5_capacity": "ch5.capacity",
}
#: The names the first rename gave (today's name with its dot), under which some runs were written with the keys of
#: :data:`KEYED_BEFORE`: ``ch1.table1`` runs hash ``ch1.cpu_hours_table1``.
_DOTTED = re.compile(r"^(ch\d)_")

#: The module path of the runners before each chapter got its folder (old bundles' commands, old runs' ``runner``)
OLD_RUNNERS = "mamba_recall.experiments."
#: Runners folded into another before the migration, old short name -> the runner whose command took the same
#: arguments (a recorded ``ch2_figs_cpu --preset cpu-hours --parts fig7`` was run as ``ch2_scaling ...``)
MERGED_BEFORE = {"ch2_figs_cpu": "ch2_scaling", "ch1_cpu_hours": "ch1_training"}
#: Runner modules renamed after runs, bundles and checkpoint sidecars recorded them (issue 54, "configs and names": a
#: module is named for what it holds, not for a preset, and the runner of ``ch1_checkpoints`` as its experiment): the
#: module path they were recorded under -> today's. A run file's ``runner``, a bundle's ``config.runner`` and a
#: recorded ``python -m <module>`` command naming one are rewritten once by :func:`migrate_names`
#: (:func:`today_module`); a runner's short name follows its module (``ch1_training`` is ``ch1_checkpoints``, so
#: :data:`MERGED_BEFORE`'s ``ch1_cpu_hours`` resolves through it). The migration's history, read by nothing else: no
#: module of these paths exists today. Never edit an entry.
MODULES_RENAMED = {
    "mamba_recall.chapters.ch1_gradient_dynamics.runners.cpu_hours": (
        "mamba_recall.chapters.ch1_gradient_dynamics.runners.grid"
    ),
    "mamba_recall.chapters.ch1_gradient_dynamics.runners.cpu_hours_jobs": (
        "mamba_recall.chapters.ch1_gradient_dynamics.runners.grid_jobs"
    ),
    "mamba_recall.chapters.ch1_gradient_dynamics.runners.cpu_hours_bundles": (
        "mamba_recall.chapters.ch1_gradient_dynamics.runners.grid_bundles"
    ),
    "mamba_recall.chapters.ch1_gradient_dynamics.runners.training": (
        "mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints"
    ),
    "mamba_recall.chapters.ch2_hashing_scaling.runners.figs_cpu": (
        "mamba_recall.chapters.ch2_hashing_scaling.runners.figure_grids"
    ),
}

#: Run-store experiments that are not declared (:func:`mamba_recall.experiment.experiments`) because their jobs are
#: made from another grid's finished runs: name -> ``(jobs, runner)``, ``jobs`` the ``"module:function"`` of
#: ``(preset, smoke, store) -> jobs`` (found at run time, as the run store's job functions are), ``runner`` their job
#: function. None today: Chapter 4's edge checks, the one such grid, is declared (``ch4_edge_checks``).
DERIVED: dict[str, tuple[str, str]] = {}
PRESETS = ("ci", "cpu-hours", "paper")
NAMES_WHY = (
    "runs and bundles of renamed experiments kept their old names and keys (read through a table of old names): "
    "each is rewritten under today's name, key and runner"
)
#: why a migration that renames no experiment rewrites run files, bundles and sidecars: runner modules renamed
RUNNERS_WHY = (
    "run files, bundles and checkpoint sidecars recorded runner modules renamed since (MODULES_RENAMED): each "
    "names today's module (the runs' keys, names and results unchanged)"
)
#: ``provenance.name_migration.why`` of a run file renamed with its experiment, and of one whose runner was renamed
EXPERIMENT_RENAMED = "experiment renamed; key rehashed"
RUNNER_RENAMED = "runner module renamed"


def _key(name: str, rec: dict) -> str:
    return joblib.hash({"experiment": name, "config": _plain(rec["config"]), "seed": rec["seed"]})


def _old_names(folder: str) -> set[str]:
    """The names a run of today's experiment ``folder`` may record: today's, the one its keys hashed before and the
    dotted one of the first rename."""
    return {folder, KEYED_BEFORE.get(folder, folder), _DOTTED.sub(r"\1.", folder)}


def _function(ref: str):
    module, _, func = ref.partition(":")
    return getattr(importlib.import_module(module), func)


def declared_experiments():
    """The declared experiments (:func:`mamba_recall.experiment.experiments`), found at run time with importlib
    (the registry sits above the run store, which never imports it by name)."""
    return importlib.import_module("mamba_recall.experiment").experiments()


def _grid_jobs(experiment, preset: str) -> list[dict]:
    try:
        return experiment.grid_jobs(preset)
    except (KeyError, ValueError, SystemExit):  # no grid at that preset (as plan passes over it)
        return []


def today_module(module: str) -> str:
    """An old runner module path (``mamba_recall.experiments.ch3_keep_nth``, a merged runner's too, or a renamed
    module of :data:`MODULES_RENAMED`) as today's runner module; any other module as it is. ValueError when an old
    path names no runner of today."""
    if module in MODULES_RENAMED:
        return MODULES_RENAMED[module]
    if not module.startswith(OLD_RUNNERS):
        return module
    from ..runners import runner_module, runner_name

    short = module[len(OLD_RUNNERS) :]
    short = MERGED_BEFORE.get(short, short)
    renamed = {runner_name(old): runner_name(new) for old, new in MODULES_RENAMED.items()}
    return runner_module(renamed.get(short, short))


def today_runner(runner: str) -> str:
    """A recorded ``"module:function"`` job function with its module as today's (:func:`today_module`)."""
    module, sep, function = runner.partition(":")
    return f"{today_module(module)}{sep}{function}"


def today_command(command):
    """A recorded ``python -m <old runner path> ARGS`` as today's runner module with the same arguments (the
    command of a bundle that no declared experiment writes); any other command as it is."""
    if not isinstance(command, str):
        return command
    words = shlex.split(command)
    if "-m" not in words[:-1]:
        return command
    i = words.index("-m") + 1
    module = today_module(words[i])
    return command if module == words[i] else shlex.join([*words[:i], module, *words[i + 1 :]])


def canonical_command(command, experiments):
    """The one command of today for a recorded ``command``: the declared experiment's grid command
    (:meth:`Experiment.command`) when ``command`` (as today's runner module, :func:`today_command`) is the command of
    the runner of the experiment's own name that ran that grid before the registry (``python -m <runner of NAME>
    --preset P``, ``--allow-long`` aside, ``P`` a preset the experiment has a grid at;
    :func:`mamba_recall.runners.runner_command`); else :func:`today_command` (a runner that makes several experiments'
    results, or none)."""
    from ..runners import runner_command

    today = today_command(command)
    if not isinstance(today, str):
        return today
    words = [w for w in shlex.split(today) if w != "--allow-long"]
    for e in experiments:
        try:
            runner = runner_command(e.name)
        except ValueError:  # no runner module of its name: its grid command is the only one it ever had
            continue
        for preset in PRESETS:
            if preset in e.sizes and shlex.split(f"{runner} --preset {preset}") == words:
                return e.command(preset)
    return today


#: Checkpoints that one runner command of several experiments made before every declared experiment ran only by its
#: name (issue 54): (that command without ``--allow-long``, the start of the checkpoint's file name) -> the declared
#: experiment whose jobs write that checkpoint, and its preset. ``ch1_training --preset cpu-hours`` trained Chapter 1's
#: parts in one command; the ``ch1_<k1|k2|k4>_cpu-hours_seed<s>`` checkpoints are its models part, ``ch1_mechanism``.
#: ``ch4_edge --preset cpu-hours --recipes R`` trained one recipe's seeds of ``ch4_edge``.
#: Declared history: never edit an entry.
SIDECAR_EXPERIMENT_BEFORE = {
    ("python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.training --preset cpu-hours", "ch1_k"): (
        "ch1_mechanism",
        "cpu-hours",
    ),
    # the edge family's checkpoints, trained one recipe per command (``ch4_edge --recipes R``) before ``ch4_edge``
    # ran by its name only: each is a job of ``ch4_edge`` at cpu-hours (``grid ch4_edge`` runs every recipe's)
    **{
        (
            f"python -m mamba_recall.chapters.ch4_primacy_recency.runners.edge --preset cpu-hours --recipes {recipe}",
            f"ch4_edge_{recipe}_cpu-hours_seed",
        ): ("ch4_edge", "cpu-hours")
        for recipe in ("d2", "d2_bos", "d2_smalldt", "d4", "d4_long", "d4_zinit", "m2")
    },
}


def sidecar_command(path: Path, command, experiments):
    """Today's command of the checkpoint sidecar at ``path`` that records ``command``: the grid command of the
    experiment :data:`SIDECAR_EXPERIMENT_BEFORE` names for it, else :func:`canonical_command`."""
    if isinstance(command, str):
        bare = shlex.join(w for w in shlex.split(command) if w != "--allow-long")
        for (before, prefix), (name, preset) in SIDECAR_EXPERIMENT_BEFORE.items():
            if bare == before and path.name.startswith(prefix):
                return next(e for e in experiments if e.name == name).command(preset)
    return canonical_command(command, experiments)


def _sidecar_change(path: Path, experiments):
    """The checkpoint sidecar at ``path`` with today's command (:func:`sidecar_command`; the old one kept as
    ``provenance.command_before_migration``), or None when its command is today's already."""
    from ..results import read_bundle_record

    record = read_bundle_record(path)
    command = sidecar_command(path, record.get("command"), experiments)
    if command == record.get("command"):
        return None
    new = json.loads(json.dumps(record))
    new["command"] = command
    # the command first recorded stays (a later migration's: in MIGRATIONS.json, with the file's sha256 before)
    keep = new["provenance"] if isinstance(new.get("provenance"), dict) else new
    keep.setdefault("command_before_migration", record["command"])
    return new


def _sidecar_bytes(record: dict) -> bytes:
    """The bytes a checkpoint sidecar ``record`` is written as (:func:`mamba_recall.results.rewritten_bytes` with
    ``sort_keys=False``: its keys in their order, its content hash added): what the migration record's ``sha256``
    of a rewritten sidecar hashes."""
    from ..results import rewritten_bytes

    return rewritten_bytes(record, sort_keys=False)


def _check_old(rec, path: Path, folder: str) -> str | None:
    """Why the run file ``path`` (JSON ``rec``) of folder ``folder`` is not a valid run of the old or new naming
    (schema version 2, its fields, its sha256, its key under the name it was keyed with), or None."""
    if not isinstance(rec, dict) or rec.get("schema") != SCHEMA or rec.get("schema_version") != SCHEMA_VERSION:
        return f"{path} is not a version {SCHEMA_VERSION} run record"
    for name, kind in {**_FIELDS, "sha256": str, "nonfinite": list}.items():
        if not isinstance(rec.get(name), kind):
            return f"{path} lacks the field {name!r} (or it is not a {kind.__name__})"
    if record_hash(rec) != rec["sha256"]:
        return f"{path} does not match its sha256 (edited after it was written)"
    if rec["experiment"] not in _old_names(folder):
        return f"{path} records experiment {rec['experiment']!r}, not a name {folder} had"
    if path.stem != rec["key"] or rec["key"] not in {_key(folder, rec), _key(KEYED_BEFORE.get(folder, folder), rec)}:
        return f"{path} does not match its key under {folder}'s names"
    return None


def _job_sources(experiments, derived: dict, store: Path) -> dict[str, tuple[str, dict[str, dict]]]:
    """Experiment name -> (today's job function, {key: job} over every preset): the declared experiments' grids and
    the :data:`DERIVED` ones, made from the runs in ``store`` (the migrated store, so that keys are today's)."""
    out = {}
    for e in experiments:
        out[e.name] = (e.run_job, {j["key"]: j for p in PRESETS for j in _grid_jobs(e, p)})
    for name, (jobs, runner) in derived.items():
        made = _function(jobs)
        out[name] = (runner, {j["key"]: j for p in PRESETS for j in made(p, False, store)})
    return out


def _migrated(rec: dict, folder: str, runner: str, note: dict) -> dict:
    new = json.loads(json.dumps(rec))
    renamed = rec["experiment"] != folder or rec["key"] != _key(folder, rec)
    new["experiment"], new["runner"] = folder, runner
    new["key"] = _key(folder, rec)
    new["provenance"]["name_migration"] = {**note, "why": EXPERIMENT_RENAMED if renamed else RUNNER_RENAMED}
    new["sha256"] = record_hash(new)
    return new


def record_before(rec: dict, file_entry: dict) -> dict:
    """The run record that a name migration replaced, rebuilt from the record ``rec`` it wrote and its entry
    ``file_entry`` in ``MIGRATIONS.json`` (``files``): the experiment, key and runner before, and the
    ``provenance.name_migration`` before (an earlier migration's, ``name_migration_before``, or none), hashed again.
    Its ``sha256`` is the one the file had then; written as run files are, its bytes hash as ``sha256_before``."""
    old = json.loads(json.dumps(rec))
    old["experiment"], old["runner"] = file_entry["experiment_before"], file_entry["runner_before"]
    old["key"] = file_entry["file"].split("/")[-1].removesuffix(".json")
    if "name_migration_before" in file_entry:
        old["provenance"]["name_migration"] = file_entry["name_migration_before"]
    else:
        del old["provenance"]["name_migration"]
    old["sha256"] = record_hash(old)
    return old


def _bundle_changes(path: Path, keys: dict[str, str], runners: dict[str, str], commands: dict[str, str]):
    """``(record, {table file: bytes})`` of the bundle at ``path`` rewritten, or None when it needs no change: old
    run keys -> new (``keys``) anywhere in its JSON and its tables, its ``config.runner`` today's job function, its
    ``command`` today's (``commands``: a declared experiment's bundle -> :meth:`Experiment.command`, except a partial
    bundle, which is remade, never renamed: ``grid <name> --aggregate-only --partial``; else the runner module of
    today, :func:`today_command`), the old command
    kept as ``provenance.command_before_migration``; the table hashes recomputed (the content hash is, by
    ``_hashed_json`` when it is written)."""
    from ..results import read_bundle_record

    record = read_bundle_record(path)
    if not isinstance(record.get("command"), str):
        return None  # not a bundle
    pattern = re.compile(r"\b[0-9a-f]{32}\b")

    def swap(s: str) -> str:
        return pattern.sub(lambda m: keys.get(m.group(0), m.group(0)), s)

    def walk(x):
        if isinstance(x, dict):
            return {swap(k): walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return swap(x) if isinstance(x, str) else x

    new = walk(record)
    tables = {}
    for entry in (new.get("tables") or {}).values():
        csv = path.parent / entry["file"]
        before = csv.read_bytes()
        if hashlib.sha256(before).hexdigest() != entry["sha256"]:
            raise RunFileError(f"bundle {path}: its table {csv.name} does not match its sha256; remake the bundle.")
        after = swap(before.decode()).encode()
        if after != before:
            tables[csv] = after
            entry["sha256"] = hashlib.sha256(after).hexdigest()
    name = record.get("name", path.stem)
    partial = isinstance(record.get("data"), dict) and "partial" in record["data"]
    # a partial bundle keeps the command that wrote it: it is remade by the grid's --aggregate-only --partial
    command = (None if partial else commands.get(name)) or today_command(record["command"])
    config = new.get("config")
    if isinstance(config, dict) and isinstance(config.get("runner"), str):
        module, sep, func = config["runner"].partition(":")
        experiment = config.get("experiment") or name.rsplit("_", 1)[0]
        config["runner"] = runners.get(experiment) or f"{today_module(module)}{sep}{func}"
    new["command"] = command
    if _same(new, record):
        return None
    if command != record.get("command"):  # a bundle whose runner only was renamed keeps its command
        new.setdefault("provenance", {})["command_before_migration"] = record.get("command")
    return new, tables


def migrate_names(
    store: Path | None = None,
    results: Path | None = None,
    *,
    experiments=None,
    derived: dict | None = None,
    dry_run: bool = False,
    log=print,
) -> dict | None:
    """Rewrite the run files of ``store`` (default :data:`RUNS_DIR`) that still carry an experiment's old name or
    old key under today's (its folder's) name, key and runner, and those that record a job function its experiment
    no longer names (its module renamed, :data:`MODULES_RENAMED`: the same key and file, today's runner), and the
    bundles of ``results`` (default the store's
    parent) that name their keys or an old runner's command; record it in ``<store>/MIGRATIONS.json``. Returns the
    migration's entry, or None when nothing needed it.

    Each old run file is checked first (version 2, its sha256, its key under the name it was keyed with,
    :data:`KEYED_BEFORE`). The rewritten store is staged in a temporary folder and cross-checked before anything is
    written: every run file's new key is the key of a job its experiment declares at some preset (``experiments``:
    default the registry, :func:`declared_experiments`; ``derived``, default :data:`DERIVED`, the grids made from
    the staged runs), no two
    files get one key, and each rewritten record reads back (:func:`check_record`) with the same config, seed and
    result. A file that fails raises :class:`RunFileError` listing every such file, and nothing is written. Then
    each new file is written atomically and read back before its old file is removed; each bundle is rewritten
    (:func:`_bundle_changes`) with its tables, atomically. ``dry_run``: check and report, write nothing."""
    import tempfile

    from ..results import rewrite_bundle

    store = Path(store or RUNS_DIR)
    results = Path(results) if results is not None else store.parent
    experiments = declared_experiments() if experiments is None else tuple(experiments)
    derived = DERIVED if derived is None else derived
    date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    record_path = store / MIGRATIONS_NAME
    note = {"date": date, "record": repo_relative(record_path)}
    declared = {e.name: e for e in experiments}
    runners = {e.name: e.run_job for e in experiments} | {n: r for n, (_, r) in derived.items()}
    problems, todo, keep = [], [], []
    for path in sorted(store.glob("*/*.json")):
        folder = path.parent.name
        text = path.read_text()
        try:
            rec = json.loads(text)
        except ValueError:
            problems.append(f"{path} is not JSON")
            continue
        why = _check_old(rec, path, folder)
        if why:
            problems.append(why)
            continue
        if rec["experiment"] == folder and rec["key"] == _key(folder, rec):
            if folder not in runners or rec["runner"] == runners[folder]:
                keep.append((path, text, rec))
                continue
            try:  # only its runner's module renamed: today's module of the recorded one is its job function's
                today = today_runner(rec["runner"])
            except ValueError:
                today = None
            if today != runners[folder]:
                problems.append(
                    f"{path} records runner {rec['runner']!r}, which is neither {folder}'s job function "
                    f"{runners[folder]!r} nor a former name of it (MODULES_RENAMED)"
                )
                continue
        todo.append((path, text, rec))
    if problems:
        raise RunFileError(
            f"{len(problems)} run file(s) of {store} fail their checks, so nothing was migrated:\n  "
            + "\n  ".join(problems)
            + f"\nfix or delete them, then run `{COMMAND}` again."
        )
    unknown = sorted({p.parent.name for p, _, _ in todo + keep} - set(runners))
    if unknown:
        raise RunFileError(
            f"{store} holds runs of {', '.join(unknown)}, which no declared experiment is named; nothing was "
            "migrated. Declare them (chapters/<chapter>/experiments.py) or move their folders away."
        )
    staged: dict[Path, dict] = {}
    for path, _, rec in todo:
        new = _migrated(rec, path.parent.name, runners[path.parent.name], note)
        target = path.with_name(f"{new['key']}.json")
        if target in staged or any(target == p for p, _, _ in keep):
            problems.append(f"{path} and another run file both become {target.name}")
        staged[target] = new
    with tempfile.TemporaryDirectory(prefix="name-migration-") as tmp:
        view = Path(tmp)
        for path, text, _ in keep:
            (view / path.parent.name).mkdir(exist_ok=True)
            (view / path.parent.name / path.name).write_text(text)
        for target, new in staged.items():
            (view / target.parent.name).mkdir(exist_ok=True)
            (view / target.parent.name / target.name).write_text(json.dumps(new, indent=1, sort_keys=True))
        sources = _job_sources(experiments, derived, view)
        origin = {path.with_name(f"{_key(path.parent.name, rec)}.json"): path for path, _, rec in todo}
        for path in sorted(view.glob("*/*.json")):
            job = sources[path.parent.name][1].get(path.stem)
            original = origin.get(store / path.parent.name / path.name, store / path.parent.name / path.name)
            if job is None:
                problems.append(
                    f"{original} matches no job {path.parent.name} declares at {', '.join(PRESETS)} (its key "
                    f"would be {path.stem})"
                )
                continue
            rec = json.loads(path.read_text())
            if not (_same(job["config"], rec["config"]) and job["seed"] == rec["seed"]):
                problems.append(f"{original}: its config or seed differs from the declared job {path.stem}")
    if problems:
        raise RunFileError(
            f"{len(problems)} run file(s) of {store} cannot be migrated, so nothing was written:\n  "
            + "\n  ".join(problems)
            + "\nthey are runs of no job an experiment declares today: delete them (or declare their jobs), then run "
            f"`{COMMAND}` again."
        )
    keys = {rec["key"]: _key(path.parent.name, rec) for path, _, rec in todo}
    commands = {e.bundle(p): e.command(p) for e in declared.values() for p in PRESETS}
    bundles = []
    for path in sorted(results.glob("*.json")):
        if path.name == "manifest.json":
            continue
        changed = _bundle_changes(path, keys, runners, commands)
        if changed is not None:
            bundles.append((path, *changed))
    sidecars = []
    for path in sorted((results / "checkpoints").glob("*.json")):
        changed = _sidecar_change(path, experiments)
        if changed is not None:
            sidecars.append((path, changed))
    if not todo and not bundles and not sidecars:
        log(f"{store}: every run file has today's name and key, and no bundle names an old one; nothing to migrate.")
        return None
    files = []
    for path, text, rec in todo:
        new = staged[path.with_name(f"{_key(path.parent.name, rec)}.json")]
        files.append(
            {
                "file": str(path.relative_to(store)),
                "new_file": f"{path.parent.name}/{new['key']}.json",
                "experiment_before": rec["experiment"],
                "runner_before": rec["runner"],
                "why": new["provenance"]["name_migration"]["why"],
                **(
                    {"name_migration_before": rec["provenance"]["name_migration"]}
                    if "name_migration" in rec["provenance"]
                    else {}
                ),
                "sha256_before": hashlib.sha256(text.encode()).hexdigest(),
                "sha256": new["sha256"],
            }
        )
    entry = {
        "date": date,
        "kind": "names",
        "why": NAMES_WHY if any(f["why"] == EXPERIMENT_RENAMED for f in files) else RUNNERS_WHY,
        "command": COMMAND + ("" if store == RUNS_DIR else f" --store {store}"),
        **_code_state(),
        "n_files": len(files),
        "files": files,
        "bundles": [
            {
                "file": repo_relative(p),
                "command_before": json.loads(p.read_text()).get("command"),
                "command": r["command"],
                # what else changed (the config's runner), and the file as it was: ``git show <code_commit>:<file>``
                "runner_before": (json.loads(p.read_text()).get("config") or {}).get("runner"),
                "runner": (r.get("config") or {}).get("runner"),
                "sha256_before": hashlib.sha256(p.read_bytes()).hexdigest(),
            }
            for p, r, _ in bundles
        ],
        "checkpoint_sidecars": [
            {
                "file": repo_relative(p),
                "command_before": json.loads(p.read_text()).get("command"),
                "command": r["command"],
                "sha256_before": hashlib.sha256(p.read_bytes()).hexdigest(),
                "sha256": hashlib.sha256(_sidecar_bytes(r)).hexdigest(),
            }
            for p, r in sidecars
        ],
    }
    if dry_run:
        log(
            f"{store}: {len(files)} run file(s), {len(bundles)} bundle(s) and {len(sidecars)} checkpoint sidecar(s) "
            "would be migrated (dry run)."
        )
        return entry
    _append_migration(record_path, entry)
    for path, _, rec in todo:
        target = path.with_name(f"{_key(path.parent.name, rec)}.json")
        new = staged[target]
        _write_atomic(target, json.dumps(new, indent=1, sort_keys=True, allow_nan=False) + "\n")
        raw = json.loads(target.read_text())
        check_record(json.loads(json.dumps(raw)), target)  # the reader's checks: schema, key, sha256
        if not all(_same(raw[k], rec[k]) for k in ("config", "seed", "result", "nonfinite")):
            kept = "both kept" if target != path else f"restore the old one with `git checkout -- {path}`"
            raise RunFileError(f"{target} does not read back as {path}; {kept}. {_fix(target)}.")
        if target != path:  # a renamed experiment's run moved to its new key; a renamed runner's stays where it was
            path.unlink()
    for path, new, tables in bundles:
        rewrite_bundle(path, new, tables)
    written = {e["file"]: e["sha256"] for e in entry["checkpoint_sidecars"]}
    for path, new in sidecars:
        rewrite_bundle(path, new, {}, sort_keys=False)
        if hashlib.sha256(path.read_bytes()).hexdigest() != written[repo_relative(path)]:
            raise RunFileError(
                f"{path} does not hash as {record_path} records its rewrite; restore it (git checkout -- {path}) and "
                f"run `{COMMAND}` again."
            )
    log(
        f"{store}: migrated {len(files)} run file(s) to today's experiment names, keys and runners, "
        f"{len(bundles)} bundle(s) and {len(sidecars)} checkpoint sidecar(s) of {results}; recorded in {record_path}."
    )
    return entry
