"""Tests for mamba_recall.train: the shared training loop (MQAR convergence, early stop, determinism)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from mamba_recall.models import MambaLMHeadModel
from mamba_recall.tasks import multiquery_ar
from mamba_recall.labels import labelled_accuracy, labelled_counts
from mamba_recall.models.linear_mamba import LinearMamba
from mamba_recall.tasks.mqar import batch_fn, mqar
from mamba_recall.presets import experiment
from mamba_recall.chapters.ch2_hashing_scaling.configs import RECIPES
from mamba_recall.chapters.ch2_hashing_scaling.training.ensemble import train_ensemble
from mamba_recall.train import (
    SCHEDULES,
    Recipe,
    Stopping,
    TrainResult,
    dataset_batches,
    evaluate,
    lr_at,
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
    result = train(
        tiny_lm(0),
        mqar_make_batch(128),
        steps=400,
        recipe=Recipe(lr=3e-2, weight_decay=0.1, schedule="cosine", grad_clip=1.0),
        stop=Stopping(eval_every=25, target_accuracy=0.9),
        eval_batch=mqar_eval(),
        seed=0,
        progress=False,
    )
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
        return train(
            tiny_lm(1),
            mqar_make_batch(16, seed=1),
            steps=6,
            recipe=Recipe(lr=1e-2, schedule="linear_warmup_cosine", warmup_steps=2),
            stop=Stopping(eval_every=3),
            eval_batch=mqar_eval(32),
            seed=5,
            progress=False,
        )

    a, b = run(), run()
    assert a.history == b.history
    assert [h["step"] for h in a.history] == [1, 2, 3, 4, 5, 6]
    assert [h["step"] for h in a.evals] == [3, 6]
    assert [h["lr"] for h in a.history] == [
        lr_at(s, lr=1e-2, steps=6, schedule="linear_warmup_cosine", warmup_steps=2) for s in range(6)
    ]
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
    result = train(
        ConstantLogits(8),
        lambda step: (ids, labels),
        steps=50,
        recipe=Recipe(lr=0.1),
        stop=Stopping(eval_every=2, target_accuracy=1.0),
        eval_batch=(ids, labels),
        progress=False,
    )
    assert result.stopped_early and result.steps_run == 2 and len(result.history) == 2
    assert result.final_accuracy == 1.0 and result.history[-1]["accuracy"] == 1.0
    # without a target it runs all steps; a target reached only at the last step is not "early"
    full = train(
        ConstantLogits(8),
        lambda step: (ids, labels),
        steps=4,
        recipe=Recipe(lr=0.1),
        stop=Stopping(eval_every=4, target_accuracy=1.0),
        eval_batch=(ids, labels),
        progress=False,
    )
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
        train(tiny_lm(0), mqar_make_batch(4), steps=2, loss_fn=lambda lo, la: lo.sum() * float("nan"), progress=False)


# ----------------------------------------------------------------------------- pieces


def test_argument_validation():
    """What depends on the run (steps, eval_batch, one model) is checked by train; the rest by Recipe / Stopping."""
    model, mb = tiny_lm(0), mqar_make_batch(4)
    with pytest.raises(ValueError, match="steps"):
        train(model, mb, steps=0, progress=False)
    with pytest.raises(ValueError, match=r"warmup_steps must be an integer in \[0, steps=5\)"):
        train(model, mb, steps=5, recipe=Recipe(warmup_steps=5), progress=False)
    train(model, mb, steps=1, recipe=Recipe(schedule="code", warmup_steps=5), progress=False)  # code: may stay in it
    with pytest.raises(ValueError, match="eval_batch"):
        train(model, mb, steps=5, stop=Stopping(target_accuracy=0.9), progress=False)
    with pytest.raises(ValueError, match="patience needs eval_batch"):
        train(model, mb, steps=5, stop=Stopping(patience=2), progress=False)
    with pytest.raises(ValueError, match="per_member"):
        train(model, mb, steps=5, per_member=True, progress=False)
    with pytest.raises(TypeError, match="Recipe.from_preset"):
        train(model, mb, steps=5, recipe=RECIPES["code"], progress=False)
    assert SCHEDULES == ("constant", "cosine", "linear_warmup_cosine", "code", "tab9")


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(schedule="step"), "constant, cosine, linear_warmup_cosine"),
        (dict(lr=0), "lr"),
        (dict(weight_decay=-0.1), "weight_decay"),
        (dict(betas=(0.9, 1.0)), "betas"),
        (dict(betas=(0.9,)), "betas"),
        (dict(warmup_steps=-1), "warmup_steps"),
        (dict(warmup_steps=1.5), "warmup_steps"),
        (dict(schedule="linear_warmup_cosine"), "warmup_steps"),
        (dict(hold_steps=-1), "hold_steps"),
        (dict(schedule="constant", hold_steps=2), "hold"),
        (dict(grad_clip=0), "grad_clip"),
        (dict(label_smoothing=1.0), "label_smoothing"),
    ],
)
def test_a_bad_recipe_field_names_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        Recipe(**kw)


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(eval_every=0), "eval_every"),
        (dict(target_accuracy=0.0), "target_accuracy"),
        (dict(target_accuracy=1.5), "target_accuracy"),
        (dict(patience=0), "patience"),
        (dict(min_delta=-0.01), "min_delta"),
        (dict(steps_past_target=-1, target_accuracy=1.0), "steps_past_target"),
        (dict(steps_past_target=3), "steps_past_target must be an integer >= 0, with target_accuracy"),
    ],
)
def test_a_bad_stopping_field_names_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        Stopping(**kw)


def test_recipe_from_preset_reads_the_presets_dicts():
    code = Recipe.from_preset(RECIPES["code"])
    assert code == Recipe(
        lr=1e-2,
        betas=(0.9, 0.95),
        weight_decay=0.0,
        warmup_steps=100,
        hold_steps=400,
        schedule="code",
        grad_clip=1.5,
        label_smoothing=0.1,
    )
    assert hash(code) == hash(Recipe.from_preset(dict(RECIPES["code"])))  # frozen: hashable, equal by value
    ch5 = experiment("ch5_capacity", "ci")["recipe"]  # betas as a list (JSON): read as a tuple
    assert Recipe.from_preset(ch5) == code
    assert Recipe.from_preset({**RECIPES["tab9"], "grad_clip": 0}).grad_clip is None  # 0: no clipping
    assert Recipe.from_preset({"lr": 0.5}) == Recipe(lr=0.5)  # a missing entry keeps the default
    assert dataclasses.replace(code, lr=3e-2).lr == 3e-2
    with pytest.raises(dataclasses.FrozenInstanceError):
        code.lr = 1.0
    with pytest.raises(ValueError, match=r"unknown recipe entries \['warmup_steps'\]"):
        Recipe.from_preset({**RECIPES["code"], "warmup_steps": 5})


def test_lr_schedules():
    assert lr_at(7, lr=0.1, steps=10, schedule="constant") == 0.1
    assert lr_at(0, lr=0.1, steps=10, schedule="cosine") == 0.1
    assert math.isclose(lr_at(5, lr=0.1, steps=10, schedule="cosine"), 0.05)
    assert [lr_at(s, lr=1.0, steps=12, schedule="linear_warmup_cosine", warmup_steps=4) for s in range(4)] == [
        0.25,
        0.5,
        0.75,
        1.0,
    ]
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
        f"backbone.layers.0.mixer.{k}"
        for k in ("in_proj.weight", "conv1d.weight", "x_proj.weight", "dt_proj.weight", "out_proj.weight")
    }
    not_decayed = {names[id(p)] for p in no_decay["params"]}
    assert {
        "backbone.layers.0.mixer.A_log",
        "backbone.layers.0.mixer.D",
        "backbone.layers.0.mixer.dt_proj.bias",
        "backbone.layers.0.norm.weight",
        "backbone.norm_f.weight",
    } <= not_decayed
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(lm.parameters()))  # tied head once


def test_labelled_accuracy_and_masked_loss():
    logits = torch.zeros(1, 4, 5)
    logits[0, 0, 2] = logits[0, 1, 3] = logits[0, 2, 1] = logits[0, 3, 4] = 1.0
    labels = torch.tensor([[2, -100, 0, 4]])
    assert labelled_accuracy(logits, labels) == pytest.approx(2 / 3)
    assert math.isnan(labelled_accuracy(logits, torch.full((1, 4), -100)))
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


def test_recipe_schedules_code_and_tab9():
    """code: warmup → hold → cosine to 0 (the authors' recipe for paper 002); tab9: warmup, then ÷10 over 15000 steps."""
    code = [lr_at(s, lr=1.0, steps=10, schedule="code", warmup_steps=2, hold_steps=3) for s in range(10)]
    assert code[:5] == [0.5, 1.0, 1.0, 1.0, 1.0]
    assert math.isclose(code[5], 1.0) and all(a > b > 0 for a, b in zip(code[5:], code[6:]))
    assert math.isclose(
        lr_at(7, lr=1.0, steps=10, schedule="code", warmup_steps=2, hold_steps=3), 0.5 * (1 + math.cos(math.pi * 2 / 5))
    )
    # a run shorter than the warmup stays inside it (allowed for the recipes only)
    assert lr_at(1, lr=1.0, steps=3, schedule="code", warmup_steps=100, hold_steps=400) == 0.02
    assert lr_at(0, lr=1.0, steps=10, schedule="tab9", warmup_steps=4) == 0.25
    assert math.isclose(lr_at(7500, lr=1.0, steps=20000, schedule="tab9", warmup_steps=4), 0.55)
    assert lr_at(19999, lr=1.0, steps=20000, schedule="tab9", warmup_steps=4) == 0.1
    assert set(RECIPES) == {"code", "tab9"} and RECIPES["code"]["schedule"] == "code"


def _ensemble_and_singles(n_members=3):
    sizes = [(16, 8), (8, 4), (16, 2)]
    ens = LinearMamba(64, 16, 8, ensemble=n_members, member_sizes=sizes[:n_members], seed=5)
    singles = []
    for e in range(n_members):
        one = LinearMamba(64, 16, 8, ensemble=1, member_sizes=[sizes[e]])
        with torch.no_grad():
            for p_one, p_ens in zip(one.parameters(), ens.parameters()):
                p_one.copy_(p_ens[e : e + 1])
        singles.append(one)
    return ens, singles


def test_per_member_training_equals_training_each_member_alone():
    """The ensemble loss is a sum of per-member means, clipping uses each member's own norm and AdamW is
    element-wise: every member ends where it would end trained alone, from the same init and data."""
    ens, singles = _ensemble_and_singles()
    make_batch = batch_fn(64, 8, 32, 16, 3)
    kw = dict(steps=12, overrides={"warmup": 3, "hold": 2, "grad_clip": 0.05})
    r = train_ensemble(ens, make_batch, **kw)
    for e, one in enumerate(singles):
        r1 = train_ensemble(one, make_batch, **kw)
        for p_one, p_ens in zip(one.parameters(), ens.parameters()):
            torch.testing.assert_close(p_one[0], p_ens[e], rtol=1e-5, atol=1e-6)
        assert r1.history[-1]["loss"][0] == pytest.approx(r.history[-1]["loss"][e], rel=1e-5)
        assert r1.history[-1]["grad_norm"][0] == pytest.approx(r.history[-1]["grad_norm"][e], rel=1e-4)
    assert r.history[0]["lr"] == pytest.approx(1e-2 / 3)


def test_per_member_early_stop_waits_for_every_member():
    ens, _ = _ensemble_and_singles(2)
    ev = mqar(64, 8, 32, 40, 10**6)
    r = train_ensemble(
        ens,
        batch_fn(64, 8, 32, 16, 0),
        steps=6,
        eval_batch=ev,
        eval_every=2,
        target_accuracy=1.0,
        overrides={"warmup": 1, "hold": 1},
    )
    assert r.steps_run == 6 and not r.stopped_early  # untrained members never reach 1.0
    assert len(r.accuracy) == len(r.best_accuracy) == 2
    assert r.best_accuracy == [max(h["accuracy"][e] for h in r.evals) for e in range(2)]
    with pytest.raises(ValueError, match="unknown recipe entries"):
        train_ensemble(ens, batch_fn(64, 8, 32, 16, 0), steps=2, overrides={"warmpu": 1})


def test_one_accuracy_helper():
    """labelled_accuracy: pooled (float), per member (lead axis) and per example, shared or per-member labels."""
    logits = torch.zeros(2, 2, 3, 5)  # (members, B, L, V)
    logits[0, :, :, 1] = 1.0  # member 0 predicts 1 everywhere
    logits[1, :, :, 2] = 1.0  # member 1 predicts 2 everywhere
    labels = torch.tensor([[1, -100, 2], [-100, -100, -100]])
    torch.testing.assert_close(
        labelled_accuracy(logits, labels, per="member"), torch.tensor([0.5, 0.5], dtype=torch.float64)
    )
    torch.testing.assert_close(
        labelled_accuracy(logits, labels, per="example"), torch.tensor([[0.5, 0.0], [0.5, 0.0]], dtype=torch.float64)
    )
    assert labelled_accuracy(logits[0], labels) == 0.5
    correct, total = labelled_counts(logits, labels.expand(2, 2, 3))
    assert correct.tolist() == [1, 1] and total.tolist() == [2, 2]
    with pytest.raises(ValueError, match="per must be"):
        labelled_accuracy(logits, labels, per="batch")
    with pytest.raises(ValueError, match="do not match"):
        labelled_accuracy(logits, labels[:, :2])


def test_evaluate_pools_batches_for_one_model_and_for_members():
    ens, singles = _ensemble_and_singles(2)
    x, y = mqar(64, 8, 32, 30, 1)
    per_member = evaluate(ens, x, y, per_member=True, batch_size=7)
    assert per_member.shape == (2,) and per_member.dtype == torch.float64
    torch.testing.assert_close(per_member, evaluate(ens, x, y, per_member=True))
    one = LinearMamba(64, 16, 8, seed=0)
    assert evaluate(one, x, y, batch_size=7) == pytest.approx(labelled_accuracy(one(x), y))
    assert float(evaluate(one, x, y, per_member=True)[0]) == pytest.approx(evaluate(one, x, y))


def test_steps_past_target_train_exactly_that_many_steps_after_the_target():
    """ "Trained past 100 %": once the held-out accuracy reaches the target, exactly n more steps, whatever the cap."""
    kw = dict(recipe=Recipe(lr=3e-2, weight_decay=0.1, schedule="constant", grad_clip=1.0), seed=0, progress=False)
    stop = train(
        tiny_lm(0),
        mqar_make_batch(128),
        steps=400,
        eval_batch=mqar_eval(),
        stop=Stopping(eval_every=25, target_accuracy=0.9),
        **kw,
    )
    assert stop.stopped_early and stop.target_step == stop.steps_run
    past = train(
        tiny_lm(0),
        mqar_make_batch(128),
        steps=stop.target_step + 10,  # a cap shorter than target + n: n steps are still trained after the target
        eval_batch=mqar_eval(),
        stop=Stopping(eval_every=25, target_accuracy=0.9, steps_past_target=30),
        **kw,
    )
    assert past.target_step == stop.target_step  # the same run up to the target
    assert past.steps_run == stop.target_step + 30 and not past.stopped_early
    assert past.history[-1]["step"] == past.steps_run and "accuracy" in past.history[-1]  # evaluated at its end
    never = train(tiny_lm(0), mqar_make_batch(128), steps=20, eval_batch=mqar_eval(),
                  stop=Stopping(eval_every=25, target_accuracy=1.0, steps_past_target=30), **kw)  # fmt: skip
    assert never.target_step is None and never.steps_run == 20  # the cap holds when the target is not reached
    with pytest.raises(ValueError, match="steps_past_target must be an integer >= 0, with target_accuracy"):
        Stopping(steps_past_target=3)
    with pytest.raises(ValueError, match="schedule='constant'"):
        train(tiny_lm(0), mqar_make_batch(8), steps=5, eval_batch=mqar_eval(8), recipe=Recipe(schedule="cosine"),
              stop=Stopping(target_accuracy=0.9, steps_past_target=3), progress=False)  # fmt: skip
