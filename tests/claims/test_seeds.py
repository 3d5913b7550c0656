"""The one way from seeds to an interval (:func:`mamba_recall.runstore.mean_interval`, used by
:func:`mamba_recall.claims.core.across_seeds` and :func:`mamba_recall.runstore.aggregate`) and the one regression
with t-intervals (:func:`mamba_recall.runstore.regression_interval`): against scipy directly, clipped to a declared
range, over paired differences, one seed, a NaN seed; and no other module of the library computes a t quantile."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from mamba_recall.claims import core
from mamba_recall.claims.core import ClaimError, Evidence, Measurement, across_seeds
from mamba_recall.runstore import aggregate, least_squares, mean_interval, regression_interval, t_interval

SRC = Path(__file__).resolve().parents[2] / "src" / "mamba_recall"
SHARED = SRC / "runstore" / "_aggregate.py"


def _m(**values) -> Measurement:
    return Measurement(values, "", Evidence("cpu-hours", "cpu", 1, "x", "test"))


@pytest.mark.parametrize("xs", [[0.2, 0.4], [0.91, 0.97, 0.95], [1.0, 2.0, 4.0, 8.0, 3.5]])
def test_the_interval_is_scipys_student_t_over_seeds(xs):
    st = mean_interval(xs)
    lo, hi = stats.t.interval(0.95, len(xs) - 1, loc=np.mean(xs), scale=stats.sem(xs))
    assert st["n"] == len(xs) and st["n_nan"] == 0 and st["per_seed"] == xs
    assert st["mean"] == pytest.approx(np.mean(xs), rel=1e-14)
    assert st["std"] == pytest.approx(np.std(xs, ddof=1), rel=1e-12)
    assert (st["ci_low"], st["ci_high"]) == pytest.approx((lo, hi), rel=1e-12, abs=1e-15)


def test_bounds_clip_the_interval_to_the_quantitys_range_and_leave_the_mean():
    xs = [0.9, 1.0, 0.98]  # an accuracy near 1: the t-interval runs past 1
    free, clipped = mean_interval(xs), mean_interval(xs, bounds=(0.0, 1.0))
    assert free["ci_high"] > 1.0 and clipped["ci_high"] == 1.0
    assert clipped["ci_low"] == free["ci_low"] and clipped["mean"] == free["mean"]
    low = mean_interval([0.0, 0.1, 0.02], bounds=(0, 1))
    assert low["ci_low"] == 0.0 and mean_interval([0.0, 0.1, 0.02])["ci_low"] < 0
    for bad in ((1.0, 0.0), (0.0,), "01", 1.0):
        with pytest.raises(ValueError, match="bounds="):
            mean_interval(xs, bounds=bad)


def test_paired_differences_match_a_hand_computation():
    a, b = [0.92, 0.80, 0.95, 0.86], [0.89, 0.78, 0.91, 0.83]  # the arms of one seed share its data and start
    d = [0.03, 0.02, 0.04, 0.03]  # a − b, seed by seed
    mean = sum(d) / 4
    s = math.sqrt(sum((x - mean) ** 2 for x in d) / 3)
    half = 3.182446305284263 * s / 2  # t_{0.975, 3} · s / √4
    st = mean_interval(a, paired_with=b)
    assert st["per_seed"] == pytest.approx(d, abs=1e-15) and st["n"] == 4
    assert st["mean"] == pytest.approx(mean, abs=1e-15)
    assert (st["ci_low"], st["ci_high"]) == pytest.approx((mean - half, mean + half), abs=1e-12)
    # pairing removes the between-seed spread the two arms share: narrower than the unpaired arms' intervals
    assert st["ci_high"] - st["ci_low"] < mean_interval(a)["ci_high"] - mean_interval(a)["ci_low"]
    with pytest.raises(ValueError, match="seed for seed"):
        mean_interval(a, paired_with=b[:3])


def test_a_single_seed_has_a_mean_and_no_interval():
    st = mean_interval([0.7])
    assert st["mean"] == 0.7 and st["n"] == 1 and st["per_seed"] == [0.7]
    assert all(math.isnan(st[k]) for k in ("std", "ci_low", "ci_high"))
    m = across_seeds([_m(acc=0.7, ok=True)])
    assert m.values == {"acc": 0.7, "ok": True} and m.intervals == {} and m.per_seed["acc"] == [0.7]


def test_a_nan_seed_makes_the_number_nan_as_across_seeds_does():
    st = mean_interval([0.5, float("nan"), 0.7])
    assert st["n_nan"] == 1 and all(math.isnan(st[k]) for k in ("mean", "std", "ci_low", "ci_high"))
    assert mean_interval([], bounds=(0, 1))["n"] == 0 and math.isnan(mean_interval([])["mean"])
    m = across_seeds([_m(acc=0.5), _m(acc=float("nan")), _m(acc=0.7)])
    assert math.isnan(m.values["acc"]) and "acc" not in m.intervals and len(m.per_seed["acc"]) == 3


def test_across_seeds_clips_only_the_metrics_with_a_declared_range():
    ms = [_m(acc=a, gap=a) for a in (0.9, 1.0, 0.98)]
    free = across_seeds(ms)
    by_dict = across_seeds(ms, bounds={"acc": (0.0, 1.0)})
    by_name = across_seeds(ms, bounds=lambda k: (0.0, 1.0) if k == "acc" else None)
    assert free.intervals["acc"][1] > 1.0 and by_dict.intervals["acc"][1] == 1.0
    assert by_dict.intervals == by_name.intervals and by_dict.intervals["gap"] == free.intervals["gap"]
    with pytest.raises(ClaimError, match="bounds="):
        across_seeds(ms, bounds=(0.0, 1.0))


def test_aggregate_combines_each_cell_with_the_shared_function():
    runs = [
        {"config": {"x": 0}, "seed": s, "key": f"k{s}", "result": {"acc": v}, "provenance": {}}
        for s, v in enumerate([0.9, 1.0, 0.98])
    ]
    row = aggregate(runs, by=["x"], metrics=["acc"], bounds={"acc": (0, 1)}).iloc[0]
    st = mean_interval([0.9, 1.0, 0.98], bounds=(0, 1))
    assert (row.acc_mean, row.acc_ci_low, row.acc_ci_high) == (st["mean"], st["ci_low"], st["ci_high"])
    assert aggregate(runs, by=["x"], metrics=["acc"]).iloc[0].acc_ci_high > 1.0  # no range declared: not clipped
    with pytest.raises(ValueError, match="not among the metrics"):
        aggregate(runs, by=["x"], metrics=["acc"], bounds={"loss": (0, 1)})


def test_regression_interval_against_scipy():
    rng = np.random.default_rng(0)
    x = np.log(np.array([16, 32, 64, 128, 256, 512, 1024], float))
    y = 0.8 * x + 0.3 + rng.normal(0, 0.1, len(x))
    fit, ref = regression_interval(x, y), stats.linregress(x, y)
    q = stats.t.ppf(0.975, len(x) - 2)
    assert fit["n"] == 7 and fit["slope"] == pytest.approx(ref.slope, rel=1e-12)
    assert fit["intercept"] == pytest.approx(ref.intercept, rel=1e-12)
    assert fit["slope_se"] == pytest.approx(ref.stderr, rel=1e-10)
    assert fit["intercept_se"] == pytest.approx(ref.intercept_stderr, rel=1e-10)
    assert fit["slope_ci"] == pytest.approx((ref.slope - q * ref.stderr, ref.slope + q * ref.stderr), rel=1e-10)
    lo, hi = ref.intercept - q * ref.intercept_stderr, ref.intercept + q * ref.intercept_stderr
    assert fit["intercept_ci"] == pytest.approx((lo, hi), rel=1e-10)
    assert fit["r2"] == pytest.approx(ref.rvalue**2, rel=1e-12)
    for xs, ys in (([1.0, 2.0], [1.0, 2.0]), ([3.0, 3.0, 3.0], [1.0, 2.0, 3.0])):  # too few points, constant x
        assert all(
            math.isnan(v) for v in (regression_interval(xs, ys)["slope"], *regression_interval(xs, ys)["slope_ci"])
        )
    with pytest.raises(ValueError, match="one y per x"):
        regression_interval([1.0, 2.0, 3.0], [1.0, 2.0])
    assert t_interval(1.0, 0.5, 4) == pytest.approx((1 - stats.t.ppf(0.975, 4) * 0.5, 1 + stats.t.ppf(0.975, 4) * 0.5))
    assert all(math.isnan(v) for v in (*t_interval(1.0, 0.5, 0), *t_interval(1.0, float("inf"), 3)))


def test_least_squares_two_regressors_against_scipy_by_frisch_waugh_lovell():
    """Each coefficient of a two-regressor fit is the slope of y on that regressor once both are residualised on the
    other (Frisch–Waugh–Lovell), a one-regressor fit scipy checks; its standard error is that slope's times
    √((n − 2)/(n − 3)) (the residuals are the same, the degrees of freedom one fewer)."""
    rng = np.random.default_rng(1)
    D = np.log(np.repeat([16.0, 32.0, 64.0], 6))
    N = np.log(np.tile([2.0, 4.0, 8.0], 6))
    y = 0.9 * D + 0.3 * N - 1.0 + rng.normal(0, 0.2, len(D))
    fit = least_squares({"a": D, "b": N}, y)
    n = len(y)
    q = stats.t.ppf(0.975, n - 3)
    assert fit["n"] == n and fit["dof"] == n - 3
    for name, x, other in (("a", D, N), ("b", N, D)):
        resid = lambda v: v - stats.linregress(other, v).intercept - stats.linregress(other, v).slope * other  # noqa: E731
        ref = stats.linregress(resid(x), resid(y))
        se = ref.stderr * math.sqrt((n - 2) / (n - 3))
        assert fit["coef"][name] == pytest.approx(ref.slope, rel=1e-10)
        assert fit["se"][name] == pytest.approx(se, rel=1e-10)
        assert fit["ci"][name] == pytest.approx((ref.slope - q * se, ref.slope + q * se), rel=1e-10)
    one = least_squares({"x": D}, y)  # one regressor: the line of regression_interval
    line = regression_interval(D, y)
    assert (one["coef"]["x"], one["ci"]["x"], one["coef"]["intercept"]) == (
        line["slope"],
        line["slope_ci"],
        line["intercept"],
    )
    # proportional regressors or too few points: no fit, every number NaN
    for cols, ys in (({"a": D, "b": 2 * D}, y), ({"a": D[:3], "b": N[:3]}, y[:3])):
        bad = least_squares(cols, ys)
        assert all(math.isnan(v) for v in (*bad["coef"].values(), *bad["ci"]["a"], bad["r2"]))
    # centred: a line far from the origin is as well determined as one at it; a nearly constant regressor still
    # fits (no crash); a non-finite value gives no fit
    far = least_squares({"x": [1e8, 1e8 + 1, 1e8 + 2, 1e8 + 3]}, [1.0, 2.0, 3.5, 4.0])
    near = least_squares({"x": [0.0, 1.0, 2.0, 3.0]}, [1.0, 2.0, 3.5, 4.0])
    assert far["coef"]["x"] == pytest.approx(near["coef"]["x"], rel=1e-9)
    assert far["se"]["x"] == pytest.approx(near["se"]["x"], rel=1e-6)
    assert math.isfinite(least_squares({"x": [1.0, 1 + 1e-13, 1 + 2e-13]}, [1.0, 2.0, 3.5])["coef"]["x"])
    assert all(math.isnan(v) for v in least_squares({"x": [1.0, float("nan"), 3.0]}, [1.0, 2.0, 3.0])["coef"].values())
    with pytest.raises(ValueError, match="one y per point"):
        least_squares({"a": D[:5]}, y)
    with pytest.raises(ValueError, match="intercept"):
        least_squares({"intercept": D}, y)


def test_no_other_module_computes_a_t_quantile():
    """Seeds and regressions reach an interval through the shared module only: no other module of ``src`` calls
    ``t.ppf`` / ``t.interval`` / ``linregress`` or imports ``scipy.stats.t``."""
    pattern = re.compile(r"\bt\.ppf\(|\bt\.interval\(|\blinregress\(|from scipy\.stats import[^\n]*\bt\b")
    offenders = [
        f"{path.relative_to(SRC.parent)}:{i}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        if path != SHARED
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == [], "compute intervals with mamba_recall.runstore (mean_interval, regression_interval):\n" + (
        "\n".join(offenders)
    )
    assert pattern.search(SHARED.read_text())  # the check looks for what the shared module does use


def test_over_seeds_measures_each_seed_of_a_table_and_combines_them():
    import pandas as pd

    from mamba_recall.claims.core import over_seeds

    runs = pd.DataFrame({"seed": [2, 0, 1, 0, 1, 2], "accuracy": [0.9, 1.0, 0.98, 1.0, 0.98, 0.9]})
    seen = []

    def one(t):
        seen.append(sorted(set(t.seed)))
        return _m(acc=float(t.accuracy.mean()))

    m = over_seeds(runs, one, bounds={"acc": (0, 1)})
    assert seen == [[0], [1], [2]] and m.per_seed["acc"] == [1.0, 0.98, 0.9] and m.evidence.seeds == 3
    assert m.intervals["acc"] == (mean_interval([1.0, 0.98, 0.9])["ci_low"], 1.0)
    whole = over_seeds(runs.drop(columns="seed"), lambda t: _m(acc=float(t.accuracy.mean())))
    assert whole.intervals == {} and whole.per_seed["acc"] == [pytest.approx(0.96)]  # no seed column: one seed


# ------------------------------------------------------------------ every recorded interval within its quantity's range
def test_the_range_walk_names_an_interval_past_its_range_and_only_that():
    """``claims.core.audit_ranges`` (what ``check-outputs`` runs on the book's recorded verdicts after the book pass)
    names an accuracy's interval past 1 and a Chapter 4 ratio's below 0; a clipped one, a number without a declared
    range and a one-seed NaN interval it does not."""
    from dataclasses import replace

    from mamba_recall.claims.core import REGISTRY, not_run_verdict

    table1, fig6b = REGISTRY["000/Table1-rope"], REGISTRY["004/Fig6b"]
    bad = {
        table1.id: replace(
            not_run_verdict(table1),
            intervals={"min_accuracy": (-0.003, 1.128), "max_diff_to_mamba": (-0.15, 0.97)},
        ),
        fig6b.id: replace(not_run_verdict(fig6b), intervals={"early_kernel_ratio": (-0.099, 1.08)}),
    }
    found = core.audit_ranges(bad)
    assert len(found) == 2, found
    assert found[0].startswith("000/Table1-rope (01_gradient_dynamics/05_table1): min_accuracy [-0.003, 1.128]")
    assert "004/Fig6b" in found[1] and "early_kernel_ratio" in found[1]
    good = {
        table1.id: replace(bad[table1.id], intervals={"min_accuracy": (0.0, 1.0), "x": (-5.0, 5.0)}),
        fig6b.id: replace(bad[fig6b.id], intervals={"early_kernel_ratio": (float("nan"), float("nan"))}),
    }
    assert core.audit_ranges(good) == []
    for table in core.declared_ranges().values():  # every accuracy and fraction declared lies in [0, 1]
        assert table("min_accuracy") in (None, (0.0, 1.0)) and table("fraction_within") in (None, (0.0, 1.0))
