"""Tests for the fused CPU scan (mamba_recall.scan.fused): agreement with the sequential reference.

Same tolerances as the other backends (tests/scan/test_scan.py): float64 ‖a − b‖∞/‖b‖∞ ≤ 1e-10 for the
output, the last state and every gradient; float32 ≤ 1e-5. Also: gradcheck, L = 8192 with large Δ,
bit-for-bit determinism (run to run and across thread counts), the ``auto`` rule and the errors.
"""

from __future__ import annotations

import re

import pytest
import torch

from mamba_recall.scan import (
    BackendUnavailableError,
    ScanInputError,
    resolve_backend,
    selective_scan,
    selective_scan_chunked,
    selective_scan_fused,
    selective_scan_reference,
)
from mamba_recall.scan import fused as fused_module
from test_scan import (
    ALL_EXTRAS,
    BAD_INPUTS,
    EX_STATES,
    EX_Y,
    F32_TOL,
    F64_TOL,
    TENSOR_ARGS,
    _good,
    _loop_scan,
    _stability_inputs,
    assert_close_rel,
    make_scan_inputs,
    run_with_grads,
    worked_example,
)


def compare_fused(kw, return_last_state, tol):
    ref = run_with_grads(selective_scan_reference, kw, return_last_state)
    fus = run_with_grads(selective_scan_fused, kw, return_last_state)
    assert fus[0].dtype == kw["u"].dtype
    assert_close_rel(fus[0], ref[0], tol, "out")
    if return_last_state:
        assert fus[1].shape == ref[1].shape
        assert_close_rel(fus[1], ref[1], tol, "last state")
    assert set(fus[2]) == set(ref[2])
    for name in ref[2]:
        assert fus[2][name].dtype == kw[name].dtype
        assert_close_rel(fus[2][name], ref[2][name], tol, f"grad {name}")


# ----------------------------------------------------------------------------- fused == reference, float64


@pytest.mark.parametrize("L", [1, 7, 64, 100])
@pytest.mark.parametrize("bc", ["invariant", "selective", "grouped"])
@pytest.mark.parametrize("extras", [False, True], ids=["bare", "D-z-bias-softplus-h0-last"])
def test_fused_matches_reference_fp64(L, bc, extras):
    kw = make_scan_inputs(L=L, bc=bc, seed=L, **(ALL_EXTRAS if extras else {}))
    compare_fused(kw, return_last_state=extras, tol=F64_TOL)


@pytest.mark.parametrize("option", ["D", "z", "delta_bias", "delta_softplus", "initial_state", "return_last_state"])
@pytest.mark.parametrize("bc", ["invariant", "selective", "grouped"])
def test_fused_matches_reference_each_option(option, bc):
    flags = {} if option == "return_last_state" else {option: True}
    kw = make_scan_inputs(L=50, bc=bc, seed=7, **flags)
    compare_fused(kw, return_last_state=option == "return_last_state", tol=F64_TOL)


@pytest.mark.parametrize("b,d,n,groups", [(1, 1, 1, 1), (3, 6, 5, 3), (2, 12, 4, 12), (5, 64, 16, 2), (40, 3, 2, 1)])
def test_fused_shapes_and_task_blocks(b, d, n, groups):
    """Odd sizes: one channel, one state, groups = channels, many channels per task block, batch > tasks."""
    kw = make_scan_inputs(b=b, d=d, n=n, L=19, bc="grouped", groups=groups, seed=b + d, **ALL_EXTRAS)
    compare_fused(kw, return_last_state=True, tol=F64_TOL)


@pytest.mark.parametrize(
    "B_kind,C_kind",
    [
        ("invariant", "selective"),
        ("selective", "invariant"),
        ("grouped2", "grouped4"),
        ("grouped4", "selective"),
        ("invariant", "grouped2"),
    ],
)
def test_fused_mixed_maps(B_kind, C_kind):
    """B and C of different kinds (mamba-ssm's is_variable_B / is_variable_C), also different group counts."""
    kw = make_scan_inputs(b=2, d=8, n=3, L=23, bc="selective", seed=4, **ALL_EXTRAS)
    g = torch.Generator().manual_seed(5)

    def make(kind):
        if kind == "invariant":
            return torch.randn(8, 3, generator=g, dtype=torch.float64)
        if kind == "selective":
            return torch.randn(2, 3, 23, generator=g, dtype=torch.float64)
        return torch.randn(2, int(kind[-1]), 3, 23, generator=g, dtype=torch.float64)

    kw["B"], kw["C"] = make(B_kind).requires_grad_(True), make(C_kind).requires_grad_(True)
    compare_fused(kw, return_last_state=True, tol=F64_TOL)


def test_fused_softplus_threshold_and_large_raw_delta():
    """Raw Δ above torch's softplus threshold (20) takes the identity branch, as F.softplus does."""
    kw = make_scan_inputs(b=2, d=3, n=4, L=30, bc="selective", seed=9, D=True, z=True, delta_softplus=True)
    with torch.no_grad():
        kw["delta"][:, :, ::3] += 25.0
    compare_fused(kw, return_last_state=True, tol=F64_TOL)


def test_fused_gradients_only_for_inputs_that_need_them():
    kw = make_scan_inputs(L=12, bc="selective", seed=2, **ALL_EXTRAS)
    for name in ("A", "D", "delta_bias"):
        kw[name] = kw[name].detach()
    out = selective_scan_fused(**kw)
    out.sum().backward()
    assert kw["A"].grad is None and kw["D"].grad is None and kw["delta_bias"].grad is None
    assert kw["u"].grad is not None and kw["initial_state"].grad is not None


def test_fused_non_contiguous_inputs():
    kw = make_scan_inputs(b=2, d=4, n=3, L=16, bc="selective", seed=3, D=True, z=True)
    u_t = kw["u"].detach().transpose(0, 1).contiguous().transpose(0, 1).requires_grad_(True)
    assert not u_t.is_contiguous()
    kw["u"] = u_t
    compare_fused(kw, return_last_state=False, tol=F64_TOL)


@pytest.mark.parametrize("bc", ["selective", "grouped", "invariant"])
def test_fused_gradcheck(bc):
    kw = make_scan_inputs(b=2, d=4, n=2, L=5, bc=bc, groups=2, seed=1, **ALL_EXTRAS)
    names = [k for k in TENSOR_ARGS if k in kw]
    inputs = tuple(kw[k].detach().clone().requires_grad_(True) for k in names)

    def f(*tensors):
        return selective_scan_fused(**dict(zip(names, tensors)), delta_softplus=True, return_last_state=True)

    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-6)


# ----------------------------------------------------------------------------- float32 and half precision


@pytest.mark.parametrize("bc", ["invariant", "selective", "grouped"])
@pytest.mark.parametrize("L", [7, 512])
def test_fused_matches_reference_fp32(bc, L):
    kw = make_scan_inputs(b=2, d=8, n=16, L=L, bc=bc, dtype=torch.float32, seed=5, **ALL_EXTRAS)
    compare_fused(kw, return_last_state=True, tol=F32_TOL)


def test_fused_exp_kernel_accuracy_dense():
    """Dense check of the float32 exp through a (1, K, 1) scan: out = Ā·h_0 with B = C = 1, u = 0 (Δ·A = x, the
    positive x through Δ = −1 since A must be ≤ 0)."""
    x = torch.linspace(-87.0, 88.0, 100_003)
    K = x.numel()
    out = selective_scan_fused(
        torch.zeros(1, K, 1),
        torch.where(x > 0, -1.0, 1.0).view(1, K, 1),
        -x.abs()[:, None],
        torch.ones(K, 1),
        torch.ones(K, 1),
        initial_state=torch.ones(1, K, 1),
    )[0, :, 0]
    exact = torch.exp(x.double())
    rel = ((out.double() - exact).abs() / exact).max().item()
    assert torch.isfinite(out).all() and rel <= 2.0 * 2.0**-23, rel  # the docstring's 2 ulp (measured: 0.98)
    x = torch.linspace(-200.0, -87.34, 1001)  # exact float32 exp is denormal or 0 there; the kernel gives 0
    out = selective_scan_fused(
        torch.zeros(1, 1001, 1),
        torch.ones(1, 1001, 1),
        x[:, None],
        torch.ones(1001, 1),
        torch.ones(1001, 1),
        initial_state=torch.ones(1, 1001, 1),
    )
    assert (out == 0).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_half_precision_inputs_compute_in_float32(dtype):
    kw = make_scan_inputs(b=2, d=4, n=3, L=9, bc="selective", dtype=torch.float32, seed=8, D=True, z=True)
    half = {k: (v.detach().to(dtype) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    out = selective_scan_fused(**half)
    ref = selective_scan_reference(**half)
    assert out.dtype == dtype
    assert_close_rel(out.float(), ref.float(), 1e-2, "half")


# ----------------------------------------------------------------------------- long L, large Δ


@pytest.mark.parametrize("fixed", [True, False], ids=["delta=20", "delta~U(0,20)"])
def test_fused_long_sequence_large_delta_finite_fp32(fixed):
    u, delta, A, B, C = _stability_inputs(2, 4, 16, 8192, torch.float32, fixed=fixed)
    out, last = selective_scan_fused(u, delta, A, B, C, return_last_state=True)
    assert torch.isfinite(out).all() and torch.isfinite(last).all()
    (out.sum() + last.sum()).backward()
    for name, t in zip("u delta A B C".split(), (u, delta, A, B, C)):
        assert t.grad is not None and torch.isfinite(t.grad).all(), f"grad {name} not finite"
    out64 = selective_scan_fused(*(t.detach().double() for t in (u, delta, A, B, C)))
    assert_close_rel(out.detach(), out64, F32_TOL, "fp32 vs fp64")


def test_fused_long_sequence_large_delta_matches_reference_fp64():
    """L = 8192, Δ ~ U(0, 20), A = −16..−1, float64: fused == reference (output, last state); gradients ==
    those of the same recurrence as a loop (test_scan._loop_scan: the reference's backward is O(L²))."""
    u, delta, A, B, C = _stability_inputs(1, 2, 4, 8192, torch.float64, fixed=False, seed=4)
    kw = dict(u=u, delta=delta, A=A, B=B, C=C)
    with torch.no_grad():
        ref_out, ref_last = selective_scan_reference(**kw, return_last_state=True)
    out, last, grads = run_with_grads(selective_scan_fused, kw, True)
    assert_close_rel(out, ref_out, F64_TOL, "out")
    assert_close_rel(last, ref_last, F64_TOL, "last")
    _, _, loop_grads = run_with_grads(_loop_scan, kw, True)
    for name in kw:
        assert_close_rel(grads[name], loop_grads[name], F64_TOL, f"grad {name}")


# ----------------------------------------------------------------------------- determinism


def _all_grads(kw, seed=0):
    out, last, grads = run_with_grads(selective_scan_fused, kw, True, seed=seed)
    return [out, last, *grads.values()]


def test_fused_is_deterministic_across_runs_and_threads():
    kw = make_scan_inputs(b=3, d=64, n=16, L=200, bc="selective", dtype=torch.float32, seed=6, **ALL_EXTRAS)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        first, second = _all_grads(kw), _all_grads(kw)
        torch.set_num_threads(1)
        single = _all_grads(kw)
    finally:
        torch.set_num_threads(threads)
    for a, b, c in zip(first, second, single):
        assert torch.equal(a, b) and torch.equal(a, c)


# ----------------------------------------------------------------------------- dispatch and errors


def test_auto_is_fused_on_cpu_and_chunked_for_zoh():
    assert resolve_backend("auto", "cpu") == "fused"
    assert resolve_backend("auto", "cpu", discretization="zoh") == "chunked"
    kw = make_scan_inputs(L=20, bc="selective", seed=2, **ALL_EXTRAS)
    for disc in ("euler", "zoh"):
        auto = selective_scan(**kw, return_last_state=True, discretization=disc)
        ref = selective_scan_reference(**kw, return_last_state=True, discretization=disc)
        assert_close_rel(auto[0], ref[0], F64_TOL, disc)
        assert_close_rel(auto[1], ref[1], F64_TOL, disc)


def test_dispatcher_routes_fused():
    kw = make_scan_inputs(L=20, bc="grouped", seed=2, **ALL_EXTRAS)
    a = selective_scan(**kw, return_last_state=True, backend="fused")
    b = selective_scan_fused(**kw, return_last_state=True)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_fused_rejects_zoh_naming_the_fix():
    with pytest.raises(BackendUnavailableError, match="use backend='chunked' or 'reference'"):
        selective_scan(**_good(), backend="fused", discretization="zoh")


def test_fused_rejects_non_cpu_device():
    with pytest.raises(BackendUnavailableError, match="runs on CPU tensors only"):
        resolve_backend("fused", "cuda")


def test_fused_without_numba(monkeypatch):
    """Explicit 'fused' raises with the install command; 'auto' is chunked (a rule, printed by setup)."""
    monkeypatch.setattr(fused_module, "_numba_import_error", lambda: "ImportError: No module named 'numba'")
    with pytest.raises(BackendUnavailableError, match=re.escape("pip install 'numba")):
        selective_scan(**_good(), backend="fused")
    assert resolve_backend("auto", "cpu") == "chunked"
    out = selective_scan(**_good())
    assert_close_rel(out, selective_scan_chunked(**_good()), F64_TOL, "auto without numba")


@pytest.mark.parametrize("override,fragment", [(o, f) for _, o, f in BAD_INPUTS], ids=[i for i, _, _ in BAD_INPUTS])
def test_fused_bad_input_raises(override, fragment):
    with pytest.raises(ScanInputError, match=re.escape(fragment)):
        selective_scan(**_good(**override), backend="fused")


def test_fused_bad_initial_state():
    with pytest.raises(
        ScanInputError, match=re.escape("initial_state has shape (2, 4); expected (batch, channels, N)")
    ):
        selective_scan(**_good(), backend="fused", initial_state=torch.zeros(2, 4, dtype=torch.float64))


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-9), (torch.float32, 1e-6)], ids=["fp64", "fp32"])
def test_fused_worked_example(dtype, tol):
    u, delta, A, B, C = worked_example(dtype)
    out, last = selective_scan(u, delta, A, B, C, delta_softplus=True, return_last_state=True, backend="fused")
    assert (out[0, 0].double() - torch.tensor(EX_Y, dtype=torch.float64)).abs().max() <= tol
    assert (last[0, 0].double() - torch.tensor(EX_STATES[-1], dtype=torch.float64)).abs().max() <= tol


def test_fused_in_a_mamba_model_matches_chunked():
    from mamba_recall.models.mamba import MambaLMHeadModel

    torch.manual_seed(0)
    model = MambaLMHeadModel(16, 2, 11, d_state=4).double()
    ids = torch.randint(0, 11, (3, 13))
    results = {}
    for backend in ("chunked", "fused"):
        model.backend = backend
        model.zero_grad()
        logits = model(ids)
        logits.pow(2).mean().backward()
        results[backend] = (logits.detach(), [p.grad.clone() for p in model.parameters()])
    assert_close_rel(results["fused"][0], results["chunked"][0], F64_TOL, "logits")
    for a, b in zip(results["fused"][1], results["chunked"][1]):
        assert_close_rel(a, b, F64_TOL, "parameter gradient")
