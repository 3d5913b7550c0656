"""Faults of the scans, the MQAR generator and the Mamba model: nothing lost, nothing silently wrong.

Each test pins one fault that used to pass silently (a finite result from a NaN, integers from an integer
input, a raw Python error, the same data for every seed) or crash without saying what to do (a corrupt or
unwritable numba cache), and the behaviour that replaced it: the reference backend's NaN/inf semantics, or
a one-line error naming the argument, its value, the accepted range and the fix.
"""

from __future__ import annotations

import re

import pytest
import torch

from mamba_recall.scan import ScanInputError, selective_scan
from test_scan import TENSOR_ARGS, make_scan_inputs

CPU_BACKENDS = ("reference", "chunked", "fused")


# ----------------------------------------------------------------------------- 1. NaN and inf propagate


def _pattern(t: torch.Tensor) -> torch.Tensor:
    """Where ``t`` is NaN, +inf, −inf: (3, *t.shape) bool."""
    return torch.stack([torch.isnan(t), torch.isposinf(t), torch.isneginf(t)])


def _poison(kw: dict, name: str, value: float) -> None:
    """Set one element of argument ``name`` (not the first step, not the first channel) to ``value``."""
    t = kw[name]
    idx = (1,) * (t.dim() - 1) + (2,) if t.dim() > 1 else (1,)
    with torch.no_grad():
        t[idx] = value


def _patterns(backend: str, kw: dict):
    """NaN/inf patterns of the output, the last state and the gradient of every tensor argument."""
    out, last = selective_scan(**kw, backend=backend, return_last_state=True)
    names = [k for k in TENSOR_ARGS if k in kw]
    grads = torch.autograd.grad(out.sum() + last.sum(), [kw[k] for k in names])
    return [_pattern(out), _pattern(last)] + [_pattern(g) for g in grads], ["out", "last"] + [
        f"grad {k}" for k in names
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("bc", ["selective", "invariant"])
@pytest.mark.parametrize("softplus", [False, True], ids=["raw-delta", "softplus"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", TENSOR_ARGS)
def test_nonfinite_inputs_propagate_as_in_the_reference(name, value, softplus, bc, dtype):
    """One NaN/±inf in any argument gives the reference's NaN/inf pattern in the output, the last state and
    every gradient, on every CPU backend. Before: the fused float32 kernel's exp clamped its argument, so a
    NaN in A (a diverged A_log) came out finite and training went on with a finite loss."""
    expected = None
    for backend in CPU_BACKENDS:
        kw = make_scan_inputs(
            b=2,
            d=3,
            n=4,
            L=6,
            bc=bc,
            dtype=dtype,
            seed=1,
            D=True,
            z=True,
            delta_bias=True,
            delta_softplus=softplus,
            initial_state=True,
        )
        _poison(kw, name, value)
        got, what = _patterns(backend, kw)
        if expected is None:
            expected = got
            continue
        for w, a, b in zip(what, got, expected):
            assert torch.equal(a, b), f"{backend}: {w} has another NaN/inf pattern than the reference"


def test_fused_float32_exp_special_values():
    """exp inside the fused kernel (through a (1, K, 1) scan with h_0 = 1, u = 0: out = exp(A)) follows libm:
    NaN → NaN, −inf → 0, +inf and x > ln(FLT_MAX) → inf, and stays finite just below the overflow."""
    x = torch.tensor([float("nan"), float("-inf"), float("inf"), 88.8, 1e30, -1e30, 88.7, 0.0])
    K = x.numel()
    out = selective_scan(
        torch.zeros(1, K, 1),
        torch.ones(1, K, 1),
        x[:, None],
        torch.ones(K, 1),
        torch.ones(K, 1),
        initial_state=torch.ones(1, K, 1),
        backend="fused",
    )[0, :, 0]
    assert torch.isnan(out[0])
    assert out[1] == 0 and out[5] == 0
    assert torch.isposinf(out[2:5]).all()
    assert torch.isfinite(out[6]) and out[7] == 1


# ----------------------------------------------------------------------------- 2. bad inputs, clear errors


def _kw(L=5, dtype=torch.float32, **override):
    g = torch.Generator().manual_seed(0)
    kw = dict(
        u=torch.randn(2, 3, L, generator=g, dtype=dtype),
        delta=torch.rand(2, 3, L, generator=g, dtype=dtype),
        A=-torch.rand(3, 4, generator=g, dtype=dtype),
        B=torch.randn(2, 4, L, generator=g, dtype=dtype),
        C=torch.randn(2, 4, L, generator=g, dtype=dtype),
    )
    kw.update(override)
    return kw


INT_CASES = {
    "u": dict(u=torch.randint(0, 5, (2, 3, 5))),
    "delta": dict(delta=torch.ones(2, 3, 5, dtype=torch.int32)),
    "A": dict(A=-torch.randint(1, 5, (3, 4))),
    "B": dict(B=torch.ones(2, 4, 5, dtype=torch.int64)),
    "C": dict(C=torch.ones(3, 4, dtype=torch.bool)),
    "D": dict(D=torch.ones(3, dtype=torch.int64)),
    "z": dict(z=torch.zeros(2, 3, 5, dtype=torch.int64)),
    "delta_bias": dict(delta_bias=torch.zeros(3, dtype=torch.int64)),
    "initial_state": dict(initial_state=torch.zeros(2, 3, 4, dtype=torch.int64)),
}


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("name", list(INT_CASES))
def test_non_floating_inputs_are_rejected(name, backend):
    """Before: an integer u returned integers (the values truncated), an integer A was silently upcast."""
    t = INT_CASES[name][name]
    with pytest.raises(ScanInputError, match=re.escape(f"{name} has dtype {t.dtype}")) as info:
        selective_scan(**_kw(**INT_CASES[name]), backend=backend)
    assert f"{name}.float()" in str(info.value)


@pytest.mark.parametrize("backend", ("auto",) + CPU_BACKENDS)
def test_list_u_is_rejected_clearly(backend):
    """Before: AttributeError: 'list' object has no attribute 'device'."""
    with pytest.raises(ScanInputError, match=re.escape("u must be a torch.Tensor, got list; convert it with")):
        selective_scan(**_kw(u=[[[1.0] * 5] * 3] * 2), backend=backend)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_empty_sequence_is_rejected_on_every_backend(backend):
    """Before: reference raised 'stack expects a non-empty TensorList', chunked and fused returned (b, d, 0).
    Now one rule for all: L ≥ 1."""
    with pytest.raises(ScanInputError, match=re.escape("u has shape (2, 3, 0): length 0; the scan needs at least")):
        selective_scan(**_kw(L=0), backend=backend)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (1, 3, 4)])
def test_wrong_initial_state_shape_names_the_expected_one(backend, shape):
    """Before: chunked and reference failed inside a reshape/broadcast with a raw RuntimeError."""
    msg = f"initial_state has shape {tuple(shape)}; expected (batch, channels, N) = (2, 3, 4)."
    with pytest.raises(ScanInputError, match=re.escape(msg)):
        selective_scan(**_kw(), initial_state=torch.zeros(shape), backend=backend)
