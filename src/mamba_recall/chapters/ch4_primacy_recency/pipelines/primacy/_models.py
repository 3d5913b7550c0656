"""The S-models of Chapter 4: their checkpoints (the committed ones, or a reader's named by
``MAMBA_RECALL_CH4_CHECKPOINT``), the training sidecar's learning curve, gate and model card, the untrained twin
(the null control) and the evaluation contexts every probe draws (:func:`contexts`)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import torch

from mamba_recall.models.mamba import MambaLMHeadModel
from mamba_recall.presets import seeds
from mamba_recall.results import CHECKPOINT_DIR, checkpoint_file, model_from_checkpoint, read_checkpoint
from mamba_recall.tasks.serial_recall import RecallVocab, recall_contexts
from mamba_recall.analysis import interventions as iv
from mamba_recall.runners import runner_command

ENV_CHECKPOINT = "MAMBA_RECALL_CH4_CHECKPOINT"
ENV_VOCAB = "MAMBA_RECALL_CH4_VOCAB"
EVAL_SEED = seeds.PRIMACY_EVAL


# --------------------------------------------------------------------- S-model checkpoints


def checkpoint_path(model: str, preset: str = "ci") -> Path:
    """Where the S-model ``model`` is kept, named by the one convention (:func:`mamba_recall.results.checkpoint_file`):
    a recipe of :mod:`mamba_recall.chapters.ch4_primacy_recency.runners.train` (``s_small``) is experiment
    ``ch4_train_<model>`` at ``preset``, ``results/checkpoints/ch4_train_s_small_ci.pt``; an edge-family model is
    named with its preset and seed already (``edge_<recipe>_<preset>_seed<k>`` of
    :mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge`: ``ch4_edge_<recipe>_<preset>_seed<k>.pt``, the
    same convention, written into those runs' job configs)."""
    if not model or "/" in model or model.startswith("."):
        raise ValueError(f"S-model name {model!r} must be a plain name such as 's_small'.")
    if model.startswith("edge_"):
        return CHECKPOINT_DIR / f"ch4_{model}.pt"
    return checkpoint_file(f"ch4_train_{model}", preset)


def edge_model_name(experiment: str, recipe: str, preset: str, seed: int, smoke: bool = False) -> str:
    """The name of an edge-family model (``ch4_edge``'s ``edge_<recipe>_<preset>_seed<k>``, ``ch4_edge_mix``'s
    ``edge_mix_…``): its checkpoint's name by the one convention (:func:`mamba_recall.results.checkpoint_file`)
    without the chapter's ``ch4_``, so that :func:`checkpoint_path` of it is that checkpoint; ``_smoke`` appended for
    a smoke run, whose checkpoint is not kept. These names are in the edge jobs' configs, hence in their keys."""
    stem = checkpoint_file(experiment, preset, model=recipe, seed=seed).stem
    return stem.removeprefix("ch4_") + ("_smoke" if smoke else "")


def build_model(model_config: dict, vocab: RecallVocab, backend="auto", device=None) -> MambaLMHeadModel:
    """A Mamba-1 LM, or a Mamba-2 (SSD) LM if ``model_config["arch"] == "mamba2"`` (the ``s_m2`` model)."""
    cfg = dict(model_config)
    if cfg.pop("arch", "mamba1") == "mamba2":
        from mamba_recall.models.mamba2 import Mamba2LMHeadModel

        return Mamba2LMHeadModel(
            cfg.pop("d_model"), cfg.pop("n_layer"), vocab.size, backend=backend, device=device, **cfg
        )
    return MambaLMHeadModel(cfg.pop("d_model"), cfg.pop("n_layer"), vocab.size, backend=backend, device=device, **cfg)


def regenerate_command(model: str) -> str:
    """The command that re-makes the committed S-model ``model``."""
    if model.startswith("edge_"):
        preset = "cpu-hours" if "_cpu-hours_" in model else "paper" if "_paper_" in model else "ci"
        return f"{runner_command('ch4_edge')} --preset {preset} --allow-long"
    return f"{runner_command('ch4_train')} --model {model} --preset ci"


def read_smodel(path: Path, model: str) -> tuple[dict, dict]:
    """(payload, sidecar) of an S-model checkpoint: the pair checked by the shared reader
    (:func:`~mamba_recall.results.read_checkpoint`; errors name the command that regenerates ``model``), its payload
    the S-model's own (``state_dict`` with the ``model_config`` and ``vocab`` that build it, plus ``train_config`` and
    ``history``), not a bare state dict; :func:`load_checkpoint` and :func:`untrained_twin` build the model from the
    sidecar's ``train_config`` (:func:`~mamba_recall.results.model_from_checkpoint`), and the warm start of :mod:`~mamba_recall.chapters.ch4_primacy_recency.runners.train` compares."""
    blob, sidecar = read_checkpoint(path, regenerate=regenerate_command(model))
    for key in ("state_dict", "model_config", "vocab"):
        if key not in blob:
            raise ValueError(f"{path} is not a Chapter 4 checkpoint: key {key!r} is missing.")
    return blob, sidecar


def _architecture(side: dict, path: Path, model: str) -> tuple[dict, RecallVocab]:
    """(model config, vocabulary) of the S-model whose training sidecar is ``side``: its ``train_config``'s ``model``
    and ``vocab`` (the trainer writes the same two into the ``.pt`` beside the weights). ValueError naming the command
    that regenerates ``model`` when the sidecar records neither."""
    cfg = side.get("train_config")
    if not isinstance(cfg, dict) or not isinstance(cfg.get("model"), dict) or not isinstance(cfg.get("vocab"), dict):
        raise ValueError(
            f"{path} is not a Chapter 4 checkpoint: its sidecar records no train_config with a model and a vocab; "
            f"regenerate it with `{regenerate_command(model)}`."
        )
    return cfg["model"], RecallVocab(**cfg["vocab"])


def load_checkpoint(path=None, *, model: str = "s_small", backend="auto", device="cpu"):
    """Load an S-model checkpoint (``.pt`` + JSON sidecar) → ``(model, vocab, sidecar)``.

    ``path`` defaults to the committed ``results/checkpoints/ch4_train_<model>_ci.pt`` (:func:`checkpoint_path`).
    Through the one model loader, :func:`mamba_recall.results.model_from_checkpoint`: the pair checked (the sidecar's
    sha256; errors name the command that regenerates ``model``), the network built by :func:`build_model` from the
    model config and vocabulary the sidecar's ``train_config`` records, and loaded with the ``.pt``'s ``state_dict``
    (an S-model's ``.pt`` keeps its config, vocabulary and history beside its weights); the vocabulary is returned
    with the model. A reader's own mamba_ssm-compatible checkpoint is loaded with
    :func:`mamba_recall.analysis.interventions.load_mamba_ssm_checkpoint` instead.
    """
    path = Path(path) if path is not None else checkpoint_path(model)

    def build(side: dict) -> MambaLMHeadModel:
        config, vocab = _architecture(side, path, model)
        return build_model(config, vocab, backend=backend)

    net, sidecar = model_from_checkpoint(path, build, regenerate=regenerate_command(model), weights="state_dict")
    return net.to(device), _architecture(sidecar, path, model)[1], sidecar


def load_model(name: str = "s_small", *, backend="auto", device="cpu"):
    """(model, vocab, description): the committed S-model ``name``, or the one named by $MAMBA_RECALL_CH4_CHECKPOINT."""
    if backend == "mamba_ssm":  # prefix states, Ā ablations and h_0 need a PyTorch scan
        print("note: the Chapter 4 probes need a PyTorch scan (states, ablations); using backend='chunked'")
        backend = "chunked"
    env = os.environ.get(ENV_CHECKPOINT)
    if env:
        path = Path(env)
        if not path.exists():
            raise CheckpointEnvError(f"{ENV_CHECKPOINT}={env}: no such file or directory. {VALID_CHECKPOINT}")
        if path.is_file() and path.suffix != ".pt":
            raise CheckpointEnvError(f"{ENV_CHECKPOINT}={env}: not a .pt checkpoint. {VALID_CHECKPOINT}")
        if path.is_file() and not path.with_suffix(".json").exists():
            raise CheckpointEnvError(
                f"{ENV_CHECKPOINT}={env}: its sidecar {path.with_suffix('.json').name} is not "
                f"beside it. {VALID_CHECKPOINT}"
            )
        try:
            return _load_env_checkpoint(path, backend, device)
        except (OSError, ValueError, RuntimeError, KeyError, TypeError, EOFError, pickle.UnpicklingError) as exc:
            if isinstance(exc, CheckpointEnvError):
                raise
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].split("; regenerate")[0]
            raise CheckpointEnvError(
                f"{ENV_CHECKPOINT}={env}: cannot be loaded ({reason}). {VALID_CHECKPOINT}"
            ) from exc
    model, vocab, side = load_checkpoint(model=name, backend=backend, device=device)
    return model, vocab, {"source": f"results/checkpoints/{checkpoint_path(name).name}", **side}


class CheckpointEnvError(ValueError):
    """``MAMBA_RECALL_CH4_CHECKPOINT`` names no loadable checkpoint."""


VALID_CHECKPOINT = (
    f"It must name a Chapter 4 checkpoint: a .pt written by `{runner_command('ch4_train')}` "
    "with its .json sidecar beside it (e.g. results/checkpoints/ch4_train_s_small_ci.pt), or a mamba_ssm "
    f"save_pretrained directory (config.json + pytorch_model.bin); or unset {ENV_CHECKPOINT} to use "
    "the committed model."
)


def _load_env_checkpoint(path: Path, backend, device):
    """A reader's checkpoint: a mamba_ssm save_pretrained directory or a ch4_train .pt (+ sidecar)."""
    if path.is_dir():
        model = iv.load_mamba_ssm_checkpoint(path, backend=backend, device=device)
        nn_, nr, nf = (int(v) for v in os.environ.get(ENV_VOCAB, "32,8,16").split(","))
        vocab = RecallVocab(nn_, nr, nf)
        if vocab.size > model.vocab_size:
            raise ValueError(
                f"{path}: vocabulary of size {model.vocab_size} is smaller than the task's "
                f"{vocab.size}; set {ENV_VOCAB}."
            )
        return model, vocab, {"source": str(path), "gate": None}
    model, vocab, side = load_checkpoint(path, backend=backend, device=device)
    return model, vocab, {"source": str(path), **side}


def learning_curve(side: dict):
    """The held-out gate metrics recorded while training (a long table: step, metric, recall)."""
    import pandas as pd

    rows = [
        {"step": h["step"], "metric": k, "recall": v}
        for h in side.get("learning_curve", [])
        for k, v in h["gate"].items()
    ]
    return pd.DataFrame(rows)


def converged(side: dict) -> bool:
    """The convergence gate of the training sidecar, False if unknown."""
    gate = (side or {}).get("gate") or {}
    return bool(gate.get("passed"))


def contexts(vocab, L, variant, n, seed=EVAL_SEED):
    return recall_contexts(L, n, variant, vocab=vocab, seed=seed + L)


# --------------------------------------------------------------------- the model card


def model_card(side: dict) -> str:
    """One line on the model the numbers come from: source, steps, convergence gate."""
    cfg = side.get("train_config") or {}
    gate = side.get("gate") or {}
    metrics = gate.get("metrics") or {}
    g = ", ".join(f"{k} {v:.2f}" for k, v in metrics.items())
    curve = side.get("learning_curve") or [{}]
    done = side.get("stopped_at") or (cfg.get("steps") if side.get("final") else curve[-1].get("step"))
    return (
        f"{side.get('source')}: {cfg.get('model')}, {done} of {cfg.get('steps')} scheduled steps "
        f"({'run stopped there' if side.get('stopped_at') else 'final' if side.get('final') else 'intermediate'}"
        f" checkpoint); gate [{g}] → "
        f"{'CONVERGED' if gate.get('passed') else 'NOT converged'}"
    )


# --------------------------------------------------------------------- the untrained twin (the null control)


def untrained_twin(model_name: str, *, backend="auto", path=None):
    """(model, vocab, sidecar): the committed checkpoint ``model_name``'s architecture and vocabulary, **untrained**:
    initialised as its training run started (``torch.manual_seed`` of its recorded training seed, then the same
    constructor). The null control of a statistic that could hold by construction (a claim's rule must not pass it).
    ``path``: the checkpoint file, where it is not the committed one (``checkpoint_path(model_name)``)."""
    path = path or checkpoint_path(model_name)
    _, side = read_smodel(path, model_name)
    config, vocab = _architecture(side, path, model_name)
    torch.manual_seed(int(side["train_config"].get("seed", 0)))
    net = build_model(config, vocab, backend=backend)
    return net.eval(), vocab, side
