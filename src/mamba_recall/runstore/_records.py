"""Jobs, their keys and files, and reading a run back (the store's layout: the package docstring).

``sha256`` covers the whole record (:func:`record_hash`), so a result edited by hand is refused when read
(:func:`check_record`: schema, version, fields and types too, each error naming the file and the fix). NaN and
infinities of a result are stored as ``null`` and listed in ``nonfinite`` (bare ``NaN`` is not JSON), and restored
when read. Version 1 files (runs written before the hash) are refused, naming the migration that hashes a store of
them once (:mod:`._migrate`); the committed ones were migrated (``results/runs/MIGRATIONS.json``).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Iterable

import joblib

from ..paths import REPO_ROOT, RESULTS_DIR
from ._config import JobConfig, config_class, config_record, config_type
from ._errors import RunFileError, UnhashedRunFile

SCHEMA = "mamba_recall.run"
#: version 2 adds ``sha256`` (over the whole record) and ``nonfinite``; version 1 files (runs written before them, with
#: no hash to check) are refused (:class:`UnhashedRunFile`): the committed ones were migrated to version 2 once,
#: recorded in ``results/runs/MIGRATIONS.json`` (:func:`mamba_recall.runstore.migrate_store`)
SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (2,)
FAILURE_SCHEMA = "mamba_recall.run_failure"
RUNS_DIR = RESULTS_DIR / "runs"


# ---------------------------------------------------------------------------------------------- jobs


def _plain(obj):
    """The JSON form of ``obj`` (tuples → lists, numpy/torch scalars → numbers), so that the key of a job
    built in memory equals the key of the same job read back from its file."""
    return json.loads(json.dumps(obj, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


#: the most numbers an array in a result may hold (a run file is a small, reviewable JSON): a bigger array belongs in a
#: file the job writes (a checkpoint, :func:`output_record`), its summary in the result
MAX_ARRAY_SIZE = 10_000


def _result_fix(runner: str) -> str:
    return (
        f"make {runner} return plain JSON values (numbers, strings, booleans, None, lists and dicts with string "
        "keys; numpy and torch scalars and arrays of up to "
        f"{MAX_ARRAY_SIZE} numbers are converted), e.g. float(x), sorted(s), or save a large array to a file"
    )


def json_result(result, runner: str = "the runner", where: str = "result"):
    """``result`` as plain JSON values, converted faithfully or refused (never a silent ``str()``):

    * ``dict`` (string keys; an ``int`` key becomes its decimal string, as JSON writes it), ``list``, ``tuple``;
    * ``bool``, ``int``, ``float``, ``str``, ``None`` as they are (NaN and infinities are handled by the record's
      ``nonfinite``);
    * numpy scalars and torch 0-d tensors: their Python number (``.item()``); numpy arrays and torch tensors of a
      boolean, integer or real dtype with at most :data:`MAX_ARRAY_SIZE` numbers: nested lists (``.tolist()``);
    * anything else (a ``set``, a complex number, an object, a bigger array) raises ``TypeError`` naming where it
      is in the result, its type and the fix: the job fails with a ``.failed`` record instead of storing a string
      that reads back as something else (a ``set`` is refused rather than ordered silently: return ``sorted(s)``)."""
    if result is None or isinstance(result, (bool, int, str)):
        return result
    if isinstance(result, float):
        return float(result)
    if isinstance(result, dict):
        out = {}
        for k, v in result.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise TypeError(
                    f"runner {runner} returned {where} with the key {k!r} ({type(k).__name__}), which JSON cannot "
                    f"keep; {_result_fix(runner)}."
                )
            out[str(k)] = json_result(v, runner, f"{where}[{k!r}]")
        return out
    if isinstance(result, (list, tuple)):
        return [json_result(v, runner, f"{where}[{i}]") for i, v in enumerate(result)]
    kind = type(result)
    module = kind.__module__.split(".")[0]
    array = None
    if module == "torch" and hasattr(result, "detach") and hasattr(result, "numel"):  # a tensor (or Parameter)
        array, dtype = result.detach().cpu(), result.dtype
        real = not (dtype.is_complex or result.is_quantized)
        size = array.numel()
    elif module == "numpy":  # a numpy scalar or array (anything else of numpy's becomes an object array: refused)
        import numpy as np

        array = np.asarray(result)
        dtype, real = array.dtype, array.dtype.kind in "biuf"
        size = array.size
    if array is not None:
        if not real:
            raise TypeError(
                f"runner {runner} returned {where} as a {kind.__name__} of dtype {dtype}, which JSON cannot keep "
                f"faithfully; {_result_fix(runner)}."
            )
        if size > MAX_ARRAY_SIZE:
            raise TypeError(
                f"runner {runner} returned {where} as a {kind.__name__} of {size} numbers (more than "
                f"{MAX_ARRAY_SIZE}); a run file keeps a result's small numbers: {_result_fix(runner)}."
            )
        return json_result(array.tolist(), runner, where)  # 0-d: a Python number; else nested lists
    what = "a set (its order is not kept)" if isinstance(result, (set, frozenset)) else f"a {kind.__qualname__}"
    raise TypeError(
        f"runner {runner} returned {where} as {what} ({module}.{kind.__qualname__}), which a run file cannot keep "
        f"(it would be stored as its str()); {_result_fix(runner)}."
    )


def make_job(experiment: str, config: JobConfig, seed: int, *, output: str | None = None) -> dict:
    """A job: ``{"experiment", "config", "seed"}`` in plain JSON form, with its ``key``. ``config``: a typed
    :class:`~mamba_recall.runstore.JobConfig` (every job is typed), whose record
    (:meth:`~mamba_recall.runstore.JobConfig.to_record`) is the job's ``config`` (what its key hashes and its run file
    keeps) and whose class is the job's ``config_type`` (``"module:Class"``, not part of the key), so that the job
    function receives the config typed (:func:`job_config`). TypeError for a dict or anything else not a
    :class:`~mamba_recall.runstore.JobConfig`, naming where to declare one (:func:`config_record`); ValueError when the
    config does not read back from its record as itself (:meth:`~mamba_recall.runstore.JobConfig.from_record`).
    ``output``: the file the job writes, repository-relative (``results/checkpoints/<name>.pt``), kept as the job's
    ``output`` and not part of its key; a finished job whose record names no file of its own is run again while that
    file is missing (:func:`output_gone`)."""
    if not experiment or "/" in experiment or experiment.startswith("."):
        raise ValueError(f"experiment name {experiment!r} must be a plain name such as 'ch2_reference_grid'.")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}.")
    job = {"experiment": experiment, "config": _plain(config_record(config)), "seed": seed}
    bad = _nonfinite_paths(job["config"])
    if bad:
        raise ValueError(
            f"job config of {experiment} has a NaN or infinite value at {bad[0]['path']}; a config must be finite "
            "(give the setting as a number or a string)."
        )
    job["key"] = job_key(job)
    if type(config).from_record(job["config"]) != config:
        raise ValueError(
            f"job config of {experiment}: {config!r} does not read back from its record {job['config']} as "
            "itself; declare the fields that hold tuples as tuple[...] (inside a list or dict, give lists)."
        )
    job["config_type"] = config_type(config)
    if output is not None:
        job["output"] = str(output)
    return job


def job_config(job: dict) -> JobConfig:
    """What a job's function receives as its config: the typed config the job was made from, read back from its
    record by its ``config_type`` (:func:`make_job`). TypeError for a job that names none (a job is made by
    :func:`make_job`; a run read back from its file is a record, whose ``config`` is the dict it keeps)."""
    if "config_type" not in job:
        raise TypeError(
            f"a job of {job.get('experiment')} (config {job.get('config')}) names no config_type: make jobs with "
            "mamba_recall.runstore.make_job from a JobConfig (a run file's record is not a job)."
        )
    return config_class(job["config_type"]).from_record(job["config"])


def job_key(job: dict) -> str:
    """``joblib.hash`` (md5 of the pickled, key-sorted dict) of (experiment, config, seed): a run's key hashes its
    experiment's name of today, the name of its folder (the runs of renamed experiments were rewritten under it
    once, recorded in ``results/runs/MIGRATIONS.json``: :func:`mamba_recall.runstore.migrate_names`)."""
    return joblib.hash({"experiment": job["experiment"], "config": _plain(job["config"]), "seed": job["seed"]})


def job_path(job: dict, store: Path | None = None) -> Path:
    return Path(store or RUNS_DIR) / job["experiment"] / f"{job['key']}.json"


def failure_path(job: dict, store: Path | None = None) -> Path:
    """``<key>.failed`` beside the job's run file: the record of its last failure (not a ``.json``, so never
    read as a run)."""
    return job_path(job, store).with_suffix(".failed")


def claim_path(job: dict, store: Path | None = None) -> Path:
    """``<key>.claim`` beside the job's run file: locked by the process running the job (:func:`_claim`)."""
    return job_path(job, store).with_suffix(".claim")


# -- the record: hash, non-finite numbers, validation


def record_hash(record: dict) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of ``record`` without its ``sha256`` field: any edit of
    a run file (its result, config, seed, provenance) changes it."""
    body = {k: v for k, v in record.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _nonfinite_paths(obj, path=()) -> list[dict]:
    """``[{"path": [...], "value": "nan" | "inf" | "-inf"}]``: where ``obj`` (plain JSON form) holds a NaN or an
    infinity."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return [{"path": list(path), "value": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _nonfinite_paths(v, (*path, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _nonfinite_paths(v, (*path, i))]
    return []


def _set_path(obj, path: list, value):
    for step in path[:-1]:
        obj = obj[step]
    obj[path[-1]] = value


def _encode_result(result: dict) -> tuple[dict, list[dict]]:
    """``result`` with every NaN and infinity replaced by ``null`` (JSON has no NaN; Python's bare ``NaN`` is not
    JSON), and the list of where they were (the record's ``nonfinite``), so that reading restores them."""
    bad = _nonfinite_paths(result)
    for entry in bad:
        _set_path(result, entry["path"], None)
    return result, bad


def _fix(path: Path) -> str:
    return f"delete {path} and run the same grid command again (it runs only the missing jobs)"


_FIELDS = {
    "schema": str,
    "schema_version": int,
    "key": str,
    "experiment": str,
    "config": dict,
    "seed": int,
    "runner": str,
    "result": dict,
    "provenance": dict,
}
_FIELDS_V2 = {"sha256": str, "nonfinite": list}


MIGRATE_COMMAND = "python -m mamba_recall.runstore migrate"


def _unhashed(path: Path) -> str:
    return (
        f"run file {path} has schema_version 1 and no sha256: nothing shows that its result was not edited after it "
        "was written, and unhashed run files are no longer read (the committed runs of version 1 were migrated once, "
        "recorded in results/runs/MIGRATIONS.json). If it is a run edited by hand or given an old version, "
        f"{_fix(path)}; if it is a genuine run of a store written before the hash, run `{MIGRATE_COMMAND} --store "
        f"{Path(path).parent.parent}` once (it rewrites that store's version 1 files with their hash and records it)."
    )


def _check_fields(rec, path: Path, fields: dict, key: str | None) -> None:
    """Every field of ``fields`` present with its type, and the key matching the content, the file name and ``key``."""
    for name, kind in fields.items():
        if name not in rec:
            raise RunFileError(f"run file {path} lacks the field {name!r}; {_fix(path)}.")
        value = rec[name]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise RunFileError(
                f"run file {path}: field {name!r} is a {type(value).__name__}, not a {kind.__name__}; {_fix(path)}."
            )
    if job_key(rec) != rec["key"] or Path(path).stem != rec["key"] or (key is not None and rec["key"] != key):
        raise RunFileError(f"run file {path} does not match its key (edited by hand?); {_fix(path)}.")


def check_record(rec, path: Path, key: str | None = None) -> dict:
    """The run read from ``path`` (its JSON ``rec``), checked: a dict of schema :data:`SCHEMA`, a version this
    library reads (a newer one: update mamba_recall; version 1, unhashed: :class:`UnhashedRunFile`), every field
    present with its type, the key matching the content and the file name (and ``key`` when given), and the
    ``sha256`` over the whole record, so a result edited by hand is refused. NaN and infinities stored as ``null``
    (``nonfinite``) are restored. Raises :class:`RunFileError` naming the file and the fix."""
    if not isinstance(rec, dict):
        raise RunFileError(f"run file {path} holds a JSON {type(rec).__name__}, not a run record; {_fix(path)}.")
    if rec.get("schema") != SCHEMA:
        raise RunFileError(f"run file {path} has schema {rec.get('schema')!r}, not {SCHEMA!r}; {_fix(path)}.")
    version = rec.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise RunFileError(
            f"run file {path} has schema_version {version}: written by a newer mamba_recall (this one reads "
            f"versions {', '.join(map(str, READABLE_SCHEMA_VERSIONS))}); update mamba_recall (git pull, then "
            "pip install -e .) and run the command again."
        )
    if version == 1 and not isinstance(version, bool):
        raise UnhashedRunFile(_unhashed(path))
    if version not in READABLE_SCHEMA_VERSIONS or isinstance(version, bool):
        raise RunFileError(
            f"run file {path} has schema_version {version!r}, which no mamba_recall wrote; {_fix(path)}."
        )
    _check_fields(rec, path, dict(_FIELDS, **_FIELDS_V2), key)
    if record_hash(rec) != rec["sha256"]:
        raise RunFileError(
            f"run file {path} does not match its sha256: edited after it was written (a result changed by "
            f"hand is not a run); {_fix(path)}."
        )
    try:
        for entry in rec["nonfinite"]:
            _set_path(rec["result"], entry["path"], float(entry["value"]))
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise RunFileError(f"run file {path} has a malformed 'nonfinite' list ({exc}); {_fix(path)}.") from exc
    return rec


def check_legacy_record(rec: dict, path: Path) -> dict:
    """The checks a version 1 record passed when it was still read (fields and their types, the key against its
    content and file name; it has no hash): what :func:`mamba_recall.runstore.migrate_store` requires of a file
    before it rewrites it with its hash."""
    if rec.get("schema") != SCHEMA or rec.get("schema_version") != 1:
        raise RunFileError(f"run file {path} is not a version 1 run record; {_fix(path)}.")
    _check_fields(rec, path, _FIELDS, None)
    return rec


def read_run(path: Path, key: str | None = None) -> dict:
    """The checked run at ``path`` (:func:`check_record`); a file that is not JSON raises :class:`RunFileError`."""
    try:
        rec = json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunFileError(f"corrupt run file {path} ({exc}); {_fix(path)}.") from exc
    return check_record(rec, path, key)


def _scan(jobs: Iterable[dict], store: Path | None = None) -> tuple[list[dict], list[dict], dict[str, str]]:
    """``(finished, left, damaged)``; ``damaged``: key → why its file is not a valid run (it is run again and
    replaced). A file written by a newer mamba_recall is not replaced: it raises."""
    jobs = list(jobs)
    done, left, damaged = [], [], {}
    for job in jobs:
        path = job_path(job, store)
        if not path.is_file():
            left.append(job)
            continue
        try:
            rec = read_run(path, job["key"])
        except RunFileError as exc:
            if "newer mamba_recall" in str(exc) or isinstance(exc, UnhashedRunFile):  # never replaced unasked
                raise
            damaged[job["key"]] = str(exc)
            left.append(job)
            continue
        gone = output_gone(rec, job)
        if gone:
            damaged[job["key"]] = f"run {path.name} of {job['experiment']}: {gone}"
            left.append(job)
            continue
        done.append(job)
    return done, left, damaged


def repo_relative(path) -> str:
    """``path`` relative to the repository, as run records and job outputs name files (absolute outside it)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT.resolve()))
    except ValueError:
        return str(path)


def output_record(path) -> dict:
    """The fields of a job's result that name a file it wrote (what :func:`output_gone` checks): ``checkpoint``, its
    path relative to the repository (:func:`repo_relative`), and ``sha256``, its content's."""
    path = Path(path)
    return {"checkpoint": repo_relative(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def output_gone(rec: dict, job: dict | None = None) -> str | None:
    """Why the file a finished run wrote is not there as it wrote it, or None. A run whose result names its
    ``checkpoint`` (repository-relative) with its ``sha256`` is finished only while that file exists with that hash:
    a job that saved a checkpoint is run again (and its record replaced) when the checkpoint is gone or changed, so the
    command that made a checkpoint also remakes it. A record that names none (written before records did) is checked
    against the file its ``job`` declares (:func:`make_job`'s ``output``): finished only while that file exists
    (where the run context writes it: a smoke run's under the smoke folder)."""
    result = rec.get("result")
    if not isinstance(result, dict) or not {"checkpoint", "sha256"} <= result.keys():
        declared = (job or {}).get("output")
        if declared and not _written_path(declared).is_file():
            return f"its checkpoint {declared} is missing"
        return None
    path = Path(result["checkpoint"])
    path = path if path.is_absolute() else REPO_ROOT / path
    if not path.is_file():
        return f"its checkpoint {result['checkpoint']} is missing"
    if hashlib.sha256(path.read_bytes()).hexdigest() != result["sha256"]:
        return f"its checkpoint {result['checkpoint']} is not the file it wrote (sha256 differs)"
    return None


def _written_path(declared: str) -> Path:
    """Where a run writes the repository-relative file ``declared``: under the repository, or under the smoke folder
    when the run context's smoke run is on (:func:`mamba_recall.results.written_path`)."""
    from ..results import written_path

    path = Path(declared)
    return written_path(path if path.is_absolute() else REPO_ROOT / path)


def pending(jobs: Iterable[dict], store: Path | None = None) -> tuple[list[dict], list[dict]]:
    """``(finished, left)``: the jobs whose result file exists and is a valid run of that job
    (:func:`check_record`), the others. A run file written by a newer mamba_recall raises :class:`RunFileError`."""
    done, left, _ = _scan(jobs, store)
    return done, left


def load_runs(experiment: str, store: Path | None = None) -> list[dict]:
    """Every stored run of ``experiment``, each checked (:func:`check_record`); a file that fails raises
    :class:`RunFileError` naming it and the fix."""
    folder = Path(store or RUNS_DIR) / experiment
    return [read_run(path) for path in sorted(folder.glob("*.json"))]


def finished_runs(jobs: list[dict], store: Path | None = None) -> list[dict]:
    """The stored runs of exactly these ``jobs`` (one experiment), for aggregating one preset's grid; none for no
    jobs (a stage whose jobs depend on runs not finished yet)."""
    if not jobs:
        return []
    experiments = {j["experiment"] for j in jobs}
    if len(experiments) != 1:
        raise ValueError(f"finished_runs takes the jobs of one experiment, got {sorted(experiments)}.")
    keys = {j["key"] for j in jobs}
    return [r for r in load_runs(experiments.pop(), store) if r["key"] in keys]
