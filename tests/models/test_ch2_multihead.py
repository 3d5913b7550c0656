"""Chapter 2, multi-head part: the simplified multi-head linear Mamba-2 (Alg. 3), Thm 5 algebra (Lemmas 2 and 5) and the effective dimensions."""

import math

import pytest
import torch

from mamba_recall.models.linear_mamba import HEAD_PATTERNS, LinearMamba, MultiHeadLinearMamba
from mamba_recall.tasks.mqar import batch_fn, mqar
from mamba_recall.chapters.ch2_hashing_scaling.training.ensemble import train_ensemble
from mamba_recall.theory.capacity import multihead_prediction, p_success, split_value_variance

V, D, L = 32, 8, 16


def _copy_common(dst, src):
    """Copy E, P_in, W_conv, P_out from a LinearMamba (ensemble=1) into a MultiHeadLinearMamba."""
    with torch.no_grad():
        dst.embedding.copy_(src.embedding)
        dst.in_proj.copy_(src.in_proj[0])
        dst.conv.copy_(src.conv[0])
        dst.out_proj.copy_(src.out_proj[0])


@pytest.mark.parametrize("M", [1, 2, 4])
def test_mva_split_equals_single_head(M):
    """B5 / Lemma 2 (Eq. 127): MVA with shared B, C and values split into heads = one head (Alg. 1)."""
    ref = LinearMamba(V, D, 4, ensemble=1, seed=0)
    mh = MultiHeadLinearMamba(V, D, 4, M, "MVA", values="split", ensemble=1, seed=1)
    _copy_common(mh, ref)
    with torch.no_grad():
        mh.x_proj_B.copy_(ref.x_proj_B[0])
        mh.x_proj_C.copy_(ref.x_proj_C[0])
    x = torch.randint(0, V, (3, L), generator=torch.Generator().manual_seed(0))
    assert (mh(x) - ref(x)).abs().max() <= 1e-5


@pytest.mark.parametrize("M", [2, 3])
def test_mha_full_values_equals_single_head_with_MN_states(M):
    """B5 / Lemma 5 (Eq. 131): MHA with full-value heads (summed) = one head with the stacked F', N' = M N."""
    N = 3
    ref = LinearMamba(V, 6, M * N, ensemble=1, seed=0)
    mh = MultiHeadLinearMamba(V, 6, N, M, "MHA", values="full", ensemble=1, seed=1)
    _copy_common(mh, ref)
    with torch.no_grad():
        mh.x_proj_B.copy_(ref.x_proj_B[0])  # (M·N, D_in) = (F^1; …; F^M)
        mh.x_proj_C.copy_(ref.x_proj_C[0])
    x = torch.randint(0, V, (3, L), generator=torch.Generator().manual_seed(0))
    assert (mh(x) - ref(x)).abs().max() <= 1e-5


@pytest.mark.parametrize("pattern", HEAD_PATTERNS)
def test_pattern_shapes_and_sharing(pattern):
    M, N = 4, 2
    m = MultiHeadLinearMamba(V, D, N, M, pattern, ensemble=2, seed=0)
    assert m.x_proj_B.shape[1] == (M * N if pattern in ("MHA", "MKA") else N)
    assert m.x_proj_C.shape[1] == (M * N if pattern in ("MHA", "MQA") else N)
    x = torch.randint(0, V, (2, L))
    out = m.internals(m.embed(m._ids(x)))
    assert out["B"].shape == (2, 2, L, M, N) and out["y_heads"].shape == (2, 2, L, M, 2 * D // M)
    shared_vals = pattern in ("MQA", "MKA")
    assert torch.allclose(out["values"][..., 0, :], out["values"][..., 1, :]) == shared_vals
    assert torch.allclose(out["B"][..., 0, :], out["B"][..., 1, :]) == (pattern in ("MQA", "MVA"))
    assert torch.allclose(out["C"][..., 0, :], out["C"][..., 1, :]) == (pattern in ("MKA", "MVA"))
    assert m(x).shape == (2, 2, L, V)
    single = MultiHeadLinearMamba(V, D, N, M, pattern, seed=0)
    assert single(x).shape == (2, L, V)


def test_ensemble_member_with_smaller_state_equals_standalone_model():
    m = MultiHeadLinearMamba(V, D, 4, 2, "MHA", ensemble=2, member_states=[4, 2], seed=0)
    solo = MultiHeadLinearMamba(V, D, 2, 2, "MHA", ensemble=1, seed=5)
    with torch.no_grad():
        for name in ("embedding", "in_proj", "conv", "out_proj", "W_contract", "W_heads"):
            getattr(solo, name).copy_(getattr(m, name)[1:2])
        for nm in ("x_proj_B", "x_proj_C"):
            getattr(solo, nm).copy_(getattr(m, nm)[1].view(2, 4, -1)[:, :2].reshape(1, 4, -1))
    x = torch.randint(0, V, (2, L))
    assert (m(x)[1] - solo(x)[0]).abs().max() <= 1e-5


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="head pattern"):
        MultiHeadLinearMamba(V, D, 2, 2, "GQA")
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadLinearMamba(V, 5, 2, 4, "MHA")
    with pytest.raises(ValueError, match="values mode"):
        MultiHeadLinearMamba(V, D, 2, 2, "MHA", values="concat")
    with pytest.raises(ValueError, match="member_states"):
        MultiHeadLinearMamba(V, D, 2, 2, "MHA", ensemble=2, member_states=[1, 3])
    m = MultiHeadLinearMamba(V, D, 2, 2, "MHA")
    with pytest.raises(ValueError, match="token ids"):
        m(torch.full((1, L), V))


def test_train_ensemble_runs_and_is_deterministic():
    def run():
        m = MultiHeadLinearMamba(V, D, 4, 2, "MQA", ensemble=2, member_states=[2, 4], seed=0)
        r = train_ensemble(m, batch_fn(V, 4, L, 16, 0), steps=5, overrides=dict(warmup=2, hold=1), num_threads=1)
        return r.history[-1]["loss"]

    a, b = run(), run()
    assert a == b and all(math.isfinite(v) for v in a)


def test_theorem5_prediction():
    """C4 / Thm 5: MHA → N' = M N; MQA, MKA, MVA → N' = N; D unchanged."""
    for pattern in HEAD_PATTERNS:
        pred = multihead_prediction(512, 16, 60, 4, 3, pattern)
        ne = 12 if pattern == "MHA" else 4
        assert (pred["D_eff"], pred["N_eff"]) == (60, ne)
        assert pred["p_eq77"] == pytest.approx(p_success(512, 16, 60, ne, "eq77"))
    assert (
        multihead_prediction(512, 16, 60, 4, 6, "MHA")["p_eq77"]
        > multihead_prediction(512, 16, 60, 4, 1, "MHA")["p_eq77"]
    )
    assert split_value_variance(16, 60, 4, 4, "full") == pytest.approx(split_value_variance(16, 60, 4, 1) / 4)
    assert split_value_variance(16, 60, 4, 4, "split") == split_value_variance(16, 60, 4, 1, "split")
    with pytest.raises(ValueError):
        multihead_prediction(512, 16, 60, 4, 2, "MHA", law="lemma1")


def test_logit_noise_statistics():
    from mamba_recall.chapters.ch2_hashing_scaling.pipelines.heads import logit_noise

    m = MultiHeadLinearMamba(V, D, 2, 2, "MHA", ensemble=2, seed=0)
    x, y = mqar(V, 4, L, 8, 0)
    st = logit_noise(m, x, y, V, 4)
    assert len(st) == 2 and all(math.isfinite(s["rel_var_empty"]) for s in st)
    n_q = int((y != -100).sum())
    assert st[0]["norm"]["correct"].numel() == n_q
    assert st[0]["norm"]["wrong"].numel() == n_q * 3 and st[0]["norm"]["empty"].numel() == n_q * (V // 2 - 4)
