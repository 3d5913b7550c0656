"""Chapter 1, Table 1 of paper 000: the models of its rows and the training of one cell (one-layer simplified Mamba
vs small Transformers on the latest-value MQAR).

Rows (paper → ours):

* "1-layer Mamba, conv ✓"       → SimplifiedMamba (fixed pairwise conv; N = 1, B = C = 1 for κ = 1;
                                   N = κ with selective B, C for κ > 1), as in the paper's Sec. 3.
* "2-layer TF, conv ✗"          → TinyTransformer(n_layer=2, positional="none", short_conv=0)
* "1-layer TF, conv ✓"          → TinyTransformer(n_layer=1, positional="none", short_conv=4)
* "2-layer TF w/ RoPE, conv ✓"  → TinyTransformer(n_layer=2, positional="rope", short_conv=4)
* [our control, ``cpu-hours`` only] "1-layer TF, pair conv" → TinyTransformer(n_layer=1, positional="none",
  short_conv=0) whose input is the simplified Mamba's fixed convolution (App. B, Eq. 1):
  x̂_t = [e_{x_{t−1}}; e_{x_t}] ∈ R^{2|V|} (zero before the first token), mapped to d_model by a learned
  W_in (d_model, 2|V|): the Transformer sees exactly the pair the Mamba sees, and no position.

The paper gives no TF sizes ("similar model sizes"), optimiser, |V| or steps: all [choice]s, in the
``ch1_table1`` preset. Same data, loss mode and step budget for every model; accuracy = held-out
query accuracy (all queries, not only the final ones).

``python -m mamba_recall grid ch1_table1 --preset P`` runs the grid, one cell and seed per run-store job (:func:`run_cell`,
:mod:`mamba_recall.chapters.ch1_gradient_dynamics.runners.grid`), and writes its bundle.
"""

from __future__ import annotations

import pandas as pd
import torch

from mamba_recall.longrun import PROBE_STEPS, guard_grid
from mamba_recall.models.simplified_recall import SimplifiedMamba, pair_embedding
from mamba_recall.models.transformer import TinyTransformer
from mamba_recall.tasks.latest_value import latest_value_batch
from mamba_recall.train import Recipe, Stopping, dataset_batches, evaluate, train

PAPER_TABLE1 = {  # accuracy (%) [paper], keyed by (model, T, κ)
    "mamba": {(128, 1): 100, (128, 4): 100, (256, 1): 100, (256, 4): 99, (512, 1): 100, (512, 4): 99},
    "tf2_nope": {(128, 1): 30, (128, 4): 42, (256, 1): 22, (256, 4): 21, (512, 1): 15, (512, 4): 18},
    "tf1_conv": {(128, 1): 34, (128, 4): 56, (256, 1): 26, (256, 4): 42, (512, 1): 21, (512, 4): 36},
    "tf2_conv_rope": {(128, 1): 100, (128, 4): 100, (256, 1): 100, (256, 4): 96, (512, 1): 77, (512, 4): 90},
}
LABELS = {
    "mamba": "1-layer Mamba (conv ✓)",
    "tf2_nope": "2-layer TF (conv ✗, no PE)",
    "tf1_conv": "1-layer TF (conv ✓, no PE)",
    "tf2_conv_rope": "2-layer TF w/ RoPE (conv ✓)",
    "tf1_pair": "1-layer TF (pair conv as Mamba, no PE) [control]",
}
#: the models of the paper's Table 1 (the ci and paper presets); a preset may list others in ``models``
TABLE1_MODELS = ("mamba", "tf2_nope", "tf1_conv", "tf2_conv_rope")


class PairEmbedding(torch.nn.Module):
    """The simplified Mamba's fixed convolution as a Transformer's input: ids (b, l) → W_in x̂_t (b, l, d_model),
    x̂_t = [e_{x_{t−1}}; e_{x_t}] (App. B, Eq. 1); W_in (d_model, 2|V|) learned, no bias. Equivalently the sum of
    a learned embedding of the previous token and one of the current token."""

    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.vocab_size = vocab_size
        self.proj = torch.nn.Linear(2 * vocab_size, d_model, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.proj(pair_embedding(ids, self.vocab_size).to(self.proj.weight))


def build(name: str, vocab_size: int, num_keys: int, seq_len: int, sizes: dict, seed: int):
    torch.manual_seed(seed)
    if name == "mamba":
        return SimplifiedMamba(vocab_size, num_keys, selective_bc=num_keys > 1, seed=seed)
    common = dict(vocab_size=vocab_size, d_model=sizes["tf_d_model"], n_head=sizes["tf_heads"], max_len=seq_len)
    if name == "tf2_nope":
        return TinyTransformer(n_layer=2, positional="none", short_conv=0, **common)
    if name == "tf1_conv":
        return TinyTransformer(n_layer=1, positional="none", short_conv=sizes["conv_width"], **common)
    if name == "tf2_conv_rope":
        return TinyTransformer(n_layer=2, positional="rope", short_conv=sizes["conv_width"], **common)
    if name == "tf1_pair":
        model = TinyTransformer(n_layer=1, positional="none", short_conv=0, **common)
        model.embedding = PairEmbedding(vocab_size, sizes["tf_d_model"])
        return model
    raise ValueError(f"unknown model {name!r}; use one of {list(LABELS)}.")


#: a run at its step cap counts as finished learning where its training-set accuracy gained at most FLAT_GAIN over its
#: last FLAT_STEPS steps (declared for the reruns to the target or the cap, while they trained and before any of their
#: results, open review, referee-P: the plateau stop's 0.002 over 400 steps ended runs still climbing)
FLAT_STEPS, FLAT_GAIN = 2000, 0.002


def tail_gain(curve, steps: int = FLAT_STEPS) -> float:
    """How much the training-set accuracy rose over the last ``steps`` of a run's curve ([step, accuracy] pairs at
    each evaluation): the best of the evaluations inside the window minus the last one before it. NaN when the curve
    is shorter than the window (it cannot show a flat end)."""
    if not curve or curve[-1][0] - curve[0][0] < steps:
        return float("nan")
    start = curve[-1][0] - steps
    before = [a for s, a in curve if s <= start]
    inside = [a for s, a in curve if s > start]
    return float(max(inside) - before[-1])


def stop_reason(result: dict) -> str | None:
    """A Table 1 run's ``stopped``, read with its curve: ``"flat"`` for a run at its cap whose training accuracy gained
    at most :data:`FLAT_GAIN` over its last :data:`FLAT_STEPS` steps (:func:`tail_gain`: finished, though short of
    the target), else the run's own (``target``, ``plateau``, ``steps``: at the cap still learning; None where the run
    stops on held-out accuracy)."""
    stopped, curve = result.get("stopped"), result.get("train_curve")
    if stopped == "steps" and curve and tail_gain(curve) <= FLAT_GAIN:
        return "flat"
    return stopped


def run_cell(name: str, seq_len: int, num_keys: int, sizes: dict, seed: int = 0, device="cpu") -> dict:
    """Train one cell and measure its held-out query accuracy. Stopping: ci / paper presets at 100 % held-out
    accuracy (or ``steps``); ``early_stop: "train_plateau"`` (cpu-hours) on the *training set* as App. A: at 100 %
    training-set query accuracy, or when it has not grown by more than ``min_delta`` over ``patience``
    evaluations, or at ``steps`` (then also reports ``train_accuracy`` and ``stopped``); ``"train_target"``: on the
    training set, only at 100 % training-set query accuracy or at ``steps`` (no plateau stop: a run short of the target
    trains to its cap; the open review found the plateau stop ending runs still climbing), and reports the training
    curve too (``train_curve``: [step, training-set query accuracy] at each evaluation)."""
    mode = sizes.get("early_stop")
    if mode not in (None, "train_plateau", "train_target"):
        raise ValueError(f"early_stop={mode!r}: use 'train_plateau', 'train_target' or leave it out.")
    plateau, on_train = mode == "train_plateau", mode in ("train_plateau", "train_target")
    V = sizes["vocab_size"]
    kw = dict(vocab_size=V, num_keys=num_keys, seq_len=seq_len, max_noise=sizes["max_noise"], target=sizes["target"])
    tr = latest_value_batch(sizes["train_size"], seed=seed, **kw)
    te = latest_value_batch(sizes["test_size"], seed=seed + 1, **kw)
    model = build(name, V, num_keys, seq_len, sizes, seed)
    lr = sizes["mamba_lr"] if name == "mamba" else sizes["tf_lr"]
    device = torch.device(device)
    res = train(
        model,
        dataset_batches(tr.inputs, tr.labels, sizes["batch_size"], seed=seed),
        steps=sizes["steps"],
        recipe=Recipe(lr=lr, weight_decay=0.0, schedule="constant"),
        stop=Stopping(
            eval_every=sizes["eval_every"],
            target_accuracy=1.0,
            **({"patience": sizes["patience"], "min_delta": sizes["min_delta"]} if plateau else {}),
        ),
        eval_batch=(tr.inputs, tr.query_labels) if on_train else (te.inputs, te.query_labels),
        device=device,
        progress=False,
        seed=seed,
        num_threads=1 if device.type == "cpu" else None,
        desc=name,
    )
    acc = evaluate(model, te.inputs, te.query_labels, device=device)
    extra = {}
    if on_train:
        train_acc = res.final_accuracy
        extra = {
            "train_accuracy": train_acc,
            "stopped": "target" if train_acc >= 1.0 else ("plateau" if res.stopped_early else "steps"),
        }
    if mode == "train_target":
        extra["train_curve"] = [[h["step"], float(h["accuracy"])] for h in res.history if "accuracy" in h]
    return {
        "model": name,
        "label": LABELS[name],
        "T": seq_len,
        "kappa": num_keys,
        "accuracy": acc,
        "paper": PAPER_TABLE1.get(name, {}).get((seq_len, num_keys)),
        "steps_run": res.steps_run,
        "params": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "seconds": res.seconds,
        **extra,
    }


def probe_cell(name: str, seq_len: int, num_keys: int, sizes: dict, seed: int = 0, device="cpu") -> float:
    """Seconds per training step of one cell, measured (3 steps on a batch of the cell's size)."""
    V = sizes["vocab_size"]
    data = latest_value_batch(
        sizes["batch_size"],
        vocab_size=V,
        num_keys=num_keys,
        seq_len=seq_len,
        max_noise=sizes["max_noise"],
        target=sizes["target"],
        seed=seed,
    )
    model = build(name, V, num_keys, seq_len, sizes, seed)
    device = torch.device(device)
    res = train(
        model,
        lambda step: (data.inputs, data.labels),
        steps=PROBE_STEPS,
        recipe=Recipe(lr=1e-3, weight_decay=0.0, schedule="constant"),
        progress=False,
        num_threads=1 if device.type == "cpu" else None,
        device=device,
    )
    return res.seconds / PROBE_STEPS


def run_table(sizes: dict, seed: int = 0, device="cpu", models=None) -> pd.DataFrame:
    """Every cell (T, κ, model); the long-run guard measures each cell's step time first and stops a grid
    estimated at over an hour on ``device`` unless long runs are allowed (then: a progress bar with ETA).
    ``models``: default the preset's ``models`` or the paper's four rows (:data:`TABLE1_MODELS`)."""
    models = models or sizes.get("models", TABLE1_MODELS)
    cells = [(m, T, k) for T in sizes["seq_lens"] for k in sizes["num_keys"] for m in models]
    grid = guard_grid(
        f"Table 1 grid ({len(cells)} cells, up to {sizes['steps']} steps each)",
        cells,
        probe=lambda cell: probe_cell(*cell, sizes, seed, device),
        steps=lambda cell: sizes["steps"],
        device=device,
    )
    return pd.DataFrame([run_cell(m, T, k, sizes, seed, device) for m, T, k in grid])
