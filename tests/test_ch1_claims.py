"""Chapter 1 (paper 000): the claims registry's verdicts that were once wrong stay fixed."""

import pandas as pd
import pytest

from mamba_recall.claims import check, claims_of, get
from mamba_recall.experiments.ch1_training import load_checkpoint
from mamba_recall.tasks.latest_value import latest_value_batch
from mamba_recall.theory import gradient_lemma as gl


@pytest.fixture(scope="module")
def paper_k1():
    model, meta = load_checkpoint("k1", "paper")
    return model, meta


def test_every_claim_of_the_paper_is_declared():
    ids = {c.id for c in claims_of(paper="000")}
    for needed in (
        "000/Fig4a",
        "000/Fig4b",
        "000/Fig4c",
        "000/Fig4d",
        "000/Fig5",
        "000/Fig6",
        "000/Fig7",
        "000/Fig8",
        "000/Sec3-Delta",
        "000/Lemma1-key",
        "000/Lemma1-other",
        "000/Lemma1-one-step",
        "000/Lemma1-one-step-T2",
        "000/Table1-mamba",
        "000/Table1-tf2",
        "000/Table1-tf1-conv",
        "000/Table1-rope",
        "000/Table1-long",
        "000/Alg1",
    ):
        assert needed in ids, needed


def test_one_step_claim_is_split_and_fails_at_v_much_larger_than_t():
    """|V| ≫ T (the paper's condition) fails; |V| ≫ T² (the corrected one) holds; computed, not typed in."""
    steps = gl.one_step_table([64, 256, 1024], [4, 8, 64], n=2000, seed=1)
    v = check("000/Lemma1-one-step", steps, record=False)
    assert v.status == "not reproduced", v
    t2 = check("000/Lemma1-one-step-T2", steps, record=False)
    assert t2.status == "reproduced", t2
    # and with no |V| ≥ 16 T² cell the corrected claim cannot be judged
    assert check("000/Lemma1-one-step-T2", steps[steps["T"] == 64], record=False).status == "not testable here"


def test_lemma_key_entries_are_an_erratum_with_both_numbers():
    v = check("000/Lemma1-key", [(4, 5), (6, 5)], record=False)
    assert v.status == "erratum confirmed" and "printed" in v.ours
    other = check("000/Lemma1-other", [8, 256], [8, 16], [(4, 5)], record=False)
    assert other.status == "erratum confirmed"


def test_delta_close_to_zero_unless_key_is_checked_on_the_paper_model(paper_k1):
    """§3's 'Δ_t is close to zero unless a key is present' is measured on the committed T = 256 model, where
    the noise pairs' Δ is about the key pairs' (not a tenth of it). The checkpoint is one seed: under symmetric
    judging a trained-model claim on one seed is inconclusive in either direction, so the verdict is inconclusive
    and its reason says that the means alone read 'not reproduced'."""
    model, meta = paper_k1
    v = check("000/Sec3-Delta", model, meta, record=False)
    assert v.status == "inconclusive" and v.status != "reproduced", v
    assert "1 seed" in v.reason and "'not reproduced'" in v.reason, v.reason
    assert v.checks[0][2] is False and float(v.checks[0][1]) > 0.5


def test_paper_checkpoint_claims_carry_paper_evidence(paper_k1):
    model, meta = paper_k1
    test = latest_value_batch(8, 8, 1, 256, 3, seed=1000)
    for cid, args in (
        ("000/Sec3-accuracy", (meta,)),
        ("000/Fig4a", (model, test.inputs, meta)),
        ("000/Fig4b", (model, test.inputs, meta)),
        ("000/Fig4c", (model, meta)),
        ("000/Fig8", (model, meta)),
        ("000/Sec3-regimes", (model, meta)),
    ):
        v = check(cid, *args, record=False)
        ev = v.evidence
        assert ev["tier"] == "paper" and ev["device"] == "cpu" and ev["seeds"] == 1, (cid, ev)
        assert ev["source"] == "results/checkpoints/ch1_k1_paper.pt", (cid, ev)
        assert v.status != "reproduced"  # one seed: a trained-model claim is capped


def _table(mamba, tf2, tf1, rope, cells=((128, 1), (128, 4))):
    rows = []
    for name, accs in (("mamba", mamba), ("tf2_nope", tf2), ("tf1_conv", tf1), ("tf2_conv_rope", rope)):
        rows += [{"model": name, "T": t, "kappa": k, "accuracy": a} for (t, k), a in zip(cells, accs)]
    return pd.DataFrame(rows)


class _Origin:  # a bundle stand-in (what Evidence.from_bundle reads)
    provenance = {"device": "cpu"}
    config = {"preset": "ci"}
    path = "results/ch1_table1_ci.json"


def _three_seeds(claim_id, *tables):
    """``claim_id`` judged over three seeds whose tables differ by a point either way (an interval around each
    number that stays on one side of the thresholds below)."""
    from mamba_recall.claims.core import check_seeds

    o = _Origin()
    inputs = [(_table(*[[min(1.0, a + d) for a in accs] for accs in tables]), o) for d in (-0.01, 0.0, 0.01)]
    return check_seeds(claim_id, inputs, ["seed 0", "seed 1", "seed 2"])


def test_table1_rules_come_from_the_paper():
    o = _Origin()
    # no-PE Transformers must fall far below Mamba: 55 % is "struggling" only if Mamba is ≥ 30 points above
    assert _three_seeds("000/Table1-tf2", [0.80, 0.80], [0.55, 0.55], [0.3, 0.3], [1, 1]).status == "not reproduced"
    assert _three_seeds("000/Table1-tf2", [1.0, 1.0], [0.55, 0.55], [0.3, 0.3], [1, 1]).status == "reproduced"
    # RoPE: the paper's 77 % next to Mamba's 100 % is not "similar", nor does it solve the task
    assert _three_seeds("000/Table1-rope", [1.0, 1.0], [0.3, 0.3], [0.3, 0.3], [1.0, 0.77]).status == "not reproduced"
    assert _three_seeds("000/Table1-rope", [1.0, 0.88], [0.3, 0.3], [0.3, 0.3], [1.0, 0.99]).status == "partially"
    # one seed decides nothing in either direction: inconclusive, and the reason says which way the means point
    for cid, tables, means in (
        ("000/Table1-tf2", ([0.80, 0.80], [0.55, 0.55], [0.3, 0.3], [1, 1]), "not reproduced"),
        ("000/Table1-tf2", ([1.0, 1.0], [0.55, 0.55], [0.3, 0.3], [1, 1]), "reproduced"),
        ("000/Table1-rope", ([1.0, 1.0], [0.3, 0.3], [0.3, 0.3], [1.0, 0.77]), "not reproduced"),
        ("000/Table1-rope", ([1.0, 0.88], [0.3, 0.3], [0.3, 0.3], [1.0, 0.99]), "partially"),
    ):
        v = check(cid, _table(*tables), o, record=False)
        assert v.status == "inconclusive", (cid, v)
        assert "1 seed" in v.reason and f"'{means}'" in v.reason, (cid, v.reason)


def test_table1_on_the_committed_bundle():
    from mamba_recall.results import load_bundle

    b = load_bundle("ch1_table1_ci")
    t = b.tables["accuracy"]
    # the ci bundle is one seed: under symmetric judging both verdicts are inconclusive; the means still point
    # where they did (80 % at κ = 1 is no 'struggle'; RoPE solves the task but is not within 5 points of Mamba)
    v = check("000/Table1-tf1-conv", t, b, record=False)
    assert v.status == "inconclusive" and "1 seed" in v.reason and "'not reproduced'" in v.reason, v
    v = check("000/Table1-rope", t, b, record=False)
    assert v.status == "inconclusive" and v.evidence["tier"] == "ci", v
    assert "1 seed" in v.reason and "'partially'" in v.reason, v.reason
    assert check("000/Table1-long", record=False).status == "not run"


def test_fig4_chart_draws_the_first_half_dashed():
    from mamba_recall.analysis.recall_probes import probe_frame
    from mamba_recall.models.simplified_recall import m1
    from mamba_recall.views.gradient_dynamics import fig4_chart

    frame = probe_frame(m1(8, seed=0), latest_value_batch(1, 8, 1, 32, 3, seed=0).inputs[0], 0, 16)
    scales = [d["strokeDash"]["scale"] for d in _find(fig4_chart(frame).to_dict(), "strokeDash")]
    assert scales, "the Fig. 4 lines have no stroke-dash scale"
    for s in scales:
        style = dict(zip(s["domain"], s["range"]))
        assert style["first half (d < |V|)"] != [1, 0], "first half must be dashed (the caption)"
        assert style["second half (d ≥ |V|)"] == [1, 0], "second half must be solid"


def _find(obj, key):
    """Every dict inside ``obj`` that has ``key``."""
    out = []
    if isinstance(obj, dict):
        if key in obj:
            out.append(obj)
        for v in obj.values():
            out += _find(v, key)
    elif isinstance(obj, list):
        for v in obj:
            out += _find(v, key)
    return out


def test_bc_spike_claims_need_a_trained_model():
    from types import SimpleNamespace

    from mamba_recall.models.simplified_recall import m2

    model = m2(8, 2, seed=0)
    src = SimpleNamespace(
        model=model,
        test_set=latest_value_batch(8, 8, 2, 32, 3, seed=1),
        accuracy=0.3,
        sizes={"seq_len": 32, "target": "masked"},
        tier="ci",
        device="cpu",
        source="live",
        seeds=1,
    )
    assert check("000/Fig5", src, record=False).status == "not testable here"
    assert get("000/Fig5").rule.trained


def _fig4d(F_write, F_forget, F_read, below=1.0, seeds=3):
    from mamba_recall.claims import judge
    from mamba_recall.claims.core import Evidence, Measurement

    m = Measurement(
        {
            "F_write": F_write,
            "forget_minus_write": F_forget - F_write,
            "read_minus_write": F_read - F_write,
            "below_next_read": below,
        },
        "synthetic",
        Evidence("paper", "cpu", seeds, "synthetic", "test"),
        intervals={"F_write": (F_write - 0.01, F_write + 0.01)},
    )
    return judge(get("000/Fig4d"), m)


def test_fig4d_rule_is_the_papers_ordering_not_a_threshold_fitted_to_our_041():
    """'erase (small forgetting factor)' is read from §3 / App. C as the write regime's second-half factor being the
    smallest of the three regimes; the earlier 'F_write ≤ 0.5' was chosen after seeing our 0.41."""
    rule = get("000/Fig4d").rule
    assert "F_write" not in rule.metrics() and {"forget_minus_write", "read_minus_write"} <= rule.metrics()
    assert "after seeing our 0.41" in rule.why
    # App. C's own values (write 0.3 < forget 0.4 < read 0.8) pass; ours would pass at 0.45 as well as 0.41
    assert _fig4d(0.3, 0.4, 0.8).status == "reproduced"
    assert _fig4d(0.45, 0.62, 0.87).status == "reproduced"
    # a small write factor that is not the smallest of the regimes is not the paper's 'erase' (the old rule passed it)
    assert _fig4d(0.3, 0.25, 0.8).status == "not reproduced"
    assert _fig4d(0.3, 0.4, 0.8, below=0.9).status == "not reproduced"


def test_fig4d_on_the_paper_checkpoint(paper_k1):
    model, meta = paper_k1
    test = latest_value_batch(8, 8, 1, 256, 3, seed=1000)
    v = check("000/Fig4d", model, test.inputs, meta, record=False)
    # the ordering holds at every condition's point value, but the checkpoint is one seed: under symmetric judging
    # that is inconclusive (it read 'partially' when one seed capped a passing rule)
    assert v.status == "inconclusive" and all(ok for *_, ok in v.checks), v
    assert "1 seed" in v.reason and "'reproduced'" in v.reason, v.reason
    assert "forget regime" in v.ours and "read regime" in v.ours


def test_chapter1_checks_print_their_numbers_with_library_thresholds():
    """A check cell prints the measured quantity next to pass/FAIL, never a bare True/False, and takes its tolerance
    from mamba_recall.claims.p000 rather than typing it in."""
    import json
    import re
    from pathlib import Path

    book = Path(__file__).resolve().parents[1] / "book" / "01_gradient_dynamics"
    for name in ("01_task_and_model.ipynb", "04_gradient_lemma.ipynb"):
        for cell in json.loads((book / name).read_text())["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] != "code" or "NBVAL_CHECK_OUTPUT" not in src:
                continue
            out = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
            for line in out.splitlines():
                assert not re.search(r":\s*(True|False)\s*(\||$)", line), f"{name}: bare boolean in {line!r}"
            # no tolerance typed into a comparison (e.g. "<= 1e-12"): it comes from the library
            assert not re.search(r"(<=|<|>=|>)\s*\d+(\.\d+)?e-\d+", src), (
                f"{name}: a typed-in tolerance in {src[:80]!r}"
            )
    nb1 = json.loads((book / "01_task_and_model.ipynb").read_text())
    outs = "".join("".join(o.get("text", "")) for c in nb1["cells"] for o in c.get("outputs", []))
    assert "max |logits − reference| ≤ 1e-12 (bound 1e-10): pass" in outs
    from mamba_recall.claims import p000

    assert p000.FLOAT64_AGREE == 1e-10 and p000.FLOAT32_AGREE == 1e-7


def test_alg1_printed_is_the_papers_y_as_printed():
    v = get("000/Alg1")
    assert "y = [· . . . . . . . Z . Y X]" in v.printed and "12 entries as printed" in v.printed
