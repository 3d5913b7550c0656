"""Shared pytest configuration: tests marked ``gpu`` are skipped, with a reason, on machines without CUDA; the
verdicts tests record go to a folder of their own, never into the book's ``_build/scorecard``; the repository's
``tools/`` (scripts the library never imports, such as the browser check) is importable by the tests; what a test's
``setup`` call entered in the run context ends with the test.

The tests mirror ``src/mamba_recall/`` (``tests/scan/`` tests ``mamba_recall.scan``, ``tests/base/`` the modules at the
package's top, ``tests/book/`` the book as a reader gets it). Every test folder is on ``sys.path``, so a test file may
import a helper from another by its basename (basenames are unique across folders) whichever file is collected first."""

from __future__ import annotations

import collections
import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
for _folder in sorted(Path(__file__).resolve().parent.rglob("*")):  # nested folders too (tests/chapters/ch4_…)
    parts = _folder.relative_to(Path(__file__).resolve().parent).parts
    if _folder.is_dir() and all(p.isidentifier() and p not in {"data", "__pycache__"} for p in parts):
        sys.path.insert(0, str(_folder))


@pytest.fixture(autouse=True)
def _kernel_context():
    """A test that calls ``setup`` enters the run context for the rest of its process, as a notebook's first cell does
    for its kernel (:func:`mamba_recall.context.enter`); the next test starts from the process's own context."""
    yield
    from mamba_recall import context

    context.reset()


def pytest_configure(config):
    os.environ["MAMBA_RECALL_SCORECARD_DIR"] = tempfile.mkdtemp(prefix="mamba-recall-test-scorecard-")


def pytest_collection_modifyitems(config, items):
    # the live-widget files first, then the others by their number of tests, most first. make test's xdist
    # (--dist loadfile) reorders files by their number of tests, so there the two live files start near the end, as
    # in the CI runs that passed: started together at the beginning (--no-loadscope-reorder), a fresh clone's run once
    # starved page 1.2's live training into its long-run guard (estimate 2.5 h > 1 h).
    per_file = collections.Counter(item.path for item in items)
    items.sort(key=lambda item: ("live" not in item.keywords, -per_file[item.path]))
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
