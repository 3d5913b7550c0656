"""Chapter 5's hypotheses on synthetic searches: each rule reads the number it declares, flips with it, and no null
control reaches the claim's verdict (H1-H6, mamba_recall.chapters.ch5_synthesis.claims)."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mamba_recall.chapters.ch5_synthesis.pipelines import synthesis as syn
from mamba_recall.chapters.ch5_synthesis.claims.synthesis import check_synthesis, untrained_searches
from mamba_recall.theory.capacity import kappa_at
from mamba_recall.theory.mqar_constructions import construction_kappa
from mamba_recall.chapters.ch5_synthesis import views as views

LADDER = [2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64]
CELLS = [(1, d, n) for d in (16, 32, 64) for n in (2, 4, 8)] + [(2, 16, 4), (2, 32, 4), (2, 32, 8)]


TASK = "mqar (zoology, mamba_recall.tasks.mqar variant 'standard', power_a 1, pad 'full')"


def fake_bundle(
    kappa_of,
    *,
    profile=None,
    key_ratio=1.3,
    seeds=(0, 1, 2),
    at_cap=lambda i: False,
    key_set=None,
    plateau=None,
    cells=CELLS,
):
    """Searches with κ*₅₀ = kappa_of(layers, D, N, seed) and κ*₉₀ = κ*₅₀/2; each search has an edge probe (κ = 8,
    recall 0.5, profile ``profile(κ)``), a probe at 95 % (κ = 4) and one at 10 % (κ = 16); untrained twins at chance
    with Δ ratio 1. Every probe converged (stopped at step 500 of 1500) except search ``i``'s where ``at_cap(i)``,
    and where ``plateau(i)`` its κ = 16 probe stopped early on the ≈ 1/κ plateau (recall 0.05 ≤ 1.5/16).
    ``key_set="kappa"``: the data's keys drawn from a key set of size κ (paper 003's MQAR), else zoology's.
    ``cells``: the grid's (layers, D, N), default :data:`CELLS` (the cpu-hours grid)."""
    profile = profile or (lambda k: [0.5] * k)
    searches, probes = [], []
    for i, (layers, D, N) in enumerate(cells):
        for s in seeds:
            k50 = kappa_of(layers, D, N, s)
            searches.append(dict(layers=layers, D=D, N=N, seed=s, kappa50=k50, kappa90=k50 / 2, censored50=None))
            for kappa, acc in ((4, 0.95), (8, 0.5), (16, 0.1)):
                prof = profile(kappa) if kappa == 8 else [acc] * kappa
                probes.append(
                    dict(
                        layers=layers,
                        D=D,
                        N=N,
                        seed=s,
                        kappa=kappa,
                        accuracy=0.05 if plateau is not None and plateau(i) and kappa == 16 else float(np.mean(prof)),
                        untrained_accuracy=0.002,
                        by_pair=" ".join(f"{a:.4f}" for a in prof),
                        delta0_key_ratio=key_ratio,
                        untrained_delta0_key_ratio=1.0 + 0.001 * (s - 1),
                        steps_run=1500 if at_cap(i) else 500,
                    )
                )
    config = {
        "preset": "cpu-hours",
        "job_config": {
            "V": 512,
            "L_per_kappa": 4,
            "ladder": LADDER,
            "steps": 1500,
            "eval": {"target_accuracy": 0.99},
            "data": {"task": TASK, **({"key_set": key_set} if key_set else {})},
        },
    }
    return SimpleNamespace(
        tables={"searches": pd.DataFrame(searches), "probes": pd.DataFrame(probes)},
        config=config,
        provenance={"device": "cpu"},
        path=None,
        data={"complete": True},
    )


def noisy(f):
    return lambda layers, D, N, s: f(layers, D, N) * math.exp(0.02 * (s - 1))


def status(cid, bundle):
    return check_synthesis(cid, bundle, record=False)


#: the grid with N = 16 at D = 32 and 64: two distinct N inside paper 002's regime (D, N ≥ ln 512)
WITH_N16 = CELLS + [(1, 32, 16), (1, 64, 16)]


def test_h1_reads_the_exponent_of_D_times_N():
    linear = fake_bundle(noisy(lambda l, D, N: D * N * l / 16), cells=WITH_N16)
    assert status("book/H1-DN", linear).status == "reproduced"
    sqrt = fake_bundle(noisy(lambda l, D, N: math.sqrt(D * N * l)), cells=WITH_N16)
    assert status("book/H1-DN", sqrt).status == "not reproduced"
    # a capacity that ignores N: linear in D, so the one-N fit of the cpu-hours grid would pass it
    d_alone = lambda l, D, N: D / 2  # noqa: E731
    assert status("book/H1-DN", fake_bundle(noisy(d_alone), cells=WITH_N16)).status == "not reproduced"


def test_h1_is_not_testable_where_the_regime_holds_a_single_N():
    """Inside D, N ≥ ln V the cpu-hours grid has N = 8 alone: α is then the exponent in D, so H1 reads not testable
    here, even on a capacity linear in D·N (referee-H's objection, revised 2026-12-06)."""
    v = status("book/H1-DN", fake_bundle(noisy(lambda l, D, N: D * N * l / 16)))
    assert v.status == "not testable here"
    assert dict((c, x) for c, x, _ in v.checks)["n_values ≥ 2"] == "1"


def test_h2_is_not_testable_on_zoologys_mqar_whose_keys_do_not_fit_one_column_each():
    """Thm 2's construction gives each key of a key set of size κ its own column; zoology's MQAR draws keys from
    V/2 − 1 = 255 tokens, so H2 reads not testable here whatever the capacities."""
    v = status("book/H2-N-alone", fake_bundle(noisy(lambda l, D, N: 3 * N)))
    assert v.status == "not testable here" and "255 tokens" in v.reason
    assert dict((c, x) for c, x, _ in v.checks)["key_set_over_N ≤ 1"] == "127.5"


def test_h2_judges_each_wide_cell_on_its_own_interval_where_the_keys_fit():
    """Where the keys come from a key set of size κ: κ*₉₀ ≥ N in every cell wide enough (D ≥ 2(N + log₂ V)), each
    cell judged on its own interval (a failing cell is not hidden by a mean); the narrow cells are not read; a
    censored κ*₉₀ is never replaced by a number (its cell stays undecided); the untrained twins never pass."""
    above = fake_bundle(noisy(lambda l, D, N: 3 * N), key_set="kappa")  # κ*₉₀ = 1.5 N
    v = status("book/H2-N-alone", above)
    assert v.status == "reproduced" and v.control_status not in ("reproduced", "")
    assert "D16" not in v.ours and "D32N8" not in v.ours and "D64N8" in v.ours
    assert status("book/H2-N-alone", fake_bundle(noisy(lambda l, D, N: N), key_set="kappa")).status == "not reproduced"
    narrow_only = fake_bundle(noisy(lambda l, D, N: 3 * N if D == 16 else N), key_set="kappa")
    assert status("book/H2-N-alone", narrow_only).status == "not reproduced"
    # one wide cell below N on every seed, the others well above: the mean would pass, the cell fails
    one_fails = fake_bundle(noisy(lambda l, D, N: N if (D, N) == (32, 4) else 8 * N), key_set="kappa")
    v = status("book/H2-N-alone", one_fails)
    assert v.status == "not reproduced" and v.intervals["log2_kappa90_over_N_D32N4"][1] < 0
    censored = fake_bundle(
        lambda l, D, N, s: float("nan") if (D, N, s) == (64, 2, 0) else 3 * N * math.exp(0.02 * (s - 1)),
        key_set="kappa",
    )
    v = status("book/H2-N-alone", censored)
    assert v.status == "inconclusive" and ("D64N2 censored" in v.ours or "D64N2 left out" in v.ours)


def test_the_hypotheses_carry_their_rule_history():
    from mamba_recall.chapters.ch5_synthesis.claims import ORDER
    from mamba_recall.claims.core import get

    for cid in ORDER:
        revs = get(cid).revisions
        assert [r.commit for r in revs][:1] == ["2aeecea"] and len(revs) == (3 if cid == "book/H1-DN" else 2)
        assert revs[1].reason.startswith("Open review (referee-F)") and revs[1].status_before == "inconclusive"
    assert get("book/H2-N-alone").revisions[0].status_before == "not reproduced"
    # H1's third: referee-H's objection (one N in the regime), its rule before being the reviewed rule as recorded
    third = get("book/H1-DN").revisions[2]
    assert third.reason.startswith("Open review (referee-H)") and third.status_before == "inconclusive"
    v = status("book/H1-DN", fake_bundle(noisy(lambda l, D, N: D * N * l / 16), cells=WITH_N16))
    assert third.rule_before == v.rule.replace(" and n_values ≥ 2", "")
    assert len(v.revisions) == 3 and "rule revised after the data" not in v.note


def test_the_budget_rule_reads_inconclusive_where_more_than_a_tenth_of_the_probes_are_at_the_cap():
    """The convergence rule (revised after the data, so each record says so with the earlier verdict): a hypothesis
    with more than 10 % of its probes at the step cap reads inconclusive, budget-bound, whatever its rule says; at
    10 % or less it is judged on its converged probes only."""
    from mamba_recall.chapters.ch5_synthesis.claims.synthesis import budget_reading

    linear = noisy(lambda l, D, N: D * N * l / 16)
    bound = fake_bundle(linear, at_cap=lambda i: True, cells=WITH_N16)
    v = status("book/H1-DN", bound)
    assert v.status == "inconclusive"
    assert v.reason.startswith("budget-bound (45 of 45 probes not converged: 45 at the step cap, 0 stopped on")
    assert "at most 10 % of its probes did not converge" in v.rule
    one = fake_bundle(linear, at_cap=lambda i: i == 8, cells=WITH_N16)  # (1, 64, 8)'s 3 searches: 9 of 45 probes
    r = budget_reading("book/H1-DN", one)
    assert (r["at_cap"], r["probes"], r["bound"]) == (9, 45, True)
    assert budget_reading("book/H3-law-magnitude", one)["probes"] == 99  # H3 reads every 1-layer cell
    h6 = budget_reading("book/H6-layers-as-N", one)
    assert h6["at_cap"] == 0 and not h6["bound"]  # its probes: the 2-layer cells and their 1-layer matches
    few = fake_bundle(linear, at_cap=lambda i: i == 9, cells=WITH_N16)  # a 2-layer cell: none of H1's probes
    assert status("book/H1-DN", few).status == "reproduced"
    assert "Convergence: 0 of 45 probes not converged" in status("book/H1-DN", few).note
    # a probe stopped on the ≈ 1/κ plateau before the cap did not converge (open review, on H6)
    # (1, 64, 8) and (1, 64, 16): their 6 κ = 16 probes stop at recall 0.05
    flat = fake_bundle(linear, plateau=lambda i: i in (8, 13), cells=WITH_N16)
    r = budget_reading("book/H1-DN", flat)
    assert (r["at_cap"], r["plateau"], r["unconverged"], r["bound"]) == (0, 6, 6, True)
    assert status("book/H1-DN", flat).status == "inconclusive"
    h4 = fake_bundle(noisy(lambda l, D, N: 8.0), profile=u, at_cap=lambda i: i < 1)
    assert budget_reading("book/H4-U-at-capacity", h4)["share"] == pytest.approx(3 / 36)
    assert status("book/H4-U-at-capacity", h4).status == "reproduced"  # 8 % at the cap: judged, on the others


def test_a_search_with_a_probe_at_the_cap_leaves_the_kappa_fits_and_a_probe_at_it_leaves_the_profiles():
    from mamba_recall.chapters.ch5_synthesis.claims.synthesis import converged_only

    b = fake_bundle(noisy(lambda l, D, N: 8.0), at_cap=lambda i: i == 0)
    s, p = b.tables["searches"], b.tables["probes"]
    ks, kp = converged_only("book/H1-DN", s, p, b)
    assert len(ks) == len(s) - 3 and not ((ks.D == 16) & (ks.N == 2) & (ks.layers == 1)).any()
    assert len(kp) == len(p) - 9
    ps, pp = converged_only("book/H4-U-at-capacity", s, p, b)
    assert len(ps) == len(s) and len(pp) == len(p) - 9


def test_h1_null_control_never_passes_and_censored_grids_are_not_testable():
    v = status("book/H1-DN", fake_bundle(noisy(lambda l, D, N: D * N * l / 16), cells=WITH_N16))
    assert v.control_kind == "null" and v.control_status not in ("reproduced", "")
    censored = fake_bundle(lambda l, D, N, s: float("nan"), cells=WITH_N16)
    assert status("book/H1-DN", censored).status == "not testable here"


def test_h3_within_a_factor_two_of_the_revised_law():
    law = lambda l, D, N: kappa_at(512, D, N, 0.5, "rev_mV", 5 / 8)  # noqa: E731
    assert status("book/H3-law-magnitude", fake_bundle(noisy(law))).status == "reproduced"
    assert (
        status("book/H3-law-magnitude", fake_bundle(noisy(lambda l, D, N: 8 * law(l, D, N)))).status == "not reproduced"
    )


def u(k):
    return [0.8 if i < k // 4 or i >= k - k // 4 else 0.35 for i in range(k)]


def inverted(k):
    return [0.2 if i < k // 4 or i >= k - k // 4 else 0.65 for i in range(k)]


def test_h4_sees_a_u_and_its_shuffled_null_does_not():
    v = status("book/H4-U-at-capacity", fake_bundle(noisy(lambda l, D, N: 8.0), profile=u))
    assert v.status == "reproduced"
    assert v.control_status not in ("reproduced", "")
    assert status("book/H4-U-at-capacity", fake_bundle(noisy(lambda l, D, N: 8.0), profile=inverted)).status == (
        "not reproduced"
    )


def test_the_band_table_puts_each_probe_where_its_recall_is_and_finds_the_u_only_there():
    """The edge probes (recall 0.5, κ = 8 = κ*₅₀) carry a U; the probes at 95 % and 10 % are flat: only the 30–70 %
    band shows primacy and recency > 0, at κ/κ*₅₀ = 1; each search counts once per band."""
    b = fake_bundle(noisy(lambda l, D, N: 8.0), profile=u)
    t = syn.u_by_recall(b.tables["probes"], b.tables["searches"]).set_index("recall")
    assert list(t.index) == ["10%–30%", "30%–70%", "90%–99%"]
    assert (t.searches == len(CELLS) * 3).all() and (t.probes == t.searches).all()
    edge = t.loc["30%–70%"]
    assert edge.primacy > 0.4 and edge.recency > 0.4 and edge["primacy 95 % CI"][0] > 0
    assert abs(edge["κ / κ*₅₀ (median)"] - 1.0) < 0.05 and t.loc["10%–30%", "κ / κ*₅₀ (median)"] > 1.9
    assert abs(t.loc["90%–99%", "primacy"]) < 1e-9 and abs(t.loc["10%–30%", "recency"]) < 1e-9
    shown = views.u_band_table(b.tables["probes"], b.tables["searches"])
    assert shown["primacy"].str.match(r"[+-]\d\.\d{3} \[").all()


def test_profile_bins_fill_every_bin_whatever_kappa():
    """Pooling profiles of different κ: every bin of every profile is filled (overlap-weighted), so a bin does not
    hold only the larger κ's (the 0.42 / 0.53 zigzag of plain bins of i/κ at the edge)."""
    assert syn.profile_bins([1, 0, 0, 1], 8).tolist() == [1, 1, 0, 0, 0, 0, 1, 1]
    assert np.allclose(syn.profile_bins(np.arange(16.0), 8), np.arange(8) * 2 + 0.5)
    three = syn.profile_bins([1.0, 2.0, 3.0], 8)
    assert np.isfinite(three).all() and three[0] == 1 and three[-1] == 3 and np.isclose(three.mean(), 2.0)


def test_budget_bound_counts_the_probes_still_learning_at_the_cap():
    probes = pd.DataFrame(
        dict(
            layers=[1, 1, 1, 2, 2],
            kappa=[4, 4, 8, 4, 8],
            accuracy=[0.9, 0.5, 0.3, 0.2, 0.1],
            steps_run=[500, 1500, 1500, 1500, 1000],
        )
    )
    t = syn.budget_bound(probes, 1500).set_index("layers")
    assert t.loc[1, "at_cap"] == 2 and t.loc[1, "share"] == pytest.approx(2 / 3) and t.loc[1, "recall_k4"] == 0.7
    assert t.loc[2, "at_cap"] == 1 and t.loc[2, "probes"] == 2 and t.loc[2, "recall_k4"] == 0.2


def test_the_query_order_is_measured_on_the_generator_the_runs_config_names():
    """The page's statement about a run's data comes from that run's config, not from a default: the runs' generator
    (variant 'standard', power_a 1) queries the pairs in an order independent of theirs; zoology's own (power_a 0.01)
    queries later pairs later. The same function, two configs, two statements."""
    runs = {"V": 512, "L_per_kappa": 4, "data": {"task": TASK}}
    r = syn.query_slot_by_pair(runs, 16, n=1000)
    assert (r["variant"], r["power_a"], r["L"]) == ("standard", 1.0, 64)
    assert np.ptp(r["mean_slot"]) < 1.0 and -0.05 < r["rho_ci"][0] < r["rho_ci"][1] < 0.05
    said = syn.query_order_statement(runs, 16, n=1000)
    assert "variant 'standard', power_a 1" in said and "does not depend on the pairs' order" in said
    zoo = {**runs, "data": {"task": TASK.replace("'standard', power_a 1", "'zoology', power_a 0.01")}}
    z = syn.query_slot_by_pair(zoo, 16, n=1000)
    assert z["mean_slot"][-1] - z["mean_slot"][0] > 4 and z["rho_ci"][0] > 0.3
    assert "confounded" in syn.query_order_statement(zoo, 16, n=1000)
    with pytest.raises(ValueError, match="does not name the generator"):
        syn.query_slot_by_pair({**runs, "data": {"task": "mqar"}}, 16)


def test_the_committed_bundle_names_the_generator_its_probes_use():
    """The runner passes the generator its config names to mqar and batch_fn (the data are the config's, bit for
    bit the defaults' where the config names them), and the committed bundle's config names variant 'standard',
    power_a 1."""
    import torch

    from mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search import data_options
    from mamba_recall.results import load_bundle
    from mamba_recall.tasks.mqar import mqar

    opts = data_options(load_bundle("ch5_capacity_cpu-hours").config["job_config"]["data"]["task"])
    assert opts == {"variant": "standard", "power_a": 1.0, "pad": "full"}
    assert all(torch.equal(a, b) for a, b in zip(mqar(512, 16, 64, 8, 3), mqar(512, 16, 64, 8, 3, **opts)))


def test_the_long_budget_stretches_the_schedule_with_the_steps():
    from mamba_recall.chapters.ch5_synthesis.runners.capacity import jobs_for, long_command
    from mamba_recall.presets import experiment

    short, long = experiment("ch5_capacity", "cpu-hours"), experiment("ch5_capacity_long", "cpu-hours")
    assert long["steps"] == 4 * short["steps"] == 6000 and long["cells"] == short["cells"]
    assert (long["recipe"]["warmup"], long["recipe"]["hold"]) == (400, 1600) and long["eval_every"] == 500
    jobs = jobs_for("cpu-hours", budget="long")
    assert len(jobs) == 36 and {j["experiment"] for j in jobs} == {"ch5_capacity_long"}
    assert not {j["key"] for j in jobs} & {j["key"] for j in jobs_for("cpu-hours")}
    assert long_command() == "python -m mamba_recall grid ch5_capacity_long --preset cpu-hours --allow-long --jobs 2"


def test_h5_reads_delta_at_keys_against_the_untrained_twins():
    v = status("book/H5-delta-keys", fake_bundle(noisy(lambda l, D, N: 8.0), key_ratio=1.5))
    assert v.status == "reproduced" and v.control_status not in ("reproduced", "")
    assert status("book/H5-delta-keys", fake_bundle(noisy(lambda l, D, N: 8.0), key_ratio=0.7)).status == (
        "not reproduced"
    )


def test_h6_two_layers_against_one_layer_at_twice_N():
    as_2n = fake_bundle(noisy(lambda l, D, N: D * N * l / 16))
    assert status("book/H6-layers-as-N", as_2n).status == "reproduced"
    no_gain = fake_bundle(noisy(lambda l, D, N: D * N / 16))  # the second layer adds nothing: ratio 1/2
    assert status("book/H6-layers-as-N", no_gain).status == "not reproduced"


def test_one_seed_is_never_a_verdict():
    b = fake_bundle(noisy(lambda l, D, N: D * N / 16), seeds=(0,), cells=WITH_N16)
    assert status("book/H1-DN", b).status == "inconclusive"


def test_untrained_twins_are_censored_below():
    b = fake_bundle(noisy(lambda l, D, N: D * N / 16))
    twins = untrained_searches(b.tables["searches"], b.tables["probes"], LADDER)
    assert twins.kappa50.isna().all() and twins.kappa90.isna().all()


def test_fits_recover_known_exponents():
    rows = [dict(layers=1, D=D, N=N, seed=0, kappa50=3.0 * D**0.5 * N**1.0) for D in (16, 32, 64) for N in (2, 4, 8)]
    s = pd.DataFrame(rows)
    assert syn.two_factor_fit(s)["a"] == pytest.approx(0.5) and syn.two_factor_fit(s)["b"] == pytest.approx(1.0)
    assert syn.power_fit(s)["alpha"] == pytest.approx(0.75, abs=0.01)


def test_u_shape_and_kappa_at():
    assert syn.u_shape([1, 0, 0, 1]) == {"primacy": 1.0, "recency": 1.0}
    with pytest.raises(ValueError, match="κ ≥ 4"):
        syn.u_shape([1, 0, 1])
    # kappa_at inverts p_success: at the returned κ the law is at the threshold
    from mamba_recall.theory.capacity import p_success

    k = kappa_at(512, 64, 16, 0.5, "rev_mV", 5 / 8)
    assert p_success(512, k, 64, 16, "rev_mV", a=5 / 8) == pytest.approx(0.5, abs=1e-4)
    assert kappa_at(512, 2, 2, 0.99, "eq77") == 0.0
    assert construction_kappa(8, layers=2) == 16.0
    with pytest.raises(ValueError, match="probability"):
        kappa_at(512, 64, 16, 0.5, "remark1")


def test_the_page_reads_the_committed_search_and_the_strongest_complete_bundle():
    from mamba_recall.chapters.ch5_synthesis.pipelines.synthesis import evidence_bundles
    from mamba_recall.chapters.ch5_synthesis.runners.capacity import first_search
    from mamba_recall.results import load_bundle

    said = []
    result = first_search("ci", 0, log=said.append)
    assert said and said[0].startswith("from the run store: results/runs/ch5_capacity/")
    row = load_bundle("ch5_capacity_ci").tables["searches"].query("layers == 1 and D == 32 and N == 8").iloc[0]
    assert result["capacity"]["0.5"]["kappa"] == pytest.approx(row.kappa50)  # the preset's first cell, (1, 32, 8)
    strongest, partial = evidence_bundles(log=said.append)
    assert strongest.data["complete"] and (partial is None or not partial.data["complete"])


@pytest.mark.parametrize(
    "change, match",
    [
        ({"ladder": [2, 4, 300]}, r"\[2, V/2\)"),
        ({"ladder": [4, 2]}, "strictly increasing"),
        ({"thresholds": [0.5, 1.5]}, "thresholds"),
        ({"cells": [[1, 16]]}, r"\[layers, D, N\]"),
    ],
)
def test_bad_sizes_stop_before_any_job(change, match):
    from mamba_recall.chapters.ch5_synthesis.runners.capacity import check_sizes
    from mamba_recall.presets import experiment

    sizes = {**experiment("ch5_capacity", "cpu-hours"), **change}
    with pytest.raises(ValueError, match=match):
        check_sizes(sizes)
