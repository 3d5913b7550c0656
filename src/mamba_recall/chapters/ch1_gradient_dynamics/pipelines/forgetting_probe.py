r"""Chapter 1 (paper 000, the simplified Mamba on the latest-value MQAR): our causal probe of the trained model's
forgetting, beyond the paper's claims (their measurements are in :mod:`mamba_recall.chapters.ch1_gradient_dynamics.claims`).

:func:`noise_forgetting_probe` holds the forgetting factor exp(Λ ⊙ Δ_t) at 1 at the noise pairs (and, for
contrast, at the write pairs) with :func:`~mamba_recall.analysis.interventions.forgetting_held_at_one` and reports
the recall of the latest value before and after; the run-store grid
(:mod:`mamba_recall.chapters.ch1_gradient_dynamics.runners.grid`) stores it per seed and notebook 1.2 runs it on the paper-size
checkpoint.
"""

from __future__ import annotations

import torch

from mamba_recall.analysis.interventions import forgetting_held_at_one


@torch.no_grad()
def noise_forgetting_probe(model, batch) -> dict:
    r"""Our causal probe (not a claim of the paper). The |K| = 1 recurrence, Eq. (3) with N = 1, B = C = 1:

        h_t = a_t ⊙ h_{t−1} + Δ_t ⊙ x̂_t,   a_t = exp(Λ ⊙ Δ_t) ∈ (0, 1]^{2|V|},   o_t = W_o h_t ∈ R^{|V|}

    recomputed step by step from the model's own a_t and Δ_t ⊙ x̂_t (shapes (b, T, 2|V|)), once as is ("before")
    and once with a_t := 1 at every noise pair (x_{t−1}, x_t) = (v₁, v₂) ("after": nothing is forgotten between
    bindings, the input terms unchanged); and, for contrast, with a_t := 1 at every write pair (k, v) instead (the
    erase of §3 removed: the new value is added on top of the old). Returns the query accuracy of the latest value before / after, the share
    of rebound-key queries where the latest value beats the previous binding (as 000/Sec3-recency), and the largest
    |before − model forward| (the recomputation agrees with the model's scan)."""
    noise = forgetting_held_at_one(model, batch, "noise")
    writes = forgetting_held_at_one(model, batch, "writes")
    return {
        "probe_accuracy_before": noise["accuracy_before"],
        "probe_accuracy_after": noise["accuracy_held"],
        "probe_margin_positive_before": noise["margin_positive_before"],
        "probe_margin_positive_after": noise["margin_positive_held"],
        "probe_accuracy_no_write_erase": writes["accuracy_held"],
        "probe_rebound_queries": noise["rebound_queries"],
        "probe_noise_pairs": noise["held_positions"],
        "probe_recompute_error": noise["recompute_error"],
    }
