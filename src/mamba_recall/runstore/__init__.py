r"""The run store: every training run is a *job*, its result a small JSON file written the moment it ends.

A job is ``(experiment, config, seed)`` with ``config`` a typed :class:`JobConfig` **fully resolved** (sizes, steps,
optimiser recipe, evaluation seed and schedule: nothing left to a default that could change later). Its key is
``joblib.hash`` of the three, the config as its record (:meth:`JobConfig.to_record`, a dict; keys sorted, so the key
does not depend on the order of entries), and its result lives at::

    results/runs/<experiment>/<key>.json
      {"schema": "mamba_recall.run", "schema_version": 2, "key", "experiment", "config", "seed", "runner",
       "result": {...}, "nonfinite": [{"path", "value"}], "sha256",
       "provenance": {"git_commit", "git_clean", "dirty_files", "device", "versions",
                      "created", "wall_seconds", "host_cpus"}}

Faults (tests/runstore/test_faults_store.py): the store is checked writable before any job; a result that still cannot be
written is kept under :data:`UNSAVED_DIR` and named; a runner that raises is recorded in ``<key>.failed`` and the
grid goes on, listing the failures and the command that retries them at the end (exit status 1), and so is a job whose
worker process dies (SIGKILL from the OOM killer, a segfault), one that raises ``SystemExit`` and one whose result
JSON cannot keep (never stored as a ``str()``); each job is claimed (``<key>.claim``, a ``flock`` the kernel releases
when its process dies) so two grids on one store, or the workers of a killed one, never run a job twice; Ctrl-C
prints one line and exits with status 130, SIGTERM likewise with 143; a full disk stops the grid with one message
(:class:`StoreFull`); a run file without a valid ``sha256`` is refused (tests/runstore/test_faults_grid.py).

:func:`run_grid` runs the jobs whose file is missing and skips the others, so the same command resumes a
grid after an interruption (Ctrl-C, a killed session, another day or another machine: the files are
committed). Files are written atomically (a temporary file, then ``os.replace``), so an interrupted job
leaves nothing behind and is simply run again. Before starting, it prints how many jobs are finished and
left and an estimated time from a *measured* step time (the runner's ``estimate``); while running, a tqdm
bar with an ETA. ``n_jobs > 1`` runs jobs in separate processes (``joblib.Parallel``, the loky backend),
each with one torch thread; ``n_jobs=1`` runs them in this process, also with one thread. ``members=K`` (with a
runner that trains several seeds at once) runs the seeds of one config K at a time as one unit of work (one
ensemble), each result still written under its own key (:func:`units`).

Machinery (see the appendix "Engineering notes", "The run store"): ``joblib.hash`` keys the jobs and ``joblib.Parallel`` runs them; the
store itself is plain JSON files rather than ``joblib.Memory``'s pickles, because the results are committed
and read by people and by the book (one reviewable JSON per run), and because ``Memory`` also keys on the
function's source, so any edit to a runner would silently orphan every finished run.

The modules, this package's internals (import every name from ``mamba_recall.runstore``):

* ``_errors``: the exceptions (:class:`RunFileError`; :class:`GridExit` and the ones that end a grid command);
* ``_config``: typed job configs (:class:`JobConfig`) and the record a job's key hashes (:func:`config_record`);
* ``_records``: jobs, their keys and file paths, and reading a run file back (its checks, ``sha256``, NaN);
* ``_store``: writing into the store: one job's claim, its computation and provenance, its atomic write or its
  recorded failure (:func:`process_provenance`, :func:`check_writable`, :func:`claimed_by`);
* ``_engines``: :func:`run_grid`, in this process, in joblib (loky) processes or as Ray tasks, and Ctrl-C;
* ``_aggregate``: the one way from seeds to an interval (:func:`mean_interval`: mean, 95 % interval, clipped to a
  declared range, paired differences), the one regression with t-intervals (:func:`least_squares`; a line:
  :func:`regression_interval`) and :func:`aggregate`;
* ``_layout``: the one layout every bundle starts with, its tables ``runs`` and ``cells`` (:func:`run_tables`);
* ``_bundles``: a grid's bundle (:func:`finished_status`, :func:`partial_status`, :func:`runs_summary`,
  :func:`save_grid_bundle`);
* ``_cli``: the command line every run-store runner shares (:func:`add_grid_args`, :func:`grid_main`);
* ``_demo``: the demo grid (:func:`demo_job`, its typed config :class:`DemoConfig`; ``python -m mamba_recall.runstore
  demo``);
* ``_migrate``: a store's run files rewritten to the current schema once (:func:`migrate_store`), and the runs and
  bundles of renamed experiments under today's names and keys (:func:`migrate_names`), each recorded in its
  ``MIGRATIONS.json`` (``python -m mamba_recall.runstore migrate``);
* ``_dataset``: every committed run as one table, ``results/dataset/runs.parquet`` with its data card
  (:func:`write_dataset`, :func:`check_dataset`; ``python -m mamba_recall dataset [--write]``).

The job functions are found by their runner strings at run time (``"mamba_recall.runstore:demo_job"`` is this
package's :func:`demo_job`). A test that patches a constant (``RUNS_DIR``, ``UNSAVED_DIR``) or a helper patches it
in the module that reads it: the names here are the same objects, bound once at import.
"""

from __future__ import annotations

from ._errors import (
    BundleNotReplaced,
    GridExit,
    GridInterrupted,
    GridTerminated,
    JobsFailed,
    RunFileError,
    StoreFull,
    StoreNotWritable,
    UnhashedRunFile,
)
from ._config import JobConfig, config_record, omitted_if_none
from ._records import (
    FAILURE_SCHEMA,
    READABLE_SCHEMA_VERSIONS,
    RUNS_DIR,
    SCHEMA,
    SCHEMA_VERSION,
    check_record,
    claim_path,
    failure_path,
    finished_runs,
    job_config,
    job_key,
    job_path,
    json_result,
    load_runs,
    make_job,
    output_gone,
    output_record,
    pending,
    read_run,
    record_hash,
    repo_relative,
)
from ._store import UNSAVED_DIR, check_writable, claimed_by, job_device, process_provenance
from ._engines import ENGINES, run_grid, this_command, units
from ._aggregate import (
    INTERVAL_METHOD,
    aggregate,
    least_squares,
    mean_interval,
    regression_interval,
    t_interval,
    t_quantile,
    t_quantile_975,
)
from ._layout import LAYOUT, run_tables, shared_config
from ._bundles import (
    GridStatus,
    bundle_directory,
    dirty_files_committed_since,
    finished_status,
    is_default_store,
    partial_status,
    runs_summary,
    save_grid_bundle,
)
from ._cli import (
    GRID_OPTIONS,
    JOB_DEVICE_HELP,
    GridStage,
    add_engine_args,
    add_device_arg,
    add_grid_args,
    add_only_arg,
    as_only,
    engine_options,
    grid_main,
    grid_context,
    grid_store,
    log_stderr,
    only_selection,
    positive_int,
    run_missing,
    run_or_count,
    select_jobs,
)
from ._demo import DemoConfig, demo_job, demo_jobs, demo_members, main
from ._migrate import MIGRATIONS_NAME, migrate_names, migrate_store, upgrade_record
from ._dataset import DATASET_DIR, WRITE_COMMAND as DATASET_COMMAND, build_table, check_dataset, write_dataset

__all__ = [
    "RUNS_DIR",
    "SCHEMA",
    "JobConfig",
    "config_record",
    "omitted_if_none",
    "job_config",
    "job_key",
    "make_job",
    "job_path",
    "load_runs",
    "output_gone",
    "output_record",
    "repo_relative",
    "pending",
    "run_grid",
    "units",
    "aggregate",
    "run_tables",
    "shared_config",
    "LAYOUT",
    "t_quantile",
    "t_quantile_975",
    "t_interval",
    "least_squares",
    "regression_interval",
    "INTERVAL_METHOD",
    "process_provenance",
    "job_device",
    "runs_summary",
    "finished_status",
    "partial_status",
    "save_grid_bundle",
    "GRID_OPTIONS",
    "JOB_DEVICE_HELP",
    "add_device_arg",
    "add_grid_args",
    "add_only_arg",
    "as_only",
    "only_selection",
    "select_jobs",
    "grid_context",
    "grid_store",
    "run_missing",
    "run_or_count",
    "grid_main",
    "GridStage",
    "log_stderr",
    "DATASET_DIR",
    "DATASET_COMMAND",
    "build_table",
    "write_dataset",
    "check_dataset",
]
