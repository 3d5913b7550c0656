"""Per-state variant of paper 004's long-term statistic (Eqs. 2–4, §4.2) and the (channel, state) ablation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mamba_recall.analysis import channels as ch
from mamba_recall.analysis import interventions as iv
from mamba_recall.models.mamba import MambaInternals, MambaLMHeadModel
from mamba_recall.tasks.serial_recall import RecallVocab, recall_contexts


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    vocab = RecallVocab(16, 4, 4)
    model = MambaLMHeadModel(16, 2, vocab.size, d_state=8, dt_rank=2, backend="chunked").double().eval()
    return model, vocab


def _prompts(vocab, n=3, T=20, seed=1):
    return torch.randint(0, vocab.size, (n, T), generator=torch.Generator().manual_seed(seed))


def test_state_stats_shapes_and_ranges(tiny):
    model, vocab = tiny
    x = _prompts(vocab)
    ss = ch.state_stats(model, x)
    mix = model.backbone.layers[0].mixer
    E, N = mix.d_inner, mix.d_state
    assert ss.n_layers == 2 and ss.n_states == 2 * E * N and ss.T_total == 20
    for layer in range(2):
        assert ss.Q[layer].shape == ss.R[layer].shape == ss.W[layer].shape == (E, N)
        assert ss.M[layer].shape == (3, E, N) and ss.S[layer].shape == (E,)
        assert bool(((ss.Q[layer] >= 0) & (ss.Q[layer] <= 1)).all()) and bool((ss.R[layer] >= 0).all())
        assert ss.floor[layer] > 0
    # the Eq. (3) fields are those of the per-channel statistic
    cs = ch.channel_stats(model, x)
    assert all(torch.equal(a, b) for a, b in zip(ss.M, cs.M)) and all(torch.equal(a, b) for a, b in zip(ss.S, cs.S))
    top = ch.slow_states(ss, {0: 5, 1: 0})
    assert top[0].shape == (5, 2) and top[1].shape == (0, 2)
    q = ss.Q[0][top[0][:, 0], top[0][:, 1]]
    assert bool((q[:-1] >= q[1:]).all()) and float(q[0]) == float(ss.Q[0].max())


def test_state_stats_rejects_bad_input(tiny):
    model, vocab = tiny
    x = _prompts(vocab)
    with pytest.raises(ValueError, match="tau"):
        ch.state_stats(model, x, tau=1.5)
    with pytest.raises(ValueError, match="omega"):
        ch.state_stats(model, x, omega=-1.0)
    ss = ch.state_stats(model, x)
    with pytest.raises(ValueError, match="layer 7 does not exist"):
        ch.slow_states(ss, {7: 1})
    with pytest.raises(ValueError, match=r"counts\[0\]"):
        ch.slow_states(ss, {0: 10**6})


def test_statistic_picks_the_slow_writing_state():
    """Synthetic layer: E = 3 channels, N = 4 states, T = 12. Channel 0 is a closed gate (Δ ≈ 1e-4: keeps
    everything, writes nothing); channel 1 writes (Δ = 0.05) with A = −(0.1, 5, 10, 20): only state 0 is
    slow (keep ≥ 0.7 over the whole context needs |A| Σ Δ ≤ ln(1/0.7) ≈ 0.357, i.e. |A| ≤ 0.65); channel 2
    writes with every state fast. The statistic must rank (1, 0) first and give the closed gate Q = 0."""
    B, E, N, T = 1, 3, 4, 12
    delta = torch.tensor([1e-4, 0.05, 0.05], dtype=torch.float64)[None, :, None].expand(B, E, T).clone()
    A = -torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.1, 5.0, 10.0, 20.0], [5.0, 10.0, 20.0, 40.0]], dtype=torch.float64)
    x = torch.ones(B, E, T, dtype=torch.float64)
    Bm = torch.ones(B, N, T, dtype=torch.float64)
    it = MambaInternals(x=x, delta=delta, B=Bm, C=Bm, z=x, y=x, last_state=None)
    rng = ch.product_range(T)
    Q, R, W, floor = ch._state_layer(it, A, rng, ch.SLOW_TAU, ch.WRITE_FLOOR)
    assert Q.shape == (E, N)
    assert torch.all(Q[0] == 0)  # closed gate: W = 1e-4 < median write 0.05
    assert float(Q[1, 0]) == 1.0  # every write of the slow state keeps ≥ 0.7 to T
    # a fast state only keeps its last writes: exp(−|A| Δ k) ≥ 0.7 ⇔ k ≤ ln(1/0.7)/(|A| Δ)
    T_ = rng.stop - rng.start
    for n, a in enumerate([5.0, 10.0, 20.0], start=1):
        k_max = math.floor(math.log(1 / 0.7) / (a * 0.05) + 1e-12)
        assert float(Q[1, n]) == pytest.approx(min(T_, k_max + 1) / T_)
    stats = ch.StateStats(
        S=[delta[..., rng].sum(-1).mean(0)],
        M=[ch.closed_form_M(delta, A, rng)],
        A=[A],
        T_total=T,
        Q=[Q],
        R=[R],
        W=[W],
        floor=[floor],
        tau=ch.SLOW_TAU,
        omega=ch.WRITE_FLOOR,
    )
    assert ch.slow_states(stats, {0: 1})[0].tolist() == [[1, 0]]
    # the per-channel statistic (Eq. 4) picks the closed gate instead
    assert ch.identify(stats, 0.7, 0.7)[0].tolist() == [0]


def test_all_states_of_a_channel_equal_the_channel_ablation(tiny):
    model, vocab = tiny
    x = _prompts(vocab, T=16, seed=2)
    N = model.backbone.layers[0].mixer.d_state
    chans = {0: torch.tensor([1, 4, 9]), 1: torch.tensor([0, 30])}
    pairs = {k: torch.tensor([(int(c), n) for c in v for n in range(N)]) for k, v in chans.items()}
    masks = {k: iv.state_targets_mask(v, model.backbone.layers[k].mixer.d_inner, N) for k, v in pairs.items()}
    for steps in ("all", [1, 2, 3, 4]):
        with iv.ablate(model, chans, steps):
            want = model(x)
        for target in (pairs, masks, {k: [tuple(p) for p in v.tolist()] for k, v in pairs.items()}):
            with iv.ablate(model, target, steps):
                assert torch.equal(model(x), want)
    assert not torch.equal(want, model(x))  # the ablation does something
    ctx = recall_contexts(6, 5, "repeated", vocab=vocab, seed=3)
    np.testing.assert_array_equal(
        iv.recall_by_position(model, ctx, channels=chans, steps=[1, 2, 3, 4]),
        iv.recall_by_position(model, ctx, channels=pairs, steps=[1, 2, 3, 4]),
    )


def test_single_state_ablation_zeroes_only_that_state(tiny):
    model, vocab = tiny
    x = _prompts(vocab, T=15, seed=4)
    mix = model.backbone.layers[0].mixer
    h = model.backbone.layers[0].norm(model.backbone.embedding(x))
    mask = torch.zeros(1, mix.d_inner, 15, mix.d_state, dtype=torch.bool)  # 4-D: (B, E, L, N)
    mask[0, 3, :, 2] = True  # channel 3, state 2, every step: memoryless
    _, last, it = mix(h, abar_mask=mask, return_last_state=True, return_internals=True)
    _, last0 = mix(h, return_last_state=True)
    want = it.delta[:, 3, -1] * it.B[:, 2, -1] * it.x[:, 3, -1]
    torch.testing.assert_close(last[:, 3, 2], want, rtol=1e-10, atol=1e-12)
    keep = torch.ones_like(last0, dtype=torch.bool)
    keep[:, 3, 2] = False
    torch.testing.assert_close(last[keep], last0[keep], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="does not broadcast"):
        mix(h, abar_mask=torch.zeros(1, mix.d_inner, 15, mix.d_state + 1, dtype=torch.bool))


def test_empty_state_target_is_the_baseline(tiny):
    model, vocab = tiny
    x = _prompts(vocab, seed=5)
    base = model(x)
    E, N = model.backbone.layers[0].mixer.d_inner, model.backbone.layers[0].mixer.d_state
    for target in ({0: torch.zeros(0, 2, dtype=torch.long)}, {1: torch.zeros(E, N, dtype=torch.bool)}):
        with iv.ablate(model, target, "all"):
            assert torch.equal(model(x), base)
    assert all(b.mixer.abar_hook is None for b in model.backbone.layers)
    ctx = recall_contexts(6, 4, "repeated", vocab=vocab, seed=6)
    eff = iv.state_ablation_effects(model, ctx, {0: torch.zeros(0, 2, dtype=torch.long)}, "all", n_random=2)
    np.testing.assert_array_equal(eff["targeted"], eff["base"])
    for r in eff["layer_matched"]:
        np.testing.assert_array_equal(r, eff["base"])  # zero states drawn
    d = iv.first_position_drops(eff)
    assert d["targeted"] == 0.0 and d["channels"] is None and d["layer_matched"] == [0.0, 0.0]
    assert d["targeted_k3"] == 0.0 and d["layer_matched_mean_k3"] == 0.0 and d["base1"] == eff["base"][:, 0].mean()


def test_first_position_drops_arithmetic():
    base = np.ones((4, 5), dtype=bool)
    abl = base.copy()
    abl[:2, 0] = False  # δ(1) = 0.5
    abl[:1, 2:] = False  # δ(k) = 0.25 for k ≥ 3
    d = iv.first_position_drops({"base": base, "targeted": abl, "layer_matched": [base, abl], "channels": base})
    assert d["targeted"] == 0.5 and d["targeted_k3"] == 0.25 and d["channels"] == 0.0
    assert d["layer_matched"] == [0.0, 0.5] and d["layer_matched_mean"] == 0.25 and d["layer_matched_mean_k3"] == 0.125


def test_state_targets_reject_bad_input(tiny):
    model, _ = tiny
    E, N = model.backbone.layers[0].mixer.d_inner, model.backbone.layers[0].mixer.d_state
    with pytest.raises(ValueError, match="out of range"):
        iv.state_targets_mask([(0, N)], E, N)
    with pytest.raises(ValueError, match=r"\(k, 2\)"):
        iv.state_targets_mask(torch.zeros(3, 3, dtype=torch.long), E, N)
    with pytest.raises(ValueError, match="bool state mask"):
        iv.state_targets_mask(torch.zeros(E, N + 1, dtype=torch.bool), E, N)
    assert iv.is_state_target([(1, 2)]) and iv.is_state_target(torch.zeros(2, 2)) and not iv.is_state_target([1, 2])


def test_random_states_are_layer_matched_and_exclude_the_target(tiny):
    model, _ = tiny
    E, N = model.backbone.layers[0].mixer.d_inner, model.backbone.layers[0].mixer.d_state
    target = {0: torch.tensor([(c, n) for c in range(E) for n in range(N - 1)])}  # leaves E free pairs
    r = iv.random_states(model, {0: E}, seed=1, exclude=target)
    assert r[0].shape == (E, 2) and sorted(r[0][:, 1].tolist()) == [N - 1] * E
    a, b = iv.random_states(model, {1: 7}, seed=3), iv.random_states(model, {1: 7}, seed=3)
    assert torch.equal(a[1], b[1]) and len({tuple(p) for p in a[1].tolist()}) == 7
    with pytest.raises(ValueError, match="outside the excluded set"):
        iv.random_states(model, {0: E + 1}, exclude=target)
