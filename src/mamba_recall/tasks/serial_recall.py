r"""The structured serial-recall task of paper 004 (Airlangga et al.) in a synthetic vocabulary.

The paper's prompts are natural language, ``Context: s_1 r_1 o_1. s_2 r_2 o_2. … s_L r_L o_L.
Query: s_k r_k`` → ``o_k``; here names and relations are single abstract tokens (no tokenizer, no
BOS unless asked), so positions are exact (the paper's §3.2 task in token ids):

    vocabulary  PAD=0, SEP('.')=1, BOS=2, NAME_0..NAME_{NE−1}, REL_0..REL_{NR−1}, FILL_0..FILL_{NF−1}
    triple i (1-based) occupies token indices 4(i−1) … 4(i−1)+3  =  s_i r_i o_i SEP
    context length 4L; query s_k r_k; total T = 4L + 2  (+ n + 1 with n distractors and their SEP)
    prediction: argmax of the logits at the last index; correct iff it equals o_k (one token)

* **Names**: all ``2L`` subjects and objects distinct when ``2L ≤ NE`` (the paper's text), else
  subjects distinct and objects distinct (the released data's overlapping pools).
* **Relations**: ``repeated`` = one relation for every triple and the query; ``random`` = relations
  drawn without replacement while ``L ≤ NR`` (with replacement beyond). The two variants are
  **paired**: with the same seed they share every name, only the relations differ (as the released
  data), because names and relations are drawn from separate seeded streams.
* **Distractors** (§3.3): ``n`` tokens i.i.d. uniform over the content vocabulary (names ∪
  relations, never SEP) — or over the filler pool, never used in training — then one SEP, between
  the context and the query.
* **Periodic inputs** (§3.2): length-64 sequences with period ``k`` (tiling of a non-periodic
  motif) or a marker every ``k`` positions.

Training examples use a *multi-query* format: the context, then ``Q`` query triples
``s r o .`` of distinct context positions, with the loss on every queried ``o`` (predicted at the
``r`` position); the first query has exactly the evaluation format.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .mqar import IGNORE_INDEX, check_int

__all__ = [
    "RecallVocab",
    "RecallContexts",
    "recall_contexts",
    "recall_prompts",
    "query_tokens",
    "multiquery_batch",
    "periodic_sequences",
    "VARIANTS",
    "PERIODIC_READINGS",
]

VARIANTS = ("repeated", "random")
PERIODIC_READINGS = ("tiling", "marker")
PAD, SEP, BOS = 0, 1, 2


@dataclass(frozen=True)
class RecallVocab:
    """Token ids of the synthetic vocabulary: PAD=0, SEP=1, BOS=2, then names, relations, fillers.

    ``bos``: the format of the model that uses this vocabulary: contexts built with it start with BOS
    (``recall_contexts`` and ``multiquery_batch`` read it when their ``bos`` argument is left at ``None``)."""

    n_names: int = 32
    n_relations: int = 8
    n_filler: int = 16
    bos: bool = False  # every context starts with BOS (a model trained so must be evaluated so)

    def __post_init__(self):
        check_int("n_names", self.n_names, 2)
        check_int("n_relations", self.n_relations, 1)
        check_int("n_filler", self.n_filler, 0)

    @property
    def name0(self) -> int:
        return 3

    @property
    def rel0(self) -> int:
        return 3 + self.n_names

    @property
    def fill0(self) -> int:
        return 3 + self.n_names + self.n_relations

    @property
    def size(self) -> int:
        return 3 + self.n_names + self.n_relations + self.n_filler

    def name(self, i):
        return self.name0 + np.asarray(i)

    def rel(self, i):
        return self.rel0 + np.asarray(i)

    @property
    def content_tokens(self) -> np.ndarray:
        """Names and relations (what distractors are drawn from by default)."""
        return np.arange(self.name0, self.fill0)

    @property
    def filler_tokens(self) -> np.ndarray:
        return np.arange(self.fill0, self.size)

    def decode(self, tokens) -> str:
        """Readable form, e.g. ``'n3 r0 n17 . n5 r0'`` (for notebooks and error messages)."""
        out = []
        for t in np.asarray(tokens).ravel().tolist():
            if t == PAD:
                out.append("_")
            elif t == SEP:
                out.append(".")
            elif t == BOS:
                out.append("<s>")
            elif t < self.rel0:
                out.append(f"n{t - self.name0}")
            elif t < self.fill0:
                out.append(f"r{t - self.rel0}")
            elif t < self.size:
                out.append(f"f{t - self.fill0}")
            else:
                raise ValueError(f"token {t} is outside the vocabulary of size {self.size}.")
        return " ".join(out)


@dataclass
class RecallContexts:
    """``n`` contexts of ``L`` triples (one relation variant), as token ids and their parts.

    tokens: (n, 4L) int64 (with a leading BOS column if ``bos``: (n, 4L+1));
    subjects, objects, relations: (n, L) int64 token ids; answer for query k is objects[:, k−1].
    """

    tokens: torch.Tensor
    subjects: torch.Tensor
    objects: torch.Tensor
    relations: torch.Tensor
    L: int
    variant: str
    bos: bool = False
    vocab: RecallVocab | None = None

    def query(self, k) -> torch.Tensor:
        """(n, 2) query tokens ``s_k r_k`` for 1-based ``k`` (int or (n,) array of positions)."""
        return query_tokens(self, k)


def _check_variant(variant):
    if variant not in VARIANTS:
        raise ValueError(f"unknown relation variant {variant!r}; choose one of {', '.join(VARIANTS)}.")
    return variant


def recall_contexts(
    L: int,
    n: int,
    variant: str = "repeated",
    *,
    vocab: RecallVocab | None = None,
    seed: int = 0,
    bos: bool | None = None,
) -> RecallContexts:
    """``n`` recall contexts of ``L`` triples ``s r o .`` (paper §3.2), deterministic in ``seed``.

    Names come from ``RandomState(seed)`` and relations from ``RandomState(seed + 1_000_003)``, so
    the ``repeated`` and ``random`` variants with the same seed share all names (paired design).
    """
    vocab = vocab or RecallVocab()
    bos = vocab.bos if bos is None else bool(bos)
    L, n = check_int("L", L), check_int("n", n)
    _check_variant(variant)
    NE, NR = vocab.n_names, vocab.n_relations
    if L > NE:
        raise ValueError(
            f"L={L} triples need at least L distinct subject names; the vocabulary has "
            f"n_names={NE}. Use a larger RecallVocab(n_names=...)."
        )
    rng_names = np.random.RandomState(seed)
    rng_rel = np.random.RandomState(seed + 1_000_003)
    s = np.empty((n, L), np.int64)
    o = np.empty((n, L), np.int64)
    for b in range(n):
        if 2 * L <= NE:
            names = rng_names.choice(NE, size=2 * L, replace=False)
            s[b], o[b] = names[:L], names[L:]
        else:
            s[b] = rng_names.choice(NE, size=L, replace=False)
            o[b] = rng_names.choice(NE, size=L, replace=False)
    r = np.empty((n, L), np.int64)
    for b in range(n):
        if variant == "repeated":
            r[b] = rng_rel.randint(NR)
        else:
            r[b] = rng_rel.choice(NR, size=L, replace=L > NR)
    s, o, r = vocab.name(s), vocab.name(o), vocab.rel(r)
    toks = np.stack([s, r, o, np.full_like(s, SEP)], axis=-1).reshape(n, 4 * L)
    if bos:
        toks = np.concatenate([np.full((n, 1), BOS, np.int64), toks], axis=1)
    t = lambda a: torch.as_tensor(a, dtype=torch.long)  # noqa: E731
    return RecallContexts(t(toks), t(s), t(o), t(r), L, variant, bos, vocab)


def query_tokens(ctx: RecallContexts, k) -> torch.Tensor:
    """(n, 2) tokens ``s_k r_k`` for 1-based position(s) ``k`` (an int or an (n,) array)."""
    n = ctx.subjects.shape[0]
    k = torch.as_tensor(k, dtype=torch.long)
    if k.dim() == 0:
        k = k.expand(n)
    if k.shape != (n,) or int(k.min()) < 1 or int(k.max()) > ctx.L:
        raise ValueError(f"k must be in 1..L={ctx.L} (1-based), as an int or an ({n},) array.")
    idx = (k - 1)[:, None]
    return torch.cat([ctx.subjects.gather(1, idx), ctx.relations.gather(1, idx)], dim=1)


def _distractors(n_rows, n_distract, vocab, rng, pool):
    if pool == "content":
        tokens = vocab.content_tokens
    elif pool == "filler":
        tokens = vocab.filler_tokens
        if tokens.size == 0:
            raise ValueError("distractor_pool='filler' needs RecallVocab(n_filler >= 1).")
    else:
        raise ValueError(f"unknown distractor_pool {pool!r}; use 'content' or 'filler'.")
    d = rng.choice(tokens, size=(n_rows, n_distract), replace=True)
    return np.concatenate([d, np.full((n_rows, 1), SEP)], axis=1)


def recall_prompts(
    ctx: RecallContexts, k, *, n_distract: int = 0, distractor_seed: int = 0, distractor_pool: str = "content"
):
    """Full prompts ``context [distractors SEP] s_k r_k`` and answers ``o_k``.

    Returns ``(tokens (n, T), answers (n,))`` with ``T = 4L + 2`` (+1 BOS) (+ n_distract + 1).
    The prediction is read at the last index.
    """
    q = query_tokens(ctx, k)
    n = q.shape[0]
    kk = torch.as_tensor(k, dtype=torch.long)
    kk = kk.expand(n) if kk.dim() == 0 else kk
    parts = [ctx.tokens]
    if n_distract:
        check_int("n_distract", n_distract, 0)
        vocab = _vocab_of(ctx)
        rng = np.random.RandomState(distractor_seed)
        parts.append(torch.as_tensor(_distractors(n, n_distract, vocab, rng, distractor_pool), dtype=torch.long))
    parts.append(q)
    answers = ctx.objects.gather(1, (kk - 1)[:, None])[:, 0]
    return torch.cat(parts, dim=1), answers


def _vocab_of(ctx):
    vocab = getattr(ctx, "vocab", None)
    if vocab is None:
        raise ValueError("this RecallContexts has no vocabulary attached; set ctx.vocab = RecallVocab(...).")
    return vocab


def multiquery_batch(
    L: int,
    batch: int,
    *,
    n_queries: int | None = None,
    vocab: RecallVocab | None = None,
    seed: int = 0,
    p_repeated: float = 0.5,
    oversample_last: bool = True,
    bos: bool | None = None,
    n_gap: int = 0,
):
    """A training batch: contexts of ``L`` triples then ``Q`` query triples ``s r o .`` (the chapter's training recipe).

    Half the rows (``p_repeated``) use the repeated relation, the rest random relations. Queries are
    ``Q = n_queries or min(L, 4)`` distinct context positions in random order (position ``L`` is
    over-sampled ×2 in the first query if ``oversample_last``). Returns ``(inputs (B, T), labels)``
    with ``T = [1 BOS] + 4L [+ n_gap + 1] + 4Q`` and ``labels = IGNORE_INDEX`` (−100) except at each
    query's relation token, whose label is its object.

    ``bos``: a leading BOS token (default: ``vocab.bos``). ``n_gap > 0``: ``n_gap`` filler tokens
    (i.i.d. from the filler pool) and one SEP between the context and the queries, the format of
    ``recall_prompts(n_distract=n_gap, distractor_pool="filler")``, so that filler distractors are in
    distribution. With both off the batch is bit-for-bit the one of earlier versions (same random stream).
    """
    vocab = vocab or RecallVocab()
    L, batch = check_int("L", L), check_int("batch", batch)
    check_int("n_gap", n_gap, 0)
    if n_gap and vocab.n_filler < 1:
        raise ValueError("n_gap > 0 needs filler tokens: use RecallVocab(n_filler >= 1).")
    Q = min(L, 4) if n_queries is None else min(check_int("n_queries", n_queries), L)
    rng = np.random.RandomState(seed)
    gap_rng = np.random.RandomState(seed + 2_000_003)  # its own stream: the rest is unchanged by n_gap
    n_rep = int(rng.binomial(batch, p_repeated))
    rows, labels = [], []
    for variant, m in (("repeated", n_rep), ("random", batch - n_rep)):
        if m == 0:
            continue
        ctx = recall_contexts(L, m, variant, vocab=vocab, seed=int(rng.randint(2**31 - 1)), bos=bos)
        for b in range(m):
            ks = rng.permutation(L)[:Q]
            if oversample_last and rng.rand() < 1.0 / L:  # position L twice as likely first
                ks = np.concatenate([[L - 1], ks[ks != L - 1]])[:Q]
            s, r, o = ctx.subjects[b, ks], ctx.relations[b, ks], ctx.objects[b, ks]
            q = torch.stack([s, r, o, torch.full_like(s, SEP)], dim=-1).reshape(-1)
            parts = [ctx.tokens[b]]
            if n_gap:
                parts.append(torch.as_tensor(_distractors(1, n_gap, vocab, gap_rng, "filler")[0], dtype=torch.long))
            row = torch.cat([*parts, q])
            lab = torch.full_like(row, IGNORE_INDEX)
            start = ctx.tokens.shape[1] + (n_gap + 1 if n_gap else 0)  # first query's relation is at start + 1
            lab[start + 1 + 4 * torch.arange(Q)] = o
            rows.append(row)
            labels.append(lab)
    perm = torch.as_tensor(rng.permutation(batch))
    return torch.stack(rows)[perm], torch.stack(labels)[perm]


def periodic_sequences(
    k: int, n: int = 64, length: int = 64, *, tokens=None, seed: int = 0, reading: str = "tiling"
) -> torch.Tensor:
    """(n, length) sequences with period ``k`` (paper §4.3), deterministic in ``seed``.

    ``tiling``: a motif of ``k`` tokens from ``tokens`` (without replacement when ``k ≤ |tokens|``,
    else with replacement, resampled until the motif is not itself periodic), ``x_t = m[t mod k]``;
    ``k = 1`` is constant, ``k = length`` i.i.d. random. ``marker``: a fixed token ``v*`` at
    ``t ≡ 0 (mod k)``, other positions i.i.d. from ``tokens \\ {v*}``. Both agree at ``k = 1``.
    """
    k, n, length = check_int("k", k), check_int("n", n), check_int("length", length)
    if reading not in PERIODIC_READINGS:
        raise ValueError(f"unknown reading {reading!r}; choose one of {', '.join(PERIODIC_READINGS)}.")
    tokens = np.asarray(RecallVocab().name(np.arange(16)) if tokens is None else tokens)
    if tokens.size < 2:
        raise ValueError("periodic_sequences needs at least 2 tokens to draw from.")
    rng = np.random.RandomState(seed)
    out = np.empty((n, length), np.int64)
    for b in range(n):
        if reading == "tiling":
            while True:
                motif = rng.choice(tokens, size=k, replace=k > tokens.size)
                if k == 1 or not any(
                    k % p == 0 and np.array_equal(motif, np.tile(motif[:p], k // p)) for p in range(1, k)
                ):
                    break
            out[b] = np.resize(motif, length)
        else:
            marker = rng.choice(tokens)
            rest = tokens[tokens != marker]
            out[b] = rng.choice(rest, size=length)
            out[b, ::k] = marker
    return torch.as_tensor(out)
