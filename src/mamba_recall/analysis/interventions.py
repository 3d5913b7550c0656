r"""Interventions and statistics of paper 004: Ā ablations, U(0,1) state init, recall by position.

Ablation (paper §4.2, App. D): for targeted (layer ℓ, channel i) set ``Ā_t^{(ℓ,i)} ← 0`` (all N states) at
chosen 0-based token indices ``t``; then ``h_t = B̄_t x_t`` there, i.e. the channel forgets everything
before ``t``. "First triplet" = indices 1–4 (``r_1 o_1 . s_2``); "all" = every step (the channel
becomes memoryless). Implemented with the ``abar_hook`` of :class:`~mamba_recall.models.mamba.Mamba`
(a bool mask (1, E, L) per layer), so it works unchanged on any mamba_ssm-named checkpoint. On a
Mamba-2 model (:mod:`mamba_recall.models.mamba2`) the units are *heads*: the mask is (1, H, L), the
width is the mixer's ``ablation_units`` and "channels" below means head indices.

State ablation (Mamba-1 only; extends the above to single states): for targeted (layer ℓ, channel i,
state n) set ``Ā_{t,i,n} ← 0`` at the chosen steps, so ``h_{t,i,n} = Δ_t B_{t,n} x_{t,i}`` there and the
other N − 1 states of channel i keep their memory (a (1, E, L, N) mask). A target is then a (k, 2) list
of (channel, state) pairs or an (E, N) bool mask per layer (:func:`state_targets_mask`); ablating all N
states of a channel equals ablating the channel bit for bit (tests/analysis/test_slow_states.py).

Recall by position uses **prefix-state evaluation**: each context is run once
(with its ablation / initial state), the per-layer :class:`LayerState` (conv + SSM) is kept, and
every query ``s_k r_k`` (k = 1..L) continues from it — exact for a recurrent model (tested against
the full forward) and L× cheaper, with a paired design across positions.

Statistics, all from :mod:`scipy.stats` (tests/analysis/test_stats.py checks them against textbook values and
against the numbers of the committed bundles): 95 % Wilson interval (:func:`wilson`), percentile paired
bootstrap over prompts with 2,000 resamples (:func:`paired_bootstrap`), McNemar's exact test for paired
binary outcomes (:func:`mcnemar_p`), Welch's t-test (:func:`welch_test`), Spearman's ρ (:func:`spearman`)
and Pearson's χ² goodness of fit (:func:`chi2_uniform_p`).
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from ..models.mamba import LayerState, MambaLMHeadModel
from ..models.mamba2 import Mamba2
from ..tasks.serial_recall import RecallContexts, query_tokens
from ..tasks.transfer import labelled_accuracy

__all__ = [
    "ablate",
    "ablation_steps",
    "chi2_uniform_p",
    "first_position_drops",
    "first_triplet_steps",
    "is_state_target",
    "labelled_scores",
    "load_mamba_ssm_checkpoint",
    "mcnemar_p",
    "paired_bootstrap",
    "random_channels",
    "random_states",
    "recall_by_position",
    "spearman",
    "state_ablation_effects",
    "state_targets_mask",
    "summary",
    "uniform_init_states",
    "welch_test",
    "wilson",
]


def first_triplet_steps(triple: int = 1, bos: bool = False) -> list[int]:
    """0-based token indices that erase triple ``i`` (1-based): 4(i−1)+1 … 4i (+1 with a BOS)."""
    off = 1 if bos else 0
    return [4 * (triple - 1) + j + off for j in range(1, 5)]


def ablation_steps(steps, length: int, offset: int = 0) -> torch.Tensor:
    """(length,) bool mask over the indices ``offset … offset+length−1`` of the sequence for ``steps``
    (``"all"``, ``None`` or an iterable of absolute 0-based token indices)."""
    if steps is None:
        return torch.zeros(length, dtype=torch.bool)
    if isinstance(steps, str):
        if steps != "all":
            raise ValueError(f"steps must be 'all', None or a list of token indices, got {steps!r}.")
        return torch.ones(length, dtype=torch.bool)
    idx = torch.as_tensor(list(steps), dtype=torch.long) - offset
    mask = torch.zeros(length, dtype=torch.bool)
    idx = idx[(idx >= 0) & (idx < length)]
    mask[idx] = True
    return mask


def is_state_target(target) -> bool:
    """True if a layer's ablation target names (channel, state) pairs — a 2-D tensor/array, an (E, N) bool
    mask or (k, 2) indices, or a list of pairs — rather than channel indices (1-D)."""
    if isinstance(target, (torch.Tensor, np.ndarray)):
        return target.ndim == 2
    return len(target) > 0 and all(isinstance(t, (tuple, list)) for t in target)


def state_targets_mask(target, E: int, N: int) -> torch.Tensor:
    """The (E, N) bool mask of a layer's state target: an (E, N) bool mask as is, or (k, 2) (channel, state)
    pairs (tensor, array or list of tuples) scattered into one. Out-of-range indices raise."""
    t = torch.as_tensor(np.asarray(target) if not isinstance(target, torch.Tensor) else target)
    if t.dtype == torch.bool:
        if tuple(t.shape) != (E, N):
            raise ValueError(f"a bool state mask must be (E, N) = {(E, N)} (d_inner, d_state), got {tuple(t.shape)}.")
        return t.cpu()
    t = t.long() if t.numel() else t.long().reshape(0, 2)
    if t.ndim != 2 or t.shape[1] != 2:
        raise ValueError(f"state targets must be (k, 2) (channel, state) pairs, got shape {tuple(t.shape)}.")
    bad = (t[:, 0] < 0) | (t[:, 0] >= E) | (t[:, 1] < 0) | (t[:, 1] >= N)
    if bool(bad.any()):
        raise ValueError(
            f"(channel, state) pair {tuple(t[bad][0].tolist())} is out of range: channels 0..{E - 1}, "
            f"states 0..{N - 1}."
        )
    mask = torch.zeros(E, N, dtype=torch.bool)
    mask[t[:, 0], t[:, 1]] = True
    return mask


class _Ablation:
    """State of an active :func:`ablate` context: ``offset`` = absolute index of the next call's first token."""

    def __init__(self, model, channels, steps):
        self.model, self.channels, self.steps, self.offset = model, channels, steps, 0

    def hook(self, layer: int, width: int, n_state: int | None = None):
        ch = self.channels.get(layer)
        if ch is None or len(ch) == 0:
            return None
        if is_state_target(ch):
            if n_state is None:
                raise ValueError(
                    f"layer {layer}: (channel, state) targets need a Mamba-1 mixer (one Ā per state); "
                    "a Mamba-2 head shares one decay over its states — target head indices instead."
                )
            smask = state_targets_mask(ch, width, n_state)  # (E, N)
            if not bool(smask.any()):
                return None

            def fn_state(seqlen):
                tmask = ablation_steps(self.steps, seqlen, self.offset)
                return (smask[:, None, :] & tmask[None, :, None])[None]  # (1, E, L, N)

            return fn_state
        chmask = torch.zeros(width, dtype=torch.bool)
        chmask[torch.as_tensor(ch, dtype=torch.long)] = True

        def fn(seqlen):
            tmask = ablation_steps(self.steps, seqlen, self.offset)
            return (chmask[:, None] & tmask[None, :])[None]  # (1, E, L)

        return fn


@contextlib.contextmanager
def ablate(model, channels: dict[int, torch.Tensor] | None, steps="all"):
    """Within the block, zero Ā of ``channels`` ({layer: channel indices}) at ``steps`` in every forward.

    A layer's value may instead name single states (Mamba-1): a (k, 2) LongTensor / list of (channel, state)
    pairs, or an (E, N) bool mask; then only those Ā_{t,i,n} are zeroed (see the module docstring).
    ``steps``: ``"all"``, or absolute 0-based token indices (e.g. :func:`first_triplet_steps`). For
    prefix-state evaluation set ``handle.offset`` to the absolute index of a continuation's first token
    (:func:`recall_by_position` does this). An empty/None ``channels`` changes nothing (bit-identical).
    """
    layers = model.backbone.layers
    channels = channels or {}
    for layer in channels:
        if not 0 <= int(layer) < len(layers):
            raise ValueError(f"layer {layer} does not exist; the model has {len(layers)} layers (0-based).")
    handle = _Ablation(model, {int(k): v for k, v in channels.items()}, steps)
    saved = [blk.mixer.abar_hook for blk in layers]
    try:
        for i, blk in enumerate(layers):
            hook = handle.hook(
                i,
                getattr(blk.mixer, "ablation_units", blk.mixer.d_inner),  # heads for Mamba-2
                None if isinstance(blk.mixer, Mamba2) else blk.mixer.d_state,
            )
            if hook is not None:
                blk.mixer.abar_hook = hook
        yield handle
    finally:
        for blk, h in zip(layers, saved):
            if h is None:
                blk.mixer.__dict__.pop("abar_hook", None)
            else:
                blk.mixer.abar_hook = h


@torch.no_grad()
def labelled_scores(model, sets: dict, channels=None, steps="all", *, batch_size: int = 128, device="cpu") -> dict:
    """Per set {name: (inputs (n, T), labels (n, T))}, the (n,) per-example accuracy over the labelled
    positions (:func:`~mamba_recall.tasks.transfer.labelled_accuracy`), with Ā of ``channels``
    ({layer: channel indices}) zeroed at ``steps`` — every step by default (Table 1, paper §4.2)."""
    was = model.training
    model.eval()
    out = {}
    try:
        with ablate(model, channels, steps):
            for name, (x, y) in sets.items():
                out[name] = np.concatenate(
                    [
                        labelled_accuracy(model(x[a : a + batch_size].to(device)).cpu(), y[a : a + batch_size])
                        for a in range(0, len(x), batch_size)
                    ]
                )
    finally:
        model.train(was)
    return out


def uniform_init_states(
    model,
    layer: int,
    batch: int,
    seed: int = 42,
    low: float = 0.0,
    high: float = 1.0,
    kind: str = "uniform",
    scale: float = 1.0,
) -> list[LayerState]:
    """Initial per-layer states for :func:`recall_by_position`: h_0 = scale · u at ``layer``, zeros elsewhere.

    Paper §4.2, App. G (Fig. 5a): one layer's SSM state starts from U(0, 1) instead of 0. ``u`` is drawn
    once per call with the RNG re-seeded by ``seed`` (the same draw for every batch row, as the paper's code
    runs one prompt at a time; the same seed pairs the draws across layers): ``kind="uniform"``:
    u ~ U(low, high); ``"normal"``: u ~ N(0, 1); ``"constant"``: u = high. ``scale`` s > 0 multiplies the
    draw, so the defaults give U(0, s) — s = 1 (the default) is the paper's U(0, 1), bit for bit the draw
    this function has always made; sweep s down to the model's typical |h| (e.g. the mean |ssm| of the
    states ``model(x, return_states=True)`` returns) to see whether the effect is one of scale. Conv
    states are zero.

    Shapes, per layer (one :class:`LayerState` each; ``E = d_inner``, ``N = d_state``, ``K = d_conv``):

    - Mamba-1 mixer (:class:`~mamba_recall.models.mamba.Mamba`): ``ssm`` (batch, E, N), ``conv``
      (batch, E, K − 1); u is drawn as (E, N).
    - Mamba-2 mixer (:class:`~mamba_recall.models.mamba2.Mamba2`, ``H = nheads``, ``P = headdim``,
      E = H·P): ``ssm`` (batch, H, P, N), ``conv`` (batch, E + 2N, K − 1) (its ``conv_dim``); u is drawn
      as (E, N) and viewed as (H, P, N), so channel e = h·P + p gets the value a Mamba-1 layer of the
      same E and N would get for channel e.

    dtypes: ``ssm`` that of ``A_log``, ``conv`` that of ``in_proj.weight`` (the draw is in float64, then cast).
    """
    layers = model.backbone.layers
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer {layer} does not exist; the model has {len(layers)} layers (0-based).")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be a positive int (the number of prompts; 1 broadcasts), got {batch!r}.")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(
            f"scale must be a finite number > 0 (U(0, scale)); got {scale!r} — for a zero state pass init_states=None."
        )
    if kind not in ("uniform", "normal", "constant"):
        raise ValueError(f"unknown kind {kind!r}; use 'uniform', 'normal' or 'constant'.")
    out = []
    for i, blk in enumerate(layers):
        mix = blk.mixer
        ref = mix.A_log
        if isinstance(mix, Mamba2):
            ssm_shape = (mix.nheads, mix.headdim, mix.d_state)  # (H, P, N)
            conv_width = mix.conv_dim  # E + 2N: x, B and C pass the conv
        else:
            ssm_shape = (mix.d_inner, mix.d_state)  # (E, N)
            conv_width = mix.d_inner
        ssm = torch.zeros(batch, *ssm_shape, dtype=ref.dtype, device=ref.device)
        if i == layer:
            g = torch.Generator().manual_seed(seed)
            E, N = mix.d_inner, mix.d_state
            if kind == "uniform":
                h0 = low + (high - low) * torch.rand(E, N, generator=g, dtype=torch.float64)
            elif kind == "normal":
                h0 = torch.randn(E, N, generator=g, dtype=torch.float64)
            else:
                h0 = torch.full((E, N), float(high), dtype=torch.float64)
            ssm = ssm + (scale * h0).reshape(ssm_shape).to(ref.dtype)
        conv = torch.zeros(batch, conv_width, mix.d_conv - 1, dtype=mix.in_proj.weight.dtype, device=ref.device)
        out.append(LayerState(conv=conv, ssm=ssm))
    return out


@torch.no_grad()
def recall_by_position(
    model,
    ctx: RecallContexts,
    *,
    channels=None,
    steps="all",
    init_states=None,
    distractors: torch.Tensor | None = None,
    batch_size: int = 256,
    device="cpu",
) -> np.ndarray:
    """(n, L) bool: is ``o_k`` the argmax after ``context [distractors] s_k r_k``, for every k.

    Prefix-state evaluation: the context (+ distractors) is run once per row under the ablation of
    ``channels`` at ``steps`` (absolute token indices; the query steps are ablated only if
    ``steps == "all"``) and from ``init_states`` (a per-layer :class:`LayerState` list with batch 1 or n,
    default zeros); each of the L queries then continues from the saved states.
    """
    was = model.training
    model.eval()
    n, L = ctx.subjects.shape
    prefix = ctx.tokens if distractors is None else torch.cat([ctx.tokens, distractors], dim=1)
    T0 = prefix.shape[1]
    out = np.zeros((n, L), dtype=bool)
    try:
        with ablate(model, channels, steps) as handle:
            for a in range(0, n, batch_size):
                b = min(n, a + batch_size)
                rows = prefix[a:b].to(device)
                st = None
                if init_states is not None:
                    st = [
                        type(s)(
                            s.conv.expand(b - a, *s.conv.shape[1:]).contiguous()
                            if s.conv.shape[0] == 1
                            else s.conv[a:b],
                            s.ssm.expand(b - a, *s.ssm.shape[1:]).contiguous() if s.ssm.shape[0] == 1 else s.ssm[a:b],
                        )
                        for s in init_states
                    ]
                handle.offset = 0
                _, states = model(rows, states=st, return_states=True)
                handle.offset = T0
                m = b - a
                rep = torch.arange(m, device=rows.device).repeat_interleave(L)
                q_states = [s.index_select(rep) for s in states]
                ks = torch.arange(1, L + 1).repeat(m)
                sub = RecallContexts(
                    ctx.tokens[a:b],
                    ctx.subjects[a:b],
                    ctx.objects[a:b],
                    ctx.relations[a:b],
                    L,
                    ctx.variant,
                    ctx.bos,
                    ctx.vocab,
                )
                rep_ctx = RecallContexts(
                    sub.tokens.repeat_interleave(L, 0),
                    sub.subjects.repeat_interleave(L, 0),
                    sub.objects.repeat_interleave(L, 0),
                    sub.relations.repeat_interleave(L, 0),
                    L,
                    ctx.variant,
                    ctx.bos,
                    ctx.vocab,
                )
                q = query_tokens(rep_ctx, ks).to(rows.device)
                logits = model(q, states=q_states)
                pred = logits[:, -1].argmax(-1).cpu()
                ans = rep_ctx.objects.gather(1, (ks - 1)[:, None])[:, 0]
                out[a:b] = (pred == ans).numpy().reshape(m, L)
    finally:
        model.train(was)
    return out


def _counts(name: str, v) -> np.ndarray:
    """``v`` as an int64 array, refusing non-integral values (a proportion's counts are whole numbers)."""
    arr = np.asarray(v)
    if arr.dtype == bool or np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    arr = arr.astype(float)
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ValueError(f"wilson needs whole-number counts; {name} = {v!r} is not (pass e.g. correct.sum(0)).")
    return arr.astype(np.int64)


def wilson(successes, n, z: float = 1.959963984540054):
    r"""Wilson score interval (lower, upper) for ``successes`` out of ``n`` (int arrays broadcast; default 95 %).

    With :math:`\hat p = s/n` and :math:`z = \Phi^{-1}(0.975)` (Wilson 1927; Newcombe 1998, method 3)::

        centre = (p̂ + z²/2n) / (1 + z²/n),   half = z/(1 + z²/n) · √(p̂(1−p̂)/n + z²/4n²)

    computed by ``scipy.stats.binomtest(s, n).proportion_ci(method="wilson")`` at confidence level
    2Φ(z) − 1 (exactly 0.95 for the default z); the bounds are 0 at s = 0 and 1 at s = n. Scalars in →
    ``np.float64`` out, arrays in → arrays of the broadcast shape.
    """
    s, m = np.broadcast_arrays(_counts("successes", successes), _counts("n", n))
    if np.any(m <= 0) or np.any(s < 0) or np.any(s > m):
        raise ValueError("wilson needs 0 <= successes <= n and n > 0.")
    if not z > 0:
        raise ValueError(f"z must be > 0 (1.96 for a 95 % interval), got {z!r}.")
    level = float(1 - 2 * stats.norm.sf(z))
    lo, hi = np.empty(s.shape), np.empty(s.shape)
    for i in np.ndindex(s.shape):
        ci = stats.binomtest(int(s[i]), int(m[i])).proportion_ci(confidence_level=level, method="wilson")
        lo[i], hi[i] = ci.low, ci.high
    return (lo[()], hi[()]) if s.ndim == 0 else (lo, hi)


def summary(correct: np.ndarray) -> dict:
    """acc(k), Wilson bands, middle third K_mid = {k : L/3 < k ≤ 2L/3}, primacy, recency, U-depth."""
    n, L = correct.shape
    acc = correct.mean(0)
    lo, hi = wilson(correct.sum(0), n)
    k = np.arange(1, L + 1)
    mid = (k > L / 3) & (k <= 2 * L / 3)
    mid_acc = float(acc[mid].mean())
    mlo, mhi = wilson(correct[:, mid].sum(), n * mid.sum())
    return {
        "L": L,
        "n": n,
        "acc": acc,
        "lo": lo,
        "hi": hi,
        "mid": mid_acc,
        "mid_lo": float(mlo),
        "mid_hi": float(mhi),
        "primacy": float(acc[0] - mid_acc),
        "recency": float(acc[-1] - mid_acc),
        "u_depth": float(0.5 * (acc[0] + acc[-1]) - mid_acc),
    }


def paired_bootstrap(a: np.ndarray, b: np.ndarray, stat=np.mean, n_boot: int = 2000, seed: int = 0):
    """Paired percentile bootstrap over prompts of ``stat(a) − stat(b)``: (estimate, lower 2.5 %, upper 97.5 %).

    a, b: (n,) one value per prompt, row i of both from the same prompt. Each of the ``n_boot`` resamples
    draws n prompt indices with replacement (the same indices for ``a`` and ``b``, which keeps the pairing)
    and recomputes the difference; the interval is the 2.5 % and 97.5 % quantiles of those differences
    (linear interpolation). ``scipy.stats.bootstrap(paired=True, method="percentile")`` with the legacy
    ``numpy.random.RandomState(seed)``, whose index draws (``randint(0, n, (n_boot, n))``) are the ones
    this function has always made, so committed intervals are reproduced exactly.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(
            f"paired_bootstrap needs one value per prompt, 1-D a and b; got shapes {a.shape} and "
            f"{b.shape} (average each prompt's row first, e.g. a.mean(1))."
        )
    if a.shape[0] != b.shape[0]:
        raise ValueError("paired_bootstrap needs the same number of rows (the same prompts) in a and b.")
    if a.shape[0] < 2:
        raise ValueError(f"paired_bootstrap needs at least 2 prompts, got {a.shape[0]}.")
    res = stats.bootstrap(
        (a, b),
        lambda x, y: stat(x) - stat(y),
        paired=True,
        vectorized=False,
        n_resamples=n_boot,
        confidence_level=0.95,
        method="percentile",
        random_state=np.random.RandomState(seed),
    )
    ci = res.confidence_interval
    return float(stat(a) - stat(b)), float(ci.low), float(ci.high)


def mcnemar_p(a: np.ndarray, b: np.ndarray) -> float:
    """Exact two-sided McNemar test for paired booleans ``a``, ``b`` (any shape, flattened and paired).

    Only the discordant pairs count: n₀₁ = #(¬a ∧ b), n₁₀ = #(a ∧ ¬b). Under H₀ (same success rate)
    n₁₀ ~ Binomial(n₀₁ + n₁₀, ½), so p = min(1, 2 · P[X ≤ min(n₀₁, n₁₀)]) —
    ``scipy.stats.binomtest(min(n01, n10), n01 + n10, 0.5).pvalue``; 1 when there is no discordant pair.
    """
    a, b = np.asarray(a, bool).ravel(), np.asarray(b, bool).ravel()
    if a.shape != b.shape:
        raise ValueError(f"mcnemar_p needs paired outcomes of the same size, got {a.size} and {b.size}.")
    n01, n10 = int((~a & b).sum()), int((a & ~b).sum())
    if n01 + n10 == 0:
        return 1.0
    return float(stats.binomtest(min(n01, n10), n01 + n10, 0.5).pvalue)


def random_channels(
    model, count_per_layer: dict[int, int] | int, *, seed: int = 42, exclude: dict[int, torch.Tensor] | None = None
) -> dict[int, torch.Tensor]:
    """Random control channel sets.

    ``count_per_layer`` an int → *global* control: that many (layer, channel) pairs uniformly without
    replacement over the whole model (the paper's code). A dict {layer: count} → *layer-matched*
    control: that many channels in each of those layers, drawn from the channels not in ``exclude``.
    """
    rng = np.random.RandomState(seed)
    widths = [getattr(blk.mixer, "ablation_units", blk.mixer.d_inner) for blk in model.backbone.layers]
    exclude = exclude or {}
    if isinstance(count_per_layer, (int, np.integer)):
        total = sum(widths)
        if not 0 <= count_per_layer <= total:
            raise ValueError(f"count must be in 0..{total} (all channels), got {count_per_layer}.")
        flat = rng.choice(total, size=int(count_per_layer), replace=False)
        offsets = np.cumsum([0] + widths)
        out = {}
        for layer in range(len(widths)):
            sel = flat[(flat >= offsets[layer]) & (flat < offsets[layer + 1])] - offsets[layer]
            if len(sel):
                out[layer] = torch.as_tensor(np.sort(sel), dtype=torch.long)
        return out
    out = {}
    for layer, c in count_per_layer.items():
        pool = np.setdiff1d(np.arange(widths[layer]), np.asarray(exclude.get(layer, []), dtype=np.int64))
        if c > len(pool):
            raise ValueError(f"layer {layer} has only {len(pool)} channels outside the excluded set; asked {c}.")
        out[layer] = torch.as_tensor(np.sort(rng.choice(pool, size=int(c), replace=False)), dtype=torch.long)
    return out


def random_states(
    model, count_per_layer: dict[int, int], *, seed: int = 42, exclude: dict[int, torch.Tensor] | None = None
) -> dict[int, torch.Tensor]:
    """Layer-matched random control for a state target: ``count_per_layer[layer]`` (channel, state) pairs
    per layer, uniformly without replacement from the E·N pairs of that layer outside ``exclude`` (a state
    target per layer) → {layer: (k, 2) LongTensor}, sorted (Mamba-1 layers)."""
    rng = np.random.RandomState(seed)
    layers = model.backbone.layers
    exclude = exclude or {}
    out = {}
    for layer, c in count_per_layer.items():
        if not 0 <= int(layer) < len(layers) or isinstance(layers[int(layer)].mixer, Mamba2):
            raise ValueError(f"layer {layer} is not a Mamba-1 layer of this model ({len(layers)} layers, 0-based).")
        mix = layers[int(layer)].mixer
        E, N = mix.d_inner, mix.d_state
        ex = exclude.get(layer)
        taken = state_targets_mask(ex, E, N).flatten() if ex is not None and len(ex) else torch.zeros(E * N, dtype=bool)
        pool = np.flatnonzero(~taken.numpy())
        if not 0 <= c <= len(pool):
            raise ValueError(
                f"layer {layer} has {len(pool)} (channel, state) pairs outside the excluded set; asked {c}."
            )
        flat = np.sort(rng.choice(pool, size=int(c), replace=False))
        out[int(layer)] = torch.as_tensor(np.stack([flat // N, flat % N], axis=1).reshape(-1, 2), dtype=torch.long)
    return out


def state_ablation_effects(
    model,
    ctx: RecallContexts,
    targets: dict,
    steps,
    *,
    n_random: int = 5,
    seed: int = 42,
    channels: dict | None = None,
    base: np.ndarray | None = None,
    batch_size: int = 256,
    device="cpu",
) -> dict:
    """Recall by position (each (n, L) bool, :func:`recall_by_position` on ``ctx``) under: no ablation
    (``base``, or the one given), the state target ``targets`` ({layer: (k, 2) (channel, state)}),
    ``n_random`` layer-matched random state sets (:func:`random_states`, seeds ``seed … seed+n_random−1``,
    same count per layer, outside ``targets``) and, if given, a channel target ``channels`` for comparison —
    all with Ā zeroed at ``steps`` (e.g. :func:`first_triplet_steps` or ``"all"``)."""
    if isinstance(n_random, bool) or not isinstance(n_random, int) or n_random < 0:
        raise ValueError(f"n_random must be an integer ≥ 0 (the number of random draws), got {n_random!r}.")

    def run(t):
        return recall_by_position(model, ctx, channels=t, steps=steps, batch_size=batch_size, device=device)

    base = recall_by_position(model, ctx, batch_size=batch_size, device=device) if base is None else base
    counts = {int(k): len(v) for k, v in targets.items()}
    lm = [run(random_states(model, counts, seed=seed + r, exclude=targets)) for r in range(n_random)]
    return {
        "base": base,
        "targeted": run(targets),
        "layer_matched": lm,
        "channels": None if channels is None else run(channels),
        "count": counts,
    }


def first_position_drops(eff: dict) -> dict:
    """δ(k) = acc_base(k) − acc(k) for each condition of an effects dict (:func:`state_ablation_effects`):
    δ(1) under "targeted", "channels" (None if absent), "layer_matched" (list) and "layer_matched_mean";
    the same keys with the suffix "_k3" hold mean_{k≥3} δ(k), how much the ablation also costs the later
    positions (a primacy-specific ablation keeps it near 0, as in Fig. 3b); "base1" = acc_base(1)."""
    base = eff["base"].mean(0)

    def d(c, later=False):
        delta = base - c.mean(0)
        return float(delta[2:].mean()) if later else float(delta[0])

    out = {"base1": float(base[0])}
    for suffix, later in (("", False), ("_k3", True)):
        lm = [d(r, later) for r in eff["layer_matched"]]
        out.update(
            {
                "targeted" + suffix: d(eff["targeted"], later),
                "channels" + suffix: None if eff.get("channels") is None else d(eff["channels"], later),
                "layer_matched" + suffix: lm,
                "layer_matched_mean" + suffix: float(np.mean(lm)) if lm else float("nan"),
            }
        )
    return out


def load_mamba_ssm_checkpoint(path, *, backend="auto", device="cpu") -> MambaLMHeadModel:
    """A reader's own mamba_ssm-format model: a directory with ``config.json`` (``d_model``, ``n_layer``,
    ``vocab_size``, optional ``ssm_cfg``, ``pad_vocab_size_multiple``, ``tie_embeddings``) and
    ``pytorch_model.bin`` (mamba_ssm's ``save_pretrained``), e.g. ``state-spaces/mamba-130m``.

    Only Mamba-1 mixers without MLP (``d_intermediate = 0``) are supported; Falcon-Mamba's extra
    RMS normalisation of B, C and Δ is not (its probes would be wrong, not just slower).
    """
    path = Path(path)
    cfg_path, w_path = path / "config.json", path / "pytorch_model.bin"
    if not cfg_path.exists() or not w_path.exists():
        raise FileNotFoundError(f"{path} must hold config.json and pytorch_model.bin (mamba_ssm's save_pretrained).")
    cfg = json.loads(cfg_path.read_text())
    ssm_cfg = dict(cfg.get("ssm_cfg", {}))
    if ssm_cfg.pop("layer", "Mamba1") not in ("Mamba1",) or cfg.get("d_intermediate", 0):
        raise ValueError("only Mamba-1 checkpoints without MLP layers are supported by this loader.")
    model = MambaLMHeadModel(
        cfg["d_model"],
        cfg["n_layer"],
        cfg["vocab_size"],
        pad_vocab_size_multiple=cfg.get("pad_vocab_size_multiple", 8),
        tie_embeddings=cfg.get("tie_embeddings", True),
        backend=backend,
        **ssm_cfg,
    )
    sd = torch.load(w_path, map_location="cpu", weights_only=True)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight" or not cfg.get("tie_embeddings", True)]
    if missing or unexpected:
        raise ValueError(
            f"{w_path} does not match mamba_ssm's MambaLMHeadModel names: missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}."
        )
    return model.to(device).eval()


# ------------------------------------------------------------------------- tests on two samples and counts


def welch_test(a, b) -> tuple[float, float]:
    """Welch's two-sample t-test (unequal variances): (t, two-sided p).

    a: (n_a,), b: (n_b,), n ≥ 2 each. t = (ā − b̄) / √(s_a²/n_a + s_b²/n_b) with Welch–Satterthwaite
    degrees of freedom ν = (s_a²/n_a + s_b²/n_b)² / (s_a⁴/(n_a²(n_a−1)) + s_b⁴/(n_b²(n_b−1))) and
    p = 2 · P[T_ν > |t|]: ``scipy.stats.ttest_ind(a, b, equal_var=False)``. Both samples constant: (0, 1)
    if their means agree, else (inf, 0) (scipy returns NaN there).
    """
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"welch_test needs at least 2 values per sample, got {len(a)} and {len(b)}.")
    if a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b) == 0:
        return (0.0, 1.0) if a.mean() == b.mean() else (math.inf, 0.0)
    res = stats.ttest_ind(a, b, equal_var=False)
    return float(res.statistic), float(res.pvalue)


def spearman(x, y) -> float:
    """Spearman's rank correlation ρ of paired x, y (n,): Pearson's r of the ranks, ties given their average
    rank (``scipy.stats.spearmanr``); NaN when either is constant (no ranking)."""
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"spearman needs paired samples of the same length ≥ 2, got {len(x)} and {len(y)}.")
    if np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    return float(stats.spearmanr(x, y).statistic)


def chi2_uniform_p(counts, expected) -> float:
    """Pearson χ² goodness-of-fit p-value of ``counts`` (k,) against ``expected`` (k,), df = k − 1.

    χ² = Σ_i (counts_i − expected_i)² / expected_i, p = P[χ²_{k−1} ≥ χ²]: ``scipy.stats.chisquare``. The
    expected counts must be > 0 and sum to the observed total (e.g. ``counts.sum() * w / w.sum()`` for
    an even spread over units of widths ``w``); one category (df = 0) tests nothing: p = 1.
    """
    counts, expected = np.asarray(counts, float).ravel(), np.asarray(expected, float).ravel()
    if counts.shape != expected.shape:
        raise ValueError(f"counts and expected need the same length, got {len(counts)} and {len(expected)}.")
    if len(counts) < 2:
        return 1.0
    if np.any(expected <= 0):
        raise ValueError("expected counts must be > 0; drop the categories nothing is expected in.")
    if not np.isclose(counts.sum(), expected.sum(), rtol=1e-8, atol=0):
        raise ValueError(
            f"expected sums to {expected.sum()} but the counts to {counts.sum()}; scale it: "
            "expected * counts.sum() / expected.sum()."
        )
    return float(stats.chisquare(counts, expected).pvalue)


# ------------------------------------------------------- paper 000: the forgetting factor held at 1
def held_scan(model, decay, inp, hold):
    """The |K| = 1 recurrence h_t = a_t ⊙ h_{t−1} + Δ_t ⊙ x̂_t recomputed from the model's own ``decay`` a_t and input
    terms ``inp`` (b, T, 2|V|), with a_t := 1 wherever ``hold`` (b, T) is true; returns W_o h_t, (b, T, |V|)."""
    a = torch.where(hold[..., None], torch.ones_like(decay), decay)
    h, out = torch.zeros_like(inp[:, 0]), []
    for t in range(inp.shape[1]):
        h = a[:, t] * h + inp[:, t]
        out.append(h)
    return torch.stack(out, 1) @ model.W_o.T


class FixedLogits:
    """A stand-in for a model that answers with fixed ``logits`` (what :func:`recency_margins` calls, with the
    model's ``W_delta`` for its device), so a recomputed recurrence is scored like the model itself."""

    def __init__(self, logits, model):
        self.out, self.W_delta = logits, model.W_delta

    def __call__(self, x):
        return self.out


def k1_recurrence(model, batch, what: str):
    """The |K| = 1 model's own logits, forgetting factors a_t (b, T, 2|V|), input terms Δ_t ⊙ x̂_t (b, T, 2|V|) and
    pair events (b, T) on ``batch``, for the interventions that recompute its recurrence (``what`` names the caller
    in the error for any other model)."""
    from ..tasks.latest_value import pair_events

    if model.d_state != 1 or model.selective_bc:
        raise ValueError(f"{what} is defined for the |K| = 1 model (N = 1, B = C = 1); use ch1.k1.")
    logits, it = model(batch.inputs, return_internals=True)
    events = pair_events(batch.inputs.numpy(), batch.num_keys)
    return logits, it["forget"][..., 0], it["input_term"][..., 0], events


@torch.no_grad()
def forgetting_held_at_one(model, batch, where: str) -> dict:
    r"""A causal intervention on the |K| = 1 model (N = 1, B = C = 1), in the recurrence of
    :func:`mamba_recall.analysis.forgetting_probe.noise_forgetting_probe`: the forgetting factor a_t = exp(Λ ⊙ Δ_t) held at 1 ``where`` — ``"noise"`` (at the
    noise pairs (v₁, v₂): §3's forget regime, "forget all the memories slowly", removed), ``"except_writes"`` (every
    position but the write pairs (k, v): the forget regime and the read pairs' forgetting removed, the erase kept) or
    ``"writes"`` (only the write pairs: the erase removed) — the input terms unchanged.
    Returns the query accuracy of the latest value and the share of rebound-key queries where the latest value beats
    the previous binding, as trained (``*_before``) and under the intervention (``*_held``), on ``batch``, the number
    of positions held and the largest |recomputed − model forward| logit (``recompute_error``)."""
    from .recall_probes import recency_margins
    from ..labels import labelled_accuracy
    from ..tasks.latest_value import NOISE, WRITE

    if where not in ("noise", "except_writes", "writes"):
        raise ValueError(f"where={where!r}: 'noise', 'except_writes' or 'writes'.")
    logits, decay, inp, events = k1_recurrence(model, batch, "forgetting_held_at_one")
    write = torch.as_tensor(events == WRITE)
    hold = {"noise": torch.as_tensor(events == NOISE), "except_writes": ~write, "writes": write}[where]
    before = held_scan(model, decay, inp, torch.zeros_like(write))
    held = held_scan(model, decay, inp, hold)
    rb, rh = recency_margins(FixedLogits(before, model), batch), recency_margins(FixedLogits(held, model), batch)
    return {
        "accuracy_before": float(labelled_accuracy(before, batch.query_labels)),
        "accuracy_held": float(labelled_accuracy(held, batch.query_labels)),
        "margin_positive_before": rb["margin_positive"],
        "margin_positive_held": rh["margin_positive"],
        "rebound_queries": rb["n"],
        "held_positions": int(hold.sum()),
        "recompute_error": float((before - logits).abs().max()),  # the recomputation against the model's scan
    }
