"""Shared pieces of the Chapter 3 runners: the training curve, the measured estimate and the bundle of their
run-store grids (each runner's command is the grid of its declared experiment, :mod:`..experiments`). The models by name, the
checkpoints (names, saving with a JSON sidecar, loading) and the shared recipe are in
:mod:`mamba_recall.chapters.ch3_selectivity.training.selectivity`."""

from __future__ import annotations

import time

import pandas as pd
import torch

from mamba_recall.presets import experiment


# ------------------------------------------------------------------------------------------------------- run store
#
# A run at every preset (ci, cpu-hours, paper) is one run-store job per (config, seed) (:mod:`mamba_recall.runstore`):
# the job function of each runner (``run_job(config, seed)``) trains with ``train_one``, and the bundle
# ``results/<runner>_<preset>.json`` keeps the one layout, ``runs`` and ``cells`` (per configuration: mean over seeds
# with a 95 % Student-t interval, ``runstore.INTERVAL_METHOD``, and the per-seed values), the table ``rows`` (each
# run's row, its derived fields too) and ``curves`` (every run's training curve): one format at every preset.


def curve_of(res, eval_every: int) -> list[list[float]]:
    """A run's training curve from :class:`~mamba_recall.train.TrainResult`: one ``[step, loss, accuracy]`` per
    held-out evaluation, ``loss`` the mean training loss over the ``eval_every`` steps before it (so the curve
    shows where a run that "fails after N steps" stopped improving)."""
    out, window = [], []
    for h in res.history:
        window.append(float(h["loss"]))
        if "accuracy" in h:
            out.append([int(h["step"]), round(sum(window) / len(window), 5), round(float(h["accuracy"]), 5)])
            window = []
        window = window[-eval_every:]
    return out


def measured_estimate(
    left: list[dict], train_one, key=lambda c: c, probe: int = 20, *, members: int = 1, train_members=None
) -> tuple[float, str]:
    """Upper bound (no early stop) for the jobs ``left``: for each distinct configuration (``key(config)``, seed
    ignored) ``train_one(config, 0, steps=…)`` on one thread, once untimed (warm-up), then with 2 and ``2 + probe``
    steps; seconds per step from the difference of the two. The rest of the short run (data, one held-out evaluation,
    the test) is paid once per job, and each further held-out evaluation (every ``eval_every`` steps) at its share of
    that by sequence count. On a machine shared with other jobs the step times, hence the estimate, grow.

    ``members > 1`` (``--members``): a configuration's seeds train ``members`` at a time as one ensemble, so what is
    timed is ``train_members(config, [0, …, members − 1], steps=…)`` and it is paid once per unit of up to
    ``members`` seeds (:func:`mamba_recall.runstore.units`)."""
    import json as _json

    from mamba_recall.runstore import job_config, units

    if members > 1:
        seeds = list(range(members))
        timed = lambda c, steps: train_members(c, seeds, steps=steps)  # noqa: E731
    else:
        timed = lambda c, steps: train_one(c, 0, steps=steps)  # noqa: E731
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    per: dict[str, tuple[float, float]] = {}
    try:
        for job in left:
            k = _json.dumps(key(job["config"]), sort_keys=True)
            if k in per:
                continue
            config = job_config(job)  # typed, as the job function receives it
            timed(config, 1)  # warm-up
            t0 = time.perf_counter()
            timed(config, 2)
            t2 = time.perf_counter() - t0
            t0 = time.perf_counter()
            timed(config, 2 + probe)
            step = max((time.perf_counter() - t0 - t2) / probe, 1e-4)
            per[k] = (step, max(t2 - 2 * step, 0.0))
    finally:
        torch.set_num_threads(threads)
    total = 0.0
    for unit in units(left, members):
        c = unit[0]["config"]
        step, rest = per[_json.dumps(key(c), sort_keys=True)]
        share = c["eval_sequences"] / (c["eval_sequences"] + c["test_sequences"])
        total += c["steps"] * step + rest + (c["steps"] // c["eval_every"]) * rest * share
    steps = sorted(s for s, _ in per.values())
    what = f"an ensemble of {members} per unit" if members > 1 else "one model per job"
    basis = (
        f"measured here, 1 thread, {len(per)} configurations, {what}: {steps[0] * 1e3:.0f}-{steps[-1] * 1e3:.0f} "
        "ms/step; every job at its full step budget: early stopping makes it shorter"
    )
    print(f"step time: {basis}", flush=True)
    return total, basis


def store_bundle_writer(name: str, experiment_name: str, jobs_for, *, by: list[str], extra_tables=None):
    """The ``write_bundle(preset, *, store=None, smoke=False, directory=None, log=print)`` of the Chapter 3 runner
    ``name`` (its module and bundle stem): :func:`write_store_bundle` of the jobs ``jobs_for(preset, smoke)``, with
    the sizes of the preset experiment ``experiment_name`` and cells over ``by``."""

    def write_bundle(preset: str, *, store=None, smoke: bool = False, directory=None, log=print):
        return write_store_bundle(
            name,
            jobs_for(preset, smoke),
            preset=preset,
            sizes=experiment(experiment_name, preset, smoke=smoke),
            by=by,
            extra_tables=extra_tables,
            store=store,
            smoke=smoke,
            directory=directory,
            log=log,
        )

    write_bundle.__doc__ = f"Aggregate the finished {experiment_name} jobs into ``results/{name}_<preset>.json``."
    return write_bundle


def write_store_bundle(
    name: str,
    jobs: list[dict],
    *,
    preset: str,
    sizes: dict,
    by: list[str],
    extra_tables=None,
    store=None,
    smoke: bool = False,
    directory=None,
    log=print,
):
    """Aggregate the finished jobs of one grid into ``results/<name>_<preset>[_smoke].json``: the one layout
    (:meth:`~mamba_recall.experiment.Experiment.save_bundle`: ``runs`` and ``cells`` over ``by`` of the experiment's
    metrics, each job's ``result["row"]`` fields), then tables ``rows`` (each job's ``result["row"]``, its derived
    fields too), ``curves`` (``by`` + seed + step, loss, accuracy) and ``extra_tables(runs) -> {name: rows}``.
    A partial grid is aggregated too (``data.complete`` false; :func:`~mamba_recall.results.evidence` then skips it)."""
    from mamba_recall.experiment import experiment_named
    from mamba_recall.runstore import finished_status

    runs, status = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    rows = [dict(r["result"]["row"]) for r in sorted(runs, key=lambda r: (r["key"], r["seed"]))]
    curves = [
        dict({k: r["result"]["row"][k] for k in by}, seed=r["seed"], step=s, loss=loss, accuracy=acc)
        for r in runs
        for s, loss, acc in r["result"]["curve"]
    ]
    tables = {"rows": pd.DataFrame(rows).sort_values(by + ["seed"]), "curves": pd.DataFrame(curves)}
    for tname, trows in (extra_tables(runs) if extra_tables else {}).items():
        tables[tname] = pd.DataFrame(trows)
    data = status.with_fields(n_runs=len(runs))  # keeps the store it was counted in (a scratch --store's bundle
    # goes beside that store, never over the committed one)
    bundle = f"{name}_{preset}" + ("_smoke" if smoke else "")
    config = {"preset": preset, "smoke": smoke, "sizes": sizes, "experiment": jobs[0]["experiment"]}
    return experiment_named(jobs[0]["experiment"]).save_bundle(
        preset, data, config, tables, smoke=smoke, by=by, name=bundle, directory=directory, log=log
    )
