"""Chapter 2, section 2.1 (``book/02_hashing_scaling/01_circuit.ipynb``): the designed hashing circuit of paper
002 §3.1 — Theorem 1's exact one-hot circuit, the designed Theorem 2 circuit over (D, N) (Fig. 6, column b) and
Lemma 1's sufficient condition, each measured on the authors' construction (tier ``exact``).

Each measurement sits above the claim it measures; the package (``ch2/__init__.py``) registers the claims.
"""

from __future__ import annotations

import numpy as np

from mamba_recall.claims.core import Claim, Evidence, Measurement, Rule, conds
from ._common import _NEAR, _SE_WHY, Z, _n_near, _nonincreasing, se_diff

#: this module's book section (its claims are judged on that page)
SECTION = "02_hashing_scaling/01_circuit"

#: This section's claims, each declared below its measurement; ``ch2/__init__.py`` registers them with their
#: quotes, in the chapter's order (:data:`mamba_recall.chapters.ch2_hashing_scaling.claims.ORDER`).
CLAIMS: list[Claim] = []


# --------------------------------------------------------------------------------- §3.1, Theorem 1: the one-hot circuit
def measure_thm1(acc: dict, V: int, Nf: int, n_seq: int) -> Measurement:
    """Thm 1's one-hot circuit (D = N = V): accuracy with the two readouts where each queried key occurs once
    (``acc[(readout, pad)]`` from :func:`~mamba_recall.theory.hashing_circuit.designed_accuracy`)."""
    vals, zero, full = acc[("values", "full")], acc[("full", "zero")], acc[("full", "full")]
    return Measurement(
        {"values_readout_accuracy": vals, "zero_padding_accuracy": zero},
        f"values-only readout {vals:.4f}, zero padding {zero:.4f}; random padding with a "
        f"full-vocabulary argmax {full:.4f} (a pad can repeat the queried key, which the proof excludes)",
        Evidence.exact(f"V = {V}, N_f = {Nf}: {n_seq} sequences ({n_seq * Nf} queries) per readout"),
    )


CLAIMS += [
    Claim(
        "002/Thm1",
        "the one-hot designed single-layer linear Mamba (D = N = V, expand 2, d_conv 2) solves MQAR "
        "with recall probability 1",
        "§3.1, Theorem 1; App. B, Eqs. 22–37",
        "recall probability = 1",
        Rule(
            why="probability 1 is exact, so a single miss is a counterexample; the proof assumes the queried key "
            "occurs once, which the values-only readout and zero padding both guarantee",
            reproduced=conds(("values_readout_accuracy", ">=", 1.0), ("zero_padding_accuracy", ">=", 1.0)),
        ),
        measure_thm1,
        SECTION,
    ),
]


# -------------------------------------------------------------- §5.1, Fig. 6(b): the designed Thm 2 circuit over (D, N)
def measure_fig6b(designed, V: int, Nf: int, n_seq: int) -> Measurement:
    """Fig. 6(b): the designed Thm 2 circuit (values-only readout) over (D, N) cells with N ≤ D (the authors'
    construction): the largest dip along D or N in standard errors, and N_90(D)."""
    piv = designed.pivot(index="D", columns="N", values="values")
    piv = piv.where(piv.index.values[:, None] >= piv.columns.values[None, :])
    dips = np.concatenate([(-piv.diff(axis=0)).to_numpy().ravel(), (-piv.diff(axis=1)).to_numpy().ravel()])
    largest = max(0.0, float(np.nanmax(dips)))
    n90 = _n_near(piv)
    defined = sum(v is not None for v in n90.values())
    return Measurement(
        {
            "largest_dip_se": largest / se_diff(n_seq * Nf),
            "defined_n90": defined,
            "n90_nonincreasing": _nonincreasing(list(n90.values())),
        },
        f"largest decrease along D or N {largest:.3f} ({largest / se_diff(n_seq * Nf):.1f} standard "
        f"errors); N_90(D) = {n90}",
        Evidence.exact(
            f"V = {V}, N_f = {Nf}: {int(piv.notna().sum().sum())} cells, one JL draw and {n_seq * Nf} queries each"
        ),
    )


CLAIMS += [
    Claim(
        "002/Fig6b",
        "the designed Thm 2 circuit's accuracy grows with D and N, and the minimal N for near-perfect "
        "recall falls as D grows (the D–N trade-off)",
        "§5.1, Fig. 6 column (b)",
        'no number given ("a clear tradeoff … for larger D, the minimal N required for perfect recall is lower")',
        Rule(
            why=f"monotone up to sampling noise ({_SE_WHY}); the trade-off needs N_90(D) in at least two D rows "
            f"and non-increasing ({_NEAR})",
            reproduced=conds(("largest_dip_se", "<=", Z), ("n90_nonincreasing", "true")),
            testable=conds(("defined_n90", ">=", 2)),
            untestable_why="fewer than two D rows reach near-perfect recall on this grid, so no trade-off can show",
        ),
        measure_fig6b,
        SECTION,
    ),
]


# ---------------------------------------------------------------------------------- §4, Lemma 1: a sufficient condition
def measure_lemma1(V: int, Nf: int, L: int, D: int, N: int, n_seq: int, seed: int = 0, device=None) -> Measurement:
    """Lemma 1 at a point inside its own domain N < D < V where its condition holds: the designed circuit (the
    authors' construction) must then recall perfectly (values-only readout, the entries the proof compares)."""
    from mamba_recall.theory.capacity import lemma1_condition
    from mamba_recall.theory.hashing_circuit import designed_accuracy

    cond = lemma1_condition(V, Nf, D, N)
    in_domain = N < D < V
    acc = (
        designed_accuracy(V, D, N, Nf, L, n_seq=n_seq, seed=seed, readout="values", device=device)
        if in_domain and cond["holds"]
        else float("nan")
    )  # outside the lemma's premises there is nothing to test
    return Measurement(
        {"in_domain": in_domain, "condition_holds": cond["holds"], "accuracy": acc},
        f"V = {V}, N_f = {Nf}, D = {D}, N = {N}: ε_v = {cond['eps_v']:.3f}, ε_k = {cond['eps_k']:.3f}, "
        f"ε_v + ε_k + N_f ε_v ε_k = {cond['lhs']:.3f} < ½: {cond['holds']}; accuracy {acc:.4f}",
        Evidence.exact(f"{n_seq} sequences ({n_seq * Nf} queries), one JL draw"),
    )


CLAIMS += [
    Claim(
        "002/Lemma1",
        "where N < D < V and ε_v + ε_k + N_f ε_v ε_k < ½ (ε = √(c log V / dim), c = 4), the "
        "designed single-layer circuit recalls perfectly",
        "§4, Lemma 1, Eq. 14; App. D, Eqs. 65–76",
        "no number given (a sufficient condition; App. D's statement, Eq. 65, prints ε_v + 2ε_k + 2N_f ε_v ε_k < 1)",
        Rule(
            why="a sufficient condition promises perfect recall, so one miss where it holds refutes it; it is "
            "tested only inside the lemma's own domain N < D < V",
            reproduced=conds(("accuracy", ">=", 1.0)),
            testable=conds(("in_domain", "true"), ("condition_holds", "true")),
            untestable_why="the tested point lies outside N < D < V or does not satisfy the condition",
        ),
        measure_lemma1,
        SECTION,
    ),
]
