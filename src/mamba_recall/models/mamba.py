r"""Mamba-1 block and language model with mamba-ssm's parameter names, runnable on the CPU.

Official implementation: ``mamba_ssm/modules/mamba_simple.py`` (``Mamba``, slow path),
``mamba_ssm/modules/block.py`` (``Block``) and ``mamba_ssm/models/mixer_seq_simple.py``
(``MixerModel``, ``MambaLMHeadModel``, ``_init_weights``), state-spaces/mamba, Apache-2.0.
mamba-ssm's own module has no CPU path (when ``causal_conv1d`` is missing, ``Mamba.forward`` falls
back to ``nn.Conv1d`` but still calls the CUDA ``selective_scan_fn``), so this is a
re-implementation with the *same parameter names, shapes and initialisation*: one ``state_dict``
loads into either. The scan runs on the backend chosen by ``backend`` (see
:mod:`mamba_recall.scan`): ``"chunked"`` / ``"reference"`` in PyTorch, or ``"mamba_ssm"``'s CUDA
kernel; ``"auto"`` picks ``mamba_ssm`` for CUDA inputs when it imports,
else ``chunked``.

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

All randomness of the initialisation comes from PyTorch's global RNG: call
``torch.manual_seed(seed)`` before constructing a model to make it reproducible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..scan import (
    BACKENDS,
    discretize,
    finish_output,
    linear_recurrence_chunked,
    prepare_scan,
    resolve_backend,
    selective_scan,
)

__all__ = [
    "Block",
    "LayerState",
    "Mamba",
    "MambaInternals",
    "MambaLMHeadModel",
    "MixerModel",
    "RMSNorm",
    "at_least_fp32",
    "check_positive_int",
    "check_token_ids",
    "init_weights",
]


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


# the old private name, still imported by models/linear_mamba.py (another change in progress rewrites it)
_check_positive_int = check_positive_int


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
        self.d_model = check_positive_int("d_model", d_model)
        self.d_state = check_positive_int("d_state", d_state)
        self.d_conv = check_positive_int("d_conv", d_conv)
        self.expand = expand
        self.d_inner = int(expand * d_model)
        if self.d_inner < 1:
            raise ValueError(f"expand * d_model must be >= 1, got expand={expand!r}, d_model={d_model}.")
        self.dt_rank = math.ceil(d_model / 16) if dt_rank == "auto" else check_positive_int("dt_rank", dt_rank)
        if dt_init not in ("random", "constant"):
            raise ValueError(f"dt_init must be 'random' or 'constant', got {dt_init!r}.")
        if not 0 < dt_min <= dt_max:
            raise ValueError(f"need 0 < dt_min <= dt_max, got dt_min={dt_min}, dt_max={dt_max}.")
        self.backend = _check_backend(backend)
        self.layer_idx = layer_idx

        self.in_proj = nn.Linear(self.d_model, self.d_inner * 2, bias=bias, **factory_kwargs)
        self.conv1d = nn.Conv1d(
            self.d_inner,
            self.d_inner,
            kernel_size=d_conv,
            groups=self.d_inner,
            padding=d_conv - 1,
            bias=conv_bias,
            **factory_kwargs,
        )
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + self.d_state * 2, bias=False, **factory_kwargs)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True, **factory_kwargs)

        # dt projection: preserve variance at initialisation
        dt_init_std = self.dt_rank**-0.5 * dt_scale
        if dt_init == "constant":
            nn.init.constant_(self.dt_proj.weight, dt_init_std)
        else:
            nn.init.uniform_(self.dt_proj.weight, -dt_init_std, dt_init_std)
        # dt bias so that softplus(dt_bias) is log-uniform in [dt_min, dt_max]
        dt = torch.exp(
            torch.rand(self.d_inner, **factory_kwargs) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        ).clamp(min=dt_init_floor)
        inv_dt = dt + torch.log(-torch.expm1(-dt))  # inverse of softplus
        with torch.no_grad():
            self.dt_proj.bias.copy_(inv_dt)
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
        if abar_mask is None and self.abar_hook is not None:
            abar_mask = self.abar_hook(seqlen)
        if abar_mask is not None:
            abar_mask = torch.as_tensor(abar_mask, dtype=torch.bool, device=hidden_states.device)
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


class RMSNorm(nn.Module):
    """RMSNorm, ``y = x / sqrt(mean(x², -1) + eps) · weight`` computed in (at least) fp32 and cast back.

    Official implementation: ``mamba_ssm/ops/triton/layer_norm.py::RMSNorm`` / ``rms_norm_ref``
    (one parameter, ``weight``; the Triton module registers ``bias = None``).
    """

    def __init__(self, d, eps=1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d, device=device, dtype=dtype))

    def forward(self, x):
        xf = at_least_fp32(x)
        out = xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + self.eps) * self.weight
        return out.to(x.dtype)


class Block(nn.Module):
    """mamba-ssm's ``Block``: Add → RMSNorm → Mixer, returning ``(hidden_states, residual)``.

    Official implementation: ``mamba_ssm/modules/block.py`` (non-fused branch; the fused
    add+norm kernel computes the same thing)::

        residual      = hidden_states + residual        (residual = hidden_states in the first block)
        hidden_states = mixer(norm(residual))
        residual      kept in fp32 if residual_in_fp32 (float64 stays float64)

    Parameters: ``norm.weight``, ``mixer.*`` (a :class:`Mamba` built from ``mixer_kwargs``).
    """

    def __init__(self, d_model, norm_epsilon=1e-5, residual_in_fp32=True, device=None, dtype=None, **mixer_kwargs):
        super().__init__()
        self.residual_in_fp32 = residual_in_fp32
        self.norm = RMSNorm(d_model, eps=norm_epsilon, device=device, dtype=dtype)
        self.mixer = Mamba(d_model, device=device, dtype=dtype, **mixer_kwargs)

    def forward(self, hidden_states, residual=None, return_internals=False, *, state=None, return_state=False):
        """Returns ``(hidden_states, residual)`` (+ the mixer's :class:`MambaInternals` if asked)
        (+ the mixer's new :class:`LayerState` last, if ``return_state``). ``state``: a
        :class:`LayerState` to continue from (prefix-state evaluation)."""
        residual = hidden_states + residual if residual is not None else hidden_states
        hidden_states = self.norm(residual.to(dtype=self.norm.weight.dtype))
        if self.residual_in_fp32:
            residual = at_least_fp32(residual)
        if state is None and not return_state:
            out = self.mixer(hidden_states, return_internals=return_internals)
            if return_internals:
                return out[0], residual, out[1]
            return out, residual
        kw = {} if state is None else {"initial_state": state.ssm, "conv_state": state.conv}
        out = self.mixer(
            hidden_states, return_internals=return_internals, return_last_state=True, return_conv_state=True, **kw
        )
        new_state = LayerState(conv=out[2], ssm=out[1])
        if return_internals:
            return out[0], residual, out[3], new_state
        return out[0], residual, new_state


def init_weights(module, n_layer, initializer_range=0.02, rescale_prenorm_residual=True, n_residuals_per_layer=1):
    """``mamba_ssm.models.mixer_seq_simple._init_weights``, applied with ``model.apply(...)``.

    Linear biases → 0 (unless marked ``_no_reinit``, i.e. ``dt_proj.bias``); Embedding weights →
    N(0, initializer_range²); ``out_proj.weight`` → kaiming_uniform(a=√5) / √(n_residuals_per_layer ·
    n_layer) (GPT-2's scaled init of the residual branch).
    """
    if isinstance(module, nn.Linear):
        if module.bias is not None and not getattr(module.bias, "_no_reinit", False):
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=initializer_range)
    if rescale_prenorm_residual:
        for name, p in module.named_parameters():
            if name in ("out_proj.weight", "fc2.weight"):
                nn.init.kaiming_uniform_(p, a=math.sqrt(5))
                with torch.no_grad():
                    p /= math.sqrt(n_residuals_per_layer * n_layer)


class MixerModel(nn.Module):
    """Embedding → n_layer × :class:`Block` → final Add → RMSNorm (``mixer_seq_simple.MixerModel``, no MLP).

    Parameters: ``embedding.weight``, ``layers.{i}.norm.weight``, ``layers.{i}.mixer.*``, ``norm_f.weight``.
    """

    def __init__(
        self,
        d_model,
        n_layer,
        vocab_size,
        norm_epsilon=1e-5,
        residual_in_fp32=True,
        initializer_range=0.02,
        rescale_prenorm_residual=True,
        device=None,
        dtype=None,
        block_cls=None,
        **mixer_kwargs,
    ):
        super().__init__()
        block_cls = block_cls or Block  # models.mamba2.Mamba2Block for Mamba-2 layers
        self.embedding = nn.Embedding(vocab_size, d_model, device=device, dtype=dtype)
        self.layers = nn.ModuleList(
            [
                block_cls(
                    d_model,
                    norm_epsilon=norm_epsilon,
                    residual_in_fp32=residual_in_fp32,
                    layer_idx=i,
                    device=device,
                    dtype=dtype,
                    **mixer_kwargs,
                )
                for i in range(n_layer)
            ]
        )
        self.norm_f = RMSNorm(d_model, eps=norm_epsilon, device=device, dtype=dtype)
        self.apply(
            lambda m: init_weights(m, n_layer, initializer_range, rescale_prenorm_residual, n_residuals_per_layer=1)
        )  # d_intermediate = 0: one residual

    def forward(self, input_ids, return_internals=False, *, states=None, return_states=False):
        """input_ids (B, L) → hidden states (B, L, d_model) [, internals] [, new states].

        ``states``: one :class:`LayerState` per layer to continue from (prefix-state evaluation);
        ``return_states``: also return the new per-layer states (a list, last in the tuple)."""
        if states is not None and len(states) != len(self.layers):
            raise ValueError(f"states must hold one state per layer ({len(self.layers)}), got {len(states)}.")
        hidden_states = self.embedding(input_ids)
        residual, internals, new_states = None, [], []
        use_state = states is not None or return_states
        for i, layer in enumerate(self.layers):
            if use_state:
                out = layer(
                    hidden_states,
                    residual,
                    return_internals=return_internals,
                    state=None if states is None else states[i],
                    return_state=True,
                )
                new_states.append(out[-1])
            else:
                out = layer(hidden_states, residual, return_internals=return_internals)
            hidden_states, residual = out[0], out[1]
            if return_internals:
                internals.append(out[2])
        residual = hidden_states + residual if residual is not None else hidden_states
        hidden_states = self.norm_f(residual.to(dtype=self.norm_f.weight.dtype))
        result = (hidden_states,)
        if return_internals:
            result += (internals,)
        if return_states:
            result += (new_states,)
        return result[0] if len(result) == 1 else result


class MambaLMHeadModel(nn.Module):
    """``mamba_ssm.models.mixer_seq_simple.MambaLMHeadModel`` (Mamba-1 layers, no MLP, RMSNorm,
    residual in fp32), with the same ``state_dict`` keys::

        backbone.embedding.weight             (V_pad, d_model)
        backbone.layers.{i}.norm.weight       (d_model,)
        backbone.layers.{i}.mixer.<Mamba parameter>
        backbone.norm_f.weight                (d_model,)
        lm_head.weight                        (V_pad, d_model), tied to the embedding by default

    ``V_pad`` is ``vocab_size`` rounded up to a multiple of ``pad_vocab_size_multiple``, as upstream,
    so the logits can be wider than the vocabulary (labels < vocab_size index them unchanged).
    The initialisation follows upstream's order: modules are built, ``init_weights`` runs from the
    backbone and again from the LM (out_proj rescaled by 1/√n_layer), then the head is tied.
    Seed with ``torch.manual_seed`` before construction for a reproducible model.

    ``mixer_kwargs`` go to every :class:`Mamba` (``dt_rank``, ``dt_min``, ``conv_bias``, ...).
    ``zero_out_proj_from = k`` (not upstream; None by default) then sets ``out_proj.weight`` of the layers
    i ≥ k to zero: those blocks start as the identity on the residual stream (h ← h + 0) and grow in from the
    first step, since ∂loss/∂out_proj = (∂loss/∂h) ⊗ (the block's gated scan output) is not zero (the
    "zero-init residual branch" of Fixup / ReZero / SkipInit, Zhang et al. 2019, Bachlechner et al. 2020, De and
    Smith 2020). It draws no random numbers, so every other weight equals the default model's of the same seed.
    ``model.backend`` reads/sets the scan backend of every layer. ``block_cls`` is the layer type
    (:class:`~mamba_recall.models.mamba2.Mamba2LMHeadModel` is this model with Mamba-2 blocks).
    """

    block_cls = Block

    def __init__(
        self,
        d_model,
        n_layer,
        vocab_size,
        d_state=16,
        d_conv=4,
        expand=2,
        pad_vocab_size_multiple=8,
        tie_embeddings=True,
        backend="auto",
        norm_epsilon=1e-5,
        residual_in_fp32=True,
        initializer_range=0.02,
        zero_out_proj_from=None,
        device=None,
        dtype=None,
        **mixer_kwargs,
    ):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("n_layer", n_layer)
        if zero_out_proj_from is not None and (
            isinstance(zero_out_proj_from, bool)
            or not isinstance(zero_out_proj_from, int)
            or not 0 <= zero_out_proj_from < n_layer
        ):
            raise ValueError(
                f"zero_out_proj_from must be None or a layer index in 0..{n_layer - 1} (n_layer = {n_layer}), "
                f"got {zero_out_proj_from!r}."
            )
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("pad_vocab_size_multiple", pad_vocab_size_multiple)
        _check_backend(backend)
        self.d_model, self.n_layer, self.vocab_size = d_model, n_layer, vocab_size
        self.tie_embeddings = tie_embeddings
        padded = vocab_size + (-vocab_size) % pad_vocab_size_multiple
        self.padded_vocab_size = padded
        self.backbone = MixerModel(
            d_model,
            n_layer,
            padded,
            norm_epsilon=norm_epsilon,
            residual_in_fp32=residual_in_fp32,
            initializer_range=initializer_range,
            device=device,
            dtype=dtype,
            d_state=d_state,
            d_conv=d_conv,
            expand=expand,
            backend=backend,
            block_cls=type(self).block_cls,
            **mixer_kwargs,
        )
        self.lm_head = nn.Linear(d_model, padded, bias=False, device=device, dtype=dtype)
        self.apply(lambda m: init_weights(m, n_layer, initializer_range))
        if zero_out_proj_from is not None:
            with torch.no_grad():
                for layer in self.backbone.layers[zero_out_proj_from:]:
                    layer.mixer.out_proj.weight.zero_()
        if tie_embeddings:
            self.lm_head.weight = self.backbone.embedding.weight

    @property
    def backend(self) -> str:
        return self.backbone.layers[0].mixer.backend

    @backend.setter
    def backend(self, value: str) -> None:
        _check_backend(value)
        for layer in self.backbone.layers:
            layer.mixer.backend = value

    def forward(self, input_ids, return_internals=False, *, states=None, return_states=False):
        """input_ids (B, L) int64 → logits (B, L, V_pad); with ``return_internals`` also a list of
        one :class:`MambaInternals` per layer; with ``return_states`` also (last) the list of
        per-layer :class:`LayerState` after the sequence. ``states`` continues from such a list:
        ``model(b, states=model(a, return_states=True)[1])`` equals the last ``len(b)`` logits of
        ``model(a ‖ b)`` (prefix-state evaluation, PyTorch backends)."""
        check_token_ids(input_ids, self.vocab_size)
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}.")
        out = self.backbone(input_ids, return_internals=return_internals, states=states, return_states=return_states)
        if not isinstance(out, tuple):
            return self.lm_head(out)
        return (self.lm_head(out[0]),) + tuple(out[1:])
