"""Fixtures the chapters' tests share: ``smoke_store``, a folder of their own for the bundles a test's grid writes."""

from __future__ import annotations

import pytest


@pytest.fixture
def smoke_store(tmp_path, monkeypatch):
    """``tmp_path`` as the results folder and the smoke results folder (``mamba_recall.results`` and where its
    ``save_bundle`` reads them), so a test's bundles, smoke ones too, go there and never into ``results/``."""
    from mamba_recall import results

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(results._bundles, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(results._bundles, "SMOKE_RESULTS_DIR", tmp_path)
    return tmp_path
