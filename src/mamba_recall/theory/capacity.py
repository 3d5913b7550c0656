r"""Recall scaling laws of paper 002 as code: Lemma 1 (Eq. 14/74, App. D Eq. 65), Thm 3 (Eq. 77),
its N_f ≫ N, D limit (Eq. 15, as printed and the consistent form), Remark 1 / Eq. 17, and the
authors' later revision ``rev_mV`` (their public code; not this paper's Thm 3). ``log`` is natural (the paper gives no base).

Laws (``p`` = per-query success probability = predicted MQAR accuracy):

* ``lemma1``  (74): ε_v + ε_k + N_f ε_v ε_k < ½, ε_v,k < 1, ε_v = √(c log V / D), ε_k = √(c log V / N), c = 4.
* ``lemma1_appendix`` (65): ε_v + 2ε_k + 2N_f ε_v ε_k < 1.
* ``eq77``: p = Φ(1/σ_w)^{N_f-1} Φ(1/σ_e)^{V/2-N_f}, σ_w² = 3/D + 3/N + 2N_f/(ND), σ_e² = 3/D + 2/N + 2N_f/(ND).
* ``eq15`` (printed): p = Φ(√(2ND/N_f))^{V/2}.  ``eq15_consistent`` (the true limit of Eq. 77):
  p = Φ(√(ND/(2N_f)))^{V/2} — the printed argument is 2× too large (erratum 1 of the chapter).
* ``remark1``: DN ≥ 2 N_f n_σ², n_σ = Φ⁻¹(1 − 2δ/V), min(D, N) ≥ log V.  ``eq17``: DN ≥ 4 N_f log(V/2δ).
* ``rev_mV`` (authors' later revision, *not* this paper's Thm 3): p = Φ(1/σ − m_V), σ² = a N_f/(D N) + 1/D,
  m_V = √(2 ln V) − (ln ln V + ln 4π)/(2√(2 ln V)); a = 3 (designed), 5/4 (trained linear), 5/8 (full).

Effective dimensions: Λ layers → N_eff = Λ N (Thm 4/6); M heads → N_eff = M N for MHA only (Thm 5);
D is never changed. Everything is computed in log space (Φ(·)^{V/2} underflows).
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "LAWS",
    "PROB_LAWS",
    "effective_dims",
    "jl_eps",
    "lemma1_condition",
    "log_p_success",
    "p_success",
    "satisfies",
    "predicted_capacity",
    "kappa_at",
    "m_V",
    "p_grid",
    "multihead_prediction",
    "split_value_variance",
]

PROB_LAWS = ("eq77", "eq15", "eq15_consistent", "rev_mV")
LAWS = ("lemma1", "lemma1_appendix", "eq77", "eq15", "eq15_consistent", "remark1", "eq17", "rev_mV")
PATTERNS = ("MHA", "MQA", "MKA", "MVA")


def _log_ndtr(x: float) -> float:
    return float(torch.special.log_ndtr(torch.tensor(float(x), dtype=torch.float64)))


def _ndtri(p: float) -> float:
    return float(torch.special.ndtri(torch.tensor(float(p), dtype=torch.float64)))


def _check_law(law):
    if law not in LAWS:
        raise ValueError(f"unknown law {law!r}; use one of {LAWS}.")


def effective_dims(D: int, N: int, layers: int = 1, heads: int = 1, pattern: str = "MHA") -> tuple[int, int]:
    """(D_eff, N_eff): N·layers·(heads if MHA else 1) (Thm 4/6, Thm 5)."""
    if pattern.upper() not in PATTERNS:
        raise ValueError(f"unknown head pattern {pattern!r}; use one of {PATTERNS}.")
    return D, N * layers * (heads if pattern.upper() == "MHA" else 1)


def jl_eps(V, D, N, c=4.0) -> tuple[float, float]:
    """JL distortions (Eq. 75): ε_v = √(c log V / D), ε_k = √(c log V / N)."""
    return math.sqrt(c * math.log(V) / D), math.sqrt(c * math.log(V) / N)


def lemma1_condition(V, Nf, D, N, c=4.0, form="main") -> dict:
    """Lemma 1's sufficient condition. ``form="main"``: Eq. 74 (ε_v+ε_k+N_f ε_v ε_k < ½, the proof's);
    ``"appendix"``: Eq. 65 (ε_v+2ε_k+2N_f ε_v ε_k < 1). Returns eps_v, eps_k, lhs, bound, holds."""
    ev, ek = jl_eps(V, D, N, c)
    if form == "main":
        lhs, bound = ev + ek + Nf * ev * ek, 0.5
    elif form == "appendix":
        lhs, bound = ev + 2 * ek + 2 * Nf * ev * ek, 1.0
    else:
        raise ValueError(f"unknown form {form!r}; use 'main' (Eq. 74) or 'appendix' (Eq. 65).")
    return dict(eps_v=ev, eps_k=ek, lhs=lhs, bound=bound, holds=bool(ev < 1 and ek < 1 and lhs < bound))


def m_V(V) -> float:
    """Typical maximum of V standard Gaussians (the later revision's m_V)."""
    s = math.sqrt(2 * math.log(V))
    return s - (math.log(math.log(V)) + math.log(4 * math.pi)) / (2 * s)


def log_p_success(V, Nf, D, N, law="eq77", a=3.0) -> float:
    """log p for the probabilistic laws (``eq77``, ``eq15``, ``eq15_consistent``, ``rev_mV``)."""
    if law == "eq77":
        s_w = math.sqrt(3 / D + 3 / N + 2 * Nf / (N * D))
        s_e = math.sqrt(3 / D + 2 / N + 2 * Nf / (N * D))
        return (Nf - 1) * _log_ndtr(1 / s_w) + (V / 2 - Nf) * _log_ndtr(1 / s_e)
    if law == "eq15":
        return (V / 2) * _log_ndtr(math.sqrt(2 * N * D / Nf))
    if law == "eq15_consistent":
        return (V / 2) * _log_ndtr(math.sqrt(N * D / (2 * Nf)))
    if law == "rev_mV":
        sigma = math.sqrt(a * Nf / (D * N) + 1 / D)
        return _log_ndtr(1 / sigma - m_V(V))
    raise ValueError(f"law {law!r} has no probability; use one of {PROB_LAWS}.")


def p_success(V, Nf, D, N, law="eq77", layers=1, heads=1, pattern="MHA", a=3.0) -> float:
    """Predicted per-query accuracy at (V, N_f, D, N) with effective dims for layers/heads."""
    De, Ne = effective_dims(D, N, layers, heads, pattern)
    return math.exp(log_p_success(V, Nf, De, Ne, law, a))


def satisfies(V, Nf, D, N, law="eq77", delta=0.01, c=4.0, a=3.0) -> bool:
    """Does ``law`` predict perfect recall (p ≥ 1 − δ, or the sufficient condition) at (V, N_f, D, N)?"""
    _check_law(law)
    if law == "lemma1":
        return lemma1_condition(V, Nf, D, N, c, "main")["holds"]
    if law == "lemma1_appendix":
        return lemma1_condition(V, Nf, D, N, c, "appendix")["holds"]
    if law == "remark1":
        n_sig = -_ndtri(2 * delta / V)
        return D * N >= 2 * Nf * n_sig**2 and min(D, N) >= math.log(V)
    if law == "eq17":
        return D * N >= 4 * Nf * math.log(V / (2 * delta))
    return log_p_success(V, Nf, D, N, law, a) >= math.log1p(-delta)


def predicted_capacity(
    D, N, Nf=None, V=None, layers=1, heads=1, pattern="MHA", delta=0.01, law="eq77", c=4.0, a=3.0, v_cap=10**15
) -> dict:
    """Capacity at fixed (D, N): ``V_max`` (largest even V with perfect recall at this N_f) and/or ``Nf_max``
    (largest N_f at this V). Every law is monotone in V and N_f, so bisection is exact.

    Returns ``{"D_eff", "N_eff", "V_max", "Nf_max"}`` (None for what was not asked)."""
    _check_law(law)
    if Nf is None and V is None:
        raise ValueError("give Nf (for V_max) and/or V (for Nf_max).")
    De, Ne = effective_dims(D, N, layers, heads, pattern)

    def ok(v, f):
        return satisfies(v, f, De, Ne, law, delta, c, a)

    out = dict(D_eff=De, N_eff=Ne, V_max=None, Nf_max=None)
    if Nf is not None:
        lo, hi = 2 * Nf, v_cap
        if not ok(lo, Nf):
            out["V_max"] = 0
        else:
            while hi - lo > 2:
                mid = (lo + hi) // 4 * 2
                lo, hi = (mid, hi) if ok(mid, Nf) else (lo, mid)
            out["V_max"] = hi if ok(hi, Nf) else lo
    if V is not None:
        lo, hi = 0, V // 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if ok(V, mid) else (lo, mid)
        out["Nf_max"] = hi if ok(V, hi) else lo
    return out


def kappa_at(V, D, N, threshold: float, law: str = "eq77", a: float = 3.0, layers: int = 1) -> float:
    """A probabilistic law inverted for the number of pairs: the largest real κ = N_f in [1, V/2] with
    p_success(V, κ, D, N) ≥ ``threshold`` (0.0 when even κ = 1 is below; V/2 when every κ is above). Every law falls
    with κ, so bisection on log κ is exact to 10⁻⁶ (Chapter 5 draws each law's κ* this way)."""
    if law not in PROB_LAWS:
        raise ValueError(f"kappa_at needs a law with a probability, one of {PROB_LAWS}; got {law!r}.")

    def ok(k: float) -> bool:
        return p_success(V, k, D, N, law, layers=layers, a=a) >= threshold

    lo, hi = 1.0, V / 2
    if not ok(lo):
        return 0.0
    if ok(hi):
        return hi
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def p_grid(V, Nf, Ds, Ns, law="eq77", a=3.0, layers=1, heads=1, pattern="MHA"):
    """Long-format list of dicts {D, N, p} over a (D, N) grid, for heatmaps (lemma1-type laws give 0/1)."""
    rows = []
    for D in Ds:
        for N in Ns:
            if law in PROB_LAWS:
                p = p_success(V, Nf, D, N, law, layers, heads, pattern, a)
            else:
                De, Ne = effective_dims(D, N, layers, heads, pattern)
                p = float(satisfies(V, Nf, De, Ne, law))
            rows.append(dict(D=D, N=N, p=p))
    return rows


def multihead_prediction(V, Nf, D, N, heads, pattern="MHA", law="eq77", a=3.0, delta=0.01) -> dict:
    """Thm 5 (Lemmas 2–5) as a prediction for a single-layer M-head simplified Mamba-2 at fixed (D, N):
    MQA, MKA, MVA behave like one head with N' = N; MHA like one head with N' = M N (D' = D always).

    Returns ``{"D_eff", "N_eff", "p_<law>", "Nf_max"}``: the predicted per-query accuracy of ``law`` (a
    probabilistic law, Eq. 77 by default) and the largest N_f with perfect recall at this V (δ = ``delta``).
    Caveat [ours]: the equivalence of Lemma 5 assumes every head reads the *full* value vector; with
    values split into P = D_in/M channels it is not exact (see :func:`split_value_variance`)."""
    if law not in PROB_LAWS:
        raise ValueError(f"law {law!r} has no probability; use one of {PROB_LAWS}.")
    De, Ne = effective_dims(D, N, 1, heads, pattern)
    cap = predicted_capacity(D, N, V=V, heads=heads, pattern=pattern, law=law, a=a, delta=delta)
    return {
        "D_eff": De,
        "N_eff": Ne,
        f"p_{law}": p_success(V, Nf, D, N, law, 1, heads, pattern, a),
        "Nf_max": cap["Nf_max"],
    }


def split_value_variance(Nf, D, N, heads, values="full") -> float:
    """Variance (order of magnitude, designed JL weights with unit-norm rows) of the dominant cross-term
    N_f/(N D) of the readout noise for MHA with M heads (Lemma 5, Eqs. 129–131).

    ``values="full"``: every head reads the full D-dim value and the M independent N-dim key hashes average,
    giving N_f/(M N D) — the N' = M N law. ``values="split"``: head h carries only D/M value channels, so each
    value coordinate sees one head's N-dim hash: the cross-term stays N_f/(N D) — no gain from M in this term
    (our caveat: Lemma 5's proof, Eqs. 129–131, lets every head read the full value vector)."""
    if values not in ("full", "split"):
        raise ValueError(f"unknown values mode {values!r}; use 'full' or 'split'.")
    return Nf / (N * D * (heads if values == "full" else 1))
