"""The Mamba-2 (SSD) scan: one scalar decay per head, with mamba-ssm's ``mamba_chunk_scan_combined`` layout.

Shapes (``mamba_ssm/ops/triton/ssd_combined.py``)::

    x: (b, l, h, p)   dt: (b, l, h)   A: (h,)   B, C: (b, l, g, n)   D: (h, p) or (h,)
    z: (b, l, h, p)   dt_bias: (h,)   initial_states: (b, h, p, n)

Recurrence (Dao & Gu 2024, Eq. 1 with a scalar A per head)::

    a_t = exp(dt_t · A_h)                                   (scalar per head)
    H_t = a_t · H_{t−1} + dt_t · x_t ⊗ B_t                  H: (b, h, p, n)
    y_t = H_t C_t + D ⊙ x_t,   y_t *= silu(z_t)

Because the decay is a scalar per head, a chunk of T steps is a masked matrix product
(the "state-space dual"): y = (L ∘ C Bᵀ) X with L_{ts} = exp(Σ_{s<i≤t} dt_i A) for s ≤ t, computed
from differences of cumulative sums (``segsum``), so each exponent is ≤ 0 and nothing overflows.
The chunked form is Listing 1 of the Mamba-2 paper (``ssd_minimal_discrete``), generalised to
padding, groups, D, z, dt_bias and initial states.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._common import ScanInputError, check_decay_rates


def _prepare(x, dt, A, B, C, D, z, dt_bias, dt_softplus):
    if x.dim() != 4:
        raise ScanInputError(f"x has shape {tuple(x.shape)}; expected (batch, length, heads, headdim).")
    b, l, h, p = x.shape
    if tuple(dt.shape) != (b, l, h):
        raise ScanInputError(f"dt has shape {tuple(dt.shape)}; expected (batch, length, heads) = {(b, l, h)}.")
    if tuple(A.shape) != (h,):
        raise ScanInputError(f"A has shape {tuple(A.shape)}; Mamba-2 takes one scalar per head, shape ({h},).")
    check_decay_rates(A)
    for name, M in (("B", B), ("C", C)):
        if M.dim() != 4 or M.shape[:2] != (b, l) or h % M.shape[2] != 0:
            raise ScanInputError(
                f"{name} has shape {tuple(M.shape)}; expected (batch, length, groups, N) with heads = {h} "
                "divisible by groups."
            )
    if B.shape != C.shape:
        raise ScanInputError(f"B {tuple(B.shape)} and C {tuple(C.shape)} must have the same shape.")
    if D is not None and tuple(D.shape) not in ((h,), (h, p)):
        raise ScanInputError(f"D has shape {tuple(D.shape)}; expected ({h},) or ({h}, {p}).")
    if z is not None and z.shape != x.shape:
        raise ScanInputError(f"z has shape {tuple(z.shape)}; it must equal x's shape {tuple(x.shape)}.")
    if dt_bias is not None and tuple(dt_bias.shape) != (h,):
        raise ScanInputError(f"dt_bias has shape {tuple(dt_bias.shape)}; expected ({h},).")
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    dt = dt.to(dtype)
    if dt_bias is not None:
        dt = dt + dt_bias.to(dtype)
    if dt_softplus:
        dt = F.softplus(dt)
    rep = h // B.shape[2]
    B = B.to(dtype).repeat_interleave(rep, dim=2)  # (b, l, h, n)
    C = C.to(dtype).repeat_interleave(rep, dim=2)
    return x.to(dtype), dt, A.to(dtype), B, C


def _finish(x_in, y, x, D, z):
    if D is not None:
        y = y + x * (D.to(y.dtype)[:, None] if D.dim() == 1 else D.to(y.dtype))
    if z is not None:
        y = y * F.silu(z.to(y.dtype))
    return y.to(x_in.dtype)


def ssd_scan_reference(
    x, dt, A, B, C, D=None, z=None, dt_bias=None, dt_softplus=False, initial_states=None, return_final_states=False
):
    """Sequential Mamba-2 scan, one step per token (the ground truth)."""
    x_in = x
    x, dt, A, B, C = _prepare(x, dt, A, B, C, D, z, dt_bias, dt_softplus)
    b, l, h, p = x.shape
    H = x.new_zeros(b, h, p, B.shape[-1]) if initial_states is None else initial_states.to(x.dtype)
    ys = []
    for t in range(l):
        a = torch.exp(dt[:, t] * A)  # (b, h)
        H = a[:, :, None, None] * H + (dt[:, t, :, None] * x[:, t])[..., None] * B[:, t, :, None, :]
        ys.append(torch.einsum("bhpn,bhn->bhp", H, C[:, t]))
    out = _finish(x_in, torch.stack(ys, dim=1), x, D, z)
    return (out, H) if return_final_states else out


def segsum(a: torch.Tensor) -> torch.Tensor:
    """S[..., t, s] = Σ_{s<i≤t} a_i for s ≤ t and −∞ above the diagonal (so exp(S) is the causal decay)."""
    T = a.shape[-1]
    a = a[..., None].expand(*a.shape, T)  # a[..., i, s] = a_i
    below = torch.tril(torch.ones(T, T, dtype=torch.bool, device=a.device), diagonal=-1)
    a = a.masked_fill(~below, 0)
    S = torch.cumsum(a, dim=-2)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=a.device), diagonal=0)
    return S.masked_fill(~causal, float("-inf"))


def ssd_scan_chunked(
    x,
    dt,
    A,
    B,
    C,
    D=None,
    z=None,
    dt_bias=None,
    dt_softplus=False,
    initial_states=None,
    return_final_states=False,
    chunk_size=64,
):
    """Chunked Mamba-2 scan (SSD): quadratic inside chunks of ``chunk_size``, linear across them."""
    x_in = x
    x, dt, A, B, C = _prepare(x, dt, A, B, C, D, z, dt_bias, dt_softplus)
    b, l, h, p = x.shape
    n = B.shape[-1]
    T = int(chunk_size)
    if T < 1:
        raise ScanInputError(f"chunk_size must be a positive integer, got {chunk_size}.")
    pad = (-l) % T
    X = x * dt[..., None]
    Adt = dt * A  # (b, l, h), ≤ 0
    if pad:  # padded steps: no input, no decay
        X, Adt = F.pad(X, (0, 0, 0, 0, 0, pad)), F.pad(Adt, (0, 0, 0, pad))
        B, C = F.pad(B, (0, 0, 0, 0, 0, pad)), F.pad(C, (0, 0, 0, 0, 0, pad))
    c = (l + pad) // T
    X, B, C = (t.reshape(b, c, T, h, -1) for t in (X, B, C))
    Adt = Adt.reshape(b, c, T, h).permute(0, 3, 1, 2)  # (b, h, c, T)
    A_cum = torch.cumsum(Adt, dim=-1)

    # 1. inside each chunk: y = (L ∘ C Bᵀ) X
    L = torch.exp(segsum(Adt))  # (b, h, c, T, T)
    y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", C, B, L, X)
    # 2. the state each chunk produces from a zero start
    decay_to_end = torch.exp(A_cum[..., -1:] - A_cum)
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B, decay_to_end, X)
    # 3. pass states across chunks
    start = x.new_zeros(b, 1, h, p, n) if initial_states is None else initial_states.to(x.dtype)[:, None]
    states = torch.cat([start, states], dim=1)
    decay_chunk = torch.exp(segsum(F.pad(A_cum[..., -1], (1, 0))))  # (b, h, c+1, c+1)
    states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
    entering, final = states[:, :-1], states[:, -1]
    # 4. contribution of the entering state to every step of the chunk
    y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", C, entering, torch.exp(A_cum))
    y = (y_diag + y_off).reshape(b, c * T, h, p)[:, :l]
    out = _finish(x_in, y, x, D, z)
    return (out, final) if return_final_states else out
