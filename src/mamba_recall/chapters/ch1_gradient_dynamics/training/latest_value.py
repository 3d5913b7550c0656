"""Chapter 1: the simplified Mamba of paper 000 (and the full Mamba LM of App. B) on the latest-value MQAR: the
models, their data, their training and their committed checkpoints.

``train_recall(sizes, seed, device, backend)`` is what the notebooks call with ``ctx.sizes("ch1_k1")``
(and ch1_k2, ch1_k4, ch1_wo, ch1_k1_masked); :func:`load_checkpoint` and :func:`load_or_train` read the
checkpoints that ``python -m mamba_recall grid ch1_checkpoints --preset paper`` writes
(``results/checkpoints/ch1_<name>_<preset>.pt`` with a JSON sidecar), and the runners
(:mod:`mamba_recall.chapters.ch1_gradient_dynamics.runners.checkpoints`, :mod:`mamba_recall.chapters.ch1_gradient_dynamics.runners.grid`) train with the same
functions.

Training [choice]: a fixed training set of ``train_size`` sequences (seed ``seed``), a held-out set of
``test_size`` (seed ``seed + 1``), AdamW with weight decay 0 and a constant lr, batch ``batch_size``;
stop when the *training-set* query accuracy reaches 1 (the paper's rule: "until it reaches 100 %
accuracy on the training set") or after ``steps``. Then the held-out query accuracy is measured.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import torch

from mamba_recall import results
from mamba_recall.models.simplified_recall import SimplifiedMamba
from mamba_recall.paths import RESULTS_DIR
from mamba_recall.tasks.latest_value import LatestValueBatch, latest_value_batch
from mamba_recall.train import Recipe, Stopping, TrainResult, dataset_batches, evaluate, train
from mamba_recall.runners import runner_command

CHECKPOINT_DIR = RESULTS_DIR / "checkpoints"
FULL_NAME = "full_mamba"  # the checkpoint name and the jobs' "model"
ONEHOT_NAME = "full_onehot"  # the full Mamba over the fixed doubled one-hot embedding, untied learned readout


@dataclass
class Trained:
    model: SimplifiedMamba
    result: TrainResult | None
    train_set: LatestValueBatch
    test_set: LatestValueBatch
    test_accuracy: float
    train_accuracy: float
    sizes: dict


#: The model of a recipe's sizes at a seed (:meth:`SimplifiedMamba.from_sizes`).
build_model = SimplifiedMamba.from_sizes


def _generator(sizes: dict) -> dict:
    """The latest-value generator's arguments of ``sizes``."""
    return {k: sizes[k] for k in ("vocab_size", "num_keys", "seq_len", "max_noise", "target")}


@functools.lru_cache(maxsize=32)
def _held_out(size: int, seed: int, generator: tuple):
    return latest_value_batch(size, seed=seed + 1, **dict(generator))


def held_out_set(sizes: dict, seed: int):
    """Seed ``seed``'s held-out set (``sizes["test_size"]`` sequences, generator seed ``seed + 1``): the test set of
    :func:`make_data`, without drawing its training set; cached, so the claims measured on one checkpoint (and its
    untrained twin) share it. Read-only: its tensors are shared between callers."""
    return _held_out(int(sizes["test_size"]), int(seed), tuple(sorted(_generator(sizes).items())))


def make_data(sizes: dict, seed: int):
    """(training set of ``sizes["train_size"]`` sequences, generator seed ``seed``; :func:`held_out_set`)."""
    return latest_value_batch(sizes["train_size"], seed=seed, **_generator(sizes)), held_out_set(sizes, seed)


def train_recall(
    sizes: dict,
    seed: int = 0,
    device="cpu",
    backend: str = "chunked",
    progress: bool = False,
    steps: int | None = None,
    model: torch.nn.Module | None = None,
    desc: str = "ch1",
) -> Trained:
    """Train a SimplifiedMamba with ``sizes`` (a ch1 preset entry), or the given ``model`` (built by the caller, e.g.
    the full Mamba LM of App. B, Fig. 7) on the same data, optimiser and stopping rule: AdamW without weight decay,
    constant lr, until 100 % training-set query accuracy or ``steps`` (with ``sizes["steps_past_target"] = n``: n
    steps more once it reaches 100 %). Deterministic given ``seed`` on a CPU."""
    train_set, test_set = make_data(sizes, seed)
    torch.manual_seed(seed)
    built = model is None
    if built:
        model = build_model(sizes, seed, backend)
    device = torch.device(device)
    res = train(
        model,
        dataset_batches(train_set.inputs, train_set.labels, sizes["batch_size"], seed=seed),
        steps=steps or sizes["steps"],
        recipe=Recipe(lr=sizes["lr"], weight_decay=0.0, schedule="constant"),
        stop=Stopping(
            eval_every=sizes["eval_every"],
            target_accuracy=1.0,
            steps_past_target=sizes.get("steps_past_target", 0),
        ),
        eval_batch=(train_set.inputs, train_set.query_labels),
        device=device,
        progress=progress,
        seed=seed,
        num_threads=1 if device.type == "cpu" else None,
        desc=desc,
    )
    model.cpu().eval()
    if built:
        model.backend = "chunked"
    return Trained(
        model,
        res,
        train_set,
        test_set,
        evaluate(model, test_set.inputs, test_set.query_labels),
        evaluate(model, train_set.inputs, train_set.query_labels),
        sizes,
    )


def checkpoint_path(name: str, preset: str) -> Path:
    return results.checkpoint_file(f"ch1_{name}", preset, directory=CHECKPOINT_DIR)


def load_checkpoint(name: str, preset: str = "paper"):
    """Load ``results/checkpoints/ch1_<name>_<preset>.pt``: ``(model, sidecar)``; checks the hash
    (:func:`~mamba_recall.results.model_from_checkpoint`)."""
    return results.model_from_checkpoint(
        checkpoint_path(name, preset),
        lambda meta: build_model(meta["config"], meta["seed"]),
        regenerate=f"{runner_command('ch1_checkpoints')} --preset {preset} --only {name}",
    )


@dataclass
class Sourced:
    """A model with where it came from (for the evidence of a claim): a committed checkpoint or a live run."""

    model: SimplifiedMamba
    test_set: LatestValueBatch
    accuracy: float  # held-out query accuracy
    sizes: dict
    tier: str  # the preset the model was trained at
    device: str  # the device it was trained on
    source: str  # checkpoint path (relative to the repository) or "live"
    seeds: int = 1
    seed: int | None = None  # the training seed (its untrained twin is the claims' null control), where known


def committed_checkpoint(name: str, preset: str) -> Path | None:
    """The checkpoint of ``ch1_<name>`` at ``preset`` that the committed bundle ``ch1_checkpoints_<preset>`` lists
    (so a claim expects it), or None: not listed, or no such bundle (absent; a corrupt one raises)."""
    try:
        bundle = results.evidence("ch1_checkpoints", preset=preset, directory=RESULTS_DIR)
    except results.BundleMissing:
        return None
    recorded = (bundle.data.get("models") or {}).get(name, {}).get("checkpoint")
    if not recorded:
        return None
    path = checkpoint_path(name, preset)
    return path if (RESULTS_DIR.parent / recorded).resolve() == path.resolve() else None


def load_or_train(
    name: str, preset: str, seed: int = 0, device="cpu", backend: str = "chunked", smoke: bool = False
) -> Sourced:
    """The ``ch1_<name>`` model at ``preset``'s sizes: the committed checkpoint when it matches those sizes,
    else trained live (and said so in ``source``).

    Training live is by design for a checkpoint never made at this preset (e.g. ``k2`` at ``paper``: neither the
    ``.pt`` nor its sidecar exists and no committed bundle lists it) and for sizes the checkpoint was not made
    at (a smoke run). It never stands in for a damaged one: a ``.pt`` without its sidecar (or the reverse), a
    hash that does not match, or a checkpoint that ``ch1_checkpoints_<preset>`` lists but that is gone, raises
    with the file and the command that regenerates it."""
    from mamba_recall.presets import experiment

    sizes = experiment(f"ch1_{name}", preset, smoke=smoke)
    regenerate = f"{runner_command('ch1_checkpoints')} --preset {preset} --only {name}"
    model = meta = None
    try:
        model, meta = load_checkpoint(name, preset)  # half a pair or a bad hash: BundleError, not caught here
    except results.CheckpointMissing:
        expected = committed_checkpoint(name, preset)
        if expected is not None:
            raise results.CheckpointMissing(
                f"checkpoint {expected} and its sidecar are missing, but the committed bundle "
                f"ch1_checkpoints_{preset} lists them (a claim reads this model); restore them with "
                f"`git checkout -- {expected.parent}` or regenerate them with `{regenerate}`."
            ) from None
    if model is not None and meta["config"] == sizes:
        source, made_on = str(checkpoint_path(name, preset).relative_to(RESULTS_DIR.parent)), meta["device"]
    else:
        model = train_recall(sizes, seed=seed, device=device, backend=backend).model
        source, made_on = "live", str(torch.device(device).type)
    test = held_out_set(sizes, seed)
    return Sourced(model, test, evaluate(model, test.inputs, test.query_labels), sizes, preset, made_on, source)


def build_full_model(sizes: dict, seed: int):
    r"""The full Mamba LM of ``sizes`` (a ``ch1_full_mamba`` or ``ch1_full_onehot`` entry: ``d_model``, ``n_layer``,
    ``vocab_size``, ``d_state``, ``d_conv``, ``expand``), initialised after ``torch.manual_seed(seed)``, PyTorch's
    chunked scan. ``sizes["embedding"]``: ``"learned"`` (default; tied to the readout, as upstream) or
    ``"doubled_one_hot"``: the embedding of §2.2 fixed and frozen, E[v] = [e_v; e_v] ∈ R^{2|V|} for v < |V| (the
    padded rows zero; needs d_model = 2|V|), with an untied, learned output layer (``lm_head``)."""
    from mamba_recall.models.mamba import MambaLMHeadModel

    missing = [k for k in ("d_model", "n_layer", "vocab_size", "d_state", "d_conv", "expand") if k not in sizes]
    if missing:
        raise ValueError(f"the full Mamba's sizes lack {missing}; take them from experiment('ch1_full_mamba', ...).")
    embedding = sizes.get("embedding", "learned")
    if embedding not in ("learned", "doubled_one_hot"):
        raise ValueError(f"embedding={embedding!r}: use 'learned' (tied, upstream's) or 'doubled_one_hot' (§2.2).")
    V = sizes["vocab_size"]
    if embedding == "doubled_one_hot" and sizes["d_model"] != 2 * V:
        raise ValueError(
            f"the doubled one-hot embedding [e_v; e_v] has 2|V| = {2 * V} coordinates, got d_model={sizes['d_model']}; "
            "set d_model = 2 * vocab_size (experiment('ch1_full_onehot', ...))."
        )
    torch.manual_seed(seed)
    model = MambaLMHeadModel(
        sizes["d_model"],
        sizes["n_layer"],
        V,
        d_state=sizes["d_state"],
        d_conv=sizes["d_conv"],
        expand=sizes["expand"],
        tie_embeddings=embedding == "learned",
        backend="chunked",
    )
    if embedding == "doubled_one_hot":
        weight = model.backbone.embedding.weight
        with torch.no_grad():
            weight.zero_()
            eye = torch.eye(V, dtype=weight.dtype)
            weight[:V] = torch.cat([eye, eye], dim=1)  # (|V|, 2|V|): row v = [e_v; e_v]
        weight.requires_grad_(False)
    return model


def held_out_accuracy(model, sizes: dict, seed: int) -> float:
    """``model``'s held-out query accuracy on seed ``seed``'s held-out set (:func:`make_data`), as
    :func:`train_recall` measures a trained model's."""
    test_set = held_out_set(sizes, seed)
    return float(evaluate(model, test_set.inputs, test_set.query_labels))
