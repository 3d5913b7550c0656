r"""Chapter 2 runner: the authors' published reference grid of paper 002, one run-store job per cell and seed.

    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.reference_grid --preset cpu-hours [--jobs 1] [--allow-long]
    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.reference_grid --preset cpu-hours --aggregate-only

The grid is the example of the authors' code README (config ``MQAR__D_N__linear_trained__example``): the
simplified linear Mamba of Alg. 1 (one layer, d_conv 2, expand 2, tied embedding) on MQAR with V = 512,
L = 64, N_f = 16, D ∈ {16, 32, 48, 64} × N ∈ {8, 16, 24, 32} (cells with N > D skipped, as theirs), batch 32,
at most 2000 steps of their recipe (AdamW lr 1e-2, β = (0.9, 0.95), no weight decay, clip 1.5, label
smoothing 0.1, warmup 100 → hold 400 → cosine to 0), a validation set of 1000 sequences evaluated every
250 steps. Each model trains alone (one process, one torch thread: on a CPU separate models are faster per
model-step than an ensemble). Jobs live in ``results/runs/ch2_reference_grid/`` (:mod:`mamba_recall.runstore`):
the command skips finished jobs and resumes after an interruption.

Then it writes ``results/ch2_reference_grid_<preset>.json`` (+ CSV): per cell the mean best accuracy over
seeds with a 95 % t-interval, the per-seed values, the seed-max (the paper's aggregation, §5.1), the
authors' number and the differences; the fully resolved job config (recipe, evaluation seed and schedule)
is in the bundle's config. A partial grid is aggregated too (``data.complete`` says whether it is whole).
"""

from __future__ import annotations

import math
import time

from mamba_recall.presets import experiment, seeds
from mamba_recall.runstore import (
    finished_status,
    job_config,
    make_job,
)
from mamba_recall.experiment import experiment_named, runner_main

from .job_configs import CodeRecipe, Evaluation, ReferenceCell, ReferenceData

EXPERIMENT = "ch2_reference_grid"
RUNNER = "mamba_recall.chapters.ch2_hashing_scaling.runners.reference_grid:run_job"
EVAL_SEED = seeds.MQAR_EVAL  # the held-out stream of ch2_scaling (training streams are seed·100003 + step)

#: The authors' published validation accuracies (code README example, 1 seed), rows D, columns N;
#: cells with N > D are not run (NaN in their table).
AUTHORS = {
    (16, 8): 0.24,
    (16, 16): 0.32,
    (32, 8): 0.64,
    (32, 16): 0.89,
    (32, 24): 0.94,
    (32, 32): 0.95,
    (48, 8): 0.82,
    (48, 16): 0.98,
    (48, 24): 1.00,
    (48, 32): 1.00,
    (64, 8): 0.89,
    (64, 16): 1.00,
    (64, 24): 1.00,
    (64, 32): 1.00,
}


def resolved_config(sizes: dict, D: int, N: int) -> ReferenceCell:
    """The fully resolved config of one cell: nothing is left to a library default."""
    recipe = CodeRecipe.of(sizes["recipe"], sizes["batch"], **sizes["overrides"])
    return ReferenceCell(
        model="LinearMamba (Alg. 1)",
        V=sizes["V"],
        Nf=sizes["Nf"],
        L=sizes["L"],
        D=D,
        N=N,
        layers=1,
        expand=2,
        d_conv=2,
        ssm="attention",
        residual=False,
        batch=sizes["batch"],
        steps=sizes["steps"],
        recipe=recipe,
        warmup_effective=min(recipe.warmup, sizes["steps"] - 1),
        data=ReferenceData(
            task="mqar (mamba_recall.tasks.mqar_variants)",
            train_seed="seed*100003 + step",
            power_a=1.0,
            pad="full",
            init_seed="seed",
        ),
        eval=Evaluation(
            n=sizes["n_eval"],
            seed=EVAL_SEED,
            every=sizes["eval_every"],
            target_accuracy=sizes["target_accuracy"],
            metric="per-query accuracy, full-vocabulary argmax; best over the evaluations (the [code] runs'); "
            "training stops once it reaches target_accuracy",
        ),
    )


def cells(sizes: dict) -> list[tuple[int, int]]:
    return [(d, n) for d in sizes["Ds"] for n in sizes["Ns"] if not (sizes["skip_N_gt_D"] and n > d)]


def _sizes(preset: str, smoke: bool) -> dict:
    return experiment(EXPERIMENT, preset, smoke=True) if smoke else experiment(EXPERIMENT, preset)


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    sizes = _sizes(preset, smoke)
    return [
        make_job(EXPERIMENT, resolved_config(sizes, d, n), s) for d, n in cells(sizes) for s in range(sizes["seeds"])
    ]


def _model_and_data(config: ReferenceCell, seed: int):
    from mamba_recall.models.linear_mamba import LinearMamba
    from mamba_recall.tasks.mqar import batch_fn

    model = LinearMamba(
        config.V,
        config.D,
        config.N,
        config.layers,
        expand=config.expand,
        d_conv=config.d_conv,
        residual=config.residual,
        ensemble=1,
        ssm=config.ssm,
        seed=seed,
    )
    return model, batch_fn(config.V, config.Nf, config.L, config.batch, seed * seeds.TRAIN_STRIDE)


def run_job(config: ReferenceCell, seed: int) -> dict:
    """One model of one cell and seed (the run store's job function)."""
    from mamba_recall.tasks.mqar import mqar
    from ..training.ensemble import train_ensemble

    model, make_batch = _model_and_data(config, seed)
    ev = config.eval
    eval_batch = mqar(config.V, config.Nf, config.L, ev.n, ev.seed)
    rec = {k: v for k, v in config.recipe.to_record().items() if k != "name"}
    rec["warmup"] = config.warmup_effective
    r = train_ensemble(
        model,
        make_batch,
        steps=config.steps,
        recipe=config.recipe.name,
        overrides=rec,
        eval_batch=eval_batch,
        eval_every=ev.every,
        target_accuracy=ev.target_accuracy,
        seed=seed,
    )
    curve = [[h["step"], h["accuracy"][0]] for h in r.history if "accuracy" in h]
    return {
        "best_accuracy": r.best_accuracy[0],
        "final_accuracy": r.accuracy[0],
        "steps_run": r.steps_run,
        "train_seconds": round(r.seconds, 2),
        "final_loss": r.history[-1]["loss"][0],
        "eval_curve": curve,
    }


def measure(config: ReferenceCell, steps: int = 20) -> tuple[float, float]:
    """(seconds per training step, seconds per evaluation) of one cell, measured here with one thread."""
    import torch

    from mamba_recall.tasks.mqar import mqar
    from mamba_recall.train import evaluate
    from ..training.ensemble import train_ensemble

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, make_batch = _model_and_data(config, 0)
        train_ensemble(model, make_batch, steps=3, overrides={"batch_size": config.batch})  # warm-up
        r = train_ensemble(model, make_batch, steps=steps, overrides={"batch_size": config.batch})
        ev = mqar(config.V, config.Nf, config.L, config.eval.n, config.eval.seed)
        t0 = time.perf_counter()
        evaluate(model, *ev, per_member=True)
        return r.seconds / r.steps_run, time.perf_counter() - t0
    finally:
        torch.set_num_threads(threads)


def estimate(left: list[dict]) -> tuple[float, str]:
    """Upper bound (no early stop) for the jobs left: step and evaluation times measured on the smallest and the
    largest cell left, interpolated linearly in D·N."""
    by_size = sorted((job_config(j) for j in left), key=lambda c: c.D * c.N)
    lo, hi = by_size[0], by_size[-1]
    (s_lo, e_lo), (s_hi, e_hi) = measure(lo), (measure(hi) if hi is not lo else measure(lo))
    x_lo, x_hi = lo.D * lo.N, hi.D * hi.N
    total = 0.0
    for c in by_size:
        w = 0.0 if x_hi == x_lo else (c.D * c.N - x_lo) / (x_hi - x_lo)
        step, ev = s_lo + w * (s_hi - s_lo), e_lo + w * (e_hi - e_lo)
        total += c.steps * step + math.ceil(c.steps / c.eval.every) * ev
    basis = (
        f"measured here, 1 thread: {s_lo * 1e3:.0f} ms/step at D={lo.D}, N={lo.N} and "
        f"{s_hi * 1e3:.0f} ms/step at D={hi.D}, N={hi.N} (batch {lo.batch}), an evaluation "
        f"{e_lo:.2f}-{e_hi:.2f} s; every job at its full {lo.steps} steps: early stopping makes it shorter"
    )
    print(f"step time: {basis}", flush=True)
    return total, basis


def finished_cells(jobs: list[dict], store=None, *, preset: str, log=print):
    """``(table, data)``: the cells ``(D, N)`` of the finished runs of ``jobs`` (reference runs), each of best
    accuracy, final accuracy and steps run as its mean over seeds with a 95 % interval (clipped to its range), and
    seed-max: the bundle's one layout's ``cells`` (:meth:`~mamba_recall.experiment.Experiment.layout` of the jobs'
    experiment, over D and N), a copy the writer adds its columns to; ``data`` the grid's status
    (:func:`~mamba_recall.runstore.finished_status`). ``table`` is None when no job has finished. The start of this
    runner's and ``ch2_trained_dn``'s bundle writers."""
    runs, data = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None, data
    return experiment_named(jobs[0]["experiment"]).layout(data, by=["D", "N"])["cells"].copy(), data


def shared_config(sizes: dict, cell: tuple[int, int]) -> dict:
    """The record every cell's job config shares: :func:`resolved_config` at ``cell`` less its ``D`` and ``N``
    (a bundle's ``config.job_config``)."""
    base = resolved_config(sizes, *cell).to_record()
    base.pop("D"), base.pop("N")
    return base


def write_bundle(preset: str, *, store=None, smoke: bool = False, log=print):
    """Aggregate the finished jobs of ``preset`` into ``results/ch2_reference_grid_<preset>.json``."""
    import pandas as pd

    sizes = _sizes(preset, smoke)
    table, data = finished_cells(jobs_for(preset, smoke), store, preset=preset, log=log)
    if table is None:
        return None
    if sizes["V"] == 512 and sizes["Nf"] == 16 and sizes["L"] == 64:  # the authors' regime: compare
        table["authors"] = [AUTHORS.get((d, n), float("nan")) for d, n in zip(table["D"], table["N"])]
        table["diff_mean"] = table["best_accuracy_mean"] - table["authors"]
        table["diff_seed_max"] = table["best_accuracy_max"] - table["authors"]
        table["authors_in_interval"] = [
            bool(lo <= a <= hi) if not math.isnan(lo) else None
            for lo, hi, a in zip(table["best_accuracy_ci_low"], table["best_accuracy_ci_high"], table["authors"])
        ]
        # their numbers are rounded to 2 decimals: does our interval meet [a - 0.005, a + 0.005]?
        table["authors_within_rounding"] = [
            bool(lo <= a + 0.005 and hi >= a - 0.005) if not math.isnan(lo) else None
            for lo, hi, a in zip(table["best_accuracy_ci_low"], table["best_accuracy_ci_high"], table["authors"])
        ]
    base = shared_config(sizes, cells(sizes)[0])
    data.update(
        store=f"results/runs/{EXPERIMENT}/",
        authors_source="code README example (config MQAR__D_N__linear_trained__example), 1 seed, "
        "validation accuracy; rows D, columns N",
    )
    if "authors" in table:
        done = table.dropna(subset=["authors"])
        data["max_abs_diff_mean"] = float(done["diff_mean"].abs().max()) if len(done) else None
        data["max_abs_diff_seed_max"] = float(done["diff_seed_max"].abs().max()) if len(done) else None
    config = {
        "preset": preset,
        "smoke": smoke,
        "sizes": sizes,
        "cells": [list(c) for c in cells(sizes)],
        "seeds": list(range(sizes["seeds"])),
        "job_config": base,
        "runner": RUNNER,
    }
    tables = {"comparison": pd.DataFrame(table)}
    return experiment_named(EXPERIMENT).save_bundle(preset, data, config, tables, smoke=smoke, by=["D", "N"], log=log)


main = runner_main(EXPERIMENT, "cpu-hours")


if __name__ == "__main__":
    raise SystemExit(main())
