r"""Interventions and statistics of paper 004: Ā ablations, U(0,1) state init, recall by position.

Ablation (paper §4.2, App. D): for targeted (layer ℓ, channel i) set ``Ā_t^{(ℓ,i)} ← 0`` (all N states) at
chosen 0-based token indices ``t``; then ``h_t = B̄_t x_t`` there, i.e. the channel forgets everything
before ``t``. "First triplet" = indices 1–4 (``r_1 o_1 . s_2``); "all" = every step (the channel
becomes memoryless). Implemented with the ``abar_hook`` of :class:`~mamba_recall.models.mamba.Mamba`
(a bool mask (1, E, L) per layer), so it works unchanged on any mamba_ssm-named checkpoint. On a
Mamba-2 model (:mod:`mamba_recall.models.mamba2`) the units are *heads*: the mask is (1, H, L), the
width is the mixer's ``ablation_units`` and "channels" below means head indices.

Recall by position uses **prefix-state evaluation**: each context is run once
(with its ablation / initial state), the per-layer :class:`LayerState` (conv + SSM) is kept, and
every query ``s_k r_k`` (k = 1..L) continues from it — exact for a recurrent model (tested against
the full forward) and L× cheaper, with a paired design across positions.

Statistics: 95 % Wilson interval, paired bootstrap over prompts (2,000
resamples), McNemar's exact test for paired binary outcomes.
"""
from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

import numpy as np
import torch

from ..models.mamba import LayerState, MambaLMHeadModel
from ..tasks.serial_recall import RecallContexts, query_tokens
from ..tasks.transfer import labelled_accuracy

__all__ = ["ablate", "ablation_steps", "first_triplet_steps", "labelled_scores", "load_mamba_ssm_checkpoint", "mcnemar_p",
           "paired_bootstrap", "random_channels", "recall_by_position", "summary", "uniform_init_states",
           "wilson"]


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


class _Ablation:
    """State of an active :func:`ablate` context: ``offset`` = absolute index of the next call's first token."""

    def __init__(self, model, channels, steps):
        self.model, self.channels, self.steps, self.offset = model, channels, steps, 0

    def hook(self, layer: int, width: int):
        ch = self.channels.get(layer)
        if ch is None or len(ch) == 0:
            return None
        chmask = torch.zeros(width, dtype=torch.bool)
        chmask[torch.as_tensor(ch, dtype=torch.long)] = True

        def fn(seqlen):
            tmask = ablation_steps(self.steps, seqlen, self.offset)
            return (chmask[:, None] & tmask[None, :])[None]  # (1, E, L)

        return fn


@contextlib.contextmanager
def ablate(model, channels: dict[int, torch.Tensor] | None, steps="all"):
    """Within the block, zero Ā of ``channels`` ({layer: channel indices}) at ``steps`` in every forward.

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
            hook = handle.hook(i, getattr(blk.mixer, "ablation_units", blk.mixer.d_inner))  # heads for Mamba-2
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
                out[name] = np.concatenate([labelled_accuracy(model(x[a:a + batch_size].to(device)).cpu(),
                                                              y[a:a + batch_size])
                                            for a in range(0, len(x), batch_size)])
    finally:
        model.train(was)
    return out


def uniform_init_states(model, layer: int, batch: int, seed: int = 42, low: float = 0.0, high: float = 1.0,
                        kind: str = "uniform") -> list[LayerState]:
    """Initial per-layer states: h_0 ~ U(low, high) over (E × N) at ``layer`` (same draw for every row,
    as one prompt at a time in the paper's code; RNG re-seeded with ``seed`` per call so draws are
    paired across layers), zeros elsewhere; conv states zero (paper §4.2, App. G). ``kind``: uniform/normal/constant."""
    out = []
    for i, blk in enumerate(model.backbone.layers):
        mix = blk.mixer
        ref = mix.A_log
        ssm = torch.zeros(batch, mix.d_inner, mix.d_state, dtype=ref.dtype, device=ref.device)
        if i == layer:
            g = torch.Generator().manual_seed(seed)
            if kind == "uniform":
                h0 = low + (high - low) * torch.rand(mix.d_inner, mix.d_state, generator=g, dtype=torch.float64)
            elif kind == "normal":
                h0 = torch.randn(mix.d_inner, mix.d_state, generator=g, dtype=torch.float64)
            elif kind == "constant":
                h0 = torch.full((mix.d_inner, mix.d_state), float(high), dtype=torch.float64)
            else:
                raise ValueError(f"unknown kind {kind!r}; use 'uniform', 'normal' or 'constant'.")
            ssm = ssm + h0.to(ref.dtype)
        conv = torch.zeros(batch, mix.d_inner, mix.d_conv - 1, dtype=mix.in_proj.weight.dtype, device=ref.device)
        out.append(LayerState(conv=conv, ssm=ssm))
    if not 0 <= layer < len(out):
        raise ValueError(f"layer {layer} does not exist; the model has {len(out)} layers (0-based).")
    return out


@torch.no_grad()
def recall_by_position(model, ctx: RecallContexts, *, channels=None, steps="all", init_states=None,
                       distractors: torch.Tensor | None = None, batch_size: int = 256,
                       device="cpu") -> np.ndarray:
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
                    st = [type(s)(s.conv.expand(b - a, *s.conv.shape[1:]).contiguous() if s.conv.shape[0] == 1
                                  else s.conv[a:b], s.ssm.expand(b - a, *s.ssm.shape[1:]).contiguous()
                                  if s.ssm.shape[0] == 1 else s.ssm[a:b]) for s in init_states]
                handle.offset = 0
                _, states = model(rows, states=st, return_states=True)
                handle.offset = T0
                m = b - a
                rep = torch.arange(m, device=rows.device).repeat_interleave(L)
                q_states = [s.index_select(rep) for s in states]
                ks = torch.arange(1, L + 1).repeat(m)
                sub = RecallContexts(ctx.tokens[a:b], ctx.subjects[a:b], ctx.objects[a:b], ctx.relations[a:b],
                                     L, ctx.variant, ctx.bos, ctx.vocab)
                rep_ctx = RecallContexts(sub.tokens.repeat_interleave(L, 0), sub.subjects.repeat_interleave(L, 0),
                                         sub.objects.repeat_interleave(L, 0), sub.relations.repeat_interleave(L, 0),
                                         L, ctx.variant, ctx.bos, ctx.vocab)
                q = query_tokens(rep_ctx, ks).to(rows.device)
                logits = model(q, states=q_states)
                pred = logits[:, -1].argmax(-1).cpu()
                ans = rep_ctx.objects.gather(1, (ks - 1)[:, None])[:, 0]
                out[a:b] = (pred == ans).numpy().reshape(m, L)
    finally:
        model.train(was)
    return out


def wilson(successes, n, z: float = 1.959963984540054):
    """95 % Wilson score interval (lower, upper) for ``successes`` out of ``n`` (arrays broadcast)."""
    s, n = np.asarray(successes, dtype=float), np.asarray(n, dtype=float)
    if np.any(n <= 0) or np.any(s < 0) or np.any(s > n):
        raise ValueError("wilson needs 0 <= successes <= n and n > 0.")
    p = s / n
    den = 1 + z * z / n
    center = (p + z * z / (2 * n)) / den
    half = z / den * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return np.clip(center - half, 0, 1), np.clip(center + half, 0, 1)


def summary(correct: np.ndarray) -> dict:
    """acc(k), Wilson bands, middle third K_mid = {k : L/3 < k ≤ 2L/3}, primacy, recency, U-depth."""
    n, L = correct.shape
    acc = correct.mean(0)
    lo, hi = wilson(correct.sum(0), n)
    k = np.arange(1, L + 1)
    mid = (k > L / 3) & (k <= 2 * L / 3)
    mid_acc = float(acc[mid].mean())
    mlo, mhi = wilson(correct[:, mid].sum(), n * mid.sum())
    return {"L": L, "n": n, "acc": acc, "lo": lo, "hi": hi, "mid": mid_acc, "mid_lo": float(mlo),
            "mid_hi": float(mhi), "primacy": float(acc[0] - mid_acc), "recency": float(acc[-1] - mid_acc),
            "u_depth": float(0.5 * (acc[0] + acc[-1]) - mid_acc)}


def paired_bootstrap(a: np.ndarray, b: np.ndarray, stat=np.mean, n_boot: int = 2000, seed: int = 0):
    """Paired bootstrap over rows of ``stat(a) − stat(b)``: (estimate, lower 2.5 %, upper 97.5 %)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape[0] != b.shape[0]:
        raise ValueError("paired_bootstrap needs the same number of rows (the same prompts) in a and b.")
    rng = np.random.RandomState(seed)
    idx = rng.randint(0, a.shape[0], size=(n_boot, a.shape[0]))
    diffs = np.array([stat(a[i]) - stat(b[i]) for i in idx])
    return float(stat(a) - stat(b)), float(np.quantile(diffs, 0.025)), float(np.quantile(diffs, 0.975))


def mcnemar_p(a: np.ndarray, b: np.ndarray) -> float:
    """Exact two-sided McNemar test for paired booleans ``a``, ``b`` (binomial on the discordant pairs)."""
    a, b = np.asarray(a, bool).ravel(), np.asarray(b, bool).ravel()
    n01, n10 = int((~a & b).sum()), int((a & ~b).sum())
    n = n01 + n10
    if n == 0:
        return 1.0
    k = min(n01, n10)
    p = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * p)


def random_channels(model, count_per_layer: dict[int, int] | int, *, seed: int = 42,
                    exclude: dict[int, torch.Tensor] | None = None) -> dict[int, torch.Tensor]:
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
    model = MambaLMHeadModel(cfg["d_model"], cfg["n_layer"], cfg["vocab_size"],
                             pad_vocab_size_multiple=cfg.get("pad_vocab_size_multiple", 8),
                             tie_embeddings=cfg.get("tie_embeddings", True), backend=backend, **ssm_cfg)
    sd = torch.load(w_path, map_location="cpu", weights_only=True)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight" or not cfg.get("tie_embeddings", True)]
    if missing or unexpected:
        raise ValueError(f"{w_path} does not match mamba_ssm's MambaLMHeadModel names: missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]}.")
    return model.to(device).eval()


# ----------------------------------------------------------------- small statistics (no scipy dependency)

def _student_t_sf2(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with ``df`` degrees of freedom (numerical integration of the density)."""
    t = abs(float(t))
    if not math.isfinite(t):
        return 0.0
    xs = np.linspace(0.0, t, 20001)
    logc = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    dens = np.exp(logc - (df + 1) / 2 * np.log1p(xs * xs / df))
    area = float(np.sum((dens[1:] + dens[:-1]) * np.diff(xs)) / 2)
    return float(min(1.0, max(0.0, 1.0 - 2.0 * area)))


def welch_test(a, b) -> tuple[float, float]:
    """Welch's two-sample t-test: (t, two-sided p)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        return (0.0, 1.0) if a.mean() == b.mean() else (math.inf, 0.0)
    t = (a.mean() - b.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return float(t), _student_t_sf2(t, df)


def spearman(x, y) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    def rank(v):
        v = np.asarray(v, float)
        order = v.argsort(kind="mergesort")
        r = np.empty(len(v))
        r[order] = np.arange(len(v), dtype=float)
        for val in np.unique(v):
            r[v == val] = r[v == val].mean()
        return r
    rx, ry = rank(x), rank(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def chi2_uniform_p(counts, expected) -> float:
    """Pearson χ² goodness-of-fit p-value of ``counts`` against ``expected`` (df = len − 1)."""
    counts, expected = np.asarray(counts, float), np.asarray(expected, float)
    stat = float(((counts - expected) ** 2 / expected).sum())
    df = len(counts) - 1
    if df < 1:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64),
                                         torch.tensor(stat / 2, dtype=torch.float64)))
