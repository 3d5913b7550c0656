"""Chapter 5's typed job configs (:class:`mamba_recall.runstore.JobConfig`): what each of its run-store experiments'
job functions receives, ``run_job(config, seed)``. Each record (``to_record``) is the dict these jobs had before
they were typed, field for field in the same order, so every job keeps its key (``tests/presets/`` fingerprints
them), and a committed run's ``config`` reads back typed (``from_record``).

* :class:`SearchRecipe`, :class:`SearchData`, :class:`SearchEvaluation`: paper 002's code recipe as a search
  resolves it (its ``lr`` the cell's at the tuned budget, the swept one in the sweep), the data as words and the
  held-out evaluation with its stopping rule;
* :class:`CapacitySearch`: one (layers, D, N) search over the κ ladder (``ch5_capacity``, ``ch5_capacity_long``,
  ``ch5_capacity_tuned``: :func:`.capacity.run_job`);
* :class:`RateProbe`: one probe of the learning-rate sweep at its cell's ``probe_kappa`` (``ch5_capacity_lr_sweep``:
  :func:`.capacity.run_sweep_job`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from mamba_recall.runstore import JobConfig

__all__ = ["CapacitySearch", "RateProbe", "SearchData", "SearchEvaluation", "SearchRecipe"]


@dataclass(frozen=True, kw_only=True)
class SearchRecipe(JobConfig):
    """Paper 002's code recipe (``configs.CapacityRecipe`` as the preset resolves it; what
    ``mamba_recall.train.Recipe.from_preset`` reads): AdamW at ``lr`` with ``betas`` and ``weight_decay``, the
    ``schedule`` warm-up → hold → cosine, gradient clip and label smoothing."""

    lr: float
    betas: list[float]
    weight_decay: float
    schedule: str
    warmup: int
    hold: int
    grad_clip: float
    label_smoothing: float


@dataclass(frozen=True, kw_only=True)
class SearchData(JobConfig):
    """The training data as words: the generator and its options (``task``, read back by
    :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search.data_options`), the training batches'
    stream (``seed·100003 + step``) and the init seed."""

    task: str
    train_seed: str
    init_seed: str


@dataclass(frozen=True, kw_only=True)
class SearchEvaluation(JobConfig):
    """The held-out evaluation: ``n`` sequences of stream ``seed`` (10⁶ + κ), every ``every`` steps; training stops
    at ``target_accuracy`` or when the best recall has not grown by ``min_delta`` over ``patience`` evaluations; Δ is
    read on the first ``n_delta`` sequences; ``metric`` says what is measured."""

    n: int
    seed: str
    every: int
    target_accuracy: float
    patience: int
    min_delta: float
    n_delta: int
    metric: str


@dataclass(frozen=True, kw_only=True)
class CapacitySearch(JobConfig):
    """One search: ``MambaLMHeadModel(D, layers, V, d_state=N)`` (``d_conv``, ``expand``) probed on the κ
    ``ladder`` at L = ``L_per_kappa``·κ for the largest κ at each of ``thresholds``, each probe at most ``steps``
    steps of batch ``batch``."""

    model: str
    layers: int
    D: int
    N: int
    d_conv: int
    expand: int
    V: int
    L_per_kappa: int
    ladder: list[int]
    thresholds: list[float]
    batch: int
    steps: int
    recipe: SearchRecipe
    data: SearchData
    eval: SearchEvaluation


@dataclass(frozen=True, kw_only=True)
class RateProbe(CapacitySearch):
    """One probe of the learning-rate sweep: the search's config of its cell (its recipe at the swept rate) trained
    and measured once, at κ = ``probe_kappa``."""

    probe_kappa: int

    @classmethod
    def of(cls, search: CapacitySearch, probe_kappa: int) -> RateProbe:
        """The probe of ``search``'s config at κ = ``probe_kappa``."""
        return cls(**{f.name: getattr(search, f.name) for f in fields(search)}, probe_kappa=probe_kappa)
