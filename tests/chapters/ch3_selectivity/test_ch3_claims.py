"""Chapter 3's claims (paper 003): the verdicts the review found wrong stay fixed.

Each test feeds a claim's measurement function the numbers that used to pass wrongly (or synthetic numbers on
either side of the rule) and checks the verdict, so a regression in the rule or the measurement fails here.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mamba_recall.claims import get, judge
from mamba_recall.results import Bundle

ROOT = Path(__file__).resolve().parents[3]


def verdict(claim_id, *args, **kwargs):
    c = get(claim_id)
    return judge(c, c.measure(*args, **kwargs))


def bundle(tables: dict, preset: str = "paper") -> Bundle:
    return Bundle("test", {"preset": preset}, {}, {"device": "cuda"}, "test", tables, None)


# ---------------------------------------------------------------- Theorem 3 rests on the key-code accuracies
def growth_frame(at_log: float, needed: dict, pk_max: int = 256) -> pd.DataFrame:
    rows = []
    for kappa, n in needed.items():
        rows.append(dict(kappa=kappa, pk=max(1, math.ceil(math.log2(kappa))), max=at_log, mean=at_log, at_log2=True))
        for pk in (4, 8, 16, 32, 64, 128, 256):
            acc = 1.0 if pk >= n else 0.9
            rows.append(dict(kappa=kappa, pk=pk, max=acc, mean=acc, at_log2=False))
            if acc == 1.0 or pk >= pk_max:
                break
    f = pd.DataFrame(rows)
    return f.assign(T=100, V=128, pv=32, draws=3, sequences=100)


STEP1 = {("thm3", k, 128): 1.0 for k in (4, 8, 16, 32)}
MQC = bundle(
    {"jl": pd.DataFrame([dict(variant="Thm 3, JL values (keys one-hot)", V=128, p=12, max=1.0, mean=1.0)])}, preset="ci"
)


def test_thm3_reads_the_key_codes():
    linear = {4: 8, 8: 32, 16: 64, 32: 128, 64: 256}  # N ∝ κ: the measured behaviour
    logarithmic = {4: 8, 8: 12, 16: 16, 32: 16, 64: 24}  # N ∝ log κ (hypothetical)
    assert verdict("003/Thm3", STEP1, MQC, growth_frame(0.4, linear)).status == "not reproduced"
    assert verdict("003/Thm3", STEP1, MQC, growth_frame(0.4, logarithmic)).status == "partially"
    assert verdict("003/Thm3", STEP1, MQC, growth_frame(1.0, linear)).status == "reproduced"
    # a failed one-hot step 1 cannot be partial, whatever the key codes do
    assert verdict("003/Thm3", {("thm3", 4, 128): 0.9}, MQC, growth_frame(0.4, logarithmic)).status == "not reproduced"


def test_remark3_compares_with_thm2_state():
    assert verdict("003/Remark3", growth_frame(0.4, {4: 8, 8: 32, 16: 64})).status == "not reproduced"
    assert verdict("003/Remark3", growth_frame(0.4, {4: 8, 8: 4, 16: 64})).status == "partially"
    assert verdict("003/Remark3", growth_frame(0.4, {8: 4, 16: 8, 32: 16})).status == "reproduced"


def test_thm3_growth_is_linear_on_the_construction():
    from mamba_recall.theory.mqar_constructions import state_needed, thm3_key_growth

    g = thm3_key_growth([4, 16], [4, 8, 16, 32, 64, 128], n=50, draws=2)
    need = state_needed(g)
    assert need[16] > 16  # more columns than Thm. 2's N = κ
    assert float(g[g.at_log2]["max"].max()) < 1.0


# ---------------------------------------------------------------- KEEP n-TH: S4D cannot use the PE
def test_s4d_pe_is_a_per_position_bias_only():
    from mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth import pe_logit_dependence

    spread = pe_logit_dependence(sequences=16, seeds=(0, 1))
    assert spread["s4d"] < 1e-10
    assert spread["s6"] > 1e-3


def keep_runs(seeds=(0,), **acc):
    """One row per model and seed; seed s adds 0.001·s to every accuracy (a narrow interval over seeds)."""
    rows = [dict(T=20, d=32, N=8, model=m, seed=s, accuracy=a + 0.001 * s) for s in seeds for m, a in acc.items()]
    return bundle({"rows": pd.DataFrame(rows)}, preset="ci")


def one_seed_inconclusive(v, means: str) -> bool:
    """Symmetric judging: one seed of a trained model decides neither way; the reason names the seeds and the
    status the means alone would give."""
    return v.status == "inconclusive" and "1 seed" in v.reason and f"'{means}'" in v.reason


def test_s4dpe_at_t20_is_judged_against_the_architecture():
    exact = {"s4d": 1e-15, "s6": 40.0}
    three = (0, 1, 2)
    # our numbers: S4D+PE at the paper's S4D (0.10), the PE a pure bias, Mamba+PE solving → the printed 0.72 is an
    # erratum (three seeds decide it); S4D without PE need not be in the bundle
    ours = {"s4d+pe": 0.113, "s6+pe": 0.9999}
    assert verdict("003/TabA1-S4D+PE", keep_runs(three, **ours), exact).status == "erratum confirmed"
    # a run that did reach the printed 0.72 reproduces it
    reached = {"s4d+pe": 0.72, "s6+pe": 0.9999}
    assert verdict("003/TabA1-S4D+PE", keep_runs(three, **reached), exact).status == "reproduced"
    # if the PE did reach the tokens, a low S4D+PE is simply not reproduced
    low, reaches = {"s4d+pe": 0.11, "s6+pe": 0.9999}, {"s4d": 0.5, "s6": 40.0}
    assert verdict("003/TabA1-S4D+PE", keep_runs(three, **low), reaches).status == "not reproduced"
    # a recipe that trains nothing (Mamba+PE failing too) cannot show that S4D+PE misses 0.72
    untrained = {"s4d+pe": 0.113, "s6+pe": 0.2}
    assert verdict("003/TabA1-S4D+PE", keep_runs(three, **untrained), exact).status == "not testable here"
    # one seed decides none of the three: inconclusive, the reason saying where the means point
    assert one_seed_inconclusive(verdict("003/TabA1-S4D+PE", keep_runs(**ours), exact), "erratum confirmed")
    assert one_seed_inconclusive(verdict("003/TabA1-S4D+PE", keep_runs(**reached), exact), "reproduced")
    assert one_seed_inconclusive(verdict("003/TabA1-S4D+PE", keep_runs(**low), reaches), "not reproduced")


def test_keep_t50_needs_the_paper_grid():
    from mamba_recall.claims import check

    v = check(
        "003/Tab1",
        evidence=keep_runs(**{"s6+pe": 1.0, "s6": 0.1, "s4d": 0.1, "s4d+pe": 0.1, "transformer": 1.0}),
        record=False,
    )
    assert v.status == "not run" and "paper" in v.reason


# ---------------------------------------------------------------- Fig. 1 against the untrained model
def test_fig1_untrained_model_does_not_pass():
    from mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth import untrained_decay_values
    from mamba_recall.tasks.keep_nth import keep_nth

    ck = {"V": 128, "d": 32, "N": 8, "T": 20, "nth": 5, "kind": "s6+pe", "seed": 0, "preset": "ci"}
    ids, _ = keep_nth(100, 20, 128, 5, seed=2)
    untrained = untrained_decay_values(ck, ids)
    # the untrained model already has most of its mass above 0.9 from n on (the old check passed it) ...
    assert np.mean(untrained[1] > 0.9) >= 0.7
    # ... but as "trained" model it must not pass Fig. 1 (no split created by training): three such seeds fail it,
    # one seed is inconclusive (symmetric judging), its means pointing to not reproduced
    assert verdict("003/Fig1-right", [(untrained, untrained)] * 3, ck, "test").status == "not reproduced"
    one = verdict("003/Fig1-right", [(untrained, untrained)], ck, "test")
    assert one.status != "reproduced" and one_seed_inconclusive(one, "not reproduced")


def test_fig1_split_reaches_reproduced_with_seeds():
    rng = np.random.default_rng(0)
    trained = (rng.uniform(0, 0.05, 1000), rng.uniform(0.95, 1, 1000))
    untrained = (rng.uniform(0.9, 1, 1000), rng.uniform(0.9, 1, 1000))
    ck = {"T": 50, "preset": "paper"}
    assert one_seed_inconclusive(verdict("003/Fig1-right", [(trained, untrained)], ck, "x"), "reproduced")  # one seed
    assert (
        verdict(
            "003/Fig1-right", [(trained, untrained)] * 2 + [((trained[0] + 0.01, trained[1]), untrained)], ck, "x"
        ).status
        == "reproduced"
    )


# ---------------------------------------------------------------- Thm. 4's printed readout: text = numbers
def test_overview_quotes_the_printed_readout_maximum():
    jl = pd.read_csv(ROOT / "results" / "ch3_mqar_constructions_ci.jl.csv")
    overview = (ROOT / "book" / "03_selectivity" / "overview.md").read_text()
    for variant, label in (
        ("Thm 4, readout as printed", "Thm. 4, the readout"),
        ("Thm 2, bias as printed", "Thm. 2, the output bias"),
    ):
        best = float(jl[jl.variant == variant]["max"].max())
        item = re.split(r"\n\d+\. ", overview[overview.index(label) :])[0]
        quoted = [float(x) for x in re.findall(r"at most (0\.\d+) accuracy", item)]
        assert quoted and abs(quoted[0] - best) <= 0.00005 + 1e-9, (variant, quoted, best)
    assert "≤ 10 %" not in overview


# ---------------------------------------------------------------- paper preset: every status reachable
def mqar_runs(with_other_mixers: bool, seeds=(0, 1, 2)):
    rows = []
    for s in seeds:
        for N, acc in ((2, 0.9), (8, 1.0)):
            rows.append(dict(kappa=4, V=128, T=100, d=64, N=N, mixer="s6", seed=s, accuracy=acc))
        if with_other_mixers:
            for N, acc in ((4, 0.5), (16, 1.0)):
                rows.append(dict(kappa=4, V=128, T=100, d=64, N=N, mixer="mamba2", seed=s, accuracy=acc))
            for N in (2, 4, 8):
                rows.append(dict(kappa=4, V=128, T=100, d=64, N=N, mixer="s4d", seed=s, accuracy=0.99))
    return bundle({"rows": pd.DataFrame(rows)})


def test_figa3_is_not_reproduced_from_the_mamba_n_check_alone():
    # the Mamba N check alone leaves the Mamba-2 and S4D parts unmeasured (NaN): undecided, so inconclusive
    alone = verdict("003/FigA3", mqar_runs(False))
    assert (
        alone.status == "inconclusive"
        and "undecided in the measurement itself" in alone.reason
        and "'partially'" in alone.reason
    ), alone
    assert verdict("003/FigA3", mqar_runs(True)).status == "reproduced"
    # the Mamba part holding while S4D's range over N fails is partial
    runs = mqar_runs(True).tables["rows"]
    runs.loc[(runs.mixer == "s4d") & (runs.N == 2), "accuracy"] = 0.5
    assert verdict("003/FigA3", bundle({"rows": runs})).status == "partially"
    ci = mqar_runs(False, seeds=(0,))
    assert one_seed_inconclusive(verdict("003/FigA3", ci), "partially")


def test_figa3_needs_a_solved_control():
    runs = mqar_runs(False, seeds=(0,)).tables["rows"]
    runs.loc[runs.N == 8, "accuracy"] = 0.9875  # the committed ci numbers: control not exact
    assert verdict("003/FigA3", bundle({"rows": runs}, "ci")).status == "not testable here"


def ih_runs(ds, dT_acc, seeds=(0, 1, 2), V=5):
    rows = []
    for s in seeds:
        for d in ds:
            for mixer in ("s6", "s6_dT"):
                acc = dT_acc(d) if mixer == "s6_dT" else min(dT_acc(d), 0.9)
                rows.append(dict(V=V, T=100, d=d, N=4 * V, mixer=mixer, seed=s, accuracy=acc))
    return bundle({"rows": pd.DataFrame(rows)})


def test_fig3_reads_paired_per_cell_gaps():
    """Fig. 3's ordering is read per (|V|, d) cell on the mixers' difference paired per seed, never as a minimum
    over noisy cells: a cell whose paired interval straddles −0.02 leaves the ordering undecided."""
    rows = []
    diffs = {4: [-0.057, -0.010, -0.017, 0.024, -0.099], 10: [0.13, 0.15, 0.12, 0.19, 0.07], 20: [0.01] * 5}
    for d, ds in diffs.items():
        for s, g in enumerate(ds):
            base = 0.6 if d == 4 else 0.9 if d == 10 else 0.989
            dt = 1.0 if d == 20 else base + g
            rows += [
                dict(V=5, T=100, d=d, N=20, mixer="s6", seed=s, accuracy=dt - g),
                dict(V=5, T=100, d=d, N=20, mixer="s6_dT", seed=s, accuracy=dt),
            ]
    m = get("003/Fig3").measure(bundle({"rows": pd.DataFrame(rows)}))
    lo, hi = m.intervals["gap_cells_equal_or_better"]
    assert (lo, hi) == pytest.approx((2 / 3, 1.0))
    assert judge(get("003/Fig3"), m).status == "inconclusive"


def test_fig3_can_be_reproduced_in_the_paper_preset():
    grid = (4, 8, 16, 32)
    assert verdict("003/Fig3", ih_runs(grid, lambda d: 1.0 if d >= 10 else 0.5)).status == "reproduced"
    # solved below the bound: the threshold part fails
    assert verdict("003/Fig3", ih_runs(grid, lambda d: 1.0)).status == "partially"
    # the ci smoke test (one d, one seed) decides nothing: inconclusive; its means point to 'not reproduced', since
    # the partial level needs Mamba-Δ⊤ to learn the task (reach 0.99 somewhere) and 0.98 does not
    assert one_seed_inconclusive(verdict("003/Fig3", ih_runs((16,), lambda d: 0.98, seeds=(0,))), "not reproduced")


# ---------------------------------------------------------------- new measurements: Eq. 45, Remarks 1 and 7
def test_attention_sensitivity_matches_autograd():
    import torch

    from mamba_recall.theory.haar import attention_sensitivity

    T, d, j = 30, 4, 1
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, d))
    WQ, WK, WV = (rng.standard_normal((d, d)) * 0.5 / math.sqrt(d) for _ in range(3))
    X = torch.tensor(x, requires_grad=True)
    q, k, v = X @ torch.tensor(WQ).T, X @ torch.tensor(WK).T, X @ torch.tensor(WV).T
    closed = attention_sensitivity(T, d, j, seed=0)
    for t in (2, 11, 30):
        y = torch.softmax(k[:t] @ q[t - 1], 0) @ v[:t]
        jac = torch.stack([torch.autograd.grad(y[i], X, retain_graph=True)[0][j - 1] for i in range(d)])
        assert abs(float(jac.norm()) - closed[t - j - 1]) < 1e-12


def test_eq45_rule_separates_algebraic_from_exponential_decay():
    t = np.arange(2, 2001)
    assert verdict("003/Eq45", 1.0 / t).status == "reproduced"
    assert verdict("003/Eq45", np.exp(-0.01 * t)).status == "not reproduced"


def test_remark1_haar_on_the_mamba2_scan():
    from mamba_recall.theory.haar import haar_projection, haar_s6, haar_ssd_output

    x = np.random.default_rng(1).standard_normal((4, 32))
    err = max(
        float(np.abs(haar_ssd_output(haar_s6(j, k, 32, "euler"), x) - haar_projection(x, j, k)).max())
        for j in range(3)
        for k in range(2**j)
    )
    assert verdict("003/Remark1", err, 7).status == "reproduced"
    assert verdict("003/Remark1", 1e-3, 7).status == "not reproduced"


def test_remark7_rule_reads_the_construction_it_names():
    """Remark 7 is judged on Thm. 3's N = log κ construction (JL key codes): random values answered at
    p_k = ⌈log₂κ⌉, the adversarial input worse there, recovering as p_k grows. The worst case on equal-overlap
    codes (N = κ) is shown beside it and does not decide it (open review, 2026-12-04)."""

    def jl(random, adversarial):
        return pd.DataFrame(
            dict(kappa=16, pk=[4, 8, 16], random=random, adversarial=adversarial, draws=3, sequences=100)
        )

    def worst(adv_below=1.0, adv_above=0.0, rand=1.0):
        return pd.DataFrame(
            dict(
                kappa=16,
                eps=[0.5 / 15, 2.0 / 15],
                eps_kappa=[0.5, 2.0],
                random=rand,
                adversarial=[adv_below, adv_above],
                sequences=100,
            )
        )

    assert verdict("003/Remark7", jl(1.0, [0.5, 0.9, 1.0]), worst()).status == "reproduced"
    # the committed JL numbers: random values not answered at p_k = 4, the adversarial input no harder
    ours = jl([0.39, 0.77, 0.93], [0.60, 0.85, 0.95])
    assert verdict("003/Remark7", ours, worst()).status == "not reproduced"
    # the worst case holding on equal-overlap codes does not carry the remark
    assert verdict("003/Remark7", ours, worst(1.0, 0.0)).status == "not reproduced"
    assert verdict("003/Remark7", jl(1.0, [1.0, 1.0, 1.0]), worst()).status == "not reproduced"  # no failure shown
    assert get("003/Remark7").cause == get("003/Thm3").cause == get("003/Remark3").cause


def test_lemma2_fails_for_a_later_input_and_the_corrected_bound_holds():
    from mamba_recall.chapters.ch3_selectivity.claims.sensitivity import lemma2_second_input

    r = lemma2_second_input(1.5736, 2000)
    assert r["sens"] < 0.01 * r["printed"] and r["sens"] >= r["corrected"]
    # the notebook's j = 1 numbers (bound held 66.8×) with the j = 2 case computed inside: an erratum
    v = verdict("003/Lemma2", 136.0, 2.04, 4.2, 0.0, 2000)
    assert v.status == "erratum confirmed" and get("003/Lemma2").cause


def test_remark7_worst_case_codes_have_the_declared_overlap():
    from mamba_recall.theory.mqar_constructions import equal_overlap_codes

    K = equal_overlap_codes(8, 0.2)
    G = K.T @ K
    assert np.allclose(np.diag(G), 1) and np.allclose(G[~np.eye(8, dtype=bool)], 0.2)
    with pytest.raises(ValueError, match="eps must lie"):
        equal_overlap_codes(8, -0.5)


# ---------------------------------------------------------------- trained claims: a t-interval over per-seed statistics
def _t_interval(xs, clip=(0.0, 1.0)):
    """The 95 % Student-t interval of the mean of ``xs`` (computed here with scipy, independently of the library),
    clipped to ``clip``: the range of an accuracy or a fraction, which the chapter declares for the numbers its
    trained claims combine (``ch3.RANGES``)."""
    from scipy import stats

    xs = np.asarray(xs, dtype=float)
    half = stats.t.ppf(0.975, len(xs) - 1) * xs.std(ddof=1) / math.sqrt(len(xs))
    return max(xs.mean() - half, clip[0]), min(xs.mean() + half, clip[1])


def test_seed_interval_is_a_student_t_interval_of_the_per_seed_statistic_the_rule_judges():
    """Fig. 3 reads each seed's own statistic (the paper's values are the best of 5 seeds; a best-of-k value has no
    interval over seeds), combined over seeds by core.across_seeds: the mean with its 95 % Student-t interval. The
    interval must be keyed by the metric the rule reads and be the t-interval of that metric's per-seed values (clipped
    to the metric's range [0, 1], ch3.RANGES), so a lucky seed in five cannot carry the verdict: the typical seed's
    value decides."""
    from pytest import approx

    from mamba_recall.chapters.ch3_selectivity import claims as ch3

    rows = []
    for s in range(5):
        for d in (4, 8, 16, 32):
            dt = 1.0 if (d >= 10 and s == 0) else 0.5  # only seed 0 solves the task
            rows += [
                dict(V=5, T=100, d=d, N=20, mixer="s6_dT", seed=s, accuracy=dt),
                dict(V=5, T=100, d=d, N=20, mixer="s6", seed=s, accuracy=0.5),
            ]
    fig3 = get("003/Fig3")
    m = fig3.measure(bundle({"rows": pd.DataFrame(rows)}))
    assert (
        set(m.intervals)
        == fig3.rule.metrics()
        == {
            "gap_cells_equal_or_better",
            "fraction_V_threshold_as_bound",
            "dT_best_accuracy",
        }
    )
    # d = 4, 8: every paired difference is 0 (decided); d = 16, 32: seed 0 alone gains 0.5 (undecided, not refuted)
    assert m.intervals["gap_cells_equal_or_better"] == (0.5, 1.0)
    assert m.per_seed["dT_best_accuracy"] == [1.0, 0.5, 0.5, 0.5, 0.5]  # seed 0's best is not the value judged
    assert m.per_seed["fraction_V_threshold_as_bound"] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert set(m.per_seed) <= set(ch3.RANGES)  # every number this claim combines is a fraction or an accuracy
    assert m.intervals["fraction_V_threshold_as_bound"][0] == 0.0  # the unclipped t-interval starts at -0.355
    for k, xs in m.per_seed.items():
        assert m.values[k] == approx(np.mean(xs)), k
        assert m.intervals[k] == approx(_t_interval(xs)), k
    assert m.evidence.seeds == 5
    # the one lucky seed does not carry it: the intervals lie below 0.99 and 1.0, so the rule decides 'not reproduced'
    assert judge(fig3, m).status == "not reproduced"

    # the mean-over-seeds tables (the paper's own statistic there) take the same path
    keep = pd.DataFrame(
        [
            dict(T=T, d=32, N=8, model=mdl, seed=s, accuracy=acc)
            for s, acc in ((0, 1.0), (1, 1.0), (2, 0.97))
            for T in (10, 20, 30, 40, 50)
            for mdl in ("s6+pe", "transformer")
        ]
    )
    tab = get("003/TabA1-A2")
    km = tab.measure(bundle({"rows": keep}))
    assert tab.rule.metrics() == {"min_accuracy", "T_coverage", "N_coverage_mamba_pe"}
    assert set(km.intervals) == {"min_accuracy"}  # the grid shares are the grid's, not estimated over seeds
    assert km.per_seed["min_accuracy"] == approx([1.0, 1.0, 0.97])
    assert km.values["min_accuracy"] == approx(0.99)
    assert km.values["N_coverage_mamba_pe"] == approx(1 / 3)  # N = 8 only: partial at best
    lo2, hi2 = km.intervals["min_accuracy"]
    assert (lo2, hi2) == approx(_t_interval([1.0, 1.0, 0.97]))
    assert (lo2, hi2) == approx((0.947, 1.0), abs=5e-4)  # unclipped: (0.947, 1.033), past an accuracy's range
    # the t-interval straddles 0.99 (the interval is not cut to a best or a worst seed): undecided
    assert judge(tab, km).status == "inconclusive" and "straddles" in judge(tab, km).reason

    # two seeds carry a t-interval too; the three-seed requirement is core's, so the trained claim stays inconclusive
    m2 = fig3.measure(ih_runs((16,), lambda d: 1.0, seeds=(0, 1)))
    assert m2.evidence.seeds == 2 and m2.intervals["dT_best_accuracy"] == approx((1.0, 1.0))
    v2 = judge(fig3, m2)
    assert v2.status == "inconclusive" and "2 seeds" in v2.reason, v2


def test_fig1_evidence_does_not_guess_the_device():
    """The checkpoint sidecar records no device: a paper-preset checkpoint is labelled 'not recorded' (it used to be
    labelled cuda by assumption), a ci one cpu, and a recorded device is used as is."""
    rng = np.random.default_rng(0)
    pair = (
        (rng.uniform(0, 0.05, 100), rng.uniform(0.95, 1, 100)),
        (rng.uniform(0.9, 1, 100), rng.uniform(0.9, 1, 100)),
    )
    dev = lambda ck: get("003/Fig1-right").measure([pair], ck, "x").evidence.device  # noqa: E731
    assert dev({"T": 50, "preset": "paper"}) == "not recorded"
    assert dev({"T": 20, "preset": "ci"}) == "cpu"
    assert dev({"T": 50, "preset": "paper", "device": "cuda"}) == "cuda"
