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

Per-state variant (:func:`state_stats`, :func:`slow_states`). Eq. (3) ignores ``B̄`` because it does not
accumulate, so a channel whose gate is shut (Δ ≈ 0) scores as long-term while writing almost nothing.
Eq. (2) says what the state at ``T`` holds from step ``t``: the term ``(Π_{k=t+1..T} Ā_k) B̄_t x_t``. Per
state ``n`` of channel ``i`` (Euler ``B̄_t = Δ_t B_t`` as mamba_ssm) its two factors are::

    keep_{t,i,n}  = Π_{k=t+1..T} exp(Δ_k^{(i)} A_{i,n}) = exp(A_{i,n} Σ_{k>t} Δ_k^{(i)})   (persistence)
    W_{t,i,n}     = |Δ_t^{(i)} B_{t,n} x_t^{(i)}|                                          (write)

over the same token range as Eq. (3). Step ``t`` is *slow and writing* for (i, n) iff keep ≥ τ (at least
τ of the write reaches the query: Eq. (4)'s τ applied to the write's own suffix of Eq. (3)) and
W ≥ ω · median W (the layer's median over prompts, channels, states and steps). The per-state score, the
analogue of Eq. (4) over steps instead of states::

    Q^{(i,n)} = |{t : keep_{t,i,n} ≥ τ and W_{t,i,n} ≥ ω · med W}| / T'     ∈ [0, 1]   (averaged over prompts)

with ties ranked by the retained write ``R^{(i,n)} = Σ_t keep_{t,i,n} W_{t,i,n}`` (the size of Eq. (2)'s
sum at ``T``, up to signs). A closed gate has keep ≈ 1 but W below the floor (Q ≈ 0); a fast state writes
but keeps < τ of all but its last few writes; a slow state of a writing channel scores high.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "ChannelStats",
    "LayerStats",
    "P_tau",
    "StateStats",
    "channel_stats",
    "closed_form_M",
    "count_grid",
    "explicit_product_M",
    "identify",
    "layer_A",
    "product_range",
    "rank_layers",
    "record_deltas",
    "record_internals",
    "s_threshold",
    "slow_states",
    "state_stats",
    "target_set",
    "GRID",
    "SLOW_TAU",
    "WRITE_FLOOR",
]

GRID = (0.5, 0.7, 0.9)
SLOW_TAU = 0.7  # keep ≥ τ: the paper's main τ (§4.2), here for the share of one write that reaches the query
WRITE_FLOOR = 1.0  # W ≥ ω · median W: a typical write or more; closed gates write 5–9× less and fall below


def product_range(T_total: int, query_len: int = 2, first: int = 1) -> slice:
    """0-based token indices of the product of Eq. (3): ``first … T_total − query_len − 1``."""
    if T_total - query_len <= first:
        raise ValueError(
            f"the prompt of length {T_total} has no context tokens after index {first} "
            f"once the {query_len} query tokens are dropped."
        )
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
    Mamba-2 heads in :mod:`mamba_recall.chapters.ch4_primacy_recency.pipelines.heads`): S cumulative steps Σ_t Δ_t, M cumulative decays
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


# --------------------------------------------------------------------- per-state variant (slow, writing states)


@dataclass
class StateStats(ChannelStats):
    """Per-state statistics of one identification pass (Mamba-1), see the module docstring. Besides the
    :class:`ChannelStats` fields (S (E,), M (B, E, N), A; so :func:`identify` works on it), per layer: Q (E, N) the
    slow-and-writing share of steps, R (E, N) the retained write Σ_t keep_t W_t, W (E, N) the mean write
    over prompts and steps (all three averaged over the prompts); floor the write floor ω · median W of the
    layer; tau and omega the thresholds used."""

    Q: list[torch.Tensor]
    R: list[torch.Tensor]
    W: list[torch.Tensor]
    floor: list[float]
    tau: float
    omega: float

    @property
    def n_states(self) -> int:
        return sum(q.numel() for q in self.Q)

    def ranking(self, layer: int) -> torch.Tensor:
        """(E·N, 2) (channel, state) pairs of ``layer``, by Q descending, ties by R descending."""
        q, r = self.Q[layer].flatten(), self.R[layer].flatten()
        order = torch.argsort(r, descending=True, stable=True)
        order = order[torch.argsort(q[order], descending=True, stable=True)]
        N = self.Q[layer].shape[1]
        return torch.stack([order // N, order % N], dim=1)


def _state_layer(it, A: torch.Tensor, rng: slice, tau: float, omega: float):
    """One layer's Q, R, W (E, N) and write floor from its internals (Δ, x (B, E, T), B (B, N, T)), A (E, N)."""
    delta = it.delta.detach().double()[..., rng]  # (B, E, T')
    x = it.x.detach().double()[..., rng]  # (B, E, T')
    Bm = it.B.detach().double()[..., rng]  # (B, N, T')
    suffix = delta.flip(-1).cumsum(-1).flip(-1) - delta  # Σ_{k>t} Δ_k, (B, E, T')
    keep = torch.exp(suffix[..., None] * A[None, :, None, :])  # (B, E, T', N)
    W = (delta * x).abs()[..., None] * Bm.abs().transpose(1, 2)[:, None]  # |Δ_t x_t^{(i)}| |B_{t,n}|, (B, E, T', N)
    floor = omega * float(W.median())
    Q = ((keep >= tau) & (W >= floor)).double().mean(dim=(0, 2))  # (E, N)
    R = (keep * W).sum(2).mean(0)
    return Q, R, W.mean(dim=(0, 2)), floor


def state_stats(
    model,
    prompts: torch.Tensor,
    *,
    tau: float = SLOW_TAU,
    omega: float = WRITE_FLOOR,
    query_len: int = 2,
    first: int = 1,
) -> StateStats:
    """Per-state slow-and-writing statistics of ``prompts`` (B, T) over the token range of Eq. (3).

    Mamba-1 only (a Mamba-2 head has one decay for all its states: use :mod:`mamba_recall.chapters.ch4_primacy_recency.pipelines.heads`).
    ``tau`` ∈ [0, 1] the share of a write that must reach the query, ``omega`` ≥ 0 the write floor in units
    of the layer's median write."""
    check_unit("tau", tau)
    if not (isinstance(omega, (int, float)) and math.isfinite(omega) and omega >= 0):
        raise ValueError(f"omega must be a finite number ≥ 0 (the write floor in layer medians), got {omega!r}.")
    if not all(hasattr(layer.mixer, "d_state") and layer.mixer.A_log.dim() == 2 for layer in model.backbone.layers):
        raise ValueError(
            "state_stats needs Mamba-1 layers (A of shape (E, N)); for Mamba-2 heads use mamba_recall.chapters.ch4_primacy_recency.pipelines.heads."
        )
    internals = record_internals(model, prompts)
    As = layer_A(model)
    rng = product_range(prompts.shape[1], query_len, first)
    Q, R, W, floor = zip(*(_state_layer(it, a, rng, tau, omega) for it, a in zip(internals, As)))
    deltas = [it.delta.detach().double() for it in internals]
    return StateStats(
        S=[d[..., rng].sum(-1).mean(0) for d in deltas],
        M=[closed_form_M(d, a, rng) for d, a in zip(deltas, As)],
        A=As,
        T_total=prompts.shape[1],
        Q=list(Q),
        R=list(R),
        W=list(W),
        floor=list(floor),
        tau=float(tau),
        omega=float(omega),
    )


def slow_states(stats: StateStats, counts: dict[int, int]) -> dict[int, torch.Tensor]:
    """The top ``counts[layer]`` slow-writing states of each layer ({layer: count}, e.g. layer-matched to a
    channel target set: ``{l: len(c) * N}`` for the same number of Ā entries, ``{l: len(c)}`` for the same
    count) → {layer: (k, 2) LongTensor of (channel, state)}, the form :func:`interventions.ablate` takes."""
    out = {}
    for layer, k in counts.items():
        if not 0 <= int(layer) < stats.n_layers:
            raise ValueError(f"layer {layer} does not exist; the model has {stats.n_layers} layers (0-based).")
        size = stats.Q[layer].numel()
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= size:
            raise ValueError(f"counts[{layer}] must be an integer in 0..{size} (E·N states), got {k!r}.")
        out[int(layer)] = stats.ranking(int(layer))[: int(k)]
    return out
