r"""Single-layer selective-SSM models of paper 003 (Tab. 1, Tab. 2, Eqs. 7, 14, 15).

* :class:`S6Mixer` — the Mamba (S6) mixer of Eq. (14c–f) with mamba-ssm's parameter names:
  :math:`\Delta_t=\mathrm{softplus}(W_{dt}W_x\hat x_t+b_{dt})\in\mathbb R^d`, :math:`B_t, C_t=W_{B,C}\hat x_t\in\mathbb R^N`,
  :math:`h_t=e^{\Delta_tA}\odot h_{t-1}+\Delta_t\hat x_t\otimes B_t`, :math:`y_t=h_tC_t+D\hat x_t`; run on the library's
  :func:`~mamba_recall.scan.selective_scan` (``backend`` = reference | chunked | mamba_ssm | auto).
  Parameters ``x_proj (R+2N, d)``, ``dt_proj (d, R)`` + bias, ``A_log (d, N)``, ``D (d)``, R = ⌈d/16⌉.
* :class:`DeltaTMixer` — Mamba-Δ⊤ (Eq. 15): Δ lives along the *state* dimension,
  :math:`\Delta_t=\mathrm{softplus}(W_\Delta\hat x_t+b_\Delta)\in\mathbb R^N`,
  :math:`h_t=e^{\Lambda\odot(\mathbf 1_d\otimes\Delta_t)}\odot h_{t-1}+\hat x_t\otimes B_t` (no Δ on the input term).
  mamba-ssm kernels cannot do this (their Δ is per channel): it runs on
  :func:`~mamba_recall.scan.linear_recurrence_chunked` over a (b, T, d, N) decay.
* :class:`Mamba2Mixer` — a single-head Mamba-2 mixer without gate (Tab. 2 right, Eq. 14): three *independent*
  size-``d_conv`` causal convolutions (u, B, C) after linear maps, scalar :math:`\Delta_t=\mathrm{softplus}(w^\top x_t+b)`
  from the raw input, scalar :math:`A=-e^{A\_log}`, on the library's :func:`~mamba_recall.scan.ssd_scan`.
* :class:`MixerLM` — embedding → [causal depthwise conv + activation] → mixer → [gate] → linear head.
  The KEEP n-TH models (Tab. 1) are ``MixerLM(mixer, use_conv=False, use_gate=False, pe=True|False)``:
  embedding → SSM → Linear(d, |V|) with, for PE, the position in the *last* embedding coordinate
  (``pe_scale="index"``: :math:`p_t=t`; ``"unit"``: :math:`t/T`). Parameter count for d=32, N=8, |V|=128:
  9,152 with PE, 9,280 without (Tab. 1: 9.2k / 9.3k).
Shapes: ids (b, T) int64 → logits (b, T, n_classes).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..scan import linear_recurrence_chunked, selective_scan, ssd_scan
from .mamba import causal_conv1d
from .s4d import S4DMixer

MIXERS = ("s6", "s4d", "s6_dT", "mamba2")
ACTIVATIONS = ("silu", "relu", "identity")
PE_SCALES = ("index", "unit")

__all__ = ["ACTIVATIONS", "DeltaTMixer", "Mamba2Mixer", "MIXERS", "MixerLM", "PE_SCALES", "S6Mixer", "count_parameters"]


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _dt_bias(d, dt_min=1e-3, dt_max=1e-1):
    dt = torch.exp(torch.rand(d) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)).clamp(min=1e-4)
    return dt + torch.log(-torch.expm1(-dt))


class S6Mixer(nn.Module):
    """Mamba's S6 (selective) SSM, x̂ (b, T, d) → y (b, T, d); ``return_internals`` adds Δ, A, B, C."""

    def __init__(self, d: int, N: int, dt_rank: int | str = "auto", backend: str = "auto"):
        super().__init__()
        if d < 1 or N < 1:
            raise ValueError(f"S6Mixer needs d >= 1 and N >= 1, got d={d}, N={N}.")
        self.d, self.N, self.backend = d, N, backend
        self.dt_rank = math.ceil(d / 16) if dt_rank == "auto" else int(dt_rank)
        self.x_proj = nn.Linear(d, self.dt_rank + 2 * N, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, d, bias=True)
        std = self.dt_rank**-0.5
        nn.init.uniform_(self.dt_proj.weight, -std, std)
        with torch.no_grad():
            self.dt_proj.bias.copy_(_dt_bias(d))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, N + 1, dtype=torch.float32)).repeat(d, 1))
        self.D = nn.Parameter(torch.ones(d))
        self.A_log._no_weight_decay = True
        self.D._no_weight_decay = True

    def forward(self, x: torch.Tensor, return_internals: bool = False):
        if x.dim() != 3 or x.shape[-1] != self.d:
            raise ValueError(f"S6Mixer input must be (batch, T, d={self.d}), got {tuple(x.shape)}.")
        proj = self.x_proj(x)  # (b, T, R + 2N)
        dt, B, C = proj.split([self.dt_rank, self.N, self.N], dim=-1)
        delta_raw = (dt @ self.dt_proj.weight.T).transpose(1, 2).contiguous()  # (b, d, T)
        A = -torch.exp(self.A_log)
        u = x.transpose(1, 2).contiguous()
        y = selective_scan(
            u,
            delta_raw,
            A,
            B.transpose(1, 2).contiguous(),
            C.transpose(1, 2).contiguous(),
            self.D,
            delta_bias=self.dt_proj.bias,
            delta_softplus=True,
            backend=self.backend,
        )
        y = y.transpose(1, 2)
        if return_internals:
            delta = F.softplus(delta_raw + self.dt_proj.bias[None, :, None])
            return y, {"delta": delta, "A": A, "B": B, "C": C}
        return y


class DeltaTMixer(nn.Module):
    r"""Mamba-Δ⊤ (Eq. 15): x̂ (b, T, d) → y (b, T, d); Δ ∈ R^N per step, decay exp(−e^{A_log} ⊙ Δ)."""

    def __init__(self, d: int, N: int):
        super().__init__()
        if d < 1 or N < 1:
            raise ValueError(f"DeltaTMixer needs d >= 1 and N >= 1, got d={d}, N={N}.")
        self.d, self.N = d, N
        self.x_proj = nn.Linear(d, 3 * N, bias=False)  # rows: Δ (N), B (N), C (N)
        self.delta_bias = nn.Parameter(_dt_bias(N))
        self.A_log = nn.Parameter(torch.zeros(d, N))  # Λ = −1 at init
        self.A_log._no_weight_decay = True

    def forward(self, x: torch.Tensor, return_internals: bool = False):
        if x.dim() != 3 or x.shape[-1] != self.d:
            raise ValueError(f"DeltaTMixer input must be (batch, T, d={self.d}), got {tuple(x.shape)}.")
        dt, B, C = self.x_proj(x).split([self.N] * 3, dim=-1)
        delta = F.softplus(dt + self.delta_bias)  # (b, T, N)
        log_decay = -torch.exp(self.A_log)[None, None] * delta[:, :, None, :]  # (b, T, d, N)
        h = linear_recurrence_chunked(log_decay, x[..., None] * B[:, :, None, :])
        y = torch.einsum("btdn,btn->btd", h, C)
        if return_internals:
            return y, {"delta": delta, "B": B, "C": C, "h": h}
        return y


class Mamba2Mixer(nn.Module):
    r"""Single-head Mamba-2 mixer (Eq. 14, right column of Tab. 2), x (b, T, d) → y (b, T, d).

    :math:`\hat x=\sigma(\mathrm{conv}_u(W_ux))`, :math:`B=\sigma(\mathrm{conv}_B(W_Bx))`, :math:`C=\sigma(\mathrm{conv}_C(W_Cx))`
    (independent depthwise convs, SiLU), :math:`\Delta_t=\mathrm{softplus}(w_\Delta^\top x_t+b_\Delta)` (a scalar),
    :math:`h_t=e^{A\Delta_t}h_{t-1}+\Delta_t\hat x_t\otimes B_t`, :math:`y_t=h_tC_t+D\hat x_t`. It has its own convolutions, so
    use it in :class:`MixerLM` with ``use_conv=False``."""

    def __init__(self, d: int, N: int, d_conv: int = 4, backend: str = "auto"):
        super().__init__()
        if d < 1 or N < 1:
            raise ValueError(f"Mamba2Mixer needs d >= 1 and N >= 1, got d={d}, N={N}.")
        self.d, self.N, self.backend, self.d_conv = d, N, backend, d_conv
        self.in_proj = nn.Linear(d, d + 2 * N + 1, bias=False)  # u, B, C, Δ
        self.conv1d = causal_conv1d(d + 2 * N, d_conv, bias=True)
        self.dt_bias = nn.Parameter(_dt_bias(1))
        self.A_log = nn.Parameter(torch.zeros(1))
        self.D = nn.Parameter(torch.ones(1))
        for p in (self.dt_bias, self.A_log, self.D):
            p._no_weight_decay = True

    def forward(self, x: torch.Tensor, return_internals: bool = False):
        if x.dim() != 3 or x.shape[-1] != self.d:
            raise ValueError(f"Mamba2Mixer input must be (batch, T, d={self.d}), got {tuple(x.shape)}.")
        b, T, _ = x.shape
        xbc, dt = self.in_proj(x).split([self.d + 2 * self.N, 1], dim=-1)
        xbc = F.silu(self.conv1d(xbc.transpose(1, 2))[..., :T].transpose(1, 2))
        u, B, C = xbc.split([self.d, self.N, self.N], dim=-1)
        y = ssd_scan(
            u[:, :, None, :].contiguous(),
            dt.contiguous(),
            -torch.exp(self.A_log),
            B[:, :, None, :].contiguous(),
            C[:, :, None, :].contiguous(),
            D=self.D,
            dt_bias=self.dt_bias,
            dt_softplus=True,
            backend=self.backend,
        )[:, :, 0, :]
        if return_internals:
            return y, {"delta": F.softplus(dt + self.dt_bias), "B": B, "C": C}
        return y


class MixerLM(nn.Module):
    """ids (b, T) → logits (b, T, n_classes): embedding [+PE] → [conv+act] → mixer → [gate] → head.

    mixer: ``s6`` | ``s4d`` | ``s6_dT`` | ``mamba2`` (with its own convs: use ``use_conv=False``). ``pe``: write the position into the last embedding coordinate
    (the learned embedding then has d−1 columns). ``use_conv``: depthwise causal conv of width ``d_conv``
    then ``activation``. ``use_gate``: ỹ = silu(W_g x) ⊙ y (Eq. 14g, gating y, not x as Table 2 prints). ``D`` skip kept (mamba).
    """

    def __init__(
        self,
        vocab_size: int,
        d: int,
        N: int,
        mixer: str = "s6",
        n_classes: int | None = None,
        pe: bool = False,
        pe_scale: str = "index",
        use_conv: bool = False,
        d_conv: int = 4,
        activation: str = "silu",
        use_gate: bool = False,
        backend: str = "auto",
    ):
        super().__init__()
        if mixer not in MIXERS:
            raise ValueError(f"unknown mixer {mixer!r}; use one of {MIXERS}.")
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; use one of {ACTIVATIONS}.")
        if pe_scale not in PE_SCALES:
            raise ValueError(f"unknown pe_scale {pe_scale!r}; use one of {PE_SCALES}.")
        if pe and d < 2:
            raise ValueError("pe=True needs d >= 2 (one coordinate holds the position).")
        self.vocab_size, self.d, self.N, self.mixer_name = vocab_size, d, N, mixer
        self.pe, self.pe_scale, self.use_conv, self.use_gate, self.activation = (
            pe,
            pe_scale,
            use_conv,
            use_gate,
            activation,
        )
        self.embedding = nn.Embedding(vocab_size, d - 1 if pe else d)
        self.conv1d = causal_conv1d(d, d_conv, bias=True) if use_conv else None
        if mixer == "s6":
            self.mixer = S6Mixer(d, N, backend=backend)
        elif mixer == "s4d":
            self.mixer = S4DMixer(d, N, backend=backend)
        elif mixer == "mamba2":
            self.mixer = Mamba2Mixer(d, N, d_conv=d_conv, backend=backend)
        else:
            self.mixer = DeltaTMixer(d, N)
        self.gate = nn.Linear(d, d, bias=False) if use_gate else None
        self.head = nn.Linear(d, n_classes or vocab_size)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dim() != 2:
            raise ValueError(f"ids must be (batch, T) token indices, got shape {tuple(ids.shape)}.")
        x = self.embedding(ids)
        if self.pe:
            T = ids.shape[1]
            t = torch.arange(1, T + 1, dtype=x.dtype, device=x.device)
            t = t / T if self.pe_scale == "unit" else t
            x = torch.cat([x, t[None, :, None].expand(ids.shape[0], T, 1)], dim=-1)
        return x

    def forward(self, ids: torch.Tensor, return_internals: bool = False):
        x = self.embed(ids)
        xh = x
        if self.conv1d is not None:
            T = x.shape[1]
            xh = self.conv1d(x.transpose(1, 2))[..., :T].transpose(1, 2)
            xh = {"silu": F.silu, "relu": F.relu, "identity": lambda v: v}[self.activation](xh)
        y, internals = self.mixer(xh, return_internals=True)
        if self.gate is not None:
            y = F.silu(self.gate(x)) * y
        logits = self.head(y)
        if return_internals:
            return logits, internals
        return logits
