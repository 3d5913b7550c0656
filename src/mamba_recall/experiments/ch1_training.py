"""Chapter 1: train the simplified Mamba of paper 000 on the latest-value MQAR, save / load checkpoints.

``train_recall(sizes, seed, device, backend)`` is what the notebooks call with ``ctx.sizes("ch1.k1")``
(and ch1.k2, ch1.k4, ch1.wo, ch1.k1_masked); ``python -m mamba_recall.experiments.ch1_training
--preset paper`` trains the paper-size models and writes ``results/checkpoints/ch1_<name>_<preset>.pt``
with a JSON sidecar (config, sha256, accuracy, device) plus the bundle ``results/ch1_checkpoints.json``.

Training [choice]: a fixed training set of ``train_size`` sequences (seed ``seed``), a held-out set of
``test_size`` (seed ``seed + 1``), AdamW with weight decay 0 and a constant lr, batch ``batch_size``;
stop when the *training-set* query accuracy reaches 1 (the paper's rule: "until it reaches 100 %
accuracy on the training set") or after ``steps``. Then the held-out query accuracy is measured.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import results
from ..models.simplified_recall import SimplifiedMamba
from ..paths import RESULTS_DIR
from ..results import command_provenance
from ..tasks.latest_value import LatestValueBatch, latest_value_batch
from ..train import Recipe, Stopping, TrainResult, dataset_batches, evaluate, train

CHECKPOINT_DIR = RESULTS_DIR / "checkpoints"
MODELS = ("k1", "k1_masked", "k2", "k4", "wo")


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


def make_data(sizes: dict, seed: int):
    kw = dict(
        vocab_size=sizes["vocab_size"],
        num_keys=sizes["num_keys"],
        seq_len=sizes["seq_len"],
        max_noise=sizes["max_noise"],
        target=sizes["target"],
    )
    return (
        latest_value_batch(sizes["train_size"], seed=seed, **kw),
        latest_value_batch(sizes["test_size"], seed=seed + 1, **kw),
    )


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
    return results.checkpoint_file("ch1", name, preset, CHECKPOINT_DIR)


def save_checkpoint(trained: Trained, name: str, preset: str, device: str, seed: int) -> Path:
    """``results/checkpoints/ch1_<name>_<preset>.pt`` (the state dict) and its sidecar (see ``results``)."""
    state = {k: v.detach().cpu() for k, v in trained.model.state_dict().items()}
    sidecar = {
        "name": name,
        "preset": preset,
        "seed": seed,
        "config": trained.sizes,
        "device": device,
        "test_query_accuracy": trained.test_accuracy,
        "train_query_accuracy": trained.train_accuracy,
        "steps_run": trained.result.steps_run if trained.result else None,
    }
    return results.save_checkpoint(
        checkpoint_path(name, preset),
        state,
        sidecar,
        device=device,
        command=f"python -m mamba_recall.experiments.ch1_training --preset {preset} --only {name}",
    )


def load_checkpoint(name: str, preset: str = "paper"):
    """Load ``results/checkpoints/ch1_<name>_<preset>.pt``: ``(model, sidecar)``; checks the hash."""
    state, meta = results.read_checkpoint(
        checkpoint_path(name, preset),
        regenerate=f"python -m mamba_recall.experiments.ch1_training --preset {preset} --only {name}",
    )
    model = build_model(meta["config"], meta["seed"])
    model.load_state_dict(state)
    return model.eval(), meta


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
    """The checkpoint of ``ch1.<name>`` at ``preset`` that the committed bundle ``ch1_checkpoints_<preset>`` lists
    (so a claim expects it), or None: not listed, or no such bundle (absent; a corrupt one raises)."""
    try:
        bundle = results.load_bundle(f"ch1_checkpoints_{preset}", directory=RESULTS_DIR)
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
    """The ``ch1.<name>`` model at ``preset``'s sizes: the committed checkpoint when it matches those sizes,
    else trained live (and said so in ``source``).

    Training live is by design for a checkpoint never made at this preset (e.g. ``k2`` at ``paper``: neither the
    ``.pt`` nor its sidecar exists and no committed bundle lists it) and for sizes the checkpoint was not made
    at (a smoke run). It never stands in for a damaged one: a ``.pt`` without its sidecar (or the reverse), a
    hash that does not match, or a checkpoint that ``ch1_checkpoints_<preset>`` lists but that is gone, raises
    with the file and the command that regenerates it."""
    from ..presets import experiment

    sizes = experiment(f"ch1.{name}", preset, smoke=smoke)
    regenerate = f"python -m mamba_recall.experiments.ch1_training --preset {preset} --only {name}"
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
    _, test = make_data(sizes, seed)
    return Sourced(model, test, evaluate(model, test.inputs, test.query_labels), sizes, preset, made_on, source)


@command_provenance()  # one git state for the command: the bundle's, from before the checkpoints were written
def main(argv=None):
    from ..presets import experiment
    from ..results import save_bundle

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper", choices=("ci", "paper"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=list(MODELS), choices=MODELS)
    args = ap.parse_args(argv)
    rows = {}
    start = time.perf_counter()
    for name in args.only:
        sizes = experiment(f"ch1.{name}", args.preset)
        t0 = time.perf_counter()
        tr = train_recall(sizes, args.seed, args.device, progress=True)
        path = save_checkpoint(tr, name, args.preset, args.device, args.seed)
        rows[name] = {
            "test_query_accuracy": tr.test_accuracy,
            "train_query_accuracy": tr.train_accuracy,
            "steps_run": tr.result.steps_run,
            "seconds": time.perf_counter() - t0,
            "checkpoint": str(path.relative_to(RESULTS_DIR.parent)),
        }
        print(name, rows[name], flush=True)
    # A run of some models (--only) keeps the rows of the others that the committed bundle lists: the bundle always
    # names every committed checkpoint of the preset (load_or_train stops on a listed one that is missing).
    name = f"ch1_checkpoints_{args.preset}"
    try:
        kept = results.load_bundle(name).data["models"]
    except results.BundleMissing:
        kept = {}
    rows = {**{m: r for m, r in kept.items() if m not in rows}, **rows}
    names = [m for m in MODELS if m in rows]
    save_bundle(
        name,
        {"models": {m: rows[m] for m in names}},
        {
            "preset": args.preset,
            "seed": args.seed,
            "sizes": {n: experiment(f"ch1.{n}", args.preset) for n in names},
        },
        command=f"python -m mamba_recall.experiments.ch1_training --preset {args.preset} --device {args.device}"
        + (f" --seed {args.seed}" if args.seed else "")
        + ("" if names == list(MODELS) else " --only " + " ".join(names)),
        device=args.device,
        wall_seconds=time.perf_counter() - start,
    )


if __name__ == "__main__":
    main()
