"""MQAR: the argument checks of the zoology generator (integers, the gap law ``power_a``, the seed); see
:mod:`mamba_recall.tasks.mqar`."""

from __future__ import annotations

import math
import numbers

import numpy as np


_MAX_SEED = 2**32  # np.random.RandomState accepts seeds in [0, 2**32)


# --------------------------------------------------------------------------- validation


def check_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an int if it is an integer (not a bool) ≥ ``minimum``; else a ValueError naming ``name``.
    The argument check of every task generator."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"{name} must be an integer, got {value!r} (type {type(value).__name__}); pass a Python int >= {minimum}."
        )
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {name}={value}; pass a value >= {minimum}.")
    return value


def _power_law(space: int, power_a: float) -> np.ndarray:
    """zoology's gap distribution over ``arange(space)``: p(g) ∝ a (g+1)^(a-1)."""
    p = power_a * np.arange(1, space + 1) ** (power_a - 1)
    p = p / p.sum()
    return p


#: the least probability with which two neighbouring likely query slots must come in either order (1 %: else one
#: of them is ordered the same way in more than 99 % of sequences, whatever the seed; see max_power_a)
MIN_SLOT_SWAP = 0.01


def max_power_a(space: int, num_queries: int) -> float:
    r"""The largest ``power_a`` for which the query positions still depend on the seed (inf if any does).

    The K = ``num_queries`` gaps are drawn without replacement from ``space`` slots with weights
    w_i = a·i^(a−1) (i = g + 1), sequentially (zoology) or as the Gumbel top-K (``standard``): both are the
    Plackett–Luce law, under which slot i comes before slot j with probability w_i/(w_i + w_j). Every query's
    slot varies with the seed when each two neighbouring slots among the K + 1 most likely can come in either
    order with probability ≥ ``MIN_SLOT_SWAP``. For a ≤ 1 the most likely slots are 1, 2, … and the weakest
    pair (1, 2) has probability 1/(1 + 2^(1−a)) ≥ 1/3: every a ∈ (0, 1] passes. For a > 1 they are
    S, S−1, …, and the weakest pair (i₀, i₀+1) with i₀ = max(S − K, 1) passes while
    1/(1 + ((i₀+1)/i₀)^(a−1)) ≥ t, i.e.

    .. math:: a \le 1 + \frac{\ln(1/t - 1)}{\ln((i_0 + 1)/i_0)}.

    (At a = 500 with 24 slots and 8 queries that probability is 1e-13: every seed gave the same positions.)
    """
    if space <= 1:
        return math.inf  # one slot: its position is fixed by the task, not by the gap law
    i0 = max(space - num_queries, 1)
    return 1.0 + math.log(1.0 / MIN_SLOT_SWAP - 1.0) / math.log((i0 + 1) / i0)


def _check_gap_law(power_a, space: int, num_queries: int) -> float:
    """``power_a`` as a float if it is a finite real in (0, max_power_a(space, num_queries)]; else a ValueError
    naming the value, the accepted range for these sizes and the fix."""
    if isinstance(power_a, (bool, np.bool_)) or not isinstance(power_a, numbers.Real):
        raise ValueError(
            f"power_a must be a real number, got {power_a!r} (type {type(power_a).__name__}); "
            "pass a float > 0 (0.01 = zoology default, 1.0 = uniform gaps)."
        )
    a = float(power_a)
    a_max = max_power_a(space, num_queries)
    accepted = f"0 < power_a <= {a_max:.4g}" if math.isfinite(a_max) else "power_a > 0"
    if not (math.isfinite(a) and a > 0):
        raise ValueError(
            f"power_a must be a finite number > 0 (gap law p(g) ∝ a·(g+1)^(a-1)), got power_a={power_a!r}; "
            f"accepted here: {accepted}; pass e.g. 0.01 (zoology default) or 1.0 (uniform)."
        )
    if a > a_max:
        i0 = max(space - num_queries, 1)
        e = math.exp(-(a - 1.0) * math.log((i0 + 1) / i0))  # a > a_max > 1: the exponent is < 0, no overflow
        swap = e / (1.0 + e)
        raise ValueError(
            f"power_a={power_a!r} makes the query positions (nearly) the same for every seed: with {space} query "
            f"slots and {num_queries} queries, gap g={i0 - 1} is drawn before g={i0} with probability {swap:.1e} "
            f"< {MIN_SLOT_SWAP:g} (gap law p(g) ∝ a·(g+1)^(a-1)). Accepted for these sizes: {accepted}; "
            "pass a smaller power_a (1.0 = uniform gaps, 0.01 = zoology default)."
        )
    with np.errstate(under="ignore", divide="ignore"):
        smallest = a * float(space) ** (a - 1.0) if a < 1 else a
    if not smallest > 0:
        raise ValueError(
            f"power_a={power_a!r} underflows the gap weights a·(g+1)^(a-1) to 0 over {space} slots; "
            f"accepted here: {accepted} with power_a >= 1e-300; pass e.g. 0.01 (zoology default)."
        )
    return a


def _validate(vocab_size, num_examples, input_seq_len, power_a, num_kv_pairs, num_passes, random_non_queries) -> None:
    V = check_int("vocab_size", vocab_size, 1)
    check_int("num_examples", num_examples, 1)
    L = check_int("input_seq_len", input_seq_len, 2)
    K = check_int("num_kv_pairs", num_kv_pairs, 1)
    P = check_int("num_passes", num_passes, 1)

    if isinstance(power_a, (bool, np.bool_)) or not isinstance(power_a, numbers.Real):
        raise ValueError(
            f"power_a must be a real number, got {power_a!r} (type {type(power_a).__name__}); "
            "pass a float > 0 (0.01 = zoology default, 1.0 = uniform gaps)."
        )
    if not (math.isfinite(float(power_a)) and float(power_a) > 0):
        raise ValueError(
            f"power_a must be a finite number > 0 (gap law p(g) ∝ a·(g+1)^(a-1)), got "
            f"power_a={power_a!r}; pass e.g. 0.01 (zoology default) or 1.0 (uniform)."
        )
    if not isinstance(random_non_queries, (bool, np.bool_)):
        raise ValueError(
            f"random_non_queries must be a bool, got {random_non_queries!r} "
            f"(type {type(random_non_queries).__name__}); pass True or False."
        )

    if L % 2 != 0:
        raise ValueError(
            f"input_seq_len must be even (zoology: input_seq_len % 2 == 0), got "
            f"input_seq_len={L}; use {L + 1} or {L - 1}."
        )
    if not V > L:
        raise ValueError(
            f"vocab_size must be > input_seq_len (zoology rule), got vocab_size={V}, "
            f"input_seq_len={L}; use vocab_size >= {L + 1}."
        )
    needed = K * 2 * P + K * 2
    if needed > L:
        max_k = L // (2 * P + 2)
        raise ValueError(
            f"num_kv_pairs={K} is too large: the rule num_kv_pairs*2*num_passes + num_kv_pairs*2 "
            f"<= input_seq_len needs {needed} <= {L} (num_passes={P}); use num_kv_pairs <= {max_k} "
            f"or input_seq_len >= {needed}."
        )
    n_keys = V // 2 - 1
    if K > n_keys:
        raise ValueError(
            f"num_kv_pairs={K} exceeds the {n_keys} available keys (keys are drawn without "
            f"replacement from arange(1, vocab_size//2), vocab_size={V}); use num_kv_pairs <= "
            f"{n_keys} or a larger vocab_size."
        )
    n_values = V - V // 2
    if K > n_values:
        raise ValueError(
            f"num_kv_pairs={K} exceeds the {n_values} available values (values are drawn without "
            f"replacement from arange(vocab_size//2, vocab_size), vocab_size={V}); use "
            f"num_kv_pairs <= {n_values} or a larger vocab_size."
        )
    space = (L - 2 * K * P) // 2
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        p = _power_law(space, float(power_a))
    if not np.all(np.isfinite(p)) or np.count_nonzero(p > 0) < K:
        raise ValueError(
            f"power_a={power_a!r} gives a degenerate gap distribution over {space} slots "
            f"(overflow/underflow of a·(g+1)^(a-1), or fewer than num_kv_pairs={K} non-zero "
            "probabilities); use a moderate value such as 0.01 or 1.0."
        )
    _check_gap_law(power_a, space, K)


def _check_seed(seed) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise ValueError(
            f"seed must be an integer, got {seed!r} (type {type(seed).__name__}); pass an int in [0, 2**32)."
        )
    seed = int(seed)
    if not 0 <= seed < _MAX_SEED:
        raise ValueError(
            f"seed must be in [0, 2**32) (np.random.RandomState range), got seed={seed}; pass e.g. seed % 2**32."
        )
    return seed
