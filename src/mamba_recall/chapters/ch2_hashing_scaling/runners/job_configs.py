"""Chapter 2's typed job configs (:class:`mamba_recall.runstore.JobConfig`): what each of its run-store experiments'
job functions receives, ``run_job(config, seed)``. Each record (``to_record``) is the dict these jobs had before
they were typed, field for field in the same order, so every job keeps its key (``tests/presets/`` fingerprints
them).

* :class:`CodeRecipe`, :class:`Evaluation`: the authors' ``code`` recipe as a job resolves it and its held-out
  evaluation schedule, shared by the trained grids;
* :class:`ReferenceCell`: one (D, N) cell of ``ch2_reference_grid`` and ``ch2_trained_dn``
  (:mod:`.reference_grid`);
* :class:`Fig7Cell`, :class:`Fig10Cell`, :class:`HeadCell`, :class:`Tab10Cell`: a cell of the one-model figure
  grids (:mod:`.figure_grids`: ``ch2_fig7``; ``ch2_fig10_11``; ``ch2_fig8`` and ``ch2_thm5``; ``ch2_tab10``);
* :class:`EnsembleUnit`: one ensemble of ``ch2_scaling`` (a part) or ``ch2_multihead`` (a head pattern and M)
  (:mod:`.ensembles`);
* :class:`CapacityCell`: one (D, N) cell and readout of ``ch2_designed_capacity`` (:mod:`.designed_capacity`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mamba_recall.runstore import JobConfig, omitted_if_none

__all__ = [
    "CapacityCell",
    "CodeRecipe",
    "EnsembleUnit",
    "Evaluation",
    "Fig10Cell",
    "Fig7Cell",
    "FigData",
    "HeadCell",
    "ReferenceCell",
    "ReferenceData",
    "Tab10Cell",
]


@dataclass(frozen=True, kw_only=True)
class CodeRecipe(JobConfig):
    """A recipe of ``configs.RECIPES`` as a job resolves it: its ``name``, its fields with the cell's overrides
    (warmup, hold, grad_clip) and the cell's ``batch_size``."""

    name: str
    lr: float
    betas: list[float]
    weight_decay: float
    warmup: int
    hold: int
    schedule: str
    grad_clip: float
    label_smoothing: float
    batch_size: int

    @classmethod
    def of(cls, name: str, batch: int, **overrides: Any) -> CodeRecipe:
        """``configs.RECIPES[name]`` with ``overrides`` and ``batch_size`` = ``batch``."""
        from ..configs import RECIPES

        fields = {**RECIPES[name], **overrides, "batch_size": batch}
        return cls(name=name, **{**fields, "betas": list(fields["betas"])})


@dataclass(frozen=True, kw_only=True)
class Evaluation(JobConfig):
    """The held-out evaluation: ``n`` sequences of stream ``seed``, every ``every`` steps; training stops at
    ``target_accuracy``; ``metric`` says what is measured."""

    n: int
    seed: int
    every: int
    target_accuracy: float
    metric: str


@dataclass(frozen=True, kw_only=True)
class ReferenceData(JobConfig):
    """The training data of a reference-grid cell, as words (the streams are ``seed·100003 + step``)."""

    task: str
    train_seed: str
    power_a: float
    pad: str
    init_seed: str


@dataclass(frozen=True, kw_only=True)
class ReferenceCell(JobConfig):
    """One (D, N) cell of the trained grids of regime R0 (Alg. 1, one layer): sizes V, N_f, L, D, N; the model's
    layers, expand, d_conv, ssm and residual; batch, steps, the recipe and its effective warmup (at most steps − 1),
    the data and the evaluation."""

    model: str
    V: int
    Nf: int
    L: int
    D: int
    N: int
    layers: int
    expand: int
    d_conv: int
    ssm: str
    residual: bool
    batch: int
    steps: int
    recipe: CodeRecipe
    warmup_effective: int
    data: ReferenceData
    eval: Evaluation


@dataclass(frozen=True, kw_only=True)
class FigData(JobConfig):
    """The task of a figure cell (``mqar``, ``repeated_keys``, ``repeated_queries``) with its keywords."""

    task: str
    task_kw: dict[str, Any]
    train_seed: str
    init_seed: str


@dataclass(frozen=True, kw_only=True)
class _FigCell(JobConfig):
    """What every figure cell records first: its part, preset, smoke, what it reproduces and the model."""

    part: str
    preset: str
    smoke: bool
    reproduces: str
    model: str


@dataclass(frozen=True, kw_only=True)
class Fig7Cell(_FigCell):
    """A Fig. 7 cell: the Λ-layer simplified model (Alg. 2, residual) at state N; N_eff = Λ N."""

    V: int
    Nf: int
    L: int
    D: int
    N: int
    layers: int
    N_eff: int
    d_conv: int
    residual: bool
    batch: int
    steps: int
    recipe: CodeRecipe
    eval: Evaluation
    data: FigData


@dataclass(frozen=True, kw_only=True)
class Fig10Cell(_FigCell):
    """A Figs. 10–11 cell: repeating keys or queries (``repeats``, ``post_query``) against ``layers``."""

    task: str
    repeats: int
    post_query: str
    V: int
    Nf: int
    L: int
    D: int
    N: int
    layers: int
    d_conv: int
    residual: bool
    batch: int
    steps: int
    recipe: CodeRecipe
    eval: Evaluation
    data: FigData


@dataclass(frozen=True, kw_only=True)
class HeadCell(_FigCell):
    """A Fig. 8 / Thm 5 cell: head ``pattern`` (MHA, MQA, MKA, MVA), ``values``, M heads of state N (Alg. 3)."""

    pattern: str
    values: str
    M: int
    N: int
    V: int
    Nf: int
    L: int
    D: int
    d_conv: int
    batch: int
    steps: int
    recipe: CodeRecipe
    eval: Evaluation
    n_noise: int
    data: FigData


@dataclass(frozen=True, kw_only=True)
class Tab10Cell(_FigCell):
    """A Tab. 10 row: ``selective`` (SelectiveAblationMamba) or linear, at ``d_conv``; ``sizes`` the part's."""

    row: str
    label: str
    selective: bool
    V: int
    Nf: int
    L: int
    D: int
    N: int
    d_conv: int
    residual: bool
    batch: int
    steps: int
    sizes: dict[str, Any]
    recipe: CodeRecipe
    eval: Evaluation
    data: FigData


@dataclass(frozen=True, kw_only=True)
class EnsembleUnit(JobConfig):
    """One ensemble of ``runner`` (``ch2_scaling``: a ``part``; ``ch2_multihead``: a head ``pattern`` and ``M``) at
    the preset's ``sizes``; ``device`` at the GPU presets ("auto")."""

    runner: str
    preset: str
    smoke: bool
    sizes: dict[str, Any]
    device: str | None = omitted_if_none()
    part: str | None = omitted_if_none()
    pattern: str | None = omitted_if_none()
    M: int | None = omitted_if_none()

    def unit(self) -> dict[str, Any]:
        """The ensemble's own fields (``part``; or ``pattern`` and ``M``), what the runner's ``run_unit`` reads."""
        return {k: v for k, v in (("part", self.part), ("pattern", self.pattern), ("M", self.M)) if v is not None}


@dataclass(frozen=True, kw_only=True)
class CapacityCell(JobConfig):
    """One (D, N) cell and readout of the designed circuit's capacity at vocabulary V: the accuracy ``levels``
    bisected over N_f with ``n_queries`` queries; the rest says how (construction, L, task, data seed)."""

    V: int
    D: int
    N: int
    readout: str
    levels: list[float]
    n_queries: int
    construction: str
    L: str
    task: str
    data_seed: str
