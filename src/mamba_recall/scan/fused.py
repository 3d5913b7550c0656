"""The fused CPU selective scan: one compiled loop per (batch, channel), the N states kept local.

What ``selective_scan_fn``'s CUDA kernel does on a GPU, written for the CPU with numba (LLVM, ships
as wheels: no compiler on the reader's machine). Mamba paper §3, Eq. (2a)–(2b) with the
discretisation of Eq. (4) and mamba-ssm's Euler rule for B. For one (batch b, channel d) pair and
every step t, with a_n = A[d, n] and the N states h[n] in a local array::

    Δ_t  = softplus(delta_t + delta_bias[d])      (softplus only if delta_softplus)
    Ā_t  = exp(Δ_t a)                              (N values)
    h_t  = Ā_t ⊙ h_{t−1} + Δ_t u_t B_t             h: (N,), B_t: (N,)
    y_t  = ⟨C_t, h_t⟩ + D[d] u_t,   out_t = y_t · silu(z_t)

Δ's bias and softplus, D and the z gate are elementwise over (b, d, L): PyTorch runs them (vectorised,
with its autograd), exactly as the reference does. The kernels (``_fused_kernels.py``) run the part
with the states, y_t = ⟨C_t, h_t⟩: the (batch · channels) pairs in parallel (``numba.prange``), time
sequentially, and no (batch, channels, L, N) tensor is ever made: the forward pass reads u, Δ, B, C
once and writes y (b, d, L) and the last state (b, d, N).

Backward pass (as mamba-ssm's ``selective_scan_bwd``): it *recomputes* the states of one
(b, d) pair into per-task (L + 1, N) scratch buffers (kept in cache: 33 KB at L = 512, N = 16,
float32) and then runs backwards in time with the state gradient G_t = ∂ℓ/∂h_t, given
dy_t = ∂ℓ/∂y_t from autograd (through the gate and D)::

    G_t      = dy_t C_t + Ā_{t+1} ⊙ G_{t+1},   G_L = dy_L C_L + ∂ℓ/∂h_L (the last-state gradient)
    dC_t    += dy_t h_t                 dB_t += Δ_t u_t G_t
    dΔ_t     = ⟨G_t, B_t⟩ u_t + Σ_n G_t[n] h_{t−1}[n] Ā_t[n] a_n
    du_t     = ⟨G_t, B_t⟩ Δ_t,          dA[d] += Σ_t Δ_t Ā_t ⊙ h_{t−1} ⊙ G_t,    dh_0 = Ā_1 ⊙ G_1

Nothing is divided by a decay (the states are recomputed forwards, not undone backwards), so the
scan is as stable as the sequential reference for any L and Δ.

Determinism: gradients of B and C that sum over channels (selective or grouped maps) are
accumulated by tasks = (batch, group, channel block) into per-task partial buffers and then summed
in a fixed order; the number of blocks depends only on the shapes (never on the thread count),
so results are bit-identical from run to run and across ``torch.set_num_threads`` (see SERIAL_BELOW).

Speed: float32 uses a vectorisable exp (Cephes ``expf`` polynomial, ≤ 2 ulp, :func:`_exp`) so
that LLVM runs the N-loop in SIMD lanes, with numba's ``fastmath`` (FMA contraction, reassociation; no
'nnan'/'ninf', so NaN and inf propagate as in the reference); float64 uses libm's ``exp`` and strict IEEE
arithmetic, so that float64 results are bit-identical whether the kernels were compiled in this process
or loaded from the on-disk cache (``_fused_kernels``). The compiled kernels are
cached on disk (``cache=True``): the first call in a fresh environment compiles them (see the
book's appendix "Speed of the scans and of training" for the measured cost), later processes load them. The
cache folder: ``NUMBA_CACHE_DIR`` when set; for an installed package (no checkout around it) the user's cache
folder (``~/.cache/mamba_recall/numba`` on Linux), never ``site-packages``; in a checkout this package's
``__pycache__``.
"""

from __future__ import annotations

import functools
import math
import os
import threading

import numpy as np
import torch
import torch.nn.functional as F

from ._common import check_decay_rates, validate_scan_args
from .mamba_ssm_backend import BackendUnavailableError

NUMBA_INSTALL_HINT = (
    "pip install 'numba>=0.60' (a base dependency of mamba_recall: `make` installs it), or pick backend='chunked'."
)
# tasks the backward pass cuts the (batch, channels) pairs into (at least this many when possible);
# a function of the shapes only, so the summation order of dB, dC never depends on the thread count.
BACKWARD_TASKS = 64


@functools.lru_cache(maxsize=1)
def _numba_import_error() -> str | None:
    """None when the fused kernels can be built: numba imports and so does ``_fused_kernels`` (which sets up
    the kernels' on-disk cache, or compiles them without one, with a warning, where no folder is writable);
    else the reason, one line."""
    try:
        import numba  # noqa: F401
    except Exception as exc:  # ImportError, or a broken llvmlite
        return f"numba could not be imported ({type(exc).__name__}: {exc})"
    try:
        _kernels()
    except Exception as exc:
        return f"the fused kernels could not be set up ({type(exc).__name__}: {exc})"
    return None


def fused_available() -> bool:
    """True when numba imports and the kernels' module loads (the fused backend runs on CPU tensors only);
    what ``resolve_backend("auto", "cpu")`` asks."""
    return _numba_import_error() is None


def require_fused(device: torch.device | None = None) -> None:
    """Raise BackendUnavailableError naming the fix if the fused scan cannot run on ``device``."""
    if device is not None and torch.device(device).type != "cpu":
        raise BackendUnavailableError(
            f"backend='fused' runs on CPU tensors only, but the inputs are on {device}; use backend='auto' "
            "(mamba_ssm on CUDA when installed) or backend='chunked'."
        )
    err = _numba_import_error()
    if err is not None:
        raise BackendUnavailableError(f"backend='fused' is unavailable: {err}. " + NUMBA_INSTALL_HINT)


# ----------------------------------------------------------------------------- the kernels


# Below this many (batch · channels · L · N) elements a call runs the serially compiled kernels: a
# parallel launch (a hand-off to numba's worker threads, ~20–50 µs, more on a busy machine) would cost
# more than it saves. The choice depends on the shapes only, never on the thread count, because the two
# compilations may round differently (LLVM vectorises them differently): for given shapes the result is
# bit-identical whatever ``torch.set_num_threads`` says.
SERIAL_BELOW = 1 << 16
_LAUNCH_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _kernels():
    """Compile (or load from the on-disk cache) the numba kernels; imported lazily.

    numba's ``workqueue`` threading layer is chosen unless NUMBA_THREADING_LAYER is set: its idle
    workers sleep, where the OpenMP layer's spin and, next to torch's own OpenMP pool, cost several
    times the scan's CPU time on a busy two-core machine (measured, README "Speed of the scans").
    workqueue does not allow concurrent launches from two threads, so launches are serialised by a lock.
    """
    import numba

    if "NUMBA_THREADING_LAYER" not in os.environ:
        numba.config.THREADING_LAYER = "workqueue"
    from . import _fused_kernels

    return _fused_kernels


def kernel_exp_and_fastmath():
    """``(exp, fastmath)``: the fused kernels' scalar exp (:func:`_exp` of ``_fused_kernels``: the vectorisable
    float32 Cephes polynomial, libm for float64; callable only inside ``numba.njit`` code) and their numba
    ``fastmath`` flags. What the scan benchmark's ``measure_exp_fma_rates`` (``benchmarks/scan.py``) times to bound
    the kernels' speed; imports the kernels' module (numba) like :func:`_kernels`, without touching the threading
    layer."""
    from . import _fused_kernels

    return _fused_kernels._exp, _fused_kernels.FASTMATH


def _launch(kind: str, dtype: torch.dtype, elements: int, *args) -> None:
    """Run kernel ``kind`` (forward | backward) in ``dtype`` (float32: the fastmath kernels, float64: the strict
    ones, see ``_fused_kernels``): the serial compilation below SERIAL_BELOW elements, else the parallel one
    on ``torch.get_num_threads()`` threads (the reader's thread setting)."""
    import numba

    kernels = _kernels()
    name = kind + ("64" if dtype == torch.float64 else "")
    if elements < SERIAL_BELOW:
        getattr(kernels, f"{name}_serial")(*args)
        return
    with _LAUNCH_LOCK:
        numba.set_num_threads(max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)))
        getattr(kernels, name)(*args)


def _map_layout(M: torch.Tensor, dtype) -> torch.Tensor:
    """B or C as a contiguous (b|1, groups, L|1, N) array: time-invariant (d, N) → (1, d, 1, N),
    selective (b, N, L) → (b, 1, L, N), grouped (b, G, N, L) → (b, G, L, N) (N fastest for SIMD)."""
    if M.dim() == 2:
        K = M[None, :, None, :]
    elif M.dim() == 3:
        K = M.transpose(1, 2)[:, None]
    else:
        K = M.transpose(2, 3)
    return K.detach().to(dtype).contiguous()


def _one(dtype) -> np.floating:
    """1 in the compute dtype (the kernels derive their typed zeros from it)."""
    return np.float64(1.0) if dtype == torch.float64 else np.float32(1.0)


def _prep(t: torch.Tensor | None, dtype, shape_if_none) -> torch.Tensor:
    """A contiguous, detached tensor in compute precision (zeros of ``shape_if_none`` for an absent one)."""
    if t is None:
        return torch.zeros(shape_if_none, dtype=dtype)
    return t.detach().to(dtype).contiguous()


def _task_grouping(channels, groups_B, groups_C, batch):
    """(task groups, blocks per group): tasks never straddle a group of B or C, and there are about
    BACKWARD_TASKS of them (never more than the channels allow)."""
    gB = 1 if groups_B is None else groups_B
    gC = 1 if groups_C is None else groups_C
    G = gB * gC // math.gcd(gB, gC)  # lcm of two divisors of `channels` divides `channels`
    per_group = channels // G
    blocks = max(1, min(per_group, -(-BACKWARD_TASKS // (batch * G))))
    return G, blocks


class _FusedScan(torch.autograd.Function):
    """y, last = the state-space part of the scan (u, Δ, A, B, C, h0); backward recomputes the states."""

    @staticmethod
    def forward(ctx, u, dt, A, B, C, h0):
        dtype = u.dtype  # the compute dtype: the caller has converted u and Δ
        b, d, L = u.shape
        N = A.shape[1]
        # the kernels' inputs, saved for the backward pass (its only memory: u, Δ (b, d, L), B, C and A;
        # no state and no (b, d, L, N) tensor is stored)
        prepared = (
            u.detach().contiguous(),
            dt.detach().contiguous(),
            _prep(A, dtype, None),
            _map_layout(B, dtype),
            _map_layout(C, dtype),
            _prep(h0, dtype, (b, d, N)),
        )
        y = torch.empty((b, d, L), dtype=dtype)
        last = torch.empty((b, d, N), dtype=dtype)
        _launch("forward", dtype, b * d * L * N, *(t.numpy() for t in prepared), _one(dtype), y.numpy(), last.numpy())
        ctx.save_for_backward(*prepared)
        ctx.meta = dict(
            dtypes=[t.dtype if t is not None else None for t in (u, dt, A, B, C, h0)],
            B_dim=B.dim(),
            C_dim=C.dim(),
            has_h0=h0 is not None,
        )
        return y, last

    @staticmethod
    def backward(ctx, dy, dlast):
        prepared = ctx.saved_tensors
        meta = ctx.meta
        u, A, Bk, Ck = prepared[0], prepared[2], prepared[3], prepared[4]
        dtype = u.dtype
        b, d, L = u.shape
        N = A.shape[1]
        dy_t = _prep(dy, dtype, (b, d, L))
        dlast_t = _prep(dlast, dtype, (b, d, N))
        B_inv, C_inv = meta["B_dim"] == 2, meta["C_dim"] == 2
        G, blocks = _task_grouping(d, None if B_inv else Bk.shape[1], None if C_inv else Ck.shape[1], b)
        # partial sums of dB, dC: per (batch, channel) for time-invariant maps, per task otherwise
        dBp = torch.zeros((1, b, d, 1, N) if B_inv else (blocks, b, G, L, N), dtype=dtype)
        dCp = torch.zeros((1, b, d, 1, N) if C_inv else (blocks, b, G, L, N), dtype=dtype)
        du, ddt = torch.empty((b, d, L), dtype=dtype), torch.empty((b, d, L), dtype=dtype)
        dA_p, dh0 = torch.empty((b, d, N), dtype=dtype), torch.empty((b, d, N), dtype=dtype)
        _launch(
            "backward",
            dtype,
            b * d * L * N,
            *(t.numpy() for t in prepared),
            _one(dtype),
            dy_t.numpy(),
            dlast_t.numpy(),
            G,
            blocks,
            B_inv,
            C_inv,
            *(t.numpy() for t in (du, ddt, dA_p, dh0, dBp, dCp)),
        )

        def reduce_map(part, inv, K):
            if inv:  # (1, b, d, 1, N) → (d, N): sum over the batch
                return part[0].sum(0)[:, 0]
            gM = K.shape[1]  # (blocks, b, G, L, N) → (b, G_M, L, N): sum the blocks, then the task groups
            red = part.sum(0).view(b, gM, G // gM, L, N).sum(2)
            return red.transpose(2, 3)  # (b, G_M, N, L)

        dB = reduce_map(dBp, B_inv, Bk)
        dC = reduce_map(dCp, C_inv, Ck)
        if meta["B_dim"] == 3:
            dB = dB[:, 0]
        if meta["C_dim"] == 3:
            dC = dC[:, 0]
        grads = (du, ddt, dA_p.sum(0), dB, dC, dh0 if meta["has_h0"] else None)
        needs = ctx.needs_input_grad
        return tuple(None if (g is None or not needs[i]) else g.to(meta["dtypes"][i]) for i, g in enumerate(grads))


def selective_scan_fused(
    u,
    delta,
    A,
    B,
    C,
    D=None,
    z=None,
    delta_bias=None,
    delta_softplus=False,
    return_last_state=False,
    *,
    discretization="euler",
    initial_state=None,
):
    """Fused CPU selective scan with ``selective_scan_fn``'s signature (see the module docstring).

    u, delta, z: (b, d, l); A: (d, n); B, C: (d, n) | (b, n, l) | (b, g, n, l); D, delta_bias: (d,);
    ``initial_state`` (b, d, n) replaces h_0 = 0. Returns out (b, d, l) in u's dtype, plus the last
    state (b, d, n) if ``return_last_state``. Compute precision: float64 for float64 inputs, else
    float32 (as the other backends). Only the Euler rule for B (mamba-ssm's): ``discretization="zoh"``
    raises, use backend='chunked' or 'reference' for it.
    """
    validate_scan_args(u, delta, A, B, C, D, z, delta_bias, discretization, initial_state)
    check_decay_rates(A)
    require_fused(u.device)
    if discretization != "euler":
        raise BackendUnavailableError(
            f"backend='fused' implements mamba-ssm's Euler rule only, not discretization={discretization!r}; "
            "use backend='chunked' or 'reference' (backend='auto' picks chunked for it)."
        )
    dtype = torch.float64 if u.dtype == torch.float64 else torch.float32
    # Δ's bias and softplus, D and the gate are elementwise over (b, d, L): PyTorch (and its autograd)
    # runs them, vectorised, the kernels the part with the N states (as finish_output in _common.py)
    dt = delta.to(dtype)
    if delta_bias is not None:
        dt = dt + delta_bias.to(dtype)[None, :, None]
    if delta_softplus:
        dt = F.softplus(dt)
    uc = u.to(dtype)
    y, last = _FusedScan.apply(uc, dt, A, B, C, initial_state)
    if D is not None:
        y = y + uc * D.to(dtype)[None, :, None]
    if z is not None:
        y = y * F.silu(z.to(dtype))
    out = y.to(u.dtype)
    return (out, last.to(u.dtype)) if return_last_state else out
