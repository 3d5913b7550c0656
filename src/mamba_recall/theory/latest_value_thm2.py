r"""Paper 003's Theorem 2 construction run on paper 000's latest-value task (Chapter 1): our comparison, not a claim
of either paper (:func:`thm2_construction_probe`). The construction itself is
:func:`~mamba_recall.theory.mqar_constructions.thm2_logits`.
"""

from __future__ import annotations

import numpy as np
import torch


def thm2_construction_probe(batch, model=None) -> dict:
    r"""Our comparison (not a claim of either paper): paper 003's Theorem 2 construction (step 1: Mamba without gate,
    one-hot values, N = κ state columns; :func:`mamba_recall.theory.mqar_constructions.thm2_logits`) run on the
    latest-value task of paper 000, which has the token layout it expects (keys 0 … κ−1, values κ … |V|−1).

    The construction writes only at bindings: its x̂_t = ReLU(x_{t−1} + 2 x_t − 1) and B_t = W_k x̂_t are zero at a
    noise pair (v₁, v₂) and put the key's one-hot and the value's at a (k, v) pair; it never forgets (Λ = 0, Δ = 1):

        y_t = Σ_{s ≤ t} x̂_s ⟨B_s, C_t⟩,   so at a query of key k:  y_t ∝ Σ_{bindings k → v before t} e_v

    and its answer is the value bound to k **most often** (ties to the lowest index), not the latest one. Paper 003's
    MQAR binds every key once, where the two coincide; paper 000's task rebinds keys (|K| = 1, T = 256: about 60
    bindings of the one key). Returns, on ``batch``'s queries, the construction's accuracy of the latest value, the
    share of its answers equal to the plurality value (the formula above, checked: 1.0 for |K| = 1; with |K| > 1 a
    query right after another key, as in the final permutation of keys, also reads that key's column, since there
    C_t = W_k x̂_t has weight 1 on the previous key's column and 3 on its own), the accuracy of the plurality guess
    itself, the number of bindings per sequence, and with ``model`` the trained model's accuracy on the same queries.
    Shapes: ``batch.inputs`` (n, T); logits (n, T, |V| − κ)."""
    from ..labels import labelled_accuracy
    from ..tasks.latest_value import WRITE, pair_events
    from .mqar_constructions import thm2_logits

    ids, kappa = batch.inputs, batch.num_keys
    logits = thm2_logits(ids, kappa, batch.vocab_size - kappa)
    pred = (logits.argmax(-1) + kappa).numpy()
    x, q = ids.numpy(), batch.query_labels.numpy()
    writes = pair_events(x, kappa) == WRITE  # (n, T): a binding x_{t−1} → x_t
    plural = np.full_like(q, -1)
    for b in range(x.shape[0]):  # the plurality value of each key's bindings so far (ties: lowest value)
        counts = np.zeros((kappa, batch.vocab_size), dtype=np.int64)
        for t in range(x.shape[1]):
            if q[b, t] >= 0:
                plural[b, t] = int(np.argmax(counts[x[b, t]]))
            if writes[b, t]:
                counts[x[b, t - 1], x[b, t]] += 1
    mask = q >= 0
    out = {
        "thm2_accuracy": float((pred[mask] == q[mask]).mean()),
        "thm2_equals_plurality": float((pred[mask] == plural[mask]).mean()),
        "plurality_accuracy": float((plural[mask] == q[mask]).mean()),
        "queries": int(mask.sum()),
        "bindings_per_sequence": float(writes.sum(1).mean()),
    }
    if model is not None:
        with torch.no_grad():
            out["model_accuracy"] = float(labelled_accuracy(model(ids), batch.query_labels))
    return out
