"""Every committed run as one table: ``results/dataset/runs.parquet``, one row per run file, with its data card
``results/dataset/DATACARD.md`` (``python -m mamba_recall dataset --write`` writes both; ``python -m mamba_recall
dataset`` checks that they are current).

A row is one run file ``results/runs/<experiment>/<key>.json``, read through :func:`read_run` (its ``sha256`` checked,
its NaN restored). Its columns: the run's identity (:data:`IDENTITY`), its resolved config as dotted columns
(``config.recipe.lr``), the scalar leaves of its result likewise (``result.acc``), the result's other leaves (lists,
empty dicts) in one JSON-text column ``result_json`` (an object from each leaf's dotted path to its value, so nothing is
lost), and its provenance as dotted columns (``provenance.git_commit``, ``provenance.versions.torch``). A column holds
one type: booleans, integers, numbers (integers and floats mixed become floats), or strings; a column whose values are
lists, dicts or of mixed kinds holds each value's JSON text, as do the values kept whole (:data:`KEPT_WHOLE`). A field a
run lacks is null. The file is deterministic: rows sorted by (experiment, key), columns by group then name, no write
time inside, so writing it twice from the same runs gives the same bytes.
"""

from __future__ import annotations

import io
import json
import math
import time
from pathlib import Path

from ..atomic import replace_file
from ..paths import RESULTS_DIR
from ._records import RUNS_DIR, load_runs, repo_relative

DATASET_DIR = RESULTS_DIR / "dataset"
DATASET_FILE = "runs.parquet"
CARD_FILE = "DATACARD.md"
WRITE_COMMAND = "python -m mamba_recall dataset --write"
CHECK_COMMAND = "python -m mamba_recall dataset"

#: the identity columns, first in this order, with what each holds (the data card's first table)
IDENTITY = {
    "experiment": "the experiment's name today: its folder `results/runs/<experiment>/`, also the name of its runner, "
    "bundles and checkpoints",
    "key": "the job's key, `joblib.hash` of (experiment, config, seed): the run file is `<experiment>/<key>.json`",
    "seed": "the job's seed (training and data; the config holds any other seed)",
    "runner": "the job function (`module:function`) that runs the job today, as the run file records it",
    "schema_version": "the run file's schema version",
    "sha256": "the run file's hash over its whole record: a row comes from an untouched file",
    "nonfinite": "JSON text: where the result held NaN or an infinity (the run file stores them as null; the "
    "`result.*` columns hold them as NaN and inf)",
}
#: the column groups after the identity, in this order: a record field and its column prefix
GROUPS = ("config", "result", "provenance")
RESULT_JSON = "result_json"
#: record paths kept whole as one JSON-text column (a dict whose keys are data, not field names)
KEPT_WHOLE = {("provenance", "dirty_files")}


def _leaves(obj, path: tuple):
    """``(path, value)`` for every leaf of ``obj`` (a dict is walked into unless empty or kept whole)."""
    if isinstance(obj, dict) and obj and path not in KEPT_WHOLE:
        for key, value in obj.items():
            yield from _leaves(value, (*path, key))
    else:
        yield path, obj


def _scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _finite(obj):
    """``obj`` with every NaN and infinity as None (JSON text is strict JSON; ``nonfinite`` says where they were)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def json_text(value) -> str:
    """The canonical JSON text of ``value`` (sorted keys, no spaces, NaN and infinities as null)."""
    return json.dumps(_finite(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _row(rec: dict, experiment: str, where: Path) -> dict:
    """One run record as ``{column: value}``; raises ValueError when two record paths name one column, or when the
    record names another experiment than the folder it sits in (a run renamed by hand, not migrated)."""
    if rec["experiment"] != experiment:
        raise ValueError(
            f"{repo_relative(where)} records experiment {rec['experiment']!r} but sits in results/runs/{experiment}/; "
            "a renamed experiment's runs are rewritten under its new name by `python -m mamba_recall.runstore "
            "migrate` (runstore._migrate.KEYED_BEFORE), never moved by hand."
        )
    row = {
        "experiment": experiment,
        "key": rec["key"],
        "seed": rec["seed"],
        "runner": rec["runner"],
        "schema_version": rec["schema_version"],
        "sha256": rec["sha256"],
        "nonfinite": json_text(rec["nonfinite"]) if rec["nonfinite"] else None,
    }
    paths: dict[str, tuple] = {}
    kept: dict[str, object] = {}
    for group in GROUPS:
        for path, value in _leaves(rec[group], (group,)):
            if group == "result" and not _scalar(value):
                kept[".".join(map(str, path[1:]))] = value
                continue
            name = ".".join(map(str, path))
            if paths.setdefault(name, path) != path:
                raise ValueError(
                    f"run file {where}: the fields {paths[name]} and {path} both flatten to the column {name!r} (a key "
                    "holds a '.'); rename the key in the runner's config or result so that dotted paths stay unique."
                )
            row[name] = value
    row[RESULT_JSON] = json_text(kept) if kept else None
    return row


def _kind(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "json"


#: a column's type by the kinds of its non-null values (anything else: JSON text)
_TYPES = {
    frozenset({"bool"}): "bool",
    frozenset({"int"}): "int64",
    frozenset({"float"}): "float64",
    frozenset({"int", "float"}): "float64",
    frozenset({"str"}): "string",
    frozenset(): "string",
}


#: the largest integer a float64 holds exactly: a column mixing floats with a bigger integer keeps JSON texts
EXACT_INT = 2**53


def column_type(values: list) -> str:
    """``bool``, ``int64``, ``float64``, ``string`` or ``json`` (a string column of JSON texts) for ``values``."""
    kind = _TYPES.get(frozenset(_kind(v) for v in values if v is not None), "json")
    if kind == "float64" and any(type(v) is int and abs(v) > EXACT_INT for v in values):
        return "json"  # as floats they would change
    return kind


def _array(kind: str, values: list):
    import pyarrow as pa

    if kind == "json":
        return pa.array([None if v is None else json_text(v) for v in values], pa.string())
    if kind == "string":
        return pa.array(values, pa.string())
    if kind == "float64":
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array(values, {"bool": pa.bool_(), "int64": pa.int64()}[kind])


def _order(name: str) -> tuple:
    """Identity columns first (in :data:`IDENTITY`'s order), then config, result, ``result_json``, provenance."""
    if name in IDENTITY:
        return (0, list(IDENTITY).index(name), "")
    if name == RESULT_JSON:
        return (3, 0, "")
    return ({"config": 1, "result": 2, "provenance": 4}[name.split(".")[0]], 0, name)


def experiments(store: Path | None = None) -> list[str]:
    """The experiments of ``store`` (its folders that hold run files), sorted."""
    folder = Path(store or RUNS_DIR)
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and any(p.glob("*.json")))


def build_table(store: Path | None = None):
    """Every run of ``store`` (default ``results/runs``) as a ``pyarrow.Table`` and ``{column: type}`` (the types of
    :func:`column_type`), rows sorted by (experiment, key), columns by group and name. Each file is read through
    :func:`read_run` (a file that fails its checks raises :class:`RunFileError` naming it and the fix)."""
    import pyarrow as pa

    store = Path(store or RUNS_DIR)
    rows = []
    for experiment in experiments(store):
        folder = store / experiment
        for rec in load_runs(experiment, store):
            rows.append(_row(rec, experiment, folder / f"{rec['key']}.json"))
    if not rows:
        raise ValueError(
            f"{repo_relative(store)} holds no run files (results/runs/<experiment>/<key>.json); run a grid first."
        )
    rows.sort(key=lambda r: (r["experiment"], r["key"]))
    names = sorted({name for row in rows for name in row}, key=_order)
    kinds, arrays = {}, []
    for name in names:
        values = [row.get(name) for row in rows]
        kinds[name] = column_type(values)
        arrays.append(_array(kinds[name], values))
    return pa.table(arrays, names=names), kinds


def parquet_bytes(table) -> bytes:
    """``table`` as Parquet (zstd, one row group, no write time: the same table gives the same bytes)."""
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", row_group_size=max(1, table.num_rows))
    return buffer.getvalue()


def _canonical(table) -> str:
    """``table``'s schema (without metadata) and values as one text, NaN included (Arrow's own equality takes NaN for
    unequal, and the bytes at null slots differ between a built table and one read back): equal tables give equal
    texts, whichever pyarrow wrote the Parquet file they were read from."""
    schema = [(field.name, str(field.type)) for field in table.schema]
    return json.dumps([schema, table.to_pydict()], default=str)


def _card(table, kinds: dict) -> str:
    """The data card of ``table`` (generated: every count is read from the runs)."""
    names = table.column_names
    columns = {n: table.column(n).to_pylist() for n in ("experiment", "seed")}
    columns["created"] = table.column("provenance.created").to_pylist()
    config_names = [n for n in names if n.startswith("config.")]
    config_values = [table.column(n).to_pylist() for n in config_names]
    by_experiment: dict[str, dict] = {}
    for i, experiment in enumerate(columns["experiment"]):
        entry = by_experiment.setdefault(experiment, {"runs": 0, "seeds": set(), "configs": set(), "dates": []})
        entry["runs"] += 1
        entry["seeds"].add(columns["seed"][i])
        entry["configs"].add(json_text([values[i] for values in config_values]))
        entry["dates"].append(str(columns["created"][i] or "")[:10])
    json_columns = [n for n in names if kinds[n] == "json"]
    groups = {g: sum(1 for n in names if n.startswith(g + ".")) for g in GROUPS}
    migration = "provenance.schema_migration.from_schema_version"
    migrated = sum(v is not None for v in table.column(migration).to_pylist()) if migration in names else 0
    versions = sorted(set(table.column("schema_version").to_pylist()))
    lines = [
        "# Data card: every committed run as one table",
        "",
        f"`results/dataset/{DATASET_FILE}` holds every run the book committed to its run store (`results/runs/`), "
        f"one row per run: **{table.num_rows} runs of {len(by_experiment)} experiments, {table.num_columns} "
        "columns**. It is generated from the run files and nothing else; do not edit it by hand.",
        "",
        "```python",
        "import pandas as pd",
        "",
        f'runs = pd.read_parquet("results/dataset/{DATASET_FILE}", dtype_backend="numpy_nullable")',
        'grid = runs[runs.experiment == "ch2_reference_grid"].dropna(axis=1, how="all")  # its own columns',
        'grid.groupby(["config.model", "config.N"])["result.final_accuracy"].agg(["mean", "count"])',
        "```",
        "",
        "## What a row is",
        "",
        "One finished job of a run-store grid: one experiment, one fully resolved config (sizes, steps, optimiser "
        "recipe, evaluation schedule; nothing left to a default) and one seed, read from its run file "
        "`results/runs/<experiment>/<key>.json` after checking the file's `sha256`. Bundles (`results/*.json`, "
        "`*.csv`) aggregate these rows over seeds; the verdicts of the book read the bundles.",
        "",
        "## Columns",
        "",
        "| column | type | what it holds |",
        "|---|---|---|",
        *(f"| `{n}` | {kinds[n]} | {IDENTITY[n]} |" for n in IDENTITY),
        f"| `config.*` ({groups['config']}) | per column | the resolved config, flattened to dotted paths "
        "(`config.recipe.lr`); a column is null for the experiments that have no such setting |",
        f"| `result.*` ({groups['result']}) | per column | the scalar metrics of the result, flattened likewise "
        "(`result.accuracy`, `result.measurements.<claim>.values.<name>`) |",
        f"| `{RESULT_JSON}` | json | JSON text of an object from each non-scalar leaf of the result (a curve, a "
        "per-length list, an empty dict) to its value, by its dotted path without `result.`; null when there is none |",
        f"| `provenance.*` ({groups['provenance']}) | per column | how the run was made: `git_commit`, `git_clean`, "
        "`dirty_files` (JSON text: each uncommitted library file and its sha256), `device`, `cpu.*` (where recorded), "
        "`host_cpus`, `platform`, `versions.*` (python, torch, numpy, joblib, mamba_recall), `created` (ISO 8601), "
        "`wall_seconds`, `cpu_seconds`, `schema_migration.*` (runs rewritten to a newer schema once) |",
        "",
        "Types: `bool`, `int64`, `float64` (integers and floats mixed in one column become floats), `string`; `json` "
        "is a string column of JSON texts (`json.loads` reads each), used where a column's values are lists, dicts "
        "or of mixed kinds. A field a run lacks is null.",
        "",
        f"The {len(json_columns)} JSON-text columns apart from `{RESULT_JSON}`: "
        + (", ".join(f"`{n}`" for n in json_columns if n != RESULT_JSON) or "none")
        + ".",
        "",
        "## Runs per experiment",
        "",
        "| experiment | runs | configs | seeds | made (UTC dates) |",
        "|---|---:|---:|---|---|",
    ]
    for experiment, e in sorted(by_experiment.items()):
        seeds = ", ".join(map(str, sorted(e["seeds"])))
        dates = sorted(d for d in e["dates"] if d)
        made = "not recorded" if not dates else dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        lines.append(f"| {experiment} | {e['runs']} | {len(e['configs'])} | {seeds} | {made} |")
    lines += [
        "",
        "## How it was made",
        "",
        f"`{WRITE_COMMAND}` (`mamba_recall.runstore.write_dataset`) reads every run file through the run store's "
        "reader (`mamba_recall.runstore.read_run`: schema, fields, key and `sha256` checked, NaN restored), flattens "
        "it and writes this card and the Parquet file (zstd). The file is deterministic: rows sorted by "
        "(experiment, key), columns by group (identity, config, result, `result_json`, provenance) then name, no write "
        f"time inside. `{CHECK_COMMAND}` checks that both files match the committed runs, and "
        "`tests/runstore/test_dataset.py` runs that check: **every commit that adds or changes run files must "
        f"regenerate the dataset** (`{WRITE_COMMAND}`, then commit `results/dataset/`), or the test fails.",
        "",
        "## Licence and provenance",
        "",
        "MIT, as the rest of the repository (`LICENSE`). Every run was made by this repository's code: its "
        "`provenance.git_commit`, with `provenance.git_clean` and `provenance.dirty_files` saying whether the "
        "working tree had uncommitted changes, on the device and CPU named in its row. The numbers are the book's "
        "own runs, not numbers printed in the papers.",
        "",
        "## Known caveats",
        "",
        f"- Schema versions: every row is of version {', '.join(map(str, versions))}; {migrated} runs were written "
        "as version 1 and rewritten once with their hash (`provenance.schema_migration.*`, "
        "`results/runs/MIGRATIONS.json`).",
        "- Names: every run records today's name of its experiment (`experiment`, its folder) and today's job "
        "function (`runner`); the runs written under older names or module paths were rewritten once under today's "
        "(`results/runs/MIGRATIONS.json`).",
        "- A grid still running is partial: its finished jobs only (the long Chapter 5 grid, `ch5_capacity_long`, "
        "grows as its jobs finish). `python -m mamba_recall plan` says how many jobs each grid has left.",
        "- Runs of several presets (`ci`, `cpu-hours`) and devices sit in one table: group by the config, never by "
        "the experiment alone, before averaging over seeds.",
        "- Nulls: pandas reads a null and a NaN alike as missing (the Parquet file keeps them apart); `nonfinite` "
        'says which values of a run were NaN. Read with `dtype_backend="numpy_nullable"` to keep integer columns '
        "with nulls as integers.",
        "- Columns belong to experiments: most are null outside the experiment that records them "
        '(`dropna(axis=1, how="all")` after selecting one).',
        "",
    ]
    return "\n".join(lines)


def dataset_files(table, kinds: dict) -> dict[str, bytes]:
    """The dataset's files, ``{name: bytes}``: the Parquet file and the data card."""
    return {DATASET_FILE: parquet_bytes(table), CARD_FILE: _card(table, kinds).encode()}


def write_dataset(store: Path | None = None, out: Path | None = None) -> dict:
    """Write the dataset of ``store``'s runs into ``out`` (default ``results/dataset``), each file atomically.
    Returns ``{"rows", "columns", "bytes", "seconds", "path"}``."""
    start = time.perf_counter()
    table, kinds = build_table(store)
    out = Path(out or DATASET_DIR)
    out.mkdir(parents=True, exist_ok=True)
    files = dataset_files(table, kinds)
    for name, data in files.items():
        replace_file(out / name, data)
    return {
        "rows": table.num_rows,
        "columns": table.num_columns,
        "bytes": len(files[DATASET_FILE]),
        "seconds": time.perf_counter() - start,
        "path": out / DATASET_FILE,
    }


def check_dataset(store: Path | None = None, out: Path | None = None) -> list[str]:
    """What differs between the committed dataset in ``out`` (default ``results/dataset``) and the runs of ``store``:
    one line per problem, each naming :data:`WRITE_COMMAND`; empty when it is current. The Parquet file is compared by
    content (so another pyarrow's bytes do not count), the data card by its text."""
    import pyarrow.parquet as pq

    out = Path(out or DATASET_DIR)
    fix = f"run `{WRITE_COMMAND}` and commit {repo_relative(out)}/"
    table, kinds = build_table(store)
    path = out / DATASET_FILE
    if not path.is_file():
        return [f"{repo_relative(path)} is missing; {fix}."]
    try:
        committed = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several kinds for a damaged file; each is reported, with the fix
        return [f"{repo_relative(path)} cannot be read ({type(exc).__name__}: {exc}); {fix}."]
    problems = []
    if _canonical(committed) != _canonical(table):
        keys = set(committed.column("key").to_pylist()) if "key" in committed.column_names else set()
        fresh = set(table.column("key").to_pylist())
        added, gone = len(fresh - keys), len(keys - fresh)
        new_cols = sorted(set(table.column_names) - set(committed.column_names))
        old_cols = sorted(set(committed.column_names) - set(table.column_names))
        detail = [f"{committed.num_rows} rows for {table.num_rows} runs"]
        if added or gone:
            detail.append(f"{added} run(s) not in it, {gone} row(s) of runs no longer there")
        if new_cols or old_cols:
            detail.append(f"{len(new_cols)} column(s) missing, {len(old_cols)} column(s) no longer made")
        if len(detail) == 1:
            detail.append("values or types differ")
        problems.append(f"{repo_relative(path)} does not match the committed runs ({'; '.join(detail)}); {fix}.")
    card = out / CARD_FILE
    if not card.is_file() or card.read_text() != _card(table, kinds):
        problems.append(f"{repo_relative(card)} is {'not current' if card.is_file() else 'missing'}; {fix}.")
    return problems
