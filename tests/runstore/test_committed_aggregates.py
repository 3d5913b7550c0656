"""Every committed aggregate equals its re-aggregation from the committed runs.

A run-store bundle ``results/<experiment>_<preset>.json`` (and its table CSVs) is made from the run records under
``results/runs/<experiment>/`` by the experiment's bundle writer (``python -m mamba_recall grid <experiment> --preset
P --aggregate-only``). A change to an aggregator, or a run added without re-aggregating, leaves the committed bundle
stale with nothing else noticing; this file notices. For each committed bundle of a declared experiment
(:func:`mamba_recall.experiment.experiments`, every preset whose bundle is in ``results/``; every run-store bundle
is one, Chapter 4's edge checks too), its writer runs again
on a scratch store whose folders link to the committed ones (``tmp_path/runs``; its bundle is written beside it,
never into ``results/``), and the bundle it writes is compared with the committed one (:func:`differences`):

* ``name``, ``command``, ``config`` and every entry of ``data`` (numbers to 1e-12 relative: a CSV keeps a float's
  shortest repr, so a re-aggregation of the same runs by the same code is exact; a stale number differs far more),
  except the git state at the writing that ``runs_summary`` records (``HEAD`` and ``dirty_files_as_run_equal_HEAD``,
  :data:`WRITING_STATE`): they say which commit wrote the bundle, not what the runs hold. ``data["run_keys"]`` is
  compared as a set and a list of run records (Chapter 4's edge bundles' ``data["records"]``) by their keys:
  bundles written before the keys were sorted, or before the experiments were renamed (which changed the keys, hence
  the store's file order), list the same runs in another order. ``data["store"]`` (Chapter 5's: the folder its runs were read from)
  names the scratch store's folder as ``results/runs/<experiment>/``;
* ``provenance["wall_seconds"]`` (the runs' summed wall time); the rest of the provenance is the writing's own (its
  commit, time, machine, versions) and is not compared. It is not needed here, so the re-aggregation is written with a
  stub (:func:`_fast_provenance`);
* the set of tables and each table (``pandas.testing.assert_frame_equal``, same 1e-12; the tables a writer computes
  from a model, not from the runs, to :data:`MACHINE_DEPENDENT`'s tolerance), both sorted by all their columns
  first: row order is not compared (every committed bundle was remade on 2026-12-05 in its writer's order, runs
  read in key order, so today the orders agree too).

A bundle that differs is reported with its differences (the first 12) and the command that remakes it; those known
to differ until the lead remakes them are :data:`KNOWN_STALE`, with exactly the differences expected.

A partial bundle (``data["partial"]``, "k of n jobs": a grid still running) is compared with the re-aggregation of
the runs it records (``data["run_keys"]``) only: the scratch store's folder of that experiment links those run files
and no other, and its writer is asked for a partial bundle. A run finished after it (Chapter 5's long grid) does not
make it stale; the grid's next ``--aggregate-only --partial`` reads it.

Bundles that cannot be re-aggregated here are listed in :data:`NOT_REAGGREGATED` with the reason (none today), and
every other bundle in ``results/`` is one that no run store makes (:data:`NOT_FROM_RUNS`): both lists are asserted to
be exactly what is there, so a new bundle is never passed over silently.

Cost: the 42 bundles re-aggregate in about 15 s of one CPU here (the slowest, ``ch3_keep_nth_cpu-hours``, ~9 s: its
writer computes Fig. 1's untrained baseline, 40 forward passes and their histograms; the rest ~0.15 s each), the
whole file in ~25 s wall on this shared 2-core machine; ``make test`` runs it in one xdist worker (``--dist
loadfile``). Reading the run records is not where the time goes (733 files, < 1 s)."""

from __future__ import annotations

import functools
import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from mamba_recall.experiment import experiments
from mamba_recall.paths import RESULTS_DIR
from mamba_recall.results import load_bundle, read_bundle_record, rewrite_bundle
from mamba_recall.runstore import RUNS_DIR

#: what ``runs_summary`` records of the git state at the writing (which commit wrote the bundle, and whether the
#: files that were dirty when a run ran equal that commit's): not a property of the runs, not compared
WRITING_STATE = ("HEAD", "dirty_files_as_run_equal_HEAD")
#: relative tolerance on every number (module docstring)
RTOL = 1e-12

#: tables a writer computes at aggregation from a model (not read from the runs), whose float32 bits depend on the
#: CPU's instruction set: (experiment, table) -> (relative tolerance, why). Chapter 3's KEEP n-TH writer computes
#: Fig. 1's untrained baseline by a forward pass of each run's initial model: with another instruction set forced
#: (``ATEN_CPU_CAPABILITY=default NUMBA_CPU_NAME=generic``, as ``make test-isa``), up to 7 of ~20,000 values of a
#: histogram bin of ``ch3_keep_nth_cpu-hours`` cross its edge (3.3e-4 relative); on the CPU that wrote them (AVX512)
#: they are exact. Their rows (keys) are still compared exactly.
MACHINE_DEPENDENT = {
    ("ch3_keep_nth", "decay_untrained"): (1e-3, "Fig. 1's untrained baseline: histogram counts of a forward pass"),
}

#: committed bundles known to differ from their re-aggregation until the lead remakes them: bundle -> (why, the
#: differences, exactly as :func:`differences` words them). The check asserts exactly these differences, so once a
#: bundle is remade (or differs in anything else) its case fails until it leaves this list.
KNOWN_STALE: dict[str, tuple[str, list[str]]] = {}

#: bundles of a run store that cannot be re-aggregated here: bundle name -> why (none: every one can)
NOT_REAGGREGATED: dict[str, str] = {}

#: the bundles in results/ that no run store makes: name -> what they are
NOT_FROM_RUNS = {
    "gpu_check_h100": "a GPU machine's check of the scan kernels (tools/gpu_check.py), no run store",
    "gpu_parity_h100": "a GPU machine's parity run of the scan kernels (tools/gpu_check.py), no run store",
    "scan_bench_cpu": "the scan benchmark (benchmarks/scan.py), no run store",
    "scan_bench_cuda": "the scan benchmark on a GPU (tools/gpu_check.py), no run store",
}


@dataclass(frozen=True)
class Aggregate:
    """One committed run-store bundle and how it is remade: ``write(preset, *, store, log)`` (its writer, a partial
    one for a partial bundle) and ``command`` (the one that remakes it from the committed runs)."""

    bundle: str
    experiment: str
    preset: str
    write: object
    command: str

    @property
    def path(self) -> Path:
        return Path(RESULTS_DIR) / f"{self.bundle}.json"


@functools.cache
def committed_aggregates() -> dict[str, Aggregate]:
    """Every run-store bundle in ``results/``: the declared experiments' at each preset whose bundle is there."""
    out = {}
    for e in experiments():
        for preset in e.sizes:
            path = Path(RESULTS_DIR) / f"{e.bundle(preset)}.json"
            if not path.is_file():
                continue
            partial = "partial" in json.loads(path.read_text())["data"]
            command = f"python -m mamba_recall grid {e.name} --preset {preset} --aggregate-only"
            out[e.bundle(preset)] = Aggregate(
                e.bundle(preset),
                e.name,
                preset,
                e.bundle_writer(partial),
                command + (" --partial" if partial else ""),
            )
    return out


def _fast_provenance(device="cpu", wall_seconds=None, *, git=None) -> dict:
    """The provenance a re-aggregated bundle is written with: the runs' ``device`` and ``wall_seconds`` as given,
    a clean state otherwise (the writing's own provenance is not compared; module docstring)."""
    return {
        "git_commit": "0" * 40,
        "git_dirty": False,
        "dirty_files": [],
        "device": str(device),
        "wall_seconds": wall_seconds,
    }


def scratch_store(root: Path, experiment: str, run_keys=None) -> Path:
    """``root/runs``: a run store whose every folder links to the committed one (``results/runs/<name>``), except
    ``experiment``'s when ``run_keys`` is given: a folder linking those runs' files only (a partial bundle's)."""
    store = root / "runs"
    store.mkdir(parents=True)
    for folder in sorted(Path(RUNS_DIR).iterdir()):
        if not folder.is_dir():
            continue
        if folder.name == experiment and run_keys is not None:
            (store / folder.name).mkdir()
            for key in run_keys:
                (store / folder.name / f"{key}.json").symlink_to(folder / f"{key}.json")
        else:
            (store / folder.name).symlink_to(folder)
    return store


def remake(agg: Aggregate, root: Path, *, store: Path | None = None, like: Path | None = None):
    """The bundle ``agg``'s writer makes from the committed runs (or ``store``), written under ``root`` (never into
    ``results/``): ``(Bundle, the scratch store)``. When the bundle at ``like`` (default: the committed one) is
    partial, it is remade from the runs that bundle records."""
    if store is None:
        keys = None
        recorded = json.loads(Path(like or agg.path).read_text())["data"]
        if "partial" in recorded:
            keys = recorded.get("run_keys")
            assert keys, f"{agg.bundle} is partial but records no run_keys; remake it with: {agg.command}"
            gone = sorted(k for k in keys if not (Path(RUNS_DIR) / agg.experiment / f"{k}.json").is_file())
            assert not gone, f"{agg.bundle} records runs not in the store: {gone}; remake it with: {agg.command}"
        store = scratch_store(root, agg.experiment, keys)
    written = agg.write(agg.preset, store=store, log=lambda *a, **k: None)
    paths = [Path(p) for p in (written if isinstance(written, (list, tuple)) else [written]) if p is not None]
    mine = [p for p in paths if p.name == f"{agg.bundle}.json"]
    assert len(mine) == 1, f"{agg.bundle}: its writer wrote {paths}, not one {agg.bundle}.json; fix the writer"
    assert store.parent.resolve() in mine[0].resolve().parents, f"{agg.bundle} was written outside the scratch store"
    return load_bundle(mine[0]), store


def _numbers_differ(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is not b
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return False
    return not math.isclose(a, b, rel_tol=RTOL, abs_tol=0.0)


def _records(value) -> bool:
    """Whether ``value`` is a list of run records (dicts each with its distinct ``key``), compared by key."""
    return (
        isinstance(value, list)
        and all(isinstance(r, dict) and isinstance(r.get("key"), str) for r in value)
        and len({r["key"] for r in value}) == len(value) > 0
    )


def _diff_values(a, b, where: str, out: list[str], scratch: str) -> None:
    """The differences of two JSON values (``a`` committed, ``b`` remade) into ``out``, each naming its place."""
    if where.endswith(".run_keys") and isinstance(a, list) and isinstance(b, list):
        # a set of keys: bundles written before finished_status sorted them list them in another order
        a, b = sorted(a), sorted(b)
    if _records(a) and _records(b):
        # the runs a bundle lists, compared by key (module docstring)
        a, b = {r["key"]: r for r in a}, {r["key"]: r for r in b}
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k in WRITING_STATE:
                continue
            if k not in b or k not in a:
                out.append(f"{where}.{k}: {'only in the committed bundle' if k in a else 'only in the remade one'}")
            else:
                _diff_values(a[k], b[k], f"{where}.{k}", out, scratch)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} entries committed, {len(b)} remade")
        for i, (x, y) in enumerate(zip(a, b)):
            _diff_values(x, y, f"{where}[{i}]", out, scratch)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if _numbers_differ(a, b):
            out.append(f"{where}: committed {a!r}, remade {b!r}")
    else:
        if isinstance(b, str) and b.startswith(scratch):  # the scratch store's folder, named as the committed one
            b = "results/runs/" + b[len(scratch) :].lstrip("/")
        if a != b:
            out.append(f"{where}: committed {a!r}, remade {b!r}")


def _sorted_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows in the order of all its columns (NaN last), so two tables of the same rows compare equal."""
    cols = list(frame.columns)
    return frame.sort_values(cols, kind="mergesort", na_position="last", ignore_index=True) if cols else frame


def differences(committed, remade, scratch: Path, experiment: str) -> list[str]:
    """What differs between the ``committed`` bundle of ``experiment`` and the one ``remade`` from the runs of the
    store ``scratch`` (module docstring)."""
    out: list[str] = []
    scratch_prefix = str(scratch)
    for field in ("config", "data"):
        _diff_values(getattr(committed, field), getattr(remade, field), field, out, scratch_prefix)
    for field in ("name", "command"):
        if getattr(committed, field) != getattr(remade, field):
            out.append(f"{field}: committed {getattr(committed, field)!r}, remade {getattr(remade, field)!r}")
    _diff_values(
        committed.provenance.get("wall_seconds"), remade.provenance.get("wall_seconds"), "provenance.wall_seconds",
        out, scratch_prefix,
    )  # fmt: skip
    if set(committed.tables) != set(remade.tables):
        out.append(f"tables: committed {sorted(committed.tables)}, remade {sorted(remade.tables)}")
    for name in sorted(set(committed.tables) & set(remade.tables)):
        a, b = committed.tables[name], remade.tables[name]
        if list(a.columns) != list(b.columns):
            out.append(f"table {name}: columns committed {list(a.columns)}, remade {list(b.columns)}")
            continue
        a, b = _sorted_rows(a), _sorted_rows(b)
        rtol = MACHINE_DEPENDENT.get((experiment, name), (RTOL, ""))[0]
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=rtol, atol=0.0)
        except AssertionError as exc:
            out.append(f"table {name}: {_first_difference(a, b, rtol) or ' '.join(str(exc).split())[:300]}")
    return out


def _first_difference(a: pd.DataFrame, b: pd.DataFrame, rtol: float) -> str | None:
    """The first differing value of two tables of the same shape and columns, with its row's text columns (its
    key), and how many values differ; None when they differ otherwise (the caller shows pandas' message)."""
    if a.shape != b.shape:
        return f"{len(a)} rows committed, {len(b)} remade"
    found = []
    for col in a.columns:
        x, y = a[col], b[col]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            same = (x - y).abs() <= rtol * y.abs()
            same |= (x == y) | (x.isna() & y.isna())
        else:
            same = (x == y) | (x.isna() & y.isna())
        found += [(i, col) for i in same.index[~same]]
    if not found:
        return None
    i, col = min(found)
    key = {k: a.at[i, k] for k in a.columns if not pd.api.types.is_float_dtype(a[k]) and k != col}
    return f"{len(found)} values differ; first: row {key}, {col}: committed {a.at[i, col]!r}, remade {b.at[i, col]!r}"


def check_aggregate(agg: Aggregate, committed_path: Path, root: Path, *, store: Path | None = None) -> None:
    """AssertionError naming the bundle, its differences and the command that remakes it, when the bundle at
    ``committed_path`` is not what ``agg``'s writer makes from the committed runs (or ``store``), or differs from it
    otherwise than :data:`KNOWN_STALE` says."""
    remade, scratch = remake(agg, root, store=store, like=committed_path)
    found = differences(load_bundle(committed_path), remade, scratch, agg.experiment)
    why, expected = KNOWN_STALE.get(agg.bundle, ("", []))
    if found == expected:
        return
    listed = f" (KNOWN_STALE expects {len(expected)}: {why}; drop it from there once remade)" if expected else ""
    raise AssertionError(
        f"{agg.bundle}: the committed bundle {committed_path} is not its re-aggregation from the committed runs "
        f"({len(found)} differences{listed}):\n  " + "\n  ".join(found[:12]) + f"\nremake it with: {agg.command}"
    )


@pytest.fixture
def fast_provenance(monkeypatch):
    import mamba_recall.results._bundles as bundles

    monkeypatch.setattr(bundles, "provenance", _fast_provenance)


def test_every_bundle_in_results_is_checked_or_listed():
    """The bundles checked here, :data:`NOT_REAGGREGATED` and :data:`NOT_FROM_RUNS` are together every bundle in
    ``results/`` (``manifest.json`` is no bundle), and each bundle of a grid command is among those checked."""
    stems = {p.stem for p in Path(RESULTS_DIR).glob("*.json")} - {"manifest"}
    checked = set(committed_aggregates())
    assert stems == checked | set(NOT_FROM_RUNS), (
        f"bundles in results/ neither checked nor listed: {sorted(stems - checked - set(NOT_FROM_RUNS))}; listed but "
        f"not there: {sorted(set(NOT_FROM_RUNS) - stems)}"
    )
    assert set(NOT_REAGGREGATED) <= checked and set(KNOWN_STALE) <= checked
    experiments_named = {e.name for e in experiments()}
    assert {e for e, _ in MACHINE_DEPENDENT} <= experiments_named
    grid = {s for s in stems if json.loads((Path(RESULTS_DIR) / f"{s}.json").read_text())["command"].startswith(
        "python -m mamba_recall grid "
    )}  # fmt: skip
    assert grid <= checked
    assert len(checked) >= 42


@pytest.mark.parametrize("bundle", sorted(committed_aggregates()))
def test_committed_bundle_equals_its_reaggregation(bundle, tmp_path, fast_provenance):
    """The committed bundle is what its writer makes from the committed runs (module docstring)."""
    agg = committed_aggregates()[bundle]
    if bundle in NOT_REAGGREGATED:
        with pytest.raises(Exception):  # the listed reason still holds (else it belongs with the checked ones)
            remake(agg, tmp_path)
        return
    check_aggregate(agg, agg.path, tmp_path)


# ------------------------------------------------------------------------- faults it must catch

FAULT_BUNDLE = "ch2_trained_dn_ci"  # a small complete bundle of a declared experiment (0.5 s to re-aggregate)


def _copy_bundle(path: Path, into: Path) -> Path:
    into.mkdir(parents=True)
    for f in path.parent.glob(f"{path.stem}.*"):
        if f.name == path.name or f.name.startswith(path.stem + ".") and f.suffix == ".csv":
            shutil.copy2(f, into / f.name)
    return into / path.name


def test_an_edited_number_fails_naming_the_bundle_and_its_command(tmp_path, fast_provenance):
    """One number of a table of a copy of a committed bundle edited (its hashes rewritten, so it loads as a valid
    bundle): the check fails, naming the bundle, the table and the command that remakes it."""
    agg = committed_aggregates()[FAULT_BUNDLE]
    copy = _copy_bundle(agg.path, tmp_path / "copy")
    record = read_bundle_record(copy)
    name = sorted(record["tables"])[0]
    csv = copy.parent / record["tables"][name]["file"]
    frame = pd.read_csv(csv)
    col = next(c for c in frame.columns if c.endswith("_mean") or pd.api.types.is_float_dtype(frame[c]))
    frame.loc[0, col] = frame.loc[0, col] + 0.001
    blob = frame.to_csv(index=False).encode()
    import hashlib

    record["tables"][name]["sha256"] = hashlib.sha256(blob).hexdigest()
    rewrite_bundle(copy, record, {csv: blob})
    with pytest.raises(AssertionError) as exc:
        check_aggregate(agg, copy, tmp_path / "remade")
    text = str(exc.value)
    assert FAULT_BUNDLE in text and f"table {name}" in text and col in text
    assert "remake it with: python -m mamba_recall grid ch2_trained_dn --preset ci --aggregate-only" in text


def test_a_number_of_data_edited_fails(tmp_path, fast_provenance):
    """A number of ``data`` edited in a copy (the runs' CPU seconds): the check fails naming that entry."""
    agg = committed_aggregates()[FAULT_BUNDLE]
    copy = _copy_bundle(agg.path, tmp_path / "copy")
    record = read_bundle_record(copy)
    record["data"]["runs"]["cpu_seconds"] += 1.0
    rewrite_bundle(copy, record, {})
    with pytest.raises(
        AssertionError, match=r"(?s)data\.runs\.cpu_seconds: committed 12\.0, remade 11\.0.*remake it with: python -m"
    ):
        check_aggregate(agg, copy, tmp_path / "remade")


def test_a_run_added_without_reaggregating_fails(tmp_path, fast_provenance):
    """The committed bundle made before one of its runs was added (here: written from a store lacking one run) is
    stale once the run is there: the check against the full store fails, naming the bundle and its command."""
    agg = committed_aggregates()[FAULT_BUNDLE]
    keys = json.loads(agg.path.read_text())["data"]["run_keys"]
    older = scratch_store(tmp_path / "older", agg.experiment, keys[1:])
    stale, _ = remake(agg, tmp_path / "older", store=older)
    with pytest.raises(AssertionError) as exc:
        check_aggregate(agg, stale.path, tmp_path / "now")
    text = str(exc.value)
    assert f"{FAULT_BUNDLE}: the committed bundle" in text and "data.jobs_finished" in text
    assert "remake it with: python -m mamba_recall grid ch2_trained_dn --preset ci --aggregate-only" in text
