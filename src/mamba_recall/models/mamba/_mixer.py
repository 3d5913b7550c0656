"""The Mamba-1 mixer (``mamba_ssm/modules/mamba_simple.py``, ``Mamba``, slow path) and the checks every model
shares; see :mod:`mamba_recall.models.mamba`.

The mixer, for a batch of ``B`` sequences of length ``L`` and width ``d_model``
(``E = expand · d_model`` inner channels, ``N = d_state``, ``R = dt_rank``); in brackets, the
corresponding line of ``mamba_simple.Mamba.forward``::

    x, z   = split(in_proj(h))              (B, L, 2E) → 2 × (B, E, L)   [xz = self.in_proj.weight @ ...]
    x      = silu(conv1d(x)[..., :L])       causal depthwise conv        [self.act(self.conv1d(x)[..., :seqlen])]
    dt,B,C = split(x_proj(x))               (B,L,R), (B,N,L), (B,N,L)    [x_dbl = self.x_proj(...); torch.split]
    dt     = dt_proj.weight @ dt            (B, E, L), no bias here      [dt = self.dt_proj.weight @ dt.t()]
    A      = −exp(A_log)                    (E, N)                       [A = -torch.exp(self.A_log.float())]
    Δ      = softplus(dt + dt_proj.bias)    in the scan: delta_bias=dt_proj.bias, delta_softplus=True
    h_t    = exp(Δ_t A) ⊙ h_{t−1} + Δ_t B_t x_t    (B, E, N)             [y = selective_scan_fn(...)]
    y_t    = (⟨C_t, h_t⟩ + D ⊙ x_t) ⊙ silu(z_t)   (B, E, L)
    out    = out_proj(y)                    (B, L, d_model)              [out = self.out_proj(y)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ...scan import (
    BACKENDS,
    discretize,
    finish_output,
    linear_recurrence_chunked,
    prepare_scan,
    resolve_backend,
    selective_scan,
)


def _check_backend(backend: str) -> str:
    """Validate the backend *name* (availability is checked at forward time, on the input's device)."""
    if backend not in BACKENDS:
        resolve_backend(backend)  # raises ValueError naming the choices
    return backend


def at_least_fp32(t: torch.Tensor) -> torch.Tensor:
    """``t`` (any shape) in float32, or unchanged if float64: mamba-ssm keeps A_log, D, dt bias and the residual
    in fp32 (``.float()``) whatever the model's dtype. Shared by the Mamba-2 block (``models.mamba2``)."""
    return t if t.dtype == torch.float64 else t.float()


def check_positive_int(name: str, value) -> int:
    """``value`` if it is a positive ``int`` (not a bool), else ValueError naming ``name`` and the value.
    The size check of every model constructor (d_model, d_state, n_layer, vocab_size, ...)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {name}={value!r}; pass an int >= 1.")
    return value


def mixer_sizes(d_model, d_state, d_conv, expand) -> tuple[int, int, int, int]:
    """The checked sizes of a Mamba or Mamba-2 mixer: ``(d_model, d_state, d_conv, d_inner)``, the first three
    positive ints (:func:`check_positive_int`) and d_inner = int(expand · d_model) ≥ 1, else ValueError naming them."""
    d_model = check_positive_int("d_model", d_model)
    d_state = check_positive_int("d_state", d_state)
    d_conv = check_positive_int("d_conv", d_conv)
    d_inner = int(expand * d_model)
    if d_inner < 1:
        raise ValueError(f"expand * d_model must be >= 1, got expand={expand!r}, d_model={d_model}.")
    return d_model, d_state, d_conv, d_inner


def causal_conv1d(channels: int, d_conv: int, bias: bool, **factory_kwargs) -> nn.Conv1d:
    """The mixers' causal depthwise convolution over time: ``channels`` → ``channels``, kernel ``d_conv``, one group per
    channel, ``d_conv − 1`` zeros of padding on each side (the forward keeps the first L outputs: causal)."""
    return nn.Conv1d(
        channels, channels, kernel_size=d_conv, groups=channels, padding=d_conv - 1, bias=bias, **factory_kwargs
    )


def dt_bias_init(n: int, dt_min: float, dt_max: float, dt_init_floor: float, **factory_kwargs) -> torch.Tensor:
    """The initial bias of Δ, (n,): softplus⁻¹(dt) with dt = max(exp(U(log dt_min, log dt_max)), dt_init_floor), so
    that softplus(bias) is log-uniform in [dt_min, dt_max] (mamba-ssm's init, Mamba-1 per channel and Mamba-2 per
    head). Draws n numbers from torch's generator; ValueError unless 0 < dt_min <= dt_max."""
    if not 0 < dt_min <= dt_max:
        raise ValueError(f"need 0 < dt_min <= dt_max, got dt_min={dt_min}, dt_max={dt_max}.")
    dt = torch.exp(torch.rand(n, **factory_kwargs) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)).clamp(
        min=dt_init_floor
    )
    return dt + torch.log(-torch.expm1(-dt))  # inverse of softplus


def check_token_ids(input_ids, vocab_size: int) -> None:
    """Token ids must be an integer tensor with values in [0, vocab_size): an id ≥ vocab_size below the padded
    vocabulary (``V_pad``) would silently read an untrained embedding row, one above it (or < 0) raise a bare
    IndexError inside the embedding. One pass over the ids (``aminmax``), the only cost."""
    if not isinstance(input_ids, torch.Tensor):
        raise ValueError(
            f"input_ids must be a torch.Tensor of token ids, got {type(input_ids).__name__}; "
            "pass torch.as_tensor(ids, dtype=torch.long)."
        )
    if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
        raise ValueError(f"input_ids must hold integer token ids, got dtype {input_ids.dtype}; pass input_ids.long().")
    if input_ids.numel() == 0:
        return
    lo, hi = (int(v) for v in torch.aminmax(input_ids))
    if lo < 0 or hi >= vocab_size:
        bad = hi if hi >= vocab_size else lo
        raise ValueError(
            f"input_ids holds token id {bad}, outside the model's vocabulary [0, {vocab_size}) (vocab_size="
            f"{vocab_size}); build the model with vocab_size > {max(hi, vocab_size - 1)} or map the ids into range."
        )


@dataclass
class LayerState:
    """The recurrent state of one :class:`Mamba` mixer after a segment, for prefix-state evaluation.

    conv: (B, E, K−1) the last K−1 conv1d *inputs* (x after in_proj, before the conv; zeros stand
          for the left padding of a sequence shorter than K−1), i.e. mamba-ssm's ``conv_state``
          without its last (empty) column.
    ssm:  (B, E, N)   the SSM state h_T (mamba-ssm's ``ssm_state``).
    Running a sequence ``a`` then, from this state, a continuation ``b`` gives the same outputs as
    running ``a ‖ b`` at once (causal conv + linear recurrence), up to float rounding. The Mamba-2 mixer
    keeps the same two tensors in its own layouts (:data:`mamba_recall.models.mamba2.Mamba2State`).
    """

    conv: torch.Tensor
    ssm: torch.Tensor

    def index_select(self, idx: torch.Tensor) -> "LayerState":
        """The states of the batch rows ``idx`` (e.g. ``repeat_interleave`` a context over queries)."""
        return LayerState(self.conv.index_select(0, idx), self.ssm.index_select(0, idx))


@dataclass
class MambaInternals:
    """What the selective scan saw and produced in one :class:`Mamba` forward (attached to the graph;
    call ``.detach()`` to keep them without gradients).

    x:      (B, E, L)  the scan input, silu(conv1d(x)).
    delta:  (B, E, L)  Δ = softplus(dt_proj.weight @ dt + dt_proj.bias), the step size.
    B, C:   (B, N, L)  the input and output maps.
    z:      (B, E, L)  the gate branch (the scan output is multiplied by silu(z)).
    y:      (B, E, L)  the gated scan output, before out_proj.
    last_state: (B, E, N) the final SSM state h_L, or None if it was not asked for.
    """

    x: torch.Tensor
    delta: torch.Tensor
    B: torch.Tensor
    C: torch.Tensor
    z: torch.Tensor
    y: torch.Tensor
    last_state: torch.Tensor | None = None


class Mamba(nn.Module):
    r"""The Mamba-1 mixer, ``mamba_ssm.modules.mamba_simple.Mamba`` with a pluggable scan backend.

    Official implementation: mamba_ssm/modules/mamba_simple.py (``Mamba.__init__`` and the
    non-fused branch of ``Mamba.forward``). Arguments are those of the official class, less
    ``use_fast_path`` (the fused path is the same math), plus ``backend``.

    Parameters (``E = int(expand · d_model)``, ``R = ceil(d_model/16)`` if ``dt_rank="auto"``,
    ``N = d_state``, ``K = d_conv``)::

        in_proj.weight   (2E, d_model)   in_proj.bias (2E) if bias
        conv1d.weight    (E, 1, K)       conv1d.bias  (E)  if conv_bias      depthwise, padding K−1
        x_proj.weight    (R + 2N, E)
        dt_proj.weight   (E, R)          dt_proj.bias (E)
        A_log            (E, N)          = log(1, …, N) in every row (S4D-real);  _no_weight_decay
        D                (E,)            = 1;                                      _no_weight_decay
        out_proj.weight  (d_model, E)    out_proj.bias (d_model) if bias

    Initialisation as the official one: PyTorch's default Linear/Conv1d init, then
    ``dt_proj.weight ~ U(±R^{-1/2}·dt_scale)`` (``"random"``) or ``= R^{-1/2}·dt_scale``
    (``"constant"``); ``dt_proj.bias = softplus^{-1}(dt)``, ``dt = max(exp(U(log dt_min, log dt_max)),
    dt_init_floor)``, marked ``_no_reinit`` so that :func:`init_weights` keeps it.
    A_log and D are kept in fp32 when ``dtype`` is a half type, as upstream.
    """

    def __init__(
        self,
        d_model,
        d_state=16,
        d_conv=4,
        expand=2,
        dt_rank="auto",
        dt_min=0.001,
        dt_max=0.1,
        dt_init="random",
        dt_scale=1.0,
        dt_init_floor=1e-4,
        conv_bias=True,
        bias=False,
        backend="auto",
        layer_idx=None,
        device=None,
        dtype=None,
    ):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.d_model, self.d_state, self.d_conv, self.d_inner = mixer_sizes(d_model, d_state, d_conv, expand)
        self.expand = expand
        self.dt_rank = math.ceil(d_model / 16) if dt_rank == "auto" else check_positive_int("dt_rank", dt_rank)
        if dt_init not in ("random", "constant"):
            raise ValueError(f"dt_init must be 'random' or 'constant', got {dt_init!r}.")
        self.backend = _check_backend(backend)
        self.layer_idx = layer_idx

        self.in_proj = nn.Linear(self.d_model, self.d_inner * 2, bias=bias, **factory_kwargs)
        self.conv1d = causal_conv1d(self.d_inner, d_conv, conv_bias, **factory_kwargs)
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + self.d_state * 2, bias=False, **factory_kwargs)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True, **factory_kwargs)

        # dt projection: preserve variance at initialisation
        dt_init_std = self.dt_rank**-0.5 * dt_scale
        if dt_init == "constant":
            nn.init.constant_(self.dt_proj.weight, dt_init_std)
        else:
            nn.init.uniform_(self.dt_proj.weight, -dt_init_std, dt_init_std)
        # dt bias so that softplus(dt_bias) is log-uniform in [dt_min, dt_max]
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt_bias_init(self.d_inner, dt_min, dt_max, dt_init_floor, **factory_kwargs))
        self.dt_proj.bias._no_reinit = True

        # S4D-real initialisation, A = −(1, …, N) per channel; fp32 unless float64 was asked for
        ssm_dtype = torch.float64 if dtype == torch.float64 else torch.float32
        A = torch.arange(1, self.d_state + 1, dtype=ssm_dtype, device=device).repeat(self.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.A_log._no_weight_decay = True
        self.D = nn.Parameter(torch.ones(self.d_inner, dtype=ssm_dtype, device=device))
        self.D._no_weight_decay = True

        self.out_proj = nn.Linear(self.d_inner, self.d_model, bias=bias, **factory_kwargs)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, d_inner={self.d_inner}, d_state={self.d_state}, "
            f"d_conv={self.d_conv}, dt_rank={self.dt_rank}, backend={self.backend!r}"
        )

    # Intervention hook (paper 004's ablations), None by default: a callable ``abar_hook(seqlen)`` that
    # returns a bool mask broadcastable to (B, E, L) — True where the discretised recurrence
    # Ā_t = exp(Δ_t A) of channel i at step t is set to 0 (all N states) — or (B, E, L, N) to zero single
    # states Ā_{t,i,n} — or None for "no ablation".
    abar_hook = None

    def forward(
        self,
        hidden_states,
        return_internals=False,
        *,
        initial_state=None,
        return_last_state=False,
        conv_state=None,
        return_conv_state=False,
        abar_mask=None,
    ):
        """hidden_states (B, L, d_model) → out (B, L, d_model).

        ``initial_state`` (B, E, N) starts the SSM from h_0 instead of 0 (PyTorch backends only).
        ``conv_state`` (B, E, K−1) continues the causal conv1d from a previous segment (its last K−1
        inputs, see :class:`LayerState`) instead of zero padding; with both, a segment continues a
        previous one exactly (prefix-state evaluation).
        ``abar_mask`` bool, broadcastable to (B, E, L): zero Ā_t (all N states) of channel i at step t
        where True, i.e. h_t = B̄_t x_t there (paper 004's ablation; PyTorch backends only); a 4-D mask
        broadcastable to (B, E, L, N) zeroes only the states Ā_{t,i,n} where True. If not
        given, the module attribute ``abar_hook(L)`` is asked; a mask with no True entry, or None,
        leaves the forward pass untouched (bit-identical).
        Returns ``out``; ``(out, last_state)`` if ``return_last_state``; ``(out, internals)`` if
        ``return_internals``; ``(out, last_state, internals)`` if both (``last_state`` (B, E, N));
        with ``return_conv_state`` the conv state (B, E, K−1) is appended after ``last_state``.
        """
        if hidden_states.dim() != 3 or hidden_states.shape[-1] != self.d_model:
            raise ValueError(
                f"hidden_states must be (batch, length, d_model={self.d_model}), "
                f"got shape {tuple(hidden_states.shape)}."
            )
        backend = resolve_backend(self.backend, hidden_states.device)
        batch, seqlen = hidden_states.shape[:2]
        abar_mask = self._abar_mask(abar_mask, batch, seqlen, hidden_states.device)

        xz = self.in_proj(hidden_states).transpose(1, 2)  # (B, 2E, L)
        A = -torch.exp(at_least_fp32(self.A_log))  # (E, N)
        x, z = xz.chunk(2, dim=1)  # (B, E, L) each
        K1 = self.d_conv - 1
        if conv_state is None:
            x_in = x
            new_conv_state = F.pad(x, (K1, 0))[..., x.shape[-1] :] if return_conv_state else None
            x = F.silu(self.conv1d(x)[..., :seqlen])  # causal: keep the first L outputs of the padded conv
        else:
            if tuple(conv_state.shape) != (batch, self.d_inner, K1):
                raise ValueError(
                    f"conv_state must be (batch, d_inner, d_conv-1) = {(batch, self.d_inner, K1)}, "
                    f"got {tuple(conv_state.shape)}."
                )
            x_in = torch.cat([conv_state.to(x.dtype), x], dim=-1)  # (B, E, K−1+L)
            new_conv_state = x_in[..., x_in.shape[-1] - K1 :] if return_conv_state else None
            x = F.silu(F.conv1d(x_in, self.conv1d.weight, self.conv1d.bias, groups=self.d_inner))
        del x_in
        x_dbl = self.x_proj(x.transpose(1, 2))  # (B, L, R + 2N)
        dt, B, C = torch.split(x_dbl, [self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = F.linear(dt, self.dt_proj.weight).transpose(1, 2)  # (B, E, L), bias goes to the scan
        B = B.transpose(1, 2).contiguous()  # (B, N, L)
        C = C.transpose(1, 2).contiguous()  # (B, N, L)
        delta_bias = at_least_fp32(self.dt_proj.bias)
        if abar_mask is None:
            y = selective_scan(
                x,
                dt,
                A,
                B,
                C,
                at_least_fp32(self.D),
                z=z,
                delta_bias=delta_bias,
                delta_softplus=True,
                return_last_state=return_last_state,
                backend=backend,
                initial_state=initial_state,
            )
        else:
            if backend == "mamba_ssm":
                raise ValueError("Ā ablations need a PyTorch scan; set backend='chunked' or 'reference'.")
            y = self._scan_with_abar_mask(x, dt, A, B, C, z, delta_bias, abar_mask, initial_state, return_last_state)
        last_state = None
        if return_last_state:
            y, last_state = y
        out = self.out_proj(y.transpose(1, 2))  # (B, L, d_model)

        result = (out,)
        if return_last_state:
            result += (last_state,)
        if return_conv_state:
            result += (new_conv_state,)
        if return_internals:
            delta = F.softplus(dt.to(delta_bias.dtype) + delta_bias[:, None])
            result += (MambaInternals(x=x, delta=delta, B=B, C=C, z=z, y=y, last_state=last_state),)
        return result[0] if len(result) == 1 else result

    def _abar_mask(self, abar_mask, batch: int, seqlen: int, device) -> torch.Tensor | None:
        """The Ā ablation mask of :meth:`forward`: ``abar_mask`` (or, if None, ``abar_hook(seqlen)``) as a bool
        tensor expanded to (batch, E, L) or (batch, E, L, N); None when there is none or it has no True entry."""
        if abar_mask is None and self.abar_hook is not None:
            abar_mask = self.abar_hook(seqlen)
        if abar_mask is not None:
            abar_mask = torch.as_tensor(abar_mask, dtype=torch.bool, device=device)
            full = (batch, self.d_inner, seqlen) + ((self.d_state,) if abar_mask.dim() == 4 else ())
            try:
                abar_mask = abar_mask.expand(*full)
            except RuntimeError:
                raise ValueError(
                    f"abar_mask of shape {tuple(abar_mask.shape)} does not broadcast to "
                    f"(batch, d_inner, length[, d_state]) = {full}."
                ) from None
            if not bool(abar_mask.any()):
                abar_mask = None
        return abar_mask

    def _scan_with_abar_mask(self, x, dt, A, B, C, z, delta_bias, mask, initial_state, return_last_state):
        """The selective scan with Ā_t = 0 where ``mask`` (B, E, L) is True, or Ā_{t,n} = 0 where a
        (B, E, L, N) ``mask`` is (log Ā = −∞ there): h_t = Ā_t h_{t−1} + Δ_t B_t x_t, y_t = ⟨C_t, h_t⟩ + D x_t,
        gated by silu(z)."""
        p = prepare_scan(x, dt, A, B, C, at_least_fp32(self.D), z, delta_bias, True, "euler", initial_state)
        log_decay, input_term = discretize(p, time_major=True)  # (b, l, d, n)
        mask = mask.transpose(1, 2)  # (b, l, d[, n])
        log_decay = log_decay.masked_fill(mask if mask.dim() == 4 else mask[..., None], float("-inf"))
        states = linear_recurrence_chunked(log_decay, input_term, initial_state)
        y = (states * p.C.permute(0, 3, 1, 2)).sum(-1).transpose(1, 2)  # C: (b, g=1, n, l) → (b, l, 1, n)
        out = finish_output(p, y)
        return (out, states[:, -1]) if return_last_state else out
