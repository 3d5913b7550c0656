"""Unit checks of Chapter 2 (paper 002): the MQAR generators, the scans, the designed circuits, the capacity laws,
plus the ensemble equivalence of LinearMamba."""

import math

import numpy as np
import pytest
import torch

from mamba_recall.models.linear_mamba import LinearMamba
from mamba_recall.scan import selective_scan
from mamba_recall.tasks.mqar import mqar, multiquery_ar
from mamba_recall.train import masked_ce_per_member
from mamba_recall.chapters.ch2_hashing_scaling.training.ensemble import train_ensemble
from mamba_recall.theory.capacity import (
    LAWS,
    PROB_LAWS,
    effective_dims,
    lemma1_condition,
    log_p_success,
    p_success,
    predicted_capacity,
    satisfies,
)
from mamba_recall.theory.hashing_circuit import designed_accuracy, designed_model, thm2_weights

torch.set_num_threads(1)


# ---------------------------------------------------------------- A: data
def test_a1_generator_invariants():
    V, Nf, L, n = 128, 16, 64, 10000
    x, y = mqar(V, Nf, L, n, seed=3)
    keys, vals = x[:, 0 : 2 * Nf : 2], x[:, 1 : 2 * Nf : 2]
    assert keys.min() >= 1 and keys.max() <= V // 2 - 1
    assert vals.min() >= V // 2 and vals.max() <= V - 1
    assert all(len(set(r.tolist())) == Nf for r in keys[:500])
    assert all(len(set(r.tolist())) == Nf for r in vals[:500])
    lab = y != -100
    assert bool((lab.sum(1) == Nf).all())
    b, p = lab.nonzero(as_tuple=True)
    assert bool((p >= 2 * Nf).all()) and bool(((p - 2 * Nf) % 2 == 0).all())
    q = x[b, p]
    kidx = (keys[b] == q[:, None]).float().argmax(1)
    assert bool((keys[b, kidx] == q).all()) and bool((vals[b, kidx] == y[b, p]).all())
    for bad in [dict(V=64, Nf=8, L=64), dict(V=128, Nf=16, L=60), dict(V=128, Nf=16, L=63)]:
        with pytest.raises(ValueError):
            mqar(bad["V"], bad["Nf"], bad["L"], 4, 0)


def test_a1_variants():
    x, y = mqar(64, 4, 24, 200, 1, variant="repeated_keys", Nk=2)
    last = x[:, 8:16]
    b, p = (y != -100).nonzero(as_tuple=True)
    k = x[b, p]
    idx = (last[b, 0::2] == k[:, None]).float().argmax(1)
    assert bool((last[b, 1::2].gather(1, idx[:, None])[:, 0] == y[b, p]).all())
    x, y = mqar(64, 4, 24, 200, 1, variant="repeated_queries", Nq=2, post_query="values")
    assert bool(((y != -100).sum(1) == 8).all())
    b, p = (y != -100).nonzero(as_tuple=True)
    assert bool((x[b, (p + 1).clamp(max=23)][p < 23] >= 32).all())


def test_a2_gap_distribution_matches_zoology():
    V, Nf, L, n = 256, 8, 128, 4000
    ref = multiquery_ar(V, n, L, seed=0, power_a=0.01, num_kv_pairs=Nf)
    gaps_ref = ((ref.query_positions - 2 * Nf) // 2).flatten().numpy()
    x, y = mqar(V, Nf, L, n, 1, power_a=0.01)
    gaps = (((y != -100).nonzero(as_tuple=True)[1] - 2 * Nf) // 2).numpy()
    space = (L - 2 * Nf) // 2
    h1 = np.bincount(gaps_ref, minlength=space) / len(gaps_ref)
    h2 = np.bincount(gaps, minlength=space) / len(gaps)
    assert 0.5 * np.abs(h1 - h2).sum() < 0.02


def test_a3_loss_masking():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 5, 7, requires_grad=True)
    labels = torch.full((3, 5), -100)
    labels[0, 1], labels[2, 4] = 3, 6
    masked_ce_per_member(logits, labels, label_smoothing=0.1).sum().backward()
    g = logits.grad
    mask = labels != -100
    assert float(g[:, ~mask].abs().max()) == 0.0
    assert float(g[:, mask].abs().min()) > 0.0
    ref = torch.nn.functional.cross_entropy(logits[0][mask], labels[mask], label_smoothing=0.1)
    assert torch.allclose(masked_ce_per_member(logits, labels, 0.1)[0], ref)


# ---------------------------------------------------------------- B: models and circuits
def test_b1_scan_equivalence():
    x, _ = mqar(64, 8, 32, 4, 0)
    m_att = LinearMamba(64, 16, 8, seed=1)
    m_scan = LinearMamba(64, 16, 8, seed=1, ssm="scan")
    la, ints = m_att(x, return_internals=True)
    ls = m_scan(x)
    assert float((la - ls).detach().abs().max()) <= 1e-4
    xh, Bm, Cm = ints[0]["x_hat"], ints[0]["B"], ints[0]["C"]
    u = xh.transpose(1, 2).contiguous()  # (B, Din, L)
    y = selective_scan(
        u,
        torch.ones_like(u),
        torch.zeros(u.shape[1], 8),
        Bm.transpose(1, 2).contiguous(),
        Cm.transpose(1, 2).contiguous(),
        backend="reference",
    )
    assert float((y.transpose(1, 2) - ints[0]["y_hat"]).abs().max()) <= 1e-4


def test_b3_thm1_exact():
    kw = dict(theorem=1, n_seq=1000)
    assert designed_accuracy(128, None, None, 16, 64, readout="values", **kw) == 1.0
    assert designed_accuracy(128, None, None, 16, 64, readout="full", pad="zero", **kw) == 1.0
    acc = designed_accuracy(128, None, None, 16, 64, readout="full", **kw)
    assert 0.92 <= acc <= 0.96  # random padding can repeat the queried key (a second "fact")


def test_b4_lemma1_sufficiency():
    assert lemma1_condition(128, 16, 1300, 1300)["holds"]
    assert not lemma1_condition(128, 16, 600, 600)["holds"]
    acc = designed_accuracy(128, 1300, 1300, 16, 64, n_seq=32, construction="iid", readout="values")
    assert acc >= 0.999


def test_designed_weights_layout():
    w = thm2_weights(64, 16, 8, seed=0)
    assert w["E"].shape == (16, 64) and w["S_B"].shape == (8, 32) and w["P_out"].shape == (16, 32)
    assert torch.allclose(w["F"] @ w["F"].T, 2.0 * torch.eye(8, dtype=torch.float64))
    assert torch.allclose(w["E"].norm(dim=0), torch.ones(64, dtype=torch.float64))
    with pytest.raises(ValueError):
        thm2_weights(64, 8, 16, construction="code")


def test_ensemble_members_equal_independent_models():
    """A masked member of a larger ensemble computes exactly what a model of its own size computes."""
    x, _ = mqar(64, 8, 32, 3, 0)
    small = designed_model(64, 16, 8, seed=2)
    ens = LinearMamba(64, 32, 16, ensemble=2, member_sizes=[(16, 8), (32, 16)], seed=0, dtype=torch.float64)
    ens.load_member(0, thm2_weights(64, 16, 8, seed=2))
    assert torch.allclose(ens(x)[0], small(x), atol=1e-10)
    # training keeps padded entries zero and members independent of each other's size
    ens32 = ens.float()
    train_ensemble(ens32, lambda s: mqar(64, 8, 32, 8, s), steps=3)
    assert float(ens32.embedding[0, :, 16:].abs().max()) == 0.0


# ---------------------------------------------------------------- C: theory
GOLDEN = [  # (D, N, Nf, V): eq77 V_max, eq77 Nf_max, eq15 Nf_max, eq15_consistent, remark1, eq17
    ((64, 32, 16, 1024), 0, 0, 242, 60, 60, 47),
    ((128, 64, 16, 1024), 944, 14, 512, 242, 242, 188),
    ((256, 64, 64, 1024), 3102, 89, 512, 484, 484, 377),
    ((256, 256, 32, 8192), 13_910_543_122, 893, 4096, 1569, 1569, 1267),
]


@pytest.mark.parametrize("case", GOLDEN)
def test_c1_golden_values(case):
    (D, N, Nf, V), vmax, nfmax, e15, e15c, r1, e17 = case
    assert predicted_capacity(D, N, Nf=Nf, law="lemma1")["V_max"] == 0
    out = predicted_capacity(D, N, Nf=Nf, V=V, law="eq77")
    assert (out["V_max"], out["Nf_max"]) == (vmax, nfmax)
    got = [predicted_capacity(D, N, V=V, law=law)["Nf_max"] for law in ("eq15", "eq15_consistent", "remark1", "eq17")]
    assert got == [e15, e15c, r1, e17]


def test_c1_more_golden():
    assert predicted_capacity(64, 32, Nf=16, law="remark1")["V_max"] == 32_149_375_906_214
    assert predicted_capacity(64, 32, Nf=16, law="rev_mV", a=1.25)["V_max"] == 23714
    assert predicted_capacity(64, 32, Nf=16, law="rev_mV", a=3.0)["V_max"] == 288
    assert round(p_success(1024, 16, 64, 32, "rev_mV", a=1.25), 4) == 0.9992

    # minimal N with p >= 0.5 at V=1024, Nf=16 for D = 32, 64, 128, 256
    def n50(D, law):
        return next(N for N in range(1, 2000) if p_success(1024, 16, D, N, law) >= 0.5)

    assert [n50(D, "eq77") for D in (32, 64, 128, 256)] == [174, 40, 27, 22]
    assert [n50(D, "eq15") for D in (32, 64, 128, 256)] == [3, 2, 1, 1]
    assert [n50(D, "eq15_consistent") for D in (32, 64, 128, 256)] == [9, 5, 3, 2]


def test_c2_eq77_limit():
    r = log_p_success(1024, 10**4, 32, 32, "eq77") / log_p_success(1024, 10**4, 32, 32, "eq15_consistent")
    assert 0.95 <= r <= 1.05


def test_c3_monotonicity():
    grid = [2**k for k in range(1, 11)] + [3 * 2**k for k in range(1, 11)]
    grid = sorted(grid)[:20]
    for law in LAWS:

        def val(V, Nf, D, N):
            return log_p_success(V, Nf, D, N, law) if law in PROB_LAWS else float(satisfies(V, Nf, D, N, law))

        for V, Nf in ((1024, 16), (256, 8)):
            M = np.array([[val(V, Nf, D, N) for N in grid] for D in grid])
            assert (np.diff(M, axis=0) >= -1e-12).all() and (np.diff(M, axis=1) >= -1e-12).all(), law
        vs = [val(V, 16, 64, 32) for V in (64, 128, 512, 2048, 8192)]
        fs = [val(1024, f, 64, 32) for f in (1, 4, 16, 64, 256)]
        assert all(a >= b - 1e-12 for a, b in zip(vs, vs[1:])), law
        assert all(a >= b - 1e-12 for a, b in zip(fs, fs[1:])), law


def test_c4_effective_dims():
    base = predicted_capacity(64, 32, Nf=16, V=1024, law="eq15_consistent")
    assert predicted_capacity(64, 16, Nf=16, V=1024, layers=2, law="eq15_consistent") == base
    assert predicted_capacity(64, 8, Nf=16, V=1024, heads=4, pattern="MHA", law="eq15_consistent") == base
    for pat in ("MQA", "MKA", "MVA"):
        assert effective_dims(64, 8, heads=4, pattern=pat) == (64, 8)
    with pytest.raises(ValueError):
        effective_dims(64, 8, pattern="GQA")
    with pytest.raises(ValueError):
        predicted_capacity(64, 8, Nf=4, law="eq99")
    assert math.isclose(p_success(512, 16, 64, 8, layers=4), p_success(512, 16, 64, 32))


def test_hidden_unembed_matches_forward_and_errors():
    x, _ = mqar(64, 8, 32, 2, 0)
    m = LinearMamba(64, 16, 8, 2, ensemble=3, seed=0)
    assert torch.allclose(m.unembed(m.hidden(x)), m(x), atol=1e-6)
    with pytest.raises(ValueError):
        m(torch.zeros(2, 2, 5, dtype=torch.int64))  # wrong ensemble axis
    with pytest.raises(ValueError):
        m(torch.full((2, 5), 64))  # token out of range
    with pytest.raises(ValueError):
        LinearMamba(64, 16, 8, ensemble=2, member_sizes=[(32, 8), (16, 8)])  # member larger than the maxima
    with pytest.raises(ValueError):
        LinearMamba(64, 16, 8, ssm="fft")


def test_b5_two_layer_designed_reduces_to_one_layer():
    """Thm 6, Eqs. 99-108 with a¹ = -1 (one-hot weights): layer 1 with S_B = (F | a F) plus the residual stream
    gives the single-layer Thm 1 circuit's value logits (the a·I diagonal of α¹ cancels the residual); an
    empty second layer adds nothing."""
    from mamba_recall.theory.hashing_circuit import thm1_weights

    V = 32
    w1 = thm1_weights(V)
    w1["S_B"] = torch.cat([torch.eye(V, dtype=torch.float64), -torch.eye(V, dtype=torch.float64)], 1)
    w2 = {k: torch.zeros_like(v) for k, v in w1.items()}
    two = LinearMamba(V, V, V, 2, residual=True, dtype=torch.float64)
    two.load_member(0, {"E": w1["E"], "layers": [w1, w2]})
    one = designed_model(V, theorem=1)
    x, y = mqar(V, 4, 16, 8, 0)
    q = y != -100
    # exact on the value logits at the queries; the key logits differ: -a·x_τ also fires at the earlier
    # occurrence of the query token (the key in the context), which "α¹ = α_AR + a I" neglects
    assert torch.allclose(two(x)[q][:, V // 2 :], one(x)[q][:, V // 2 :], atol=1e-12)
    assert float((two(x)[q] - one(x)[q]).abs().max()) > 0.5


def test_selective_ablation_rows():
    """Tab. 10 rows Base / A / B (SelectiveAblationMamba): shapes, the attention form of the Ā = I rows equals the
    sequential Eq. 2 scan, Base with A → 0 (Ā_t = 1) equals row A with the same weights, ensemble members equal
    single models, clear errors."""
    from mamba_recall.models.linear_mamba import ABLATION_ROWS, SelectiveAblationMamba

    x = torch.randint(0, 64, (3, 20), generator=torch.Generator().manual_seed(0))
    for row in ABLATION_ROWS:
        m = SelectiveAblationMamba(64, 16, 4, row, seed=0, dtype=torch.float64)
        assert m(x).shape == (3, 20, 64)
        e = m.embed(m._ids(x))
        assert torch.allclose(m.internals(e)["y_out"], m.internals(e, ssm="scan")["y_out"], atol=1e-10)
    base = SelectiveAblationMamba(64, 16, 4, "Base", seed=1, dtype=torch.float64)
    a = SelectiveAblationMamba(64, 16, 4, "A", seed=2, dtype=torch.float64)
    sd = {k: v for k, v in base.state_dict().items() if k != "A_log"}
    a.load_state_dict(sd)
    with torch.no_grad():
        base.A_log.fill_(-1e4)  # A = −exp(A_log) = 0 → Ā_t = I
    assert torch.allclose(base(x), a(x), atol=1e-10)
    with torch.no_grad():
        base.A_log.zero_()  # A = −1: decay changes the output
    assert float((base(x) - a(x)).abs().max()) > 1e-3
    ens = SelectiveAblationMamba(64, 16, 4, "B", ensemble=2, seed=3, dtype=torch.float64)
    one = SelectiveAblationMamba(64, 16, 4, "B", dtype=torch.float64)
    one.load_state_dict({k: v[1:2] for k, v in ens.state_dict().items()})
    assert torch.allclose(ens(x)[1], one(x), atol=1e-10)
    assert "in_proj_z" not in dict(one.named_parameters()) and "A_log" not in dict(one.named_parameters())
    with pytest.raises(ValueError):
        SelectiveAblationMamba(64, 16, 4, "Z")
    with pytest.raises(ValueError):
        SelectiveAblationMamba(64, 16, 4, "A", d_conv=0)
    with pytest.raises(ValueError):
        ens(torch.zeros(3, 2, 5, dtype=torch.int64))


def test_member_model_and_the_separate_way_give_the_ensemble_numbers():
    """ch2_scaling's two ways: a member trained alone (LinearMamba.member_model) follows its ensemble trajectory, so
    train_members(way="separate") returns the ensemble's accuracies exactly (same machine)."""
    from mamba_recall.chapters.ch2_hashing_scaling.training import ensemble as S

    sizes = [(16, 4), (8, 2), (16, 8, 2)]
    kw = dict(steps=40, batch=16, warmup=10, hold=10, n_eval=100, residual=True)
    assert S.train_members(64, 8, 32, sizes, way="separate", **kw) == S.train_members(
        64, 8, 32, sizes, way="ensemble", **kw
    )
    assert S.default_way("cuda", 64, 128, 64, 128) == "ensemble"
    assert S.default_way("cpu", 12, 64, 32, 64) == "ensemble"  # the ci grid: 9 MiB of activations
    assert S.default_way("cpu", 8, 128, 64, 128) == "separate"  # R2, D 64: 48 MiB
    with pytest.raises(ValueError, match="unknown way"):
        S.train_members(64, 8, 32, sizes, way="parallel", **kw)
    ens = LinearMamba(64, 16, 8, 2, ensemble=3, member_sizes=sizes, seed=0)
    one = ens.member_model(2)
    x, _ = mqar(64, 8, 32, 4, 0)
    assert torch.equal(one(x)[0], ens(x)[2]) and one.member_sizes == [(16, 8, 2)]
    with pytest.raises(ValueError, match="member must be"):
        ens.member_model(3)


def test_multihead_copy_shared_from_checks_shapes():
    from mamba_recall.models.linear_mamba import MultiHeadLinearMamba

    one = LinearMamba(32, 8, 2, ensemble=1, seed=0)
    mva = MultiHeadLinearMamba(32, 8, 2, 4, "MVA", values="split", ensemble=1, seed=1)
    mva.copy_shared_from(one)
    x, _ = mqar(32, 2, 16, 3, 0)
    with torch.no_grad():
        assert float((mva(x) - one(x)).abs().max()) <= 1e-4 * float(one(x).abs().max())  # Lemma 2
    mha = MultiHeadLinearMamba(32, 8, 2, 4, "MHA", values="full", ensemble=1, seed=1)
    with pytest.raises(ValueError, match="x_proj_B"):
        mha.copy_shared_from(one)  # MHA needs the stacked state N' = M N = 8
