"""Chapter 4's run-store experiments, declared once (:class:`mamba_recall.experiment.Experiment`), each named as its
runner, run-store folder and bundle: the S-models (``ch4_train``, at ci and paper), the claims of §4.1–§4.4 judged on
each of them (``ch4_model_checks``, one job per model), the edge family (``ch4_edge``), its claim checks
(``ch4_edge_checks``, one job per finished edge model: its jobs are made from the edge grid's finished runs, so it has
a grid at a preset once one has finished there) and its mixed-channel model (``ch4_edge_mix``). Each runs by
``python -m mamba_recall grid <name> --preset P``. Their jobs, job functions, estimates and bundles are the runners'
(:mod:`.runners`)."""

from __future__ import annotations

from mamba_recall.experiment import Experiment

from .configs import EXPERIMENTS as SIZES
from .runners import edge, edge_checks, edge_jobs, edge_mix, model_checks, train


def _s_models_jobs(preset: str, smoke: bool = False) -> list[dict]:
    return train.jobs_for(preset, None, smoke)


def _warm_last(jobs: list[dict]) -> list[list[dict]]:
    """The S-models' stages: the models trained from scratch, then those warm-started from one of them."""
    first = [j for j in jobs if not j["config"]["recipe"].get("init_from")]
    warm = [j for j in jobs if j["config"]["recipe"].get("init_from")]
    return [first, warm] if warm else [first]


#: the config entries of an edge model's job that name that seed's own model (its cells are its recipe's seeds)
_SEED_MODEL = ("checkpoint", "model_name", "recipe.seed")

EXPERIMENTS = (
    Experiment.of(
        train,
        SIZES,
        *(f"ch4_train_{m}" for m in train.MODELS),
        make_jobs=_s_models_jobs,
        estimate=train.recorded_estimate,
        metrics=("L4_random", "L4_repeated", "L8_random", "L8_repeated", "steps"),
        bounds={m: (0.0, 1.0) for m in ("L4_random", "L4_repeated", "L8_random", "L8_repeated")},
        run_entries=("model", "recipe.seed"),  # s_small and s_small_seed1: one recipe at two seeds
        stages=_warm_last,
    ),
    Experiment.of(model_checks, SIZES, metrics=("converged",), run_entries=("checkpoint", "checkpoint_sha256")),
    Experiment.of(
        edge_jobs,
        SIZES,
        write=edge.write_bundle,
        estimate=edge.estimate,
        metrics=("L_p", "train_L_max"),
        bounds={"L_p": (0.0, float("inf")), "train_L_max": (0.0, float("inf"))},  # lengths
        optional_metrics=("L_p",),  # none where the model has no pressure length (the Mamba-2 recipe)
        run_entries=_SEED_MODEL,
    ),
    # sized as the edge family, whose finished models its jobs check (at the claims' cpu-hours sizes)
    Experiment.of(
        edge_checks,
        SIZES,
        "ch4_edge",
        name=edge_checks.CHECKS,
        make_jobs=edge_checks.checks_jobs,
        run_job=edge_checks.CHECKS_RUNNER,
        write=edge_checks.write_checks_bundle,
        check_store=edge_checks.same_models,
        run_entries=("checkpoint", "model_name", "sha256", "L_p", "at"),
    ),
    Experiment.of(edge_mix, SIZES, metrics=("n_channels",), run_entries=(*_SEED_MODEL, "recipe.init_from")),
)
