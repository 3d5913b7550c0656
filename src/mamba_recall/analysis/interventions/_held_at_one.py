"""Paper 000's causal intervention on the |K| = 1 model: its recurrence recomputed with the forgetting factor held
at 1 at chosen positions (:func:`forgetting_held_at_one`)."""

from __future__ import annotations

import torch


# ------------------------------------------------------- paper 000: the forgetting factor held at 1
def held_scan(model, decay, inp, hold):
    """The |K| = 1 recurrence h_t = a_t ⊙ h_{t−1} + Δ_t ⊙ x̂_t recomputed from the model's own ``decay`` a_t and input
    terms ``inp`` (b, T, 2|V|), with a_t := 1 wherever ``hold`` (b, T) is true; returns W_o h_t, (b, T, |V|)."""
    a = torch.where(hold[..., None], torch.ones_like(decay), decay)
    h, out = torch.zeros_like(inp[:, 0]), []
    for t in range(inp.shape[1]):
        h = a[:, t] * h + inp[:, t]
        out.append(h)
    return torch.stack(out, 1) @ model.W_o.T


class FixedLogits:
    """A stand-in for a model that answers with fixed ``logits`` (what :func:`recency_margins` calls, with the
    model's ``W_delta`` for its device), so a recomputed recurrence is scored like the model itself."""

    def __init__(self, logits, model):
        self.out, self.W_delta = logits, model.W_delta

    def __call__(self, x):
        return self.out


def k1_recurrence(model, batch, what: str):
    """The |K| = 1 model's own logits, forgetting factors a_t (b, T, 2|V|), input terms Δ_t ⊙ x̂_t (b, T, 2|V|) and
    pair events (b, T) on ``batch``, for the interventions that recompute its recurrence (``what`` names the caller
    in the error for any other model)."""
    from ...tasks.latest_value import pair_events

    if model.d_state != 1 or model.selective_bc:
        raise ValueError(f"{what} is defined for the |K| = 1 model (N = 1, B = C = 1); use ch1_k1.")
    logits, it = model(batch.inputs, return_internals=True)
    events = pair_events(batch.inputs.numpy(), batch.num_keys)
    return logits, it["forget"][..., 0], it["input_term"][..., 0], events


@torch.no_grad()
def forgetting_held_at_one(model, batch, where: str) -> dict:
    r"""A causal intervention on the |K| = 1 model (N = 1, B = C = 1), in the recurrence of
    :func:`mamba_recall.chapters.ch1_gradient_dynamics.pipelines.forgetting_probe.noise_forgetting_probe`: the forgetting factor a_t = exp(Λ ⊙ Δ_t) held at 1 ``where`` — ``"noise"`` (at the
    noise pairs (v₁, v₂): §3's forget regime, "forget all the memories slowly", removed), ``"except_writes"`` (every
    position but the write pairs (k, v): the forget regime and the read pairs' forgetting removed, the erase kept) or
    ``"writes"`` (only the write pairs: the erase removed) — the input terms unchanged.
    Returns the query accuracy of the latest value and the share of rebound-key queries where the latest value beats
    the previous binding, as trained (``*_before``) and under the intervention (``*_held``), on ``batch``, the number
    of positions held and the largest |recomputed − model forward| logit (``recompute_error``)."""
    from ..recall_probes import recency_margins
    from ...labels import labelled_accuracy
    from ...tasks.latest_value import NOISE, WRITE

    if where not in ("noise", "except_writes", "writes"):
        raise ValueError(f"where={where!r}: 'noise', 'except_writes' or 'writes'.")
    logits, decay, inp, events = k1_recurrence(model, batch, "forgetting_held_at_one")
    write = torch.as_tensor(events == WRITE)
    hold = {"noise": torch.as_tensor(events == NOISE), "except_writes": ~write, "writes": write}[where]
    before = held_scan(model, decay, inp, torch.zeros_like(write))
    held = held_scan(model, decay, inp, hold)
    rb, rh = recency_margins(FixedLogits(before, model), batch), recency_margins(FixedLogits(held, model), batch)
    return {
        "accuracy_before": float(labelled_accuracy(before, batch.query_labels)),
        "accuracy_held": float(labelled_accuracy(held, batch.query_labels)),
        "margin_positive_before": rb["margin_positive"],
        "margin_positive_held": rh["margin_positive"],
        "rebound_queries": rb["n"],
        "held_positions": int(hold.sum()),
        "recompute_error": float((before - logits).abs().max()),  # the recomputation against the model's scan
    }
