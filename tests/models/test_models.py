"""Tests for mamba_recall.models: mamba-ssm parameter names/shapes/init, backends, causality, internals."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from mamba_recall.models import Block, Mamba, MambaInternals, MambaLMHeadModel, RMSNorm
from mamba_recall.scan import BackendUnavailableError, selective_scan_reference


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: one intra-op thread is fastest and immune to CPU contention."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# mamba_ssm.modules.mamba_simple.Mamba(d_model=16) with the defaults d_state=16, d_conv=4, expand=2,
# dt_rank="auto" = ceil(16/16) = 1, conv_bias=True, bias=False: d_inner = 32.
MAMBA_SSM_PARAMS_D16 = {
    "A_log": (32, 16),
    "D": (32,),
    "in_proj.weight": (64, 16),
    "conv1d.weight": (32, 1, 4),
    "conv1d.bias": (32,),
    "x_proj.weight": (1 + 2 * 16, 32),
    "dt_proj.weight": (32, 1),
    "dt_proj.bias": (32,),
    "out_proj.weight": (16, 32),
}


def _lm_keys(n_layer):
    """mamba_ssm MambaLMHeadModel state_dict keys (Mamba-1 layers, d_intermediate=0, RMSNorm)."""
    keys = {"backbone.embedding.weight", "backbone.norm_f.weight", "lm_head.weight"}
    for i in range(n_layer):
        keys.add(f"backbone.layers.{i}.norm.weight")
        keys.update(f"backbone.layers.{i}.mixer.{k}" for k in MAMBA_SSM_PARAMS_D16)
    return keys


def _mamba_ssm_slow_path(m: Mamba, hidden_states):
    """A transcript of mamba_simple.Mamba.forward's non-fused branch (causal_conv1d missing),
    with selective_scan_fn replaced by the reference scan (einops rearranges written out)."""
    batch, seqlen, dim = hidden_states.shape
    xz = m.in_proj.weight @ hidden_states.reshape(batch * seqlen, dim).t()  # "d (b l)"
    xz = xz.reshape(-1, batch, seqlen).permute(1, 0, 2)  # "b d l"
    A = -torch.exp(m.A_log)
    x, z = xz.chunk(2, dim=1)
    x = F.silu(m.conv1d(x)[..., :seqlen])
    x_dbl = m.x_proj(x.permute(0, 2, 1).reshape(batch * seqlen, -1))  # "(b l) d"
    dt, B, C = torch.split(x_dbl, [m.dt_rank, m.d_state, m.d_state], dim=-1)
    dt = m.dt_proj.weight @ dt.t()
    dt = dt.reshape(-1, batch, seqlen).permute(1, 0, 2)
    B = B.reshape(batch, seqlen, -1).permute(0, 2, 1).contiguous()
    C = C.reshape(batch, seqlen, -1).permute(0, 2, 1).contiguous()
    y = selective_scan_reference(x, dt, A, B, C, m.D, z=z, delta_bias=m.dt_proj.bias, delta_softplus=True)
    return m.out_proj(y.permute(0, 2, 1))


# ----------------------------------------------------------------------------- names, shapes, init


def test_mamba_parameter_names_and_shapes_match_mamba_ssm():
    m = Mamba(16)
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == MAMBA_SSM_PARAMS_D16
    assert (m.d_inner, m.dt_rank, m.d_state, m.d_conv) == (32, 1, 16, 4)
    assert m.conv1d.groups == 32 and m.conv1d.padding == (3,)
    assert m.in_proj.bias is None and m.out_proj.bias is None and m.x_proj.bias is None


def test_mamba_bias_options_and_explicit_dt_rank():
    m = Mamba(8, d_state=4, expand=3, dt_rank=5, bias=True, conv_bias=False)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert shapes["in_proj.bias"] == (48,) and shapes["out_proj.bias"] == (8,)
    assert "conv1d.bias" not in shapes
    assert shapes["x_proj.weight"] == (5 + 8, 24) and shapes["dt_proj.weight"] == (24, 5)


def test_mamba_initialisation_matches_mamba_ssm():
    torch.manual_seed(0)
    dt_min, dt_max = 0.002, 0.05
    m = Mamba(64, d_state=8, dt_min=dt_min, dt_max=dt_max)
    N = 8
    expected_A_log = torch.log(torch.arange(1, N + 1, dtype=torch.float32)).repeat(m.d_inner, 1)
    assert torch.equal(m.A_log.data, expected_A_log)
    assert m.A_log.dtype == torch.float32 and m.D.dtype == torch.float32
    assert torch.equal(m.D.data, torch.ones(m.d_inner))
    dt = F.softplus(m.dt_proj.bias.data)
    assert dt.min() >= dt_min * (1 - 1e-5) and dt.max() <= dt_max * (1 + 1e-5)
    assert dt.max() / dt.min() > 5  # log-uniform spread, not a constant
    bound = m.dt_rank**-0.5
    assert m.dt_proj.weight.abs().max() <= bound and m.dt_proj.weight.abs().max() > 0.5 * bound
    assert m.dt_proj.bias._no_reinit is True
    assert m.A_log._no_weight_decay is True and m.D._no_weight_decay is True


def test_dt_init_constant_and_floor():
    m = Mamba(32, dt_init="constant", dt_scale=2.0, dt_min=1e-6, dt_max=1e-5, dt_init_floor=1e-3)
    assert torch.allclose(m.dt_proj.weight, torch.full_like(m.dt_proj.weight, 2.0 * m.dt_rank**-0.5))
    assert torch.allclose(F.softplus(m.dt_proj.bias), torch.full((m.d_inner,), 1e-3), rtol=1e-4)
    with pytest.raises(ValueError, match="dt_init"):
        Mamba(16, dt_init="bogus")


def test_lm_state_dict_keys_shapes_and_init():
    torch.manual_seed(0)
    n_layer, V = 2, 30
    lm = MambaLMHeadModel(16, n_layer, V, backend="reference")
    sd = lm.state_dict()
    assert set(sd) == _lm_keys(n_layer)
    assert lm.padded_vocab_size == 32 and sd["backbone.embedding.weight"].shape == (32, 16)
    assert sd["lm_head.weight"].shape == (32, 16)
    assert lm.lm_head.weight is lm.backbone.embedding.weight  # tied
    assert (
        sum(p.numel() for p in lm.parameters())
        == 32 * 16 + n_layer * (16 + sum(math.prod(s) for s in MAMBA_SSM_PARAMS_D16.values())) + 16
    )
    assert abs(lm.backbone.embedding.weight.std().item() - 0.02) < 0.003
    for layer in lm.backbone.layers:
        w = layer.mixer.out_proj.weight  # kaiming_uniform(a=√5) bound 1/√fan_in, then / √n_layer
        bound = 1 / math.sqrt(w.shape[1]) / math.sqrt(n_layer)
        assert w.abs().max() <= bound and w.abs().max() > 0.8 * bound
        assert torch.equal(layer.norm.weight.data, torch.ones(16))
    untied = MambaLMHeadModel(16, 1, 30, tie_embeddings=False, bias=True)
    assert untied.lm_head.weight is not untied.backbone.embedding.weight
    mixer = untied.backbone.layers[0].mixer
    assert torch.count_nonzero(mixer.in_proj.bias) == 0 and torch.count_nonzero(mixer.out_proj.bias) == 0
    assert torch.count_nonzero(mixer.dt_proj.bias) == mixer.d_inner  # _no_reinit kept


def test_same_seed_same_init_and_different_seed_differs():
    def build(seed):
        torch.manual_seed(seed)
        return MambaLMHeadModel(16, 2, 20, d_state=4).state_dict()

    a, b, c = build(3), build(3), build(4)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["backbone.layers.0.mixer.in_proj.weight"], c["backbone.layers.0.mixer.in_proj.weight"])


def test_zero_out_proj_from_zeroes_the_deeper_residual_branches_only():
    def build(**kw):
        torch.manual_seed(5)
        return MambaLMHeadModel(16, 4, 20, d_state=4, **kw)

    base, zero = build(), build(zero_out_proj_from=2)
    a, b = base.state_dict(), zero.state_dict()
    for k in a:  # no random number drawn: every weight but the zeroed ones equals the default model's
        if k in ("backbone.layers.2.mixer.out_proj.weight", "backbone.layers.3.mixer.out_proj.weight"):
            assert torch.count_nonzero(b[k]) == 0 and torch.count_nonzero(a[k]) > 0
        else:
            assert torch.equal(a[k], b[k]), k
    # the zeroed blocks are the identity on the residual stream at initialisation, and they get a gradient
    ids = torch.randint(0, 20, (2, 9))
    zero(ids).sum().backward()
    assert zero.backbone.layers[3].mixer.out_proj.weight.grad.abs().sum() > 0
    for bad in (4, -1, 1.5, True):
        with pytest.raises(ValueError, match="zero_out_proj_from must be None or a layer index in 0..3"):
            build(zero_out_proj_from=bad)


# ----------------------------------------------------------------------------- forward semantics


def test_forward_matches_mamba_ssm_slow_path_transcript():
    torch.manual_seed(0)
    m = Mamba(16, d_state=4, dtype=torch.float64, backend="chunked")
    h = torch.randn(2, 11, 16, dtype=torch.float64)
    out = m(h)
    assert out.shape == (2, 11, 16) and out.dtype == torch.float64
    torch.testing.assert_close(out, _mamba_ssm_slow_path(m, h), rtol=0, atol=1e-10)


@pytest.mark.parametrize("n_layer", [1, 2])
def test_reference_and_chunked_backends_agree_with_gradients(n_layer):
    torch.manual_seed(1)
    lm = MambaLMHeadModel(16, n_layer, 20, d_state=4, backend="reference", dtype=torch.float64)
    ids = torch.randint(0, 20, (2, 21))  # 21: not a multiple of the chunk size
    results = {}
    for backend in ("reference", "chunked"):
        lm.backend = backend
        assert all(layer.mixer.backend == backend for layer in lm.backbone.layers)
        lm.zero_grad()
        logits = lm(ids)
        (logits.sin().sum()).backward()
        results[backend] = (logits.detach(), {k: p.grad.clone() for k, p in lm.named_parameters()})
    (l_ref, g_ref), (l_chk, g_chk) = results["reference"], results["chunked"]
    assert logits.shape == (2, 21, 24) and logits.dtype == torch.float64
    torch.testing.assert_close(l_chk, l_ref, rtol=0, atol=1e-10)
    assert set(g_ref) == set(g_chk)
    for k in g_ref:
        assert g_ref[k].abs().max() > 0, k
        torch.testing.assert_close(g_chk[k], g_ref[k], rtol=0, atol=1e-10, msg=k)


def test_causality():
    torch.manual_seed(0)
    lm = MambaLMHeadModel(16, 2, 20, d_state=4, backend="chunked", dtype=torch.float64)
    ids = torch.randint(0, 20, (1, 16))
    t = 9
    ids2 = ids.clone()
    ids2[0, t] = (ids[0, t] + 1) % 20
    a, b = lm(ids), lm(ids2)
    torch.testing.assert_close(a[:, :t], b[:, :t], rtol=0, atol=0)
    assert (a[:, t:] - b[:, t:]).abs().amax(dim=-1).min() > 0  # the change reaches every later position


def test_float32_forward_and_rmsnorm():
    torch.manual_seed(0)
    lm = MambaLMHeadModel(32, 1, 32, d_state=8)
    logits = lm(torch.randint(0, 32, (3, 10)))
    assert logits.shape == (3, 10, 32) and logits.dtype == torch.float32 and torch.isfinite(logits).all()
    norm = RMSNorm(8, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.arange(8.0))
    x = torch.randn(4, 8)
    torch.testing.assert_close(norm(x), x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * norm.weight)
    assert [n for n, _ in norm.named_parameters()] == ["weight"]


def test_block_add_norm_mixer_order():
    torch.manual_seed(0)
    block = Block(16, d_state=4, backend="reference", dtype=torch.float64)
    assert {n.split(".")[0] for n, _ in block.named_parameters()} == {"norm", "mixer"}
    h, r = torch.randn(2, 5, 16, dtype=torch.float64), torch.randn(2, 5, 16, dtype=torch.float64)
    out, res = block(h, r)
    torch.testing.assert_close(res, h + r)
    torch.testing.assert_close(out, block.mixer(block.norm(h + r)))
    out0, res0 = block(h)  # first block: residual = hidden_states
    torch.testing.assert_close(res0, h)
    # residual_in_fp32: a half-precision residual is promoted
    b16 = Block(16, d_state=4, backend="chunked", dtype=torch.bfloat16)
    assert b16.mixer.A_log.dtype == torch.float32  # kept in fp32, as upstream
    o16, r16 = b16(torch.randn(1, 3, 16, dtype=torch.bfloat16))
    assert o16.dtype == torch.bfloat16 and r16.dtype == torch.float32


# ----------------------------------------------------------------------------- backends


def test_backend_validation():
    with pytest.raises(ValueError, match="unknown scan backend"):
        Mamba(16, backend="cuda_fast")
    with pytest.raises(ValueError, match="unknown scan backend"):
        MambaLMHeadModel(16, 1, 20, backend="nope")
    lm = MambaLMHeadModel(16, 1, 20)
    assert lm.backend == "auto"
    with pytest.raises(ValueError, match="unknown scan backend"):
        lm.backend = "nope"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU error path")
def test_explicit_mamba_ssm_on_cpu_raises_with_install_hint():
    m = Mamba(16, backend="mamba_ssm")  # constructing is fine; running on CPU is not
    assert m.backend == "mamba_ssm"
    with pytest.raises(BackendUnavailableError, match="pip install"):
        m(torch.randn(1, 4, 16))
    lm = MambaLMHeadModel(16, 1, 20, backend="mamba_ssm")
    with pytest.raises(BackendUnavailableError):
        lm(torch.randint(0, 20, (1, 4)))


# ----------------------------------------------------------------------------- internals, states


def test_return_internals_shapes_and_consistency():
    torch.manual_seed(0)
    m = Mamba(16, d_state=8, backend="reference", dtype=torch.float64)
    h = torch.randn(2, 7, 16, dtype=torch.float64)
    out, internals = m(h, return_internals=True)
    assert isinstance(internals, MambaInternals)
    E, N = m.d_inner, m.d_state
    assert internals.x.shape == (2, E, 7) and internals.z.shape == (2, E, 7)
    assert internals.delta.shape == (2, E, 7) and internals.y.shape == (2, E, 7)
    assert internals.B.shape == (2, N, 7) and internals.C.shape == (2, N, 7)
    assert internals.last_state is None
    assert (internals.delta > 0).all()
    torch.testing.assert_close(out, m(h), rtol=0, atol=0)
    torch.testing.assert_close(m.out_proj(internals.y.transpose(1, 2)), out)
    # recompute the scan from the exposed internals
    A = -torch.exp(m.A_log)
    y = selective_scan_reference(internals.x, internals.delta, A, internals.B, internals.C, m.D, z=internals.z)
    torch.testing.assert_close(y, internals.y, rtol=0, atol=1e-12)

    lm = MambaLMHeadModel(16, 2, 20, d_state=4, backend="reference")
    logits, per_layer = lm(torch.randint(0, 20, (2, 5)), return_internals=True)
    assert logits.shape == (2, 5, 24) and len(per_layer) == 2
    assert per_layer[1].B.shape == (2, 4, 5)


@pytest.mark.parametrize("backend", ["reference", "chunked"])
def test_initial_state_and_last_state(backend):
    torch.manual_seed(0)
    m = Mamba(16, d_state=4, backend=backend, dtype=torch.float64)
    h = torch.randn(2, 9, 16, dtype=torch.float64)
    out, last = m(h, return_last_state=True)
    assert last.shape == (2, m.d_inner, 4)
    zeros = torch.zeros(2, m.d_inner, 4, dtype=torch.float64)
    torch.testing.assert_close(m(h, initial_state=zeros), m(h), rtol=0, atol=1e-12)
    torch.testing.assert_close(out, m(h), rtol=0, atol=0)
    h0 = torch.randn(2, m.d_inner, 4, dtype=torch.float64)
    out_h0, last_h0, internals = m(h, return_internals=True, initial_state=h0, return_last_state=True)
    assert not torch.allclose(out_h0, out)
    assert torch.equal(internals.last_state, last_h0)
    # the exposed internals reproduce the state passing
    A = -torch.exp(m.A_log)
    _, ref_last = selective_scan_reference(
        internals.x,
        internals.delta,
        A,
        internals.B,
        internals.C,
        m.D,
        z=internals.z,
        return_last_state=True,
        initial_state=h0,
    )
    torch.testing.assert_close(last_h0, ref_last, rtol=0, atol=1e-10)
