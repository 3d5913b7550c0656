"""The Ā ablation: which steps and which (channel) or (channel, state) targets, the :func:`ablate` context that
installs the masks as the mixers' ``abar_hook``, per-example scores of the transfer sets under it
(:func:`labelled_scores`), and the random control sets (global or layer-matched channels, layer-matched states)."""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from ...models.mamba2 import Mamba2
from ...tasks.transfer import labelled_accuracy


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
