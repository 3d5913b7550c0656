"""Tests for the selective scans (mamba_recall.scan).

The sequential ``reference`` backend is the truth; the ``chunked`` backend (and, on CUDA, the
``mamba_ssm`` kernels) must reproduce its outputs, last states and gradients. Tolerances:

* float64: ‖a − b‖∞ / ‖b‖∞ ≤ 1e-10 (outputs, states and every gradient);
* float32: ‖a − b‖∞ / ‖b‖∞ ≤ 1e-5;
* mamba_ssm vs reference: mamba-ssm's own ``test_selective_scan`` tolerances (fp32 rtol 6e-4, atol 2e-3).

The worked example is the 3-token "The cat sat" trace of the Mamba explainer
("Worked Example: Complete Mamba Forward Pass", its Section 05) with d = 1, N = 2.
"""

from __future__ import annotations

import re

import gpu_parity  # tools/ (on the path: tests/conftest.py)
import pytest
import torch

from mamba_recall.scan import (
    BackendUnavailableError,
    ScanInputError,
    linear_recurrence_chunked,
    mamba_ssm_available,
    resolve_backend,
    selective_scan,
    selective_scan_chunked,
    selective_scan_reference,
    selective_scan_trace,
    ssd_scan,
)

F64_TOL = 1e-10
F32_TOL = 1e-5


# ----------------------------------------------------------------------------- helpers


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """‖a − b‖∞ / ‖b‖∞ (0 when both are zero)."""
    a, b = a.detach().double(), b.detach().double()
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = b.abs().max().item() if b.numel() else 0.0
    diff = (a - b).abs().max().item() if b.numel() else 0.0
    return diff / scale if scale > 0 else diff


def assert_close_rel(a, b, tol, what=""):
    assert torch.isfinite(a).all(), f"{what}: non-finite values"
    err = rel_err(a, b)
    assert err <= tol, f"{what}: relative error {err:.3e} > {tol:.1e}"


def make_scan_inputs(
    b=2,
    d=4,
    n=3,
    L=7,
    bc="selective",
    groups=2,
    dtype=torch.float64,
    seed=0,
    D=False,
    z=False,
    delta_bias=False,
    delta_softplus=False,
    initial_state=False,
):
    """Random selective-scan arguments as a kwargs dict (every tensor a leaf that requires grad)."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=dtype)

    if delta_softplus:
        delta = randn(b, d, L) * 0.7
    else:  # Δ used as is: keep it positive
        delta = torch.rand(b, d, L, generator=g, dtype=dtype) * 0.8 + 0.05
    kw = dict(
        u=randn(b, d, L),
        delta=delta,
        A=-(torch.rand(d, n, generator=g, dtype=dtype) * 1.5 + 0.1),
    )
    if bc == "invariant":
        kw["B"], kw["C"] = randn(d, n), randn(d, n)
    elif bc == "selective":
        kw["B"], kw["C"] = randn(b, n, L), randn(b, n, L)
    elif bc == "grouped":
        kw["B"], kw["C"] = randn(b, groups, n, L), randn(b, groups, n, L)
    else:
        raise AssertionError(bc)
    if D:
        kw["D"] = randn(d)
    if z:
        kw["z"] = randn(b, d, L)
    if delta_bias:
        kw["delta_bias"] = randn(d) * 0.3
    if initial_state:
        kw["initial_state"] = randn(b, d, n)
    for t in kw.values():
        t.requires_grad_(True)
    kw["delta_softplus"] = delta_softplus
    return kw


TENSOR_ARGS = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias", "initial_state")


def run_with_grads(fn, kw, return_last_state, seed=123, **extra):
    """Run ``fn(**kw)``; backprop a fixed random cotangent; return (out, last, {name: grad})."""
    res = fn(**kw, return_last_state=return_last_state, **extra)
    out, last = res if return_last_state else (res, None)
    g = torch.Generator().manual_seed(seed)
    loss = (out * torch.randn(out.shape, generator=g, dtype=out.dtype)).sum()
    if last is not None:
        loss = loss + (last * torch.randn(last.shape, generator=g, dtype=last.dtype)).sum()
    names = [k for k in TENSOR_ARGS if k in kw]
    grads = torch.autograd.grad(loss, [kw[k] for k in names], allow_unused=False)
    return out, last, dict(zip(names, grads))


def compare_backends(kw, return_last_state, tol, **chunked_extra):
    ref = run_with_grads(
        selective_scan_reference, kw, return_last_state, **{k: v for k, v in chunked_extra.items() if k != "chunk_size"}
    )
    chk = run_with_grads(selective_scan_chunked, kw, return_last_state, **chunked_extra)
    assert chk[0].dtype == kw["u"].dtype
    assert_close_rel(chk[0], ref[0], tol, "out")
    if return_last_state:
        assert chk[1].shape == ref[1].shape == (kw["u"].shape[0], kw["u"].shape[1], kw["A"].shape[1])
        assert_close_rel(chk[1], ref[1], tol, "last state")
    assert set(chk[2]) == set(ref[2])
    for name in ref[2]:
        assert_close_rel(chk[2][name], ref[2][name], tol, f"grad {name}")


# ----------------------------------------------------------------------------- Mamba-1: chunked == reference

ALL_EXTRAS = dict(D=True, z=True, delta_bias=True, delta_softplus=True, initial_state=True)


@pytest.mark.parametrize("L", [1, 7, 64, 100])
@pytest.mark.parametrize("discretization", ["euler", "zoh"])
@pytest.mark.parametrize("bc", ["invariant", "selective", "grouped"])
@pytest.mark.parametrize("extras", [False, True], ids=["bare", "D-z-bias-softplus-h0-last"])
def test_chunked_matches_reference_fp64(L, discretization, bc, extras):
    kw = make_scan_inputs(L=L, bc=bc, seed=L, **(ALL_EXTRAS if extras else {}))
    compare_backends(kw, return_last_state=extras, tol=F64_TOL, discretization=discretization)


@pytest.mark.parametrize("option", ["D", "z", "delta_bias", "delta_softplus", "initial_state", "return_last_state"])
@pytest.mark.parametrize("discretization", ["euler", "zoh"])
def test_chunked_matches_reference_each_option(option, discretization):
    flags = {} if option == "return_last_state" else {option: True}
    kw = make_scan_inputs(L=100, bc="selective", seed=7, **flags)
    compare_backends(kw, return_last_state=option == "return_last_state", tol=F64_TOL, discretization=discretization)


@pytest.mark.parametrize(
    "L,chunk_size",
    [
        (100, 1),
        (100, 2),
        (100, 3),
        (100, 8),
        (100, 16),
        (100, 99),
        (100, 100),
        (100, 128),
        (7, 1),
        (7, 4),
        (7, 8),
        (64, 64),
        (1, 5),
    ],
)
def test_chunked_explicit_chunk_sizes(L, chunk_size):
    kw = make_scan_inputs(L=L, bc="grouped", seed=3, **ALL_EXTRAS)
    compare_backends(kw, return_last_state=True, tol=F64_TOL, chunk_size=chunk_size)


def test_chunked_one_channel_time_invariant_maps():
    """d = 1 with (d, N) maps: the C broadcast must not be confused with the per-(batch, time) C path."""
    kw = make_scan_inputs(b=3, d=1, n=4, L=9, bc="invariant", seed=11, D=True)
    compare_backends(kw, return_last_state=True, tol=F64_TOL)


@pytest.mark.parametrize("bc", ["invariant", "selective", "grouped"])
@pytest.mark.parametrize("discretization", ["euler", "zoh"])
@pytest.mark.parametrize("L", [7, 100, 512])
def test_chunked_matches_reference_fp32(bc, discretization, L):
    kw = make_scan_inputs(b=2, d=8, n=4, L=L, bc=bc, dtype=torch.float32, seed=5, **ALL_EXTRAS)
    ref = run_with_grads(selective_scan_reference, kw, True, discretization=discretization)
    chk = run_with_grads(selective_scan_chunked, kw, True, discretization=discretization)
    assert chk[0].dtype == torch.float32
    assert_close_rel(chk[0], ref[0], F32_TOL, "out")
    assert_close_rel(chk[1], ref[1], F32_TOL, "last state")
    for name in ref[2]:
        assert_close_rel(chk[2][name], ref[2][name], F32_TOL, f"grad {name}")


def test_dispatcher_routes_to_each_backend():
    kw = make_scan_inputs(L=20, bc="selective", seed=2, **ALL_EXTRAS)
    direct_ref = selective_scan_reference(**kw, return_last_state=True)
    for backend in ("reference", "chunked", "auto"):
        out, last = selective_scan(**kw, return_last_state=True, backend=backend)
        assert_close_rel(out, direct_ref[0], F64_TOL, backend)
        assert_close_rel(last, direct_ref[1], F64_TOL, backend)


@pytest.mark.parametrize("discretization", ["euler", "zoh"])
@pytest.mark.parametrize("bc", ["selective", "grouped", "invariant"])
def test_chunked_gradcheck(discretization, bc):
    kw = make_scan_inputs(b=1, d=2, n=2, L=5, bc=bc, groups=2, seed=1, **ALL_EXTRAS)
    names = [k for k in TENSOR_ARGS if k in kw]
    inputs = tuple(kw[k].detach().clone().requires_grad_(True) for k in names)

    def f(*tensors):
        args = dict(zip(names, tensors))
        out, last = selective_scan_chunked(
            **args, delta_softplus=True, return_last_state=True, discretization=discretization, chunk_size=2
        )
        return out, last

    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("backend", ["reference", "trace", "chunked"])
def test_time_invariant_maps_equal_grouped_maps_with_one_group_per_channel(backend):
    """A (d, N) map is the (b, G = d, N, L) map that repeats it over batch and time.

    Regression: the reference once indexed C_t[:, :, t] on a (1, d, 1, N) view for a (d, N) C,
    raising IndexError for every L > 1.
    """
    kw = make_scan_inputs(L=7, bc="invariant", seed=0, D=True)
    u, delta, A, B, C, D = (kw[k].detach() for k in ("u", "delta", "A", "B", "C", "D"))
    b, d, L = u.shape
    Bg, Cg = (M[None, :, :, None].expand(b, d, M.shape[1], L) for M in (B, C))
    expected = selective_scan_reference(u, delta, A, Bg, Cg, D)
    if backend == "trace":
        out = selective_scan_trace(u, delta, A, B, C, D).out
    else:
        out = selective_scan(u, delta, A, B, C, D, backend=backend)
    assert_close_rel(out, expected, F64_TOL, backend)


def test_linear_recurrence_chunked_matches_loop():
    g = torch.Generator().manual_seed(0)
    log_a = -torch.rand(2, 37, 3, 5, generator=g, dtype=torch.float64)
    x = torch.randn(2, 37, 3, 5, generator=g, dtype=torch.float64)
    h0 = torch.randn(2, 3, 5, generator=g, dtype=torch.float64)
    states = linear_recurrence_chunked(log_a, x, h0, chunk_size=6)
    h, expected = h0, []
    for t in range(37):
        h = torch.exp(log_a[:, t]) * h + x[:, t]
        expected.append(h)
    assert_close_rel(states, torch.stack(expected, 1), F64_TOL, "states")


# ----------------------------------------------------------------------------- stability


def _stability_inputs(b, d, n, L, dtype, seed=0, delta_max=20.0, fixed=True):
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(b, d, L, generator=g, dtype=dtype)
    if fixed:
        delta = torch.full((b, d, L), delta_max, dtype=dtype)
    else:
        delta = torch.rand(b, d, L, generator=g, dtype=dtype) * delta_max
    A = -torch.linspace(16.0, 1.0, n, dtype=dtype).expand(d, n).contiguous()
    B = torch.randn(b, n, L, generator=g, dtype=dtype)
    C = torch.randn(b, n, L, generator=g, dtype=dtype)
    return [t.requires_grad_(True) for t in (u, delta, A, B, C)]


@pytest.mark.parametrize("fixed", [True, False], ids=["delta=20", "delta~U(0,20)"])
def test_chunked_long_sequence_large_delta_finite_fp32(fixed):
    L = 8192
    u, delta, A, B, C = _stability_inputs(2, 4, 16, L, torch.float32, fixed=fixed)
    out, last = selective_scan_chunked(u, delta, A, B, C, return_last_state=True)
    assert torch.isfinite(out).all() and torch.isfinite(last).all()
    (out.sum() + last.sum()).backward()
    for name, t in zip("u delta A B C".split(), (u, delta, A, B, C)):
        assert t.grad is not None and torch.isfinite(t.grad).all(), f"grad {name} not finite"
    # and it is right: the float32 chunked scan agrees with the float64 chunked scan
    out64 = selective_scan_chunked(*(t.detach().double() for t in (u, delta, A, B, C)))
    assert_close_rel(out.detach(), out64, F32_TOL, "fp32 vs fp64")


def _loop_scan(u, delta, A, B, C, return_last_state=False):
    """The Euler recurrence with selective (b, N, L) maps as a plain loop over ``unbind``-ed slices.

    Same math as ``selective_scan_reference``, but its backward is O(L): the reference indexes a
    graph tensor per step (``decay[:, :, t]``), whose backward scatters into a full-size zero
    gradient every step — O(L²), about a minute at L = 8192.
    """
    decay = torch.exp(delta[..., None] * A[:, None, :])  # (b, d, l, n)
    inp = (delta * u)[..., None] * B.transpose(1, 2)[:, None]  # (b, d, l, n)
    h = inp.new_zeros(inp.shape[0], inp.shape[1], inp.shape[3])
    ys = []
    for a_t, x_t, c_t in zip(decay.unbind(2), inp.unbind(2), C.transpose(1, 2).unbind(1)):
        h = a_t * h + x_t
        ys.append((h * c_t[:, None]).sum(-1))
    out = torch.stack(ys, dim=-1)
    return (out, h) if return_last_state else out


def test_chunked_long_sequence_large_delta_matches_reference_fp64():
    """L = 8192, Δ ~ U(0, 20), A = −16..−1, float64: chunked == reference (outputs, last state), and
    chunked gradients == gradients of the same recurrence written as a loop (see ``_loop_scan``)."""
    L = 8192
    u, delta, A, B, C = _stability_inputs(1, 2, 4, L, torch.float64, fixed=False, seed=4)
    kw = dict(u=u, delta=delta, A=A, B=B, C=C)
    with torch.no_grad():
        ref_out, ref_last = selective_scan_reference(**kw, return_last_state=True)
    out, last, grads = run_with_grads(selective_scan_chunked, kw, True)
    assert_close_rel(out, ref_out, F64_TOL, "out")
    assert_close_rel(last, ref_last, F64_TOL, "last")
    loop_out, loop_last, loop_grads = run_with_grads(_loop_scan, kw, True)
    assert_close_rel(loop_out, ref_out, F64_TOL, "loop vs reference")  # the loop is the reference's math
    for name in kw:
        assert_close_rel(grads[name], loop_grads[name], F64_TOL, f"grad {name}")


# ----------------------------------------------------------------------------- worked example


def worked_example(dtype, delta=None):
    """u = (0.5, 1.0, 0.2); B_t = W_B u_t, C_t = W_C u_t as (batch=1, N=2, L=3) selective maps."""
    u = torch.tensor([[[0.5, 1.0, 0.2]]], dtype=dtype)
    if delta is None:
        delta = 0.2 * u  # W_Δ·u = (0.5 − 0.3)·u, softplus applied by the scan
    else:
        delta = torch.tensor([[delta]], dtype=dtype)
    A = torch.tensor([[-1.0, -0.5]], dtype=dtype)
    W_B = torch.tensor([0.8, 0.6], dtype=dtype)
    W_C = torch.tensor([0.7, 0.4], dtype=dtype)
    B = W_B[None, :, None] * u[:, 0][:, None, :]
    C = W_C[None, :, None] * u[:, 0][:, None, :]
    return u, delta, A, B, C


EX_DELTA = [0.7443966601, 0.7981388694, 0.7133471672]
EX_ABAR0 = [0.4750208125, 0.4501660027, 0.4900013331]
EX_STATES = [[0.1488793320, 0.1116594990], [0.7055315093, 0.5538006051], [0.3685384895, 0.4047812830]]
EX_Y = [0.0744396660, 0.7153922986, 0.0839778912]


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-9), (torch.float32, 1e-6)], ids=["fp64", "fp32"])
def test_worked_example_trace(dtype, tol):
    u, delta, A, B, C = worked_example(dtype)
    tr = selective_scan_trace(u, delta, A, B, C, delta_softplus=True)

    def check(got, want, what):
        want = torch.tensor(want, dtype=torch.float64)
        err = (got.double().reshape(want.shape) - want).abs().max().item()
        assert err <= tol, f"{what}: {got.tolist()} vs {want.tolist()} (err {err:.2e})"

    check(tr.delta[0, 0], EX_DELTA, "Δ")
    check(tr.decay[0, 0, :, 0], EX_ABAR0, "Ā[0]")
    check(
        tr.decay[0, 0, :, 1], [torch.exp(torch.tensor(-0.5 * d, dtype=torch.float64)).item() for d in EX_DELTA], "Ā[1]"
    )
    check(tr.states[0, 0], EX_STATES, "states")
    check(tr.y[0, 0], EX_Y, "y")
    check(tr.out[0, 0], EX_Y, "out")


@pytest.mark.parametrize("backend", ["reference", "chunked", "auto"])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-9), (torch.float32, 1e-6)], ids=["fp64", "fp32"])
def test_worked_example_backends(backend, dtype, tol):
    u, delta, A, B, C = worked_example(dtype)
    out, last = selective_scan(u, delta, A, B, C, delta_softplus=True, return_last_state=True, backend=backend)
    assert out.dtype == dtype
    assert (out[0, 0].double() - torch.tensor(EX_Y, dtype=torch.float64)).abs().max() <= tol
    assert (last[0, 0].double() - torch.tensor(EX_STATES[-1], dtype=torch.float64)).abs().max() <= tol


def test_worked_example_document_delta():
    """The document rounds Δ to (0.743, 0.803, 0.693) and uses those; fed directly we get its numbers."""
    u, delta, A, B, C = worked_example(torch.float64, delta=[0.743, 0.803, 0.693])
    tr = selective_scan_trace(u, delta, A, B, C, delta_softplus=False)
    exact_states = torch.tensor([[0.1486, 0.11145], [0.70897, 0.556395], [0.376713, 0.410092]], dtype=torch.float64)
    exact_y = torch.tensor([0.0743, 0.718837, 0.085547], dtype=torch.float64)
    printed_states = torch.tensor([[0.149, 0.112], [0.709, 0.557], [0.377, 0.410]], dtype=torch.float64)
    printed_y = torch.tensor([0.074, 0.719, 0.086], dtype=torch.float64)
    assert (tr.states[0, 0] - exact_states).abs().max() <= 1.5e-3
    assert (tr.out[0, 0] - exact_y).abs().max() <= 1.5e-3
    assert (tr.states[0, 0] - printed_states).abs().max() <= 1.5e-3
    assert (tr.out[0, 0] - printed_y).abs().max() <= 1.5e-3
    for backend in ("reference", "chunked"):
        out = selective_scan(u, delta, A, B, C, backend=backend)
        assert_close_rel(out, tr.out, F64_TOL, backend)


@pytest.mark.parametrize("backend", ["reference", "chunked"])
def test_worked_example_zoh(backend):
    u, delta, A, B, C = worked_example(torch.float64)
    out, last = selective_scan(
        u, delta, A, B, C, delta_softplus=True, return_last_state=True, backend=backend, discretization="zoh"
    )
    assert (
        out[0, 0] - torch.tensor([0.0553954909, 0.5239618735, 0.0624698755], dtype=torch.float64)
    ).abs().max() <= 1e-9
    assert (last[0, 0] - torch.tensor([0.2550156564, 0.3345960445], dtype=torch.float64)).abs().max() <= 1e-9
    tr = selective_scan_trace(u, delta, A, B, C, delta_softplus=True, discretization="zoh")
    assert_close_rel(tr.out, out, F64_TOL, "trace")


# ----------------------------------------------------------------------------- Mamba-2 (SSD)


def make_ssd_inputs(
    b=2,
    l=7,
    h=4,
    p=3,
    g=1,
    n=5,
    dtype=torch.float64,
    seed=0,
    D=None,
    z=False,
    dt_bias=False,
    dt_softplus=False,
    initial_states=False,
):
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=dtype)

    dt = randn(b, l, h) * 0.7 if dt_softplus else torch.rand(b, l, h, generator=gen, dtype=dtype) * 0.8 + 0.05
    kw = dict(
        x=randn(b, l, h, p),
        dt=dt,
        A=-(torch.rand(h, generator=gen, dtype=dtype) * 1.5 + 0.1),
        B=randn(b, l, g, n),
        C=randn(b, l, g, n),
    )
    if D == "h":
        kw["D"] = randn(h)
    elif D == "hp":
        kw["D"] = randn(h, p)
    if z:
        kw["z"] = randn(b, l, h, p)
    if dt_bias:
        kw["dt_bias"] = randn(h) * 0.3
    if initial_states:
        kw["initial_states"] = randn(b, h, p, n)
    for t in kw.values():
        t.requires_grad_(True)
    kw["dt_softplus"] = dt_softplus
    return kw


SSD_CONFIGS = {
    "bare": dict(g=1),
    "g2-D(h)-z-bias-softplus-h0": dict(g=2, D="h", z=True, dt_bias=True, dt_softplus=True, initial_states=True),
    "g4-D(h,p)-z-h0": dict(g=4, D="hp", z=True, initial_states=True),
}
SSD_TENSORS = ("x", "dt", "A", "B", "C", "D", "z", "dt_bias", "initial_states")


def _ssd_run(kw, backend, chunk_size, seed=9):
    out, final = ssd_scan(**kw, return_final_states=True, backend=backend, chunk_size=chunk_size)
    gen = torch.Generator().manual_seed(seed)
    loss = (out * torch.randn(out.shape, generator=gen, dtype=out.dtype)).sum() + (
        final * torch.randn(final.shape, generator=gen, dtype=final.dtype)
    ).sum()
    names = [k for k in SSD_TENSORS if k in kw]
    grads = torch.autograd.grad(loss, [kw[k] for k in names])
    return out, final, dict(zip(names, grads))


@pytest.mark.parametrize("l,chunk_size", [(1, 16), (7, 4), (64, 16), (64, 64), (100, 16), (100, 64), (100, 128)])
@pytest.mark.parametrize("config", list(SSD_CONFIGS))
def test_ssd_chunked_matches_reference(l, chunk_size, config):
    kw = make_ssd_inputs(l=l, seed=l, **SSD_CONFIGS[config])
    ref = _ssd_run(kw, "reference", chunk_size)
    chk = _ssd_run(kw, "chunked", chunk_size)
    assert chk[0].shape == kw["x"].shape and chk[1].shape == (2, 4, 3, 5)
    assert_close_rel(chk[0], ref[0], F64_TOL, "out")
    assert_close_rel(chk[1], ref[1], F64_TOL, "final state")
    for name in ref[2]:
        assert_close_rel(chk[2][name], ref[2][name], F64_TOL, f"grad {name}")


def test_ssd_without_final_states_returns_tensor():
    kw = make_ssd_inputs(l=10)
    out = ssd_scan(**kw, backend="chunked", chunk_size=4)
    assert isinstance(out, torch.Tensor) and out.shape == kw["x"].shape


def ssd_as_selective_scan(
    x, dt, A, B, C, D=None, z=None, dt_bias=None, dt_softplus=False, initial_states=None, backend="reference"
):
    """mamba-ssm's ``ssd_selective_scan`` mapping: Mamba-2 as a Mamba-1 scan with A repeated over (p, n)."""
    b, l, h, p = x.shape
    n = B.shape[-1]
    u = x.permute(0, 2, 3, 1).reshape(b, h * p, l)  # b l h p -> b (h p) l
    delta = dt.permute(0, 2, 1).repeat_interleave(p, dim=1)  # b l h -> b (h p) l
    A1 = A.repeat_interleave(p)[:, None].expand(h * p, n)  # h -> (h p) n
    B1, C1 = B.permute(0, 2, 3, 1), C.permute(0, 2, 3, 1)  # b l g n -> b g n l
    if B1.shape[1] == 1:
        B1, C1 = B1[:, 0], C1[:, 0]  # (b, n, l)
    D1 = None if D is None else (D.reshape(h * p) if D.dim() == 2 else D.repeat_interleave(p))
    z1 = None if z is None else z.permute(0, 2, 3, 1).reshape(b, h * p, l)
    bias1 = None if dt_bias is None else dt_bias.repeat_interleave(p)
    h0 = None if initial_states is None else initial_states.reshape(b, h * p, n)
    out, last = selective_scan(
        u, delta, A1, B1, C1, D1, z1, bias1, dt_softplus, True, backend=backend, initial_state=h0
    )
    return out.reshape(b, h, p, l).permute(0, 3, 1, 2), last.reshape(b, h, p, n)


@pytest.mark.parametrize("backend", ["reference", "chunked"])
@pytest.mark.parametrize("config", list(SSD_CONFIGS))
def test_ssd_equals_selective_scan_with_repeated_A(backend, config):
    kw = make_ssd_inputs(l=37, seed=2, **SSD_CONFIGS[config])
    out2, final2 = ssd_scan(**kw, return_final_states=True, backend="reference")
    out1, final1 = ssd_as_selective_scan(**kw, backend=backend)
    assert_close_rel(out1, out2, F64_TOL, "out")
    assert_close_rel(final1, final2, F64_TOL, "final state")


def test_ssd_chunked_finite_long_large_dt_fp32():
    gen = torch.Generator().manual_seed(0)
    b, l, h, p, n = 1, 4096, 2, 4, 8
    x = torch.randn(b, l, h, p, generator=gen)
    dt = torch.full((b, l, h), 20.0)
    A = -torch.tensor([16.0, 1.0])
    B, C = torch.randn(b, l, 1, n, generator=gen), torch.randn(b, l, 1, n, generator=gen)
    for t in (x, dt, A, B, C):
        t.requires_grad_(True)
    out = ssd_scan(x, dt, A, B, C, backend="chunked")
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (x, dt, A, B, C))


# ----------------------------------------------------------------------------- bad input


def _good(**override):
    kw = make_scan_inputs(b=2, d=4, n=3, L=7, bc="selective", seed=0)
    kw = {k: (v.detach() if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    kw.update(override)
    return kw


BAD_INPUTS = [
    (
        "u-2d",
        dict(u=torch.randn(4, 7), delta=torch.rand(4, 7)),
        "u has shape (4, 7); expected (batch, channels, length)",
    ),
    (
        "delta-shape",
        dict(delta=torch.rand(2, 4, 6, dtype=torch.float64)),
        "delta has shape (2, 4, 6); it must equal u's shape",
    ),
    (
        "A-rows",
        dict(A=-torch.rand(5, 3, dtype=torch.float64)),
        "A has shape (5, 3); expected (channels, N) with channels = 4",
    ),
    ("A-1d", dict(A=-torch.rand(4, dtype=torch.float64)), "A has shape (4); expected (channels, N)"),
    ("A-complex", dict(A=torch.complex(-torch.rand(4, 3), torch.rand(4, 3))), "complex A is not supported"),
    ("B-1d", dict(B=torch.randn(3, dtype=torch.float64)), "B has 1 dimensions"),
    ("B-5d", dict(B=torch.randn(2, 1, 1, 3, 7, dtype=torch.float64)), "B has 5 dimensions"),
    ("B-invariant-shape", dict(B=torch.randn(4, 5, dtype=torch.float64)), "B has shape (4, 5); accepted shapes are"),
    ("B-selective-N", dict(B=torch.randn(2, 5, 7, dtype=torch.float64)), "B has shape (2, 5, 7); accepted shapes"),
    ("B-selective-L", dict(B=torch.randn(2, 3, 8, dtype=torch.float64)), "B has shape (2, 3, 8)"),
    ("B-groups-not-dividing", dict(B=torch.randn(2, 3, 3, 7, dtype=torch.float64)), "B has shape (2, 3, 3, 7)"),
    ("C-selective-batch", dict(C=torch.randn(1, 3, 7, dtype=torch.float64)), "C has shape (1, 3, 7)"),
    ("D-shape", dict(D=torch.randn(5, dtype=torch.float64)), "D has shape (5); expected (channels,) = (4,)"),
    ("delta_bias-shape", dict(delta_bias=torch.randn(4, 1, dtype=torch.float64)), "delta_bias has shape (4, 1)"),
    ("z-shape", dict(z=torch.randn(2, 4, 6, dtype=torch.float64)), "z has shape (2, 4, 6); it must equal u's shape"),
    ("not-a-tensor", dict(B=[[1.0]]), "B must be a torch.Tensor, got list"),
]


@pytest.mark.parametrize("backend", ["reference", "chunked", "auto"])
@pytest.mark.parametrize("override,fragment", [(o, f) for _, o, f in BAD_INPUTS], ids=[i for i, _, _ in BAD_INPUTS])
def test_bad_input_raises(override, fragment, backend):
    with pytest.raises(ScanInputError, match=re.escape(fragment)):
        selective_scan(**_good(**override), backend=backend)


def test_scan_input_error_is_value_error():
    assert issubclass(ScanInputError, ValueError)
    with pytest.raises(ValueError):
        selective_scan(**_good(D=torch.randn(5)))


@pytest.mark.parametrize("backend", ["reference", "chunked"])
def test_unknown_discretization(backend):
    with pytest.raises(
        ScanInputError, match=re.escape("discretization='foe' is unknown; choose one of ('euler', 'zoh')")
    ):
        selective_scan(**_good(), backend=backend, discretization="foe")


def test_unknown_backend_names_the_choices():
    with pytest.raises(
        ValueError, match=re.escape("unknown scan backend 'cuda'; choose one of auto, reference, chunked, mamba_ssm")
    ):
        selective_scan(**_good(), backend="cuda")
    with pytest.raises(ValueError, match="choose one of auto, reference, chunked, mamba_ssm"):
        ssd_scan(**{k: v for k, v in make_ssd_inputs().items()}, backend="triton")


def test_mamba_ssm_backend_on_cpu_tensors_is_unavailable():
    for call in (
        lambda: selective_scan(**_good(), backend="mamba_ssm"),
        lambda: ssd_scan(**make_ssd_inputs(), backend="mamba_ssm"),
        lambda: resolve_backend("mamba_ssm", "cpu"),
    ):
        with pytest.raises(BackendUnavailableError, match="pip install") as excinfo:
            call()
        msg = str(excinfo.value)
        assert "chunked" in msg and "CUDA" in msg and "mamba_recall[gpu]" in msg


def test_a_last_state_with_invariant_b_is_refused_by_mamba_ssm_and_run_by_chunked_under_auto(monkeypatch):
    """mamba-ssm's kernel returns h/B as the last state when B is time-invariant (see the gpu test below): the backend
    refuses that call by name, and ``auto`` (on CUDA, simulated here) gives it to ``chunked``."""
    import mamba_recall.scan as scan
    from mamba_recall.scan.mamba_ssm_backend import selective_scan_mamba_ssm

    kw = make_scan_inputs(L=16, bc="invariant", dtype=torch.float32, seed=3)
    with pytest.raises(BackendUnavailableError, match=r"time-invariant B .*h/B, not h.*backend='chunked'"):
        selective_scan_mamba_ssm(**kw, return_last_state=True)
    assert scan.mamba_ssm_unsupported(kw["B"]) == []  # outputs only: the kernel runs it
    assert scan.mamba_ssm_unsupported(make_scan_inputs(L=16, seed=3)["B"], return_last_state=True) == []
    assert scan.mamba_ssm_unsupported(kw["B"], True, "zoh", torch.zeros(1))[:2] == ["discretization", "initial_state"]

    monkeypatch.setattr(scan, "resolve_backend", lambda backend, device, discretization="euler": "mamba_ssm")
    want = selective_scan_chunked(**kw, return_last_state=True)
    got = scan.selective_scan(**kw, return_last_state=True, backend="auto")
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    with pytest.raises(BackendUnavailableError, match="time-invariant B"):
        scan.selective_scan(**kw, return_last_state=True, backend="mamba_ssm")


@pytest.mark.parametrize("chunk_size", [-1, 2.5, "8"])
def test_chunk_size_invalid_raises(chunk_size):
    with pytest.raises(ScanInputError, match="chunk_size must be a positive integer"):
        selective_scan_chunked(**_good(), chunk_size=chunk_size)


def test_chunk_size_zero_raises():
    with pytest.raises(ScanInputError, match="chunk_size must be a positive integer"):
        selective_scan_chunked(**_good(), chunk_size=0)


def test_ssd_chunk_size_zero_raises():
    with pytest.raises(ScanInputError, match="chunk_size must be a positive integer, got 0"):
        ssd_scan(**make_ssd_inputs(), backend="chunked", chunk_size=0)


SSD_BAD = [
    (
        "x-3d",
        dict(x=torch.randn(2, 7, 12, dtype=torch.float64)),
        "x has shape (2, 7, 12); expected (batch, length, heads, headdim)",
    ),
    (
        "dt-shape",
        dict(dt=torch.rand(2, 7, 3, dtype=torch.float64)),
        "dt has shape (2, 7, 3); expected (batch, length, heads)",
    ),
    ("A-2d", dict(A=-torch.rand(4, 3, dtype=torch.float64)), "A has shape (4, 3); Mamba-2 takes one scalar per head"),
    (
        "B-groups",
        dict(B=torch.randn(2, 7, 3, 5, dtype=torch.float64)),
        "B has shape (2, 7, 3, 5); expected (batch, length, groups, N)",
    ),
    ("C-vs-B", dict(C=torch.randn(2, 7, 1, 6, dtype=torch.float64)), "must have the same shape"),
    ("D-shape", dict(D=torch.randn(3, dtype=torch.float64)), "D has shape (3,); expected (4,) or (4, 3)"),
    ("z-shape", dict(z=torch.randn(2, 7, 4, 2, dtype=torch.float64)), "z has shape (2, 7, 4, 2)"),
    ("dt_bias-shape", dict(dt_bias=torch.randn(3, dtype=torch.float64)), "dt_bias has shape (3,); expected (4,)"),
]


@pytest.mark.parametrize("backend", ["reference", "chunked"])
@pytest.mark.parametrize("override,fragment", [(o, f) for _, o, f in SSD_BAD], ids=[i for i, _, _ in SSD_BAD])
def test_ssd_bad_input_raises(override, fragment, backend):
    kw = {k: (v.detach() if isinstance(v, torch.Tensor) else v) for k, v in make_ssd_inputs().items()}
    kw.update(override)
    with pytest.raises(ScanInputError, match=re.escape(fragment)):
        ssd_scan(**kw, backend=backend)


# ----------------------------------------------------------------------------- backend resolution


def test_resolve_backend_auto_on_cpu_is_fused():
    """auto on the CPU is the fused scan (numba is a base dependency), chunked for the ZOH rule."""
    assert resolve_backend("auto", "cpu") == "fused"
    assert resolve_backend("auto", torch.device("cpu")) == "fused"
    assert resolve_backend("auto", "cpu", discretization="zoh") == "chunked"
    assert resolve_backend("reference", "cpu") == "reference"
    assert resolve_backend("chunked", "cpu") == "chunked"


# ----------------------------------------------------------------------------- timing (scan.timing)


def test_mambapy_column_computes_the_same_scan():
    pytest.importorskip("mambapy", reason="mambapy not installed (pip install 'mamba_recall[bench]')")
    from mamba_recall.scan.timing import mambapy_selective_scan

    kw = make_scan_inputs(b=2, d=4, n=3, L=37, bc="selective", dtype=torch.float64, seed=8, delta_softplus=True)
    args = [kw[k] for k in ("u", "delta", "A", "B", "C")]
    out_m = mambapy_selective_scan(*args, delta_softplus=True)
    out_c = selective_scan_chunked(*args, delta_softplus=True)
    assert_close_rel(out_m, out_c, F64_TOL, "mambapy vs chunked")
    gm = torch.autograd.grad(out_m.sum(), args)
    gc = torch.autograd.grad(out_c.sum(), args)
    for name, a, b in zip("u delta A B C".split(), gm, gc):
        assert_close_rel(a, b, F64_TOL, f"grad {name}")


def test_run_benchmark_tiny():
    from mamba_recall.scan.timing import BenchSize, run_benchmark, run_memory_scaling, to_records

    df = run_benchmark("cpu", sizes=[BenchSize("t", 1, 4, 2, 16)], repeats=1, include_mambapy=False, verbose=False)
    assert set(df["backend"]) == {"chunked", "fused", "reference"}
    assert df["agrees"].all() and (df["seconds"] > 0).all() and (df["saved_MB"] > 0).all()
    assert df.set_index("backend").loc["chunked", "ratio_vs_chunked"] == 1.0
    recs = to_records(df)
    assert isinstance(recs[0]["seconds"], float) and recs[0]["peak_cuda_MB"] is None
    sc = run_memory_scaling("cpu", lengths=(32, 64, 128), batch=1, channels=4, N=2, verbose=False)
    per_token = sc["bytes_per_token"]
    assert per_token.max() / per_token.min() < 1.1  # saved bytes linear in L


# ----------------------------------------------------------------------------- GPU (CUDA only)

# mamba-ssm's tests/ops/test_selective_scan.py, float32: out rtol 6e-4 / atol 2e-3; gradients of u
# at 2x, of delta at (5x rtol, 10x atol), of the weights at rtolw = atolw = 1e-3 (raised to rtol, atol
# when z is used; A's atol 5x): gpu_parity.grad_tols.
MS_RTOL, MS_ATOL = gpu_parity.MS_TOLS["float32"]


def _need_mamba_ssm():
    if not mamba_ssm_available():
        pytest.skip(
            "mamba_ssm not importable on this CUDA machine: pip install 'mamba_recall[gpu]' --no-build-isolation"
        )


def _cuda(kw):
    out = {}
    for k, v in kw.items():
        out[k] = v.detach().float().cuda().contiguous().requires_grad_(True) if isinstance(v, torch.Tensor) else v
    return out


def _grad_tols(name, has_z):
    return gpu_parity.grad_tols(name, "float32", has_z)  # mamba-ssm's table, one copy (tools/gpu_parity.py)


def _compare_mamba_ssm(kw):
    """Outputs, last states and every gradient; the last state only with a selective B (the backend refuses it with
    a time-invariant B: see test_gpu_mamba_ssm_invariant_b_last_state_is_the_state_without_b)."""
    names = [k for k in TENSOR_ARGS if k in kw and k != "initial_state"]
    selective_b = kw["B"].dim() > 2
    results = {}
    for backend in ("reference", "mamba_ssm"):
        kwb = _cuda(kw)
        if selective_b:
            out, last = selective_scan(**kwb, return_last_state=True, backend=backend)
        else:
            out, last = selective_scan(**kwb, backend=backend), None
        gen = torch.Generator().manual_seed(0)
        g_out = torch.randn(out.shape, generator=gen).cuda()
        grads = torch.autograd.grad((out * g_out).sum(), [kwb[k] for k in names])
        results[backend] = (out, last, dict(zip(names, grads)))
    ref, ms = results["reference"], results["mamba_ssm"]
    torch.testing.assert_close(ms[0], ref[0], rtol=MS_RTOL, atol=MS_ATOL)
    if selective_b:
        torch.testing.assert_close(ms[1], ref[1], rtol=MS_RTOL, atol=MS_ATOL)
    for name in names:
        rtol, atol = _grad_tols(name, "z" in kw)
        torch.testing.assert_close(ms[2][name], ref[2][name], rtol=rtol, atol=atol, msg=lambda m: f"grad {name}: {m}")


@pytest.mark.gpu
def test_gpu_resolve_auto_and_chunked_on_cuda():
    assert resolve_backend("auto", "cuda") == ("mamba_ssm" if mamba_ssm_available() else "chunked")
    kw = make_scan_inputs(L=100, bc="grouped", seed=1, **ALL_EXTRAS)
    kw = {k: (v.detach().cuda().requires_grad_(True) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    ref = selective_scan(**kw, return_last_state=True, backend="reference")
    chk = selective_scan(**kw, return_last_state=True, backend="chunked")
    assert_close_rel(chk[0], ref[0], F64_TOL, "out")
    assert_close_rel(chk[1], ref[1], F64_TOL, "last")


@pytest.mark.gpu
def test_gpu_mamba_ssm_worked_example():
    _need_mamba_ssm()
    u, delta, A, B, C = worked_example(torch.float32)
    _compare_mamba_ssm(dict(u=u, delta=delta, A=A, B=B, C=C, delta_softplus=True))
    out = selective_scan(*(t.cuda() for t in (u, delta, A, B, C)), delta_softplus=True, backend="mamba_ssm")
    torch.testing.assert_close(out[0, 0].cpu(), torch.tensor(EX_Y), rtol=MS_RTOL, atol=MS_ATOL)


@pytest.mark.gpu
@pytest.mark.parametrize("bc", ["invariant", "selective", "grouped"])
def test_gpu_mamba_ssm_random(bc):
    _need_mamba_ssm()
    kw = make_scan_inputs(
        b=2, d=4, n=8, L=128, bc=bc, dtype=torch.float32, seed=0, D=True, z=True, delta_bias=True, delta_softplus=True
    )
    _compare_mamba_ssm(kw)


@pytest.mark.gpu
def test_gpu_mamba_ssm_invariant_b_last_state_is_the_state_without_b():
    """With a time-invariant B (d, n), mamba-ssm's kernel scans Δ·u without B and multiplies B in at the output
    (selective_scan_fwd_kernel.cuh, kIsVariableB), so the last state it stores is h/B: on the 2026-11-28 H100 run the
    outputs agreed and the last state was off by up to 5.7. The backend refuses that last state; this test pins the
    kernel's behaviour that the refusal is for (the day it returns h, the refusal can go)."""
    _need_mamba_ssm()
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    kw = _cuda(make_scan_inputs(b=2, d=4, n=8, L=128, bc="invariant", dtype=torch.float32, seed=0, delta_softplus=True))
    _, h = selective_scan(**kw, return_last_state=True, backend="reference")
    _, theirs = selective_scan_fn(kw["u"], kw["delta"], kw["A"], kw["B"], kw["C"], delta_softplus=True,
                                  return_last_state=True)  # fmt: skip
    torch.testing.assert_close(theirs * kw["B"].detach(), h.detach(), rtol=MS_RTOL, atol=MS_ATOL)
    with pytest.raises(BackendUnavailableError, match="time-invariant B"):
        selective_scan(**kw, return_last_state=True, backend="mamba_ssm")
    out, last = selective_scan(**kw, return_last_state=True)  # auto: chunked runs this call
    torch.testing.assert_close(last, h, rtol=MS_RTOL, atol=MS_ATOL)


@pytest.mark.gpu
def test_gpu_mamba_ssm_rejects_pytorch_only_options():
    _need_mamba_ssm()
    kw = _cuda(make_scan_inputs(L=8, dtype=torch.float32))
    with pytest.raises(BackendUnavailableError, match="does not support discretization"):
        selective_scan(**kw, backend="mamba_ssm", discretization="zoh")
    with pytest.raises(BackendUnavailableError, match="does not support initial_state"):
        selective_scan(**kw, backend="mamba_ssm", initial_state=torch.zeros(2, 4, 3, device="cuda"))
