"""Paper 002's verdicts a referee questioned (issue 27), pinned: each claim quotes its sentence, seeds reach a number
only through ``core.across_seeds``, Fig. 6(a, b) reads the V = 8192 designed-capacity bundle where Eq. 77 promises
something (with an always-wrong null), Fig. 10 is judged against the generator's own guessing level and tests "2
layers not perfect" at N_k = 3, Fig. 15 reads Lemma 5's wrong and correct entries, and the trained claims' null
controls do not pass their rules."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from mamba_recall import claims
from mamba_recall.chapters.ch2_hashing_scaling import claims as ch2
from mamba_recall.claims import check, core, judge
from mamba_recall.claims.core import Evidence, Measurement
from mamba_recall.results import evidence, load_bundle

SEEDED = Evidence("cpu-hours", "cpu", 3, "test", "test")


def _seeded(values: dict) -> Measurement:
    """Three agreeing seeds: every number's 95 % interval is its point."""
    return Measurement(values, "test", SEEDED, {k: (v, v) for k, v in values.items() if not isinstance(v, bool)})


def test_every_002_claim_quotes_its_sentence():
    missing = [c.id for c in core.claims_of("002") if not c.quote.strip()]
    assert not missing, f"claims without the paper's sentence: {missing}"


# --------------------------------------------------------------------------------------- one evidence path
def test_seeds_reach_a_number_only_through_across_seeds():
    """Chapter 2's claims (every module of ``claims.ch2``) hold no seed-combining logic of their own: no interval
    arithmetic, no hand-built per-seed lists."""
    src = "".join(p.read_text() for p in sorted(Path(inspect.getfile(ch2)).parent.glob("*.py")))
    for banned in ("mean_interval", "t.ppf", "per_seed=", "itertools.permutations", "np.corrcoef"):
        assert banned not in src, banned
    m = claims.get("002/Fig6c").measure(claims.claim_evidence("002/Fig6c"))  # per seed, then across_seeds
    assert m.evidence.seeds == 3 and m.per_seed["n90_nonincreasing"] == [True, True, True]
    assert set(m.intervals) == {"defined_n90"}


def test_spearman_is_scipys_with_an_exact_permutation_p():
    from scipy import stats

    r, p = ch2.spearman_p([1, 2, 4, 8], [4.0, 3.0, 2.5, 1.0])
    assert r == pytest.approx(stats.spearmanr([1, 2, 4, 8], [4, 3, 2.5, 1]).statistic) == pytest.approx(-1.0)
    assert p == pytest.approx(1 / 24)  # one of the 24 pairings is as extreme: p ≤ 0.05 needs four head counts
    assert ch2.spearman_p([1, 2, 4], [3, 2, 1])[1] == pytest.approx(1 / 6)


# ------------------------------------------------------------------------------------------- Fig. 6(a, b)
def _capacity(rows, V=8192):
    cap = pd.DataFrame(rows, columns=["D", "N", "level", "Nf", "eq77"]).assign(readout="values")
    return SimpleNamespace(
        name="ch2_designed_capacity_test",
        config={"V": V, "n_queries": 2000, "preset": "cpu-hours"},
        data={},
        provenance={"device": "cpu"},
        path=None,
        tables={"capacity": cap},
    )


def test_fig6ab_reads_the_trained_reference_grid_as_the_sentence_means():
    """§5.1 (i): the construction-based theory is a lower bound on the *trained* model (open review, issue 51)."""
    v = check("002/Fig6ab", record=False)
    assert v.evidence["source"].endswith("ch2_reference_grid_cpu-hours.json") and v.evidence["seeds"] == 3
    assert v.status == "reproduced" and "Eq. 77 exceeds chance (0.0625) in 5 cells" in v.ours
    assert v.control.startswith("null") and v.control.endswith("not reproduced")
    # other evidence than a reference grid is refused, never replaced by the committed one; Fig6bc reads the
    # construction half of the same reference grid, and a ch2_scaling grid (one seed) only when given one
    with pytest.raises(core.ClaimError, match="not an authors' reference grid"):
        check("002/Fig6ab", evidence=evidence("ch2_scaling", preset="ci"), record=False)
    bc = check("002/Fig6bc", record=False)
    assert bc.evidence["source"] == v.evidence["source"]
    assert bc.status == "reproduced" and bc.evidence["seeds"] == 3 and bc.control.endswith("not reproduced")
    grid = check("002/Fig6bc", evidence=evidence("ch2_scaling", preset="ci"), record=False)
    assert grid.evidence["source"].endswith("ch2_scaling_ci.json")
    assert claims.get("002/Fig6ab").revisions and claims.get("002/Fig6bc").revisions


def test_the_eq77_against_circuit_observation_leaves_out_cells_where_eq77_promises_nothing():
    nothing = _capacity([(16, 16, 0.5, 5, 0), (16, 16, 0.9, 2, 0)])  # Eq. 77 below the level at every N_f
    assert ch2.scaling.measure_designed_vs_eq77(nothing).values["informative_pairs"] == 0
    holds = _capacity([(16, 16, 0.5, 5, 0), (96, 96, 0.5, 222, 116), (128, 128, 0.9, 198, 175)])
    assert ch2.scaling.measure_designed_vs_eq77(holds).values == {"informative_pairs": 2, "lower_bound_fraction": 1.0}
    m = ch2.scaling.measure_designed_vs_eq77(evidence("ch2_designed_capacity", preset="cpu-hours"))
    assert m.values["informative_pairs"] == 13 and m.values["lower_bound_fraction"] == pytest.approx(8 / 13)


# ------------------------------------------------------------------------------------------------ Fig. 10
def _exact_guess(V: int, Nk: int) -> float:
    """The most frequent of N_k stored values, each earlier one uniform over the V/2 values (independent chunks)."""
    q = 1 / (V // 2)
    if Nk == 2:
        return 0.5 + 0.5 * q
    assert Nk == 3
    return q * q + 2 * q * (1 - q) + (1 - q) * (1 - 2 * q) / 3


@pytest.mark.parametrize("Nk", [2, 3])
def test_guess_level_comes_from_the_generator(Nk):
    """The ceiling is the closed form of the generator's sampling law, and the generator's own sequences agree."""
    from mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing import superposition_guess_accuracy

    g = ch2.guess_level(128, 8, Nk)
    assert g == pytest.approx(_exact_guess(128, Nk), abs=1e-12)
    assert superposition_guess_accuracy(128, 8, 16 * (Nk + 1), Nk=Nk, n=20_000) == pytest.approx(g, abs=0.003)
    assert g > 1 / Nk + 0.005  # not 1/N_k: the earlier chunks' values can repeat the last one


def test_fig10_nk3_judges_two_layers_not_perfect_against_the_guessing_level():
    claim = claims.get("002/Fig10-Nk3")
    assert {c.metric for c in claim.rule.reproduced} == {
        "one_layer_excess",
        "two_layer_accuracy",
        "three_layer_accuracy",
    }
    base = {"one_layer_excess": 0.0, "two_layer_accuracy": 0.995, "three_layer_accuracy": 0.9995}
    assert judge(claim, _seeded(base)).status == "reproduced"  # perfect = the runs' own target 0.999 (issue 51)
    assert judge(claim, _seeded({**base, "two_layer_accuracy": 0.9995})).status == "not reproduced"
    # 'roughly 1/3' is an absolute margin of ± 0.05 around the guessing level, both ways (open review, referee-H)
    assert judge(claim, _seeded({**base, "one_layer_excess": 0.04})).status == "reproduced"
    assert judge(claim, _seeded({**base, "one_layer_excess": 0.1})).status == "not reproduced"
    assert judge(claim, _seeded({**base, "one_layer_excess": -0.1})).status == "not reproduced"
    v = check("002/Fig10-Nk3", evidence=ch2.strongest_fig_bundle("fig10_11"), record=False)
    assert v.evidence["seeds"] == 3 and "0.349" in v.ours and "1/N_k = 0.333" in v.ours
    # one layer is within 0.05 of the guessing level over its whole interval; two layers stay below the target on
    # every seed (0.9956) but on runs capped at 1,000 steps, under the declared 3,000 (the paper's): undecided
    # (referee-O); three layers' interval straddles the target
    assert v.status == "inconclusive" and "three_layer_accuracy" in v.reason and "one_layer_excess" not in v.reason
    assert "two_layer_accuracy is undecided in the measurement itself" in v.reason
    assert "at a 1000-step cap, under the declared 3000: undecided" in v.ours
    # at the declared budget the same numbers decide the two-layer clause
    from dataclasses import replace as _replace

    b = ch2.strongest_fig_bundle("fig10_11")
    at_budget = _replace(b, config={**b.config, "sizes": {**b.config["sizes"], "steps": 3000}})
    v3 = check("002/Fig10-Nk3", evidence=at_budget, record=False)
    assert any(c.startswith("two_layer_accuracy <") and ok for c, _, ok in v3.checks), v3.checks
    assert v.control.startswith("null")


def test_fig10_nk2_ceiling_is_the_guessing_level():
    m = claims.get("002/Fig10-Nk2").measure(ch2.strongest_fig_bundle("fig10_11"))
    one = [float(s.split("1 layer ")[1].split(" ")[0]) for s in m.shown.split(" | ")]
    guess = ch2.guess_level(128, 8, 2)
    assert m.per_seed["one_layer_excess"] == pytest.approx([a - guess for a in one], abs=1e-3)


# ------------------------------------------------------------------------------------------------ Fig. 15
def _fig8():
    return ch2.strongest_fig_bundle("fig8")


def test_fig15_reads_the_wrong_and_correct_entries_not_the_empty_ones():
    b = _fig8()
    m = claims.get("002/Fig15").measure(b)
    assert {"wrong_significant_fraction", "correct_significant_fraction"} <= set(m.values)
    assert "wrong entries" in m.shown and "correct entries" in m.shown and "empty" not in m.shown
    runs = b.tables["runs"]
    scrambled = SimpleNamespace(
        **{k: getattr(b, k) for k in ("name", "config", "data", "provenance", "path")},
        tables={
            **b.tables,
            "runs": runs.assign(rel_var_empty=runs["rel_var_empty"].sample(frac=1, random_state=0).values),
        },
    )
    assert claims.get("002/Fig15").measure(scrambled).values == m.values  # the empty entries are not read
    assert (
        check("002/Fig15", evidence=b, record=False).status == "partially"
    )  # wrong entries fall with M, correct not at p ≤ 0.05


def test_fig15_without_the_correct_entry_variance_is_not_run_with_the_command():
    b = _fig8()
    gone = SimpleNamespace(
        **{k: getattr(b, k) for k in ("name", "config", "provenance", "path", "tables")},
        data={**b.data, "store": "results/runs/no-such-store/"},
    )
    v = check("002/Fig15", evidence=gone, record=False)
    assert v.status == "not run" and ch2.FIG15_COMMAND in v.reason
    ci = load_bundle("ch2_multihead_ci")
    bare = SimpleNamespace(
        **{k: getattr(ci, k) for k in ("name", "config", "data", "provenance", "path")},
        tables={**ci.tables, "noise": ci.tables["noise"].drop(columns=["var_correct"])},
    )
    v = check("002/Fig15", evidence=bare, record=False)
    assert v.status == "not run" and "runners.multihead --preset ci" in v.reason


# ------------------------------------------------------------------------------------------ null controls
@pytest.mark.parametrize(
    "cid, bundle",
    [
        ("002/Fig6ab", lambda: None),
        ("002/Fig6bc", lambda: evidence("ch2_scaling", preset="ci")),
        ("002/Fig6c", lambda: None),
        ("002/Fig10-Nk2", lambda: ch2.strongest_fig_bundle("fig10_11")),
        ("002/Fig10-Nk3", lambda: ch2.strongest_fig_bundle("fig10_11")),
        ("002/Fig11-Nq2", lambda: ch2.strongest_fig_bundle("fig10_11")),
        ("002/Fig11-Nq3", lambda: ch2.strongest_fig_bundle("fig10_11")),
        ("002/Tab10-Base-to-D", lambda: ch2.strongest_fig_bundle("tab10")),
        ("002/Fig8-MHA", _fig8),
    ],
)
def test_null_controls_do_not_pass_the_rule(cid, bundle):
    b = bundle()
    if b is None:
        v = check(cid, record=False)
    elif claims.get(cid).reads is not None:  # a claim that declares its evidence is given other evidence by name
        v = check(cid, evidence=b, record=False)
    else:
        v = check(cid, b, record=False)
    assert v.control.startswith("null: ")
    assert not v.control.endswith("✅ reproduced"), v.control


def test_a_constant_variance_is_no_evidence_of_a_decrease():
    """A variance that does not change with the head count has no ranking: p is 1, not scipy's 0 for NaN ρ."""
    import math

    from mamba_recall.chapters.ch2_hashing_scaling.claims import spearman_p

    rho, p = spearman_p([1, 2, 4, 8], [1.0, 1.0, 1.0, 1.0])
    assert math.isnan(rho) and p == 1.0
    assert spearman_p([1, 2, 4], [3, 2, 1]) == (-1.0, 1 / 6)
