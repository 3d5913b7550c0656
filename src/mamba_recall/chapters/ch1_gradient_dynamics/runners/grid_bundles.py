"""The bundles of Chapter 1's run-store grid (:mod:`mamba_recall.chapters.ch1_gradient_dynamics.runners.grid`): :func:`write_bundles`
aggregates the finished jobs of each part over seeds (mean and 95 % Student-t interval) into its
``results/ch1_<part>_<preset>.json``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mamba_recall.paths import BUILD_DIR
from mamba_recall.presets import experiment
from mamba_recall.runstore import aggregate, finished_status
from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import FULL_NAME, ONEHOT_NAME
from .grid_jobs import (
    CHECKPOINT_MODELS,
    CHECKPOINTS_EXPERIMENT,
    FULL_EXPERIMENT,
    FULL_PARTS,
    TABLE_EXPERIMENT,
    MODELS,
    MODELS_EXPERIMENT,
    ONEHOT_EXPERIMENT,
    PARTS,
    PROBE_METRICS,
    RUNNER,
    WO_CLAIM,
    WO_EXPERIMENT,
    check_parts,
    jobs_for,
)


def _aggregate(runs: list[dict], by: list[str], metrics: list[str]) -> pd.DataFrame:
    """Per cell of ``by`` the metrics' mean over seeds and 95 % interval (:func:`~mamba_recall.runstore.aggregate`),
    each accuracy's and fraction's interval clipped to [0, 1] (the chapter's declared ranges,
    :data:`~mamba_recall.chapters.ch1_gradient_dynamics.claims.RANGES`)."""
    from mamba_recall.chapters.ch1_gradient_dynamics.claims import RANGES

    return aggregate(runs, by=by, metrics=metrics, bounds={m: RANGES[m] for m in metrics if m in RANGES})


def _stored_measurements(runs: list[dict]) -> dict:
    """Per claim: the seeds' stored measurements (bundle data ``measurements``: model, names, records), one entry per
    claim of each model's jobs. Nothing is combined here: the verdicts and the pages combine the seeds at check time
    (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.claims.seeds.check_over_seeds`,
    :func:`~mamba_recall.chapters.ch1_gradient_dynamics.claims.seeds_claims_view`)."""
    stored = {}
    by_model: dict[str, list[dict]] = {}
    for r in runs:
        by_model.setdefault(r["config"]["model"], []).append(r)
    for model, recs in sorted(by_model.items()):
        recs = sorted(recs, key=lambda r: r["seed"])
        for cid in recs[0]["result"]["measurements"]:
            records = [r["result"]["measurements"][cid] for r in recs]
            names = [f"{model} seed {r['seed']}" for r in recs]
            stored[cid] = {"model": model, "names": names, "records": records}
    return stored


def _write(name, data, config, tables, log, directory, experiment_name: str):
    """The bundle ``name`` of ``experiment_name``: its one layout then ``tables``, recording its grid command
    (:meth:`~mamba_recall.experiment.Experiment.save_bundle`)."""
    from mamba_recall.experiment import experiment_named

    return experiment_named(experiment_name).save_bundle(
        config["preset"], data, config, tables, smoke=config["smoke"], name=name, directory=directory, log=log
    )


def _wo_bundle(runs: list[dict], data: dict, preset: str, smoke: bool, suffix: str, log, directory) -> Path:
    """``ch1_wo_<preset>``: per target the accuracies (mean, interval over seeds), every model's record of 000/Fig7
    (``measurements``: both targets' seeds together, the claim's evidence, combined and judged at check time by
    :func:`~mamba_recall.chapters.ch1_gradient_dynamics.claims.seeds.check_over_seeds`) and the learned matrices (table ``W_o``: target, seed,
    row, col, value)."""
    runs = sorted(runs, key=lambda r: (r["config"]["sizes"]["target"], r["seed"]))
    models = _aggregate(
        [dict(r, config={"model": r["config"]["model"]}) for r in runs],
        by=["model"],
        metrics=["test_accuracy", "train_accuracy", "steps_run"],
    )
    records = [r["result"]["measurements"][WO_CLAIM] for r in runs]
    if not smoke and not any("not_run" in r for r in records):  # as the pages judge it: afresh on the checkpoints
        from mamba_recall.chapters.ch1_gradient_dynamics.claims.seeds import remeasured_wo

        records = remeasured_wo(records)
    names = [f"{r['config']['sizes']['target']} targets seed {r['seed']}" for r in runs]
    stored = {WO_CLAIM: {"model": "wo", "names": names, "records": records}}
    matrices = pd.DataFrame(
        [
            {"target": r["config"]["sizes"]["target"], "seed": r["seed"], "row": a, "col": c, "value": x}
            for r in runs
            for a, row in enumerate(r["result"]["W_o"])
            for c, x in enumerate(row)
        ]
    )
    data.update(
        measurements=stored,
        checkpoints={n: r["result"]["checkpoint"] for n, r in zip(names, runs)},
        aggregation="000/Fig7 over every model of both targets, combined at check time (claims.core.across_seeds)",
    )
    config = {"preset": preset, "smoke": smoke, "sizes": experiment("ch1_wo", preset, smoke=smoke)}
    tables = {"models": models, "W_o": matrices}
    return _write(f"ch1_wo_{preset}{suffix}", data, config, tables, log, directory, WO_EXPERIMENT)


def _full_bundle(
    runs: list[dict], data: dict, preset: str, smoke: bool, suffix: str, log, directory, part: str = FULL_NAME
) -> Path:
    """``ch1_<part>_<preset>`` (``part``: full_mamba or full_onehot): per-seed accuracies (mean, interval), the 000/Fig7-full records per seed
    (``measurements``, combined and judged at check time by :func:`~mamba_recall.chapters.ch1_gradient_dynamics.claims.seeds.check_over_seeds`),
    and the readout matrices W_o^full at the end and at initialisation (table ``readout``: seed, stage, row a =
    the logit's token, col = j·|V| + v for token v at lag 1 (j = 0, previous) or lag 0 (j = 1, current), value)."""
    models = _aggregate(
        [dict(r, config={"model": part}) for r in runs],
        by=["model"],
        metrics=["test_accuracy", "train_accuracy", "steps_run"],
    )
    stored = _stored_measurements(runs)
    readout = pd.DataFrame(
        [
            {"seed": r["seed"], "stage": stage, "row": a, "col": c, "value": x}
            for r in sorted(runs, key=lambda r: r["seed"])
            for stage, key in (("trained", "readout"), ("init", "readout_init"))
            for a, row in enumerate(r["result"][key])
            for c, x in enumerate(row)
        ]
    )
    data.update(
        measurements=stored,
        checkpoints={f"{part} seed {r['seed']}": r["result"]["checkpoint"] for r in runs},
        aggregation="per claim: the seeds' measurements, combined at check time (claims.core.across_seeds)",
        readout_note="W_o^full = [R U_1 | R U_0] (|V| × 2|V|): the full model's readout in the paper's (previous, "
        "current) token coordinates (analysis.full_mamba_readout.pair_readout)",
    )
    config = {
        "preset": preset,
        "smoke": smoke,
        "sizes": experiment(FULL_PARTS[part], preset, smoke=smoke),
        "runner": RUNNER,
    }
    tables = {"models": models, "readout": readout}
    return _write(f"ch1_{part}_{preset}{suffix}", data, config, tables, log, directory, FULL_PARTS[part])


def write_bundles(
    preset: str = "cpu-hours",
    *,
    store=None,
    smoke: bool = False,
    log=print,
    directory: Path | None = None,
    parts=None,
) -> list[Path]:
    """Aggregate the finished jobs of ``parts`` (default all) into ``results/ch1_mechanism_<preset>.json``,
    ``results/ch1_table1_<preset>.json`` and ``results/ch1_full_mamba_<preset>.json`` (a smoke run: ``_smoke``
    appended, written under ``_build/smoke/results`` unless ``directory`` is given); each says whether it is
    complete. A part with no finished job writes nothing."""
    if directory is None and smoke:
        directory = BUILD_DIR / "smoke" / "results"
    parts = check_parts(parts, preset)
    jobs = jobs_for(preset, smoke, parts)
    suffix = "_smoke" if smoke else ""
    paths = []
    for experiment_name in [PARTS[p] for p in PARTS if p in parts]:
        mine = [j for j in jobs if j["experiment"] == experiment_name]
        runs, data = finished_status(mine, store, preset=preset, log=log)
        if not runs:
            continue
        if experiment_name == CHECKPOINTS_EXPERIMENT:
            paths.append(_checkpoints_bundle(runs, data, preset, smoke, suffix, log, directory))
        elif experiment_name in (FULL_EXPERIMENT, ONEHOT_EXPERIMENT):
            part = FULL_NAME if experiment_name == FULL_EXPERIMENT else ONEHOT_NAME
            paths.append(_full_bundle(runs, data, preset, smoke, suffix, log, directory, part))
        elif experiment_name == WO_EXPERIMENT:
            paths.append(_wo_bundle(runs, data, preset, smoke, suffix, log, directory))
        elif experiment_name == MODELS_EXPERIMENT:
            paths.append(_mechanism_bundle(runs, data, preset, smoke, suffix, log, directory))
        else:  # Table 1 (and its size-matched row 3)
            paths.append(_table1_bundle(runs, data, preset, smoke, suffix, log, directory, experiment_name))
    return paths


def _checkpoints_bundle(runs: list[dict], data: dict, preset: str, smoke: bool, suffix: str, log, directory) -> Path:
    """``ch1_checkpoints_<preset>``: per model of part ``checkpoints`` (seed 0) its accuracies, training length, time
    and checkpoint (``data["models"]``, what :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.
    latest_value.committed_checkpoint` reads: a listed checkpoint that is gone stops a notebook instead of being
    trained live). Every finished model is listed."""
    by_name = {r["config"]["model"]: r["result"] for r in runs}
    names = [m for m in CHECKPOINT_MODELS if m in by_name]
    data["models"] = {m: by_name[m] for m in names}
    config = {
        "preset": preset,
        "smoke": smoke,
        "seed": 0,
        "sizes": {m: experiment(f"ch1_{m}", preset, smoke=smoke) for m in names},
    }
    return _write(f"ch1_checkpoints_{preset}{suffix}", data, config, {}, log, directory, CHECKPOINTS_EXPERIMENT)


def _mechanism_bundle(runs: list[dict], data: dict, preset: str, smoke: bool, suffix: str, log, directory) -> Path:
    """``ch1_mechanism_<preset>``: per model the accuracies (mean, interval over seeds), per claim the seeds'
    stored measurements (data ``measurements``, combined at check time; the |K| = 1 claims' measured afresh on the
    committed checkpoints at aggregation, :func:`~mamba_recall.chapters.ch1_gradient_dynamics.claims.seeds.
    remeasured_k1`, so that the bundle holds the numbers the pages judge after a rule's revision), and our causal
    probe on the |K| = 1 models (table ``probe``)."""
    models = _aggregate(
        [dict(r, config={"model": r["config"]["model"]}) for r in runs],
        by=["model"],
        metrics=["test_accuracy", "train_accuracy", "steps_run"],
    )
    k1 = [dict(r, config={"model": "k1"}) for r in runs if r["config"]["model"] == "k1"]
    probe = _aggregate(k1, by=["model"], metrics=list(PROBE_METRICS)) if k1 else pd.DataFrame()
    stored = _stored_measurements(runs)
    if not smoke:  # the |K| = 1 claims as the pages judge them: measured afresh on the committed checkpoints
        from mamba_recall.chapters.ch1_gradient_dynamics.claims.seeds import K1_CLAIMS, remeasured_k1

        n_probe = int(experiment("ch1_k1", preset)["n_probe"])
        for cid in K1_CLAIMS:
            held = stored.get(cid)
            if held and not any("not_run" in r for r in held["records"]):
                held["records"] = remeasured_k1(cid, held["records"], n_probe)
    data.update(
        measurements=stored,
        checkpoints={f"{r['config']['model']} seed {r['seed']}": r["result"]["checkpoint"] for r in runs},
        aggregation="per model and claim: the seeds' measurements, combined at check time (claims.core.across_seeds)",
        probe_note="our causal probe, not a claim of the paper: the forgetting factor set to 1 at noise pairs",
    )
    config = {
        "preset": preset,
        "smoke": smoke,
        "sizes": {m: experiment(f"ch1_{m}", preset, smoke=smoke) for m in MODELS},
        "runner": RUNNER,
    }
    tables = {"models": models, "probe": probe}
    return _write(f"ch1_mechanism_{preset}{suffix}", data, config, tables, log, directory, MODELS_EXPERIMENT)


def _table1_bundle(
    runs: list[dict], data: dict, preset: str, smoke: bool, suffix: str, log, directory, experiment_name: str
) -> Path:
    """``ch1_table1_<preset>`` (or ``ch1_table1_matched_<preset>``, the size-matched row 3, by ``experiment_name``):
    per cell the mean held-out accuracy over seeds with its interval and the paper's number (table ``accuracy``),
    and every run's Table 1 row (table ``rows``)."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.table1 import LABELS, PAPER_TABLE1, stop_reason, tail_gain

    matched = experiment_name != TABLE_EXPERIMENT  # the size-matched rows: their conv width is a cell's key
    keys = ("model", "conv_width", "T", "kappa") if matched else ("model", "T", "kappa")

    def cell(r):  # the run's cell: its config's keys, the conv width from its sizes
        return {k: r["config"]["sizes"][k] if k == "conv_width" else r["config"][k] for k in keys}

    per_run = pd.DataFrame(
        [
            {
                "seed": r["seed"],
                **{k: r["result"][k] for k in ("model", "label", "T", "kappa", "accuracy", "paper")},
                **({"conv_width": r["config"]["sizes"]["conv_width"]} if matched else {}),
                "train_accuracy": r["result"].get("train_accuracy"),
                # a run at its cap flat over its last 2,000 steps is finished ("flat"); its gain there is shown
                "stopped": stop_reason(r["result"]),
                **{k: r["result"].get(k) for k in ("steps_run", "params")},
                "seconds": r["result"]["seconds"],
                **({"last_2000_gain": tail_gain(r["result"]["train_curve"])} if "train_curve" in r["result"] else {}),
            }
            for r in sorted(runs, key=lambda r: (*cell(r).values(), r["seed"]))
        ]
    )
    # train_accuracy exists where the cells stop on the training set (cpu-hours' train_plateau), not at paper
    plateau = all(r["result"].get("train_accuracy") is not None for r in runs)
    cells = _aggregate(
        [dict(r, config=cell(r)) for r in runs],
        by=list(keys),
        metrics=["accuracy", "train_accuracy", "steps_run"] if plateau else ["accuracy", "steps_run"],
    )
    cells.insert(1, "label", [LABELS[m] for m in cells["model"]])
    cells["accuracy"] = cells["accuracy_mean"]  # the column the Table 1 claims read (the mean over seeds)
    cells["paper"] = [PAPER_TABLE1.get(m, {}).get((t, k)) for m, t, k in zip(cells.model, cells["T"], cells.kappa)]
    data["aggregation"] = "held-out query accuracy per run; mean over seeds with a 95 % t-interval per cell"
    stem = sizes_name = experiment_name
    config = {"preset": preset, "smoke": smoke, "sizes": experiment(sizes_name, preset, smoke=smoke)}
    tables = {"accuracy": cells, "rows": per_run}
    return _write(f"{stem}_{preset}{suffix}", data, config, tables, log, directory, experiment_name)
