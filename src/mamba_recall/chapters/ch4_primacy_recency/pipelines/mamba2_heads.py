r"""Paper 004, App. F on a Mamba-2 model (Chapter 4, section 6): the serial-recall U, the long-term heads of Eq. 9 and
their first-triple ablation (Fig. 13), measured as notebook 4.6 measures them (:func:`mamba2_head_tests`). The
claims' rules are in :mod:`mamba_recall.chapters.ch4_primacy_recency.claims.mamba2_heads`; the runners
(:mod:`mamba_recall.chapters.ch4_primacy_recency.runners.model_checks`, :mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge`) judge other models with
the same function.
"""

from __future__ import annotations

from . import heads as hd
from mamba_recall.analysis import interventions as iv
from . import primacy as A


def mamba2_head_tests(
    model, vocab, sizes: dict, device: str = "cpu", *, at: int | None = None, ucurve_Ls: list[int] | None = None
) -> dict:
    """App. F's measurements on a Mamba-2 model (paper 004, App. F, Eq. 9, Fig. 13), with the sizes ``sizes`` of
    ``ch4_mamba2_heads`` (keys ``Ls``, ``n``, ``L_ident``, ``tau``, ``n_random``):

    * ``curves``: {(L, variant): (n, L) bool correct} at every L of ``ucurve_Ls`` (default ``sizes["Ls"]``), the
      serial-recall probe of §4.1 (prefix-state evaluation, :func:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.ucurves`);
    * ``stats``, ``heads``, ``fraction``: the head statistic 𝓜^(h) = ∏_{t=2}^{T} α_t^(h) = exp(A_h Σ_t Δ_t^(h))
      (Eq. 9 with one scalar decay per head; per layer an (1, H) array) on the identification prompt (repeated
      relation, L = ``L_ident``), the long-term heads 𝓜^(h) ≥ τ per layer, and their share of all heads;
    * ``effects``: {L: the first-triple ablation of the long-term heads} (α_t^(h) ← 0 at the first triple's token
      indices, against ``n_random`` sets of as many heads drawn over the whole model;
      :func:`mamba_recall.chapters.ch4_primacy_recency.pipelines.primacy.ablation_effects`, base = the repeated-relation curve at L), at every
      length of ``Ls`` or, with ``at``, at ``at`` only (the model's pressure length L_p,
      :mod:`mamba_recall.chapters.ch4_primacy_recency.runners.edge`);
    * ``Ls``, ``L0``: the U-curve lengths and the length Fig. 13b is judged at (the first ablation length).

    :func:`mamba_recall.chapters.ch4_primacy_recency.claims.mamba2_heads.m2_claim_args` maps these onto the claims' arguments."""
    Ls = list(ucurve_Ls or sizes["Ls"])
    if at is not None and at not in Ls:
        raise ValueError(
            f"at = {at} is not one of the U-curve lengths {Ls}: the ablation's baseline is the curve at that length; "
            f"add {at} to ucurve_Ls."
        )
    curves = A.ucurves(model, vocab, Ls, sizes["n"], device=device)
    stats = hd.head_stats(model, A.identification_prompt(vocab, sizes["L_ident"]))
    heads = hd.identify_heads(stats, sizes["tau"])
    fraction = sum(len(h) for h in heads) / stats.n_heads
    targets = {layer: h for layer, h in enumerate(heads) if len(h)}
    steps = iv.first_triplet_steps(bos=bool(vocab.bos))
    effects = {
        L: A.ablation_effects(
            model,
            vocab,
            L,
            sizes["n"],
            targets,
            steps,
            n_random=sizes["n_random"],
            device=device,
            controls=("global",),
            base=curves[(L, "repeated")],
        )
        for L in (Ls if at is None else [at])
    }
    return {
        "curves": curves,
        "Ls": Ls,
        "stats": stats,
        "heads": heads,
        "fraction": fraction,
        "effects": effects,
        "L0": next(iter(effects)),
    }
