"""Recall by position with prefix-state evaluation (:func:`recall_by_position`), from a U(0, 1) initial state
(:func:`uniform_init_states`) or under an ablation, and the comparison of a state target with layer-matched random
states (:func:`state_ablation_effects`, :func:`first_position_drops`)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ...models.mamba import LayerState
from ...models.mamba2 import Mamba2
from ...tasks.serial_recall import RecallContexts, query_tokens
from ._ablation import ablate, random_states


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
