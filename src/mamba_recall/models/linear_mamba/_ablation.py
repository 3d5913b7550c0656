"""The 1-layer selective Mamba of the Tab. 10 ablation (paper 002, App. K), rows Base, A, B and C; see
:mod:`mamba_recall.models.linear_mamba`."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..mamba import check_positive_int
from ._linear import n_members_of
from ._multihead import _SingleLayerEnsemble, uniform_init


# ====================================================================== Tab. 10 ablation rows Base, A, B

ABLATION_ROWS = {
    # row id: (Ā_t = exp(Δ_t A) learned [False: Ā_t = I], output gate ŷ ⊙ SiLU(ẑ), SiLU after Conv1D)
    "Base": dict(decay=True, gate=True, activation=True),
    "A": dict(decay=False, gate=True, activation=True),
    "B": dict(decay=False, gate=False, activation=True),
    "C": dict(decay=False, gate=False, activation=False),
}


class SelectiveAblationMamba(_SingleLayerEnsemble):
    r"""The 1-layer selective Mamba of the Tab. 10 ablation (App. K), rows Base / A / B (and C with Δ), with an
    ensemble axis (members = seeds, all of the same size) so that it trains with
    :func:`mamba_recall.train.train` with ``per_member=True`` (Chapter 2's ``train_ensemble``).

    Row ``Base`` is the mamba-ssm Mamba-1 mixer (§3.2, Eqs. 1–2) without normalisation layers, in the
    [code] ``circuit_minimality_ablation`` layout (``expand=2``, ``d_conv=4``, ``conv_bias=True``, ``bias=False``,
    ``init_D=0``: no skip term ``D x̂``)::

        x_e = W_E x                                  (L, D)
        x_in = P_in x_e,  z = P_z x_e                 (L, D_in) each
        x̂ = SiLU(Conv1D(x_in) + b_conv)              (L, D_in)    (no SiLU: row C)
        Δ = SoftPlus(W_Δ (S_Δ x̂) + b_Δ)               (L, D_in)    S_Δ: (R, D_in), W_Δ: (D_in, R), R = ⌈D/16⌉
        B = S_B x̂,  C = S_C x̂                        (L, N) each
        h_t = exp(Δ_t A) ⊙ h_{t-1} + (Δ_t ⊙ x̂_t) B_t^T  (D_in, N)   A = −exp(A_log) (D_in, N), S4D-real init
        ŷ_t = h_t C_t ⊙ SiLU(z_t)                    (D_in)       (no gate: rows B, C)
        logits = W_E^T P_out ŷ                       (L, V)        tied embedding

    Row ``A`` sets :math:`\bar A_t = I` (no ``A_log`` parameter) and keeps :math:`\bar B_t=\Delta_t B_t`, so
    :math:`\hat y_t=\sum_{\tau\le t}(B_\tau\!\cdot\!C_t)\,\Delta_\tau\odot\hat x_\tau` (computed in that
    attention form); row ``B`` also drops the gate; ``C`` (= ``B`` without the SiLU) is Alg. 1 with Δ and
    ``d_conv=4``. No residual connection [ours, as Alg. 1 and the linear rows C–E]; embedding init N(0, 1)
    and U(±1/√fan_in) for the projections as :class:`LinearMamba`; Δ init as mamba-ssm (dt ∈ [1e-3, 0.1]).

    Parameter shapes (ensemble axis first)::

        embedding (n_members, V, D); in_proj (n_members, D_in, D); in_proj_z (n_members, D_in, D) if gate; conv (n_members, D_in, d_conv);
        conv_bias (n_members, D_in); x_proj_dt (n_members, R, D_in); dt_proj (n_members, D_in, R); dt_bias (n_members, D_in);
        x_proj_B, x_proj_C (n_members, N, D_in); A_log (n_members, D_in, N) if decay; out_proj (n_members, D, D_in)
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        d_state: int,
        row: str = "Base",
        *,
        expand: int = 2,
        d_conv: int = 4,
        ensemble: int | None = None,
        seed: int | None = None,
        dtype=torch.float32,
        device=None,
    ):
        super().__init__()
        V, D, N = (
            check_positive_int(name, value)
            for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("d_state", d_state))
        )
        check_positive_int("expand", expand)
        check_positive_int("d_conv", d_conv)
        if row not in ABLATION_ROWS:
            raise ValueError(f"unknown ablation row {row!r}; use one of {tuple(ABLATION_ROWS)}.")
        n_members = n_members_of(ensemble)
        self.vocab_size, self.d_model, self.d_state, self.row = V, D, N, row
        self.expand, self.d_conv, self.d_inner = expand, d_conv, expand * D
        self.dt_rank = math.ceil(D / 16)
        self.decay, self.gate, self.activation = (ABLATION_ROWS[row][k] for k in ("decay", "gate", "activation"))
        self.ensemble, self.n_members, self.n_layer, self.residual = ensemble, n_members, 1, False
        Din, R = self.d_inner, self.dt_rank
        kw = dict(dtype=dtype, device=device)
        if seed is not None:
            torch.manual_seed(seed)

        uniform = functools.partial(uniform_init, **kw)

        self.embedding = nn.Parameter(torch.randn(n_members, V, D, **kw))
        self.in_proj = uniform((n_members, Din, D), D)
        self.in_proj_z = uniform((n_members, Din, D), D) if self.gate else None
        self.conv = uniform((n_members, Din, d_conv), d_conv)
        self.conv_bias = uniform((n_members, Din), d_conv)
        self.x_proj_dt = uniform((n_members, R, Din), Din)
        self.dt_proj = nn.Parameter((torch.rand(n_members, Din, R, **kw) * 2 - 1) * R**-0.5)
        dt = torch.exp(torch.rand(n_members, Din, **kw) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3)).clamp(
            min=1e-4
        )
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus^{-1}(dt)
        self.x_proj_B = uniform((n_members, N, Din), Din)
        self.x_proj_C = uniform((n_members, N, Din), Din)
        self.A_log = (
            nn.Parameter(torch.log(torch.arange(1, N + 1, **kw)).expand(n_members, Din, N).clone())
            if self.decay
            else None
        )
        self.out_proj = uniform((n_members, D, Din), Din)

    def apply_masks_(self) -> None:
        """No masked entries (all members have the same size); kept for :func:`mamba_recall.train.train` with ``per_member=True`` (Chapter 2's ``train_ensemble``)."""

    def internals(self, x: torch.Tensor, ssm: str = "auto") -> dict:
        """x (n,B,L,D) → dict x_hat, delta, y_hat (n,B,L,Din), B, C (n,B,L,N), y_out (n,B,L,D).
        ``ssm``: ``"auto"`` (attention form when Ā = I, else the sequential scan) or ``"scan"``."""
        L, K = x.shape[2], self.d_conv
        x_in = torch.einsum("ebld,eid->ebli", x, self.in_proj)
        x_hat = x_in * self.conv[:, None, None, :, K - 1] + self.conv_bias[:, None, None, :]
        for k in range(K - 1):
            shift = K - 1 - k
            if shift < L:
                x_hat = x_hat + F.pad(x_in, (0, 0, shift, 0))[:, :, :L] * self.conv[:, None, None, :, k]
        if self.activation:
            x_hat = F.silu(x_hat)
        dt = torch.einsum("ebli,eri->eblr", x_hat, self.x_proj_dt)
        delta = F.softplus(torch.einsum("eblr,eir->ebli", dt, self.dt_proj) + self.dt_bias[:, None, None, :])
        Bm = torch.einsum("ebli,eni->ebln", x_hat, self.x_proj_B)
        Cm = torch.einsum("ebli,eni->ebln", x_hat, self.x_proj_C)
        u = delta * x_hat
        if self.decay or ssm == "scan":
            A = -torch.exp(self.A_log) if self.decay else u.new_zeros(self.n_members, self.d_inner, self.d_state)
            h = u.new_zeros(*u.shape[:2], self.d_inner, self.d_state)
            ys = []
            for t in range(L):  # Eq. 2: h_t = exp(Δ_t A) ⊙ h_{t−1} + (Δ_t x̂_t) B_t^T; ŷ_t = h_t C_t
                h = torch.exp(delta[:, :, t, :, None] * A[:, None]) * h + u[:, :, t, :, None] * Bm[:, :, t, None, :]
                ys.append(torch.einsum("ebin,ebn->ebi", h, Cm[:, :, t]))
            y_hat = torch.stack(ys, dim=2)
        else:
            scores = torch.einsum("ebsn,ebtn->ebts", Bm, Cm)
            scores = scores * torch.tril(torch.ones(L, L, device=x.device, dtype=x.dtype))
            y_hat = torch.einsum("ebts,ebsi->ebti", scores, u)
        if self.gate:
            y_hat = y_hat * F.silu(torch.einsum("ebld,eid->ebli", x, self.in_proj_z))
        y_out = torch.einsum("ebli,edi->ebld", y_hat, self.out_proj)
        return dict(x_hat=x_hat, delta=delta, B=Bm, C=Cm, y_hat=y_hat, y_out=y_out)
