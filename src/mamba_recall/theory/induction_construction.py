r"""Lemma 3 (paper 003, §5.2, App. C.2): a 1-layer Mamba-Δ⊤ with d = 2|V|, N = |V| solves INDUCTION HEADS.

Weights set into :class:`~mamba_recall.models.s6.MixerLM` (mixer ``s6_dT``, size-2 conv, identity
activation), so the construction runs through the same forward code as the trained models:

* embedding :math:`v\mapsto[e_v;e_v]\in\mathbb R^{2|V|}`;
* conv (size 2, left zero pad, no bias): :math:`\hat x_i=c_0\odot x_{i-1}+c_1\odot x_i`,
  :math:`c_0=[\mathbf 1;\mathbf 0]`, :math:`c_1=[\mathbf 0;\mathbf 1]`, so :math:`\hat x_i=[e_{x_{i-1}};e_{x_i}]`;
* Mamba-Δ⊤ (Eq. 15): Λ = −1, :math:`\Delta(\hat x)=\mathrm{softplus}(w_\Delta[I|0]\hat x-b_\Delta\mathbf 1)\in\mathbb R^N`,
  :math:`B=[I|0]\hat x` (the key is the previous token), :math:`C=[0|I]\hat x` (the query is the current one);
  at each step the column of the previous token is erased (:math:`e^{-\Delta}\approx0`) and rewritten with
  :math:`[e_{x_{i-1}};e_{x_i}]`, the others are kept (Δ ≈ 0);
* readout :math:`W_o=[0|I_{|V|}]` plus a blank logit fixed at 0.5 (our addition: a first occurrence reads
  a zero column, so the blank wins).

``b_delta=0`` is the paper as printed (Eqs. 109–110): softplus(0) = ln 2, so every kept column halves at
every step; ``b_delta=30`` (with ``w_delta=60``) is the fix.
"""

from __future__ import annotations

import torch

from ..models.s6 import MixerLM

__all__ = ["lemma3_model", "worked_example"]


def lemma3_model(V: int, w_delta: float = 60.0, b_delta: float = 30.0, dtype=torch.float64) -> MixerLM:
    """The Lemma-3 Mamba-Δ⊤ model for vocabulary ``V`` (classes 0..V−1 and blank V); eval mode."""
    if V < 2:
        raise ValueError(f"V must be >= 2, got {V}.")
    d, N = 2 * V, V
    model = MixerLM(V, d, N, mixer="s6_dT", n_classes=V + 1, use_conv=True, d_conv=2, activation="identity")
    model = model.to(dtype)
    eye = torch.eye(V, dtype=dtype)
    zero = torch.zeros(V, V, dtype=dtype)
    with torch.no_grad():
        model.embedding.weight.copy_(torch.cat([eye, eye], dim=1))
        w = torch.zeros(d, 1, 2, dtype=dtype)
        w[:V, 0, 0] = 1.0  # previous token into the first half
        w[V:, 0, 1] = 1.0  # current token into the second half
        model.conv1d.weight.copy_(w)
        model.conv1d.bias.zero_()
        mix = model.mixer
        mix.x_proj.weight.copy_(
            torch.cat(
                [
                    torch.cat([w_delta * eye, zero], 1),  # Δ rows: w[I|0]
                    torch.cat([eye, zero], 1),  # B rows: [I|0]
                    torch.cat([zero, eye], 1),
                ],
                0,
            )
        )  # C rows: [0|I]
        mix.delta_bias.fill_(-b_delta)
        mix.A_log.zero_()  # Λ = −1
        head = torch.zeros(V + 1, d, dtype=dtype)
        head[:V, V:] = eye
        model.head.weight.copy_(head)
        model.head.bias.zero_()
        model.head.bias[V] = 0.5
    return model.eval()


def worked_example():
    """Eq. (103): x = [v2, v1, v3, v2, v4, v3, v2, v4] → y = [×, ×, ×, v1, ×, v2, v4, v3] (0-based ids, blank = 4)."""
    ids = torch.tensor([[1, 0, 2, 1, 3, 2, 1, 3]])
    blank = 4
    expected = torch.tensor([[blank, blank, blank, 0, blank, 1, 3, 2]])
    return ids, expected
