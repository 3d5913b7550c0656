"""Argument checking and preparation shared by every selective-scan backend.

All backends take mamba-ssm's ``selective_scan_fn`` arguments and shapes
(``mamba_ssm/ops/selective_scan_interface.py``):

=============  =====================================================  =========================
argument       shape                                                  meaning
=============  =====================================================  =========================
``u``          (batch, channels, length)                              input x̂_t of the SSM
``delta``      (batch, channels, length)                              step Δ_t before bias/softplus
``A``          (channels, N)                                          diagonal state matrix (real, ≤ 0)
``B``, ``C``   (channels, N) | (batch, N, length) | (batch, G, N, L)  input / output maps
``D``          (channels,)                                            skip connection
``z``          (batch, channels, length)                              gate, ``out *= silu(z)``
``delta_bias`` (channels,)                                            added to Δ before softplus
=============  =====================================================  =========================

The recurrence (Mamba paper, Eqs. 2a–2b and 4 with the Euler rule for B that the kernels use)::

    Δ_t  = softplus(delta_t + delta_bias)          (if delta_softplus)
    Ā_t  = exp(Δ_t · A)                            (zero-order hold for A)
    B̄_t  = Δ_t · B_t                               (Euler;  exact ZOH: (Δ_t A)⁻¹(exp(Δ_t A) − 1) Δ_t B_t,
                                                    Δ_t B_t where A = 0: the limit)
    h_t  = Ā_t ⊙ h_{t−1} + B̄_t · u_t               h: (batch, channels, N)
    y_t  = ⟨C_t, h_t⟩ + D · u_t,  then  y_t *= silu(z_t)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

DISCRETIZATIONS = ("euler", "zoh")


class ScanInputError(ValueError):
    """A selective-scan argument has the wrong shape, dtype or value."""


@dataclass
class PreparedScan:
    """Scan inputs in compute precision, with Δ finalised and B, C broadcast to (batch, channels|1, N, L)."""

    u: torch.Tensor  # (b, d, l)
    delta: torch.Tensor  # (b, d, l), after bias and softplus
    A: torch.Tensor  # (d, n)
    B: torch.Tensor  # (b|1, d|1, n, l)
    C: torch.Tensor  # (b|1, d|1, n, l)
    D: torch.Tensor | None
    z: torch.Tensor | None
    out_dtype: torch.dtype
    discretization: str


def _shape(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _check_input_map(
    name: str, M: torch.Tensor, batch: int, channels: int, n: int, length: int, expand_groups: bool = True
) -> torch.Tensor:
    """Return B or C as a (b|1, d|1, n, l) view, or raise a ScanInputError that names the accepted shapes.

    Grouped maps (b, g, n, l) are repeated to one group per channel unless ``expand_groups`` is False
    (then M is returned as is, only checked)."""
    accepted = (
        f"accepted shapes are (channels, N) = ({channels}, {n}) for a time-invariant map, "
        f"(batch, N, length) = ({batch}, {n}, {length}) for a selective map, "
        f"or (batch, groups, N, length) with channels divisible by groups"
    )
    if M.dim() == 2:
        if tuple(M.shape) != (channels, n):
            raise ScanInputError(f"{name} has shape {_shape(M)}; {accepted}.")
        return M[None, :, :, None]
    if M.dim() == 3:
        if tuple(M.shape) != (batch, n, length):
            raise ScanInputError(f"{name} has shape {_shape(M)}; {accepted}.")
        return M[:, None, :, :]
    if M.dim() == 4:
        b, g, nn, ll = M.shape
        if (b, nn, ll) != (batch, n, length) or g < 1 or channels % g != 0:
            raise ScanInputError(f"{name} has shape {_shape(M)}; {accepted}.")
        return M if (g == channels or not expand_groups) else M.repeat_interleave(channels // g, dim=1)
    raise ScanInputError(f"{name} has {M.dim()} dimensions; {accepted}.")


def check_tensor_arg(name: str, t) -> None:
    """``t`` must be a torch.Tensor (a list, a NumPy array or a number is refused, naming the conversion)."""
    if not isinstance(t, torch.Tensor):
        raise ScanInputError(
            f"{name} must be a torch.Tensor, got {type(t).__name__}; convert it with "
            f"torch.as_tensor({name}, dtype=torch.float32)."
        )


def _check_floating(name: str, t: torch.Tensor) -> None:
    """A real floating-point dtype: an integer u or Δ would make the PyTorch backends compute (and return)
    integers, the values truncated; a bool or integer A, B, C, D, z would be silently upcast."""
    if not t.is_floating_point():
        raise ScanInputError(
            f"{name} has dtype {t.dtype}; the scan needs floating-point tensors (float32, float64, or a half "
            f"type computed in float32). Convert it with {name}.float() (or .double())."
        )


def validate_scan_args(
    u, delta, A, B, C, D=None, z=None, delta_bias=None, discretization="euler", initial_state=None
) -> None:
    """Check the mamba-ssm style arguments (types, dtypes, shapes, devices); raise ScanInputError naming the fix.

    Every tensor must be floating point (complex A has its own message), the length L ≥ 1 (an empty
    sequence is refused by every backend alike, rather than returning an empty output on some and
    failing inside others), and ``initial_state`` (batch, channels, N) when given.
    """
    for name, t in (("u", u), ("delta", delta), ("A", A), ("B", B), ("C", C)):
        check_tensor_arg(name, t)
    for name, t in (("D", D), ("z", z), ("delta_bias", delta_bias), ("initial_state", initial_state)):
        if t is not None:
            check_tensor_arg(name, t)
    if u.dim() != 3:
        raise ScanInputError(f"u has shape {_shape(u)}; expected (batch, channels, length).")
    batch, channels, length = u.shape
    if length < 1:
        raise ScanInputError(
            f"u has shape {_shape(u)}: length 0; the scan needs at least one step. Skip the call for an "
            "empty sequence (the state is then the initial state unchanged)."
        )
    if tuple(delta.shape) != tuple(u.shape):
        raise ScanInputError(f"delta has shape {_shape(delta)}; it must equal u's shape {_shape(u)}.")
    if A.dim() != 2 or A.shape[0] != channels:
        raise ScanInputError(f"A has shape {_shape(A)}; expected (channels, N) with channels = {channels}.")
    if A.is_complex():
        raise ScanInputError("complex A is not supported by mamba_recall's scans; use a real A (S4D-real init).")
    for name, t in (("u", u), ("delta", delta), ("A", A), ("B", B), ("C", C), ("D", D), ("z", z)):
        if t is not None:
            _check_floating(name, t)
    for name, t in (("delta_bias", delta_bias), ("initial_state", initial_state)):
        if t is not None:
            _check_floating(name, t)
    if discretization not in DISCRETIZATIONS:
        raise ScanInputError(f"discretization={discretization!r} is unknown; choose one of {DISCRETIZATIONS}.")
    n = A.shape[1]
    for name, t in (("D", D), ("delta_bias", delta_bias)):
        if t is not None and tuple(t.shape) != (channels,):
            raise ScanInputError(f"{name} has shape {_shape(t)}; expected (channels,) = ({channels},).")
    if z is not None and tuple(z.shape) != tuple(u.shape):
        raise ScanInputError(f"z has shape {_shape(z)}; it must equal u's shape {_shape(u)}.")
    n_state = (batch, channels, n)
    if initial_state is not None and tuple(initial_state.shape) != n_state:
        raise ScanInputError(
            f"initial_state has shape {_shape(initial_state)}; expected (batch, channels, N) = {n_state}."
        )
    devices = {t.device for t in (u, delta, A, B, C, D, z, delta_bias, initial_state) if t is not None}
    if len(devices) > 1:
        raise ScanInputError(f"scan inputs are on several devices {sorted(map(str, devices))}; move them to one.")
    for name, M in (("B", B), ("C", C)):
        _check_input_map(name, M, batch, channels, n, length, expand_groups=False)


def prepare_scan(
    u,
    delta,
    A,
    B,
    C,
    D=None,
    z=None,
    delta_bias=None,
    delta_softplus=False,
    discretization="euler",
    initial_state=None,
) -> PreparedScan:
    """Validate the mamba-ssm style arguments (``initial_state`` only checked) and bring them to compute precision.

    Compute precision is float64 when ``u`` is float64 and float32 otherwise (as mamba-ssm's
    reference, which upcasts half precision); the output is cast back to ``u.dtype``.
    """
    validate_scan_args(u, delta, A, B, C, D, z, delta_bias, discretization, initial_state)
    batch, channels, length = u.shape
    n = A.shape[1]
    dtype = torch.float64 if u.dtype == torch.float64 else torch.float32
    delta = delta.to(dtype)
    if delta_bias is not None:
        delta = delta + delta_bias.to(dtype)[None, :, None]
    if delta_softplus:
        delta = F.softplus(delta)
    return PreparedScan(
        u=u.to(dtype),
        delta=delta,
        A=A.to(dtype),
        B=_check_input_map("B", B, batch, channels, n, length).to(dtype),
        C=_check_input_map("C", C, batch, channels, n, length).to(dtype),
        D=None if D is None else D.to(dtype),
        z=None if z is None else z.to(dtype),
        out_dtype=u.dtype,
        discretization=discretization,
    )


def discretize(p: PreparedScan, time_major: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Return log Ā = Δ·A and B̄·u, both (b, d, l, n), or (b, l, d, n) if ``time_major``.

    Euler (mamba-ssm):  B̄u = Δ·B·u.
    Exact ZOH:          B̄u = (exp(Δ A) − 1)/A · B · u   (= (ΔA)⁻¹(exp(ΔA) − 1)·ΔB·u, diagonal A).
    """
    if time_major:
        delta, u, A, B = p.delta.transpose(1, 2), p.u.transpose(1, 2), p.A, p.B.permute(0, 3, 1, 2)
    else:
        delta, u, A, B = p.delta, p.u, p.A[:, None, :], p.B.transpose(-1, -2)
    log_decay = delta[..., None] * A  # ≤ 0 for A ≤ 0
    if p.discretization == "euler":
        input_term = (delta * u)[..., None] * B
    else:
        input_term = zoh_input_scale(log_decay, delta[..., None], A) * B * u[..., None]
    return log_decay, input_term


def zoh_input_scale(log_decay: torch.Tensor, delta: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """The exact zero-order hold's factor of B: (exp(ΔA) − 1)/A, and where A = 0 its limit Δ (the quotient is 0/0
    there: NaN before), written Δ·(1 + ΔA/2) so that its gradient in A is the limit's too (Δ²/2). Bit for bit the
    quotient wherever A ≠ 0; the division by A = 0 is never evaluated (divided by 1 instead, then discarded), so no
    NaN reaches the gradients. Elementwise, without reading any value (no wait on an accelerator)."""
    zero = A == 0
    quotient = torch.expm1(log_decay) / torch.where(zero, torch.ones_like(A), A)
    limit = delta * (1 + torch.where(zero, log_decay, torch.zeros_like(log_decay)) / 2)  # finite where discarded
    return torch.where(zero, limit, quotient)


def _values_unread(t: torch.Tensor) -> bool:
    """Whether reading ``t``'s values here would wait on an accelerator inside training: ``t`` carries a gradient
    on a device other than the CPU (a model's A = −exp(A_log), negative by construction), or a CUDA graph is being
    captured (no values can be read then)."""
    if t.device.type == "cpu":
        return False
    if t.device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        return True
    return t.requires_grad and torch.is_grad_enabled()


def check_decay_rates(A: torch.Tensor, name: str = "A") -> None:
    """A is a decay rate: every entry ≤ 0 (exp(ΔA) ≤ 1; A = 0 keeps the state, as the theory's counters use).
    A > 0 (or +inf) makes the state grow as exp(ΔA·t) and was accepted silently; it raises a ScanInputError
    naming the largest entry and the fix. Called once per call by the public scan functions (not by
    :func:`prepare_scan`, which a model's step-by-step path calls per token). Skipped where reading A would
    wait on an accelerator during training (:func:`_values_unread`)."""
    if _values_unread(A):
        return
    positive = A > 0
    if bool(positive.any()):
        count, worst = int(positive.sum()), A[positive].max().item()
        raise ScanInputError(
            f"{name} has {count} entr{'y' if count == 1 else 'ies'} > 0 (largest {worst:g}); the scan's {name} is a "
            f"decay rate and must be ≤ 0 (exp(Δ·{name}) ≤ 1), else the state grows without bound. Pass "
            f"{name} = -torch.exp({name}_log) (as the models do) or -{name}.abs()."
        )


def finish_output(p: PreparedScan, y: torch.Tensor) -> torch.Tensor:
    """y (b, d, l) → y + D·u, gated by silu(z), cast back to the input dtype."""
    out = y if p.D is None else y + p.u * p.D[None, :, None]
    if p.z is not None:
        out = out * F.silu(p.z)
    return out.to(p.out_dtype)
