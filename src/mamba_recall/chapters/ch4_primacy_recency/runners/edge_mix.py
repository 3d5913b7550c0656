r"""Chapter 4 runner: Table 1 of paper 004 on the edge family, three seeds.

    python -m mamba_recall.chapters.ch4_primacy_recency.runners.edge_mix --preset cpu-hours --allow-long [--jobs 2]   # fine-tune, measure
    python -m mamba_recall.chapters.ch4_primacy_recency.runners.edge_mix --preset cpu-hours --aggregate-only           # the bundle

Why: the page's first Table 1 analogue rests on one model (``s_mix``, one ``ci`` seed); a trained-model verdict
needs three. Here the edge family's primary recipe's evidence seeds (``chapters/ch4_primacy_recency/configs.py``, experiment
``ch4_edge_mix``, declared before any run: ``d4_zinit`` seeds 1, 3 and 5) are each fine-tuned on ``s_mix``'s
mixture of the recall task and the four synthetic long-context tasks (:mod:`mamba_recall.tasks.transfer`), then
measured as the page measures ``s_mix``: long-term channels identified on one recall prompt (Eqs. 3–4, τ = p = 0.7),
Ā = 0 on them in all layers at every step, against as many random channels (paper §4.2).

One run-store job per base seed: :func:`mamba_recall.chapters.ch4_primacy_recency.runners.train.train_recipe` warm-started from the
committed edge checkpoint (``init_from``, hash-checked), which writes ``results/checkpoints/ch4_edge_mix_<recipe>_
<preset>_seed<k>.pt`` (+ sidecar with its learning curve), then the claim's measurement (:func:`measure`). The
bundle ``results/ch4_edge_mix_<preset>.json`` has per seed the Table 1 rows (table ``transfer``), the model cards
(table ``models``) and each seed's stored measurement of ``004/Table1`` with its null control (``data["records"]``),
which the page judges with :func:`mamba_recall.claims.core.check_stored`.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from mamba_recall.experiment import experiment_named, runner_main
from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import checkpoint_path, edge_model_name
from mamba_recall.paths import REPO_ROOT
from mamba_recall.presets import experiment, seeds
from mamba_recall.runstore import finished_status, make_job, partial_status

from .job_configs import EdgeMixJob
from .edge_jobs import smoke_bundle_dir, step_seconds  # (write_bundle looks smoke_bundle_dir up here)
from mamba_recall.runners import runner_command

#: it fine-tunes the edge family's checkpoints, so it runs after the edge runner (:mod:`mamba_recall.runners`)
DEPENDS_ON = ("ch4_edge",)
EXPERIMENT = "ch4_edge_mix"
RUNNER = "mamba_recall.chapters.ch4_primacy_recency.runners.edge_mix:run_job"
CLAIM = "004/Table1"
COMMAND = runner_command("ch4_edge_mix") + " --preset {preset} --allow-long"


def model_name(recipe: str, preset: str, seed: int, smoke: bool = False) -> str:
    """``edge_mix_<recipe>_<preset>_seed<k>``: the fine-tuned twin of the edge model ``edge_<recipe>_<preset>_seed<k>``
    (``preset``: the base models' preset)."""
    return edge_model_name(EXPERIMENT, recipe, preset, seed, smoke)


def base_name(recipe: str, preset: str, seed: int) -> str:
    """The committed edge model a job fine-tunes (:func:`mamba_recall.chapters.ch4_primacy_recency.runners.edge.model_name`)."""
    from .edge import model_name as edge_name

    return edge_name(recipe, preset, seed)


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    """One job per declared base seed: the edge recipe's own config with the fine-tune's changes, warm-started from
    the committed edge checkpoint, and the measurement sizes."""
    S = experiment(EXPERIMENT, preset, smoke=smoke)
    recipes = experiment("ch4_edge", S["base_preset"])["recipes"]
    if S["base_recipe"] not in recipes:
        raise ValueError(f"{EXPERIMENT}: base recipe {S['base_recipe']!r} is not an edge recipe ({sorted(recipes)}).")
    jobs = []
    for seed in S["base_seeds"]:
        name = model_name(S["base_recipe"], S["base_preset"], seed, smoke)
        out = (
            Path("_build/smoke_checkpoints") / f"ch4_{name}.pt"
            if smoke
            else checkpoint_path(name).relative_to(REPO_ROOT)
        )
        recipe = {
            **recipes[S["base_recipe"]],
            **S["finetune"],
            "init_from": base_name(S["base_recipe"], S["base_preset"], seed),
            "seed": seeds.EDGE_MIX_OFFSET + seed,
        }
        config = EdgeMixJob(
            preset=preset,
            base_recipe=S["base_recipe"],
            model_name=name,
            checkpoint=str(out),
            recipe=recipe,
            measure=S["measure"],
            smoke=smoke,
        )
        jobs.append(make_job(EXPERIMENT, config, seed))
    return jobs


def measure(model, vocab, side: dict, sizes: dict, mix: dict, *, preset: str, smoke: bool = False) -> dict:
    """Table 1 on one model, as the page measures it: the long-term channels (Eqs. 3–4 on one L = ``L_ident``
    repeated-relation prompt, τ and p of ``sizes``), Ā = 0 on them in all layers at every step on ``sizes["n"]``
    held-out examples per task, against ``n_random`` random sets of the same count → the channel counts, the table's
    rows and the claim's stored measurement (with its null control), or ``{"not_run": why}``."""
    from mamba_recall.analysis import channels as ch
    from mamba_recall.chapters.ch4_primacy_recency.pipelines import primacy as A
    from mamba_recall.claims import NotRun, get, measurement_record

    stats = ch.channel_stats(model, A.identification_prompt(vocab, sizes["L_ident"]))
    chans = ch.identify(stats, sizes["tau"], sizes["p"])
    table = A.transfer_ablation(model, A.transfer_sets(vocab, mix, sizes["n"]), chans, n_random=sizes["n_random"])
    ctx = SimpleNamespace(preset=preset, device="cpu", smoke=smoke)
    try:
        rec = measurement_record(get(CLAIM).measure(table, ctx=ctx, side=side))
    except NotRun as exc:
        rec = {"not_run": str(exc)}
    return {
        "channels_per_layer": [len(c) for c in chans],
        "n_channels": stats.n_channels,
        "table": [] if table is None else table.to_dict("records"),
        "measurement": rec,
    }


def run_job(config: EdgeMixJob, seed: int) -> dict:
    """Fine-tune one edge model on the mixture and measure Table 1 on it (the run store's job function)."""
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import load_checkpoint
    from .edge import edge_gate
    from .train import train_recipe

    out = REPO_ROOT / config.checkpoint
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    cmd = COMMAND.format(preset=config.preset)
    train_recipe(config.recipe, config.model_name, out, command=cmd, log=lambda s: print(s, flush=True))
    model, vocab, side = load_checkpoint(out, model=config.model_name)  # hash-checked, as the book loads it
    # whether the model counts as evidence: the edge family's gate (binding at L = 2, ch4_edge.EDGE_GATE), as for
    # every edge model; the chapter's gate (L = 4 and 8) fails a model at its capacity edge by design
    gate = edge_gate(model, vocab)
    side = {"source": config.checkpoint, **side, "gate": gate, "training_gate": side.get("gate")}
    m = measure(model, vocab, side, config.measure, config.recipe["mix"], preset=config.preset, smoke=config.smoke)
    return {
        "checkpoint": config.checkpoint,
        "sha256": side.get("sha256"),
        "base": config.recipe["init_from"],
        "gate": gate,
        "training_gate": side["training_gate"],
        "learning_curve": side.get("learning_curve", []),
        **m,
        "seconds": round(time.perf_counter() - start, 1),
    }


def estimate(left: list[dict]) -> tuple[float, str]:
    """Seconds for the jobs left: a measured fine-tuning step on the mixture (:func:`~.ch4_edge_jobs.step_seconds`,
    one thread; every job shares the recipe's shapes) times the steps, plus about 10 % for the held-out checks and
    the measurement."""
    if not left:
        return 0.0, "no jobs left"
    per_step = step_seconds(left[0]["config"]["recipe"])
    total = sum(1.1 * per_step * job["config"]["recipe"]["steps"] for job in left)
    return total, f"{per_step:.2f} s per step measured on the mixture (median of 3, one thread), + 10 %"


def write_bundle(preset: str, *, store=None, smoke: bool = False, log=print, partial: bool = False):
    """``results/ch4_edge_mix_<preset>.json``: the Table 1 rows per seed (``transfer``), the model cards
    (``models``) and each seed's stored measurement (``data["records"]``: its seed, model, run key and stored
    result), written through the run store's one bundle writer (:func:`mamba_recall.runstore.save_grid_bundle`):
    ``data`` starts with the status of every run-store bundle (:func:`~mamba_recall.runstore.finished_status`), then
    ``records``. A grid with jobs left is written only with ``partial`` (the grid's ``--partial``), marked partial
    (:func:`~mamba_recall.runstore.partial_status`); a bundle of fewer finished jobs never replaces one of more
    (:class:`~mamba_recall.runstore.BundleNotReplaced`)."""
    runs, data = finished_status(jobs_for(preset, smoke), store, preset=preset, log=log)
    if not runs:
        return None
    command = COMMAND.format(preset=preset)
    data = partial_status(
        data, partial, what=f"{EXPERIMENT} at preset {preset}", command=command.removesuffix(" --allow-long"), log=log
    )
    if data is None:
        return None
    transfer = pd.DataFrame([{"seed": r["seed"], **row} for r in runs for row in r["result"]["table"]])
    models = pd.DataFrame(
        [
            {
                "seed": r["seed"],
                "model": r["config"]["model_name"],
                "base": r["result"]["base"],
                "long-term channels": sum(r["result"]["channels_per_layer"]),
                "per layer": str(r["result"]["channels_per_layer"]),
                **{k: v for k, v in (r["result"]["gate"] or {}).items() if k != "metrics"},
                **(r["result"]["gate"] or {}).get("metrics", {}),
                "seconds": r["result"]["seconds"],
            }
            for r in runs
        ]
    )
    data["records"] = [
        {"seed": r["seed"], "model": r["config"]["model_name"], "key": r["key"], **r["result"]} for r in runs
    ]
    config = {
        "preset": preset,
        "experiment": EXPERIMENT,
        "sizes": experiment(EXPERIMENT, preset, smoke=smoke),
        "runner": RUNNER,
        "smoke": smoke,
    }
    name = f"ch4_edge_mix_{preset}" + ("_smoke" if smoke else "")
    return experiment_named(EXPERIMENT).save_bundle(
        preset,
        data,
        config,
        {"transfer": transfer, "models": models},
        smoke=smoke,
        name=name,
        directory=smoke_bundle_dir() if smoke else None,  # else the results folder, or beside a scratch store
        log=log,
    )


main = runner_main(EXPERIMENT, "cpu-hours")


if __name__ == "__main__":
    raise SystemExit(main())
