"""Tier A checks of Chapter 4 (paper 004): channel statistic, identification, interventions,
prefix-state evaluation, generator, Wilson interval, determinism; plus a training smoke test."""

import json
import math

import numpy as np
import pytest
import torch

from mamba_recall.analysis import channels as ch
from mamba_recall.analysis import interventions as iv
from mamba_recall.models.mamba import MambaLMHeadModel
from mamba_recall.tasks.serial_recall import (
    SEP,
    RecallVocab,
    multiquery_batch,
    periodic_sequences,
    recall_contexts,
    recall_prompts,
)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    vocab = RecallVocab(16, 4, 4)
    model = MambaLMHeadModel(16, 2, vocab.size, d_state=8, dt_rank=2, backend="chunked").double().eval()
    return model, vocab


# A2 — closed form of Eq. (3) equals the explicit product
def test_closed_form_equals_product():
    g = torch.Generator().manual_seed(1)
    delta = torch.rand(3, 5, 30, generator=g, dtype=torch.float64) * 0.5
    A = -torch.rand(5, 16, generator=g, dtype=torch.float64) * 4
    rng = ch.product_range(30)
    assert (rng.start, rng.stop) == (1, 28)  # drops the first token and the two query tokens
    explicit, closed = ch.explicit_product_M(delta, A, rng), ch.closed_form_M(delta, A, rng)
    torch.testing.assert_close(closed, explicit, rtol=1e-6, atol=1e-300)


# A3 — identification semantics with known S
def _stats_with_S(S_values, N=16, T=12):
    """One prompt, channels with Σ_{t=1..T-3} Δ_t = S exactly and S4D-real A = −(1..N)."""
    E = len(S_values)
    delta = torch.zeros(1, E, T, dtype=torch.float64)
    delta[0, :, 1 : T - 2] = torch.tensor(S_values, dtype=torch.float64)[:, None] / (T - 3)
    delta[0, :, 0] = 5.0  # the first token is excluded
    delta[0, :, T - 2 :] = 5.0  # so are the two query tokens
    A = -torch.arange(1, N + 1, dtype=torch.float64).repeat(E, 1)
    rng = ch.product_range(T)
    M = ch.closed_form_M(delta, A, rng)
    return ch.ChannelStats(S=[delta[0, :, rng].sum(-1)], M=[M], A=[A], T_total=T)


@pytest.mark.parametrize("p", ch.GRID)
@pytest.mark.parametrize("tau", ch.GRID)
def test_identification_matches_analytic_threshold(p, tau):
    S = np.geomspace(1e-4, 1.0, 40)
    stats = _stats_with_S(list(S))
    got = set(ch.identify(stats, tau, p)[0].tolist())
    m = math.floor(p * 16) + 1  # P > p needs m of the 16 states: |A|_(m) S < ln(1/τ)
    want = {i for i, s in enumerate(S) if m * s < math.log(1 / tau)}
    assert got == want


def test_identification_strictness_and_tau_one():
    N = 10
    # channel 0: exactly 7 of 10 states above τ → P = 0.7 = p: not selected (strict >)
    M = torch.tensor([[[0.9] * 7 + [0.1] * 3, [0.7] * 10, [0.71] * 10]], dtype=torch.float64)
    stats = ch.ChannelStats(S=[torch.zeros(3)], M=[M], A=[-torch.ones(3, N)], T_total=10)
    assert ch.identify(stats, 0.7, 0.7)[0].tolist() == [2]  # M = τ is not counted (channel 1)
    assert ch.identify(stats, 0.7, 0.69)[0].tolist() == [0, 2]
    assert ch.identify(stats, 1.0, 0.5)[0].tolist() == []
    grid = ch.count_grid(_stats_with_S(list(np.geomspace(1e-4, 1, 30))))
    assert (np.diff(grid, axis=0) <= 0).all() and (np.diff(grid, axis=1) <= 0).all()


def test_rank_layers_and_target_set():
    chans = [torch.tensor([1, 2]), torch.tensor([0, 3, 4]), torch.tensor([5, 6])]
    assert ch.rank_layers(chans) == [1, 0, 2]
    assert set(ch.target_set(chans, 2)) == {0, 1}
    with pytest.raises(ValueError, match="top_n"):
        ch.target_set(chans, 4)


# A5 — prefix-state evaluation = full forward
def test_prefix_state_equals_full_forward(tiny):
    model, vocab = tiny
    x = torch.randint(0, vocab.size, (3, 25), generator=torch.Generator().manual_seed(0))
    full = model(x)
    for cut in (1, 2, 3, 10, 24):
        a, st = model(x[:, :cut], return_states=True)
        b = model(x[:, cut:], states=st)
        torch.testing.assert_close(torch.cat([a, b], 1), full, rtol=0, atol=1e-10)


def test_recall_by_position_matches_full_prompts(tiny):
    model, vocab = tiny
    ctx = recall_contexts(5, 6, "random", vocab=vocab, seed=3)
    got = iv.recall_by_position(model, ctx, batch_size=4)
    for k in range(1, 6):
        toks, ans = recall_prompts(ctx, k)
        pred = model(toks)[:, -1].argmax(-1)
        assert np.array_equal(got[:, k - 1], (pred == ans).numpy())


# A4 — interventions
def assert_empty_ablation_is_bit_identical(model, vocab):
    """Shared by the Mamba-1 and Mamba-2 tests: no target, an empty target or steps outside the sequence
    change nothing, and the hooks are removed afterwards."""
    x = torch.randint(0, vocab.size, (2, 20), generator=torch.Generator().manual_seed(1))
    base = model(x)
    with iv.ablate(model, {}, "all"):
        assert torch.equal(model(x), base)
    with iv.ablate(model, {0: torch.tensor([], dtype=torch.long)}, [1, 2]):
        assert torch.equal(model(x), base)
    with iv.ablate(model, {1: torch.tensor([1])}, [40, 41]):  # steps outside the sequence
        assert torch.equal(model(x), base)
    assert model.backbone.layers[0].mixer.abar_hook is None


def test_empty_ablation_is_bit_identical(tiny):
    assert_empty_ablation_is_bit_identical(*tiny)


def _mixer_io(model, x):
    h = model.backbone.embedding(x)
    return model.backbone.layers[0].mixer, model.backbone.layers[0].norm(h)


def test_all_step_ablation_is_memoryless(tiny):
    model, vocab = tiny
    x = torch.randint(0, vocab.size, (2, 15), generator=torch.Generator().manual_seed(2))
    mix, h = _mixer_io(model, x)
    chans = torch.tensor([0, 5, 7])
    mask = torch.zeros(mix.d_inner, 15, dtype=torch.bool)
    mask[chans] = True
    out, last, it = mix(h, abar_mask=mask, return_last_state=True, return_internals=True)
    # targeted channels: h_T = Δ_T B_T x_T; others as the normal scan
    want = it.delta[:, chans, -1, None] * it.B[:, None, :, -1] * it.x[:, chans, -1, None]
    torch.testing.assert_close(last[:, chans], want, rtol=1e-10, atol=1e-12)
    _, last0 = mix(h, return_last_state=True)
    others = torch.tensor([i for i in range(mix.d_inner) if i not in chans.tolist()])
    torch.testing.assert_close(last[:, others], last0[:, others], rtol=1e-10, atol=1e-12)


def test_zeroing_at_t_equals_reset_of_state(tiny):
    model, vocab = tiny
    x = torch.randint(0, vocab.size, (2, 16), generator=torch.Generator().manual_seed(3))
    mix, h = _mixer_io(model, x)
    t, chans = 6, torch.tensor([1, 2, 9])
    mask = torch.zeros(mix.d_inner, 16, dtype=torch.bool)
    mask[chans, t] = True
    ablated = mix(h, abar_mask=mask)
    # reference: run to t−1, reset the targeted channels' state to 0, continue
    o1, s1, c1 = mix(h[:, :t], return_last_state=True, return_conv_state=True)
    s1 = s1.clone()
    s1[:, chans] = 0
    o2 = mix(h[:, t:], initial_state=s1, conv_state=c1)
    torch.testing.assert_close(ablated, torch.cat([o1, o2], 1), rtol=1e-10, atol=1e-12)


def test_first_triplet_steps_restart_the_scan(tiny):
    model, vocab = tiny
    assert iv.first_triplet_steps() == [1, 2, 3, 4]
    assert iv.first_triplet_steps(2) == [5, 6, 7, 8] and iv.first_triplet_steps(1, bos=True) == [2, 3, 4, 5]
    x = torch.randint(0, vocab.size, (2, 14), generator=torch.Generator().manual_seed(4))
    mix, h = _mixer_io(model, x)
    mask = torch.zeros(mix.d_inner, 14, dtype=torch.bool)
    mask[:, 1:5] = True  # every channel: states from index 4 on = a scan restarted from 0 at index 4
    _, last = mix(h, abar_mask=mask, return_last_state=True)
    _, it = mix(h, return_internals=True)
    from mamba_recall.scan import selective_scan

    A = -torch.exp(mix.A_log)
    _, last_restart = selective_scan(
        it.x[..., 4:], it.delta[..., 4:], A, it.B[..., 4:], it.C[..., 4:], return_last_state=True, backend="reference"
    )
    torch.testing.assert_close(last, last_restart, rtol=1e-10, atol=1e-12)


def test_ablation_context_restores_hooks_and_rejects_bad_layers(tiny):
    model, _ = tiny
    with pytest.raises(ValueError, match="layer 5 does not exist"):
        with iv.ablate(model, {5: torch.tensor([0])}):
            pass
    assert all(b.mixer.abar_hook is None for b in model.backbone.layers)


def test_random_channels():
    torch.manual_seed(0)
    model = MambaLMHeadModel(16, 3, 20, d_state=4, dt_rank=2)
    g = iv.random_channels(model, 10, seed=1)
    assert sum(len(v) for v in g.values()) == 10
    lm = iv.random_channels(model, {1: 4}, seed=1, exclude={1: torch.arange(28)})
    assert set(lm[1].tolist()) <= set(range(28, 32)) and len(lm[1]) == 4
    assert iv.random_channels(model, 10, seed=1)[0].tolist() == g[0].tolist()


def test_uniform_init_states(tiny):
    model, _ = tiny
    mix = model.backbone.layers[1].mixer
    E, N, K = mix.d_inner, mix.d_state, mix.d_conv
    st = iv.uniform_init_states(model, 1, batch=3, seed=42)
    assert [tuple(s.ssm.shape) for s in st] == [(3, E, N)] * 2 and [tuple(s.conv.shape) for s in st] == [
        (3, E, K - 1)
    ] * 2
    assert torch.all(st[0].ssm == 0) and st[1].ssm.min() >= 0 and st[1].ssm.max() <= 1
    assert all(torch.all(s.conv == 0) for s in st) and st[1].ssm.dtype == mix.A_log.dtype
    assert torch.equal(st[1].ssm[0], st[1].ssm[2])
    assert torch.equal(st[1].ssm, iv.uniform_init_states(model, 1, batch=3, seed=42)[1].ssm)
    # the default is the paper's U(0, 1) draw, as it has always been made
    draw = torch.rand(E, N, generator=torch.Generator().manual_seed(42), dtype=torch.float64)
    assert torch.equal(st[1].ssm[0], draw.to(mix.A_log.dtype))
    # U(0, s): the same draw scaled, for s from 1 down to a small |h|
    for s in (0.5, 1e-2, 1e-4):
        sc = iv.uniform_init_states(model, 1, batch=3, seed=42, scale=s)[1].ssm
        assert torch.equal(sc, (s * draw).to(mix.A_log.dtype).expand(3, E, N)) and sc.max() <= s
    with pytest.raises(ValueError, match="scale must be"):
        iv.uniform_init_states(model, 1, batch=1, scale=0.0)
    with pytest.raises(ValueError, match="does not exist"):
        iv.uniform_init_states(model, 2, batch=1)


# A6 — the generator
@pytest.mark.parametrize("L", [1, 4, 16, 20])
def test_recall_generator(L):
    vocab = RecallVocab(32, 8, 4)
    rep = recall_contexts(L, 20, "repeated", vocab=vocab, seed=5)
    rnd = recall_contexts(L, 20, "random", vocab=vocab, seed=5)
    assert rep.tokens.shape == (20, 4 * L)
    assert torch.equal(rep.subjects, rnd.subjects) and torch.equal(rep.objects, rnd.objects)  # paired
    assert all(len(set(r.tolist())) == 1 for r in rep.relations)
    if L <= vocab.n_relations:
        assert all(len(set(r.tolist())) == L for r in rnd.relations)
    for b in range(20):
        s, o = rep.subjects[b].tolist(), rep.objects[b].tolist()
        if 2 * L <= vocab.n_names:
            assert len(set(s + o)) == 2 * L
        assert len(set(s)) == L and len(set(o)) == L
    assert (rep.tokens[:, 3::4] == SEP).all()
    toks, ans = recall_prompts(rep, 1 + (L - 1) // 2, n_distract=7, distractor_seed=1)
    k = 1 + (L - 1) // 2
    assert toks.shape == (20, 4 * L + 2 + 8) and toks[0, 4 * L + 7] == SEP
    assert torch.equal(toks[:, -2], rep.subjects[:, k - 1]) and torch.equal(ans, rep.objects[:, k - 1])
    assert torch.equal(recall_contexts(L, 20, "random", vocab=vocab, seed=5).tokens, rnd.tokens)


def test_generator_errors():
    with pytest.raises(ValueError, match="relation variant"):
        recall_contexts(4, 2, "mixed")
    with pytest.raises(ValueError, match="n_names"):
        recall_contexts(40, 2, vocab=RecallVocab(32, 8))
    with pytest.raises(ValueError, match="1..L"):
        recall_prompts(recall_contexts(4, 2), 5)


def test_multiquery_batch_labels():
    vocab = RecallVocab(32, 8, 4)
    x, y = multiquery_batch(6, 8, vocab=vocab, seed=0)
    assert x.shape == (8, 24 + 16)
    lab = y != -100
    assert lab.sum(1).tolist() == [4] * 8
    pos = torch.nonzero(lab[0]).flatten()
    assert torch.equal(y[0, pos], x[0, pos + 1])  # the label is the next token, the queried object


@pytest.mark.parametrize("reading", ["tiling", "marker"])
def test_periodic_sequences(reading):
    for k in (1, 4, 16, 64):
        s = periodic_sequences(k, n=8, length=64, seed=1, reading=reading)
        assert s.shape == (8, 64)
        if reading == "tiling":
            assert torch.equal(s[:, k:], s[:, :-k]) if k < 64 else True
            if k > 1:  # the motif is not itself periodic with a smaller period
                assert all(not torch.equal(s[b, k // 2 : k], s[b, : k - k // 2]) or k % 2 for b in range(8))
        else:
            assert (s[:, ::k] == s[:, :1]).all()
    assert torch.equal(
        periodic_sequences(1, 4, seed=2, reading="tiling")[:, 0],
        periodic_sequences(1, 4, seed=2, reading="tiling")[:, -1],
    )


# A7 — Wilson interval
def test_wilson_golden():
    lo, hi = iv.wilson(40, 50)
    assert abs(lo - 0.6696) < 1e-4 and abs(hi - 0.8876) < 1e-4
    lo, hi = iv.wilson(50, 50)
    assert abs(lo - 0.9287) < 1e-4 and abs(hi - 1.0) < 1e-4


def test_statistics_helpers():
    a = np.array([1, 1, 1, 0, 1, 1, 0, 1], bool)
    b = np.array([0, 0, 1, 0, 0, 1, 0, 0], bool)
    est, lo, hi = iv.paired_bootstrap(a, b, seed=0)
    assert est == pytest.approx(0.5) and lo <= est <= hi
    assert iv.mcnemar_p(a, b) == pytest.approx(2 * 1 / 16)
    s = iv.summary(np.array([[1, 0, 0, 1], [1, 1, 0, 1]], bool))
    assert s["mid"] == pytest.approx(0.5) and s["primacy"] == pytest.approx(0.5)


# A9 — determinism of the committed checkpoint, and the training smoke test
def test_committed_checkpoint_is_deterministic():
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import checkpoint_path, load_checkpoint
    from mamba_recall.chapters.ch4_primacy_recency.runners.train import gate_metrics

    path = checkpoint_path("s_small")
    if not path.exists():
        pytest.skip("no committed checkpoint results/checkpoints/ch4_train_s_small_ci.pt")
    model, vocab, side = load_checkpoint(path)
    assert path.stat().st_size < 5 * 2**20
    got = gate_metrics(model, vocab)
    for k, v in side["gate"]["metrics"].items():
        assert abs(got[k] - v) <= 1e-6, k


def test_training_smoke(tmp_path):
    from mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy import load_checkpoint
    from mamba_recall.chapters.ch4_primacy_recency.runners.train import train_smodel

    _, side = train_smodel("s_small", "ci", steps=4, out=tmp_path / "s.pt", log=lambda s: None)
    meta = json.loads(side.read_text())
    assert meta["final"] and meta["train_config"]["steps"] == 4 and len(meta["sha256"]) == 64
    m2, side2 = train_smodel("s_small", "ci", steps=4, stop_at=2, out=tmp_path / "t.pt", log=lambda s: None)
    assert json.loads(side2.read_text())["stopped_at"] == 2
    model, vocab, _ = load_checkpoint(tmp_path / "s.pt")
    assert model.vocab_size == vocab.size
