"""Chapter 3's typed job configs (:class:`mamba_recall.runstore.JobConfig`): the fully resolved configuration of
one trained run, what its job function receives (``run_job(config, seed)``) and what the training functions of
this chapter read (:func:`.selectivity.train_recipe`). Each record (``to_record``) is the dict these runs had before
they were typed, field for field in the same order, so every job keeps its key (``tests/presets/`` fingerprints
them).

Every run shares the recipe and data seeds of :func:`.selectivity.recipe_fields` (``steps`` … ``train_seed``,
declared on each class after its task and model); ``device`` ("auto") is recorded at the GPU presets only
(:func:`.selectivity.job_config`).

* :class:`KeepRun`: KEEP n-TH (``ch3_keep_nth``; ``preset`` names the checkpoint it may write);
* :class:`MqarRun`: MQAR (``ch3_mqar_train``, ``ch3_mqar_figa3``; ``grid`` the grid it belongs to);
* :class:`InductionRun`: INDUCTION HEADS (``ch3_induction``);
* :class:`ConstructionPair`: one (κ, |V|) pair of the hand-set MQAR constructions' sweep (``ch3_mqar_constructions``,
  nothing trained).
"""

from __future__ import annotations

from dataclasses import dataclass

from mamba_recall.runstore import JobConfig, omitted_if_none

__all__ = ["ConstructionPair", "InductionRun", "KeepRun", "MqarRun"]


@dataclass(frozen=True, kw_only=True)
class KeepRun(JobConfig):
    """One KEEP n-TH run: sequences of length T over |V| tokens, keep the ``nth``; model ``model`` (s6, s6+pe, s4d,
    …, transformer of width ``transformer_d``) of width d and state N; then the recipe and seeds."""

    task: str
    T: int
    V: int
    nth: int
    d: int
    N: int
    model: str
    transformer_d: int
    steps: int
    batch: int
    lr: float
    weight_decay: float
    schedule: str
    eval_every: int
    target_accuracy: float
    eval_sequences: int
    eval_seed: int
    test_sequences: int
    test_seed: int
    train_seed: str
    preset: str | None = omitted_if_none()
    device: str | None = omitted_if_none()


@dataclass(frozen=True, kw_only=True)
class MqarRun(JobConfig):
    """One MQAR run: length T, |V| values, κ keys; ``mixer`` (s6, s4d, mamba2) of width d and state N; then the
    recipe and seeds."""

    task: str
    T: int
    V: int
    kappa: int
    d: int
    N: int
    mixer: str
    steps: int
    batch: int
    lr: float
    weight_decay: float
    schedule: str
    eval_every: int
    target_accuracy: float
    eval_sequences: int
    eval_seed: int
    test_sequences: int
    test_seed: int
    train_seed: str
    grid: str | None = omitted_if_none()
    device: str | None = omitted_if_none()


@dataclass(frozen=True, kw_only=True)
class InductionRun(JobConfig):
    """One INDUCTION HEADS run: length T, |V| tokens, hard-case probability p, range γ; ``mixer`` of width d and
    state N; then the recipe and seeds."""

    task: str
    T: int
    V: int
    p: float
    gamma: float
    d: int
    N: int
    mixer: str
    steps: int
    batch: int
    lr: float
    weight_decay: float
    schedule: str
    eval_every: int
    target_accuracy: float
    eval_sequences: int
    eval_seed: int
    test_sequences: int
    test_seed: int
    train_seed: str
    device: str | None = omitted_if_none()


@dataclass(frozen=True, kw_only=True)
class ConstructionPair(JobConfig):
    """One (κ, |V|) pair of the constructions' sweep: length T, ``sequences`` test sequences, ``draws`` JL draws per
    code size of ``ps`` and variant of ``variants`` (Thm 4 only where κ·p ≤ ``thm4_max_kappa_p``); with
    ``keys_and_columns`` also the key sizes ``pks`` (value size ``thm3_keys_pv``) and Thm 2's state columns."""

    kappa: int
    V: int
    T: int
    sequences: int
    draws: int
    ps: list[int]
    variants: list[str]
    thm4_max_kappa_p: int
    keys_and_columns: bool
    pks: list[int]
    thm3_keys_pv: int
