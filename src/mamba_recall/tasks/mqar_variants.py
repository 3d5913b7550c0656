r"""MQAR generators for paper 002: a vectorised Zoology-equivalent MQAR, and the repeating-keys /
repeating-queries variants of App. G.

All return ``(inputs, labels)`` int64 tensors of shape ``(n, L)``; ``labels = -100`` except at query
positions, where the target (the value) sits *at the query token*. Keys come from ``[1, V/2)``,
values from ``[V/2, V)``; padding is uniform over the full vocabulary ``[0, V)`` (``pad="full"``,
Zoology's ``random_non_queries=True``) or 0 (``pad="zero"``).

* :func:`mqar` — the distribution of :func:`mamba_recall.tasks.mqar.multiquery_ar` (sequential
  weighted sampling without replacement of the query gaps ≡ Gumbel-top-k), vectorised (~1 ms per
  128×64 batch instead of ~25 ms). ``power_a=1.0`` (uniform gaps) is the authors' [code] default.
* :func:`mqar_repeated_keys` — [code] ``multiquery_ar_repeated_keys``: ``N_k`` chunks over the same keys
  (re-permuted per chunk, fresh values per chunk), the canonical chunk last; the label is the value of the
  **last** occurrence; uniform gaps. Needs ``2 N_f (N_k+1) ≤ L``.
* :func:`mqar_repeated_queries` — [code] ``multiquery_ar_repeated_queries``: the query area is split into
  ``N_q`` sections of length ``(L-2N_f)/N_q``, each holding all ``N_f`` queries at even offsets with
  uniform gaps; every occurrence is labelled. ``post_query="full"`` (default, [code]) pads uniformly over
  the vocabulary; ``"values"`` puts a random *value* token after every query (the paper's examples,
  Remark 5's 3/4 prediction).
"""
from __future__ import annotations

import torch

from .mqar import IGNORE_INDEX

__all__ = ["mqar", "mqar_repeated_keys", "mqar_repeated_queries", "batch_fn", "validate"]

PADS = ("full", "zero")


def validate(V: int, Nf: int, L: int, *, min_len: int | None = None) -> None:
    """Zoology's preconditions with clear errors: L even, V > L, L ≥ min_len (default 4 N_f), N_f < V/2."""
    for name, v in (("V", V), ("Nf", Nf), ("L", L)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}.")
    need = 4 * Nf if min_len is None else min_len
    if L % 2:
        raise ValueError(f"L must be even (Zoology), got L={L}; use L={L + 1}.")
    if not V > L:
        raise ValueError(f"V must be > L (Zoology rule), got V={V}, L={L}; use V ≥ {L + 1}.")
    if L < need:
        raise ValueError(f"L={L} is too short for N_f={Nf} facts: need L ≥ {need}; raise L or lower N_f.")
    if Nf > V // 2 - 1:
        raise ValueError(f"N_f={Nf} exceeds the {V // 2 - 1} keys of [1, V/2); use a larger V.")


def _gen(seed: int, device="cpu") -> torch.Generator:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}.")
    return torch.Generator(device=device).manual_seed(seed)


def _sample_without_replacement(n: int, pop: int, k: int, g: torch.Generator, logp=None) -> torch.Tensor:
    """(n, k) indices in [0, pop), distinct per row; with ``logp`` weighted (Gumbel-top-k ≡ sequential)."""
    u = torch.rand(n, pop, generator=g)
    if logp is None:
        return u.argsort(dim=1)[:, :k]
    gumbel = -torch.log(-torch.log(u.clamp_min(1e-12)))
    return (logp[None] + gumbel).argsort(dim=1, descending=True)[:, :k]


def _keys_values(n, V, Nf, g):
    keys = _sample_without_replacement(n, V // 2 - 1, Nf, g) + 1
    values = _sample_without_replacement(n, V - V // 2, Nf, g) + V // 2
    return keys, values


def _pad(x: torch.Tensor, V: int, pad: str, g: torch.Generator) -> torch.Tensor:
    if pad not in PADS:
        raise ValueError(f"unknown pad {pad!r}; use one of {PADS}.")
    if pad == "full":
        fill = torch.randint(V, x.shape, generator=g)
        x = torch.where(x == 0, fill, x)
    return x


def _blank(n: int, L: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Empty ``(inputs, labels)`` of shape (n, L): token 0 everywhere, ``IGNORE_INDEX`` labels."""
    return torch.zeros(n, L, dtype=torch.int64), torch.full((n, L), IGNORE_INDEX, dtype=torch.int64)


def _write_pairs(x: torch.Tensor, start: int, keys: torch.Tensor, values: torch.Tensor) -> None:
    """Write the interleaved pairs ``k_1 v_1 k_2 v_2 …`` into ``x[:, start : start + 2·Nf]`` in place."""
    stop = start + 2 * keys.shape[1]
    x[:, start:stop:2], x[:, start + 1:stop:2] = keys, values


def _place_queries(x, y, keys, values, ctx: int, g: torch.Generator, logp=None) -> None:
    """Write each row's keys as queries at distinct even offsets after the context (gaps drawn without
    replacement, weighted by ``logp`` if given) and their values as labels at the same positions; in place."""
    n, L = x.shape
    gaps = _sample_without_replacement(n, (L - ctx) // 2, keys.shape[1], g, logp)
    pos = ctx + 2 * gaps
    x.scatter_(1, pos, keys)
    y.scatter_(1, pos, values)


def mqar(V: int, Nf: int, L: int, n: int, seed: int, *, power_a: float = 1.0, pad: str = "full"):
    """Vectorised Zoology MQAR (see module docstring); returns ``(inputs, labels)``, each ``(n, L)``."""
    validate(V, Nf, L)
    if not power_a > 0:
        raise ValueError(f"power_a must be > 0, got {power_a!r}.")
    g = _gen(seed)
    keys, values = _keys_values(n, V, Nf, g)
    ctx = 2 * Nf
    x, y = _blank(n, L)
    _write_pairs(x, 0, keys, values)
    space = (L - ctx) // 2
    i = torch.arange(1, space + 1, dtype=torch.float64)
    logp = None if power_a == 1.0 else torch.log(power_a * i ** (power_a - 1))
    _place_queries(x, y, keys, values, ctx, g, logp)
    return _pad(x, V, pad, g), y


def mqar_repeated_keys(V: int, Nf: int, L: int, n: int, seed: int, *, Nk: int = 2, pad: str = "full"):
    """Repeating keys ([code] ``multiquery_ar_repeated_keys``): label = value of the last occurrence."""
    validate(V, Nf, L, min_len=2 * Nf * (Nk + 1))
    g = _gen(seed)
    keys, values = _keys_values(n, V, Nf, g)
    x, y = _blank(n, L)
    for c in range(Nk - 1):  # earlier chunks: same keys re-permuted, fresh values
        perm = torch.rand(n, Nf, generator=g).argsort(1)
        vals = _sample_without_replacement(n, V - V // 2, Nf, g) + V // 2
        _write_pairs(x, 2 * Nf * c, keys.gather(1, perm), vals)
    _write_pairs(x, 2 * Nf * (Nk - 1), keys, values)
    _place_queries(x, y, keys, values, 2 * Nf * Nk, g)
    return _pad(x, V, pad, g), y


def mqar_repeated_queries(V: int, Nf: int, L: int, n: int, seed: int, *, Nq: int = 2, post_query: str = "full"):
    """Repeating queries ([code] ``multiquery_ar_repeated_queries``): N_q sections, every occurrence labelled."""
    validate(V, Nf, L, min_len=2 * Nf * (Nq + 1))
    if post_query not in ("full", "values"):
        raise ValueError(f"unknown post_query {post_query!r}; use 'full' or 'values'.")
    g = _gen(seed)
    keys, values = _keys_values(n, V, Nf, g)
    ctx = 2 * Nf
    x, y = _blank(n, L)
    _write_pairs(x, 0, keys, values)
    sec = (L - ctx) // Nq
    for q in range(Nq):
        gaps = _sample_without_replacement(n, sec // 2, Nf, g)
        pos = ctx + q * sec + 2 * gaps
        x.scatter_(1, pos, keys)
        y.scatter_(1, pos, values)
        if post_query == "values":
            nxt = (pos + 1).clamp(max=L - 1)
            rv = torch.randint(V // 2, V, pos.shape, generator=g)
            cur = x.gather(1, nxt)
            x.scatter_(1, nxt, torch.where(cur == 0, rv, cur))
    return _pad(x, V, "full", g), y


def batch_fn(V: int, Nf: int, L: int, batch_size: int, base_seed: int, *, task: str = "mqar", **kw):
    """``make_batch(step)`` for the training loops: a fresh batch per step, seeded ``base_seed + step``."""
    fn = {"mqar": mqar, "repeated_keys": mqar_repeated_keys, "repeated_queries": mqar_repeated_queries}
    if task not in fn:
        raise ValueError(f"unknown task {task!r}; use one of {tuple(fn)}.")
    return lambda step: fn[task](V, Nf, L, batch_size, base_seed + step, **kw)
