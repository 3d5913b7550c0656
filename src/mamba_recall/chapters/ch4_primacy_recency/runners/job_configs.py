"""Chapter 4's typed job configs (:class:`mamba_recall.runstore.JobConfig`): what each of its run-store experiments'
job functions receives, ``run_job(config, seed)``. Each record (``to_record``) is the dict these jobs had before
they were typed, field for field in the same order, so every job keeps its key (``tests/presets/`` fingerprints
them). A ``recipe`` is the S-model recipe as the preset resolves it (``configs.SModelRecipe`` and its kinds, as the
dict :func:`.train.train_recipe` reads, smoke-capped in a smoke run), with the job's seed.

* :class:`SModelJob`: one S-model of ``ch4_train`` (:mod:`.train`);
* :class:`ModelCheckJob`: the claims judged on one committed S-model (``ch4_model_checks``, :mod:`.model_checks`);
* :class:`EdgeEvaluation`, :class:`EdgeJob`: one edge model and seed (``ch4_edge``, :mod:`.edge_jobs`);
* :class:`EdgeMixJob`: one mixed-channel fine-tune of an edge model (``ch4_edge_mix``, :mod:`.edge_mix`);
* :class:`EdgeChecksJob`: the claims measured on one finished edge model (``ch4_edge_checks``, :mod:`.edge_checks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mamba_recall.runstore import JobConfig, omitted_if_none

__all__ = ["EdgeChecksJob", "EdgeEvaluation", "EdgeJob", "EdgeMixJob", "ModelCheckJob", "SModelJob"]


@dataclass(frozen=True, kw_only=True)
class SModelJob(JobConfig):
    """The S-model ``model`` at ``preset`` (``smoke``: a handful of steps), trained by ``recipe``; ``device``
    ("auto") at the GPU presets."""

    model: str
    preset: str
    smoke: bool
    recipe: dict[str, Any]
    device: str | None = omitted_if_none()


@dataclass(frozen=True, kw_only=True)
class ModelCheckJob(JobConfig):
    """The claims of §4.1–§4.4 measured on the committed ``checkpoint`` of ``model`` (its sidecar's
    ``checkpoint_sha256``), at the sizes of ``sizes_preset``. ``stores``: what the job records, each claim's
    measurement (judged by the claims' rules when a page reads it; the jobs before it stored verdicts)."""

    model: str
    preset: str
    sizes_preset: str
    smoke: bool
    checkpoint: str
    checkpoint_sha256: str
    stores: str = "measurements"


@dataclass(frozen=True, kw_only=True)
class EdgeEvaluation(JobConfig):
    """The edge curves' evaluation: ``n`` contexts at each length of ``Ls``."""

    Ls: list[int]
    n: int


@dataclass(frozen=True, kw_only=True)
class EdgeJob(JobConfig):
    """One edge model: recipe ``recipe_name`` at ``preset`` and its seed, named ``model_name``, written to
    ``checkpoint`` (repository-relative), evaluated by ``eval``."""

    recipe_name: str
    preset: str
    model_name: str
    checkpoint: str
    recipe: dict[str, Any]
    eval: EdgeEvaluation


@dataclass(frozen=True, kw_only=True)
class EdgeMixJob(JobConfig):
    """One edge model of ``base_recipe`` fine-tuned on the mixture (``recipe``: the edge recipe with the fine-tune's
    changes, ``init_from`` the base model), written to ``checkpoint``, then measured (``measure``: the Table 1
    sizes)."""

    preset: str
    base_recipe: str
    model_name: str
    checkpoint: str
    recipe: dict[str, Any]
    measure: dict[str, Any]
    smoke: bool


@dataclass(frozen=True, kw_only=True)
class EdgeChecksJob(JobConfig):
    """The claims measured on one finished edge model ``model_name`` of recipe ``recipe_name``: its ``checkpoint``
    (repository-relative; ``sha256`` the one its training run recorded) at the length ``at`` (its pressure length
    ``L_p``, None when the model has none), its U-curve at ``ucurve_Ls``, with the sizes of ``sizes_preset``
    (``smoke``: the smoke-capped ones); ``null_control`` names every claim's null control (``"untrained_twin"``). A
    Mamba-2 model's job says ``arch="mamba2"`` (App. F's head claims); a Mamba-1 one's has no ``arch`` (so the keys of
    the committed Mamba-1 checks stay what they were) and says ``distractor_pool`` (Fig. 5b's distractors)."""

    model_name: str
    recipe_name: str
    checkpoint: str
    sha256: str
    preset: str
    sizes_preset: str
    smoke: bool
    at: int
    L_p: int | None
    ucurve_Ls: list[int]
    null_control: str
    arch: str | None = omitted_if_none()
    distractor_pool: str | None = omitted_if_none()
