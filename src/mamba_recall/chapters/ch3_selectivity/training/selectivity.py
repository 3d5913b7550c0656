"""Chapter 3 (paper 003, selectivity): the models its runners train, by name, the checkpoints they save, and the
recipe every run shares (App. D). The runners (:mod:`mamba_recall.chapters.ch3_selectivity.runners.keep_nth`,
:mod:`mamba_recall.chapters.ch3_selectivity.runners.mqar_train`, :mod:`mamba_recall.chapters.ch3_selectivity.runners.induction`) train with these,
and the book's probes of the trained models (:mod:`mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth`) rebuild and load them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import torch

from mamba_recall import results
from mamba_recall.models.s6 import MixerLM
from mamba_recall.models.transformer import TinyTransformer
from mamba_recall.presets import seeds
from mamba_recall.train import Recipe, Stopping, train
from mamba_recall.runners import runner_command

from .job_configs import InductionRun, KeepRun, MqarRun

#: a trained run's typed config (:mod:`.job_configs`)
Run = TypeVar("Run", KeepRun, MqarRun, InductionRun)

CHECKPOINT_DIR = results.CHECKPOINT_DIR
#: the presets of the Chapter 3 runners, every one through the run store (one job per configuration and seed,
#: ``results/runs/<experiment>/``): ``ci``'s few models too, so that a bundle has one format at every preset
STORE_PRESETS = ("ci", "cpu-hours", "paper")


def regenerate_command(preset: str) -> str:
    """The command that makes the KEEP n-TH checkpoints of ``preset`` (``--allow-long`` beyond ``ci``)."""
    return f"{runner_command('ch3_keep_nth')} --preset {preset}" + ("" if preset == "ci" else " --allow-long")


REGENERATE = regenerate_command("ci")
#: the store presets sized for a GPU: their jobs carry ``"device": "auto"`` in their config, resolved in the process
#: that runs the job (:func:`mamba_recall.runstore.job_device`: a GPU when that process sees one, e.g. one Ray
#: assigned it). ``cpu-hours`` jobs train on the
#: CPU (their committed results are CPU runs, and a resumed grid must not mix devices).
GPU_PRESETS = ("paper",)


def job_config(config: Run, preset: str) -> Run:
    """A run-store job's config at ``preset``: ``config``, with ``device="auto"`` at a :data:`GPU_PRESETS` preset
    (cpu-hours configs, hence their job keys, are unchanged)."""
    return replace(config, device="auto") if preset in GPU_PRESETS else config


def build_model(
    kind: str, *, V: int, d: int, N: int, T: int, n_classes=None, backend="auto", transformer_d: int = 16, **kw
):
    """KEEP/MQAR/IH models by name: s6, s6+pe, s4d, s4d+pe, s6_dT, transformer (1 layer, learned PE)."""
    if kind == "transformer":
        return TinyTransformer(V, d_model=transformer_d, n_layer=1, n_head=2, max_len=T, positional="learned")
    mixer, _, pe = kind.partition("+")
    return MixerLM(V, d, N, mixer=mixer, pe=pe == "pe", n_classes=n_classes, backend=backend, **kw)


def keep_checkpoint_name(preset: str, T: int | None = None, seed: int | None = None) -> str:
    """The KEEP n-TH Mamba+PE model's checkpoint (d = 32, N = 8), at every preset the one convention
    (:func:`mamba_recall.results.checkpoint_file`): ``ch3_keep_nth_s6pe_<preset>_T<T>_seed<s>``; without ``T`` and
    ``seed``, the stem they extend."""
    return results.checkpoint_file("ch3_keep_nth", preset, model="s6pe", T=T, seed=seed).stem


def save_checkpoint(model: torch.nn.Module, name: str, config: dict, command: str = REGENERATE) -> Path:
    """results/checkpoints/<name>.pt (the state dict) plus <name>.json (config, sha256, provenance, ``command``)."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return results.save_checkpoint(
        CHECKPOINT_DIR / f"{name}.pt",
        state,
        {"config": config},
        command=command,
        device=next(model.parameters()).device,
    )


def load_checkpoint(name: str, model_factory):
    """Load results/checkpoints/<name>.pt after checking its hash against the sidecar
    (:func:`~mamba_recall.results.model_from_checkpoint`); returns (model, config)."""
    model, meta = results.model_from_checkpoint(
        CHECKPOINT_DIR / f"{name}.pt", lambda meta: model_factory(meta["config"]), regenerate=REGENERATE
    )
    return model, meta["config"]


def recipe_fields(cfg: dict, data_key: int, *, lr: float | None = None) -> dict:
    """The recipe and data seeds every Chapter 3 run shares (paper 003, App. D: Adam without weight decay, cosine lr
    to 0, early stop at 100 % held-out accuracy evaluated every 100 steps), the second half of a run's resolved
    config: ``steps``, ``batch``, ``lr`` (``cfg["lr"]`` unless ``lr`` is given), the held-out set of
    ``eval_sequences`` drawn with seed ``10⁶ + data_key``, the test set of ``test_sequences`` with ``2·10⁶ +
    data_key`` (``data_key``: T for KEEP n-TH, κ for MQAR, |V| for INDUCTION HEADS) and the training batch of step
    s with ``10⁷·(seed + 1) + s`` (:func:`train_recipe`)."""
    return {
        "steps": cfg["steps"],
        "batch": cfg["batch"],
        "lr": cfg["lr"] if lr is None else lr,
        "weight_decay": 0.0,
        "schedule": "cosine",
        "eval_every": 100,
        "target_accuracy": 1.0,
        "eval_sequences": cfg["eval_sequences"],
        "eval_seed": 1_000_000 + data_key,
        "test_sequences": cfg["test_sequences"],
        "test_seed": 2_000_000 + data_key,
        "train_seed": "10_000_000 * (seed + 1) + step",
    }


def train_recipe_members(models, sample, c: Run, seeds_: list[int], eval_batch, *, steps=None, device="cpu", **kw):
    """:func:`train_recipe` for several models of one shape at once, one per seed of ``seeds_`` (built alike, each
    after ``torch.manual_seed`` of its seed), trained as one :class:`~mamba_recall.models.mixer_ensemble.MixerEnsemble`:
    member e draws the training batch of step s that its model would draw alone, ``sample(c.batch,
    10⁷·(seeds_[e] + 1) + s)``, and stops alone (``Stopping.freeze_reached``: at the first evaluation at which it
    reaches the target), so each member trains as :func:`train_recipe` trains its model, up to floating-point
    rounding. Adam without weight decay only (the chapter's recipe: a member-axis model decays every parameter).
    Returns (TrainResult of the ensemble, the members as models: ``res.member(e)`` is member e's result)."""
    from mamba_recall.models.mixer_ensemble import MixerEnsemble

    if len(models) != len(seeds_) or not seeds_:
        raise ValueError(f"train_recipe_members needs one model per seed, got {len(models)} models for {seeds_}.")
    if c.weight_decay:
        raise ValueError(
            f"train_recipe_members trains without weight decay (the Chapter 3 recipe), got weight_decay="
            f"{c.weight_decay}; train such models one at a time with train_recipe."
        )
    ens = MixerEnsemble.from_members(models)
    alone = [_batches(sample, c, s) for s in seeds_]

    def batch(step):
        drawn = [draw(step) for draw in alone]
        return torch.stack([x for x, _ in drawn]), torch.stack([y for _, y in drawn])

    res = train(
        ens, batch, eval_batch=eval_batch, per_member=True, seed=seeds_[0], device=device,
        **_recipe_args(c, steps, freeze_reached=True), **kw,
    )  # fmt: skip
    return res, [ens.member(e) for e in range(len(seeds_))]


def _batches(sample, c: Run, seed: int):
    """``step → sample(c.batch, 10⁷·(seed + 1) + step)``: the training batches of a run of ``seed``."""
    return lambda step: sample(c.batch, seeds.CH3_TRAIN_BASE * (seed + 1) + step)


def _recipe_args(c: Run, steps: int | None, **stop) -> dict:
    """:func:`~mamba_recall.train.train`'s budget, recipe and stopping for resolved config ``c`` (``steps`` overrides
    ``c.steps``; ``stop`` adds to the :class:`~mamba_recall.train.Stopping`)."""
    return dict(
        steps=steps or c.steps,
        recipe=Recipe.from_preset({"lr": c.lr, "weight_decay": c.weight_decay, "schedule": c.schedule}),
        stop=Stopping(eval_every=c.eval_every, target_accuracy=c.target_accuracy, **stop),
        progress=False,
    )


def train_recipe(model, sample, c: Run, seed: int, eval_batch, *, steps: int | None = None, device="cpu", **kw):
    """:func:`~mamba_recall.train.train` of ``model`` with the recipe of resolved config ``c``
    (:func:`recipe_fields`): ``sample(n, data_seed) -> (ids, labels)`` draws the training batch of step s as
    ``sample(c.batch, 10⁷·(seed + 1) + s)``; held-out ``eval_batch``; ``steps`` overrides ``c["steps"]``
    (timing); ``kw`` goes to ``train`` (e.g. ``desc``). Returns the TrainResult."""
    return train(
        model,
        _batches(sample, c, seed),
        eval_batch=eval_batch,
        seed=seed,
        device=device,
        **_recipe_args(c, steps),
        **kw,
    )
