"""Chapter 2's training entry point: :func:`train_ensemble`, a named recipe of paper 002 (:data:`..configs.RECIPES`)
on an ensemble of simplified models, through the one training loop (:func:`mamba_recall.train.train` with
``per_member=True``)."""

from __future__ import annotations

from typing import Callable

from mamba_recall.train import Recipe, Stopping, TrainResult, train

from ..configs import RECIPES


def train_ensemble(
    model,
    make_batch: Callable[[int], tuple],
    *,
    steps: int,
    recipe: str = "code",
    overrides: dict | None = None,
    eval_batch=None,
    eval_every: int = 100,
    target_accuracy: float | None = None,
    seed: int = 0,
    device="cpu",
    num_threads: int | None = None,
    progress: bool = False,
) -> TrainResult:
    """:func:`train` with ``per_member=True`` and a named recipe of :data:`~mamba_recall.chapters.ch2_hashing_scaling.configs.RECIPES`
    (``"code"``: the authors' committed recipe for paper 002; ``"tab9"``: the paper's Tab. 9); ``overrides`` replace
    recipe entries (e.g. ``{"warmup": 50, "hold": 50}``; ``batch_size`` is informational: ``make_batch`` sets
    the batch). ``make_batch(step) -> (inputs (B, L) or (n_members, B, L), labels)``. Early stop when *every*
    member reaches ``target_accuracy``."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; use one of {tuple(RECIPES)}.")
    return train(
        model,
        make_batch,
        steps=steps,
        recipe=Recipe.from_preset({**RECIPES[recipe], **(overrides or {})}),
        stop=Stopping(eval_every=eval_every, target_accuracy=target_accuracy),
        eval_batch=eval_batch,
        per_member=True,
        seed=seed,
        device=device,
        progress=progress,
        desc="train_ensemble",
        num_threads=num_threads,
    )
