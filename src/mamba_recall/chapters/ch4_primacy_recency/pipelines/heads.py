r"""Long-term *heads* of a Mamba-2 model (paper 004, App. F, Eq. 9).

In Mamba-2 every head ``h`` of a layer has one scalar decay per step, ``Ā_t^{(h)} = α_t^{(h)} I`` with
``α_t^{(h)} = exp(Δ_t^{(h)} A_h)`` (``A_h = −exp(A_log_h)`` a scalar, ``Δ_t^{(h)}`` from
:class:`~mamba_recall.models.mamba2.Mamba2Internals`, shape (B, H, T)). The head statistic is the
cumulative decay over the context::

    𝓜^{(h)} = Π_{t=2..T} α_t^{(h)} = exp(A_h · S^{(h)}),     S^{(h)} = Σ_{t=2..T} Δ_t^{(h)}

with the token range of the channel statistic (:func:`mamba_recall.analysis.channels.product_range`:
0-based indices ``1 … T_total − 3``, the first token and the two query tokens dropped). A head is a
*long-term head* iff ``𝓜^{(h)} ≥ τ`` (τ = 0.7; no ``p``: all ``P·N`` entries of the head share the decay).
With several prompts, 𝓜 is averaged over them before the threshold; the paper (and the notebook) uses
one identification prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mamba_recall.analysis.channels import LayerStats, check_unit, product_range, record_internals

__all__ = [
    "HeadStats",
    "check_b14",
    "closed_form_M",
    "explicit_product_M",
    "head_A",
    "head_frame",
    "head_statistic_chart",
    "head_stats",
    "identify_heads",
    "record_head_internals",
]


def head_A(model) -> list[torch.Tensor]:
    """A = −exp(A_log), (H,) per layer, in float64."""
    return [-torch.exp(layer.mixer.A_log.detach().double()) for layer in model.backbone.layers]


def record_head_internals(model, tokens: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(Δ, α) of every layer for a batch of prompts: two lists of (B, H, T) float64 tensors (eval mode)."""
    internals = record_internals(model, tokens)
    if not hasattr(internals[0], "alpha"):
        raise ValueError("the model's internals have no per-head decay α: head statistics need a Mamba-2 model.")
    return [it.delta.double() for it in internals], [it.alpha.double() for it in internals]


def explicit_product_M(alpha: torch.Tensor, rng: slice) -> torch.Tensor:
    """Eq. (9) literally: Π_t α_t over the token range ``rng``; alpha (B, H, T) → (B, H)."""
    return alpha[..., rng].prod(dim=-1)


def closed_form_M(delta: torch.Tensor, A: torch.Tensor, rng: slice) -> torch.Tensor:
    """exp(A · Σ_t Δ_t) over ``rng``; delta (B, H, T), A (H,) → (B, H)."""
    return torch.exp(delta[..., rng].sum(-1) * A[None])


@dataclass
class HeadStats(LayerStats):
    """Mamba-2 heads: per layer S (B, H) = Σ Δ, M (B, H) = 𝓜, A (H,)."""

    @property
    def n_heads(self) -> int:
        return self.n_units

    def mean_M(self) -> list[torch.Tensor]:
        """𝓜 averaged over the prompts, (H,) per layer."""
        return [m.mean(0) for m in self.M]


def head_stats(model, prompts: torch.Tensor, *, query_len: int = 2, first: int = 1) -> HeadStats:
    """Run ``prompts`` (B, T) (context then ``query_len`` query tokens) and compute 𝓜^{(h)} per layer."""
    deltas, _ = record_head_internals(model, prompts)
    As = head_A(model)
    rng = product_range(prompts.shape[1], query_len, first)
    return HeadStats(
        S=[d[..., rng].sum(-1) for d in deltas],
        M=[closed_form_M(d, a, rng) for d, a in zip(deltas, As)],
        A=As,
        T_total=prompts.shape[1],
    )


def identify_heads(stats: HeadStats, tau: float = 0.7) -> list[torch.Tensor]:
    """Long-term heads of every layer: indices h with mean-over-prompts 𝓜^{(h)} ≥ τ, one LongTensor per layer."""
    check_unit("tau", tau)
    return [torch.nonzero(m >= tau).flatten() for m in stats.mean_M()]


def head_frame(stats: HeadStats, tau: float = 0.7):
    """Long table (layer, head, M, S, A, long_term) of the statistic, for charts and printing."""
    import pandas as pd

    rows = []
    for layer, (m, s, a) in enumerate(zip(stats.mean_M(), stats.S, stats.A)):
        for h in range(len(m)):
            rows.append(
                {
                    "layer": layer,
                    "head": h,
                    "M": float(m[h]),
                    "S": float(s[:, h].mean()),
                    "A": float(a[h]),
                    "long_term": bool(m[h] >= tau),
                }
            )
    return pd.DataFrame(rows)


def head_statistic_chart(frame, tau: float = 0.7, title: str = "Head statistic 𝓜 per layer"):
    """Fig. 13a analogue: 𝓜^{(h)} of every head (points, coloured by long-term) per layer, rule at τ."""
    import altair as alt

    pts = (
        alt.Chart(frame)
        .mark_circle(size=70)
        .encode(
            x=alt.X("head:O", title="head"),
            y=alt.Y("M:Q", title="𝓜 = Π α", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("long_term:N", title=f"𝓜 ≥ {tau}"),
            tooltip=[
                "layer",
                "head",
                alt.Tooltip("M:Q", format=".3f"),
                alt.Tooltip("S:Q", format=".4f"),
                alt.Tooltip("A:Q", format=".3f"),
            ],
        )
    )
    rule = alt.Chart(frame).mark_rule(strokeDash=[4, 3], color="gray").encode(y=alt.datum(tau))
    return (
        (pts + rule)
        .properties(width=200, height=180)
        .facet(column=alt.Column("layer:O", title="layer"))
        .properties(title=title)
    )


def check_b14(eff: dict, fraction: float, seed: int = 0) -> dict:
    """Fig. 13b's numbers (App. F): the fraction of long-term heads, δ(1) of the targeted first-triple head
    ablation against the random sets' mean δ(1), and mean_{k≥2} δ(k) of both. What they must show is the claim's
    declared rule (:mod:`mamba_recall.chapters.ch4_primacy_recency.claims.mamba2_heads`), not decided here.

    ``eff``: :func:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.ablation_effects` output (keys ``base``,
    ``targeted``, ``global``: (n, L) bool arrays), δ(k) = acc_base(k) − acc_ablated(k). The paired
    bootstrap CI of (random − targeted) recall at k = 1 is reported, not required."""
    base, tgt = eff["base"], eff["targeted"]
    d = base.mean(0) - tgt.mean(0)
    rand = eff["global"]
    d_rand = np.mean([base.mean(0) - r.mean(0) for r in rand], axis=0) if rand else np.zeros_like(d)
    if rand:
        from mamba_recall.analysis.interventions import paired_bootstrap

        _, lo, hi = paired_bootstrap(np.mean([r[:, 0] for r in rand], axis=0), tgt[:, 0], seed=seed)
    else:
        lo, hi = float("nan"), float("nan")
    later = float(d[1:].mean()) if len(d) > 1 else 0.0
    later_rand = float(d_rand[1:].mean()) if len(d) > 1 else 0.0
    return {
        "fraction": float(fraction),
        "count": int(eff["count"]),
        "delta": d.tolist(),
        "delta_random": d_rand.tolist(),
        "delta1": float(d[0]),
        "delta1_random": float(d_rand[0]),
        "ci_random_minus_targeted_k1": (lo, hi),
        "mean_delta_k2": later,
        "mean_delta_k2_random": later_rand,
    }
