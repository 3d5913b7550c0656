r"""Chapter 5 runner: the capacity κ* of the full Mamba LM on zoology's MQAR, by a search over κ, 3 seeds.

Chapter 5's four grids are declared experiments (:mod:`mamba_recall.chapters.ch5_synthesis.experiments`), each run
by its name; this module holds their jobs, job functions, estimates and bundle writers::

    python -m mamba_recall grid ch5_capacity --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall grid ch5_capacity --preset cpu-hours --aggregate-only
    python -m mamba_recall grid ch5_capacity_long --preset cpu-hours --allow-long
    python -m mamba_recall grid ch5_capacity_long --preset cpu-hours --aggregate-only --partial
    python -m mamba_recall grid ch5_capacity_lr_sweep --preset cpu-hours --allow-long
    python -m mamba_recall grid ch5_capacity_tuned --preset cpu-hours --allow-long

``ch5_capacity`` trains each probe with paper 002's code schedule (the budget ``paper002``); ``ch5_capacity_long``
the same grid at 4× the steps, the schedule stretched with them (the budget ``long``, its own store folder and
bundle ``results/ch5_capacity_long_<preset>.json``; see :mod:`mamba_recall.chapters.ch5_synthesis.configs`). This
runner's own command, ``python -m mamba_recall.chapters.ch5_synthesis.runners.capacity --preset P``, is the grid of
``ch5_capacity`` under the runner's name (:func:`main`).

One run-store job per (layers, D, N) and seed (``results/runs/ch5_capacity/``): a bisection over the κ ladder
(:func:`mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search.search`) for the largest κ with held-out recall ≥ 50 % and ≥ 90 %,
one training per probe. Every probe trains ``MambaLMHeadModel(D, layers, V, d_state=N)`` (mamba-ssm's layout:
``d_conv`` 4, ``expand`` 2) from init seed ``seed`` on MQAR with V = 512 and L = 4κ (paper 002's regime R0 has
L = 64 at κ = 16), training batch of step s drawn with seed ``seed·100003 + s``, held-out set seed ``10⁶ + κ``;
the recipe of paper 002's code (AdamW lr 10⁻², β = (0.9, 0.95), no weight decay, warmup 100 → hold 400 → cosine
to 0, clip 1.5, label smoothing 0.1) for at most ``steps`` steps, stopped at 99 % held-out recall or when the best
recall has not grown by ``min_delta`` over ``patience`` evaluations. Each probe records its recall, the profile by
pair order, and the Δ signature of the trained model and of its untrained twin (the control).

The bundle ``results/ch5_capacity_<preset>.json`` holds the table ``probes`` (one row per job and probe) and
``searches`` (one row per job: κ*₅₀ and κ*₉₀, interpolated and censored, whether the probes were monotone). A grid
with jobs left writes its bundle only when asked with the grid's ``--partial``: the bundle is then marked partial
(``data.partial``, "k of n jobs", :func:`mamba_recall.runstore.partial_status`), and the same grid command writes
the complete bundle over it once every job has finished (a complete bundle is never replaced by a partial one).

``ch5_capacity_lr_sweep``: the per-cell learning-rate sweep (declared before its runs in
:mod:`~mamba_recall.chapters.ch5_synthesis.configs`): one probe per cell and rate, seed 0, at the long schedule, at
the cell's declared κ; its bundle holds ``rates`` (one row per probe) and ``picked`` (each cell's rate,
:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.lr_sweep.pick_rate`). ``ch5_capacity_tuned``: the long grid
with each cell at its picked rate (the budget ``tuned``), made from the sweep's complete committed bundle: until it
is complete its grid stops naming the sweep's command (:func:`tuned_rates`).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from dataclasses import replace

from mamba_recall.experiment import command_line, experiment_named, grid_command
from mamba_recall.paths import BUILD_DIR
from mamba_recall.presets import experiment, seeds
from mamba_recall.results import command_provenance
from mamba_recall.runstore import finished_status, job_config, make_job, partial_status
from mamba_recall.runners import runner_command

from mamba_recall.chapters.ch5_synthesis.configs import BUDGETS, LR_SWEEP

from .job_configs import CapacitySearch, RateProbe, SearchData, SearchEvaluation, SearchRecipe

EXPERIMENT = "ch5_capacity"
RUNNER = "mamba_recall.chapters.ch5_synthesis.runners.capacity:run_job"
SWEEP_RUNNER = "mamba_recall.chapters.ch5_synthesis.runners.capacity:run_sweep_job"
EVAL_SEED = seeds.MQAR_EVAL  # held-out set of κ pairs: seed 10⁶ + κ


#: the long budget's cost as :func:`estimate` measured it here (one thread, 2 shared cores) before any of its runs:
#: the page shows it until the bundle exists (``plan`` lists both budgets' grids)
LONG_ESTIMATE = {
    "preset": "cpu-hours",
    "jobs": 36,
    "cpu_hours": 33,
    "cpu_hours_from_committed_steps": 22,
    "measured": (
        "measured 2026-12-04 by this runner's estimate() on a shared 2-core x86_64 CPU under load; its paper002 "
        "estimate under the same load was 11, where the committed grid's record says 2.4; the committed probes' own "
        "time per step, each probe run to 6,000 steps, gives 22"
    ),
}


#: the learning-rate sweep's cost as :func:`sweep_estimate` measured it here before any of its runs (one thread, 2
#: shared cores under a load of about 7): the page and ``plan`` show it until its bundle exists
SWEEP_ESTIMATE = {
    "preset": "cpu-hours",
    "jobs": 36,
    "cpu_hours": 8,
    "cpu_hours_from_committed_steps": 4.6,
    "measured": (
        "measured 2026-12-05 by this runner's sweep_estimate() on a shared 2-core x86_64 CPU under load (53 ms/step "
        "at 1×D=16,N=2 and 153 ms/step at 2×D=32,N=8, κ = 8), every probe at its full 6,000 steps; the committed "
        "cpu-hours probes' own time per step and token, each sweep probe run to 6,000 steps, gives 4.6"
    ),
}


def experiment_of(budget: str) -> str:
    """The experiment of a training budget (``paper002`` → ``ch5_capacity``, ``long`` → ``ch5_capacity_long``)."""
    if budget not in BUDGETS:
        raise ValueError(f"unknown budget {budget!r}; use one of {', '.join(BUDGETS)}.")
    return BUDGETS[budget]


def _sizes(preset: str, smoke: bool, budget: str = "paper002") -> dict:
    return check_sizes(experiment(experiment_of(budget), preset, smoke=smoke))


def check_sizes(sizes: dict) -> dict:
    """The preset's sizes, checked before any job starts: a ladder of increasing κ ≥ 2 that MQAR can hold
    (keys come from [1, V/2), so κ < V/2), thresholds in (0, 1), cells of positive integers."""
    from mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search import check_ladder

    ladder, _ = check_ladder(sizes["ladder"], sizes["thresholds"])
    if ladder[0] < 2 or ladder[-1] >= sizes["V"] // 2:
        raise ValueError(
            f"ch5_capacity: the κ ladder {ladder} must lie in [2, V/2) = [2, {sizes['V'] // 2}) (MQAR draws κ distinct "
            "keys from the lower half of the vocabulary); shorten the ladder or raise V in chapters/ch5_synthesis/configs.py."
        )
    for cell in sizes["cells"]:
        if len(cell) != 3 or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in cell):
            raise ValueError(
                f"ch5_capacity: a cell is [layers, D, N] of positive integers, got {cell!r} (chapters/ch5_synthesis/configs.py)."
            )
    return sizes


def resolved_config(sizes: dict, layers: int, D: int, N: int, *, lr: float | None = None) -> CapacitySearch:
    """The fully resolved config of one search (nothing is left to a library default); ``lr``: the recipe's rate
    when not the preset's (the tuned budget's pick, a swept rate)."""
    recipe = SearchRecipe(**sizes["recipe"])
    return CapacitySearch(
        model="MambaLMHeadModel (mamba-ssm layout)",
        layers=layers,
        D=D,
        N=N,
        d_conv=4,
        expand=2,
        V=sizes["V"],
        L_per_kappa=sizes["L_per_kappa"],
        ladder=list(sizes["ladder"]),
        thresholds=list(sizes["thresholds"]),
        batch=sizes["batch"],
        steps=sizes["steps"],
        recipe=recipe if lr is None else replace(recipe, lr=lr),
        data=SearchData(
            task="mqar (zoology, mamba_recall.tasks.mqar variant 'standard', power_a 1, pad 'full')",
            train_seed="seed*100003 + step",
            init_seed="seed",
        ),
        eval=SearchEvaluation(
            n=sizes["n_eval"],
            seed=f"{EVAL_SEED} + kappa",
            every=sizes["eval_every"],
            target_accuracy=sizes["target_accuracy"],
            patience=sizes["patience"],
            min_delta=sizes["min_delta"],
            n_delta=sizes["n_delta"],
            metric="per-query accuracy, whole-vocabulary argmax, of the final model",
        ),
    )


def jobs_for(preset: str, smoke: bool = False, budget: str = "paper002") -> list[dict]:
    """One job per cell and seed; at ``budget`` ``tuned`` each cell's recipe at the rate the sweep picked
    (:func:`tuned_rates`)."""
    sizes, name = _sizes(preset, smoke, budget), experiment_of(budget)
    rates = tuned_rates(preset, smoke) if budget == "tuned" else {}
    jobs = []
    for cell in sizes["cells"]:
        config = resolved_config(sizes, *cell, lr=rates[tuple(cell)] if rates else None)
        jobs += [make_job(name, config, s) for s in range(sizes["seeds"])]
    return jobs


def _grid(name: str, preset: str) -> str:
    """The grid command of the declared experiment ``name`` at ``preset`` (:meth:`~mamba_recall.experiment.
    Experiment.command`): what its bundle records and what the page prints."""
    return experiment_named(name).command(preset)


def tuned_command(preset: str = "cpu-hours") -> str:
    """The command that runs the long grid at the rates the sweep picked, at ``preset``."""
    return f"{_grid(BUDGETS['tuned'], preset)} --jobs 2"


def sweep_command(preset: str = "cpu-hours") -> str:
    """The command that runs the per-cell learning-rate sweep at ``preset``."""
    return _grid(LR_SWEEP, preset)


def sweep_jobs(preset: str, smoke: bool = False) -> list[dict]:
    """The sweep's jobs (``ch5_capacity_lr_sweep``): for each declared ``[layers, D, N, κ]`` and rate, one probe at
    κ with seed 0 at the long schedule, the recipe's rate set to it (``probe_kappa`` in the config)."""
    sizes = check_sizes(experiment(LR_SWEEP, preset, smoke=smoke))
    declared = sizes["sweep_cells"]
    if not declared:
        raise ValueError(
            f"{LR_SWEEP} declares no κ per cell at preset {preset} (it reads them from a complete ch5_capacity "
            f"bundle at that preset); declare SWEEP_KAPPA[{preset!r}] in chapters/ch5_synthesis/configs.py first."
        )
    cells = [c[:3] for c in declared]
    if sorted(map(tuple, cells)) != sorted(map(tuple, sizes["cells"])) or any(
        c[3] not in sizes["ladder"] and not smoke for c in declared
    ):
        raise ValueError(
            f"{LR_SWEEP} at preset {preset}: SWEEP_KAPPA must give each cell of the grid {sizes['cells']} one κ of its "
            f"ladder {sizes['ladder']}, got {declared} (chapters/ch5_synthesis/configs.py)."
        )
    if sizes["default_lr"] not in sizes["lrs"]:
        raise ValueError(f"{LR_SWEEP}: the default rate {sizes['default_lr']} must be one of the swept {sizes['lrs']}.")
    return [
        make_job(LR_SWEEP, RateProbe.of(resolved_config(sizes, layers, D, N, lr=lr), kappa), 0)
        for layers, D, N, kappa in declared
        for lr in sizes["lrs"]
    ]


def run_sweep_job(config: RateProbe, seed: int) -> dict:
    """One probe of the sweep (the run store's job function): :func:`probe` at the config's ``probe_kappa``."""
    return {"probe": probe(config, seed, config.probe_kappa)}


def sweep_tables(runs: list[dict], sizes: dict):
    """(rates, picked) DataFrames of a sweep's finished runs (``sizes``: the sweep's): one row per probe (cell, κ, rate, recall, steps run,
    whether it converged: :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.synthesis.probe_unconverged`) and,
    for every cell with all its rates finished, the rate :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.
    lr_sweep.pick_rate` picks."""
    import pandas as pd

    from mamba_recall.chapters.ch5_synthesis.pipelines.lr_sweep import picked_rates
    from mamba_recall.chapters.ch5_synthesis.pipelines.synthesis import probe_unconverged

    rows = []
    read = [(RateProbe.from_record(r["config"]), r) for r in runs]  # each run's config, typed
    for c, r in sorted(read, key=lambda cr: (cr[0].layers, cr[0].D, cr[0].N)):
        p = r["result"]["probe"]
        rows.append(
            {
                "layers": c.layers,
                "D": c.D,
                "N": c.N,
                "seed": r["seed"],
                "kappa": p["kappa"],
                "lr": c.recipe.lr,
                "accuracy": p["accuracy"],
                "untrained_accuracy": p["untrained"]["accuracy"],
                "steps_run": p["steps_run"],
                "seconds": p["seconds"],
            }
        )
    rates = pd.DataFrame(rows)
    rates["converged"] = ~probe_unconverged(rates, sizes["steps"], sizes["target_accuracy"])
    full = rates.groupby(["layers", "D", "N"]).lr.transform("nunique") == len(sizes["lrs"])
    return rates, picked_rates(rates[full], sizes["default_lr"])


def write_sweep_bundle(preset: str, *, store=None, smoke: bool = False, log=print, partial: bool = False):
    """Aggregate the sweep's finished probes into ``results/ch5_capacity_lr_sweep_<preset>.json`` (``rates`` and
    ``picked``); an unfinished sweep only with ``partial`` (:func:`mamba_recall.runstore.partial_status`). The bundle
    records the sweep's grid command."""
    sizes = check_sizes(experiment(LR_SWEEP, preset, smoke=smoke))
    runs, data = finished_status(sweep_jobs(preset, smoke), store, preset=preset, log=log)
    if not runs:
        return None
    command = sweep_command(preset)
    what = f"{LR_SWEEP} at preset {preset}"
    data = partial_status(data, partial, what=what, command=command.removesuffix(" --allow-long"), log=log)
    if data is None:
        return None
    rates, picked = sweep_tables(runs, sizes)
    config = {
        "preset": preset,
        "smoke": smoke,
        "sizes": sizes,
        "cells": sizes["sweep_cells"],
        "seeds": [0],
        "runner": SWEEP_RUNNER,
        "budget": "long",
        "rule": "the rate with the highest held-out recall at the cell's probe; the default kept within 0.01 of it",
    }
    return experiment_named(LR_SWEEP).save_bundle(
        preset, data, config, {"rates": rates, "picked": picked}, smoke=smoke, log=log
    )


def tuned_rates(preset: str, smoke: bool = False) -> dict[tuple, float]:
    """``{(layers, D, N): rate}`` the complete committed sweep picked at ``preset``; ValueError naming the command that
    makes it when there is none (the tuned grid is made from the sweep, never from a default)."""
    from mamba_recall.results import BundleMissing, evidence, smoke_results_dir

    name = f"{LR_SWEEP}_{preset}" + ("_smoke" if smoke else "")
    try:  # a smoke sweep's bundle is <name>_<preset>_smoke in the smoke folder
        sweep = evidence(LR_SWEEP, preset=f"{preset}_smoke" if smoke else preset,
                         directory=smoke_results_dir() if smoke else None)  # fmt: skip
    except BundleMissing as exc:  # none, or not complete
        raise ValueError(
            f"ch5_capacity_tuned at preset {preset}: its rates come from the complete sweep {name} ({exc}); run the "
            f"sweep first: {sweep_command(preset)}{' --smoke' if smoke else ''}"
        ) from None
    return {(int(r.layers), int(r.D), int(r.N)): float(r.lr) for r in sweep.tables["picked"].itertuples()}


def build(config: CapacitySearch, seed: int):
    """The untrained model of ``config`` from init seed ``seed``."""
    import torch

    from mamba_recall.models.mamba import MambaLMHeadModel

    torch.manual_seed(seed)
    return MambaLMHeadModel(
        config.D, config.layers, config.V, d_state=config.N, d_conv=config.d_conv, expand=config.expand
    )


def probe(config: CapacitySearch, seed: int, kappa: int, *, steps: int | None = None) -> dict:
    """Train one model of ``config`` at κ = ``kappa`` pairs and measure it (see the module docstring)."""
    from mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search import (
        data_options,
        delta_signature,
        recall_profile,
    )
    from mamba_recall.tasks.mqar import batch_fn, mqar
    from mamba_recall.train import Recipe, Stopping, train

    V, L, ev = config.V, config.L_per_kappa * kappa, config.eval
    data = data_options(config.data.task)
    held = mqar(V, kappa, L, ev.n, EVAL_SEED + kappa, **data)
    sig_x, sig_y = held[0][: ev.n_delta], held[1][: ev.n_delta]
    model = build(config, seed)
    untrained = {"delta": delta_signature(model, sig_x, sig_y, kappa), **recall_profile(model, *held, kappa)}
    untrained.pop("n_per_pair")
    t0 = time.perf_counter()
    r = train(
        model,
        batch_fn(
            V,
            kappa,
            L,
            config.batch,
            seed * seeds.TRAIN_STRIDE,
            task=data["variant"],
            power_a=data["power_a"],
            pad=data["pad"],
        ),
        steps=steps or config.steps,
        recipe=Recipe.from_preset(config.recipe.to_record()),
        stop=Stopping(
            eval_every=ev.every, target_accuracy=ev.target_accuracy, patience=ev.patience, min_delta=ev.min_delta
        ),
        eval_batch=held,
        seed=seed,
        progress=False,
    )
    prof = recall_profile(model, *held, kappa)
    return {
        "kappa": kappa,
        "L": L,
        **prof,
        "delta": delta_signature(model, sig_x, sig_y, kappa),
        "untrained": untrained,
        "steps_run": r.steps_run,
        "seconds": round(time.perf_counter() - t0, 2),
        "curve": [[e["step"], e["accuracy"]] for e in r.evals],
    }


#: where a search keeps each probe it has finished until its run is written (``_build/``, never committed): a
#: search restarted after an interrupt (a grid stopped, a session ended) replays the probes kept there instead of
#: training them again. A probe's record depends only on (config, seed, κ) (:func:`probe` builds its own model and
#: data from them), so a replayed search gives the run an uninterrupted one gives. Safe to delete at any time.
PROBE_CACHE = BUILD_DIR / "ch5_probe_cache"


def kept_probe(config: CapacitySearch, seed: int, kappa: int, *, cache: Path | None = None) -> dict:
    """:func:`probe` at κ = ``kappa``, or the record of that probe a search of the same (config, seed) kept
    before it was interrupted (in ``cache``, default :data:`PROBE_CACHE`, one folder per (config, seed): the hash
    of its record); a new probe's record is kept there, written whole or not at all."""
    import json

    import joblib

    from mamba_recall.atomic import replace_file

    folder = Path(cache or PROBE_CACHE) / joblib.hash((config.to_record(), int(seed)))
    path = folder / f"kappa{int(kappa)}.json"
    if path.is_file():
        return json.loads(path.read_text())
    record = probe(config, seed, kappa)
    folder.mkdir(parents=True, exist_ok=True)
    replace_file(path, json.dumps(record).encode())
    return record


def run_job(config: CapacitySearch, seed: int) -> dict:
    """One search (the run store's job function): the probes it ran and κ* at each threshold. Each probe is kept as
    it finishes (:func:`kept_probe`), so the same search restarted replays the probes it had finished."""
    from mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search import crossing, monotone, search

    records = {}

    def acc(kappa: int) -> float:
        records[kappa] = kept_probe(config, seed, kappa)
        return records[kappa]["accuracy"]

    found = search(acc, config.ladder, config.thresholds)
    capacity = {
        f"{thr:g}": crossing(found["probes"], config.ladder, thr, found["brackets"][thr]) for thr in config.thresholds
    }
    return {
        "probes": [records[k] for k, _ in found["probes"]],
        "capacity": capacity,
        "monotone": monotone(found["probes"]),
        "n_probes": len(records),
        "train_seconds": round(sum(p["seconds"] for p in records.values()), 1),
    }


def _step_times(left: list[dict]):
    """``(per_step, basis)``: ``per_step(config)`` the seconds of one training step at κ = 8 of a typed config,
    measured here (one thread) at the smallest and the largest cell of the jobs ``left`` and interpolated linearly
    in layers·D·(N + 8) between them."""
    import torch

    from mamba_recall.tasks.mqar import batch_fn
    from mamba_recall.train import train

    def step_time(c: CapacitySearch) -> float:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            model = build(c, 0)
            mb = batch_fn(c.V, 8, 4 * 8, c.batch, 0)
            train(model, mb, steps=2, progress=False)
            t0 = time.perf_counter()
            train(model, mb, steps=5, progress=False)
            return (time.perf_counter() - t0) / 5
        finally:
            torch.set_num_threads(threads)

    by = sorted((job_config(j) for j in left), key=lambda c: c.layers * c.D * c.N)
    lo, hi = by[0], by[-1]
    t_lo, t_hi = step_time(lo), step_time(hi)
    x = lambda c: c.layers * c.D * (c.N + 8)  # noqa: E731 (the scan and the projections)

    def per_step(c: CapacitySearch) -> float:
        w = 0.0 if x(hi) == x(lo) else (x(c) - x(lo)) / (x(hi) - x(lo))
        return t_lo + w * (t_hi - t_lo)

    basis = (
        f"measured here, 1 thread, κ = 8: {t_lo * 1e3:.0f} ms/step at {lo.layers}×D={lo.D},N={lo.N} and "
        f"{t_hi * 1e3:.0f} ms/step at {hi.layers}×D={hi.D},N={hi.N}"
    )
    return per_step, basis


def estimate(left: list[dict]) -> tuple[float, str]:
    """Upper bound for the jobs left: each search probes about log₂(ladder) + 2 rungs, each at its full step
    budget; the step time is measured here (one thread) at the smallest and largest cell at κ = 8 and scaled
    linearly in L = 4κ and in D·N between them (:func:`_step_times`)."""
    per_step, measured = _step_times(left)
    total = 0.0
    for c in map(job_config, left):
        per_step_at_8 = per_step(c)
        rungs = c.ladder
        n = math.ceil(math.log2(len(rungs))) + 2
        mean_L_factor = sum(rungs) / len(rungs) / 8  # a typical probe's L relative to κ = 8
        total += n * c.steps * per_step_at_8 * max(mean_L_factor, 1.0) * 0.6
    basis = (
        f"{measured}; about log₂(ladder) + 2 probes a search at 60 % of their step budget (early stop), scaled by the "
        "ladder's mean L"
    )
    print(f"step time: {basis}", flush=True)
    return total, basis


def sweep_estimate(left: list[dict]) -> tuple[float, str]:
    """Upper bound for the sweep's probes left: each one probe at its full step budget, its step time
    (:func:`_step_times`) scaled linearly in L = 4κ from κ = 8."""
    per_step, measured = _step_times(left)
    total = sum(c.steps * per_step(c) * c.probe_kappa / 8 for c in map(job_config, left))
    basis = f"{measured}; one probe a job at its full step budget, scaled by its L = 4κ"
    print(f"step time: {basis}", flush=True)
    return total, basis


def tables(runs: list[dict]):
    """(probes, searches) DataFrames of finished runs; each search carries the learning rate its run trained at
    (``lr``, from the run's own recipe: one rate per cell at the tuned budget)."""
    import pandas as pd

    probes, searches = [], []
    read = [(CapacitySearch.from_record(r["config"]), r) for r in runs]  # each run's config, typed
    for c, r in sorted(read, key=lambda cr: (cr[0].layers, cr[0].D, cr[0].N, cr[1]["seed"])):
        res = r["result"]
        cell = {"layers": c.layers, "D": c.D, "N": c.N, "seed": r["seed"]}
        for p in res["probes"]:
            row = {
                **cell,
                "kappa": p["kappa"],
                "L": p["L"],
                "accuracy": p["accuracy"],
                "untrained_accuracy": p["untrained"]["accuracy"],
                "steps_run": p["steps_run"],
                "seconds": p["seconds"],
                "by_pair": " ".join(f"{a:.4f}" for a in p["by_pair"]),
            }
            for i, (tr, un) in enumerate(zip(p["delta"], p["untrained"]["delta"])):
                for k in ("key", "value", "query", "filler", "key_ratio"):
                    row[f"delta{i}_{k}"] = tr[k]
                    row[f"untrained_delta{i}_{k}"] = un[k]
            probes.append(row)
        row = {
            **cell,
            "lr": c.recipe.lr,
            "n_probes": res["n_probes"],
            "monotone": res["monotone"],
            "train_seconds": res["train_seconds"],
        }
        for thr, cap in res["capacity"].items():
            tag = f"{round(float(thr) * 100)}"
            row[f"kappa{tag}"] = cap["kappa"]
            row[f"rung{tag}"] = cap["rung"]
            row[f"censored{tag}"] = cap["censored"]
        searches.append(row)
    return pd.DataFrame(probes), pd.DataFrame(searches)


def write_bundle(
    preset: str, *, store=None, smoke: bool = False, log=print, budget: str = "paper002", partial: bool = False
):
    """Aggregate the finished searches of ``preset`` into ``results/<experiment>_<preset>.json`` (``ch5_capacity``,
    ``ch5_capacity_long`` at the long budget, ``ch5_capacity_tuned`` at the sweep's rates); a grid with jobs left only
    with ``partial`` (:func:`mamba_recall.runstore.partial_status`). The bundle records the experiment's grid
    command."""
    sizes, name = _sizes(preset, smoke, budget), experiment_of(budget)
    jobs = jobs_for(preset, smoke, budget)
    runs, data = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    command = _grid(name, preset)
    what = f"{name} at preset {preset}"
    data = partial_status(data, partial, what=what, command=command.removesuffix(" --allow-long"), log=log)
    if data is None:
        return None
    probes, searches = tables(runs)
    data["store"] = f"results/runs/{name}/"
    base = resolved_config(sizes, *sizes["cells"][0]).to_record()  # the bundle's shared config: a dict
    for k in ("layers", "D", "N"):
        base.pop(k)
    # at the tuned budget the jobs' rates differ by cell (the sweep's picks, as jobs_for set them): read from the jobs
    # themselves, and the shared config names where they are, never one cell's rate
    configs = [j["config"] for j in jobs] if budget == "tuned" else []
    rates = {(c["layers"], c["D"], c["N"]): c["recipe"]["lr"] for c in configs}
    if rates:
        base["recipe"]["lr"] = "per cell: config['rates'] and the searches' lr column (the sweep's picks)"
    config = {
        "preset": preset,
        "smoke": smoke,
        "sizes": sizes,
        "cells": sizes["cells"],
        "seeds": list(range(sizes["seeds"])),
        "job_config": base,
        "runner": RUNNER,
        "budget": budget,
    }
    if rates:
        config["rates"] = [[*cell, rates[tuple(cell)]] for cell in sizes["cells"]]
    out = {"probes": probes, "searches": searches}
    return experiment_named(name).save_bundle(preset, data, config, out, smoke=smoke, log=log)


def long_command(preset: str = "cpu-hours") -> str:
    """The command that runs the long budget's grid at ``preset``."""
    return f"{_grid(BUDGETS['long'], preset)} --jobs 2"


#: this runner's options before each of Chapter 5's grids ran by its name: ``--budget B`` -> the experiment of
#: budget B, ``--lr-sweep`` -> the sweep (a command that still gives one stops naming that experiment's grid command)
_GONE = ("--budget", "--lr-sweep")


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None) -> int:
    """``python -m mamba_recall grid ch5_capacity --preset P`` under this runner's command
    (:func:`mamba_recall.experiment.grid_command`: the run store's options, the same jobs and bundle). ``--budget``
    or ``--lr-sweep`` (its options before the other budgets ran by their names) stop with one line naming the grid
    command of the experiment they meant (exit status 2)."""
    import sys

    args = sys.argv[1:] if argv is None else list(argv)
    gone = [a for a in args if a.split("=", 1)[0] in _GONE]
    if gone:
        after = lambda flag, default: next((args[i + 1] for i, a in enumerate(args[:-1]) if a == flag), default)  # noqa: E731
        budget = after("--budget", "paper002")
        name = LR_SWEEP if "--lr-sweep" in args else BUDGETS.get(budget, f"<one of {', '.join(BUDGETS.values())}>")
        print(
            f"error: {' '.join(gone)}: each of Chapter 5's grids runs by its experiment's name now; run "
            f"{command_line(name, after('--preset', 'cpu-hours'))} "
            "(--jobs, --aggregate-only, --partial as before).",
            file=sys.stderr,
        )
        return 2
    return grid_command(argv, name=EXPERIMENT, prog=runner_command(EXPERIMENT), default_preset="cpu-hours")


def first_search(preset: str, seed: int, smoke: bool = False, log=print) -> dict:
    """The search of ``preset``'s first cell at ``seed``: read from the run store when it holds that job (the same
    config and seed give the same numbers), else computed now (and not stored: a notebook writes no results)."""
    from mamba_recall.results import smoke_run_store
    from mamba_recall.runstore import finished_runs

    sizes = _sizes(preset, smoke)
    config = resolved_config(sizes, *sizes["cells"][0])
    job = make_job(EXPERIMENT, config, seed)
    stored = finished_runs([job], smoke_run_store(smoke))
    if stored:
        log(f"from the run store: results/runs/{EXPERIMENT}/{job['key']}.json")
        return stored[0]["result"]
    log("not in the run store: computing it now")
    return run_job(config, seed)


if __name__ == "__main__":
    raise SystemExit(main())
