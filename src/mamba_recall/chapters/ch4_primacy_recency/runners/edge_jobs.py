"""The edge grid of Chapter 4's runner (:mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge`): one run-store job per (recipe,
seed) (:func:`jobs_for`) and its job function :func:`run_job` (train one edge S-model, measure its per-position
recall), which the runner's ``RUNNER`` string names at ``mamba_recall.chapters.ch4_primacy_recency.runners.edge:run_job``; plus what both
of the runner's stages read (:func:`model_name`, :func:`edge_sizes`, :func:`smoke_bundle_dir`)."""

from __future__ import annotations

import time
from pathlib import Path

from mamba_recall.chapters.ch4_primacy_recency.pipelines.edge_seeds import declared_seeds
from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import (
    checkpoint_path,
    contexts,
    edge_model_name,
    pressure_length,
)
from mamba_recall.experiment import command_line
from mamba_recall.paths import REPO_ROOT
from mamba_recall.presets import experiment
from mamba_recall.runstore import make_job

from .job_configs import EdgeEvaluation, EdgeJob

EXPERIMENT = "ch4_edge"
RUNNER = "mamba_recall.chapters.ch4_primacy_recency.runners.edge:run_job"
VARIANTS = ("repeated", "random")


def model_name(recipe: str, preset: str, seed: int, smoke: bool = False) -> str:
    """``edge_<recipe>_<preset>_seed<k>`` (``_smoke`` appended for a smoke run, whose checkpoint is not kept):
    :func:`~mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.edge_model_name` of ``ch4_edge``."""
    return edge_model_name(EXPERIMENT, recipe, preset, seed, smoke)


def edge_sizes(preset: str, smoke: bool) -> dict:
    """The sizes of experiment ``ch4_edge`` at ``preset`` (``chapters/ch4_primacy_recency/configs.py``): its recipes, reserve seeds and
    evaluation."""
    return experiment(EXPERIMENT, preset, smoke=smoke)


def smoke_bundle_dir() -> Path:
    """Where a smoke run's bundles go (``_build/smoke_results``: never evidence); the tests point it elsewhere (in
    ``ch4_edge``, ``ch4_edge_checks`` and ``ch4_edge_mix``, the modules of the bundle writers that call it)."""
    return REPO_ROOT / "_build" / "smoke_results"


def jobs_for(preset: str, smoke: bool = False, recipes: list[str] | None = None) -> list[dict]:
    """One job per (recipe, seed), over the recipe's :func:`declared_seeds` (reserve seeds included); the config is
    fully resolved (the recipe with its seed, the evaluation)."""
    sizes = edge_sizes(preset, smoke)
    unknown = set(recipes or []) - set(sizes["recipes"])
    if unknown:
        raise ValueError(f"unknown edge recipe(s) {sorted(unknown)}; choose from {sorted(sizes['recipes'])}.")
    jobs = []
    for recipe, cfg in sizes["recipes"].items():
        if recipes and recipe not in recipes:
            continue
        for seed in declared_seeds(sizes, recipe):
            name = model_name(recipe, preset, seed, smoke)
            out = (
                (Path("_build/smoke_checkpoints") / f"ch4_{name}.pt")
                if smoke
                else checkpoint_path(name).relative_to(REPO_ROOT)
            )
            config = EdgeJob(
                recipe_name=recipe,
                preset=preset,
                model_name=name,
                checkpoint=str(out),
                recipe={**cfg, "seed": seed},
                eval=EdgeEvaluation(**sizes["eval"]),
            )
            jobs.append(make_job(EXPERIMENT, config, seed))
    return jobs


def correct_by_position(model, vocab, Ls, n: int, device="cpu") -> dict:
    """{(L, variant): (n, L) bool correct} at every evaluation length the vocabulary allows (L ≤ n_names)."""
    from mamba_recall.analysis import interventions as iv

    return {
        (L, v): iv.recall_by_position(model, contexts(vocab, L, v, n), device=device)
        for L in Ls
        if L <= vocab.n_names
        for v in VARIANTS
    }


def run_job(config: EdgeJob, seed: int) -> dict:
    """Train one edge S-model and measure its curves (the run store's job function)."""
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import load_checkpoint
    from .train import train_recipe

    out = REPO_ROOT / config.checkpoint
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = command_line(EXPERIMENT, config.preset)  # the sidecar's
    start = time.perf_counter()
    train_recipe(config.recipe, config.model_name, out, command=cmd, log=lambda s: print(s, flush=True))
    model, vocab, side = load_checkpoint(out, model=config.model_name)  # hash-checked, as the book loads it
    ev = config.eval
    correct = correct_by_position(model, vocab, ev.Ls, ev.n)
    Ls = sorted({L for L, _ in correct})
    curves = {f"{L}/{v}": c.mean(0).tolist() for (L, v), c in correct.items()}
    return {
        "checkpoint": config.checkpoint,
        "sha256": side.get("sha256"),
        "gate": side["gate"],
        "learning_curve": side.get("learning_curve", []),
        "curves": curves,
        "n": ev.n,
        "L_p": pressure_length(correct, Ls),
        "train_L_max": config.recipe["L_max"],
        "seconds": round(time.perf_counter() - start, 1),
    }


def step_seconds(recipe: dict) -> float:
    """Seconds of one training step of an edge ``recipe`` (its model built fresh, one thread as the grid runs it): the
    median of 3 timed steps after one warm-up, at the recipe's last steps with no curriculum (its longest
    length; for a mixture recipe, the batches those steps draw). What the runners' estimates scale by the steps."""
    import time

    import numpy as np
    import torch

    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import build_model
    from mamba_recall.tasks.serial_recall import RecallVocab
    from .train import make_batch_fn

    vocab = RecallVocab(**recipe["vocab"])
    torch.manual_seed(0)
    model = build_model(recipe["model"], vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    make = make_batch_fn(dict(recipe, curriculum_frac=0.0), vocab)
    times = []
    for step in range(4):
        x, y = make(recipe["steps"] - 1 - step)
        t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))
