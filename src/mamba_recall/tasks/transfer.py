r"""Synthetic long-context "downstream" tasks: the offline substitute of paper 004's Table 1 (§4.2).

The paper measures LongBench (Qasper, MultiFieldQA-en, 2WikiMultihopQA, MultiNews) after zeroing
Ā of the recall-identified long-term channels at every time step. LongBench cannot be had here,
so each LongBench category gets a synthetic analogue in the S-models' own vocabulary
(:class:`~mamba_recall.tasks.serial_recall.RecallVocab`: names ``n*``, relations ``r*``, filler
``f*``, ``SEP='.'``, ``BOS``). The tasks are in the training mixture of the ``s_mix`` S-model (so it
can do them) but are **never** used to identify channels.

==============  ===========================  =========================================================
LongBench       analogue                     one example (``F`` filler tokens ``f*`` in total)
==============  ===========================  =========================================================
Qasper          ``needle_qa``                ``f … f  s r o .  f … f  s r`` → ``o`` (fact at a random depth)
MultiFieldQA    ``mqar``                     ``M`` facts ``s r o .`` scattered in filler, then ``M`` queries
                                             ``s r o .`` in random order; the label of each ``r`` is its ``o``
2WikiMultihop   ``two_hop``                  facts ``a r1 b .`` and ``b r2 c .`` among ``D`` distractor facts,
                                             scattered in filler; query ``a r1 r2`` → ``c``
MultiNews       ``selective_copy``           ``M`` names at random places in filler noise, then ``M`` ``BOS``
                                             slots; slot ``j`` is labelled with the ``j``-th name (Gu & Dao)
==============  ===========================  =========================================================

Every generator returns ``(inputs (B, T), labels (B, T))`` with ``labels = IGNORE_INDEX`` except at
the positions whose next token is scored, so the metric of every task is the accuracy over the
labelled positions (:func:`labelled_accuracy`): exact match for the one-answer tasks, accuracy per
query for MQAR, token accuracy ("Rouge-like") for selective copying. All subjects in an example are
distinct, so every query has one answer. Deterministic in ``seed``.
"""

from __future__ import annotations

import numpy as np
import torch

from ..labels import labelled_accuracy as _labelled_accuracy
from .mqar import IGNORE_INDEX, check_int
from .serial_recall import BOS, SEP, RecallVocab

__all__ = ["TRANSFER_TASKS", "LONGBENCH_ANALOGUE", "transfer_batch", "transfer_sets", "labelled_accuracy"]

TRANSFER_TASKS = ("needle_qa", "mqar", "two_hop", "selective_copy")
LONGBENCH_ANALOGUE = {
    "needle_qa": "Qasper (single-doc QA)",
    "mqar": "MultiFieldQA-en (several fields)",
    "two_hop": "2WikiMultihopQA (multi-hop)",
    "selective_copy": "MultiNews (summarisation)",
}


def _scatter(segments: list[list[int]], n_filler: int, vocab: RecallVocab, rng) -> tuple[list[int], list[int]]:
    """Put ``segments`` in their order at random places among ``n_filler`` filler tokens.

    Returns the token list and the start index of every segment."""
    if vocab.n_filler < 1:
        raise ValueError("the transfer tasks need RecallVocab(n_filler >= 1) for their filler tokens.")
    # choose, for each segment, how many filler tokens precede it (a random composition of n_filler)
    cuts = np.sort(rng.randint(0, n_filler + 1, size=len(segments)))
    filler = rng.choice(vocab.filler_tokens, size=n_filler).tolist()
    out, starts, prev = [], [], 0
    for cut, seg in zip(cuts, segments):
        out += filler[prev:cut]
        starts.append(len(out))
        out += seg
        prev = cut
    out += filler[prev:]
    return out, starts


def _names(vocab, rng, k):
    if k > vocab.n_names:
        raise ValueError(f"the example needs {k} distinct names; the vocabulary has n_names={vocab.n_names}.")
    return vocab.name(rng.choice(vocab.n_names, size=k, replace=False)).tolist()


def _rels(vocab, rng, k):
    return vocab.rel(rng.randint(vocab.n_relations, size=k)).tolist()


def _needle_qa(vocab, rng, n_filler):
    s, o = _names(vocab, rng, 2)
    (r,) = _rels(vocab, rng, 1)
    toks, _ = _scatter([[s, r, o, SEP]], n_filler, vocab, rng)
    toks += [s, r]
    labels = [IGNORE_INDEX] * len(toks)
    labels[-1] = o
    return toks, labels


def _mqar(vocab, rng, n_filler, n_facts):
    names = _names(vocab, rng, 2 * n_facts)
    s, o, r = names[:n_facts], names[n_facts:], _rels(vocab, rng, n_facts)
    toks, _ = _scatter([[s[i], r[i], o[i], SEP] for i in range(n_facts)], n_filler, vocab, rng)
    labels = [IGNORE_INDEX] * len(toks)
    for i in rng.permutation(n_facts):
        toks += [s[i], r[i], o[i], SEP]
        labels += [IGNORE_INDEX, o[i], IGNORE_INDEX, IGNORE_INDEX]
    return toks, labels


def _two_hop(vocab, rng, n_filler, n_distract):
    a, b, c, *others = _names(vocab, rng, 3 + 2 * n_distract)
    r1, r2, *rd = _rels(vocab, rng, 2 + n_distract)
    facts = [[a, r1, b, SEP], [b, r2, c, SEP]]
    facts += [[others[2 * i], rd[i], others[2 * i + 1], SEP] for i in range(n_distract)]
    order = rng.permutation(len(facts))
    toks, _ = _scatter([facts[i] for i in order], n_filler, vocab, rng)
    toks += [a, r1, r2]
    labels = [IGNORE_INDEX] * len(toks)
    labels[-1] = c
    return toks, labels


def _selective_copy(vocab, rng, n_filler, n_copy):
    data = vocab.name(rng.randint(vocab.n_names, size=n_copy)).tolist()
    toks, _ = _scatter([[d] for d in data], n_filler, vocab, rng)
    labels = [IGNORE_INDEX] * len(toks)
    toks += [BOS] * n_copy
    labels += data  # the output at slot j (a BOS) must be the j-th data token
    return toks, labels


def transfer_batch(
    task: str,
    batch: int,
    *,
    vocab: RecallVocab | None = None,
    seed: int = 0,
    n_filler: int = 48,
    n_facts: int = 4,
    n_distract: int = 4,
    n_copy: int = 8,
):
    """``batch`` examples of one transfer task → ``(inputs (B, T), labels (B, T))`` int64.

    ``n_filler``: filler tokens per example (the "long context"); ``n_facts``: MQAR facts (and
    queries); ``n_distract``: distractor facts of ``two_hop``; ``n_copy``: tokens to copy. Every
    example of a task has the same length ``T``.
    """
    vocab = vocab or RecallVocab()
    if task not in TRANSFER_TASKS:
        raise ValueError(f"unknown transfer task {task!r}; choose one of {', '.join(TRANSFER_TASKS)}.")
    batch = check_int("batch", batch)
    n_filler = check_int("n_filler", n_filler, 0)
    rng = np.random.RandomState(seed)
    make = {
        "needle_qa": lambda: _needle_qa(vocab, rng, n_filler),
        "mqar": lambda: _mqar(vocab, rng, n_filler, check_int("n_facts", n_facts)),
        "two_hop": lambda: _two_hop(vocab, rng, n_filler, check_int("n_distract", n_distract, 0)),
        "selective_copy": lambda: _selective_copy(vocab, rng, n_filler, check_int("n_copy", n_copy)),
    }[task]
    rows = [make() for _ in range(batch)]
    inputs = torch.tensor([r[0] for r in rows], dtype=torch.long)
    labels = torch.tensor([r[1] for r in rows], dtype=torch.long)
    return inputs, labels


def transfer_sets(vocab: RecallVocab, mix: dict, n: int, seed: int, seed_step: int = 1000) -> dict:
    """Fixed sets of every task of a training mixture (a recipe's ``mix`` entry: ``tasks`` and ``sizes``):
    {task: (inputs (n, T), labels (n, T))}, the ``i``-th task drawn with seed ``seed + seed_step · i``."""
    return {
        task: transfer_batch(task, n, vocab=vocab, seed=seed + seed_step * i, **mix["sizes"])
        for i, task in enumerate(mix["tasks"])
    }


def labelled_accuracy(logits: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    """Per example, the fraction of labelled positions whose argmax equals the label: logits (B, T, V), labels
    (B, T) → (B,) float64 numpy (0 for an example without labels). The library's one accuracy,
    :func:`mamba_recall.labels.labelled_accuracy` with ``per="example"``, as numpy for the Chapter 4 statistics."""
    return _labelled_accuracy(logits, labels, per="example").cpu().numpy()
