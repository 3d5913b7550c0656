"""Chapter 3, §5.2 and Apps. C.2, D.4 of paper 003, checked in ``book/03_selectivity/05_induction_heads.ipynb``: the
Mamba-Δ⊤ construction that solves INDUCTION HEADS (Lemma 3, its printed Δ), and the trained models of Figs. 3 and A.4.

The trained claims read each seed's own value (the paper's are best of 5 seeds), as the package docstring
(:mod:`mamba_recall.chapters.ch3_selectivity.claims`, the "module docstring" the rules and docstrings below cite) says.
"""

from __future__ import annotations

import numpy as np

from dataclasses import replace

from mamba_recall.claims.core import Claim, Control, Evidence, Measurement, NotRun, Revision, Rule, conds, over_seeds
from ._common import EXACT, GAP_RANGE, RANGES, SOLVED, _EXACT_WHY, _chance_null, _summary
from mamba_recall.runners import runner_command

#: this module's book section (its claims are judged on that page)
SECTION = "03_selectivity/05_induction_heads"


RUN_IH = (
    f"`{runner_command('ch3_induction')} --preset paper --allow-long` (Fig. 3 / A.4 grid, "
    "5 seeds, N ∈ {|V|, 2|V|, 4|V|}; about 15 GPU-hours)"
)


def measure_lemma3(ih: dict, example_ok: bool) -> Measurement:
    fixed = [r["all"] for (V, n), r in ih.items() if n.startswith("fixed")]
    Vs = sorted({V for V, _ in ih})
    return Measurement(
        {"fixed_min_accuracy": min(fixed), "worked_example_matches": example_ok},
        f"with the Δ bias: {min(fixed):.4f} on all positions (blank included), |V| ∈ {Vs}; worked example "
        f"(Eq. 103) reproduced: {example_ok}",
        Evidence.exact(f"T = 100, |V| ∈ {Vs}"),
    )


LEMMA3 = Claim(
    "003/Lemma3",
    "a 1-layer Mamba-Δ⊤ (15) with d = 2|V| and N = |V| solves INDUCTION HEADS",
    "§5.2, Lemma 3; App. C.2, Eqs. 100–110",
    "exact (no number given); worked example (103)",
    Rule(
        why=_EXACT_WHY + " (all positions, blank included), and the worked example (103) must come out as printed",
        reproduced=conds(("fixed_min_accuracy", ">=", EXACT), ("worked_example_matches", "true")),
    ),
    measure_lemma3,
    SECTION,
)


def measure_lemma3_delta(ih: dict) -> Measurement:
    printed = [r["all"] for (V, n), r in ih.items() if not n.startswith("fixed")]
    fixed = [r["all"] for (V, n), r in ih.items() if n.startswith("fixed")]
    return Measurement(
        {"printed_max_accuracy": max(printed), "fixed_min_accuracy": min(fixed)},
        f"Δ = softplus(w[I|0]x̂) as printed: {min(printed):.2f}–{max(printed):.2f} on all positions; with "
        f"the bias −b_Δ: {min(fixed):.4f}",
        Evidence.exact("T = 100, |V| ∈ {5, 10, 20, 40}"),
    )


LEMMA3_DELTA = Claim(
    "003/Lemma3-Delta",
    "Lemma 3's step is Δ(x̂) = SoftPlus(w_Δ[I|0]x̂), with Δ = 0 on the untouched columns",
    "App. C.2, Eqs. 109–110",
    "Δ = SoftPlus(w_Δ[I|0]x̂) (no accuracy given)",
    Rule(
        why="softplus(0) = ln 2, not 0: the printed Δ must still solve the task (≥ 0.99 on all positions) to stand; "
        "with a bias −b_Δ the construction must be exact",
        reproduced=conds(("printed_max_accuracy", ">=", SOLVED)),
        erratum=conds(("fixed_min_accuracy", ">=", EXACT)),
    ),
    measure_lemma3_delta,
    SECTION,
    cause="003-lemma3-delta-softplus-of-zero",
)


def _ih_cells(bundle):
    runs = bundle.tables["rows"]
    best = runs.groupby(["V", "d", "N", "mixer"]).accuracy.max().unstack("mixer")
    return runs, best


def _ih_threshold(best) -> float:
    """Fraction of |V| where Mamba-Δ⊤ reaches 0.99 only at d ≥ |V| (one grid step below 2|V|) and does
    reach it at some d ≥ 4|V|; NaN where the d grid cannot show it (fewer than 3 values of d)."""
    ok = []
    for V, g in best.reset_index().groupby("V"):
        if g.d.nunique() < 3:
            continue
        solved = g[g.s6_dT >= SOLVED]
        ok.append(bool((solved.d >= V).all()) and bool((solved.d >= 4 * V).any()))
    return float(np.mean(ok)) if ok else float("nan")


def _ih_values(runs, factors=(4,)) -> dict:
    """One seed's INDUCTION HEADS numbers: the lowest Mamba-Δ⊤ − Mamba gap over the (|V|, d, N) cells, the lowest
    threshold fraction (:func:`_ih_threshold`) over the N factors, and Mamba-Δ⊤'s best accuracy (whether it learns
    the task at all)."""
    cells = runs.groupby(["V", "d", "N", "mixer"]).accuracy.max().unstack("mixer")
    thr = [_ih_threshold(cells[[n == f * V for V, d, n in cells.index]]) for f in factors]
    return {
        "min_gap_dT_minus_mamba": float((cells["s6_dT"] - cells["s6"]).min()),
        "fraction_V_threshold_as_bound": float(np.min(thr)),
        "dT_best_accuracy": float(cells["s6_dT"].max()),
    }


def _ih_null(runs, one) -> Control:
    return _chance_null(
        runs, 1 / (runs.V + 1), one, "both mixers at chance, 1/(|V| + 1) (a uniform guess over the tokens and blank)"
    )


GAP_TOL = -0.02  # 'equal or better' up to 0.02 of test noise


def _paired_gaps(runs) -> dict:
    """Per (|V|, d) cell, Mamba-Δ⊤ − Mamba paired on the seed (the two mixers of one seed share the cell's data and
    recipe): the mean paired difference over seeds and its 95 % Student-t interval, clipped to a difference's range
    [−1, 1] (:func:`mamba_recall.runstore.mean_interval` with ``paired_with``)."""
    from mamba_recall.runstore import mean_interval

    wide = runs.pivot_table(index=["V", "d", "seed"], columns="mixer", values="accuracy").dropna()
    return {
        cell: mean_interval(list(g["s6_dT"]), paired_with=list(g["s6"]), bounds=GAP_RANGE)
        for cell, g in wide.groupby(level=["V", "d"])
    }


def _gap_cells(gaps: dict) -> tuple[float, tuple[float, float]]:
    """The share of cells whose paired gap is ≥ GAP_TOL, as a value (share of cells whose mean is) and an interval:
    from the share whose whole interval is at or above it to the share whose interval reaches it (a cell with one
    seed, or a NaN, counts as undecided)."""
    n = len(gaps)
    held = sum(1 for g in gaps.values() if g["mean"] >= GAP_TOL)
    sure = sum(1 for g in gaps.values() if g["ci_low"] >= GAP_TOL)  # NaN compares False: undecided
    refuted = sum(1 for g in gaps.values() if g["ci_high"] < GAP_TOL)
    return held / n, (sure / n, (n - refuted) / n)


def measure_fig3(bundle) -> Measurement:
    """Fig. 3 (N = 4|V|): Mamba-Δ⊤ ≥ Mamba − 0.02 at every (|V|, d), read on the difference of the two mixers paired
    per seed in each cell (its mean and 95 % interval over seeds; ``gap_cells_equal_or_better`` is the share of
    cells that hold, its interval from the cells decided to hold to the cells not decided to fail); Mamba-Δ⊤ hits
    0.99 only above the Lemma 3 bound d = 2|V| (one grid step of tolerance) and does hit it at d ≥ 4|V|: each
    seed's own cells (the paper's are the best of 5 seeds: module docstring), combined over seeds; a null control
    at chance."""
    runs, best = _ih_cells(bundle)
    best = best[[n == 4 * V for V, d, n in best.index]]
    if best.empty:
        raise NotRun(f"the bundle has no N = 4|V| runs; needs {RUN_IH}")
    sub = runs[runs.N == 4 * runs.V]

    def one(r):
        v = _ih_values(r)
        return Measurement(
            {k: v[k] for k in ("fraction_V_threshold_as_bound", "dT_best_accuracy")},
            "min gap {min_gap_dT_minus_mamba:+.3f}".format(**v),
            Evidence.from_bundle(bundle, f"|V| ∈ {sorted(set(runs.V))}, d ∈ {sorted(set(runs.d))}", 1),
        )

    def with_gaps(m: Measurement, r) -> Measurement:
        gaps = _paired_gaps(r)
        share, (lo, hi) = _gap_cells(gaps)
        return replace(
            m,
            values={**m.values, "gap_cells_equal_or_better": share},
            intervals={**m.intervals, "gap_cells_equal_or_better": (lo, hi)},
        )

    null = _ih_null(sub, one)
    null = replace(null, measurement=with_gaps(null.measurement, sub.assign(accuracy=1 / (sub.V + 1))))
    m = replace(with_gaps(over_seeds(sub, one, bounds=RANGES), sub), control=null)
    gaps = _paired_gaps(sub)
    return _summary(
        m,
        "Mamba-Δ⊤ − Mamba paired per seed, mean [95 % interval]: "
        + "; ".join(
            f"|V|={V} d={d}: {g['mean']:+.3f} [{g['ci_low']:+.3f}, {g['ci_high']:+.3f}]" for (V, d), g in gaps.items()
        )
        + "; best of seeds: "
        + "; ".join(f"|V|={V} d={d}: Mamba {r.s6:.3f}, Mamba-Δ⊤ {r.s6_dT:.3f}" for (V, d, N), r in best.iterrows()),
        "" if best.reset_index().d.nunique() >= 3 else "one value of d: the d threshold is not measured",
    )


FIG3 = Claim(
    "003/Fig3",
    "trained Mamba-Δ⊤ is at least as good as Mamba on INDUCTION HEADS and reaches 100 % only above the "
    "Lemma 3 bound d = 2|V|",
    "§5.2, Fig. 3",
    "best of 5 seeds, N = 4|V|, T = 100 (no numbers given)",
    Rule(
        why="'equal or better' up to 0.02 of test noise at every (|V|, d) ('for all model sizes considered', §5.2), "
        "each cell read on the two mixers' difference paired per seed, its mean and 95 % interval over seeds (a "
        "cell holds when its whole interval is ≥ −0.02; the share of cells that hold is decided only when every "
        "cell is); 'only above the bound' means 0.99 is reached at no d below |V| (one grid step of tolerance "
        "under 2|V|) and is reached at some d ≥ 4|V|; the ordering alone is partial, and only among models that "
        "learn the task (Mamba-Δ⊤ reaching 0.99 somewhere): two models at chance are 'equal'. The paper's values "
        "are the best of 5 seeds; the rule reads each seed's own (module docstring)",
        reproduced=conds(("gap_cells_equal_or_better", ">=", 1.0), ("fraction_V_threshold_as_bound", ">=", 1.0)),
        partially=conds(("gap_cells_equal_or_better", ">=", 1.0), ("dT_best_accuracy", ">=", SOLVED)),
        trained=True,
    ),
    measure_fig3,
    SECTION,
    reads="ch3_induction",
    not_run=RUN_IH,
    revisions=(
        Revision(
            date="2026-12-04",
            reason="Open review (review of d645e6c, issue 51): the ordering was read as each seed's minimum gap over "
            "six unpaired noisy cells, a statistic biased downwards whose minimum always came from the cells below "
            "the bound; it is now read per cell on the mixers' difference paired per seed.",
            rule_before="reproduced if min_gap_dT_minus_mamba ≥ -0.02 and fraction_V_threshold_as_bound ≥ 1; "
            "partially if min_gap_dT_minus_mamba ≥ -0.02 and dT_best_accuracy ≥ 0.99; otherwise not reproduced",
            status_before="inconclusive",
        ),
    ),
)


def measure_figa4(bundle) -> Measurement:
    runs, best = _ih_cells(bundle)
    factors = sorted({n // V for V, d, n in best.index})
    if len(factors) < 2:
        raise NotRun(f"the bundle has runs at N = {factors}·|V| only; Fig. A.4 needs N ∈ {{|V|, 2|V|, 4|V|}}: {RUN_IH}")

    def one(r):
        v = _ih_values(r, factors)
        return Measurement(
            v,
            f"min gap {v['min_gap_dT_minus_mamba']:+.3f}",
            Evidence.from_bundle(bundle, "N ∈ {|V|, 2|V|, 4|V|}", 1),
        )

    m = replace(over_seeds(runs, one, bounds=RANGES), control=_ih_null(runs, one))
    gap = float((best["s6_dT"] - best["s6"]).min())
    return _summary(m, f"N factors {factors}: min(Mamba-Δ⊤ − Mamba) of the best of seeds {gap:.3f}")


FIGA4 = Claim(
    "003/FigA4",
    "Fig. 3's findings hold for N ∈ {|V|, 2|V|, 4|V|}",
    "App. D.4, Fig. A.4",
    "best of 5 seeds (no numbers given)",
    Rule(
        why="as Fig. 3, at every N (the partial level only among models that learn the task: two models at chance "
        "are 'equal'); best of 5 seeds in the paper, each seed's own value here (module docstring)",
        reproduced=conds(("min_gap_dT_minus_mamba", ">=", -0.02), ("fraction_V_threshold_as_bound", ">=", 1.0)),
        partially=conds(("min_gap_dT_minus_mamba", ">=", -0.02), ("dT_best_accuracy", ">=", SOLVED)),
        trained=True,
    ),
    measure_figa4,
    SECTION,
    reads="ch3_induction",
    not_run=RUN_IH,
)


#: this section's claims, in the registry's order
CLAIMS = (LEMMA3, LEMMA3_DELTA, FIG3, FIGA4)
