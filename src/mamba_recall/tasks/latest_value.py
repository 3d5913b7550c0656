r"""The "latest value" MQAR variant of paper 000 (Le Corre, Huang, Bietti), Appendix A, Algorithm 1.

Vocabulary ``0..V-1`` split into keys ``K = {0..κ-1}`` and values ``L = {κ..V-1}`` (disjoint).
Algorithm 1 (paper), with our restatement of the unspecified overshoot rule::

    x ← []
    while len(x) < T − κ:
        s ~ U{0..n_ε};  append s noise tokens drawn uniformly from L      (noise = value tokens)
        k ~ p over K;   v ~ U(L);   append k, v                            (a binding k → v)
        [choice] if the block does not fit in the T − κ slots left, fill them with noise instead
    append a random permutation of K                                       (final queries)

Every re-occurrence of a key that already has a binding is a *query*: its answer is the **latest**
value bound to it (a key may be rebound). Two label modes (paper: "we enforce the model to output
identity on this position"):

* ``"identity"`` (the paper's, default): label = latest value at queries, the input token ``x_t``
  everywhere else; the loss is the mean over all T positions.
* ``"masked"`` (standard MQAR): label = latest value at queries, ``-100`` elsewhere.

Accuracy is always measured on queries only (``query_labels``). Shapes: inputs, labels (n, T) int64.

The theory distribution of Sec. 4 / App. D (:func:`theory_batch`): length T+1, ``x_0 = x_T = 0``
(the key), ``x_1..x_{T-1}`` i.i.d. uniform on ``{1..V-1}``, target ``x_1`` at position T only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .mqar import IGNORE_INDEX, check_int

TARGET_MODES = ("identity", "masked")
# event codes of pair_events()
NOISE, WRITE, READ, FIRST_KEY, START = 0, 1, 2, 3, 4
EVENT_NAMES = {
    NOISE: "forget (v1, v2)",
    WRITE: "write (k, v)",
    READ: "read (x, k)",
    FIRST_KEY: "key, no binding yet",
    START: "t = 0",
}


def validate(vocab_size, num_keys, seq_len, max_noise):
    """Check the generator's arguments; raise a ValueError that names the problem and the fix."""
    vocab_size = check_int("vocab_size", vocab_size, 2)
    num_keys = check_int("num_keys", num_keys, 1)
    seq_len = check_int("seq_len", seq_len, 1)
    max_noise = check_int("max_noise", max_noise, 0)
    if num_keys >= vocab_size:
        raise ValueError(
            f"num_keys={num_keys} leaves no value tokens in a vocabulary of {vocab_size}; use num_keys < vocab_size."
        )
    if seq_len < num_keys + 2:
        raise ValueError(
            f"seq_len={seq_len} is too short for one binding plus the {num_keys} final queries; "
            f"use seq_len >= {num_keys + 2}."
        )
    return vocab_size, num_keys, seq_len, max_noise


def latest_value_labels(x, num_keys: int):
    """Query targets of one sequence: ``(query_labels, is_query)``.

    ``query_labels[t]`` is the latest value bound to key ``x[t]`` (a binding is a key at t−1 followed
    by a value at t) if ``x[t]`` is a key with an earlier binding, else -100.
    """
    x = np.asarray(x)
    labels = np.full(x.shape[0], IGNORE_INDEX, dtype=np.int64)
    last: dict[int, int] = {}
    for t in range(x.shape[0]):
        tok = int(x[t])
        if tok < num_keys and tok in last:
            labels[t] = last[tok]
        if t >= 1 and x[t - 1] < num_keys and tok >= num_keys:
            last[int(x[t - 1])] = tok
    return labels, labels != IGNORE_INDEX


def latest_value_sequence(
    rng: np.random.Generator,
    vocab_size: int,
    num_keys: int,
    seq_len: int,
    max_noise: int,
    key_probs=None,
    return_noise_runs: bool = False,
):
    """One sequence of Algorithm 1 (int64 array of length ``seq_len``), drawn from ``rng``.

    ``key_probs``: the key distribution [p_1..p_κ] (uniform if None). With ``return_noise_runs``
    also the list of noise-run lengths s of the completed blocks (for tests).
    """
    keys = np.arange(num_keys)
    lo = num_keys
    x: list[int] = []
    runs: list[int] = []
    budget = seq_len - num_keys
    while len(x) < budget:
        s = int(rng.integers(0, max_noise + 1))
        noise = rng.integers(lo, vocab_size, size=s).tolist()
        k = int(rng.choice(keys, p=key_probs)) if key_probs is not None else int(rng.integers(0, num_keys))
        v = int(rng.integers(lo, vocab_size))
        block = noise + [k, v]
        room = budget - len(x)
        if len(block) > room:  # [choice] never overshoot, never cut a (k, v) pair: fill with noise
            block = rng.integers(lo, vocab_size, size=room).tolist()
        else:
            runs.append(s)
        x += block
    x += rng.permutation(keys).tolist()
    out = np.asarray(x, dtype=np.int64)
    return (out, runs) if return_noise_runs else out


@dataclass
class LatestValueBatch:
    """inputs, labels, query_labels: (n, T) int64; ``labels`` follow ``target``; ``query_labels`` are
    the query targets (-100 elsewhere) that accuracy is measured on."""

    inputs: torch.Tensor
    labels: torch.Tensor
    query_labels: torch.Tensor
    target: str
    vocab_size: int
    num_keys: int

    def __len__(self):
        return self.inputs.shape[0]


def latest_value_batch(
    num_examples: int,
    vocab_size: int = 8,
    num_keys: int = 1,
    seq_len: int = 256,
    max_noise: int = 3,
    *,
    seed: int = 0,
    target: str = "identity",
    key_probs=None,
) -> LatestValueBatch:
    """``num_examples`` sequences of Algorithm 1 from ``np.random.default_rng(seed)``, with labels."""
    vocab_size, num_keys, seq_len, max_noise = validate(vocab_size, num_keys, seq_len, max_noise)
    num_examples = check_int("num_examples", num_examples, 1)
    if target not in TARGET_MODES:
        raise ValueError(f"unknown target mode {target!r}; use one of {TARGET_MODES}.")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}.")
    if key_probs is not None:
        key_probs = np.asarray(key_probs, dtype=float)
        if key_probs.shape != (num_keys,) or (key_probs < 0).any() or abs(key_probs.sum() - 1) > 1e-9:
            raise ValueError(f"key_probs must be {num_keys} non-negative numbers summing to 1.")
    rng = np.random.default_rng(seed)
    xs = np.stack(
        [latest_value_sequence(rng, vocab_size, num_keys, seq_len, max_noise, key_probs) for _ in range(num_examples)]
    )
    q = np.stack([latest_value_labels(x, num_keys)[0] for x in xs])
    labels = np.where(q != IGNORE_INDEX, q, xs) if target == "identity" else q
    return LatestValueBatch(
        torch.from_numpy(xs), torch.from_numpy(labels), torch.from_numpy(q), target, vocab_size, num_keys
    )


def pair_events(x, num_keys: int) -> np.ndarray:
    """Event code of every position from the pair (x_{t−1}, x_t): WRITE (key, value), READ (a key with
    an earlier binding), FIRST_KEY (a key without one), NOISE (value, value), START (t = 0, a value).
    Shape: like ``x`` (T,) or (n, T)."""
    x = np.asarray(x)
    single = x.ndim == 1
    x = np.atleast_2d(x)
    ev = np.full(x.shape, NOISE, dtype=np.int64)
    prev = np.concatenate([np.full((x.shape[0], 1), -1), x[:, :-1]], axis=1)
    ev[(prev >= 0) & (prev < num_keys) & (x >= num_keys)] = WRITE
    ev[:, 0] = np.where(x[:, 0] >= num_keys, START, ev[:, 0])
    for i in range(x.shape[0]):
        _, is_q = latest_value_labels(x[i], num_keys)
        ev[i, is_q] = READ
        ev[i, (x[i] < num_keys) & ~is_q] = FIRST_KEY
    return ev[0] if single else ev


def paper_example():
    """The example of App. A: V = {A, B, X, Y, Z}, K = {A, B}: ``(tokens, ids, query_labels)``.

    x = X A Y Z X B Z X X B X A B  →  queries at positions 9, 11, 12 with targets Z, Y, X.
    """
    names = ["A", "B", "X", "Y", "Z"]
    tokens = "X A Y Z X B Z X X B X A B".split()
    ids = np.array([names.index(t) for t in tokens])
    labels, _ = latest_value_labels(ids, num_keys=2)
    return tokens, ids, [names[i] if i >= 0 else "·" for i in labels]


def theory_batch(num_examples: int, vocab_size: int, seq_len: int, *, seed: int = 0):
    """The conditioned distribution of Lemma 1: ``(inputs (n, T+1), targets (n,))``.

    x_0 = x_T = 0, x_1..x_{T-1} i.i.d. uniform on {1..V-1}; the target at position T is x_1.
    ``seq_len`` is the paper's T (so sequences have T+1 tokens, positions 0..T); T >= 2.
    """
    vocab_size = check_int("vocab_size", vocab_size, 3)
    seq_len = check_int("seq_len", seq_len, 2)
    num_examples = check_int("num_examples", num_examples, 1)
    rng = np.random.default_rng(seed)
    x = np.zeros((num_examples, seq_len + 1), dtype=np.int64)
    x[:, 1:seq_len] = rng.integers(1, vocab_size, size=(num_examples, seq_len - 1))
    return torch.from_numpy(x), torch.from_numpy(x[:, 1].copy())


def all_theory_sequences(vocab_size: int, seq_len: int, max_count: int = 2_000_000):
    """Every sequence of the theory distribution (each has probability 1/(V−1)^(T−1)): (count, T+1)."""
    count = (vocab_size - 1) ** (seq_len - 1)
    if count > max_count:
        raise ValueError(
            f"(V−1)^(T−1) = {count} sequences is too many to enumerate (max {max_count}); "
            "use Monte Carlo (theory_batch) instead."
        )
    grids = np.stack(np.meshgrid(*[np.arange(1, vocab_size)] * (seq_len - 1), indexing="ij"), -1)
    middle = grids.reshape(-1, seq_len - 1)
    x = np.zeros((middle.shape[0], seq_len + 1), dtype=np.int64)
    x[:, 1:seq_len] = middle
    return torch.from_numpy(x)
