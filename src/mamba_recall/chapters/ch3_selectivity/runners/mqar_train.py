"""Trained 1-layer models on MQAR against the construction bounds (paper 003, Fig. 2, Figs. A.2–A.3).

``python -m mamba_recall.chapters.ch3_selectivity.runners.mqar_train --preset ci``.
Data: paper 003's MQAR of App. D.3 (:func:`~mamba_recall.theory.mqar_constructions.gen_mqar`: κ distinct
keys, each queried once), on the fly. Models: ``s6`` = 1-layer Mamba without gate (size-4 conv, SiLU,
S6), ``s4d`` = the Mamba-S4D mixer *with* gate (Thm. 4's setting), ``mamba2`` = single-head Mamba-2 without gate
(its own three convs, ``models.s6.Mamba2Mixer``, N = round(8 ln κ)). ``ci``: micro-MQAR (κ = 4,
|V| = 16, T = 24, d = 32) with N below and above κ. Every preset runs as run-store jobs
(``results/runs/ch3_mqar_train/``, resumable) and writes ``results/ch3_mqar_train_<preset>.json`` with the tables
``runs``, ``cells`` (mean, 95 % t-interval, per-seed values; column ``grid`` names the grid), ``rows`` (each run's
row) and ``curves``.

``--preset paper --allow-long [--jobs N]``: the Fig. 2 grid (κ × d, N = 2κ for Mamba, 4 for S4D, 8 ln κ for Mamba-2),
best of 7 seeds, as run-store jobs (a GPU for each job where its process has one: ``training.selectivity.GPU_PRESETS``).
Fig. A.3's N sweep is :mod:`mamba_recall.chapters.ch3_selectivity.runners.mqar_figa3`.

``--preset cpu-hours --allow-long [--jobs 1]``: the micro-MQAR N ∈ {1, 2, 3, 4, 8} sweep (κ = 4) and the smallest
paper cell (T = 100, |V| = 128, κ = 4, N = 2κ, d ∈ {8, 16, 64} across Thm. 2’s d = κ + log₂|V|), 3 seeds.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from mamba_recall.experiment import runner_main
from mamba_recall.models.mixer_ensemble import ENSEMBLE_MIXERS
from mamba_recall.runstore import job_device
from mamba_recall.theory.mqar_constructions import gen_mqar
from mamba_recall.train import evaluate
from mamba_recall.chapters.ch3_selectivity.training.selectivity import (
    build_model,
    job_config,
    recipe_fields,
    train_recipe,
    train_recipe_members,
)
from ..training.job_configs import MqarRun
from .common import (
    curve_of,
    store_bundle_writer,
)


def configs(cfg):
    for kappa in cfg["kappas"]:
        for d in cfg["ds"]:
            for mixer, Ns in cfg["Ns"].items():
                Ns = (
                    {"2kappa": [2 * kappa], "8lnkappa": [round(8 * math.log(kappa))]}.get(Ns, Ns)
                    if isinstance(Ns, str)
                    else Ns
                )
                for N in Ns:
                    yield kappa, d, mixer, N


def resolved_config(cfg: dict, kappa: int, d: int, mixer: str, N: int) -> MqarRun:
    """The fully resolved configuration of one MQAR run (a run-store job's config): task, model (1 layer, size-4
    conv, SiLU; gate only for S4D, Thm. 4), recipe (Adam without weight decay, cosine lr to 0, early stop at 100 %
    held-out accuracy, evaluated every 100 steps) and data seeds (training batch of step s: ``10⁷·(seed + 1) + s``;
    held-out ``10⁶ + κ``; test ``2·10⁶ + κ``)."""
    return MqarRun(
        task="mqar (paper 003, App. D.3)",
        T=cfg["T"],
        V=cfg["V"],
        kappa=kappa,
        d=d,
        N=N,
        mixer=mixer,
        **recipe_fields(cfg, kappa),
    )


def _model(c: MqarRun, seed: int, backend: str):
    """The MQAR model of resolved config ``c``, initialised after ``torch.manual_seed(seed)``."""
    T, V, kappa, mixer = c.T, c.V, c.kappa, c.mixer
    torch.manual_seed(seed)
    return build_model(
        mixer,
        V=kappa + V,
        d=c.d,
        N=c.N,
        T=T,
        n_classes=V,
        backend=backend,
        use_conv=mixer != "mamba2",
        d_conv=4,
        activation="silu",
        use_gate=mixer == "s4d",
    )


def _held_out(c: MqarRun):
    """(held-out batch, test batch) of resolved config ``c``, and the training sampler ``(n, data_seed) → batch``."""
    T, V, kappa = c.T, c.V, c.kappa
    ev = gen_mqar(c.eval_sequences, T, kappa, V, seed=c.eval_seed)
    test = gen_mqar(c.test_sequences, T, kappa, V, seed=c.test_seed)
    return ev, test, lambda n, data_seed: gen_mqar(n, T, kappa, V, seed=data_seed)


def _row(c: MqarRun, seed: int, model, test, res, device) -> dict:
    acc = evaluate(model, *test, device=device)
    return dict(
        kappa=c.kappa, V=c.V, T=c.T, d=c.d, N=c.N, mixer=c.mixer, seed=seed, accuracy=acc,
        steps=res.steps_run, seconds=res.seconds,
    )  # fmt: skip


def train_one(c: MqarRun, seed: int, *, steps: int | None = None, device: str = "cpu", backend: str = "auto"):
    """Train and test one MQAR model of resolved config ``c`` and init seed ``seed`` (``steps`` overrides the budget,
    for timing). Returns (TrainResult, the ``runs`` row)."""
    ev, test, sample = _held_out(c)
    model = _model(c, seed, backend)
    res = train_recipe(model, sample, c, seed, ev, steps=steps, device=device)
    return res, _row(c, seed, model, test, res, device)


def train_members(
    c: MqarRun, seeds: list[int], *, steps: int | None = None, device: str = "cpu", backend: str = "auto"
):
    """:func:`train_one` for every seed of ``seeds`` at once, as one ensemble (``train_recipe_members``: each member
    draws its own seed's batches and stops alone; its ``seconds`` are the ensemble's) where the mixer has one
    (:data:`~mamba_recall.models.mixer_ensemble.ENSEMBLE_MIXERS`: s6, s4d); Mamba-2's seeds train one after another,
    by :func:`train_one`. Returns a list of (TrainResult, ``runs`` row), one per seed, as :func:`train_one` returns
    for that seed."""
    if c.mixer not in ENSEMBLE_MIXERS:
        return [train_one(c, s, steps=steps, device=device, backend=backend) for s in seeds]
    ev, test, sample = _held_out(c)
    models = [_model(c, s, backend) for s in seeds]
    res, members = train_recipe_members(models, sample, c, list(seeds), ev, steps=steps, device=device)
    out = []
    for e, (seed, model) in enumerate(zip(seeds, members)):
        mine = res.member(e)
        out.append((mine, _row(c, seed, model, test, mine, device)))
    return out


# ------------------------------------------------------------------------------------------ run store (cpu-hours)
EXPERIMENT = "ch3_mqar_train"
RUNNER = "mamba_recall.chapters.ch3_selectivity.runners.mqar_train:run_job"
#: ``--members K``: K seeds of one config trained as one ensemble (:func:`run_members`), for the store's units
MEMBERS_RUNNER = "mamba_recall.chapters.ch3_selectivity.runners.mqar_train:run_members"


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    """A run-store preset lists ``grids`` (each a dict of the ci/paper keys: T, V, kappas, ds, Ns, steps, …) run with
    the same ``seeds``: e.g. the micro-MQAR N sweep and the largest paper cell that fits."""
    from mamba_recall.presets import experiment
    from mamba_recall.runstore import make_job

    sizes = experiment(EXPERIMENT, preset, smoke=smoke)
    grids = sizes["grids"] if "grids" in sizes else {preset: sizes}  # the paper preset is one grid
    return [
        make_job(EXPERIMENT, job_config(replace(resolved_config(g, *cell), grid=name), preset), s)
        for name, g in grids.items()
        for cell in dict.fromkeys(configs(g))
        for s in sizes["seeds"]
    ]


def run_job(config: MqarRun, seed: int) -> dict:
    res, row = train_one(config, seed, device=job_device(config))
    return {"row": dict(row, grid=config.grid), "curve": curve_of(res, config.eval_every)}


def run_members(config: MqarRun, seeds: list[int]) -> list[dict]:
    """The results of :func:`run_job` for each of ``seeds`` (``--members``): trained as one ensemble where the mixer
    has one (:data:`~mamba_recall.models.mixer_ensemble.ENSEMBLE_MIXERS`; each result then names the seeds it
    trained with, ``ensemble``), else one after another exactly as :func:`run_job` trains them (Mamba-2)."""
    together = {"ensemble": list(seeds)} if config.mixer in ENSEMBLE_MIXERS else {}
    return [
        {"row": dict(row, grid=config.grid), "curve": curve_of(res, config.eval_every), **together}
        for res, row in train_members(config, seeds, device=job_device(config))
    ]


#: an MQAR bundle's cells (mean over seeds) and their metrics, shared by the Fig. A.3 runner
CELL_KEYS = ["grid", "T", "V", "kappa", "d", "N", "mixer"]
#: what a run records that its bundle aggregates: its row's accuracy and steps
METRICS = ("row.accuracy", "row.steps")

write_bundle = store_bundle_writer("ch3_mqar_train", EXPERIMENT, jobs_for, by=CELL_KEYS)


main = runner_main(EXPERIMENT, "ci")


if __name__ == "__main__":
    raise SystemExit(main())
