"""Members trained together train as if alone: ``Stopping.freeze_reached`` (each member stops at its own target
step) and Chapter 3's ``train_members`` against ``train_one``, seed by seed."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from mamba_recall.chapters.ch3_selectivity.runners import mqar_train as M
from mamba_recall.chapters.ch3_selectivity.training.job_configs import MqarRun
from mamba_recall.presets import experiment
from mamba_recall.train import Stopping


def _config(mixer: str, target: float) -> MqarRun:
    cfg = experiment("ch3_mqar_train", "ci")
    return replace(M.resolved_config(dict(cfg, steps=600), 4, 32, mixer, 8), target_accuracy=target)


@pytest.fixture(scope="module")
def config():
    """The ci micro-MQAR cell (κ = 4, |V| = 16, T = 24, d = 32, N = 8) at 600 steps, stopping at 30 % held-out
    accuracy: the seeds reach it at different evaluations, so the members stop at different steps."""
    return _config("s6", 0.3)


@pytest.mark.parametrize("mixer", ["s6", "s4d"])
def test_members_train_as_their_models_train_alone(mixer, config):
    torch.set_num_threads(1)
    config = config if mixer == "s6" else _config("s4d", 0.12)  # Mamba-S4D (gated) learns less in 600 steps
    seeds = [0, 1, 2]
    alone = [M.train_one(config, s) for s in seeds]
    together = M.train_members(config, seeds)
    steps = [row["steps"] for _, row in alone]
    assert len(set(steps)) > 1, f"the members must stop at different steps for this test to mean anything: {steps}"
    for (r1, row1), (r2, row2) in zip(alone, together):
        assert row2["steps"] == row1["steps"]  # each member stopped where it stopped alone
        assert row2["accuracy"] == pytest.approx(row1["accuracy"], abs=2e-3)  # test accuracy, up to rounding
        assert [h["step"] for h in r2.history] == [h["step"] for h in r1.history]
        losses1, losses2 = [h["loss"] for h in r1.history], [h["loss"] for h in r2.history]
        assert losses2 == pytest.approx(losses1, rel=1e-3, abs=1e-4)
        assert r2.target_step == r1.target_step and r2.stopped_early == r1.stopped_early


def test_a_stopped_member_is_frozen(config):
    from mamba_recall.models.mixer_ensemble import MixerEnsemble
    from mamba_recall.theory.mqar_constructions import gen_mqar
    from mamba_recall.train import Recipe, train

    c = config
    models = [M._model(c, s, "auto") for s in (0, 1)]
    ens = MixerEnsemble.from_members(models)
    ev = gen_mqar(200, c.T, 4, c.V, seed=5)
    seen = []

    def batch(step):
        seen.append({n: p.detach().clone() for n, p in ens.named_parameters()})
        pairs = [gen_mqar(32, c.T, 4, c.V, seed=100 * k + step) for k in (1, 2)]
        return torch.stack([x for x, _ in pairs]), torch.stack([y for _, y in pairs])

    res = train(
        ens, batch, steps=400, recipe=Recipe(lr=3e-3, weight_decay=0.0), per_member=True, eval_batch=ev,
        stop=Stopping(eval_every=20, target_accuracy=0.1, freeze_reached=True), progress=False,
    )  # fmt: skip
    stops = res.member_target_steps  # member 1 reaches 10 % at an evaluation; member 0 never does in 400 steps
    assert stops[0] is None and stops[1] is not None and stops[1] < res.steps_run == 400, stops
    t1 = stops[1]
    for later in seen[t1:]:  # member 1's parameters from its stop on: unchanged while member 0 trains on
        assert all(torch.equal(later[n][1], seen[t1][n][1]) for n in later)
    assert not all(torch.equal(seen[-1][n][0], seen[t1][n][0]) for n in seen[t1])
    assert res.member(1).steps_run == t1 and len(res.member(1).history) == t1 and res.member(1).target_step == t1
    assert res.member(0).steps_run == 400 and res.member(0).target_step is None


def test_freeze_reached_needs_a_target_and_an_ensemble():
    with pytest.raises(ValueError, match="needs a target_accuracy"):
        Stopping(freeze_reached=True)
    from mamba_recall.train import Recipe, train

    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="for an ensemble"):
        train(
            model, lambda s: None, steps=2, recipe=Recipe(), eval_batch=(None, None),
            stop=Stopping(target_accuracy=0.5, freeze_reached=True),
        )  # fmt: skip
