"""Chapter 1's typed job configs (:class:`mamba_recall.runstore.JobConfig`): what the job function of its run-store
experiments (:func:`.grid_jobs.run_job`) receives. Each record (``to_record``) is the dict these jobs had before
they were typed, field for field in the same order, so every job keeps its key (``tests/presets/`` fingerprints
them). ``sizes`` is the preset entry the model trains at, as the dict the training reads
(:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.train_recall`; smoke-capped in a smoke
run; one conv width or W_o target picked where the entry lists several).

* :class:`ModelJob`: one model trained and saved (``kind``: ``checkpoint``, ``model``, ``full_mamba`` or ``wo``;
  ``model`` its name);
* :class:`Table1Cell`: one Table 1 cell, model ``model`` at length T with κ keys (``kind`` ``table1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mamba_recall.runstore import JobConfig

__all__ = ["ModelJob", "Table1Cell"]


@dataclass(frozen=True, kw_only=True)
class ModelJob(JobConfig):
    """One model of kind ``kind`` named ``model``, trained at ``preset`` (``smoke``: capped) with ``sizes``."""

    kind: str
    model: str
    preset: str
    smoke: bool
    sizes: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Table1Cell(JobConfig):
    """One Table 1 cell: ``model`` at sequence length T with κ keys, at ``preset`` with the table's ``sizes``."""

    kind: str
    model: str
    T: int
    kappa: int
    preset: str
    smoke: bool
    sizes: dict[str, Any]
