"""Chapter 3, §4.2 and App. B of paper 003, checked in ``book/03_selectivity/03_sensitivity.ipynb``: how the sensitivity
of the state to an early input decays, exponentially for S4D and S6 (Lemma 1) unless S6's Δ keeps it up (Lemma 2),
and only like 1/t for softmax attention (Eq. 45). Computed exactly (tier ``exact``).
"""

from __future__ import annotations

import numpy as np

from mamba_recall.claims.core import Claim, Evidence, Measurement, Rule, conds

#: this module's book section (its claims are judged on that page)
SECTION = "03_selectivity/03_sensitivity"


def measure_lemma1(rel: dict, slope_s6: float, slope_s4d: float, lam: float) -> Measurement:
    v = {
        "autograd_vs_closed_form": max(rel.values()),
        "s6_slope_error": abs(slope_s6 + lam),
        "s4d_slope_error": abs(slope_s4d + lam),
    }
    return Measurement(
        v,
        f"autograd = Eqs. (35)–(38) to {max(rel.values()):.0e}; slope of log|∂h_t/∂x_j| {slope_s6:.6f} "
        f"against ΣΔ (S6), {slope_s4d:.6f} against t (S4D); −λ = {-lam}",
        Evidence.exact("one random input sequence, float64"),
    )


LEMMA1 = Claim(
    "003/Lemma1",
    "the sensitivity |∂h_t/∂x_j| decays exponentially: in t for S4D, in Σ_r Δ(x_r) for S6",
    "§4.2, Lemma 1; App. B, Eqs. 34–41",
    "slope −λ_n (no number given)",
    Rule(
        why="the closed form is exact: autograd agrees to float64 round-off (1e-10 relative) and the log-slopes "
        "equal −λ to 1e-6",
        reproduced=conds(
            ("autograd_vs_closed_form", "<=", 1e-10),
            ("s6_slope_error", "<=", 1e-6),
            ("s4d_slope_error", "<=", 1e-6),
        ),
    ),
    measure_lemma1,
    SECTION,
)


def measure_lemma2(sens: float, bound: float, c: float, s4d_factor: float, T: int) -> Measurement:
    return Measurement(
        {"sensitivity_over_bound": sens / bound, "s4d_factor": s4d_factor},
        f"T = {T}: |∂h_T/∂x₁| = {sens:.1f} ≥ e^−c|∂(BΔx)| = {bound:.2f} (c = {c:.2f}); S4D factor "
        f"e^−(T−1) = {s4d_factor:.1e}",
        Evidence.exact(f"T = {T}, Δ ≈ 0 on fillers"),
    )


LEMMA2 = Claim(
    "003/Lemma2",
    "if λΣΔ stays bounded by c, the S6 sensitivity stays above e^(−c)|∂(BΔx)| as t → ∞",
    "§4.2, Lemma 2, Eqs. 12–13",
    "lim |∂h_t/∂x_j| ≥ e^(−c)|∂_{x_j}(B Δ x)| (no number given)",
    Rule(
        why="the bound must hold at T = 10⁴, where the time-invariant factor e^(−(T−1)) is below 1e-100",
        reproduced=conds(("sensitivity_over_bound", ">=", 1.0), ("s4d_factor", "<=", 1e-100)),
    ),
    measure_lemma2,
    SECTION,
)


def measure_eq45(sens: np.ndarray, j: int = 1, fit_from: int = 10) -> Measurement:
    """Eq. 45: log–log slope of :func:`~mamba_recall.theory.haar.attention_sensitivity` (t = j+1..T) against t,
    fitted from t = ``fit_from`` on."""
    t = np.arange(j + 1, j + 1 + len(sens))
    keep = t >= fit_from
    slope = float(np.polyfit(np.log(t[keep]), np.log(sens[keep]), 1)[0])
    return Measurement(
        {"loglog_slope": slope},
        f"|∂y_t/∂x_{j}| of a random causal softmax-attention layer: log–log slope {slope:.3f} over "
        f"t = {fit_from}..{t[-1]} (|∂y_t/∂x_{j}| = {sens[fit_from - j - 1]:.3g} at t = {fit_from}, "
        f"{sens[-1]:.3g} at t = {t[-1]})",
        Evidence.exact(f"T = {t[-1]}, d = 4, one random draw"),
    )


EQ45 = Claim(
    "003/Eq45",
    "softmax attention's sensitivity decays only like 1/t",
    "App. B, Eqs. 44–45",
    "|∂h_t/∂x_j| ≤ C/t · (min_r e^{x_t W_Qᵀ W_K x_r})^(−1)",
    Rule(
        why="decaying like 1/t means a log–log slope of the sensitivity against t of −1; ±0.2 allows the random "
        "attention weights, and an exponential decay would be far steeper",
        reproduced=conds(("loglog_slope", ">=", -1.2), ("loglog_slope", "<=", -0.8)),
    ),
    measure_eq45,
    SECTION,
)


#: this section's claims, in the registry's order
CLAIMS = (LEMMA1, LEMMA2, EQ45)
