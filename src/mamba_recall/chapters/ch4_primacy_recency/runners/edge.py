r"""Chapter 4 runner: the *edge* S-models, whose recall capacity binds inside their training range, 3 seeds each
(more where reserve seeds are declared), and their claim checks.

    python -m mamba_recall grid ch4_edge --preset cpu-hours --allow-long [--jobs 2]               # train
    python -m mamba_recall grid ch4_edge_checks --preset cpu-hours --allow-long [--jobs 2]        # claim checks
    python -m mamba_recall grid ch4_edge_checks --preset cpu-hours --aggregate-only               # checks bundle

The edge family is the declared experiment ``ch4_edge`` and its claim checks the declared experiment
``ch4_edge_checks`` (``chapters/ch4_primacy_recency/experiments.py``), whose jobs are made from the edge grid's
finished runs (:func:`checks_jobs`); each trains or checks and writes its bundle by its name, as every declared
experiment. This module's ``main`` is the first command under this runner's name, and with ``--checks`` the second
(``python -m mamba_recall.chapters.ch4_primacy_recency.runners.edge --preset cpu-hours --checks --allow-long``, the
spelling committed pages print; :func:`mamba_recall.experiment.grid_command`). Both have the run store's options as
every grid, ``--only`` among them (``--only d4``: that recipe's models, or their checks).

Why (paper 004, §4.1 and §4.2): a serial-position effect needs a model that *forgets*: the first S-models of the
chapter recall every position at 1.00 at L = 8, so an ablation there has no primacy to remove. The edge family is
trained on more names (64), longer contexts (L up to ``L_max`` ≥ 24, with a curriculum), at least 4 layers and with
the variants the paper points to as sources of primacy (a BOS token, a small-Δ initialisation), and with filler
gaps between the facts and the queries so that filler distractors are in distribution. The recipes are in
``chapters/ch4_primacy_recency/configs.py`` (experiment ``ch4_edge``); every recipe tried is listed there, the failed ones too.

One run-store job per (recipe, seed) (:mod:`mamba_recall.runstore`): it trains the model with
:func:`mamba_recall.chapters.ch4_primacy_recency.runners.train.train_recipe`, writes ``results/checkpoints/ch4_edge_<recipe>_<preset>_
seed<k>.pt`` (+ sidecar with its learning curve and gate), and records the per-position recall of both relation
variants at every evaluation length (``eval.Ls``, ``eval.n`` held-out contexts of
:func:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.contexts`). The command resumes: finished jobs are skipped.

The bundle ``results/ch4_edge_<preset>.json`` (:func:`write_bundle`) has, per recipe, L, variant and position,
the mean recall over seeds with a 95 % t-interval and the per-seed values (table ``curves``), and per model its
card, gate, training range and its pressure length L_p (table ``models``; :func:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.
pressure_length`: the smallest evaluated L whose middle third is ≤ 0.80 on the repeated relation).

Which seeds a recipe is judged on (:func:`mamba_recall.chapters.ch4_primacy_recency.pipelines.edge_seeds.evidence_seeds`, the one rule every
consumer uses: the primary recipe, the checks bundle, :func:`mamba_recall.chapters.ch4_primacy_recency.claims.check_family`): a recipe's declared seeds are ``0 … seeds-1``
then its reserve seeds (preset entry ``reserve_seeds``, e.g. ``{"d4": [3, 4, 5]}``, declared before any of them
ran). A recipe without reserve seeds is judged on its checked seeds, and counts for the primary recipe when all of
its (≥ 3) seeds are checked and every one passed the edge gate. A recipe with reserve seeds is judged on **the first
three seeds, in seed order, that pass the edge gate**, each trained to its full step count: no seed is skipped or
reordered, and a seed that has not finished yet (no checks run) blocks every seed after it from counting, so which
seeds count cannot depend on which run finished first. Every seed's outcome (passed or not, with its gate numbers)
is reported beside the verdicts (:meth:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.EdgeFamily.status` and the model cards).

The checks grid (``ch4_edge_checks``, :mod:`.edge_checks`) runs the claim checks of every finished model (one job
per model) and writes ``results/ch4_edge_checks_<preset>.json`` (:func:`write_checks_bundle`); its
``--aggregate-only`` writes that bundle from the finished checks (with checks left only with ``--partial``, marked
partial), ``--only <recipe>`` limits the checks run to those recipes' models (the bundle always counts every finished
check of the preset). The command line is the run store's shared one (:func:`mamba_recall.runstore.grid_main`:
``--jobs``, ``--smoke``, ``--allow-long``, ``--aggregate-only``, ``--no-estimate``, ``--store``).

The runner's parts: :mod:`~mamba_recall.chapters.ch4_primacy_recency.runners.edge_jobs` (the edge grid and its job function
:func:`run_job`), :mod:`~mamba_recall.chapters.ch4_primacy_recency.runners.edge_checks` (the edge gate and the claim checks, with
:func:`run_checks_job` and :func:`write_checks_bundle`) and this module (the time estimate, the edge bundle
:func:`write_bundle` and the command line :func:`main`); every name is importable from here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mamba_recall.chapters.ch4_primacy_recency.pipelines.edge_seeds import (  # noqa: F401  (the selection rule, re-exported for the runner's users)
    EVIDENCE_SEEDS,
    PRIMARY_ORDER,
    SeedSelection,
    declared_seeds,
    evidence_seeds,
    primary_recipe,
    primary_rule,
    reserve_seeds,
)
from mamba_recall.chapters.ch4_primacy_recency.pipelines.reference_curves import middle_third
from mamba_recall.experiment import command_line, experiment_named, grid_command
from mamba_recall.results import command_provenance
from mamba_recall.runstore import as_only, aggregate, finished_status, partial_status
from .edge_checks import (  # noqa: F401  (the claim checks, importable from the runner; CHECKS_RUNNER names it)
    CHECKS,
    CHECKS_RUNNER,
    EDGE_GATE,
    EDGE_GATE_N,
    checks_jobs,
    edge_gate,
    is_mamba2,
    run_checks_job,
    write_checks_bundle,
)
from .edge_jobs import (  # noqa: F401  (the edge grid, importable from the runner; RUNNER names it)
    EXPERIMENT,
    RUNNER,
    VARIANTS,
    correct_by_position,
    edge_sizes,
    jobs_for,
    model_name,
    run_job,
    smoke_bundle_dir,
    step_seconds,
)
from mamba_recall.runners import runner_command


def estimate(left: list[dict]) -> tuple[float, str]:
    """Seconds for the jobs left, from a measured training step at the recipe's mean training length (a few steps of
    each recipe, one thread: :func:`step_seconds`) plus the evaluation; the gate checks add about 5 %."""
    total, seen = 0.0, {}
    for job in left:
        r = job["config"]["recipe"]
        key = job["config"]["recipe_name"]
        if key not in seen:
            seen[key] = step_seconds(r)
        total += 1.05 * r["steps"] * seen[key] * 0.75  # the curriculum: the mean length is about 3/4 of L_max's
    return total, "median of 3 measured steps per recipe at its longest length, x 0.75 for the curriculum"


def _models_table(runs: list[dict]) -> pd.DataFrame:
    rows = []
    for r in runs:
        c, res = r["config"], r["result"]
        Lp = res["L_p"]
        rep = res["curves"][f"{Lp}/repeated"] if Lp else None
        # the middle third K_mid = {k : L/3 < k ≤ 2L/3} (1-based, as iv.summary): mean recall over it at L_p
        mid = None if rep is None else float(np.mean(np.asarray(rep)[middle_third(Lp) - 1]))
        m = c["recipe"]["model"]
        rows.append(
            {
                "model": c["model_name"],
                "recipe": c["recipe_name"],
                "seed": r["seed"],
                "gate_passed": bool(res["gate"].get("passed")),
                "L_p": Lp,
                "train_L_max": res["train_L_max"],
                "acc1_Lp": None if rep is None else rep[0],
                "mid_Lp": mid,
                "accL_Lp": None if rep is None else rep[-1],
                "card": (
                    f"{'Mamba-2' if m.get('arch') == 'mamba2' else 'Mamba-1'}, {m['n_layer']} layers, d_model {m['d_model']}, d_state {m['d_state']}, "
                    f"{c['recipe']['vocab']['n_names']} names, trained L {c['recipe']['L_min']}–"
                    f"{c['recipe']['L_max']}, {c['recipe']['steps']} steps, batch {c['recipe']['batch']}"
                    + (", BOS" if c["recipe"]["vocab"].get("bos") else "")
                    + (f", gaps ≤ {c['recipe']['gap_max']}" if c["recipe"].get("gap_max") else "")
                    + (f", dt_max {m['dt_max']}" if "dt_max" in m else "")
                    + (
                        f", out_proj of layers ≥ {m['zero_out_proj_from'] + 1} zero at init"
                        if m.get("zero_out_proj_from") is not None
                        else ""
                    )
                ),
                "checkpoint": res["checkpoint"],
                "train_seconds": res["seconds"],
            }
        )
    return pd.DataFrame(rows)


def write_bundle(preset: str, *, store=None, smoke: bool = False, log=print, partial: bool = False):
    """Aggregate the finished jobs into ``results/ch4_edge_<preset>.json`` (curves over seeds, model table) through
    the run store's one bundle writer (:func:`mamba_recall.runstore.save_grid_bundle`): ``data`` starts with the
    status of every run-store bundle (:func:`~mamba_recall.runstore.finished_status`: ``complete``,
    ``jobs_finished``, ``jobs_total``, ``runs``, ``run_keys``), then ``recipes_done`` and ``seeds_per_recipe``. A
    grid with jobs left is written only with ``partial`` (the grid's ``--partial``), marked ``partial: "k of n
    jobs"`` (:func:`~mamba_recall.runstore.partial_status`); the committed cpu-hours bundle is such a one (26 of 27:
    ``d4_long`` seed 2 never finished). A bundle of fewer finished jobs never replaces one of more
    (:class:`~mamba_recall.runstore.BundleNotReplaced`)."""
    jobs = jobs_for(preset, smoke)
    runs, data = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    cmd = command_line(EXPERIMENT, preset)
    data = partial_status(
        data, partial, what=f"{EXPERIMENT} at preset {preset}", command=cmd.removesuffix(" --allow-long"), log=log
    )
    if data is None:
        return None
    long = []
    for r in runs:
        for key, accs in r["result"]["curves"].items():
            L, v = key.split("/")
            for k, a in enumerate(accs, start=1):
                long.append(
                    {
                        "seed": r["seed"],
                        "recipe": r["config"]["recipe_name"],
                        "L": int(L),
                        "variant": v,
                        "k": k,
                        "acc": float(a),
                        "provenance": r["provenance"],
                        "key": r["key"],
                    }
                )
    # one cell per (recipe, L, variant, k); the seeds of a recipe share every other entry by construction (jobs_for)
    flat = [
        {
            "config": {"recipe": x["recipe"], "L": x["L"], "variant": x["variant"], "k": x["k"]},
            "seed": x["seed"],
            "result": {"acc": x["acc"]},
            "provenance": x["provenance"],
            "key": x["key"],
        }
        for x in long
    ]
    curves = aggregate(flat, by=["recipe", "L", "variant", "k"], metrics=["acc"])
    models = _models_table(runs)
    learning = pd.DataFrame(
        [
            {
                "model": r["config"]["model_name"],
                "recipe": r["config"]["recipe_name"],
                "seed": r["seed"],
                "step": h["step"],
                "metric": k,
                "recall": v,
            }
            for r in runs
            for h in r["result"]["learning_curve"]
            for k, v in h["gate"].items()
        ]
    )
    sizes = edge_sizes(preset, smoke)
    name = f"ch4_edge_{preset}" + ("_smoke" if smoke else "")
    data["recipes_done"] = sorted(models["recipe"].unique().tolist())
    data["seeds_per_recipe"] = models.groupby("recipe")["seed"].count().to_dict()
    config = {"preset": preset, "experiment": EXPERIMENT, "sizes": sizes, "runner": RUNNER, "smoke": smoke}
    return experiment_named(EXPERIMENT).save_bundle(
        preset,
        data,
        config,
        {"curves": curves, "models": models, "learning": learning},
        smoke=smoke,
        name=name,
        directory=smoke_bundle_dir() if smoke else None,  # else the results folder, or beside a scratch store
        log=log,
    )


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None) -> int:
    """``python -m mamba_recall grid ch4_edge --preset P`` under this runner's command; with ``--checks``, the grid
    of ``ch4_edge_checks`` instead, under ``<this command> --checks`` (the spelling committed pages print; its own
    runner is :mod:`.edge_checks`) (:func:`mamba_recall.experiment.grid_command`: the run store's options, the same
    jobs and bundle; default preset ``cpu-hours``). ``--recipes R`` is the grid's ``--only R``."""
    argv = as_only(argv, "--recipes")  # the spelling the review's records and older notes print: the grid's --only
    if "--checks" in argv:
        rest = [a for a in argv if a != "--checks"]
        prog = f"{runner_command(EXPERIMENT)} --checks"
        return grid_command(rest, name=CHECKS, prog=prog, default_preset="cpu-hours")
    return grid_command(argv, name=EXPERIMENT, prog=runner_command(EXPERIMENT), default_preset="cpu-hours")


if __name__ == "__main__":
    raise SystemExit(main())
