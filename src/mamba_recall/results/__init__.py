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
* **One state per read.** Writers hold an exclusive ``flock`` on the folder while they write and rename, readers a
  shared one while they read (:func:`_files.folder_lock`); each file is read once, its hash checked on those bytes and
  the same bytes parsed: a bundle read while it is rewritten is the old one or the new one, never a mix.
* **The code that ran.** Provenance records a package imported from outside the checkout (its folder and source
  hash, dirty when its files differ from the checkout's) and why there is no commit (``git_reason``: no git, no
  ``.git``); ``MAMBA_RECALL_REQUIRE_CLEAN=1`` refuses a bundle or checkpoint whose code is not a clean commit.
* **A checkpoint pair is its own.** A sidecar naming another ``.pt`` than the one beside it (a pair copied over
  another) is an error naming both.
* **A content hash.** Bundles (and sidecars) written now carry ``content_sha256``, the sha256 of their canonical
  JSON without that field (:func:`_content_sha256`), checked when loaded: a flipped digit that still parses is
  caught. A file without one is refused (:class:`BundleError` naming the command that remakes it): every
  committed bundle and sidecar has one.
* **Strict JSON.** Non-finite floats (NaN, ±inf) are written as ``null`` (``allow_nan=False``) and listed with
  their place in ``nonfinite``, so loading gives back the same NaN (a None stays None); a file with a bare ``NaN``
  is refused as corrupt.
* **Absent vs. corrupt.** Only an absent bundle raises :class:`BundleMissing` (and an incomplete one, asked for
  by :func:`evidence`, its subclass :class:`BundleIncomplete`), the one failure a reader may answer with weaker
  evidence (saying so). A corrupt bundle raises :class:`BundleError` naming the file and the
  command that regenerates it, and one from a newer library raises :class:`BundleTooNew` (update mamba_recall).
* **Smoke runs** never write under ``results/``: a bundle that says it is one (its name ends in ``_smoke`` or its
  config has ``smoke: true``), and everything saved while a smoke run is on (the run context's smoke folder, :func:`smoke_results_dir`), goes to
  ``_build/smoke/results/`` (:data:`SMOKE_RESULTS_DIR`).

The modules, this package's internals (import every name from ``mamba_recall.results``):

* ``_records``: the schemas, the errors (:class:`BundleError`, :class:`BundleMissing`, :class:`BundleTooNew`,
  :class:`CheckpointMissing`), :class:`Bundle`, :func:`provenance` and the command's one git state
  (:func:`command_provenance`, :func:`command_git_state`);
* ``_files``: atomic writes, strict JSON with the non-finite floats listed, the content hash;
* ``_bundles``: the smoke-output redirect (:func:`smoke_results_dir`, :func:`smoke_active`,
  :func:`smoke_run_store`), :func:`save_bundle`, :func:`load_bundle` (one file), :func:`regenerate_command`;
* ``_evidence``: :func:`evidence`, **the one loader of an experiment's evidence** (the strongest complete
  committed bundle, or that preset's; else :class:`BundleMissing` / :class:`BundleIncomplete` naming the command
  that makes it, :func:`make_command`). Chapters read their bundles through it, never through ``load_bundle``; a
  page's own figures read it at the run's preset, falling back to the next weaker one and saying so
  (``evidence(name, preset=ctx.preset, weaker=True)``);
* ``_checkpoints``: :func:`checkpoint_file` (the one name), :func:`save_checkpoint`, :func:`read_checkpoint` (a checked
  pair) and :func:`model_from_checkpoint` (the model of a checkpoint, built by the chapter's constructor: the one model loader).

Process state lives in one place each: the command's git state in ``_records`` (read through
:func:`command_git_state`), the smoke folder in ``_bundles`` (read through :func:`smoke_active`). A test that patches
a constant or a helper patches it in the module that reads it (``_bundles.RESULTS_DIR`` and
``_bundles.SMOKE_RESULTS_DIR``, ``_records._git_state``, ``_files._write_file``): the names here are the same objects,
bound once at import (``RESULTS_DIR`` here is read too, by the run store's ``save_grid_bundle`` and by
``analysis.synthesis`` when called: a test that moves the results folder patches it in both places).
"""

from __future__ import annotations

from ..paths import BUILD_DIR, RESULTS_DIR
from ..provenance import device_description
from ._records import (
    CONTENT_HASH,
    ENV_REQUIRE_CLEAN,
    NONFINITE,
    SCHEMA,
    SCHEMA_VERSION,
    SIDECAR_SCHEMA,
    SIDECAR_SCHEMA_VERSION,
    Bundle,
    BundleError,
    BundleMissing,
    BundleTooNew,
    CheckpointMissing,
    command_git_state,
    command_provenance,
    provenance,
)
from ._bundles import (
    SMOKE_RESULTS_DIR,
    load_bundle,
    read_bundle_record,
    recorded_command,
    regenerate_command,
    rewrite_bundle,
    rewritten_bytes,
    save_bundle,
    smoke_results_dir,
    smoke_active,
    smoke_run_store,
    written_path,
)
from ._evidence import EVIDENCE_ORDER, BundleIncomplete, evidence, make_command
from ._checkpoints import (
    CHECKPOINT_DIR,
    checkpoint_file,
    model_from_checkpoint,
    read_checkpoint,
    rename_checkpoint,
    save_checkpoint,
)
