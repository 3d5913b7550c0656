"""MQAR: zoology's exact generator :func:`multiquery_ar` and its types (:class:`MQARConfig`, :class:`MQARBatch`);
specified in the docstring of :mod:`mamba_recall.tasks.mqar`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...labels import IGNORE_INDEX
from ._checks import _check_seed, _power_law, _validate


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

    * ``inputs`` (torch.LongTensor, shape (n, L)): token ids.
    * ``labels`` (torch.LongTensor, shape (n, L)): ``IGNORE_INDEX`` (-100) except
      ``labels[b, query_positions[b, i]] = values[b, i]``.
    * ``keys``, ``values`` (torch.LongTensor, shape (n, K)): key ``i`` and its bound value, in context order.
    * ``gaps`` (torch.LongTensor, shape (n, K)): query slot of key ``i`` (index into ``arange(num_slots)``).
    * ``query_positions`` (torch.LongTensor, shape (n, K)): input position of the query of key ``i``:
      ``context_len + 2 * gaps``.
    * ``config`` (MQARConfig) and ``seed`` (int): what generated it.
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


def _zoology_arrays(rng: np.random.RandomState, V: int, n: int, L: int, K: int, P: int, a: float):
    """The NumPy part of :func:`multiquery_ar`, in zoology's RNG call order (keys for every example, then values,
    then gaps, one ``rng.choice(..., replace=False)`` per row). Returns ``(keys, values, gaps, examples, labels,
    context_size)``: keys, values, gaps (n, K); ``examples`` and ``labels`` the length ``L + 1`` arrays (n, L + 1)
    before the shift by one, 0 where a filler goes."""
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

    return keys, values, gaps, examples, labels, context_size


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

    keys, values, gaps, examples, labels, context_size = _zoology_arrays(rng, V, n, L, K, P, a)

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
