"""Chapter 3, §5.1 and Apps. C.1, D.3 of paper 003, checked in ``book/03_selectivity/04_mqar_constructions.ipynb``: the
hand-set MQAR constructions of Mamba (Thm. 2), Mamba-2 (Thm. 3, Remarks 3 and 7) and the S4D mixer (Thm. 4), the
JL lemma they rest on (Lemma 4), Tabs. 2–3, and the trained models of Figs. 2, A.2, A.3; also paper 002's Appendix I
claim about Thm. 2 (:data:`APP_I`), checked on this paper's constructions. The trained models' measurements and
claims live in :mod:`.mqar_trained` and are registered from here, in the section's order.

The trained claims read each seed's own value (the paper's are best of 7 seeds), as the package docstring
(:mod:`mamba_recall.chapters.ch3_selectivity.claims`, the "module docstring" the rules and docstrings below cite) says.
"""

from __future__ import annotations

import math

import numpy as np

from mamba_recall.claims.core import Claim, Evidence, Measurement, NotRun, Revision, Rule, conds
from ._common import EXACT, SOLVED, _EXACT_WHY
from .mqar_trained import FIG2, FIGA2, FIGA3

#: this module's book section (its claims are judged on that page)
SECTION = "03_selectivity/04_mqar_constructions"

#: the one root cause of Thm. 3, its state-size reading, Remark 3 and Remark 7 failing: Thm. 3 compresses the κ
#: keys into N = log κ JL codes, whose crosstalk (overlaps ε of random sign, ~√κ·ε summed) grows with κ, so the
#: construction needs N of order κ (errata and failures are counted by cause, issue 51)
THM3_CAUSE = "003-thm3-jl-key-crosstalk"


# ============================================================================ §5.1 MQAR constructions (exact)
def _jl_at(jl, variant, V, p):
    sub = jl[(jl.variant == variant) & (jl.V == V) & (jl.p == p)]
    return float(sub["max"].min()) if len(sub) else float("nan")


def measure_thm2(step1: dict, mqc) -> Measurement:
    """Thm. 2: step 1 (one-hot, N = κ) over κ and |V|; step 2 (JL values, corrected bias) at p = 16 (|V| = 128)
    and p = 24 (|V| = 512), best of the JL draws, every κ of the sweep."""
    jl = mqc.tables["jl"]
    s1 = min(a for (n, _, _), a in step1.items() if n == "thm2")
    c128, c512 = _jl_at(jl, "Thm 2, corrected bias", 128, 16), _jl_at(jl, "Thm 2, corrected bias", 512, 24)
    kap = sorted({k for (n, k, _) in step1 if n == "thm2"})
    return Measurement(
        {"step1_min": s1, "step2_V128_p16": c128, "step2_V512_p24": c512},
        f"step 1 (d = κ + |V|, N = κ): {s1:.4f} for κ ∈ {kap}; step 2 (d = κ + p, corrected bias): "
        f"{c128:.4f} at p = 16 (|V| = 128), {c512:.4f} at p = 24 (|V| = 512)",
        Evidence.from_bundle(
            mqc, "T = 100; step 1 on the notebook's sequences, step 2 best of the bundle's JL draws", 0, tier="exact"
        ),
    )


THM2 = Claim(
    "003/Thm2",
    "a 1-layer Mamba without gate solves MQAR with d = O(κ + log|V|) and N = κ",
    "§5.1, Thm. 2; App. C.1, Eqs. 53–71",
    "exact (no number given)",
    Rule(
        why=_EXACT_WHY + ": step 1 at N = κ for every κ, |V|, and step 2 (d = κ + p) at p = 16 (|V| = 128) and "
        "p = 24 (|V| = 512) for some JL draw (an existence claim)",
        reproduced=conds(("step1_min", ">=", EXACT), ("step2_V128_p16", ">=", EXACT), ("step2_V512_p24", ">=", EXACT)),
    ),
    measure_thm2,
    SECTION,
)


def measure_thm2_bias(mqc) -> Measurement:
    jl = mqc.tables["jl"]
    printed = float(jl[jl.variant == "Thm 2, bias as printed"]["max"].max())
    corrected = min(_jl_at(jl, "Thm 2, corrected bias", 128, 16), _jl_at(jl, "Thm 2, corrected bias", 512, 24))
    return Measurement(
        {"printed_bias_best": printed, "corrected_bias_best": corrected},
        f"best accuracy with the bias as printed {printed:.4f} (any κ, |V|, p); corrected "
        f"−(c₀k−b)(c₁k−b)W_o s: {corrected:.4f} at p = 16 / 24",
        Evidence.from_bundle(mqc, "every (κ, |V|, p) of the sweep, best of the JL draws", 0, tier="exact"),
    )


THM2_BIAS = Claim(
    "003/Thm2-bias",
    "the output bias of Thm. 2's step 2 is b_o = −(c₀kb)W_o s",
    "App. C.1, after Eq. 71",
    "b_o = −(c₀kb)W_o s (no accuracy given)",
    Rule(
        why="the printed bias must make the construction solve MQAR (≥ 0.99 for some κ, |V|, p); the corrected "
        "bias −(c₀k−b)(c₁k−b)W_o s must make it exact",
        reproduced=conds(("printed_bias_best", ">=", SOLVED)),
        erratum=conds(("corrected_bias_best", ">=", EXACT)),
    ),
    measure_thm2_bias,
    SECTION,
    cause="003-thm2-bias-drops-the-C-scale",
)


def measure_thm3(step1: dict, mqc, growth) -> Measurement:
    """Thm. 3 rests on the key codes: ``growth`` (:func:`~mamba_recall.theory.mqar_constructions.thm3_key_growth`)
    gives, per κ, the best accuracy at N = p_k = ⌈log₂ κ⌉ and the smallest p_k of the grid at which the
    construction is exact; the growth exponent is the log–log slope of that N against κ."""
    from mamba_recall.theory.mqar_constructions import state_needed

    s1 = min(a for (n, _, _), a in step1.items() if n == "thm3")
    values_exact = _jl_at(mqc.tables["jl"], "Thm 3, JL values (keys one-hot)", 128, 12)
    need = state_needed(growth)
    at_log = growth[growth.at_log2]
    ok = {k: n for k, n in need.items() if math.isfinite(n)}
    exponent = float(np.polyfit(np.log(list(ok)), np.log(list(ok.values())), 1)[0]) if len(ok) >= 2 else float("nan")
    v = {
        "keys_acc_at_log2_kappa": float(at_log["max"].min()),
        "step1_min": s1,
        "jl_values_p12": values_exact,
        "state_growth_exponent": exponent,
    }
    shown = (
        "N = ⌈log₂κ⌉: best accuracy "
        + ", ".join(f"κ={r.kappa}: {r['max']:.2f}" for _, r in at_log.iterrows())
        + "; smallest exact N = p_k: "
        + ", ".join(
            f"κ={k}: {('>' + str(int(growth.pk.max()))) if not math.isfinite(n) else int(n)}" for k, n in need.items()
        )
        + f" (N ∝ κ^{exponent:.2f}); step 1 (one-hot keys, N = κ) {s1:.4f}; JL values p_v = 12 {values_exact:.4f}"
    )
    return Measurement(
        v,
        shown,
        Evidence.exact(
            f"κ ∈ {sorted(need)}, |V| = {int(growth.V.iloc[0])}, p_v = "
            f"{int(growth.pv.iloc[0])}, {int(growth.sequences.iloc[0])} sequences, "
            f"best of {int(growth.draws.iloc[0])} JL draws"
        ),
    )


THM3 = Claim(
    "003/Thm3",
    "a 1-layer Mamba-2 without gate solves MQAR with d = O(log κ + log|V|) and N = log κ",
    "§5.1, Thm. 3; App. C.1, Eqs. 72–86",
    "exact with N = log κ (no number given)",
    Rule(
        why="as printed, the key codes at N = ⌈log₂κ⌉ (generous: log₂ ≥ ln) must be exact for every κ; partially if "
        "the construction is exact with one-hot keys and JL values and the N it needs grows like log κ "
        "(log–log slope ≤ 0.5: c·log κ has slope 1/ln κ ≈ 0.25–0.7 over κ = 4–64, linear growth has 1)",
        reproduced=conds(("keys_acc_at_log2_kappa", ">=", EXACT)),
        partially=conds(
            ("step1_min", ">=", EXACT), ("jl_values_p12", ">=", EXACT), ("state_growth_exponent", "<=", 0.5)
        ),
    ),
    measure_thm3,
    SECTION,
    cause=THM3_CAUSE,
)


def measure_thm3_recall(sweep) -> Measurement:
    """Thm. 3's N = log κ against the state size the construction needs for 99 % recall, from ``sweep``
    (:func:`~mamba_recall.theory.mqar_constructions.thm3_state_for_recall`): the growth of N / log₂κ from the
    smallest to the largest κ (constant under log growth, κ/log κ-like under linear growth), the log–log
    exponent of N against κ, and the span of the sweep in κ."""
    from mamba_recall.theory.mqar_constructions import state_for_recall

    need = state_for_recall(sweep).sort_values("kappa")
    finite = need[np.isfinite(need.N)]
    lo, hi = need.iloc[0], need.iloc[-1]
    exponent = float(np.polyfit(np.log(finite.kappa), np.log(finite.N), 1)[0]) if len(finite) >= 2 else float("nan")
    v = {
        "log_ratio_growth": float(hi.N_over_log2_kappa / lo.N_over_log2_kappa),
        "state_growth_exponent": exponent,
        "kappa_span": float(hi.kappa / lo.kappa),
    }
    shown = (
        "smallest N = p_k with ≥ 99 % recall: "
        + ", ".join(
            f"κ={int(r.kappa)}: {int(r.N) if math.isfinite(r.N) else '> ' + str(int(sweep.pk.max()))}"
            for r in need.itertuples()
        )
        + f" (N ∝ κ^{exponent:.2f}); N / log₂κ grows {v['log_ratio_growth']:.1f}× from κ = {int(lo.kappa)} to "
        f"{int(hi.kappa)}"
    )
    return Measurement(
        v,
        shown,
        Evidence.exact(
            f"κ ∈ {need.kappa.tolist()}, |V| = {int(sweep.V.iloc[0])}, p_v = {int(sweep.pv.iloc[0])}, "
            f"≈ {int(sweep.queries.min())} queries per point, best of {int(sweep.draws.iloc[0])} JL draws, p_k on a "
            "√2 grid"
        ),
    )


THM3_RECALL99 = Claim(
    "003/Thm3-recall99",
    "the state size a 1-layer Mamba-2 needs to solve MQAR grows like log κ (N = log κ)",
    "§5.1, Thm. 3; App. C.1, Step 2 after Eq. 77",
    "N = log κ (no constant given)",
    Rule(
        why="N = log κ up to a constant: over a sweep spanning at least 16× in κ, the smallest N with 99 % recall "
        "divided by log₂κ may grow at most 2× (finite-size slack; linear growth makes it grow ~κ/log κ); "
        "partially if N still grows sublinearly (log–log exponent ≤ 0.5, as for Thm3)",
        reproduced=conds(("log_ratio_growth", "<=", 2.0)),
        partially=conds(("state_growth_exponent", "<=", 0.5)),
        testable=conds(("kappa_span", ">=", 16.0)),
        untestable_why="the sweep spans less than 16× in κ, too little to tell log κ from a power of κ",
    ),
    measure_thm3_recall,
    SECTION,
    cause=THM3_CAUSE,
)


def measure_remark3(growth) -> Measurement:
    """Remark 3: Mamba-2 (Thm. 3) needs fewer state columns than Mamba (Thm. 2, N = κ)."""
    from mamba_recall.theory.mqar_constructions import state_needed

    need = state_needed(growth)
    below = [k for k, n in need.items() if n < k]
    return Measurement(
        {"fraction_kappa_below_thm2": len(below) / len(need)},
        "smallest exact N (Thm. 3, JL keys) against Thm. 2's N = κ: "
        + ", ".join(
            f"κ={k}: {('>' + str(int(growth.pk.max()))) if not math.isfinite(n) else int(n)} vs {k}"
            for k, n in need.items()
        ),
        Evidence.exact(f"κ ∈ {sorted(need)}, best of {int(growth.draws.iloc[0])} JL draws"),
    )


REMARK3 = Claim(
    "003/Remark3",
    "Mamba-2's extra convolutions give a more parameter-efficient MQAR solution than Mamba: N = log κ < κ",
    "§5.1, Remark 3",
    "d = log κ + log|V| < κ + log|V|, N = log κ < κ",
    Rule(
        why="Thm. 3's construction must be exact with fewer state columns than Thm. 2's N = κ at every κ tested; "
        "at some κ only is partial",
        reproduced=conds(("fraction_kappa_below_thm2", ">=", 1.0)),
        partially=conds(("fraction_kappa_below_thm2", ">", 0.0)),
    ),
    measure_remark3,
    SECTION,
    cause=THM3_CAUSE,
)


#: Remark 7's worst case, the argument's threshold ε(κ − 1) = 1 and margins around it: shown beside the verdict as
#: the book's finding (the remark's arithmetic on codes with equal overlaps), not judged
R7_BELOW, R7_ABOVE = 0.8, 1.25


def measure_remark7(sweep, worst) -> Measurement:
    """Remark 7 on the construction it names, Thm. 3's N = log κ (JL key codes,
    :func:`~mamba_recall.theory.mqar_constructions.remark7_sweep`, accuracy at the query of k₁): at p_k = ⌈log₂κ⌉
    random values must be answered (the construction 'works for generic inputs'), the adversarial input (all values
    equal but one) must do worse than random there ('may fail in the adversarial case'), and it must recover as
    p_k grows ('counteracted by decreasing ε'). Shown beside it, not judged: the remark's argument at its worst case
    (:func:`~mamba_recall.theory.mqar_constructions.remark7_worst_case`: codes with one same-sign overlap ε, which
    need N = κ), where ε(κ − 1) sweeps across 1."""
    below = worst[worst.eps_kappa <= R7_BELOW]
    above = worst[worst.eps_kappa >= R7_ABOVE]
    if below.empty or above.empty:
        raise NotRun(f"the sweep needs products ε(κ − 1) ≤ {R7_BELOW} and ≥ {R7_ABOVE} (preset ch3_remark7)")
    f = sweep.sort_values("pk")
    kappa = int(f.kappa.iloc[0])
    at_log = f[f.pk == math.ceil(math.log2(kappa))]
    if at_log.empty:
        raise NotRun(f"the JL sweep has no p_k = ⌈log₂κ⌉ = {math.ceil(math.log2(kappa))} (preset ch3_remark7)")
    r0 = at_log.iloc[0]
    cells = "; ".join(
        f"κ={int(k)}: " + ", ".join(f"{r.eps_kappa:g} → {r.adversarial:.2f}" for r in g.itertuples())
        for k, g in worst.groupby("kappa")
    )
    return Measurement(
        {
            "jl_random_at_log2_kappa": float(r0.random),
            "jl_adversarial_drop_at_log2_kappa": float(r0.random - r0.adversarial),
            "jl_adversarial_recovers_with_pk": bool(f.adversarial.iloc[-1] > f.adversarial.iloc[0]),
            "worst_case_adversarial_below": float(below.adversarial.min()),
            "worst_case_adversarial_above": float(above.adversarial.max()),
            "worst_case_random_min": float(worst.random.min()),
        },
        f"Thm. 3's JL key codes at κ = {kappa}, random vs adversarial values at the query of k₁: "
        + ", ".join(f"p_k={r.pk}: {r.random:.2f} vs {r.adversarial:.2f}" for r in f.itertuples())
        + f" (p_k = ⌈log₂κ⌉ = {int(r0.pk)}: random {r0.random:.2f}, adversarial {r0.adversarial:.2f}); beside it, "
        f"the remark's argument on codes with one same-sign overlap ε (N = κ), adversarial accuracy against ε(κ − 1): "
        f"{cells} (random values {worst.random.min():.2f} or better)",
        Evidence.exact(
            f"JL sweep: {int(f.sequences.iloc[0])} sequences, κ = {kappa}, p_k ∈ {f.pk.tolist()}; worst case: "
            f"{int(worst.sequences.iloc[0])} sequences per κ, T = max(100, 4κ), |V| = 128, κ ∈ {sorted(set(worst.kappa))}"
        ),
        note="the book's finding, not the remark's claim: on codes with equal overlaps (which need N = κ) the "
        "remark's threshold ε(κ − 1) = 1 separates answered from missed queries; on the N = log κ JL codes the "
        "overlaps have random signs (~√κ·ε summed), random values are not answered at p_k = ⌈log₂κ⌉ and the "
        "adversarial input is no harder, and the N that makes them exact grows like κ (003/Thm3), not log κ",
    )


REMARK7 = Claim(
    "003/Remark7",
    "Thm. 3's N = log κ construction works for random values, may fail on adversarial inputs (all values equal but "
    "one) when ε(κ − 1) > 1, and a smaller ε (larger p) counteracts it without changing its logarithmic N",
    "App. C.1, Remark 7",
    "no number given",
    Rule(
        why="the remark's subject is Thm. 3's N = log κ construction ('Such construction'): at N = p_k = ⌈log₂κ⌉ "
        "(generous: log₂ ≥ ln) it must answer random values (≥ 0.99), the adversarial input must do worse than "
        "random there, and the adversarial accuracy must rise with p_k; the remark's argument on hand-built codes "
        "with equal overlaps (N = κ) is shown beside it as the book's finding, not scored as the remark",
        reproduced=conds(
            ("jl_random_at_log2_kappa", ">=", 0.99),
            ("jl_adversarial_drop_at_log2_kappa", ">", 0.0),
            ("jl_adversarial_recovers_with_pk", "true"),
        ),
    ),
    measure_remark7,
    SECTION,
    revisions=(
        Revision(
            date="2026-11-26",
            commit="519c1a9d8a2fa16bbaf0c3a7681609ccf4c1781b",
            reason="Fair-test audit (issue 31): the JL codes' overlaps have random signs and never reach ε(κ − 1), "
            "so the test moved to hand-built codes with one same-sign overlap ε (the argument's worst case, N = κ).",
            rule_before="reproduced if adversarial_drop > 0 and recovers_with_pk is true; otherwise not reproduced",
            status_before="not reproduced",
        ),
        Revision(
            date="2026-12-04",
            reason="Open review (referee-D; review of d645e6c, issue 51): the remark is about Thm. 3's N = log κ "
            "construction, and the equal-overlap codes need N = κ, so the earlier rule tested a surrogate; on the JL "
            "codes the adversarial input is not harder than random (0.60 against 0.39 at p_k = 4, κ = 16).",
            rule_before="reproduced if adversarial_below ≥ 0.99 and adversarial_above ≤ 0.05 and random_min ≥ 0.99; "
            "otherwise not reproduced",
            status_before="reproduced",
        ),
    ),
    cause=THM3_CAUSE,
)


def measure_thm4(thm4_step1: dict, mqc) -> Measurement:
    jl = mqc.tables["jl"]
    s1 = min(thm4_step1.values())
    c = _jl_at(jl, "Thm 4, centered readout", 128, 16)
    return Measurement(
        {"step1_min": s1, "step2_centered_p16": c},
        f"step 1 (d = κ|V|, N = 1): {s1:.4f} for κ ∈ {sorted(thm4_step1)}; step 2 (d = κp, centered "
        f"readout) {c:.4f} at p = 16, every κ of the sweep",
        Evidence.from_bundle(mqc, "T = 100, |V| = 128, best of the JL draws", 0, tier="exact"),
    )


THM4 = Claim(
    "003/Thm4",
    "a 1-layer Mamba with an S4D mixer (and gate) solves MQAR with d = O(κ log|V|) and N = 1",
    "§5.1, Thm. 4; App. C.1, Eqs. 87–99",
    "exact (no number given)",
    Rule(
        why=_EXACT_WHY + ": step 1 (d = κ|V|) and step 2 (d = κp, p = 16) for some JL draw",
        reproduced=conds(("step1_min", ">=", EXACT), ("step2_centered_p16", ">=", EXACT)),
    ),
    measure_thm4,
    SECTION,
)


def measure_thm4_readout(mqc) -> Measurement:
    jl = mqc.tables["jl"]
    printed = float(jl[jl.variant == "Thm 4, readout as printed"]["max"].max())
    c = _jl_at(jl, "Thm 4, centered readout", 128, 16)
    return Measurement(
        {"printed_readout_best": printed, "centered_readout_best": c},
        f"best accuracy with the readout as printed {printed:.4f} (any κ, |V|, p); centered {c:.4f} at p = 16",
        Evidence.from_bundle(mqc, "every (κ, |V|, p) of the sweep, best of the JL draws", 0, tier="exact"),
    )


THM4_READOUT = Claim(
    "003/Thm4-readout",
    "in Thm. 4's step 2 the shift term cancels because Me_{|V|+1} ∥ 1 (readout Me_l, β = 1)",
    "App. C.1, Eqs. 93–99",
    "(Me_i)ᵀ1 ≤ ε (no accuracy given)",
    Rule(
        why="the printed readout must solve MQAR (≥ 0.99 for some κ, p); the centered readout (I − 11ᵀ/p)Me_l must "
        "make it exact",
        reproduced=conds(("printed_readout_best", ">=", SOLVED)),
        erratum=conds(("centered_readout_best", ">=", EXACT)),
    ),
    measure_thm4_readout,
    SECTION,
    cause="003-thm4-readout-not-centered",
)


def measure_tab2_gate(printed_gate: float, corrected_gate: float, kappa: int, V: int) -> Measurement:
    """Tab. 2, (14g): Thm. 4's gated construction with the gate as printed (ỹ = g(x) ⊙ x) and as corrected
    (ỹ = g(x) ⊙ y)."""
    return Measurement(
        {"printed_gate_accuracy": printed_gate, "corrected_gate_accuracy": corrected_gate},
        f"Thm. 4 step 1 (κ = {kappa}, |V| = {V}): gate on x as printed {printed_gate:.3f}; gate on y "
        f"{corrected_gate:.4f}",
        Evidence.exact(f"κ = {kappa}, |V| = {V}, T = 100"),
    )


TAB2 = Claim(
    "003/Tab2",
    "the Mamba block's gated output is ỹ_t = g(x_t) ⊙ x_t (Table 2, (14g), Mamba column)",
    "§5, Tab. 2, Eq. 14g",
    "ỹ_t = g(x_t) ⊙ x_t",
    Rule(
        why="a gate on x alone makes the output independent of the SSM, so Thm. 4's gated construction must still "
        "solve MQAR (≥ 0.99) for the printed form to stand; the corrected ỹ_t = g(x_t) ⊙ y_t must be exact",
        reproduced=conds(("printed_gate_accuracy", ">=", SOLVED)),
        erratum=conds(("corrected_gate_accuracy", ">=", EXACT)),
    ),
    measure_tab2_gate,
    SECTION,
    cause="003-tab2-gate-on-x",
)


def measure_tab3(step1: dict, thm4_step1: dict) -> Measurement:
    rows = {
        "Mamba (Thm. 2)": min(a for (n, _, _), a in step1.items() if n == "thm2"),
        "Mamba-2 (Thm. 3)": min(a for (n, _, _), a in step1.items() if n == "thm3"),
        "S4D mixer (Thm. 4)": min(thm4_step1.values()),
    }
    return Measurement(
        {"min_accuracy": min(rows.values())},
        "one-hot constructions: " + ", ".join(f"{k} {a:.4f}" for k, a in rows.items()),
        Evidence.exact("T = 100, |V| ∈ the notebook's grid"),
    )


TAB3 = Claim(
    "003/Tab3",
    "Mamba (Thm. 2), Mamba-2 (Thm. 3) and the S4D mixer (Thm. 4) each solve MQAR exactly with the listed mechanism",
    "§5.1, Tab. 3 (body missing from the source; reconstructed from the proofs)",
    "no number given",
    Rule(
        why=_EXACT_WHY + ", for each of the three one-hot constructions",
        reproduced=conds(("min_accuracy", ">=", EXACT)),
    ),
    measure_tab3,
    SECTION,
)


def measure_lemma4(rows) -> Measurement:
    """Lemma 4 (JL): ``rows`` from :func:`~mamba_recall.theory.mqar_constructions.jl_inner_products`."""
    worst = float(rows.ratio.max())
    return Measurement(
        {"eps_sqrt_p_over_log_d_max": worst, "norm_error": float(rows.norm_error.max())},
        "max |⟨Me_i, Me_j⟩|·√(p / ln d): "
        + ", ".join(f"d={r.d} p={r.p}: {r.ratio:.2f}" for r in rows.itertuples())
        + f"; max |‖Me_i‖ − 1| {rows.norm_error.max():.0e}",
        Evidence.exact(f"d ∈ {sorted(set(rows.d))}, p ∈ {sorted(set(rows.p))}, one draw each"),
    )


LEMMA4 = Claim(
    "003/Lemma4",
    "random ±1/√p projections keep unit norms and pairwise inner products below ε with p = O(ε^(−2) log d)",
    "App. C.1, Lemma 4 (JL)",
    "p = O(ε^(−2) log d) (no constant given)",
    Rule(
        why="for d²/2 sub-Gaussian inner products of variance 1/p the maximum is ≈ 2√(ln d / p); the ratio "
        "ε·√(p / ln d) must stay ≤ 3 at every (d, p), and norms are exactly 1",
        reproduced=conds(("eps_sqrt_p_over_log_d_max", "<=", 3.0), ("norm_error", "<=", 1e-12)),
    ),
    measure_lemma4,
    SECTION,
)


# ============================================================================ paper 002's Appendix I
def measure_app_i(cmp) -> Measurement:
    exact16 = float(cmp.query("N == 16 and d == 144").accuracy.iloc[0])
    share8 = float(cmp.query("N == 8 and d == 144").accuracy.iloc[0])
    hashing = cmp.query("d == 64").sort_values("N").accuracy
    return Measurement(
        {
            "thm2_at_N_kappa": exact16,
            "thm2_below_kappa": share8,
            "hashing_rises_with_N": bool(hashing.is_monotonic_increasing and hashing.iloc[-1] > hashing.iloc[0]),
            "hashing_exact_anywhere": bool((hashing >= EXACT).any()),
        },
        "; ".join(f"{r.circuit} d={r.d} N={r.N}: {r.accuracy:.3f}" for r in cmp.itertuples()),
        Evidence.exact("κ = 16, |V| = 128, T = 100, 100 sequences per cell"),
    )


APP_I = Claim(
    "002/AppI-003Thm2",
    "paper 003's Thm. 2 stores one key per state column (exact at N = κ, not below), while "
    "paper 002's circuit compresses keys too (noisy recall that improves with N)",
    "paper 002, Appendix I",
    "no number given (qualitative)",
    Rule(
        why="Thm. 2 must be exact at N = κ and not at N = κ/2; the hashing circuit's accuracy must rise with N "
        "without being exact at these sizes (noisy)",
        reproduced=conds(
            ("thm2_at_N_kappa", ">=", EXACT),
            ("thm2_below_kappa", "<", SOLVED),
            ("hashing_rises_with_N", "true"),
            ("hashing_exact_anywhere", "false"),
        ),
    ),
    measure_app_i,
    SECTION,
)


#: the claims of §5.1 and Apps. C.1, D.3 in the registry's order, the constructions (exact) then the trained models
#: (paper 002's claim is :data:`APP_I`)
CONSTRUCTIONS = (THM2, THM2_BIAS, THM3, THM3_RECALL99, REMARK3, REMARK7, THM4, THM4_READOUT, TAB2, TAB3, LEMMA4)
CLAIMS = (*CONSTRUCTIONS, FIG2, FIGA2, FIGA3)
