r"""Multi-query associative recall (MQAR): the one generator of the library, with the papers' variants as options.

:func:`mqar` ``(V, N_f, L, n, seed, *, variant=...)`` returns ``(inputs, labels)``, int64 ``(n, L)``, labels
``IGNORE_INDEX`` except at the query positions, where the target (the value) sits *at the query token*:

=====================  =========================================================================================
``variant``            the data
=====================  =========================================================================================
``"standard"``         (default) zoology's MQAR distribution, vectorised in torch (paper 002's data; keys from
                       ``[1, V/2)``, values from ``[V/2, V)``, ``power_a=1`` uniform query gaps as the authors'
                       [code]; ``pad="full"`` fills with uniform tokens of ``[0, V)``, ``"zero"`` leaves 0).
                       Sequential weighted sampling without replacement ≡ Gumbel-top-k: ~1 ms per 128×64
                       batch instead of ~25 ms for the zoology-exact loop below.
``"repeated_keys"``    paper 002, App. G / Remark 3 ([code] ``multiquery_ar_repeated_keys``): ``Nk`` chunks over
                       the same keys (re-permuted per chunk, fresh values per chunk), the canonical chunk last;
                       the label is the value of the **last** occurrence; uniform gaps. Needs ``2 N_f (Nk+1) ≤ L``.
``"repeated_queries"`` paper 002, App. G / Remark 5 ([code] ``multiquery_ar_repeated_queries``): the query area
                       is split into ``Nq`` sections of length ``(L − 2N_f)/Nq``, each holding all ``N_f``
                       queries at even offsets with uniform gaps; every occurrence is labelled.
                       ``post_query="full"`` ([code]) pads uniformly; ``"values"`` puts a random *value* token
                       after every query (the paper's examples, Remark 5's 3/4 prediction).
``"paper003"``         paper 003, App. D.3 (with distinct keys): ``V`` is the number of *values* |V| and the
                       vocabulary is κ + |V| (κ = ``N_f``): keys a permutation of ``0..κ−1``, values
                       ``κ + randint(|V|)``, noise values elsewhere; κ query positions uniform without
                       replacement in ``2κ..L−1``, each key queried once in random order; ``labels`` = the value
                       index (in ``[0, |V|)``). Needs ``L ≥ 3κ``. numpy ``default_rng(seed)``.
``"zoology"``          :func:`multiquery_ar` below, zoology's exact RNG call sequence (``power_a`` default 0.01).
=====================  =========================================================================================

:func:`batch_fn` makes a ``make_batch(step)`` for :func:`mamba_recall.train.train` (seed ``base_seed + step``).
The rest of this docstring specifies :func:`multiquery_ar`, the zoology reference the other variants follow.

Zoology's MQAR
==============

This module reproduces the data generator of HazyResearch/zoology,
``zoology/data/multiquery_ar.py::multiquery_ar`` at commit ``d88d6f5``
(the file was ``zoology/data/associative_recall.py`` before commit ``dbcb60d``;
the 2024 version is the ``num_passes=1`` special case). The semantics are
restated below, step by step.

The task
--------
Let :math:`V` be the vocabulary size, :math:`L` the sequence length, :math:`K`
the number of key-value pairs and :math:`P` the number of passes. The
vocabulary is split in two halves:

* **keys** :math:`k_1, \dots, k_K` are drawn *without replacement* from
  :math:`\{1, \dots, \lfloor V/2 \rfloor - 1\}` (token 0 is reserved as the
  filler placeholder);
* **values** :math:`v_1, \dots, v_K` are drawn *without replacement* from
  :math:`\{\lfloor V/2 \rfloor, \dots, V-1\}`.

So, within one example, keys are distinct, values are distinct, and key
:math:`k_i` is bound to value :math:`v_i`.

**Context.** Positions :math:`0 \dots 2K-1` hold
:math:`k_1\, v_1\, k_2\, v_2 \dots k_K\, v_K`; this block is repeated
:math:`P` times (same order each pass), so the context has length
:math:`C = 2KP`.

**Queries.** The remaining :math:`L - C` positions form the query region,
which has :math:`S = \lfloor (L - C)/2 \rfloor` slots (even offsets). For each
example, :math:`K` distinct slots ("gaps") :math:`g_1, \dots, g_K` are drawn
without replacement from :math:`\{0, \dots, S-1\}` with a power law

.. math::

    p(g) \;=\; \frac{a\,(g+1)^{a-1}}{\sum_{h=0}^{S-1} a\,(h+1)^{a-1}},
    \qquad a = \texttt{power\_a} > 0,

(sequential sampling without replacement, as ``numpy.random.choice`` does).
The default :math:`a = 0.01` strongly favours early slots, so queries cluster
right after the context; :math:`a = 1` is uniform. Key :math:`k_i` is written
at input position :math:`q_i = C + 2 g_i`. Every key is therefore queried
exactly once, in an order set by the gaps (not by the context order), and
every query sits at an even offset of the query region.

**Labels.** ``labels[b, t] = -100`` (:data:`IGNORE_INDEX`) everywhere except at
the query positions, where ``labels[b, q_i] = v_i``: the model must predict,
*at the query token*, the value bound to that key (next-token prediction).
zoology builds length-:math:`L+1` arrays, writes :math:`v_i` at
:math:`2 g_i + C + 1` and then takes ``inputs = ex[:, :-1]``,
``labels = lab[:, 1:]``; this module does exactly the same. Loss and accuracy
are computed only where ``labels != -100``.

**Fillers.** With ``random_non_queries=True`` (the default) every remaining 0
in the inputs (the odd offsets and unused slots of the query region) is
replaced by a token drawn uniformly from the *whole* vocabulary
:math:`\{0, \dots, V-1\}`; fillers may therefore coincide with keys or values
of the same example. With ``False`` they stay 0.

Example (``V=16, L=12, K=2, random_non_queries=False``)::

    inputs  k1 v1 k2 v2 | k2  0 k1  0  0  0  0  0
    labels  -100 x 4     | v2 -100 v1 -100 ...

Deviations from zoology (the only ones)
---------------------------------------
1. **Local RNGs.** zoology seeds the *global* NumPy RNG (``np.random.seed(seed)``)
   and draws fillers from the *global, unseeded* torch RNG. Here the NumPy draws
   use a local ``np.random.RandomState(seed)`` and the fillers a local
   ``torch.Generator`` seeded with ``seed``. The NumPy call sequence is the
   same as zoology's (keys for every example, then values for every example,
   then gaps for every example, each row via ``choice(..., replace=False)``),
   and ``np.random.seed(s)`` merely seeds the global ``RandomState`` whose
   bound methods are ``np.random.choice`` etc. So keys, values, gaps, query
   positions and labels are identical to zoology's whenever zoology's global
   NumPy seed equals ``seed``; the filler tokens are additionally identical
   when zoology's global torch RNG was seeded with ``torch.manual_seed(seed)``
   right before the call (a fresh CPU ``torch.Generator`` seeded with ``s``
   produces the same stream as the default CPU generator after
   ``torch.manual_seed(s)``). Global RNG state is never touched.
2. **No tiling of the choice population.** zoology tiles ``arange(1, V//2)``
   to an ``(n, V//2 - 1)`` array and calls ``np.apply_along_axis`` on it;
   every row is the same array, so calling ``rng.choice`` on the 1-D population
   once per row consumes the RNG identically and returns identical numbers,
   without the ``n x V/2`` memory (3 GB for zoology's 100k x 8192 segment).
   Cost note: like zoology, each key/value draw permutes the whole half
   vocabulary (that is what ``choice(..., replace=False)`` does), so 100k
   examples at ``V=8192`` take ~30 s on one CPU core; cache large segments.
3. **Validation.** zoology uses bare ``assert`` statements; here every rule
   raises ``ValueError`` with a message naming the argument, its value, the
   rule and a fix.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import torch

from ..labels import IGNORE_INDEX

__all__ = [
    "IGNORE_INDEX",
    "MQARConfig",
    "MQARBatch",
    "VARIANTS",
    "batch_fn",
    "check_int",
    "max_power_a",
    "mqar",
    "mqar_batch",
    "multiquery_ar",
]


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


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True)
class MQARConfig:
    """Parameters of one MQAR data segment (zoology ``MQARConfig`` defaults).

    Construction validates the parameters (raising ``ValueError``), so an
    ``MQARConfig`` that exists always generates.
    """

    vocab_size: int = 8192
    input_seq_len: int = 64
    num_kv_pairs: int = 8
    num_examples: int = 1000
    power_a: float = 0.01
    num_passes: int = 1
    random_non_queries: bool = True

    def __post_init__(self) -> None:
        _validate(
            self.vocab_size,
            self.num_examples,
            self.input_seq_len,
            self.power_a,
            self.num_kv_pairs,
            self.num_passes,
            self.random_non_queries,
        )

    @property
    def context_len(self) -> int:
        """Length of the (tiled) context, ``2 * num_kv_pairs * num_passes``."""
        return 2 * self.num_kv_pairs * self.num_passes

    @property
    def num_slots(self) -> int:
        """Number of query slots ``(input_seq_len - context_len) // 2``."""
        return (self.input_seq_len - self.context_len) // 2


@dataclass(frozen=True, eq=False)
class MQARBatch:
    """A generated MQAR segment. ``n = num_examples``, ``L = input_seq_len``, ``K = num_kv_pairs``.

    Attributes
    ----------
    inputs : torch.LongTensor, shape (n, L)
        Token ids.
    labels : torch.LongTensor, shape (n, L)
        ``IGNORE_INDEX`` (-100) except ``labels[b, query_positions[b, i]] = values[b, i]``.
    keys, values : torch.LongTensor, shape (n, K)
        Key ``i`` and its bound value, in context order.
    gaps : torch.LongTensor, shape (n, K)
        Query slot of key ``i`` (index into ``arange(num_slots)``).
    query_positions : torch.LongTensor, shape (n, K)
        Input position of the query of key ``i``: ``context_len + 2 * gaps``.
    config : MQARConfig
    seed : int
    """

    inputs: torch.Tensor
    labels: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    gaps: torch.Tensor
    query_positions: torch.Tensor
    config: MQARConfig
    seed: int

    def __len__(self) -> int:
        return int(self.inputs.shape[0])


# --------------------------------------------------------------------------- generator


def multiquery_ar(
    vocab_size: int,
    num_examples: int,
    input_seq_len: int,
    seed: int,
    power_a: float = 0.01,
    num_kv_pairs: int = 8,
    num_passes: int = 1,
    random_non_queries: bool = True,
) -> MQARBatch:
    """Generate an MQAR segment with zoology's exact semantics and RNG call sequence.

    See the module docstring for the task definition. Shapes: ``inputs`` and
    ``labels`` are ``(num_examples, input_seq_len)`` int64 tensors.

    Rules (each violation raises ``ValueError`` naming the argument):
    ``input_seq_len`` even; ``vocab_size > input_seq_len``;
    ``num_kv_pairs*2*num_passes + num_kv_pairs*2 <= input_seq_len``;
    ``num_kv_pairs <= vocab_size//2 - 1``; integers positive;
    ``0 < power_a <= max_power_a(slots, num_kv_pairs)`` (beyond it the query positions are nearly the same
    for every seed); ``seed`` in ``[0, 2**32)``.

    Reference: HazyResearch/zoology ``d88d6f5``, ``zoology/data/multiquery_ar.py``
    (Arora et al., 2023, "Zoology"). Deviations (local RNGs) are listed in
    the module docstring.
    """
    seed = _check_seed(seed)
    config = MQARConfig(
        vocab_size=vocab_size,
        input_seq_len=input_seq_len,
        num_kv_pairs=num_kv_pairs,
        num_examples=num_examples,
        power_a=power_a,
        num_passes=num_passes,
        random_non_queries=random_non_queries,
    )
    V, n, L = int(vocab_size), int(num_examples), int(input_seq_len)
    K, P, a = int(num_kv_pairs), int(num_passes), float(power_a)

    # zoology: np.random.seed(seed). Here: a local RandomState with the same stream.
    rng = np.random.RandomState(seed)

    # two tokens for key and value; the context is tiled num_passes times
    pair_size = K * 2
    context_size = pair_size * P

    key_vocab_size = V // 2
    key_choices = np.arange(1, key_vocab_size)
    value_choices = np.arange(key_vocab_size, V)

    # zoology: np.apply_along_axis(np.random.choice, 1, np.tile(choices, (n, 1)),
    #                              replace=False, size=K)
    # -> one choice() call per row, rows in order; identical numbers without the tile.
    keys = np.stack([rng.choice(key_choices, replace=False, size=K) for _ in range(n)])
    values = np.stack([rng.choice(value_choices, replace=False, size=K) for _ in range(n)])

    kvs = np.zeros((n, pair_size), dtype=np.int64)
    kvs[:, 0::2] = keys
    kvs[:, 1::2] = values
    kvs = np.tile(kvs, (1, P))

    # power law over the query slots
    space = (L - context_size) // 2
    p = _power_law(space, a)

    # zoology: x = np.stack([np.arange(space, dtype=int)] * n);
    #          gaps = np.apply_along_axis(np.random.choice, axis=1, arr=x,
    #                                     replace=False, p=p, size=K)
    slots = np.arange(space, dtype=int)
    gaps = np.stack([rng.choice(slots, replace=False, p=p, size=K) for _ in range(n)])

    # queries and answers (length L + 1 arrays, then shift by one)
    queries = np.zeros((n, L - context_size + 1), dtype=np.int64)
    np.put_along_axis(queries, gaps * 2, values=keys, axis=1)
    examples = np.concatenate([kvs, queries], axis=1)

    labels = np.full((n, L + 1), IGNORE_INDEX, dtype=np.int64)
    np.put_along_axis(labels, gaps * 2 + context_size + 1, values=values, axis=1)

    inputs_t = torch.tensor(examples[:, :-1], dtype=torch.int64)
    labels_t = torch.tensor(labels[:, 1:], dtype=torch.int64)

    # replace all the 0 with random values
    # zoology: inputs[inputs == 0] = torch.randint(vocab_size, size=inputs.shape)[inputs == 0]
    # (global torch RNG); here a local generator seeded with `seed`.
    if random_non_queries:
        gen = torch.Generator(device="cpu")
        gen.manual_seed(seed)
        fill = torch.randint(V, size=inputs_t.shape, generator=gen)
        mask = inputs_t == 0
        inputs_t[mask] = fill[mask]

    gaps_t = torch.as_tensor(gaps, dtype=torch.int64)
    return MQARBatch(
        inputs=inputs_t,
        labels=labels_t,
        keys=torch.as_tensor(keys, dtype=torch.int64),
        values=torch.as_tensor(values, dtype=torch.int64),
        gaps=gaps_t,
        query_positions=context_size + 2 * gaps_t,
        config=config,
        seed=seed,
    )


def mqar_batch(config: MQARConfig, seed: int) -> MQARBatch:
    """Convenience wrapper: ``multiquery_ar(**config, seed=seed)``."""
    if not isinstance(config, MQARConfig):
        raise ValueError(
            f"config must be an MQARConfig, got {type(config).__name__}; "
            "build one with MQARConfig(vocab_size=..., input_seq_len=..., ...)."
        )
    return multiquery_ar(
        vocab_size=config.vocab_size,
        num_examples=config.num_examples,
        input_seq_len=config.input_seq_len,
        seed=seed,
        power_a=config.power_a,
        num_kv_pairs=config.num_kv_pairs,
        num_passes=config.num_passes,
        random_non_queries=config.random_non_queries,
    )


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
