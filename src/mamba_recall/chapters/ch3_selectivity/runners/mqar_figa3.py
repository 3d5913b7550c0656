"""Fig. A.3 of paper 003 at its T = 100 and |V| = 128: trained 1-layer Mamba on MQAR with the state size N swept
across κ, best of 7 seeds (preset ``ch3_mqar_figa3``, declared before any run).

    python -m mamba_recall grid ch3_mqar_figa3 --preset cpu-hours --allow-long [--jobs 2]   # train, aggregate
    python -m mamba_recall grid ch3_mqar_figa3 --preset cpu-hours --aggregate-only           # the bundle
    python -m mamba_recall grid ch3_mqar_figa3 --preset paper --allow-long --members 7       # 7 seeds a job

The declared experiment ``ch3_mqar_figa3`` (:mod:`..experiments`); this runner's ``main`` is that grid command under
the runner's name (:func:`mamba_recall.experiment.grid_command`, default ``--preset cpu-hours``: at ``ci`` it trains
nothing, the page reads the committed cpu-hours bundle). Each (κ, N, d, seed) is one run-store job (``results/runs/ch3_mqar_figa3/``), trained and tested by the Fig. 2 runner's
:func:`~mamba_recall.chapters.ch3_selectivity.runners.mqar_train.train_one` (the same model, data and recipe, so the two bundles are
comparable); the same command resumes. The bundle ``results/ch3_mqar_figa3_<preset>.json`` has the tables ``rows``
(the schema of ``ch3_mqar_train``'s, column ``grid`` = ``figa3``), ``runs`` and ``cells`` (mean over seeds, 95 % t-interval,
per-seed values) and ``curves``; :func:`mamba_recall.chapters.ch3_selectivity.claims.check_figa3` judges 003/FigA3 on it.
"""

from __future__ import annotations

from dataclasses import replace

from mamba_recall.experiment import runner_main
from mamba_recall.chapters.ch3_selectivity.training.selectivity import job_config

from .common import store_bundle_writer
from .mqar_train import (  # noqa: F401 - the job functions (run_job, run_members) and what the plan times
    CELL_KEYS,
    METRICS,
    resolved_config,
    run_job,
    run_members,
    train_members,
    train_one,
)

EXPERIMENT = "ch3_mqar_figa3"
RUNNER = "mamba_recall.chapters.ch3_selectivity.runners.mqar_figa3:run_job"
MEMBERS_RUNNER = "mamba_recall.chapters.ch3_selectivity.runners.mqar_figa3:run_members"
GRID = "figa3"


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    """One job per mixer of ``mixers`` (mixer → |V|; default Mamba, ``s6`` without gate, at ``V``), (κ, N) cell of
    ``kappa_N``, width d of ``ds`` and seed, in that order (so that the first κ's cells finish first), at the
    preset's T."""
    from mamba_recall.presets import experiment
    from mamba_recall.runstore import make_job

    sizes = experiment(EXPERIMENT, preset, smoke=smoke)
    vocab = sizes.get("mixers", {"s6": sizes["V"]})  # mixer → |V|
    return [
        make_job(
            EXPERIMENT,
            job_config(replace(resolved_config(dict(sizes, V=V), kappa, d, mixer, N), grid=GRID), preset),
            seed,
        )
        for mixer, V in vocab.items()
        for kappa, N in sizes["kappa_N"]
        for d in sizes["ds"]
        for seed in sizes["seeds"]
    ]


#: the presets it runs: at ``ci`` it trains nothing (the page reads the committed cpu-hours bundle)
PRESETS = ("cpu-hours", "paper")

write_bundle = store_bundle_writer("ch3_mqar_figa3", EXPERIMENT, jobs_for, by=CELL_KEYS)


main = runner_main(EXPERIMENT, "cpu-hours")


if __name__ == "__main__":
    raise SystemExit(main())
