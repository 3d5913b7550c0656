r"""Long-term channels of paper 004 (Eqs. 3–4, Algorithm 1): the statistic, identification, the (p, τ) grid.

For one Mamba-1 layer with ``E`` channels (``d_inner``), ``N`` states per channel, step sizes
``Δ_t^{(i)}`` (from :class:`~mamba_recall.models.mamba.MambaInternals`, shape (B, E, T)) and
``A = −exp(A_log)`` (E, N), the discretised recurrence is ``Ā_t^{(i)} = diag(exp(Δ_t^{(i)} A_{i,:}))``.

Eq. (3), the cumulative decay over the context (``T`` = last context token, before the query)::

    M^{(i)} = diag( Π_{t=2..T} Ā_t^{(i)} ) ∈ [0, 1]^N

Exact semantics (Eq. 3 and Algorithm 1, App. B, as in the authors' public code): over 0-based token indices ``1 … T_total − 3`` of the
prompt, i.e. dropping the first token and the ``query_len = 2`` query tokens. Closed form (exact for
Mamba-1, unit-tested against the explicit product)::

    M^{(i)}_n = exp(A_{i,n} · S^{(i)}),     S^{(i)} = Σ_t Δ_t^{(i)}     (same index range)

Eq. (4): ``P^{(i)}(τ) = |{n : M^{(i)}_n > τ}| / N`` (strict ``>``, as Algorithm 1 and the code; Eq. 4
prints ``≥``), averaged over the batch if several prompts are given; channel ``i`` is a *long-term
channel* iff ``P^{(i)}(τ) > p`` (strict). Main setting ``τ = p = 0.7``; grid ``{0.5, 0.7, 0.9}²``.
Layers are ranked by their number of long-term channels (ties → lower index); the channels of the
top-``n`` layers form the target set of the interventions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["ChannelStats", "LayerStats", "P_tau", "channel_stats", "closed_form_M", "count_grid",
           "explicit_product_M", "identify", "layer_A", "product_range", "rank_layers", "record_deltas",
           "record_internals", "s_threshold", "target_set", "GRID"]

GRID = (0.5, 0.7, 0.9)


def product_range(T_total: int, query_len: int = 2, first: int = 1) -> slice:
    """0-based token indices of the product of Eq. (3): ``first … T_total − query_len − 1``."""
    if T_total - query_len <= first:
        raise ValueError(f"the prompt of length {T_total} has no context tokens after index {first} "
                         f"once the {query_len} query tokens are dropped.")
    return slice(first, T_total - query_len)


def layer_A(model) -> list[torch.Tensor]:
    """A = −exp(A_log), (E, N) per layer, in float64."""
    return [-torch.exp(layer.mixer.A_log.detach().double()) for layer in model.backbone.layers]


@torch.no_grad()
def record_internals(model, tokens: torch.Tensor) -> list:
    """The per-layer internals (Δ, x, B, C, … as the model's ``*Internals``) of a batch of prompts (B, T),
    computed in eval mode without gradients (the model's mode is restored)."""
    if tokens.dim() != 2:
        raise ValueError(f"tokens must be (batch, length), got shape {tuple(tokens.shape)}.")
    was = model.training
    model.eval()
    try:
        _, internals = model(tokens, return_internals=True)
    finally:
        model.train(was)
    return internals


def record_deltas(model, tokens: torch.Tensor) -> list[torch.Tensor]:
    """Δ of every layer for a batch of prompts: a list of (B, E, T) float64 tensors (eval mode)."""
    return [it.delta.detach().double() for it in record_internals(model, tokens)]


def explicit_product_M(delta: torch.Tensor, A: torch.Tensor, rng: slice) -> torch.Tensor:
    """Eq. (3) literally: Π_t exp(Δ_t A) over the token range ``rng`` → (B, E, N)."""
    dA = torch.exp(delta[..., rng, None] * A[None, :, None, :])  # (B, E, T', N)
    return dA.prod(dim=2)


def closed_form_M(delta: torch.Tensor, A: torch.Tensor, rng: slice) -> torch.Tensor:
    """Closed form of Eq. (3): exp(A · S), S = Σ_t Δ_t over ``rng`` → (B, E, N)."""
    S = delta[..., rng].sum(-1)  # (B, E)
    return torch.exp(S[..., None] * A[None])


def P_tau(M: torch.Tensor, tau: float) -> torch.Tensor:
    """Eq. (4) with the code's strict inequality: mean over the batch and the N states of [M > τ] → (E,)."""
    return (M > tau).double().mean(dim=(0, -1))


def s_threshold(A_row_abs_sorted: torch.Tensor, tau: float, p: float) -> torch.Tensor:
    """Largest S for which a channel is long-term (single prompt): P(τ) > p needs the m smallest |A|
    with m = ⌊pN⌋ + 1 to satisfy |A|_(m) · S < ln(1/τ). Returns ln(1/τ) / |A|_(m) per channel."""
    N = A_row_abs_sorted.shape[-1]
    m = math.floor(p * N) + 1
    if m > N:
        return torch.zeros(A_row_abs_sorted.shape[:-1], dtype=A_row_abs_sorted.dtype)
    return math.log(1.0 / tau) / A_row_abs_sorted[..., m - 1]


@dataclass
class LayerStats:
    """The per-layer statistics of one identification pass over recurrent units (Mamba-1 channels here,
    Mamba-2 heads in :mod:`mamba_recall.analysis.heads`): S cumulative steps Σ_t Δ_t, M cumulative decays
    (B, units, …), A the decay rates; T_total the prompt length."""

    S: list[torch.Tensor]
    M: list[torch.Tensor]
    A: list[torch.Tensor]
    T_total: int

    @property
    def n_layers(self) -> int:
        return len(self.M)

    @property
    def n_units(self) -> int:
        return sum(m.shape[1] for m in self.M)


@dataclass
class ChannelStats(LayerStats):
    """Mamba-1 channels. S: list of (E,) float64 Σ_t Δ_t (averaged over the prompts); M: list of (B, E, N)
    cumulative decays; A: list of (E, N)."""

    @property
    def n_channels(self) -> int:
        return self.n_units

    def scores(self, tau: float) -> list[torch.Tensor]:
        return [P_tau(m, tau) for m in self.M]


def channel_stats(model, prompts: torch.Tensor, *, query_len: int = 2, first: int = 1) -> ChannelStats:
    """Run ``prompts`` (B, T) (context then ``query_len`` query tokens) and compute Eq. (3) per layer."""
    deltas = record_deltas(model, prompts)
    As = layer_A(model)
    rng = product_range(prompts.shape[1], query_len, first)
    M = [closed_form_M(d, a, rng) for d, a in zip(deltas, As)]
    S = [d[..., rng].sum(-1).mean(0) for d in deltas]
    return ChannelStats(S=S, M=M, A=As, T_total=prompts.shape[1])


def identify(stats: ChannelStats, tau: float = 0.7, p: float = 0.7) -> list[torch.Tensor]:
    """Long-term channels of every layer: indices i with P^{(i)}(τ) > p (strict), one LongTensor per layer."""
    check_unit("tau", tau)
    check_unit("p", p)
    return [torch.nonzero(s > p).flatten() for s in stats.scores(tau)]


def check_unit(name: str, v) -> None:
    """ValueError naming ``name`` unless ``v`` is a number in [0, 1]: the thresholds τ and p of the long-term
    channel and head scores (App. D and F of paper 004), checked here and in ``analysis.heads``."""
    if not (isinstance(v, (int, float)) and 0 <= v <= 1):
        raise ValueError(f"{name} must be a number in [0, 1], got {v!r}.")


def rank_layers(channels: list[torch.Tensor]) -> list[int]:
    """Layers ordered by their number of long-term channels, descending; ties → lower index first."""
    counts = [len(c) for c in channels]
    return sorted(range(len(counts)), key=lambda i: (-counts[i], i))


def target_set(channels: list[torch.Tensor], top_n: int) -> dict[int, torch.Tensor]:
    """The channels of the ``top_n`` densest layers: {layer: channel indices} (the ablation targets)."""
    if isinstance(top_n, bool) or not isinstance(top_n, int) or not 1 <= top_n <= len(channels):
        raise ValueError(f"top_n must be an integer in 1..{len(channels)} (the number of layers), got {top_n!r}.")
    return {layer: channels[layer] for layer in rank_layers(channels)[:top_n] if len(channels[layer])}


def count_grid(stats: ChannelStats, grid=GRID) -> np.ndarray:
    """Number of long-term channels (all layers) for every (p, τ): array [i_p, i_τ]."""
    out = np.zeros((len(grid), len(grid)), dtype=np.int64)
    for i, p in enumerate(grid):
        for j, tau in enumerate(grid):
            out[i, j] = sum(len(c) for c in identify(stats, tau, p))
    return out
