r"""Chapter 4 runner: the *edge* S-models, whose recall capacity binds inside their training range, 3 seeds each
(more where reserve seeds are declared).

    python -m mamba_recall.experiments.ch4_edge --preset cpu-hours --allow-long [--jobs 2]          # train
    python -m mamba_recall.experiments.ch4_edge --preset cpu-hours --checks --allow-long [--jobs 2] # claim checks
    python -m mamba_recall.experiments.ch4_edge --preset cpu-hours --aggregate-only                 # both bundles

Why (paper 004, §4.1 and §4.2): a serial-position effect needs a model that *forgets*: the first S-models of the
chapter recall every position at 1.00 at L = 8, so an ablation there has no primacy to remove. The edge family is
trained on more names (64), longer contexts (L up to ``L_max`` ≥ 24, with a curriculum), at least 4 layers and with
the variants the paper points to as sources of primacy (a BOS token, a small-Δ initialisation), and with filler
gaps between the facts and the queries so that filler distractors are in distribution. The recipes are in
``presets/ch4.py`` (experiment ``ch4.edge``); every recipe tried is listed there, the failed ones too.

One run-store job per (recipe, seed) (:mod:`mamba_recall.runstore`): it trains the model with
:func:`mamba_recall.experiments.ch4_train.train_recipe`, writes ``results/checkpoints/ch4_edge_<recipe>_<preset>_
seed<k>.pt`` (+ sidecar with its learning curve and gate), and records the per-position recall of both relation
variants at every evaluation length (``eval.Ls``, ``eval.n`` held-out contexts of
:func:`mamba_recall.analysis.primacy.contexts`). The command resumes: finished jobs are skipped.

The bundle ``results/ch4_edge_<preset>.json`` (:func:`write_bundle`) has, per recipe, L, variant and position,
the mean recall over seeds with a 95 % t-interval and the per-seed values (table ``curves``), and per model its
card, gate, training range and its pressure length L_p (table ``models``; :func:`mamba_recall.analysis.primacy.
pressure_length`: the smallest evaluated L whose middle third is ≤ 0.80 on the repeated relation).

Which seeds a recipe is judged on (:func:`mamba_recall.analysis.edge_seeds.evidence_seeds`, the one rule every
consumer uses: the primary recipe, the checks bundle, :func:`mamba_recall.claims.ch4.check_family`): a recipe's declared seeds are ``0 … seeds-1``
then its reserve seeds (preset entry ``reserve_seeds``, e.g. ``{"d4": [3, 4, 5]}``, declared before any of them
ran). A recipe without reserve seeds is judged on its checked seeds, and counts for the primary recipe when all of
its (≥ 3) seeds are checked and every one passed the edge gate. A recipe with reserve seeds is judged on **the first
three seeds, in seed order, that pass the edge gate**, each trained to its full step count: no seed is skipped or
reordered, and a seed that has not finished yet (no checks run) blocks every seed after it from counting, so which
seeds count cannot depend on which run finished first. Every seed's outcome (passed or not, with its gate numbers)
is reported beside the verdicts (:meth:`mamba_recall.analysis.primacy.EdgeFamily.status` and the model cards).

``--checks`` runs the claim checks of every finished model (one job per model, experiment ``ch4.edge_checks``) and
writes ``results/ch4_edge_checks_<preset>.json`` (:func:`write_checks_bundle`). The one command that regenerates
**both** bundles from the run store, training nothing, is the third line above (``--aggregate-only`` without
``--checks``): it counts both grids and writes the edge bundle, then the checks bundle, with one provenance taken
before it writes anything (:func:`mamba_recall.results.command_provenance`), so the second bundle does not read the
first one's rewrite as a dirty tree. ``--checks --aggregate-only`` writes the checks bundle alone. The command line
is the run store's shared one (:func:`mamba_recall.runstore.grid_main`: ``--jobs``, ``--smoke``, ``--allow-long``,
``--aggregate-only``, ``--no-estimate``, ``--store``) plus ``--recipes`` and ``--seeds`` (which jobs it runs or
counts; the bundles always aggregate every finished job of the preset).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..analysis.edge_seeds import (  # noqa: F401  (the selection rule, re-exported for the runner's users)
    EVIDENCE_SEEDS,
    PRIMARY_ORDER,
    SeedSelection,
    declared_seeds,
    evidence_seeds,
    primary_recipe,
    primary_rule,
    reserve_seeds,
)
from ..analysis.primacy import checkpoint_path, contexts, pressure_length
from ..analysis.reference_curves import middle_third
from ..paths import REPO_ROOT
from ..presets import experiment
from ..results import command_provenance
from ..runstore import (
    GridStage,
    add_grid_args,
    aggregate,
    bundle_directory,
    finished_runs,
    grid_main,
    make_job,
    runs_summary,
)

EXPERIMENT = "ch4.edge"
RUNNER = "mamba_recall.experiments.ch4_edge:run_job"
VARIANTS = ("repeated", "random")


def model_name(recipe: str, preset: str, seed: int, smoke: bool = False) -> str:
    """``edge_<recipe>_<preset>_seed<k>`` (``_smoke`` appended for a smoke run, whose checkpoint is not kept)."""
    return f"edge_{recipe}_{preset}_seed{seed}" + ("_smoke" if smoke else "")


def _sizes(preset: str, smoke: bool) -> dict:
    return experiment(EXPERIMENT, preset, smoke=smoke)


def smoke_bundle_dir() -> Path:
    """Where a smoke run's bundles go (``_build/smoke_results``: never evidence); the tests point it elsewhere."""
    return REPO_ROOT / "_build" / "smoke_results"


def jobs_for(preset: str, smoke: bool = False, recipes: list[str] | None = None) -> list[dict]:
    """One job per (recipe, seed), over the recipe's :func:`declared_seeds` (reserve seeds included); the config is
    fully resolved (the recipe with its seed, the evaluation)."""
    sizes = _sizes(preset, smoke)
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
            config = {
                "recipe_name": recipe,
                "preset": preset,
                "model_name": name,
                "checkpoint": str(out),
                "recipe": {**cfg, "seed": seed},
                "eval": sizes["eval"],
            }
            jobs.append(make_job(EXPERIMENT, config, seed))
    return jobs


def correct_by_position(model, vocab, Ls, n: int, device="cpu") -> dict:
    """{(L, variant): (n, L) bool correct} at every evaluation length the vocabulary allows (L ≤ n_names)."""
    from ..analysis import interventions as iv

    return {
        (L, v): iv.recall_by_position(model, contexts(vocab, L, v, n), device=device)
        for L in Ls
        if L <= vocab.n_names
        for v in VARIANTS
    }


def run_job(config: dict, seed: int) -> dict:
    """Train one edge S-model and measure its curves (the run store's job function)."""
    from ..analysis.primacy import load_checkpoint
    from .ch4_train import train_recipe

    out = REPO_ROOT / config["checkpoint"]
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = (
        f"python -m mamba_recall.experiments.ch4_edge --preset {config['preset']} --recipes "
        f"{config['recipe_name']} --allow-long"
    )
    start = time.perf_counter()
    train_recipe(config["recipe"], config["model_name"], out, command=cmd, log=lambda s: print(s, flush=True))
    model, vocab, side = load_checkpoint(out, model=config["model_name"])  # hash-checked, as the book loads it
    ev = config["eval"]
    correct = correct_by_position(model, vocab, ev["Ls"], ev["n"])
    Ls = sorted({L for L, _ in correct})
    curves = {f"{L}/{v}": c.mean(0).tolist() for (L, v), c in correct.items()}
    return {
        "checkpoint": config["checkpoint"],
        "sha256": side.get("sha256"),
        "gate": side["gate"],
        "learning_curve": side.get("learning_curve", []),
        "curves": curves,
        "n": ev["n"],
        "L_p": pressure_length(correct, Ls),
        "train_L_max": config["recipe"]["L_max"],
        "seconds": round(time.perf_counter() - start, 1),
    }


def estimate(left: list[dict]) -> tuple[float, str]:
    """Seconds for the jobs left, from a measured training step at the recipe's mean training length (a few steps of
    each recipe, one thread) plus the evaluation; the gate checks add about 5 %."""
    import torch

    from ..analysis.primacy import build_model
    from ..tasks.serial_recall import RecallVocab
    from .ch4_train import make_batch_fn

    total, seen = 0.0, {}
    for job in left:
        r = job["config"]["recipe"]
        key = job["config"]["recipe_name"]
        if key not in seen:
            vocab = RecallVocab(**r["vocab"])
            torch.manual_seed(0)
            model = build_model(r["model"], vocab)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
            cfg = dict(r, curriculum_frac=0.0)
            make = make_batch_fn(cfg, vocab)
            times = []
            for step in range(4):
                x, y = make(r["steps"] - 1 - step)
                t0 = time.perf_counter()
                loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=-100)
                opt.zero_grad()
                loss.backward()
                opt.step()
                times.append(time.perf_counter() - t0)
            seen[key] = float(np.median(times[1:]))
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


def write_bundle(preset: str, *, store=None, smoke: bool = False, log=print):
    """Aggregate the finished jobs into ``results/ch4_edge_<preset>.json`` (curves over seeds, model table)."""
    from ..results import save_bundle

    jobs = jobs_for(preset, smoke)
    runs = finished_runs(jobs, store)
    if not runs:
        log(f"no finished jobs of {EXPERIMENT} at preset {preset}; nothing to aggregate.")
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
    sizes = _sizes(preset, smoke)
    summary = runs_summary(runs)
    cmd = f"python -m mamba_recall.experiments.ch4_edge --preset {preset} --allow-long"
    name = f"ch4_edge_{preset}" + ("_smoke" if smoke else "")
    data = {
        "models": int(len(models)),
        "jobs": len(jobs),
        "finished": len(runs),
        "recipes_done": sorted(models["recipe"].unique().tolist()),
        "seeds_per_recipe": models.groupby("recipe")["seed"].count().to_dict(),
        **summary,
    }
    config = {"preset": preset, "experiment": EXPERIMENT, "sizes": sizes, "runner": RUNNER, "smoke": smoke}
    path = save_bundle(
        name,
        data,
        config,
        command=cmd,
        device="cpu",
        wall_seconds=summary.get("wall_seconds", 0.0),
        tables={"curves": curves, "models": models, "learning": learning},
        directory=smoke_bundle_dir() if smoke else bundle_directory(store),
    )
    log(f"wrote {path} ({len(runs)} of {len(jobs)} jobs)")
    return path


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
    from .ch4_train import gate_metrics

    m = gate_metrics(model, vocab, n=EDGE_GATE_N, Ls=(2,))
    return {
        "criterion": f"recall averaged over the two positions of L = 2 ≥ 0.95 on both relation variants, "
        f"{EDGE_GATE_N} held-out contexts each (the binding, where capacity cannot bind)",
        "thresholds": EDGE_GATE,
        "metrics": m,
        "passed": all(m[k] >= v for k, v in EDGE_GATE.items()),
    }


CHECKS = "ch4.edge_checks"
CHECKS_RUNNER = "mamba_recall.experiments.ch4_edge:run_checks_job"
# PRIMARY_ORDER, the seeds each recipe is judged on (evidence_seeds) and primary_recipe live in analysis/edge_seeds.py
# (imported above), where the book's EdgeFamily and the claims' check_family read the same rule.


def is_mamba2(recipe: dict) -> bool:
    """Whether an edge recipe trains a Mamba-2 (SSD) model (its model config has ``"arch": "mamba2"``)."""
    return recipe["model"].get("arch") == "mamba2"


def checks_jobs(preset: str, smoke: bool = False, store=None) -> list[dict]:
    """One job per finished edge model: the claim inputs at its pressure length, measured per claim: §4.1–§4.4's
    claims on a Mamba-1 model, App. F's head claims on a Mamba-2 one (its job's config says ``"arch": "mamba2"``;
    a Mamba-1 job's config has no ``arch``, so the keys of the committed Mamba-1 checks stay what they were). Every
    finished model is checked, reserve seeds and seeds that will not count included: the checks job measures the edge
    gate that :func:`evidence_seeds` reads, and every seed's outcome is reported."""
    jobs = []
    for r in finished_runs(jobs_for(preset, smoke), store):
        c, res = r["config"], r["result"]
        Ls = sorted({int(k.split("/")[0]) for k in res["curves"]})
        inside = [L for L in Ls if L <= res["train_L_max"]]
        at = res["L_p"] if res["L_p"] is not None else max(inside or Ls)
        config = {
            "model_name": c["model_name"],
            "recipe_name": c["recipe_name"],
            "checkpoint": c["checkpoint"],
            "sha256": res["sha256"],
            "preset": preset,
            "sizes_preset": "ci" if smoke else "cpu-hours",
            "smoke": smoke,
            "at": int(at),
            "L_p": res["L_p"],
            "ucurve_Ls": Ls,
            # every claim's null control: the same measurements on the model's untrained twin (same configuration,
            # vocabulary and initialisation seed; analysis.primacy.untrained_twin), declared with the checks
            "null_control": "untrained_twin",
        }
        if is_mamba2(c["recipe"]):
            config["arch"] = "mamba2"
        else:  # Fig. 5b with the paper's random tokens (names and relations), whatever the model was trained with
            config["distractor_pool"] = "content"
        jobs.append(make_job(CHECKS, config, r["seed"]))
    return jobs


def run_checks_job(config: dict, seed: int) -> dict:
    """Measure every claim of one edge model at its pressure length (the run store's job function): those of
    §4.1–§4.4 on a Mamba-1 model, App. F's head claims (``CLAIM_IDS_M2``) on a Mamba-2 one →
    {claim id: the Measurement as a dict, or {"not_run": reason}}, plus our probes (Mamba-1 only)."""
    from types import SimpleNamespace

    import torch

    from ..analysis.primacy import load_checkpoint
    from ..models.mamba2 import Mamba2LMHeadModel
    from .ch4_model_checks import CLAIM_IDS, CLAIM_IDS_M2

    path = REPO_ROOT / config["checkpoint"]
    model, vocab, side = load_checkpoint(path, model=config["model_name"])
    if side.get("sha256") != config["sha256"]:
        raise ValueError(f"{path}: its sha256 is not the one the training run recorded; re-run the training job.")
    mamba2 = config.get("arch") == "mamba2"
    if mamba2 != isinstance(model, Mamba2LMHeadModel):
        raise ValueError(
            f"{path}: the checks job says arch {config.get('arch', 'mamba1')!r} but the checkpoint holds a "
            f"{type(model).__name__}; rebuild the checks jobs from the training runs (checks_jobs)."
        )
    ids = CLAIM_IDS_M2 if mamba2 else CLAIM_IDS  # the claims this model is measured on
    gate = edge_gate(model, vocab)
    side = {"source": config["checkpoint"], **side, "gate": gate, "training_gate": side.get("gate")}
    ctx = SimpleNamespace(preset=config["sizes_preset"], device=torch.device("cpu"), smoke=config["smoke"])
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
            "at": config["at"],
            "L_p": config["L_p"],
        }
    out = _measure_claims(model, vocab, config, ctx, side)
    if config.get("null_control") == "untrained_twin":
        _attach_null(out, config, ctx)
    if mamba2:  # the slow-state probe reads Mamba-1's per-channel Ā; a Mamba-2 head has one scalar decay
        return {"measurements": out, "probes": {}, "gate": gate, "at": config["at"], "L_p": config["L_p"]}
    # our probe (no paper claim): the slow-writing states at the first triple, against layer-matched random states
    from ..analysis.primacy import slow_state_probe
    from ..presets import experiment

    S = experiment("ch4.channels", config["sizes_preset"], smoke=config["smoke"])
    probes = {
        "slow_states": slow_state_probe(
            model,
            vocab,
            config["at"],
            S["n"],
            n_random=max(5, S["n_random"]),
            tau=S["tau"],
            p=S["p"],
            L_ident=S["L_ident"],
        )
    }
    return {"measurements": out, "probes": probes, "gate": gate, "at": config["at"], "L_p": config["L_p"]}


def _measure_claims(model, vocab, config: dict, ctx, side: dict) -> dict:
    """{claim id: the measurement record, or {"not_run": why}} of one model at the job's length: App. F's head
    claims on a Mamba-2 model, §4.1–§4.4's on a Mamba-1 one (Fig. 5b with the job's distractor pool)."""
    from ..claims import NotRun, get, measurement_record
    from ..models.mamba2 import Mamba2LMHeadModel
    from .ch4_model_checks import claim_inputs, claim_inputs_m2

    if isinstance(model, Mamba2LMHeadModel):  # App. F: the U, the long-term heads (Eq. 9), their ablation, at L_p
        inputs = claim_inputs_m2(
            model, vocab, config["sizes_preset"], "cpu", at=config["at"], ucurve_Ls=config["ucurve_Ls"]
        )
    else:
        inputs = claim_inputs(
            model,
            vocab,
            config["sizes_preset"],
            "cpu",
            at=config["at"],
            ucurve_Ls=config["ucurve_Ls"],
            distractor_pool=config["distractor_pool"],  # the paper's random tokens (checks_jobs)
        )
    out = {}
    for cid, args in inputs.items():
        try:
            out[cid] = measurement_record(get(cid).measure(*args, ctx=ctx, side=side))
        except NotRun as exc:
            out[cid] = {"not_run": str(exc)}
    return out


def _attach_null(out: dict, config: dict, ctx) -> None:
    """Each measured claim's null control, in place: the same measurements, at the same length and sizes, on the
    model's untrained twin (:func:`mamba_recall.analysis.primacy.untrained_twin`). A rule the twin passes cannot
    tell the trained model from one that has learned nothing (:class:`mamba_recall.claims.core.Control`)."""
    from ..analysis.primacy import untrained_twin
    from ..claims.ch4 import NULL_UNTRAINED

    twin, vocab, side = untrained_twin(config["model_name"], path=REPO_ROOT / config["checkpoint"])
    side = {"source": f"{config['checkpoint']} (untrained twin)", **side, "gate": {"passed": True}}
    null = _measure_claims(twin, vocab, config, ctx, side)
    for cid, rec in out.items():
        if "not_run" in rec:
            continue
        if "not_run" in null[cid]:
            raise ValueError(
                f"{config['model_name']}: {cid} measured on the trained model but not on its untrained twin "
                f"({null[cid]['not_run']}); a null control must be measured like the claim."
            )
        rec["control"] = {"kind": "null", "what": NULL_UNTRAINED, "measurement": null[cid]}


def write_checks_bundle(preset: str, *, store=None, smoke: bool = False, log=print):
    """``results/ch4_edge_checks_<preset>.json``: per recipe and claim the verdict over its seeds (table ``claims``)
    and the per-seed stored measurements (``data["measurements"]``, what the book re-judges)."""
    from ..results import save_bundle

    jobs = checks_jobs(preset, smoke, store)
    runs = finished_runs(jobs, store)
    if not runs:
        log(f"no finished jobs of {CHECKS} at preset {preset}; nothing to aggregate.")
        return None
    from ..analysis.primacy import EdgeFamily
    from ..claims.ch4 import check_family

    fam = EdgeFamily.from_runs(runs, preset, smoke=smoke)  # the family as the book will read it, from these runs
    rows = []
    for recipe in sorted({r["config"]["recipe_name"] for r in runs}):
        # as §4.7's table (claims.ch4.family_table) and the pages: the stored records, each with its null control
        checked = fam.seeds_of(recipe)[0]["measurements"]
        for v in (check_family(cid, fam, recipe, record=False) for cid in checked):
            rows.append(
                {
                    "recipe": recipe,
                    "claim_id": v.claim_id,
                    "status": v.status,
                    "ours": v.ours,
                    "reason": v.reason,
                    "seeds": (v.evidence or {}).get("seeds", 0),
                }
            )
    summary = runs_summary(runs)
    data = {
        "primary_recipe": primary_recipe(runs, _sizes(preset, smoke)),
        "edge_gate": EDGE_GATE,
        "primary_order": list(PRIMARY_ORDER),
        "runs": [
            {
                "recipe": r["config"]["recipe_name"],
                "seed": r["seed"],
                "model": r["config"]["model_name"],
                "key": r["key"],
                **r["result"],
            }
            for r in runs
        ],
        **{k: v for k, v in summary.items() if k != "runs"},  # (the list above is the runs; its length their count)
    }
    name = f"ch4_edge_checks_{preset}" + ("_smoke" if smoke else "")
    path = save_bundle(
        name,
        data,
        {"preset": preset, "experiment": CHECKS, "runner": CHECKS_RUNNER, "smoke": smoke},
        command=f"python -m mamba_recall.experiments.ch4_edge --preset {preset} --checks --allow-long",
        device="cpu",
        wall_seconds=summary.get("wall_seconds", 0.0),
        tables={"claims": pd.DataFrame(rows)},
        directory=smoke_bundle_dir() if smoke else bundle_directory(store),
    )
    log(f"wrote {path} ({len(runs)} models)")
    return path


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    """The command line (module docstring): the edge grid, or with ``--checks`` the checks grid, on the shared
    run-store flow (:func:`mamba_recall.runstore.grid_main`); ``--aggregate-only`` without ``--checks`` writes both
    bundles, edge then checks, under one provenance."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="cpu-hours", choices=["ci", "cpu-hours", "paper"])
    ap.add_argument("--recipes", nargs="*", default=None, help="only these recipes (default: all of the preset)")
    ap.add_argument(
        "--seeds",
        nargs="*",
        type=int,
        default=None,
        help="only these seeds (to run the seeds of a recipe in separate processes, each its own store)",
    )
    add_grid_args(
        ap,
        aggregate_only="write the bundles from the finished jobs (both, edge and checks, unless --checks: its one)",
    )
    ap.add_argument(
        "--checks",
        action="store_true",
        help="the claim checks of every finished model at its pressure length (after training)",
    )
    args = ap.parse_args(argv)
    default_store = Path("_build/smoke_runs") if args.smoke else None  # None: RUNS_DIR

    def checks(store):  # the checks of the finished models (all seeds), of --recipes only if given
        return [
            j
            for j in checks_jobs(args.preset, args.smoke, store)
            if not args.recipes or j["config"]["recipe_name"] in args.recipes
        ]

    checks_stage = GridStage(CHECKS_RUNNER, checks, write_checks_bundle, what=f"{CHECKS} at preset {args.preset}")
    if args.checks:
        first, then = checks_stage, ()
    else:
        edge = [
            j for j in jobs_for(args.preset, args.smoke, args.recipes) if args.seeds is None or j["seed"] in args.seeds
        ]
        first = GridStage(RUNNER, edge, write_bundle, estimate, f"{EXPERIMENT} at preset {args.preset}")
        then = (checks_stage,) if args.aggregate_only else ()  # training never starts the checks: its own command
    grid_main(
        args,
        first.runner,
        first.jobs,
        first.write,
        estimate=first.estimate,
        what=first.what,
        default_store=default_store,
        then=then,
    )


if __name__ == "__main__":
    main()
