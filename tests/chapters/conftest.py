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


@pytest.fixture
def smoke_grid(smoke_store):
    """``run(name, preset)``: ``python -m mamba_recall grid <name> --preset <preset> --smoke`` into the run store
    ``smoke_store / "runs"`` (the finished jobs skipped, so a second call runs nothing); returns the smoke bundle it
    wrote, checked to record the grid's one command."""
    from mamba_recall.experiment import grid_command
    from mamba_recall.results import load_bundle

    def run(name: str, preset: str):
        args = [name, "--preset", preset, "--smoke", "--store", str(smoke_store / "runs"), "--no-estimate"]
        assert grid_command(args) == 0
        bundle = load_bundle(f"{name}_{preset}_smoke", directory=smoke_store)
        assert bundle.command == f"python -m mamba_recall grid {name} --preset {preset} --allow-long"
        return bundle

    return run
