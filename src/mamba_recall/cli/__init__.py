"""``python -m mamba_recall``: run chapters with papermill, build the book, regenerate the results.

    python -m mamba_recall run <chapter|all> --preset ci|paper --device cpu|cuda|auto [--out DIR]
    python -m mamba_recall book [--preset ci] [--device auto]     # execute every chapter, build _build/html
    python -m mamba_recall refresh [chapter|notebook.ipynb ...]   # re-execute book/ notebooks in place (ci)
    python -m mamba_recall reproduce [--only NAME ...] [--preset paper --device cuda]  # regenerate results/
    python -m mamba_recall dataset [--write]                      # every committed run as one table: check/rewrite
    python -m mamba_recall plan --preset cpu-hours [--estimate]   # every run-store grid: jobs finished and left
    python -m mamba_recall grid <experiment> --preset P [--jobs N] [--engine local|ray]  # run one (mamba_recall.experiment)

Executed notebooks of ``run`` and ``book`` go to ``_build/`` (never into ``book/``); ``refresh`` is
the one command that rewrites the committed outputs that nbval compares against. The scan benchmark is a script
of the repository, not of the library: ``python benchmarks/scan.py`` (``make bench``; ``reproduce`` runs it too).

The modules, this package's internals (import every name from ``mamba_recall.cli``):

* ``_run``: the notebooks (:func:`toc_notebooks`, :func:`chapter_notebooks`), their execution (:func:`execute`,
  :class:`NotebookFailed`) and the book (:func:`build_book`, :func:`build_html`, :func:`clean_for_book`);
* ``_outputs``: the committed outputs (:func:`refresh_committed_outputs`, :func:`check_outputs`);
* ``_main``: :func:`reproduce`, the parser and :func:`main` (``mamba_recall.cli:main``, the ``mamba-recall`` script).

A test that patches a constant (``REPO_ROOT``) patches it in the module that reads it: the names here are the same
objects, bound once at import.
"""

from __future__ import annotations

from ..runners import experiment_runners
from ._run import (
    DEFAULT_TIMEOUT_S,
    WIDGET_VIEW,
    Interrupted,
    NotebookFailed,
    breakable_headers,
    build_book,
    build_html,
    cell_timeout,
    chapter_notebooks,
    clean_for_book,
    execute,
    toc_notebooks,
)
from ._outputs import (
    CHECK_MARKER,
    SKIP_COMPARE,
    check_outputs,
    coalesce_streams,
    refresh_committed_outputs,
    refresh_targets,
    write_atomic_notebook,
)
from ._main import main, notebook_parameters, reproduce
