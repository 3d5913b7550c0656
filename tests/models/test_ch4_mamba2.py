"""Tests of the Mamba-2 (SSD) model and the head analysis of Chapter 4 (paper 004, App. F, Fig. 13)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from mamba_recall.chapters.ch4_primacy_recency.pipelines import heads as hd
from mamba_recall.analysis import interventions as iv
from mamba_recall.models.mamba2 import Mamba2LMHeadModel, segsum, ssd_quadratic
from mamba_recall.tasks.serial_recall import RecallVocab, recall_contexts, recall_prompts
from test_ch4_primacy import assert_empty_ablation_is_bit_identical  # shared with the Mamba-1 test

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny():
    vocab = RecallVocab(8, 3, 4)
    torch.manual_seed(0)
    model = Mamba2LMHeadModel(32, 2, vocab.size, d_state=8, headdim=16, dtype=torch.float64).eval()
    return model, vocab


def test_parameter_names_and_shapes_match_mamba_ssm():
    # mamba_ssm.modules.mamba2.Mamba2(d_model=32, d_state=8, headdim=16, expand=2, ngroups=1):
    # d_inner = 64, nheads = 4, d_in_proj = 2·64 + 2·8 + 4, conv_dim = 64 + 2·8
    torch.manual_seed(0)
    m = Mamba2LMHeadModel(32, 2, 20, d_state=8, headdim=16)
    sd = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    mixer = {
        "dt_bias": (4,),
        "A_log": (4,),
        "D": (4,),
        "in_proj.weight": (2 * 64 + 2 * 8 + 4, 32),
        "conv1d.weight": (80, 1, 4),
        "conv1d.bias": (80,),
        "norm.weight": (64,),
        "out_proj.weight": (32, 64),
    }
    want = {"backbone.embedding.weight": (24, 32), "backbone.norm_f.weight": (32,), "lm_head.weight": (24, 32)}
    for i in range(2):
        want[f"backbone.layers.{i}.norm.weight"] = (32,)
        want.update({f"backbone.layers.{i}.mixer.{k}": v for k, v in mixer.items()})
    assert sd == want
    mix = m.backbone.layers[0].mixer
    assert mix.nheads == mix.ablation_units == 4 and mix.A_log._no_weight_decay and mix.dt_bias._no_weight_decay
    A = torch.exp(mix.A_log)
    assert bool(((A >= 1) & (A <= 16)).all())  # A_init_range = (1, 16)
    dt = torch.nn.functional.softplus(mix.dt_bias)
    assert bool(((dt >= 1e-3 - 1e-7) & (dt <= 0.1 + 1e-7)).all())
    assert m.lm_head.weight is m.backbone.embedding.weight


def _sequential(x, delta, log_alpha, B, C, D, h0):
    """The recurrence h_t = α_t h_{t−1} + Δ_t x_t B_tᵀ, y_t = h_t C_t + D x_t, step by step."""
    b, T, H, P = x.shape
    h = h0.clone()
    ys = []
    for t in range(T):
        a = torch.exp(log_alpha[:, :, t])[..., None, None]
        h = a * h + (delta[:, t, :, None, None] * x[:, t, :, :, None]) * B[:, t, None, None, :]
        ys.append((h * C[:, t, None, None, :]).sum(-1) + D[None, :, None] * x[:, t])
    return torch.stack(ys, 1), h


def test_ssd_quadratic_equals_recurrence():
    g = torch.Generator().manual_seed(0)
    b, T, H, P, N = 2, 13, 3, 4, 5
    x, B, C = (
        torch.randn(b, T, H, P, generator=g, dtype=torch.float64),
        torch.randn(b, T, N, generator=g, dtype=torch.float64),
        torch.randn(b, T, N, generator=g, dtype=torch.float64),
    )
    delta = torch.rand(b, T, H, generator=g, dtype=torch.float64)
    A = -torch.rand(H, generator=g, dtype=torch.float64) * 3
    log_alpha = (delta * A).transpose(1, 2).clone()
    log_alpha[0, 1, 4] = float("-inf")  # a zeroed decay
    D = torch.randn(H, generator=g, dtype=torch.float64)
    h0 = torch.randn(b, H, P, N, generator=g, dtype=torch.float64)
    y, hT = ssd_quadratic(x, delta, log_alpha, B, C, D, initial_state=h0, return_final_state=True)
    y_ref, h_ref = _sequential(x, delta, log_alpha, B, C, D, h0)
    torch.testing.assert_close(y, y_ref, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(hT, h_ref, rtol=1e-10, atol=1e-10)
    s = segsum(torch.tensor([1.0, 2.0, 3.0]))
    assert s[2, 0] == 5.0 and s[1, 1] == 0.0 and s[0, 2] == float("-inf")


def test_causality_and_prefix_state_continuation(tiny):
    model, vocab = tiny
    x = torch.randint(0, vocab.size, (3, 25), generator=torch.Generator().manual_seed(0))
    full = model(x)
    y = x.clone()
    y[:, 12] = (y[:, 12] + 1) % vocab.size
    out = model(y)
    assert torch.equal(out[:, :12], full[:, :12]) and not torch.allclose(out[:, 12:], full[:, 12:])
    for cut in (1, 2, 3, 10, 24):
        a, st = model(x[:, :cut], return_states=True)
        b = model(x[:, cut:], states=st)
        torch.testing.assert_close(torch.cat([a, b], 1), full, rtol=0, atol=1e-10)
    # index_select of the states (prefix-state evaluation over queries)
    _, st = model(x[:, :10], return_states=True)
    idx = torch.tensor([2, 2, 0])
    b = model(x[idx, 10:], states=[s.index_select(idx) for s in st])
    torch.testing.assert_close(b, full[idx, 10:], rtol=0, atol=1e-10)


def test_recall_by_position_matches_full_prompts(tiny):
    model, vocab = tiny
    ctx = recall_contexts(5, 6, "random", vocab=vocab, seed=3)
    for heads in (None, {0: torch.tensor([1, 3])}):
        got = iv.recall_by_position(model, ctx, channels=heads, steps=iv.first_triplet_steps(), batch_size=4)
        with iv.ablate(model, heads, iv.first_triplet_steps()):
            for k in range(1, 6):
                toks, ans = recall_prompts(ctx, k)
                pred = model(toks)[:, -1].argmax(-1)
                assert np.array_equal(got[:, k - 1], (pred == ans).numpy())


@torch.no_grad()
def test_uniform_init_states_for_mamba2(tiny):
    """App. G's U(0, s) initial state in Mamba-2's layout, (batch, H, P, N), consumed as h_0 by the SSD."""
    model, vocab = tiny
    mix = model.backbone.layers[0].mixer
    H, P, N, K = mix.nheads, mix.headdim, mix.d_state, mix.d_conv
    st = iv.uniform_init_states(model, 0, batch=2, seed=3)
    assert [tuple(s.ssm.shape) for s in st] == [(2, H, P, N)] * 2
    assert [tuple(s.conv.shape) for s in st] == [(2, H * P + 2 * N, K - 1)] * 2  # conv_dim: x, B and C
    assert torch.all(st[1].ssm == 0) and all(torch.all(s.conv == 0) for s in st)
    draw = torch.rand(H * P, N, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    assert torch.equal(st[0].ssm[1], draw.reshape(H, P, N))  # channel e = h·P + p, as in a Mamba-1 layer

    # layer 0 reads the same inputs whatever h_0, so h_T − h_T(h_0 = 0) = exp(A_h Σ_t Δ_t) · h_0 (Eq. of the SSD
    # recurrence h_t = α_t h_{t−1} + Δ_t x_t B_tᵀ): linear in h_0, hence in the scale s of U(0, s)
    x = torch.randint(0, vocab.size, (2, 12), generator=torch.Generator().manual_seed(4))
    zero = iv.uniform_init_states(model, 0, batch=2, scale=1.0)
    zero = [type(s)(s.conv, torch.zeros_like(s.ssm)) for s in zero]
    _, internals = model(x, return_internals=True)
    _, end0 = model(x, states=zero, return_states=True)
    decay = torch.exp(-torch.exp(mix.A_log)[None, :] * internals[0].delta.sum(-1))  # (B, H)
    h_typical = float(end0[0].ssm.abs().mean())  # the model's own |h| after the prompt
    for s in (1.0, 0.1, h_typical):
        st = iv.uniform_init_states(model, 0, batch=2, seed=3, scale=s)
        assert float(st[0].ssm.max()) <= s
        _, end = model(x, states=st, return_states=True)
        torch.testing.assert_close(end[0].ssm - end0[0].ssm, decay[:, :, None, None] * st[0].ssm, rtol=1e-9, atol=1e-12)
    ctx = recall_contexts(4, 3, "random", vocab=vocab, seed=1)
    tiny_state = iv.uniform_init_states(model, 0, batch=1, seed=3, scale=1e-30)
    assert np.array_equal(iv.recall_by_position(model, ctx, init_states=tiny_state), iv.recall_by_position(model, ctx))


def test_empty_ablation_is_bit_identical(tiny):
    model, vocab = tiny
    assert_empty_ablation_is_bit_identical(model, vocab)
    x = torch.randint(0, vocab.size, (2, 20), generator=torch.Generator().manual_seed(1))
    base = model(x)
    with iv.ablate(model, {0: torch.tensor([1])}, "all"):  # a real target does change the output
        assert not torch.equal(model(x), base)


def test_zeroed_alpha_makes_a_head_memoryless(tiny):
    model, vocab = tiny
    x = torch.randint(0, vocab.size, (2, 15), generator=torch.Generator().manual_seed(2))
    mix = model.backbone.layers[0].mixer
    h = model.backbone.layers[0].norm(model.backbone.embedding(x))
    mask = torch.zeros(mix.nheads, 15, dtype=torch.bool)
    mask[1] = True
    _, st, it = mix(h, abar_mask=mask, return_state=True, return_internals=True)
    assert bool((it.alpha[:, 1] == 0).all()) and bool((it.alpha[:, 0] > 0).all())
    # closed form: the state of a memoryless head is its last input, h_T = Δ_T x_T B_Tᵀ
    want = it.delta[:, 1, -1, None, None] * it.x[:, -1, 1, :, None] * it.B[:, -1, None, :]
    torch.testing.assert_close(st.ssm[:, 1], want, rtol=1e-10, atol=1e-12)
    _, st0 = mix(h, return_state=True)
    others = [0, 2, 3]
    torch.testing.assert_close(st.ssm[:, others], st0.ssm[:, others], rtol=1e-10, atol=1e-12)
    # the ablation tool addresses heads (width H) and random controls draw heads
    r = iv.random_channels(model, 3, seed=0)
    assert all(int(v.max()) < mix.nheads for v in r.values()) and sum(len(v) for v in r.values()) == 3


def test_head_statistic_closed_form(tiny):
    model, vocab = tiny
    ctx = recall_contexts(6, 3, "repeated", vocab=vocab, seed=4)
    toks, _ = recall_prompts(ctx, 1)
    deltas, alphas = hd.record_head_internals(model, toks)
    rng = slice(1, toks.shape[1] - 2)
    stats = hd.head_stats(model, toks)
    for d, a, A, M in zip(deltas, alphas, hd.head_A(model), stats.M):
        torch.testing.assert_close(hd.explicit_product_M(a, rng), M, rtol=1e-10, atol=1e-300)
        torch.testing.assert_close(torch.exp(A * d[..., rng].sum(-1)), M, rtol=0, atol=0)
    # identification at the threshold: exactly the heads with mean 𝓜 ≥ τ; τ = 0 takes all, τ = 1 none
    tau = float(stats.mean_M()[0].median())
    got = hd.identify_heads(stats, tau)
    assert got[0].tolist() == [h for h in range(4) if float(stats.mean_M()[0][h]) >= tau]
    assert sum(len(h) for h in hd.identify_heads(stats, 0.0)) == stats.n_heads == 8
    assert sum(len(h) for h in hd.identify_heads(stats, 1.0)) == 0
    frame = hd.head_frame(stats)
    assert len(frame) == 8 and set(frame.columns) >= {"layer", "head", "M", "long_term"}


def test_check_b14():
    base = np.ones((10, 4), bool)
    tgt = base.copy()
    tgt[:, 0] = False
    tgt[:5, 1:] = False
    rand = [base.copy() for _ in range(5)]
    rand[0][:1, 0] = False
    r = hd.check_b14({"base": base, "targeted": tgt, "global": rand, "count": 2}, fraction=0.25)
    assert r["delta1"] == 1.0 and abs(r["delta1_random"] - 0.02) < 1e-12 and r["mean_delta_k2"] == 0.5
    assert r["mean_delta_k2_random"] == 0.0 and r["fraction"] == 0.25 and "pass" not in r  # the rule decides
    r = hd.check_b14({"base": base, "targeted": base, "global": rand, "count": 2}, fraction=0.25)
    assert r["delta1"] == 0.0 and r["mean_delta_k2"] == 0.0


def test_determinism_and_training_smoke(tmp_path):
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import build_model, load_checkpoint
    from mamba_recall.chapters.ch4_primacy_recency.runners.train import train_smodel

    vocab = RecallVocab(8, 3, 4)
    cfg = {"arch": "mamba2", "d_model": 32, "n_layer": 1, "d_state": 8, "expand": 2, "headdim": 16}
    torch.manual_seed(3)
    a = build_model(cfg, vocab)
    torch.manual_seed(3)
    b = build_model(cfg, vocab)
    x = torch.randint(0, vocab.size, (2, 9), generator=torch.Generator().manual_seed(0))
    assert isinstance(a, Mamba2LMHeadModel) and torch.equal(a(x), b(x))
    _, side = train_smodel("s_m2", "ci", steps=3, out=tmp_path / "m2.pt", log=lambda s: None)
    meta = json.loads(side.read_text())
    assert meta["final"] and meta["train_config"]["model"]["arch"] == "mamba2"
    model, vocab2, _ = load_checkpoint(tmp_path / "m2.pt")
    assert isinstance(model, Mamba2LMHeadModel) and model.backbone.layers[0].mixer.headdim == 16


def test_committed_s_m2_checkpoint_is_deterministic():
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import checkpoint_path, load_checkpoint
    from mamba_recall.chapters.ch4_primacy_recency.runners.train import gate_metrics

    path = checkpoint_path("s_m2")
    if not path.exists():
        pytest.skip("no committed checkpoint results/checkpoints/ch4_train_s_m2_ci.pt")
    model, vocab, side = load_checkpoint(path, model="s_m2")
    assert path.stat().st_size < 5 * 2**20 and isinstance(model, Mamba2LMHeadModel)
    got = gate_metrics(model, vocab)
    for k, v in side["gate"]["metrics"].items():
        assert abs(got[k] - v) <= 1e-6, k
