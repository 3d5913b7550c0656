"""MixerEnsemble: E MixerLM models of one shape as one model (one scan of E·d channels, B and C as groups)."""

from __future__ import annotations

import pytest
import torch

from mamba_recall.models.mixer_ensemble import MixerEnsemble
from mamba_recall.chapters.ch3_selectivity.training.selectivity import build_model


def _models(mixer="s6", n=3, **kw):
    out = []
    for seed in range(n):
        torch.manual_seed(seed)
        sizes = dict(V=20, d=16, N=8, T=24, n_classes=16, use_conv=True, d_conv=4, activation="silu")
        out.append(build_model(mixer, use_gate=mixer == "s4d", **dict(sizes, **kw)))
    return out


@pytest.mark.parametrize("mixer", ["s6", "s4d"])
def test_each_member_computes_what_its_model_computes(mixer):
    models = _models(mixer)
    ens = MixerEnsemble.from_members(models)
    ids = torch.randint(0, 20, (3, 5, 24))
    logits = ens(ids)
    assert logits.shape == (3, 5, 24, 16)
    for e, m in enumerate(models):
        torch.testing.assert_close(logits[e], m(ids[e]), rtol=1e-5, atol=1e-5)
        back = ens.member(e)  # member e as a model of its own: the same parameters
        assert all(torch.equal(a, b) for a, b in zip(back.state_dict().values(), m.state_dict().values()))
    shared = ens(ids[0])  # (b, T): the same batch for every member
    torch.testing.assert_close(shared[2], models[2](ids[0]), rtol=1e-5, atol=1e-5)


def test_members_do_not_mix():
    ens = MixerEnsemble.from_members(_models("s6"))
    ids = torch.randint(0, 20, (3, 5, 24))
    ens(ids)[1].sum().backward()
    for name, p in ens.named_parameters():
        assert p.grad[[0, 2]].abs().max() == 0, name  # member 1's output depends on member 1 only
        assert p.grad[1].abs().max() > 0, name


def test_bad_members_and_inputs_are_named():
    with pytest.raises(ValueError, match="no 'mamba2' mixer"):
        MixerEnsemble.from_members(_models("mamba2", n=2, use_conv=False))
    with pytest.raises(ValueError, match="must share"):
        MixerEnsemble.from_members(_models("s6", n=1) + _models("s6", n=1, N=4))
    with pytest.raises(ValueError, match="at least one"):
        MixerEnsemble.from_members([])
    ens = MixerEnsemble.from_members(_models("s6", n=2))
    with pytest.raises(ValueError, match="n_members=2"):
        ens(torch.zeros(3, 4, 24, dtype=torch.long))
    with pytest.raises(IndexError, match="2 members"):
        ens.member(2)
