"""The statistics of the library (``analysis.interventions``, ``runstore``) now come from ``scipy.stats``.

Three kinds of checks:

1. Published answers that do not come from scipy: Newcombe's (1998) Wilson intervals, the t table, the
   closed forms of the t and χ² tails at df = 1, 2, exact binomial sums for McNemar, the worked examples
   of Welch's test and of Spearman's ρ, Mendel's 9:3:3:1 χ².
2. The numbers of the hand-written code that scipy replaced, in ``tests/data/stats_reference.json``:
   its outputs on the inputs recorded while re-running the committed Chapter 4 check bundles
   (``results/ch4_checks_*_ci.json``, reproduced exactly) and on fixed synthetic inputs.
3. The committed Chapter 2 intervals, recomputed from the run store and the committed capacity table.

Tolerances, and why: Wilson bounds agree to 1e-15 (the same closed form, the operations in another order;
at s = n scipy returns exactly 1 where the old code gave 1 − 2⁻⁵²); McNemar p-values and the bootstrap on
the committed inputs are bit-identical; the χ² tail to 1e-13 (torch's regularised incomplete gamma against
scipy's); the old Student-t tail integrated the density by the trapezoid rule (20,001 points), within
2e-10 of the exact tail and 0.0 instead of a p below about 1e-12 (cancellation in 1 − 2·area); the old t
quantile table had 3 decimals, so interval bounds move by at most 4.8e-4 · s/√n.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mamba_recall.analysis import interventions as iv
from mamba_recall.paths import RESULTS_DIR
from mamba_recall.runstore import mean_interval, t_quantile_975

REFERENCE = json.loads((Path(__file__).resolve().parents[1] / "data" / "stats_reference.json").read_text())
#: the hand-written table of t_{0.975, df}, df = 1..30, that runstore used before scipy (3 decimals)
OLD_T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


def _discordant(n01: int, n10: int):
    """Paired booleans with n01 pairs (False, True) and n10 pairs (True, False), nothing concordant."""
    a = np.array([True] * n10 + [False] * n01, dtype=bool)
    return a, ~a


# ------------------------------------------------------------------------ 1. published, scipy-independent


@pytest.mark.parametrize(
    "s, n, lo, hi",
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)],
)
def test_wilson_matches_newcombe_1998(s, n, lo, hi):
    """Newcombe (1998), Stat. Med. 17:857, Table II, method 3 (score interval without continuity correction)."""
    got = iv.wilson(s, n)
    assert got == pytest.approx((lo, hi), abs=5e-5)
    z = 1.959963984540054  # and the closed form, written out
    p = s / n
    centre, half = (
        (p + z * z / (2 * n)) / (1 + z * z / n),
        z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)),
    )
    assert got == pytest.approx((max(0.0, centre - half), centre + half), abs=1e-15)


def test_wilson_arrays_and_errors():
    lo, hi = iv.wilson(np.array([0, 3, 8]), 8)
    assert lo.shape == hi.shape == (3,) and lo[0] == 0.0 and hi[2] == 1.0 and np.all(lo < hi)
    lo, hi = iv.wilson(np.array([2.0, 5.0]), np.array([4.0, 10.0]))  # whole-number floats are counts too
    assert (lo[1], hi[1]) == iv.wilson(5, 10) and lo[0] == iv.wilson(2, 4)[0]
    with pytest.raises(ValueError, match="0 <= successes <= n"):
        iv.wilson(5, 4)
    with pytest.raises(ValueError, match="whole-number counts"):
        iv.wilson(2.5, 4)


def test_t_quantiles_against_the_table_and_closed_forms():
    for df, table in enumerate(OLD_T975, start=1):  # the printed table: every entry is t rounded to 3 decimals
        assert round(t_quantile_975(df), 3) == table
        assert abs(t_quantile_975(df) - table) <= 4.8e-4
    assert t_quantile_975(1) == pytest.approx(math.tan(0.475 * math.pi), rel=1e-14)  # Cauchy: tan(π(q − ½))
    assert t_quantile_975(2) == pytest.approx(0.95 * math.sqrt(2 / (1 - 0.95**2)), rel=1e-14)  # t/√(t²+2) = 2q−1
    assert t_quantile_975(10**7) == pytest.approx(1.959963984540054, abs=1e-6)
    assert math.isnan(t_quantile_975(0))


def test_mcnemar_exact_binomial_sums():
    for n01, n10 in [(0, 5), (1, 3), (2, 9), (7, 30), (3, 397)]:
        n, k = n01 + n10, min(n01, n10)
        exact = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)
        assert iv.mcnemar_p(*_discordant(n01, n10)) == pytest.approx(exact, rel=1e-12)
    assert iv.mcnemar_p(*_discordant(0, 5)) == pytest.approx(1 / 16)  # 2 · ½⁵
    assert iv.mcnemar_p(*_discordant(5, 5)) == 1.0 and iv.mcnemar_p(*_discordant(0, 0)) == 1.0
    concordant = np.array([True, False, True])
    assert iv.mcnemar_p(concordant, concordant) == 1.0


# The three worked examples of the Wikipedia article "Welch's t-test" (t and p as printed there).
WELCH_EXAMPLES = [
    (
        [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4],
        [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4],
        -2.46,
        0.021,
    ),
    (
        [17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8],
        [
            21.5,
            22.8,
            21.0,
            23.0,
            21.6,
            23.6,
            22.5,
            20.7,
            23.4,
            21.8,
            20.7,
            21.7,
            21.5,
            22.5,
            23.6,
            21.5,
            22.5,
            23.5,
            21.5,
            21.8,
        ],
        -1.57,
        0.149,
    ),
    (
        [19.8, 20.4, 19.6, 17.8, 18.5, 18.9, 18.3, 18.9, 19.5, 22.0],
        [
            28.2,
            26.6,
            20.1,
            23.3,
            25.2,
            22.1,
            17.7,
            27.6,
            20.6,
            13.7,
            23.2,
            17.5,
            20.6,
            18.0,
            23.9,
            21.6,
            24.3,
            20.4,
            24.0,
            13.2,
        ],
        -2.22,
        0.036,
    ),
]


@pytest.mark.parametrize("a, b, t, p", WELCH_EXAMPLES)
def test_welch_worked_examples(a, b, t, p):
    got_t, got_p = iv.welch_test(a, b)
    assert round(got_t, 2) == t and round(got_p, 3) == p
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    assert got_t == pytest.approx((np.mean(a) - np.mean(b)) / math.sqrt(va + vb), rel=1e-12)


def test_welch_edge_cases():
    assert iv.welch_test([1.0, 1.0], [1.0, 1.0]) == (0.0, 1.0)
    assert iv.welch_test([2.0, 2.0], [1.0, 1.0]) == (math.inf, 0.0)
    with pytest.raises(ValueError, match="at least 2 values"):
        iv.welch_test([1.0], [1.0, 2.0])


def test_t_tail_closed_forms():
    """The two-sided tail behind Welch's p: df = 1 (Cauchy) 1 − (2/π) atan|t|, df = 2: 1 − |t|/√(t² + 2)."""
    from scipy import stats

    for t in (0.3, 1.0, 2.5, 12.0):
        assert 2 * stats.t.sf(t, 1) == pytest.approx(1 - 2 / math.pi * math.atan(t), rel=1e-12)
        assert 2 * stats.t.sf(t, 2) == pytest.approx(1 - t / math.sqrt(t * t + 2), rel=1e-12)


def test_spearman_published_and_ties():
    # Wikipedia "Spearman's rank correlation coefficient": IQ against hours of TV a week, ρ = −29/165
    iq = [106, 100, 86, 101, 99, 103, 97, 113, 112, 110]
    tv = [7, 27, 2, 50, 28, 29, 20, 12, 6, 17]
    assert iv.spearman(iq, tv) == pytest.approx(-29 / 165, abs=1e-15)
    assert iv.spearman([1, 2, 3], [10, 20, 15]) == pytest.approx(0.5)
    # ties take the average rank: ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4)
    r1, r2 = np.array([1, 2.5, 2.5, 4]), np.arange(1, 5.0)
    assert iv.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(np.corrcoef(r1, r2)[0, 1], abs=1e-15)
    assert math.isnan(iv.spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="same length"):
        iv.spearman([1, 2], [1, 2, 3])


def test_chi2_published_and_closed_form():
    # Mendel's dihybrid cross, 556 peas against 9:3:3:1: χ² = 0.470 on 3 df, p = 0.925
    exp = np.array([9, 3, 3, 1]) / 16 * 556
    assert iv.chi2_uniform_p([315, 108, 101, 32], exp) == pytest.approx(0.9254, abs=5e-5)
    # df = 2: P[χ²_2 ≥ x] = exp(−x/2); counts (10, 20, 30) against 20 each: χ² = 10
    assert iv.chi2_uniform_p([10, 20, 30], [20, 20, 20]) == pytest.approx(math.exp(-5), rel=1e-12)
    assert iv.chi2_uniform_p([4], [4]) == 1.0
    with pytest.raises(ValueError, match="scale it"):
        iv.chi2_uniform_p([10, 20], [10, 10])
    with pytest.raises(ValueError, match="> 0"):
        iv.chi2_uniform_p([0, 5], [0, 5])


def test_paired_bootstrap_is_the_paired_percentile_bootstrap():
    """The resampling written out: n prompt indices with replacement per resample, the same for a and b."""
    rng = np.random.RandomState(11)
    a, b = rng.rand(40), rng.rand(40)
    idx = np.random.RandomState(5).randint(0, 40, size=(2000, 40))
    diffs = np.array([a[i].mean() - b[i].mean() for i in idx])
    est, lo, hi = iv.paired_bootstrap(a, b, seed=5)
    assert est == a.mean() - b.mean()
    assert (lo, hi) == pytest.approx((np.quantile(diffs, 0.025), np.quantile(diffs, 0.975)), abs=1e-15)
    assert iv.paired_bootstrap(a, a + 0.25, seed=1) == pytest.approx((-0.25, -0.25, -0.25))  # pairing kept
    assert iv.paired_bootstrap(a, b, stat=np.median, seed=5)[0] == np.median(a) - np.median(b)
    with pytest.raises(ValueError, match="1-D"):
        iv.paired_bootstrap(np.ones((4, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="same number of rows"):
        iv.paired_bootstrap(a, b[:-1])


# ----------------------------------------------------- 2. the hand-written code's numbers, committed inputs


def _split(kind):
    rows, n = REFERENCE[kind], REFERENCE["committed_counts"].get(kind, 0)
    return [pytest.param(r, id=f"committed{i}") for i, r in enumerate(rows[:n])] + [
        pytest.param(r, id=f"synthetic{i}") for i, r in enumerate(rows[n:])
    ]


def test_reference_holds_the_committed_inputs():
    counts = REFERENCE["committed_counts"]
    assert counts["wilson"] > 50 and counts["mcnemar"] >= 10 and counts["paired_bootstrap"] >= 10
    assert counts["chi2"] >= 3 and counts["welch"] >= 3 and counts["spearman"] >= 3


@pytest.mark.parametrize("row", _split("wilson"))
def test_wilson_equals_the_old_code(row):
    s, n, lo, hi = row
    got = iv.wilson(s, n)
    assert abs(got[0] - lo) <= 1e-15 and abs(got[1] - hi) <= 1e-15


@pytest.mark.parametrize("row", _split("mcnemar"))
def test_mcnemar_equals_the_old_code(row):
    n01, n10, p = row
    assert iv.mcnemar_p(*_discordant(n01, n10)) == p  # bit-identical, down to p = 2.6e-231


@pytest.mark.parametrize("row", _split("chi2"))
def test_chi2_equals_the_old_code(row):
    counts, expected, p = row
    assert abs(iv.chi2_uniform_p(counts, expected) - p) <= 1e-13


@pytest.mark.parametrize("row", _split("paired_bootstrap"))
def test_paired_bootstrap_equals_the_old_code(row, request):
    a, b, seed, est, lo, hi = row
    got = iv.paired_bootstrap(np.array(a), np.array(b), seed=seed)
    if "committed" in request.node.callspec.id:
        assert got == (est, lo, hi)  # the committed intervals, bit for bit
    else:  # scipy takes the quantile at (1 − 0.95)/2 = 0.025000000000000022: one ulp at most
        assert got == pytest.approx((est, lo, hi), abs=1e-15)


@pytest.mark.parametrize("row", _split("welch"))
def test_welch_equals_the_old_code(row):
    a, b, t, p = row
    got_t, got_p = iv.welch_test(a, b)
    assert got_t == pytest.approx(t, rel=1e-13)
    if p == 0.0:  # the old trapezoid tail cancelled to zero
        assert 0.0 < got_p < 1e-12
    else:
        assert abs(got_p - p) <= 2e-10


@pytest.mark.parametrize("row", _split("spearman"))
def test_spearman_equals_the_old_code(row):
    x, y, r = row
    assert abs(iv.spearman(x, y) - r) <= 1e-15


def test_old_t_tail_was_within_2e_10():
    from scipy import stats

    for t, df, p in REFERENCE["student_t_sf2"]:
        assert abs(2 * stats.t.sf(t, df) - p) <= 2e-10


# ---------------------------------------------------------- 3. the committed Chapter 2 intervals, recomputed


@pytest.mark.parametrize("name", ["ch2_reference_grid", "ch2_trained_dn"])
@pytest.mark.parametrize("preset", ["ci", "cpu-hours"])
def test_committed_seed_intervals_move_within_the_table_rounding(name, preset):
    """Per cell, mean and s from the committed per-run results (results/runs/) equal the bundle's bit for bit;
    the bounds (clipped to the experiment's declared range of an accuracy, [0, 1]) differ from the bundle's (made
    with the 3-decimal table) by |t − table| · s/√n ≤ 4.8e-4 · s/√n, and not at all at the 3 decimals the claims
    print."""
    import importlib

    from mamba_recall import runstore
    from mamba_recall.experiment import experiment_named

    from mamba_recall.runners import runner_module

    mod = importlib.import_module(runner_module(name))
    cells = pd.read_csv(RESULTS_DIR / f"{name}_{preset}.cells.csv")
    runs = runstore.finished_runs(mod.jobs_for(preset))
    assert len(runs) == int(cells["n_seeds"].sum())
    by_cell = {}
    for r in runs:
        by_cell.setdefault((r["config"]["D"], r["config"]["N"]), []).append(r)
    for row in cells.itertuples():
        recs = sorted(by_cell[(row.D, row.N)], key=lambda r: r["seed"])
        for m in ("best_accuracy", "final_accuracy"):
            st = mean_interval([r["result"][m] for r in recs], bounds=experiment_named(name).bounds[m])
            assert st["mean"] == getattr(row, f"{m}_mean") and st["std"] == getattr(row, f"{m}_std")
            bound = 4.8e-4 * st["std"] / math.sqrt(st["n"]) + 1e-15
            for side in ("ci_low", "ci_high"):
                old = getattr(row, f"{m}_{side}")
                assert abs(st[side] - old) <= bound
                assert f"{st[side]:.3f}" == f"{old:.3f}"


@pytest.mark.parametrize("preset", ["ci", "cpu-hours"])
def test_committed_power_law_fits_move_within_the_table_rounding(preset):
    """The designed-capacity slopes (results/ch2_designed_capacity_*.fits.csv) refitted from the committed
    capacity table: slopes within a relative 1e-12 (the one least squares goes through the machine's LAPACK, whose
    last bits differ between machines: the committed fits were made on another CPU than the one checking them), interval
    bounds within 4.8e-4 · se (the t quantile's table before scipy), equal at the printed 3 decimals."""
    from mamba_recall.theory.designed_capacity import LAWS_COMPARED, fit_power_law

    cfg = json.loads((RESULTS_DIR / f"ch2_designed_capacity_{preset}.json").read_text())["config"]
    cap = pd.read_csv(RESULTS_DIR / f"ch2_designed_capacity_{preset}.capacity.csv")
    fits = pd.read_csv(RESULTS_DIR / f"ch2_designed_capacity_{preset}.fits.csv")
    checked = 0
    for row in fits.itertuples():
        g = cap[(cap["level"] == row.level) & (cap["readout"] == row.readout)]
        usable = g[(g["Nf"] >= cfg["min_fit_Nf"]) & ~g["censored"]]
        s = {
            "all cells": usable,
            "D = N": usable[usable["D"] == usable["N"]],
            "D = 256, N varies": usable[usable["D"] == 256],
        }[row.subset]
        col = "Nf" if row.series == "measured" else row.series
        assert row.series == "measured" or row.series in [c for c, *_ in LAWS_COMPARED]
        pts = s[s[col].notna()]
        f = fit_power_law(list(pts["DN"]), list(pts[col]))
        if f["n"] < 3:
            continue
        assert f["exponent"] == pytest.approx(row.exponent, rel=1e-12, abs=0)
        se = (row.ci_high - row.ci_low) / 2 / t_quantile_975(f["n"] - 2)
        for side in ("ci_low", "ci_high"):
            assert abs(f[side] - getattr(row, side)) <= 4.8e-4 * se + 1e-12
            assert f"{f[side]:.3f}" == f"{getattr(row, side):.3f}"
        checked += 1
    assert checked >= 10
