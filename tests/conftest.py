"""Shared pytest configuration: tests marked ``gpu`` are skipped, with a reason, on machines without CUDA; the
verdicts tests record go to a folder of their own, never into the book's ``_build/scorecard``; the repository's
``tools/`` (scripts the library never imports, such as the browser check) is importable by the tests."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))


def pytest_configure(config):
    os.environ["MAMBA_RECALL_SCORECARD_DIR"] = tempfile.mkdtemp(prefix="mamba-recall-test-scorecard-")


def pytest_collection_modifyitems(config, items):
    # The live-widget tests first: the longest file (minutes of JupyterLab) then runs on one process while the other
    # takes the rest (make test: pytest-xdist, one file per process, handed out in this order).
    items.sort(key=lambda item: "live" not in item.keywords)
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
