"""Tests for mamba_recall.train: the shared training loop (MQAR convergence, early stop, determinism)."""
from __future__ import annotations

import math

import pytest
import torch

from mamba_recall.models import MambaLMHeadModel
from mamba_recall.tasks import multiquery_ar
from mamba_recall.train import (
    SCHEDULES,
    TrainResult,
    dataset_batches,
    lr_at,
    masked_accuracy,
    masked_cross_entropy,
    param_groups,
    train,
)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: one intra-op thread is fastest, immune to CPU contention (OpenMP threads spin
    when the cores are busy) and makes the runs independent of the machine's core count."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


V, L, K = 32, 16, 2  # MQAR: vocab 32, length 16, 2 key-value pairs (zoology defaults otherwise)


def mqar_make_batch(batch_size, seed=0):
    def make_batch(step):
        b = multiquery_ar(V, batch_size, L, seed=seed * 100_000 + step, num_kv_pairs=K)
        return b.inputs, b.labels
    return make_batch


def mqar_eval(n=256):
    b = multiquery_ar(V, n, L, seed=2**31, num_kv_pairs=K)  # zoology's test-seed range
    return b.inputs, b.labels


def tiny_lm(seed=0):
    torch.manual_seed(seed)
    return MambaLMHeadModel(32, 1, V, d_state=8, backend="chunked")


# ----------------------------------------------------------------------------- learning


def test_one_layer_mamba_learns_mqar_and_stops_early():
    """1 layer, d_model 32, d_state 8: ≥ 0.9 held-out MQAR accuracy in ≤ 400 steps (≈ 250 at seed 0)."""
    result = train(tiny_lm(0), mqar_make_batch(128), steps=400, lr=3e-2, weight_decay=0.1,
                   schedule="cosine", grad_clip=1.0, seed=0, eval_every=25, eval_batch=mqar_eval(),
                   target_accuracy=0.9, progress=False)
    assert isinstance(result, TrainResult)
    assert result.final_accuracy >= 0.9
    assert result.stopped_early and result.steps_run < 400
    assert len(result.history) == result.steps_run
    assert result.evals[0]["accuracy"] < 0.6  # it did have to learn
    first = sum(h["loss"] for h in result.history[:10]) / 10
    last = sum(h["loss"] for h in result.history[-10:]) / 10
    assert last < 0.5 * first
    assert result.history[-1]["accuracy"] == result.final_accuracy
    assert all("grad_norm" in h for h in result.history)
    assert result.seconds > 0


def test_same_seed_same_history_and_eval_schedule():
    def run():
        return train(tiny_lm(1), mqar_make_batch(16, seed=1), steps=6, lr=1e-2, eval_every=3,
                     eval_batch=mqar_eval(32), schedule="linear_warmup_cosine", warmup_steps=2,
                     seed=5, progress=False)

    a, b = run(), run()
    assert a.history == b.history
    assert [h["step"] for h in a.history] == [1, 2, 3, 4, 5, 6]
    assert [h["step"] for h in a.evals] == [3, 6]
    assert [h["lr"] for h in a.history] == [
        lr_at(s, lr=1e-2, steps=6, schedule="linear_warmup_cosine", warmup_steps=2) for s in range(6)]
    assert not a.stopped_early and a.steps_run == 6


class ConstantLogits(torch.nn.Module):
    """A "model" whose logits are one learnable vector at every position (any model works with train)."""

    def __init__(self, vocab):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(vocab))

    def forward(self, ids):
        return self.bias.expand(*ids.shape, -1)


def test_early_stopping_at_first_evaluation_that_reaches_the_target():
    ids, labels = torch.zeros(4, 6, dtype=torch.long), torch.full((4, 6), 3)
    labels[:, ::2] = -100
    result = train(ConstantLogits(8), lambda step: (ids, labels), steps=50, lr=0.1, eval_every=2,
                   eval_batch=(ids, labels), target_accuracy=1.0, progress=False)
    assert result.stopped_early and result.steps_run == 2 and len(result.history) == 2
    assert result.final_accuracy == 1.0 and result.history[-1]["accuracy"] == 1.0
    # without a target it runs all steps; a target reached only at the last step is not "early"
    full = train(ConstantLogits(8), lambda step: (ids, labels), steps=4, lr=0.1, eval_every=4,
                 eval_batch=(ids, labels), target_accuracy=1.0, progress=False)
    assert full.steps_run == 4 and not full.stopped_early and full.final_accuracy == 1.0


def test_custom_loss_and_non_finite_loss():
    seen = []

    def loss_fn(logits, labels):
        seen.append(logits.shape)
        return masked_cross_entropy(logits, labels)

    result = train(tiny_lm(0), mqar_make_batch(4), steps=2, loss_fn=loss_fn, progress=False)
    assert seen == [(4, L, 32)] * 2 and result.final_accuracy is None
    threads = torch.get_num_threads()
    train(tiny_lm(0), mqar_make_batch(4), steps=1, num_threads=2, progress=False)
    assert torch.get_num_threads() == threads  # restored
    with pytest.raises(FloatingPointError, match="step 1"):
        train(tiny_lm(0), mqar_make_batch(4), steps=2, loss_fn=lambda lo, la: lo.sum() * float("nan"),
              progress=False)


# ----------------------------------------------------------------------------- pieces


def test_argument_validation():
    model, mb = tiny_lm(0), mqar_make_batch(4)
    with pytest.raises(ValueError, match="constant, cosine, linear_warmup_cosine"):
        train(model, mb, steps=5, schedule="step", progress=False)
    with pytest.raises(ValueError, match="steps"):
        train(model, mb, steps=0, progress=False)
    with pytest.raises(ValueError, match="warmup_steps"):
        train(model, mb, steps=5, schedule="linear_warmup_cosine", progress=False)
    with pytest.raises(ValueError, match="eval_batch"):
        train(model, mb, steps=5, target_accuracy=0.9, progress=False)
    with pytest.raises(ValueError, match="lr"):
        train(model, mb, steps=5, lr=0, progress=False)
    assert SCHEDULES == ("constant", "cosine", "linear_warmup_cosine")


def test_lr_schedules():
    assert lr_at(7, lr=0.1, steps=10, schedule="constant") == 0.1
    assert lr_at(0, lr=0.1, steps=10, schedule="cosine") == 0.1
    assert math.isclose(lr_at(5, lr=0.1, steps=10, schedule="cosine"), 0.05)
    assert [lr_at(s, lr=1.0, steps=12, schedule="linear_warmup_cosine", warmup_steps=4) for s in range(4)] == [
        0.25, 0.5, 0.75, 1.0]
    assert math.isclose(lr_at(8, lr=1.0, steps=12, schedule="linear_warmup_cosine", warmup_steps=4), 0.5)
    cos = [lr_at(s, lr=1.0, steps=20, schedule="cosine") for s in range(20)]
    assert all(a > b > 0 for a, b in zip(cos, cos[1:]))


def test_weight_decay_groups():
    lm = tiny_lm(0)
    decay, no_decay = param_groups(lm, 0.1)
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    names = {id(p): n for n, p in lm.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    assert decayed == {"backbone.embedding.weight"} | {
        f"backbone.layers.0.mixer.{k}" for k in ("in_proj.weight", "conv1d.weight", "x_proj.weight",
                                                  "dt_proj.weight", "out_proj.weight")}
    not_decayed = {names[id(p)] for p in no_decay["params"]}
    assert {"backbone.layers.0.mixer.A_log", "backbone.layers.0.mixer.D", "backbone.layers.0.mixer.dt_proj.bias",
            "backbone.layers.0.norm.weight", "backbone.norm_f.weight"} <= not_decayed
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(lm.parameters()))  # tied head once


def test_masked_accuracy_and_loss():
    logits = torch.zeros(1, 4, 5)
    logits[0, 0, 2] = logits[0, 1, 3] = logits[0, 2, 1] = logits[0, 3, 4] = 1.0
    labels = torch.tensor([[2, -100, 0, 4]])
    assert masked_accuracy(logits, labels) == pytest.approx(2 / 3)
    assert math.isnan(masked_accuracy(logits, torch.full((1, 4), -100)))
    expected = torch.nn.functional.cross_entropy(logits[0, [0, 2, 3]], torch.tensor([2, 0, 4]))
    torch.testing.assert_close(masked_cross_entropy(logits, labels), expected)


def test_dataset_batches_are_deterministic_epochs():
    x = torch.arange(10)[:, None].repeat(1, 3)
    mb = dataset_batches(x, x.clone(), batch_size=4, seed=3)
    batches = [mb(s)[0][:, 0].tolist() for s in range(4)]
    assert batches == [mb(s)[0][:, 0].tolist() for s in range(4)]
    epoch0 = batches[0] + batches[1]
    assert len(set(epoch0)) == 8  # no repeats inside an epoch (2 full batches, remainder dropped)
    assert batches[:2] != batches[2:]
    with pytest.raises(ValueError, match="batch_size"):
        dataset_batches(x, x, batch_size=11)
