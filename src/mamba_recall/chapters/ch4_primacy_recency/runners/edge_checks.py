r"""Chapter 4 runner: the claim checks of the edge family, the declared experiment ``ch4_edge_checks``
(``chapters/ch4_primacy_recency/experiments.py``), one run-store job per finished edge model::

    python -m mamba_recall grid ch4_edge_checks --preset cpu-hours --allow-long [--jobs 2] [--only d4]
    python -m mamba_recall grid ch4_edge_checks --preset cpu-hours --aggregate-only   # the checks bundle

Its jobs (:func:`checks_jobs`, the experiment's ``make_jobs``) are made from the finished runs of ``ch4_edge`` in the
grid's store (``results/runs/``; with ``--smoke`` the smoke store), so the grid exists at a preset once a model of the
edge family has finished there (before that, asking for it names the command that trains them). This module's
``main`` is that grid under the runner's name, and ``python -m mamba_recall.chapters.ch4_primacy_recency.runners.edge
--checks``, the spelling committed pages print, is the same grid again. Its parts: the edge gate (:func:`edge_gate`),
the job function :func:`run_checks_job` (the claims at the model's pressure length, each with its null control),
which ``CHECKS_RUNNER`` names at ``mamba_recall.chapters.ch4_primacy_recency.runners.edge:run_checks_job``, the time
estimate (:func:`estimate`) and the checks bundle (:func:`write_checks_bundle`). Every name is importable from
:mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge`."""

from __future__ import annotations

from pathlib import Path
from statistics import median

import pandas as pd

from mamba_recall.chapters.ch4_primacy_recency.pipelines.edge_seeds import PRIMARY_ORDER, primary_recipe
from mamba_recall.experiment import command_line, experiment_named, runner_main
from mamba_recall.paths import REPO_ROOT
from mamba_recall.results import smoke_run_store
from mamba_recall.runstore import (
    RUNS_DIR,
    finished_runs,
    finished_status,
    load_runs,
    make_job,
    partial_status,
    repo_relative,
)
from .edge_jobs import EXPERIMENT as EDGE, edge_sizes, jobs_for, smoke_bundle_dir
from .job_configs import EdgeChecksJob

# ------------------------------------------------------------------------------ claim checks, 3 seeds
# A Mamba-1 model is measured on the claims of §4.1–§4.4 (ch4_model_checks.claim_inputs) plus our slow-state probe;
# a Mamba-2 model (recipe m2) on App. F's head claims (ch4_model_checks.claim_inputs_m2), with no Mamba-1 probe.
#: The edge family's convergence gate. The chapter's gate (recall averaged over positions ≥ 0.95 at L = 4 and
#: ≥ 0.80 at L = 8) was made for s_small, whose capacity binds far beyond L = 8; a model at its capacity edge fails it
#: by design: the first edge models (d2 and d4, seed 0, 8,000 steps) recall the first and the last fact of L = 8 at
#: 0.99 / 0.98 and 0.99 / 0.92 but its middle at 0.26 and 0.77, so their average misses 0.80 although they plainly
#: bind subjects to objects. This gate was declared after seeing those two models' curves (and before any verdict
#: on them): the binding is tested where capacity cannot bind, at L = 2 (two facts), averaged over both positions
#: (so it reads no position's shape): a model that learned nothing but "one of the context's objects" scores 0.5
#: there. It decides only whether a model counts as evidence; the claims' rules are untouched.
EDGE_GATE = {"L2_random": 0.95, "L2_repeated": 0.95}
EDGE_GATE_N = 256


def edge_gate(model, vocab) -> dict:
    """``{"criterion", "thresholds", "metrics", "passed"}``: :data:`EDGE_GATE` on ``EDGE_GATE_N`` held-out contexts."""
    from .train import gate_metrics

    m = gate_metrics(model, vocab, n=EDGE_GATE_N, Ls=(2,))
    return {
        "criterion": f"recall averaged over the two positions of L = 2 ≥ 0.95 on both relation variants, "
        f"{EDGE_GATE_N} held-out contexts each (the binding, where capacity cannot bind)",
        "thresholds": EDGE_GATE,
        "metrics": m,
        "passed": all(m[k] >= v for k, v in EDGE_GATE.items()),
    }


CHECKS = "ch4_edge_checks"
CHECKS_RUNNER = "mamba_recall.chapters.ch4_primacy_recency.runners.edge:run_checks_job"
#: ``reproduce`` checks the edge models once they are trained
DEPENDS_ON = ("ch4_edge",)
#: what a check records that its bundle's one layout shows (``Experiment.metrics``): whether the model passed the
#: edge gate (where it measured and L_p are the job's config; its claims' measurements are the bundle's
#: ``records``, judged when a page runs)
METRICS = ("gate.passed",)
# PRIMARY_ORDER, the seeds each recipe is judged on (evidence_seeds) and primary_recipe live in chapters/ch4_primacy_recency/pipelines/edge_seeds.py
# (imported above), where the book's EdgeFamily and the claims' check_family read the same rule.


def is_mamba2(recipe: dict) -> bool:
    """Whether an edge recipe trains a Mamba-2 (SSD) model (its model config has ``"arch": "mamba2"``)."""
    return recipe["model"].get("arch") == "mamba2"


def _edge_store(smoke: bool) -> Path:
    """Where the checks grid reads the edge models' runs: the grid's own store, ``results/runs/`` (with ``smoke``,
    the smoke store ``_build/smoke/results/runs/``, where ``grid ch4_edge --smoke`` keeps them)."""
    return smoke_run_store(smoke) or Path(RUNS_DIR)


def checks_jobs(preset: str, smoke: bool = False, store: Path | None = None) -> list[dict]:
    """The grid of ``ch4_edge_checks`` at ``preset`` (the experiment's ``make_jobs``): one job per finished edge
    model of the run store ``store`` (default: the grid's own, :func:`_edge_store`), the claim inputs at its
    pressure length, measured per claim: §4.1–§4.4's claims on a Mamba-1 model, App. F's head claims on a Mamba-2
    one (its job's config says ``"arch": "mamba2"``; a Mamba-1 job's config has no ``arch``, so the keys of the
    committed Mamba-1 checks stay what they were). Every finished model is checked, reserve seeds and seeds that will
    not count included: the checks job measures the edge gate that :func:`evidence_seeds` reads, and every seed's
    outcome is reported. ValueError naming the command that trains them when no edge model has finished at
    ``preset`` (the grid has no jobs there yet)."""
    store = _edge_store(smoke) if store is None else Path(store)
    runs = finished_runs(jobs_for(preset, smoke), store)
    if not runs:
        train = command_line(EDGE, preset, smoke=smoke)
        raise ValueError(
            f"its jobs are the checks of {EDGE}'s finished models, and none has finished at preset {preset} in "
            f"{repo_relative(store)}/; train them first: {train}"
        )
    jobs = []
    for r in runs:
        c, res = r["config"], r["result"]
        Ls = sorted({int(k.split("/")[0]) for k in res["curves"]})
        inside = [L for L in Ls if L <= res["train_L_max"]]
        at = res["L_p"] if res["L_p"] is not None else max(inside or Ls)
        mamba2 = is_mamba2(c["recipe"])
        config = EdgeChecksJob(
            model_name=c["model_name"],
            recipe_name=c["recipe_name"],
            checkpoint=c["checkpoint"],
            sha256=res["sha256"],
            preset=preset,
            sizes_preset="ci" if smoke else "cpu-hours",
            smoke=smoke,
            at=int(at),
            L_p=res["L_p"],
            ucurve_Ls=Ls,
            # every claim's null control: the same measurements on the model's untrained twin (same configuration,
            # vocabulary and initialisation seed; analysis.primacy.untrained_twin), declared with the checks
            null_control="untrained_twin",
            arch="mamba2" if mamba2 else None,
            # Fig. 5b with the paper's random tokens (names and relations), whatever the model was trained with
            distractor_pool=None if mamba2 else "content",
        )
        jobs.append(make_job(CHECKS, config, r["seed"]))
    return jobs


def estimate(left: list[dict]) -> tuple[float, str]:
    """Seconds for the checks left: each job at the median wall seconds of the committed checks runs of its
    architecture (``results/runs/ch4_edge_checks/``, Mamba-1 and Mamba-2 apart; inference only, one thread), an
    architecture with none at the median of all of them (the basis says so); 0 with none committed at all."""
    recorded: dict[str, list[float]] = {}
    for r in load_runs(CHECKS):
        recorded.setdefault(r["config"].get("arch") or "mamba1", []).append(float(r["provenance"]["wall_seconds"]))
    every = [s for seconds in recorded.values() for s in seconds]
    if not every:
        return 0.0, "no committed checks run to time (results/runs/ch4_edge_checks/ is empty): not estimated"
    total, unseen = 0.0, set()
    for job in left:
        arch = job["config"].get("arch") or "mamba1"
        if arch not in recorded:
            unseen.add(arch)
        total += median(recorded.get(arch, every))
    basis = f"the median wall seconds of the {len(every)} committed checks runs per architecture, per job"
    return total, basis + (f" ({', '.join(sorted(unseen))}: none committed, the median of all)" if unseen else "")


def run_checks_job(config: EdgeChecksJob, seed: int) -> dict:
    """Measure every claim of one edge model at its pressure length (the run store's job function): those of
    §4.1–§4.4 on a Mamba-1 model, App. F's head claims (``CLAIM_IDS_M2``) on a Mamba-2 one →
    {claim id: the Measurement as a dict, or {"not_run": reason}}, plus our probes (Mamba-1 only)."""
    from types import SimpleNamespace

    import torch

    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import load_checkpoint
    from mamba_recall.models.mamba2 import Mamba2LMHeadModel
    from .model_checks import CLAIM_IDS, CLAIM_IDS_M2

    path = REPO_ROOT / config.checkpoint
    model, vocab, side = load_checkpoint(path, model=config.model_name)
    if side.get("sha256") != config.sha256:
        raise ValueError(f"{path}: its sha256 is not the one the training run recorded; re-run the training job.")
    mamba2 = config.arch == "mamba2"
    if mamba2 != isinstance(model, Mamba2LMHeadModel):
        raise ValueError(
            f"{path}: the checks job says arch {config.arch or 'mamba1'!r} but the checkpoint holds a "
            f"{type(model).__name__}; rebuild the checks jobs from the training runs (checks_jobs)."
        )
    ids = CLAIM_IDS_M2 if mamba2 else CLAIM_IDS  # the claims this model is measured on
    gate = edge_gate(model, vocab)
    side = {"source": config.checkpoint, **side, "gate": gate, "training_gate": side.get("gate")}
    ctx = SimpleNamespace(preset=config.sizes_preset, device=torch.device("cpu"), smoke=config.smoke)
    if not gate["passed"]:  # no evidence either way: skip the probes
        why = (
            f"the model did not pass the edge family's convergence gate ({gate['criterion']}; measured "
            + ", ".join(f"{k} {v:.3f}" for k, v in gate["metrics"].items())
            + "): it has not learned the binding"
        )
        return {
            "measurements": {cid: {"not_run": why} for cid in ids},
            "probes": {},
            "gate": gate,
            "at": config.at,
            "L_p": config.L_p,
        }
    out = _measure_claims(model, vocab, config, ctx, side)
    if config.null_control == "untrained_twin":
        _attach_null(out, config, ctx)
    if mamba2:  # the slow-state probe reads Mamba-1's per-channel Ā; a Mamba-2 head has one scalar decay
        return {"measurements": out, "probes": {}, "gate": gate, "at": config.at, "L_p": config.L_p}
    # our probe (no paper claim): the slow-writing states at the first triple, against layer-matched random states
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import slow_state_probe
    from mamba_recall.presets import experiment

    S = experiment("ch4_channels", config.sizes_preset, smoke=config.smoke)
    probes = {
        "slow_states": slow_state_probe(
            model,
            vocab,
            config.at,
            S["n"],
            n_random=max(5, S["n_random"]),
            tau=S["tau"],
            p=S["p"],
            L_ident=S["L_ident"],
        )
    }
    return {"measurements": out, "probes": probes, "gate": gate, "at": config.at, "L_p": config.L_p}


def _measure_claims(model, vocab, config: EdgeChecksJob, ctx, side: dict) -> dict:
    """{claim id: the measurement record, or {"not_run": why}} of one model at the job's length: App. F's head
    claims on a Mamba-2 model, §4.1–§4.4's on a Mamba-1 one (Fig. 5b with the job's distractor pool)."""
    from mamba_recall.claims import NotRun, get, measurement_record
    from mamba_recall.models.mamba2 import Mamba2LMHeadModel
    from .model_checks import claim_inputs, claim_inputs_m2

    if isinstance(model, Mamba2LMHeadModel):  # App. F: the U, the long-term heads (Eq. 9), their ablation, at L_p
        inputs = claim_inputs_m2(model, vocab, config.sizes_preset, "cpu", at=config.at, ucurve_Ls=config.ucurve_Ls)
    else:
        inputs = claim_inputs(
            model,
            vocab,
            config.sizes_preset,
            "cpu",
            at=config.at,
            ucurve_Ls=config.ucurve_Ls,
            distractor_pool=config.distractor_pool,  # the paper's random tokens (checks_jobs)
        )
    out = {}
    for cid, args in inputs.items():
        try:
            out[cid] = measurement_record(get(cid).measure(*args, ctx=ctx, side=side))
        except NotRun as exc:
            out[cid] = {"not_run": str(exc)}
    return out


def _attach_null(out: dict, config: EdgeChecksJob, ctx) -> None:
    """Each measured claim's null control, in place: the same measurements, at the same length and sizes, on the
    model's untrained twin (:func:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.untrained_twin`). A rule the twin passes cannot
    tell the trained model from one that has learned nothing (:class:`mamba_recall.claims.core.Control`)."""
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import untrained_twin
    from ..claims import NULL_UNTRAINED

    twin, vocab, side = untrained_twin(config.model_name, path=REPO_ROOT / config.checkpoint)
    side = {"source": f"{config.checkpoint} (untrained twin)", **side, "gate": {"passed": True}}
    null = _measure_claims(twin, vocab, config, ctx, side)
    for cid, rec in out.items():
        if "not_run" in rec:
            continue
        if "not_run" in null[cid]:
            raise ValueError(
                f"{config.model_name}: {cid} measured on the trained model but not on its untrained twin "
                f"({null[cid]['not_run']}); a null control must be measured like the claim."
            )
        rec["control"] = {"kind": "null", "what": NULL_UNTRAINED, "measurement": null[cid]}


def same_models(preset: str, smoke: bool, store) -> None:
    """ValueError when the run store ``store`` holds finished edge models at ``preset`` other than the grid's own
    store does: the grid's jobs are the checks of its own store's models (the experiment's ``make_jobs`` takes no
    store), so the checks of another store's models are neither run nor aggregated. A store holding none (a scratch
    store for the checks alone) or the same ones (a copy of the committed store) is the grid's. The experiment's
    ``check_store``: the grid command calls it before any job runs."""
    if store is None:
        return
    edge = jobs_for(preset, smoke)
    theirs = {r["key"] for r in finished_runs(edge, store)}
    ours = {r["key"] for r in finished_runs(edge, _edge_store(smoke))}
    if theirs and theirs != ours:
        raise ValueError(
            f"{store} holds {len(theirs)} finished {EDGE} models at preset {preset}, other than the {len(ours)} of "
            f"the grid's store {repo_relative(_edge_store(smoke))}/: {CHECKS}'s jobs are the checks of the grid's "
            f"store's models, so those of {store} are not checked; train and check them in the grid's store (without "
            "--store)."
        )


def write_checks_bundle(preset: str, *, store=None, smoke: bool = False, log=print, partial: bool = False):
    """``results/ch4_edge_checks_<preset>.json`` (the experiment's ``write``) from the finished runs in ``store`` of
    the grid's jobs (:func:`checks_jobs`: the checks of the models of the grid's own store; ValueError from
    :func:`same_models` when ``store`` holds other edge models): the one layout (``runs``, ``cells``: per recipe, its
    seeds), one row per checked model (table ``checked``: its recipe, seed, model, run key, the length ``at`` it was
    checked at, ``L_p``, whether it passed the edge gate and
    how many claims were measured or not run) and the per-seed stored measurements (``data["records"]``: one record
    per checked model, its recipe, seed, model, run key and stored result, what the book judges when a page runs;
    the bundle holds no verdict), written through the run store's one
    bundle writer (:func:`mamba_recall.runstore.save_grid_bundle`), recording the grid's command: ``data`` starts
    with the status of every run-store bundle (:func:`~mamba_recall.runstore.finished_status`), then
    ``primary_recipe``, ``edge_gate``, ``primary_order`` and ``records``. With checks left, written only with
    ``partial`` (the grid's ``--partial``), marked partial (:func:`~mamba_recall.runstore.partial_status`); a bundle
    of fewer finished checks never replaces one of more (:class:`~mamba_recall.runstore.BundleNotReplaced`)."""
    same_models(preset, smoke, store)  # the grid checked it before its jobs ran; a direct call is checked here
    jobs = checks_jobs(preset, smoke)
    runs, data = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    command = command_line(CHECKS, preset)
    data = partial_status(
        data, partial, what=f"{CHECKS} at preset {preset}", command=command.removesuffix(" --allow-long"), log=log
    )
    if data is None:
        return None
    # one row per checked model: what was measured, never a verdict (the book judges the stored records with the
    # claims registry when a page runs, so a bundle holds no status a rule revised later would contradict)
    rows = [
        {
            "recipe": r["config"]["recipe_name"],
            "seed": r["seed"],
            "model": r["config"]["model_name"],
            "key": r["key"],
            "at": r["result"]["at"],
            "L_p": r["result"]["L_p"],
            "gate_passed": bool((r["result"].get("gate") or {}).get("passed")),
            "claims_measured": sum("not_run" not in m for m in r["result"]["measurements"].values()),
            "claims_not_run": sum("not_run" in m for m in r["result"]["measurements"].values()),
        }
        for r in sorted(runs, key=lambda r: (r["config"]["recipe_name"], r["seed"]))
    ]
    data["primary_recipe"] = primary_recipe(runs, edge_sizes(preset, smoke))
    data["edge_gate"] = EDGE_GATE
    data["primary_order"] = list(PRIMARY_ORDER)
    data["records"] = [
        {
            "recipe": r["config"]["recipe_name"],
            "seed": r["seed"],
            "model": r["config"]["model_name"],
            "key": r["key"],
            **r["result"],
        }
        for r in runs
    ]
    name = f"ch4_edge_checks_{preset}" + ("_smoke" if smoke else "")
    return experiment_named(CHECKS).save_bundle(
        preset,
        data,
        {"preset": preset, "experiment": CHECKS, "runner": CHECKS_RUNNER, "smoke": smoke},
        {"checked": pd.DataFrame(rows)},
        smoke=smoke,
        name=name,
        directory=smoke_bundle_dir() if smoke else None,  # else the results folder, or beside a scratch store
        log=log,
    )


#: ``python -m mamba_recall grid ch4_edge_checks --preset P`` under this runner's command (default ``cpu-hours``)
main = runner_main(CHECKS, "cpu-hours")


if __name__ == "__main__":
    raise SystemExit(main())
