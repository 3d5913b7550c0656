r"""Mamba-2 (SSD) block and language model with mamba-ssm's parameter names, runnable on the CPU.

Official implementation: ``mamba_ssm/modules/mamba2.py`` (``Mamba2``, the non-fused branch of
``forward`` with ``ngroups = 1``, ``rmsnorm = True``, ``norm_before_gate = False``, ``D_has_hdim = False``,
no extra MLP channels) and ``mamba_ssm/modules/ssd_minimal.py`` (``ssd_minimal_discrete``,
``segsum``), state-spaces/mamba, Apache-2.0. Upstream's Triton ``mamba_chunk_scan_combined`` has no
CPU path, so the scan here is the exact *quadratic* (attention-like) form of the SSD, which is fast
for the short prompts of Chapter 4 (T ≲ 100): one ``state_dict`` loads into either.

The mixer, for a batch of ``B`` sequences of length ``T`` and width ``d_model``
(``E = expand · d_model`` inner channels, ``H = E / headdim`` heads of ``P = headdim`` channels,
``N = d_state``, one group so B and C are shared by all heads); in brackets, the corresponding
line of ``mamba2.Mamba2.forward``::

    z, xBC, dt = split(in_proj(u))              (B,T,E), (B,T,E+2N), (B,T,H)   [zxbcdt = self.in_proj(u)]
    x, B, C    = split(silu(conv1d(xBC)))       (B,T,H,P), (B,T,N), (B,T,N)    causal depthwise conv over xBC
    Δ          = softplus(dt + dt_bias)         (B, T, H)                      [dt_softplus=True]
    A          = −exp(A_log)                    (H,)  one scalar per head
    α_t^(h)    = exp(Δ_t^(h) A_h)               (B, H, T)  the scalar decay:  Ā_t^(h) = α_t^(h) I
    h_t^(h)    = α_t^(h) h_{t−1}^(h) + Δ_t^(h) x_t^(h) B_tᵀ      (B, H, P, N)
    y_t^(h)    = h_t^(h) C_t + D_h x_t^(h)       (B, T, H, P)                   [mamba_chunk_scan_combined]
    y          = RMSNorm(y ⊙ silu(z)) · norm.weight    gated RMSNorm over all E channels  [self.norm(y, z)]
    out        = out_proj(y)                    (B, T, d_model)

Quadratic (SSD) form of the recurrence, per head, with ``a_t = log α_t = Δ_t A_h``::

    L_ij = Π_{k=j+1..i} α_k = exp(Σ_{k=j+1..i} a_k)  for i ≥ j, else 0        (B, H, T, T)
    y_i  = Σ_{j≤i} L_ij (C_i · B_j) Δ_j x_j  +  exp(Σ_{k=1..i} a_k) h_0 C_i  +  D x_i

The segment sums Σ_{k=j+1..i} a_k are accumulated *per column j* from zero (``segsum``, as
upstream's ``ssd_minimal``), never as a difference of cumulative sums, so they are accurate in
fp32 and a zeroed decay (a_k = −∞, the ablation) gives exactly L_ij = 0 for every j < k ≤ i.

All randomness of the initialisation comes from PyTorch's global RNG: call
``torch.manual_seed(seed)`` before constructing a model to make it reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..scan.mamba2 import segsum
from .mamba import (
    Block,
    LayerState,
    MambaLMHeadModel,
    at_least_fp32,
    causal_conv1d,
    check_positive_int,
    dt_bias_init,
    mixer_sizes,
)

__all__ = [
    "Mamba2",
    "Mamba2Block",
    "Mamba2Internals",
    "Mamba2LMHeadModel",
    "Mamba2State",
    "RMSNormGated",
    "segsum",
    "ssd_quadratic",
]


# The recurrent state of one Mamba2 mixer after a segment is a LayerState like Mamba-1's (prefix-state
# evaluation: running ``a`` then ``b`` from it gives the outputs of ``a ‖ b``), with the Mamba-2 layouts
#   conv: (B, E + 2N, K−1) the last K−1 conv1d inputs (xBC after in_proj) — mamba-ssm's ``conv_state``
#         without its last column;
#   ssm:  (B, H, P, N)     mamba-ssm's ``ssm_state`` (batch, nheads, headdim, d_state).
Mamba2State = LayerState


@dataclass
class Mamba2Internals:
    """What the SSD of one :class:`Mamba2` forward saw and produced (attached to the graph).

    x:     (B, T, H, P) the scan input (after conv + silu).
    delta: (B, H, T)    Δ = softplus(dt + dt_bias), the step size of every head.
    alpha: (B, H, T)    α = exp(Δ A), the scalar decay actually used (0 where ablated).
    B, C:  (B, T, N)    the input and output maps (shared by the heads, ngroups = 1).
    z:     (B, T, E)    the gate branch.
    y:     (B, T, E)    the gated, normalised SSD output, before out_proj.
    """

    x: torch.Tensor
    delta: torch.Tensor
    alpha: torch.Tensor
    B: torch.Tensor
    C: torch.Tensor
    z: torch.Tensor
    y: torch.Tensor


def ssd_quadratic(x, delta, log_alpha, B, C, D, initial_state=None, return_final_state=False):
    """The exact SSD scan in quadratic form (one group).

    x (b, T, H, P), delta (b, T, H) = Δ, log_alpha (b, H, T) = Δ A (−∞ where the decay is zeroed),
    B, C (b, T, N), D (H,), initial_state (b, H, P, N) or None → y (b, T, H, P)
    [, final state (b, H, P, N)]. Recurrence: h_t = α_t h_{t−1} + Δ_t x_t B_tᵀ, y_t = h_t C_t + D x_t.
    """
    b, T, H, P = x.shape
    a = F.pad(log_alpha, (1, 0))  # (b, H, T+1): index 0 stands for h_0
    Lfull = torch.exp(segsum(a))  # (b, H, T+1, T+1)
    Lm = Lfull[..., 1:, 1:]  # (b, H, T, T)   Π_{k=j+1..i} α_k
    dec0 = Lfull[..., 1:, 0]  # (b, H, T)      Π_{k=1..i} α_k
    CB = torch.einsum("bin,bjn->bij", C, B)  # (b, T, T)
    xdt = x * delta[..., None]  # (b, T, H, P)
    W = Lm * CB[:, None]  # (b, H, T, T)
    y = torch.einsum("bhij,bjhp->bihp", W, xdt)
    if initial_state is not None:
        h0 = initial_state.to(x.dtype)
        y = y + torch.einsum("bin,bhpn,bhi->bihp", C, h0, dec0)
    y = y + D.to(x.dtype)[None, None, :, None] * x
    if not return_final_state:
        return y
    hT = torch.einsum("bhj,bjhp,bjn->bhpn", Lm[:, :, -1, :], xdt, B)
    if initial_state is not None:
        hT = hT + dec0[:, :, -1, None, None] * h0
    return y, hT


class RMSNormGated(nn.Module):
    """mamba-ssm's ``RMSNormGated`` with ``norm_before_gate=False`` and one group:
    ``y = RMSNorm(x ⊙ silu(z)) · weight`` computed in (at least) fp32 (``ops/triton/layernorm_gated.py``)."""

    def __init__(self, d, eps=1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d, device=device, dtype=dtype))

    def forward(self, x, z):
        xf = at_least_fp32(x) * F.silu(at_least_fp32(z))
        out = xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + self.eps) * self.weight
        return out.to(x.dtype)


class Mamba2(nn.Module):
    r"""The Mamba-2 mixer, ``mamba_ssm.modules.mamba2.Mamba2`` (ngroups = 1), SSD in PyTorch.

    Parameters (``E = expand · d_model``, ``H = E / headdim``, ``N = d_state``, ``K = d_conv``)::

        in_proj.weight  (2E + 2N + H, d_model)     rows: [z (E), x (E), B (N), C (N), dt (H)]
        conv1d.weight   (E + 2N, 1, K)             conv1d.bias (E + 2N)   depthwise over xBC, padding K−1
        dt_bias         (H,)   softplus^{-1}(dt), dt log-uniform in [dt_min, dt_max]  _no_weight_decay
        A_log           (H,)   log U(A_init_range)                                    _no_weight_decay
        D               (H,)   = 1                                                    _no_weight_decay
        norm.weight     (E,)   gated RMSNorm
        out_proj.weight (d_model, E)

    ``abar_hook`` (None by default): a callable ``seqlen → bool mask`` broadcastable to (B, H, T); where
    True, the decay α_t^(h) is set to 0, i.e. h_t^(h) = Δ_t x_t B_tᵀ (the head forgets everything
    before t). A mask without True entries leaves the forward untouched (bit-identical).
    ``ablation_units`` = H: the Chapter 4 interventions address heads, not channels.
    """

    abar_hook = None

    def __init__(
        self,
        d_model,
        d_state=128,
        d_conv=4,
        expand=2,
        headdim=64,
        ngroups=1,
        A_init_range=(1, 16),
        dt_min=0.001,
        dt_max=0.1,
        dt_init_floor=1e-4,
        bias=False,
        conv_bias=True,
        backend="auto",
        layer_idx=None,
        device=None,
        dtype=None,
    ):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.d_model, self.d_state, self.d_conv, self.d_inner = mixer_sizes(d_model, d_state, d_conv, expand)
        self.headdim = check_positive_int("headdim", headdim)
        if ngroups != 1:
            raise ValueError(f"only ngroups=1 is implemented, got ngroups={ngroups!r}.")
        self.ngroups = 1
        self.expand = expand
        self.d_ssm = self.d_inner
        if self.d_ssm % self.headdim:
            raise ValueError(f"expand * d_model = {self.d_inner} must be a positive multiple of headdim={headdim}.")
        self.nheads = self.d_ssm // self.headdim
        self.backend = backend  # kept for the Mamba-1 interface; the SSD always runs in PyTorch (quadratic form)
        self.layer_idx = layer_idx

        d_in_proj = 2 * self.d_inner + 2 * self.ngroups * self.d_state + self.nheads
        self.in_proj = nn.Linear(self.d_model, d_in_proj, bias=bias, **factory_kwargs)
        conv_dim = self.d_ssm + 2 * self.ngroups * self.d_state
        self.conv_dim = conv_dim
        self.conv1d = causal_conv1d(conv_dim, d_conv, conv_bias, **factory_kwargs)
        self.dt_bias = nn.Parameter(dt_bias_init(self.nheads, dt_min, dt_max, dt_init_floor, **factory_kwargs))
        self.dt_bias._no_weight_decay = True
        ssm_dtype = torch.float64 if dtype == torch.float64 else torch.float32
        A = torch.empty(self.nheads, dtype=ssm_dtype, device=device).uniform_(*A_init_range)
        self.A_log = nn.Parameter(torch.log(A))
        self.A_log._no_weight_decay = True
        self.D = nn.Parameter(torch.ones(self.nheads, dtype=ssm_dtype, device=device))
        self.D._no_weight_decay = True
        self.norm = RMSNormGated(self.d_ssm, eps=1e-5, **factory_kwargs)
        self.out_proj = nn.Linear(self.d_inner, self.d_model, bias=bias, **factory_kwargs)

    @property
    def ablation_units(self) -> int:
        """Width of an ablation mask: the number of heads H."""
        return self.nheads

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, d_inner={self.d_inner}, nheads={self.nheads}, headdim={self.headdim}, "
            f"d_state={self.d_state}, d_conv={self.d_conv}"
        )

    def forward(
        self,
        hidden_states,
        return_internals=False,
        *,
        state: Mamba2State | None = None,
        return_state=False,
        abar_mask=None,
    ):
        """hidden_states (B, T, d_model) → out (B, T, d_model) [, new :class:`Mamba2State`] [, internals].

        ``state`` continues a previous segment exactly (conv + SSM state). ``abar_mask`` bool,
        broadcastable to (B, H, T): α_t^(h) ← 0 where True; if not given, ``abar_hook(T)`` is asked.
        """
        if hidden_states.dim() != 3 or hidden_states.shape[-1] != self.d_model:
            raise ValueError(
                f"hidden_states must be (batch, length, d_model={self.d_model}), "
                f"got shape {tuple(hidden_states.shape)}."
            )
        batch, seqlen = hidden_states.shape[:2]
        H, P, N, K1 = self.nheads, self.headdim, self.d_state, self.d_conv - 1
        if abar_mask is None and self.abar_hook is not None:
            abar_mask = self.abar_hook(seqlen)
        if abar_mask is not None:
            abar_mask = torch.as_tensor(abar_mask, dtype=torch.bool, device=hidden_states.device)
            try:
                abar_mask = abar_mask.expand(batch, H, seqlen)
            except RuntimeError:
                raise ValueError(
                    f"abar_mask of shape {tuple(abar_mask.shape)} does not broadcast to "
                    f"(batch, nheads, length) = {(batch, H, seqlen)}."
                ) from None
            if not bool(abar_mask.any()):
                abar_mask = None

        zxbcdt = self.in_proj(hidden_states)  # (B, T, 2E + 2N + H)
        z, xBC, dt = torch.split(zxbcdt, [self.d_ssm, self.conv_dim, H], dim=-1)
        xBC = xBC.transpose(1, 2)  # (B, E+2N, T)
        if state is None:
            new_conv = F.pad(xBC, (K1, 0))[..., xBC.shape[-1] :] if return_state else None
            xBC = F.silu(self.conv1d(xBC)[..., :seqlen])
        else:
            if tuple(state.conv.shape) != (batch, self.conv_dim, K1):
                raise ValueError(
                    f"state.conv must be (batch, conv_dim, d_conv-1) = {(batch, self.conv_dim, K1)}, "
                    f"got {tuple(state.conv.shape)}."
                )
            x_in = torch.cat([state.conv.to(xBC.dtype), xBC], dim=-1)
            new_conv = x_in[..., x_in.shape[-1] - K1 :] if return_state else None
            xBC = F.silu(F.conv1d(x_in, self.conv1d.weight, self.conv1d.bias, groups=self.conv_dim))
        xBC = xBC.transpose(1, 2)  # (B, T, E+2N)
        x, Bm, Cm = torch.split(xBC, [self.d_ssm, N, N], dim=-1)
        x = x.reshape(batch, seqlen, H, P)
        A = -torch.exp(at_least_fp32(self.A_log))  # (H,)
        delta = F.softplus(at_least_fp32(dt) + at_least_fp32(self.dt_bias))  # (B, T, H)
        log_alpha = (delta * A).transpose(1, 2)  # (B, H, T)
        if abar_mask is not None:
            log_alpha = log_alpha.masked_fill(abar_mask, float("-inf"))
        cdt = x.dtype if x.dtype == torch.float64 else torch.float32
        res = ssd_quadratic(
            x.to(cdt),
            delta.to(cdt),
            log_alpha.to(cdt),
            Bm.to(cdt),
            Cm.to(cdt),
            at_least_fp32(self.D),
            initial_state=None if state is None else state.ssm,
            return_final_state=return_state,
        )
        y, hT = res if return_state else (res, None)
        y = self.norm(y.reshape(batch, seqlen, self.d_ssm).to(x.dtype), z)
        out = self.out_proj(y)
        result = (out,)
        if return_state:
            result += (Mamba2State(conv=new_conv, ssm=hT),)
        if return_internals:
            result += (
                Mamba2Internals(x=x, delta=delta.transpose(1, 2), alpha=torch.exp(log_alpha), B=Bm, C=Cm, z=z, y=y),
            )
        return result[0] if len(result) == 1 else result


class Mamba2Block(Block):
    """mamba-ssm's ``Block`` around a :class:`Mamba2` mixer: Add → RMSNorm (:meth:`Block.add_norm`) → Mixer →
    (hidden, residual)."""

    mixer_cls = Mamba2

    def forward(self, hidden_states, residual=None, return_internals=False, *, state=None, return_state=False):
        """Returns ``(hidden_states, residual)`` [+ internals] [+ new :class:`Mamba2State` last]."""
        hidden_states, residual = self.add_norm(hidden_states, residual)
        out = self.mixer(hidden_states, return_internals=return_internals, state=state, return_state=return_state)
        if not isinstance(out, tuple):
            return out, residual
        rest = list(out[1:])  # mixer order: [state] [internals]
        new_state = rest.pop(0) if return_state else None
        result = (out[0], residual) + tuple(rest)  # + internals
        return result + (new_state,) if return_state else result


class Mamba2LMHeadModel(MambaLMHeadModel):
    """``MambaLMHeadModel`` with ``ssm_cfg={"layer": "Mamba2"}`` (no MLP), the same ``state_dict`` keys::

        backbone.embedding.weight                 (V_pad, d_model)
        backbone.layers.{i}.norm.weight           (d_model,)
        backbone.layers.{i}.mixer.<Mamba2 parameter>
        backbone.norm_f.weight                    (d_model,)
        lm_head.weight                            (V_pad, d_model), tied to the embedding by default

    Same outer interface as :class:`~mamba_recall.models.mamba.MambaLMHeadModel` (so the Chapter 4
    tools work unchanged): ``forward(input_ids, return_internals=False, *, states=None,
    return_states=False)``; internals are :class:`Mamba2Internals` (Δ and α per head, (B, H, T)).
    """

    block_cls = Mamba2Block

    def __init__(self, d_model, n_layer, vocab_size, d_state=64, d_conv=4, expand=2, headdim=16, **kwargs):
        super().__init__(
            d_model, n_layer, vocab_size, d_state=d_state, d_conv=d_conv, expand=expand, headdim=headdim, **kwargs
        )

    @property
    def backend(self) -> str:
        return "ssd_quadratic"

    @backend.setter
    def backend(self, value: str) -> None:
        for layer in self.backbone.layers:
            layer.mixer.backend = value
