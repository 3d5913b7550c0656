"""The one layout every run-store bundle has (:func:`run_tables`): the table ``runs``, one row per finished run (its
key, seed, the config entries that place it in the grid and its metrics), and the table ``cells``, one row per cell
of the grid with each numeric metric's mean over seeds and 95 % interval (:func:`~._aggregate.aggregate`). A bundle's
other tables (curves, fits, the figures' own rows) come after these two; :func:`~._bundles.save_grid_bundle` refuses
a bundle without them.

A run's config is read as the dataset reads it (:mod:`._dataset`): nested entries as dotted names (``recipe.lr``), a
list or other non-scalar as its JSON text; its metrics are named by their last name (:func:`_metric_leaves`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ._aggregate import aggregate, sort_key
from ._dataset import _leaves, _scalar, json_text

#: the two tables of the one layout, in this order
LAYOUT = ("runs", "cells")


def _flat(obj: Mapping) -> dict:
    """``obj``'s leaves as ``{dotted name: value}``, a non-scalar leaf (a list, an empty dict) as its JSON text."""
    return {".".join(map(str, p)): (v if _scalar(v) else json_text(v)) for p, v in _leaves(dict(obj), ())}


#: what :func:`_at` returns for a path a result does not hold (None is a value a run may record)
_MISSING = object()


def _at(result, path: str):
    """The value at the dotted ``path`` of ``result``, or :data:`_MISSING` where it holds no such path."""
    for part in path.split("."):
        if not isinstance(result, Mapping) or part not in result:
            return _MISSING
        result = result[part]
    return result


def _metric_leaves(rec: dict, metrics: Sequence[str]) -> dict:
    """The run's metrics as ``{column: value}``: each metric a dotted path into its ``result``, its column the
    path's last name (``row.accuracy`` → ``accuracy``); a path that ends at a dict gives each of its leaves, named
    by their dotted path inside it (``probe`` → ``accuracy``, ``untrained.accuracy``). A run whose result lacks the
    path reads None there (a metric some runs of a grid record, such as Chapter 1's probe of its |K| = 1 models,
    declared optional, :func:`run_tables`). ValueError when two metrics give one column."""
    out: dict = {}
    for metric in metrics:
        value = _at(rec["result"], metric)
        value = None if value is _MISSING else value
        leaves = _flat(value) if isinstance(value, Mapping) and value else {metric.rsplit(".", 1)[-1]: value}
        for column, leaf in leaves.items():
            if column in out:
                raise ValueError(
                    f"metrics {list(metrics)} give the column {column!r} twice; declare paths whose names differ."
                )
            out[column] = leaf if _scalar(leaf) else json_text(leaf)
    return out


def shared_config(runs: list[dict]) -> dict:
    """The config entries every one of ``runs`` has with one value (dotted names, as :func:`run_tables` reads them):
    what a grid's runs share, which its ``runs`` table leaves out."""
    configs = [_flat(r["config"]) for r in runs]
    if not configs:
        return {}
    return {
        k: v
        for k, v in sorted(configs[0].items())
        if all(k in c and json.dumps(c[k], sort_keys=True) == json.dumps(v, sort_keys=True) for c in configs)
    }


#: the columns :func:`~._aggregate.aggregate` gives every cell, and each metric's (``<metric>_<suffix>``)
_CELL_COLUMNS = ("seeds", "n_seeds", "wall_seconds", "run_keys")
_METRIC_COLUMNS = ("mean", "ci_low", "ci_high", "std", "min", "max", "per_seed", "n_nan")


def run_tables(
    runs: list[dict],
    metrics: Sequence[str],
    *,
    by: Sequence[str] | None = None,
    run_entries: Sequence[str] = (),
    bounds: Mapping[str, tuple[float, float]] | None = None,
    optional: Sequence[str] = (),
) -> dict:
    """The one layout of a bundle of the finished ``runs`` (run records, :func:`~._records.finished_runs`):

    - ``runs``: one row per run, ordered by cell then seed: ``key``, ``seed``, the cell's config entries ``by`` and
      every leaf of each of ``metrics`` (dotted paths into the run's result, each named by its last name,
      :func:`_metric_leaves`);
    - ``cells``: one row per value of ``by`` (:func:`~._aggregate.aggregate`): the cell's seeds and run keys, and for
      each numeric metric leaf (a bool counts 1 or 0: its mean is a fraction) its mean over seeds, 95 % Student-t
      interval (clipped to ``bounds[leaf]`` where given), standard deviation, min, max and per-seed values; a
      metric declared ``optional`` that some runs do not record as a number is aggregated in the cells whose every
      run does, empty in the others (any other such metric is refused, naming the run).

    ``by``: config entries (dotted names, ``recipe.lr``); None: every entry whose value differs between the runs (a
    grid's coordinates; an entry constant over the runs is the bundle's config, not a column), except
    ``run_entries``: the entries that name one run's own model and differ between the seeds of a cell (a checkpoint's
    path, a model's name, a seed inside a recipe), shown in ``runs`` after ``by`` and not compared within a cell.
    An entry a run lacks reads None. Runs of one cell must agree on every other config entry (aggregate raises,
    naming the cell). ValueError: a metric no run records (a misspelt path), an entry in both ``by`` and
    ``run_entries``, a column named twice (a config entry named ``seed``, ``n_seeds`` or ``<metric>_mean``), or
    ``bounds`` naming no numeric metric."""
    import pandas as pd

    runs = sorted(runs, key=lambda r: r["key"])
    configs = [_flat(r["config"]) for r in runs]
    names = sorted({k for c in configs for k in c})
    configs = [{k: c.get(k) for k in names} for c in configs]
    unknown = [k for k in [*(by or ()), *run_entries] if k not in names]
    if unknown:
        raise ValueError(
            f"run_tables: by or run_entries name {unknown}, which no run's config has (its entries: {names})."
        )
    own = list(run_entries)
    both = sorted(set(by or ()) & set(own))
    if both:
        raise ValueError(f"run_tables: {both} are in both by and run_entries; a cell entry or a run's own, not both.")
    if by is None:
        by = [k for k in names if k not in own and len({json.dumps(c[k], sort_keys=True) for c in configs}) > 1]
    by = list(by)
    values = [_metric_leaves(r, metrics) for r in runs]
    leaves = list(dict.fromkeys(k for v in values for k in v))
    absent = [m for m in metrics if all(_at(r["result"], m) is _MISSING for r in runs)]
    if absent:
        raise ValueError(
            f"metrics {absent} are in none of the {len(runs)} runs' results; declare paths the runs record "
            "(Experiment.metrics)."
        )
    number = lambda v: isinstance(v, (int, float))  # noqa: E731  (a bool too: its mean is a fraction)
    everywhere = [m for m in leaves if all(number(v.get(m)) for v in values)]
    somewhere = [m for m in leaves if m not in everywhere and any(number(v.get(m)) for v in values)]
    unexpected = [m for m in somewhere if m not in optional]
    if unexpected:
        m = unexpected[0]
        r, v = next((r, v) for r, v in zip(runs, values) if not number(v.get(m)))
        raise ValueError(
            f"run {r['key']} (seed {r['seed']}) has {m} = {v.get(m)!r}, not a number, while other runs record one; "
            "a metric only some runs record is declared optional (Experiment.optional_metrics), else the run is "
            "wrong."
        )
    reserved = {"key", "seed", *_CELL_COLUMNS} | {f"{m}_{s}" for m in leaves for s in _METRIC_COLUMNS}
    clash = sorted(set(leaves) & {"key", "seed", *by, *own}) + sorted(set(by + own) & reserved)
    if clash:
        raise ValueError(
            f"columns {clash} would be named twice (a metric or config entry named as the runs' key, seed, a cell "
            "entry or a column of the cells); rename the metric or the config entry."
        )
    stray = sorted(set(bounds or {}) - set(everywhere + somewhere))
    if stray:
        raise ValueError(
            f"bounds name {stray}, which are not among the numeric metric columns {everywhere + somewhere}."
        )
    rows = [
        {"key": r["key"], "seed": r["seed"], **{k: c[k] for k in [*by, *own]}, **{m: v.get(m) for m in leaves}}
        for r, c, v in zip(runs, configs, values)
    ]
    rows.sort(key=lambda row: (*(sort_key(row[k]) for k in by), row["seed"]))
    cell_configs = [{k: x for k, x in c.items() if k not in own} for c in configs]
    as_float = [{m: float(x) if isinstance(x, bool) else x for m, x in v.items()} for v in values]
    flat = [dict(r, config=c, result=v) for r, c, v in zip(runs, cell_configs, as_float)]
    bounds = dict(bounds or {})
    cells = aggregate(flat, by=by, metrics=everywhere, bounds={m: b for m, b in bounds.items() if m in everywhere})
    cell_of = lambda f: tuple(f["config"][k] for k in by)  # noqa: E731
    order = sorted({cell_of(f) for f in flat}, key=lambda c: tuple(map(sort_key, c)))  # aggregate's row order
    for m in somewhere:  # aggregated in the cells whose every run records it as a number; empty in the others
        lacking = {cell_of(f) for f in flat if not number(f["result"].get(m))}
        sub = [f for f in flat if cell_of(f) not in lacking]
        if not sub:
            continue
        part = aggregate(sub, by=by, metrics=[m], bounds={m: bounds[m]} if m in bounds else None)
        mine = [c for c in order if c not in lacking]  # part's rows, in the same order
        for column in (f"{m}_{x}" for x in _METRIC_COLUMNS if f"{m}_{x}" in part.columns):
            got = dict(zip(mine, part[column]))
            cells[column] = [got.get(c, float("nan")) for c in order]
    return {"runs": pd.DataFrame(rows, columns=["key", "seed", *by, *own, *leaves]), "cells": cells}
