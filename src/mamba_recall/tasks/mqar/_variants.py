"""MQAR: the vectorised variants behind :func:`mqar` (see the table in :mod:`mamba_recall.tasks.mqar`) and
:func:`batch_fn`."""

from __future__ import annotations

import numbers

import numpy as np
import torch

from ...labels import IGNORE_INDEX
from ._checks import _check_gap_law, check_int
from ._reference import multiquery_ar


# --------------------------------------------------------------------------- vectorised variants

PADS = ("full", "zero")


def _validate_vocab(V: int, Nf: int, L: int, *, min_len: int | None = None) -> None:
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


_MAX_TORCH_SEED = 2**64  # torch.Generator.manual_seed takes [0, 2**64) (and wraps negative seeds onto it)


def _nonnegative_seed(seed, upper: int | None = None, what: str = "") -> int:
    """``seed`` as an int in [0, upper) (any size if ``upper`` is None); else a ValueError with the fix."""
    rng = f"[0, {'2**64' if upper == _MAX_TORCH_SEED else upper})" if upper else "[0, ∞)"
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise ValueError(
            f"seed must be an integer in {rng}{what}, got {seed!r} (type {type(seed).__name__}); pass an int."
        )
    seed = int(seed)
    if seed < 0 or (upper is not None and seed >= upper):
        fix = f"pass e.g. seed % {'2**64' if upper == _MAX_TORCH_SEED else upper}" if upper else "pass abs(seed)"
        raise ValueError(f"seed must be in {rng}{what}, got seed={seed}; {fix}.")
    return seed


def _gen(seed: int, device="cpu") -> torch.Generator:
    seed = _nonnegative_seed(seed, _MAX_TORCH_SEED, " (torch.Generator.manual_seed range)")
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


def _check_count(name: str, value, meaning: str) -> int:
    """An option that counts something (``Nk``, ``Nq``): an int ≥ 1, else a ValueError naming its meaning."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1 ({meaning}), got {name}={value!r}; pass e.g. {name}=2.")
    return int(value)


def _blank(n: int, L: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Empty ``(inputs, labels)`` of shape (n, L): token 0 everywhere, ``IGNORE_INDEX`` labels."""
    return torch.zeros(n, L, dtype=torch.int64), torch.full((n, L), IGNORE_INDEX, dtype=torch.int64)


def _write_pairs(x: torch.Tensor, start: int, keys: torch.Tensor, values: torch.Tensor) -> None:
    """Write the interleaved pairs ``k_1 v_1 k_2 v_2 …`` into ``x[:, start : start + 2·Nf]`` in place."""
    stop = start + 2 * keys.shape[1]
    x[:, start:stop:2], x[:, start + 1 : stop : 2] = keys, values


def _place_queries(x, y, keys, values, ctx: int, g: torch.Generator, logp=None) -> None:
    """Write each row's keys as queries at distinct even offsets after the context (gaps drawn without
    replacement, weighted by ``logp`` if given) and their values as labels at the same positions; in place."""
    n, L = x.shape
    gaps = _sample_without_replacement(n, (L - ctx) // 2, keys.shape[1], g, logp)
    pos = ctx + 2 * gaps
    x.scatter_(1, pos, keys)
    y.scatter_(1, pos, values)


def _standard(V: int, Nf: int, L: int, n: int, seed: int, *, power_a: float = 1.0, pad: str = "full"):
    """``variant="standard"``: vectorised zoology MQAR (see the module docstring)."""
    _validate_vocab(V, Nf, L)
    space = (L - 2 * Nf) // 2
    _check_gap_law(power_a, space, Nf)
    g = _gen(seed)
    keys, values = _keys_values(n, V, Nf, g)
    ctx = 2 * Nf
    x, y = _blank(n, L)
    _write_pairs(x, 0, keys, values)
    i = torch.arange(1, space + 1, dtype=torch.float64)
    logp = None if power_a == 1.0 else torch.log(power_a * i ** (power_a - 1))
    _place_queries(x, y, keys, values, ctx, g, logp)
    return _pad(x, V, pad, g), y


def _repeated_keys(V: int, Nf: int, L: int, n: int, seed: int, *, Nk: int = 2, pad: str = "full"):
    """``variant="repeated_keys"`` ([code] ``multiquery_ar_repeated_keys``): label = value of the last occurrence."""
    Nk = _check_count("Nk", Nk, "the number of context chunks over the same keys; 1 = no repetition")
    _validate_vocab(V, Nf, L, min_len=2 * Nf * (Nk + 1))
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


def _repeated_queries(V: int, Nf: int, L: int, n: int, seed: int, *, Nq: int = 2, post_query: str = "full"):
    """``variant="repeated_queries"`` ([code] ``multiquery_ar_repeated_queries``): N_q sections, all labelled."""
    Nq = _check_count("Nq", Nq, "the number of query sections, each querying every key once")
    _validate_vocab(V, Nf, L, min_len=2 * Nf * (Nq + 1))
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


def _paper003(V: int, Nf: int, L: int, n: int, seed: int):
    """``variant="paper003"`` (paper 003, App. D.3, distinct keys; V = |V| values, N_f = κ, L = T)."""
    n, T, kappa, V = (check_int(a, b) for a, b in (("n", n), ("T", L), ("kappa", Nf), ("V", V)))
    if T < 3 * kappa:
        raise ValueError(f"T={T} must be >= 3·kappa={3 * kappa} (context of 2κ plus κ queries).")
    rng = np.random.default_rng(_nonnegative_seed(seed, None, " (numpy.random.default_rng)"))
    keys = np.argsort(rng.random((n, kappa)), axis=1)
    vals = rng.integers(0, V, size=(n, kappa))
    ids = kappa + rng.integers(0, V, size=(n, T))
    ids[:, 0 : 2 * kappa : 2] = keys
    ids[:, 1 : 2 * kappa : 2] = kappa + vals
    pos = 2 * kappa + np.argsort(rng.random((n, T - 2 * kappa)), axis=1)[:, :kappa]
    order = np.argsort(rng.random((n, kappa)), axis=1)
    val_of_key = np.empty_like(vals)
    np.put_along_axis(val_of_key, keys, vals, axis=1)
    labels = np.full((n, T), IGNORE_INDEX, dtype=np.int64)
    rows = np.arange(n)[:, None]
    ids[rows, pos] = order
    labels[rows, pos] = np.take_along_axis(val_of_key, order, axis=1)
    return torch.as_tensor(ids, dtype=torch.long), torch.as_tensor(labels, dtype=torch.long)


def _zoology(V: int, Nf: int, L: int, n: int, seed: int, *, power_a: float = 0.01, pad: str = "full"):
    """``variant="zoology"``: :func:`multiquery_ar`'s inputs and labels."""
    if pad not in PADS:
        raise ValueError(f"unknown pad {pad!r}; use one of {PADS}.")
    b = multiquery_ar(V, n, L, seed, power_a=power_a, num_kv_pairs=Nf, random_non_queries=pad == "full")
    return b.inputs, b.labels


_VARIANTS = {
    "standard": (_standard, ("power_a", "pad")),
    "repeated_keys": (_repeated_keys, ("Nk", "pad")),
    "repeated_queries": (_repeated_queries, ("Nq", "post_query")),
    "paper003": (_paper003, ()),
    "zoology": (_zoology, ("power_a", "pad")),
}
#: The options of :func:`mqar` (see the module docstring).
VARIANTS = tuple(_VARIANTS)


def mqar(
    V: int,
    Nf: int,
    L: int,
    n: int,
    seed: int,
    *,
    variant: str = "standard",
    power_a: float | None = None,
    pad: str | None = None,
    Nk: int | None = None,
    Nq: int | None = None,
    post_query: str | None = None,
):
    """MQAR ``(inputs, labels)``, each int64 ``(n, L)``: ``n`` sequences of length ``L`` with ``N_f`` facts over a
    vocabulary of ``V`` tokens, drawn from ``seed`` (an integer in [0, 2**64) for the torch-based variants,
    [0, 2**32) for ``"zoology"``, ≥ 0 for ``"paper003"``). ``n``, ``Nk``, ``Nq`` are integers ≥ 1 and
    ``power_a`` lies in (0, :func:`max_power_a`]; every other value raises a ValueError naming the fix. ``variant`` is one of
    :data:`VARIANTS`; the options (``power_a``, ``pad``, ``Nk``, ``Nq``, ``post_query``) apply to the variants
    listed in the module docstring, and passing one to a variant without it is an error."""
    if variant not in _VARIANTS:
        raise ValueError(f"unknown MQAR variant {variant!r}; use one of {VARIANTS}.")
    fn, allowed = _VARIANTS[variant]
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n (the number of sequences) must be an integer >= 1, got n={n!r}; pass e.g. n=64.")
    given = {
        k: v for k, v in dict(power_a=power_a, pad=pad, Nk=Nk, Nq=Nq, post_query=post_query).items() if v is not None
    }
    extra = sorted(set(given) - set(allowed))
    if extra:
        raise ValueError(
            f"variant={variant!r} takes no option {', '.join(extra)}; its options are {', '.join(allowed) or 'none'}."
        )
    return fn(V, Nf, L, n, seed, **given)


def batch_fn(V: int, Nf: int, L: int, batch_size: int, base_seed: int, *, task: str = "standard", **options):
    """``make_batch(step)`` for the training loop: a fresh :func:`mqar` batch per step, seeded ``base_seed + step``.
    ``task`` is the :func:`mqar` variant (``"mqar"`` is accepted for ``"standard"``); ``options`` go to :func:`mqar`."""
    variant = "standard" if task == "mqar" else task
    if variant not in _VARIANTS:
        raise ValueError(f"unknown task {task!r}; use one of {VARIANTS}.")
    return lambda step: mqar(V, Nf, L, batch_size, base_seed + step, variant=variant, **options)
