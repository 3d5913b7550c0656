r"""Train the S-models of Chapter 4 (paper 004) on the serial-recall task and write checkpoints, as run-store jobs.

Run: the declared experiment ``ch4_train``, one job per S-model of the preset, one torch thread each (resumable; the
run store's options, ``--only``, ``--jobs``, ``--allow-long``, ``--aggregate-only``, ``--smoke``, ``--store``)::

    python -m mamba_recall grid ch4_train --preset ci --jobs 2                  # the four ci S-models
    python -m mamba_recall grid ch4_train --preset ci --only s_small            # one of them
    python -m mamba_recall grid ch4_train --preset paper --allow-long           # all five (a GPU)
    python -m mamba_recall grid ch4_train --preset ci --smoke                   # a few steps

This runner's ``main`` is that grid under its own command; its ``--models NAME ...`` (and ``--model NAME``) is the
grid's ``--only NAME ...``, the spelling the committed checkpoints' sidecars, the checkpoint reader's regenerate line
and a claim's "not run" text record. ``s_deep`` is in the ``paper`` grid only: its ``ci`` recipe (4 layers of
d_model = 32) stayed at 0.24 recall at L = 4 after 3,000 of its 6,000 steps, was stopped and is not committed, so
the ci grid is the four models the chapter reads (``--only s_deep`` at ci stops with one line listing them);
:func:`train_smodel` ``("s_deep", "ci")`` trains that recipe outside the run store.

Recipe (the chapter's; the paper trains nothing): multi-query recall examples (context of ``L`` triples, then ``Q = min(L, 4)``
query triples ``s r o .``, loss on every queried object), half repeated / half random relation,
``L ~ U{L_min .. L_max(step)}`` with a curriculum ``L_max(step)`` rising linearly from ``L_min+2`` to
``L_max`` over the first ``curriculum_frac`` of the steps. AdamW (β = 0.9, 0.95), linear warm-up then
cosine, weight decay 0.1 (none on A_log, D, biases, norms), gradient clipping 1.0; the training loop
is :func:`mamba_recall.train.train`.

Outputs: ``results/checkpoints/ch4_train_<model>_<preset>.pt`` — ``{"state_dict", "model_config", "vocab",
"train_config", "history"}`` with mamba_ssm parameter names — and a JSON sidecar
``ch4_train_<model>_<preset>.json`` with the training config, the file's sha256, the learning curve, the
convergence gate and provenance (an intermediate checkpoint is written every ``checkpoint_every`` steps), and
the bundle ``results/ch4_train_<preset>.json`` (table ``models``: each finished model's final gate). A job whose
checkpoint is gone or changed is run again (:func:`mamba_recall.runstore.output_gone`).

Convergence gate: recall averaged over positions ≥ 0.95 at ``L = 4`` and ≥ 0.80 at
``L = 8`` (random relation), measured on fixed held-out contexts.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from mamba_recall.analysis.interventions import labelled_scores
from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import (
    build_model,
    checkpoint_path,
    load_checkpoint,
    read_smodel,
)
from mamba_recall.experiment import experiment_named, grid_command
from mamba_recall.presets import experiment, seeds
from mamba_recall.results import CHECKPOINT_DIR, CheckpointMissing, command_provenance, read_checkpoint, save_checkpoint
from mamba_recall.runstore import as_only
from mamba_recall.tasks.serial_recall import RecallVocab, multiquery_batch, recall_contexts, recall_prompts
from mamba_recall.tasks.transfer import transfer_batch, transfer_sets
from mamba_recall.train import Recipe, train
from mamba_recall.runners import runner_command

from .job_configs import SModelJob

MODELS = ("s_small", "s_small_seed1", "s_deep", "s_mix", "s_m2")
GATE = {"L4_random": 0.95, "L8_random": 0.80}

__all__ = [
    "CHECKPOINT_DIR",
    "GATE",
    "MODELS",
    "build_model",
    "checkpoint_path",
    "curriculum_L",
    "gate_metrics",
    "load_checkpoint",
    "main",
    "make_batch_fn",
    "train_smodel",
]


def curriculum_L(step: int, steps: int, L_min: int, L_max: int, frac: float, rng) -> int:
    """L for a training step: U{L_min .. cap(step)}, cap rising linearly to L_max over ``frac`` of training."""
    ramp = max(1, int(frac * steps))
    cap = L_max if step >= ramp else int(round(min(L_min + 2, L_max) + (L_max - min(L_min + 2, L_max)) * step / ramp))
    return int(rng.randint(L_min, cap + 1))


def make_batch_fn(cfg: dict, vocab: RecallVocab, on_step=None):
    """``make_batch(step)`` for :func:`train`: deterministic in ``step`` (seeded by ``seed·10⁶ + step``).

    With a ``"mix"`` entry in the recipe (the ``s_mix`` model of the Table 1 analogue), a step is a recall batch
    with probability ``mix["p_recall"]`` and otherwise a batch of one transfer task drawn uniformly
    from ``mix["tasks"]`` (sizes ``mix["sizes"]``, see :func:`mamba_recall.tasks.transfer.transfer_batch`)."""
    steps = cfg["steps"]
    mix = cfg.get("mix")

    def make_batch(step):
        if on_step is not None:
            on_step(step)
        rng = np.random.RandomState(cfg["seed"] * 1_000_000 + step)
        if mix is not None and rng.rand() >= mix["p_recall"]:
            task = mix["tasks"][rng.randint(len(mix["tasks"]))]
            return transfer_batch(task, cfg["batch"], vocab=vocab, seed=int(rng.randint(2**31 - 1)), **mix["sizes"])
        L = curriculum_L(step, steps, cfg["L_min"], cfg["L_max"], cfg["curriculum_frac"], rng)
        # Filler gaps (recipes with "gap_max"): 1..gap_max filler tokens + SEP between context and queries in half
        # of the steps from step gap_from·steps on (the recall binding is learned first, without gaps: with gaps
        # from step 0 a pilot never left chance level), drawn before the batch seed (recipes without gaps keep
        # their stream).
        gaps = cfg.get("gap_max") and step >= cfg.get("gap_from", 0.0) * steps
        n_gap = int(rng.randint(1, cfg["gap_max"] + 1)) * int(rng.rand() < 0.5) if gaps else 0
        return multiquery_batch(
            L, cfg["batch"], n_queries=cfg["n_queries"], vocab=vocab, seed=int(rng.randint(2**31 - 1)), n_gap=n_gap
        )

    return make_batch


@torch.no_grad()
def gate_metrics(model, vocab: RecallVocab, n: int = 64, seed: int = 12345, device="cpu", Ls=(4, 8)) -> dict:
    """Recall averaged over positions at each L of ``Ls`` (default 4 and 8), both variants, on fixed held-out
    contexts: ``{"L<L>_<variant>": recall}``."""
    was = model.training
    model.eval()
    out = {}
    for L in Ls:
        for variant in ("random", "repeated"):
            ctx = recall_contexts(L, n, variant, vocab=vocab, seed=seed + L)
            correct = 0
            for k in range(1, L + 1):
                toks, ans = recall_prompts(ctx, k)
                pred = model(toks.to(device))[:, -1].argmax(-1).cpu()
                correct += int((pred == ans).sum())
            out[f"L{L}_{variant}"] = correct / (n * L)
    model.train(was)
    return out


def gate_passed(metrics: dict) -> bool:
    return all(metrics[k] >= v for k, v in GATE.items())


TRANSFER_EVAL_SEED = seeds.TRANSFER_TRAIN_EVAL


def transfer_metrics(
    model, vocab: RecallVocab, mix: dict, n: int = 128, seed: int = TRANSFER_EVAL_SEED, device="cpu"
) -> dict:
    """Held-out accuracy of every transfer task of the recipe's mixture (fixed contexts, never trained on)."""
    sets = transfer_sets(vocab, mix, n, seed, seed_step=1)
    return {task: float(s.mean()) for task, s in labelled_scores(model, sets, device=device).items()}


def _held_out(model, vocab, cfg, device):
    """Gate metrics, plus the transfer tasks' accuracies for a mixture recipe."""
    metrics = gate_metrics(model, vocab, device=device)
    if cfg.get("mix"):
        metrics.update(
            {f"transfer_{k}": v for k, v in transfer_metrics(model, vocab, cfg["mix"], device=device).items()}
        )
    return metrics


def _warm_start(model, cfg, path: Path):
    """Load the weights of the S-model ``cfg["init_from"]`` from ``path`` (its checkpoint at the same preset;
    hash-checked, same shapes)."""
    name = cfg["init_from"]
    blob, _ = read_smodel(path, name)
    if blob["model_config"] != cfg["model"] or blob["vocab"] != cfg["vocab"]:
        raise ValueError(
            f"init_from={name!r}: its model/vocabulary config differs from this recipe's; "
            f"make the recipe's 'model' and 'vocab' equal to {name}'s."
        )
    model.load_state_dict(blob["state_dict"])


def _save(path: Path, model, cfg, vocab, history, gate, name, command, device, wall, final, stopped_at=None):
    blob = {
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "model_config": cfg["model"],
        "vocab": cfg["vocab"],
        "train_config": cfg,
        "history": history,
    }
    sidecar = {
        "name": name,
        "final": final,
        "stopped_at": stopped_at,
        "train_config": cfg,
        "gate": {
            "criterion": "recall averaged over positions >= 0.95 at L=4 and >= 0.80 at L=8 "
            "(random relation), 64 held-out contexts per L",
            "thresholds": GATE,
            "metrics": gate,
            "passed": gate_passed(gate) if gate else False,
        },
        "learning_curve": [h for h in history if "gate" in h],
    }
    save_checkpoint(path, blob, sidecar, command=command, device=device, wall_seconds=wall)


class _Stop(Exception):
    """Raised from ``make_batch`` to end a run at ``stop_at`` (the schedule stays that of ``steps``)."""


def train_smodel(
    model_name: str,
    preset: str = "ci",
    *,
    steps: int | None = None,
    out: Path | None = None,
    device="cpu",
    backend="auto",
    log=print,
    num_threads: int | None = 1,
    progress=False,
    stop_at: int | None = None,
):
    """Train one S-model with the recipe ``ch4_train_<model_name>`` of ``preset``; returns (model, sidecar path).

    ``stop_at``: end after that many steps (checkpoint written there), keeping the learning-rate
    schedule of the full ``steps`` — the weights equal the intermediate checkpoint of the full run
    at that step (deterministic on one thread), so a run stopped for lack of time is regenerable."""
    if model_name not in MODELS:
        raise ValueError(f"unknown S-model {model_name!r}; choose one of {', '.join(MODELS)}.")
    cfg = experiment(f"ch4_train_{model_name}", preset)
    if steps is not None:
        cfg["steps"] = int(steps)
        cfg["warmup_steps"] = min(cfg["warmup_steps"], max(0, cfg["steps"] // 10))
        cfg["checkpoint_every"] = min(cfg["checkpoint_every"], cfg["steps"])
    command = f"train_smodel({model_name!r}, preset={preset!r}, steps={cfg['steps']})"  # the call that remakes it
    # the preset is in every checkpoint's name (ch4_train_<model>_<preset>.pt), so a paper run never overwrites ci's
    default = checkpoint_path(model_name, preset)
    return train_recipe(
        cfg,
        model_name,
        Path(out) if out is not None else default,
        command=command,
        device=device,
        backend=backend,
        log=log,
        num_threads=num_threads,
        progress=progress,
        stop_at=stop_at,
        init_path=checkpoint_path(cfg["init_from"], preset) if cfg.get("init_from") else None,
    )


def train_recipe(
    cfg: dict,
    name: str,
    out: Path,
    *,
    command: str,
    device="cpu",
    backend="auto",
    log=print,
    num_threads: int | None = 1,
    progress=False,
    stop_at: int | None = None,
    init_path: Path | None = None,
):
    """Train one S-model with the fully resolved recipe ``cfg`` (the keys of ``chapters/ch4_primacy_recency/configs.py``'s recipes), write
    its checkpoint to ``out`` (and intermediate ones every ``checkpoint_every`` steps); returns
    (model, sidecar path). ``name`` labels the log and the sidecar; ``command`` is recorded as the command that
    regenerates it. ``init_path``: the checkpoint of ``cfg["init_from"]`` (a recipe that warm-starts); default
    :func:`checkpoint_path` of that name (an edge-family name carries its preset; an S-model's is read at ci, so
    :func:`train_smodel` and the run-store jobs give the recipe's own preset's)."""
    if cfg.get("init_from") and init_path is None:
        init_path = checkpoint_path(cfg["init_from"])
    threads_before = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)  # the held-out evaluations too, not only the loop
    try:
        return _train_recipe(
            dict(cfg), name, Path(out), command, device, backend, log, num_threads, progress, stop_at, init_path
        )
    finally:
        torch.set_num_threads(threads_before)


def _gate_point(model, vocab, cfg, device, history: list, start: float, step: int) -> dict:
    """The held-out gate metrics at ``step``, appended to ``history`` with the seconds since ``start`` → the gate."""
    gate = _held_out(model, vocab, cfg, device)
    history.append({"step": step, "gate": gate, "seconds": round(time.perf_counter() - start, 1)})
    return gate


def _recipe_of(cfg) -> Recipe:
    """The optimiser recipe of a model config (cosine schedule with warmup)."""
    return Recipe(
        lr=cfg["lr"],
        weight_decay=cfg["weight_decay"],
        betas=cfg["betas"],
        schedule="cosine",
        warmup_steps=cfg["warmup_steps"],
        grad_clip=cfg["grad_clip"],
    )


def _loss_history(result) -> list[dict]:
    """The training losses as history entries: the mean over each block of 100 steps."""
    losses = [h["loss"] for h in result.history]
    return [{"step": i + 1, "loss_mean100": float(np.mean(losses[i : i + 100]))} for i in range(0, len(losses), 100)]


def _train_recipe(cfg, model_name, out, command, device, backend, log, num_threads, progress, stop_at, init_path):
    vocab = RecallVocab(**cfg["vocab"])
    torch.manual_seed(cfg["seed"])
    model = build_model(cfg["model"], vocab, backend=backend)
    if cfg.get("init_from"):
        _warm_start(model, cfg, init_path)
    model.to(device)
    history: list[dict] = []
    start = time.perf_counter()
    last_gate: dict = {}

    if stop_at is not None and not 0 < stop_at <= cfg["steps"]:
        raise ValueError(f"stop_at must be in 1..steps={cfg['steps']}, got {stop_at!r}.")

    def save(final: bool, **extra):  # the checkpoint and its sidecar, with the history so far
        seconds = time.perf_counter() - start
        _save(out, model, cfg, vocab, history, last_gate, model_name, command, device, seconds, final=final, **extra)

    def on_step(step):  # checkpoints and held-out gate metrics during training (train() has no callbacks)
        nonlocal last_gate
        if stop_at is not None and step == stop_at and stop_at < cfg["steps"]:
            last_gate = _gate_point(model, vocab, cfg, device, history, start, step)
            log(f"[{model_name}] stopped at step {step}: gate {json.dumps(last_gate)}")
            save(True, stopped_at=step)
            raise _Stop
        if step > 0 and step % cfg["checkpoint_every"] == 0:
            last_gate = _gate_point(model, vocab, cfg, device, history, start, step)
            log(f"[{model_name}] step {step}: gate {json.dumps(last_gate)} ({time.perf_counter() - start:.0f} s)")
            save(False)

    try:
        result = train(
            model,
            make_batch_fn(cfg, vocab, on_step),
            steps=cfg["steps"],
            recipe=_recipe_of(cfg),
            seed=cfg["seed"],
            device=device,
            progress=progress,
            desc=model_name,
            num_threads=num_threads,
        )
    except _Stop:
        model.eval()
        return model, out.with_suffix(".json")
    history.extend(_loss_history(result))
    last_gate = _gate_point(model, vocab, cfg, device, history, start, cfg["steps"])
    log(f"[{model_name}] done: gate {json.dumps(last_gate)} passed={gate_passed(last_gate)}")
    save(True)
    return model, out.with_suffix(".json")


# ------------------------------------------------------------------------------------------------------ run store
#
# Every preset through the run store (experiment ``ch4_train``: ``results/runs/ch4_train/``): one job per S-model,
# its config the model's name, the preset and the resolved recipe, its seed the recipe's. A recipe that warm-starts
# (``init_from``: ``s_mix`` from ``s_small``) runs in a second stage, after the models it starts from. The bundle
# ``results/ch4_train_<preset>.json`` lists every finished model with its final gate (table ``models``).

EXPERIMENT = "ch4_train"
RUNNER = "mamba_recall.chapters.ch4_primacy_recency.runners.train:run_job"
#: the models of a preset's grid: at ``ci`` the four the chapter reads (``s_deep``'s CPU recipe stayed at 0.24 recall
#: at L = 4 after half its steps and is not committed: it is in no ci grid, :func:`train_smodel` trains it), at
#: ``paper`` all five
DEFAULT_MODELS = {"ci": ("s_small", "s_small_seed1", "s_mix", "s_m2"), "paper": MODELS}
#: presets whose jobs train on a GPU where the process running them has one
GPU_PRESETS = ("paper",)


def model_file(name: str, preset: str, smoke: bool = False) -> Path:
    """The checkpoint a job writes: :func:`checkpoint_path` (``results/checkpoints/ch4_train_<model>_<preset>.pt``), or
    for a smoke run ``_build/smoke/results/checkpoints/ch4_train_<model>_<preset>_smoke.pt`` (never under results/:
    where the checkpoint writer puts a smoke file, :func:`mamba_recall.results.written_path`)."""
    from mamba_recall.results import written_path

    path = checkpoint_path(name, preset)
    return written_path(path.with_name(f"{path.stem}_smoke.pt"), smoke=True) if smoke else path


def regenerate_command(preset: str, name: str) -> str:
    """The command a job's checkpoint records as the one that remakes it: the grid's
    (:meth:`mamba_recall.experiment.Experiment.command`), picking its model."""
    return f"{experiment_named(EXPERIMENT).command(preset)} --only {name}"


def jobs_for(preset: str, models=None, smoke: bool = False) -> list[dict]:
    """One job per S-model of ``models`` (default :data:`DEFAULT_MODELS` of the preset)."""
    from mamba_recall.runstore import make_job

    if preset not in DEFAULT_MODELS:
        raise ValueError(f"the S-models train at {', '.join(DEFAULT_MODELS)}, not {preset!r}.")
    jobs = []
    for name in models or DEFAULT_MODELS[preset]:
        recipe = experiment(f"ch4_train_{name}", preset, smoke=smoke)
        device = "auto" if preset in GPU_PRESETS else None
        config = SModelJob(model=name, preset=preset, smoke=smoke, recipe=recipe, device=device)
        jobs.append(make_job(EXPERIMENT, config, recipe["seed"]))
    return jobs


def run_job(config: SModelJob, seed: int) -> dict:
    """Train one S-model (:func:`train_recipe`, one thread on a CPU) and write its checkpoint (and intermediate ones);
    the bundle's row: its final gate, whether it passed, steps, seconds, the checkpoint and its sha256."""
    from mamba_recall.runstore import job_device, output_record

    device = job_device(config)
    name, preset, smoke, recipe = config.model, config.preset, config.smoke, config.recipe
    out = model_file(name, preset, smoke)
    init = model_file(recipe["init_from"], preset, smoke) if recipe.get("init_from") else None
    t0 = time.perf_counter()
    command = regenerate_command(preset, name)
    _, sidecar = train_recipe(
        recipe,
        name,
        out,
        command=command,
        device=device,
        log=lambda msg: print(msg, file=sys.stderr, flush=True),
        num_threads=1 if device == "cpu" else None,
        init_path=init,
    )
    gate = read_checkpoint(sidecar.with_suffix(".pt"), regenerate=command)[1]["gate"]  # the pair just written, checked
    return {
        "model": name,
        "seed": seed,
        "steps": recipe["steps"],
        **{k: float(v) for k, v in gate["metrics"].items()},
        "passed": bool(gate["passed"]),
        "seconds": round(time.perf_counter() - t0, 1),
        **output_record(out),  # checkpoint and sha256: a job whose checkpoint is gone is run again
    }


def write_bundle(preset: str, *, store=None, smoke: bool = False, log=print):
    """Aggregate the finished S-model jobs of ``preset``'s grid (:data:`DEFAULT_MODELS`) into
    ``results/ch4_train_<preset>.json``: the one layout (``runs``, ``cells``), then table ``models``, one row per
    model."""
    import pandas as pd

    from mamba_recall.runstore import finished_status

    jobs = jobs_for(preset, None, smoke)
    runs, data = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    order = {name: i for i, name in enumerate(MODELS)}
    runs = sorted(runs, key=lambda r: order[r["config"]["model"]])
    table = pd.DataFrame([r["result"] for r in runs])
    data["gate"] = {"thresholds": GATE, "criterion": "recall averaged over positions at L = 4 and 8, random relation"}
    config = {"preset": preset, "smoke": smoke, "recipes": {r["config"]["model"]: r["config"]["recipe"] for r in runs}}
    return experiment_named(EXPERIMENT).save_bundle(preset, data, config, {"models": table}, smoke=smoke, log=log)


def recorded_estimate(left: list[dict]) -> tuple[float, str]:
    """Each model at the seconds its committed checkpoint's sidecar records (not measured here; the pair read by
    :func:`mamba_recall.results.read_checkpoint`), none if the checkpoint or its recorded time is absent; a pair that
    does not check out raises the reader's ``BundleError`` (naming the command that remakes it), not a guess of 0."""
    total, missing = 0.0, 0
    for job in left:
        c = job["config"]
        if c["smoke"]:
            continue  # a handful of steps
        try:
            _, side = read_checkpoint(
                checkpoint_path(c["model"], c["preset"]), regenerate=regenerate_command(c["preset"], c["model"])
            )
        except CheckpointMissing:
            missing += 1
            continue
        seconds = (side.get("provenance") or {}).get("wall_seconds")
        if seconds is None:
            missing += 1
        else:
            total += float(seconds)
    basis = "the seconds each committed checkpoint's sidecar records" + (
        f"; {missing} of {len(left)} without one, counted as 0" if missing else ""
    )
    return total, basis


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None) -> int:
    """``python -m mamba_recall grid ch4_train --preset P`` under this runner's command
    (:func:`mamba_recall.experiment.grid_command`: the run store's options, the same jobs, stages and bundle).
    ``--models NAME ...`` and ``--model NAME``, as committed sidecars and texts record them, are the grid's ``--only``."""
    argv = as_only(argv, "--models", "--model")  # the spellings the committed sidecars and texts print
    return grid_command(argv, name=EXPERIMENT, prog=runner_command(EXPERIMENT), default_preset="ci")


if __name__ == "__main__":
    raise SystemExit(main())
