"""The claims registry: every declared rule can fail, every status it declares is reachable, and the
notebooks hold no verdict logic."""

from __future__ import annotations

from dataclasses import replace

import json
from pathlib import Path

import pytest

from mamba_recall import claims
from mamba_recall.claims import core, render
from mamba_recall.claims.core import Claim, Cond, Evidence, Measurement, Rule, conds, judge

ROOT = Path(__file__).resolve().parents[2]
ALL = sorted(claims.REGISTRY.values(), key=lambda c: c.id)
SEEDED = Evidence("ci", "cpu", 3, "test", "test")


def _satisfying(cs: tuple[Cond, ...]) -> dict:
    """Values for which every condition in ``cs`` holds (one value per metric)."""
    out = {}
    for metric in {c.metric for c in cs}:
        mine = [c for c in cs if c.metric == metric]
        candidates = [c.crossing()[0] for c in mine]
        numeric = [c.value for c in mine if c.value is not None]
        if len(numeric) >= 2:
            candidates.append((min(numeric) + max(numeric)) / 2)
        ok = [x for x in candidates if all(c.holds(x) for c in mine)]
        if not ok:
            raise AssertionError(f"conditions on {metric!r} can never hold together: {[c.text() for c in mine]}")
        out[metric] = ok[0]
    return out


def _measure(values: dict, intervals=True) -> Measurement:
    """A seeded measurement; the first metric carries a zero-width interval at its value (so the interval rule
    agrees with the value rule and the tests below read the value rule alone)."""
    return Measurement(
        values, "test", SEEDED, {k: (values[k], values[k]) for k in list(values)[:1]} if intervals else {}
    )


def _base(rule: Rule) -> dict:
    """Values for which the rule says 'reproduced' (testable conditions hold too)."""
    values = {m: 0.0 for m in rule.metrics()}
    values.update(_satisfying(rule.testable))
    values.update(_satisfying(rule.reproduced))
    return values


@pytest.mark.parametrize("claim", ALL, ids=[c.id for c in ALL])
def test_rule_reaches_reproduced(claim):
    assert judge(claim, _measure(_base(claim.rule))).status == "reproduced", claim.rule.text()


@pytest.mark.parametrize("claim", ALL, ids=[c.id for c in ALL])
def test_rule_flips_at_every_threshold(claim):
    """Crossing any one 'reproduced' condition takes the verdict away from 'reproduced' (no rule that
    cannot fail), and crossing a 'testable' condition gives 'not testable here'."""
    rule = claim.rule
    for cond in rule.reproduced:
        values = _base(rule)
        values[cond.metric] = cond.crossing()[1]
        if all(c.holds(values[c.metric]) for c in rule.testable):
            assert judge(claim, _measure(values)).status != "reproduced", f"{claim.id}: {cond.text()} cannot fail"
    for cond in rule.testable:
        values = _base(rule)
        values[cond.metric] = cond.crossing()[1]
        assert judge(claim, _measure(values)).status == "not testable here", f"{claim.id}: {cond.text()}"


@pytest.mark.parametrize(
    "claim",
    [c for c in ALL if c.rule.erratum or c.rule.partially],
    ids=[c.id for c in ALL if c.rule.erratum or c.rule.partially],
)
def test_declared_lower_statuses_are_reachable(claim):
    """An erratum or partial level, when declared, is reached by some measurement."""
    rule = claim.rule
    for level, status in ((rule.erratum, "erratum confirmed"), (rule.partially, "partially")):
        if not level:
            continue
        reached = False
        for cond in rule.reproduced:
            values = _base(rule)
            values[cond.metric] = cond.crossing()[1]
            try:
                values.update({k: v for k, v in _satisfying(level).items() if k != cond.metric})
            except AssertionError:
                continue
            reached |= judge(claim, _measure(values)).status == status
        assert reached, f"{claim.id}: '{status}' is declared but no single crossing reaches it"


def test_trained_claims_need_three_seeds_and_an_interval_in_either_direction():
    """Fewer than three seeds, or no interval, decides nothing: inconclusive whether the means pass or fail."""
    rule = Rule(why="test", reproduced=conds(("acc", ">=", 0.99)), trained=True)
    claim = Claim("000/test-trained", "s", "w", "p", rule, lambda: None, section="x")
    one_seed = Measurement({"acc": 1.0}, "1.0", Evidence("ci", "cpu", 1, "n", "live"))
    v = judge(claim, one_seed)
    assert v.status == "inconclusive" and "3 seeds" in v.reason and "would read 'reproduced'" in v.reason
    failing_seed = Measurement({"acc": 0.2}, "0.2", Evidence("ci", "cpu", 1, "n", "live"))
    v = judge(claim, failing_seed)
    assert v.status == "inconclusive" and "would read 'not reproduced'" in v.reason
    three = Measurement({"acc": 1.0}, "1.0", Evidence("ci", "cpu", 3, "n", "live"))
    assert judge(claim, three).status == "inconclusive"  # no interval
    assert judge(claim, _measure({"acc": 1.0})).status == "reproduced"
    assert judge(claim, _measure({"acc": 0.2})).status == "not reproduced"


def test_the_partial_level_is_consulted_when_the_printed_statement_straddles():
    """Issue 51, "the judge": training accuracy 1, 1 and 0.999987 against "= 1" straddles the printed statement,
    but the declared weaker reading (≥ 0.99) holds over its whole interval: partially, not inconclusive. Where
    the weaker reading straddles too, inconclusive; where the printed statement is refuted, the partial level as
    before."""
    rule = Rule(why="t", reproduced=conds(("acc", ">=", 1.0)), partially=conds(("acc", ">=", 0.99)), trained=True)
    claim = Claim("000/test-straddle-partial", "s", "w", "p", rule, lambda: None, section="x")
    v = judge(claim, Measurement({"acc": 0.999996}, "x", SEEDED, {"acc": (0.99998, 1.00001)}))
    assert v.status == "partially" and "not decided; the partial statement holds" in v.reason
    assert judge(claim, Measurement({"acc": 0.99}, "x", SEEDED, {"acc": (0.98, 1.001)})).status == "inconclusive"
    assert judge(claim, Measurement({"acc": 0.995}, "x", SEEDED, {"acc": (0.992, 0.998)})).status == "partially"


def test_a_condition_must_hold_over_the_whole_interval():
    """Declared rule (claims.core): a mean that clears a threshold while its 95 % interval straddles it is
    inconclusive; an interval wholly past the threshold is reproduced. Same for the erratum level."""
    rule = Rule(why="test", reproduced=conds(("acc", ">=", 0.9)), trained=True)
    claim = Claim("000/test-interval", "s", "w", "p", rule, lambda: None, section="x")
    inside = Measurement({"acc": 0.95}, "x", SEEDED, {"acc": (0.92, 0.98)})
    assert judge(claim, inside).status == "reproduced"
    crossing = Measurement({"acc": 0.95}, "x", SEEDED, {"acc": (0.85, 1.05)})
    v = judge(claim, crossing)
    assert v.status == "inconclusive" and "[0.85, 1.05] straddles acc ≥ 0.9" in v.reason
    upper = Rule(why="t", reproduced=conds(("gap", "<=", 0.1)), trained=True)
    claim_u = Claim("000/test-interval-u", "s", "w", "p", upper, lambda: None, section="x")
    assert judge(claim_u, Measurement({"gap": 0.05}, "x", SEEDED, {"gap": (0.0, 0.2)})).status == "inconclusive"
    assert judge(claim_u, Measurement({"gap": 0.05}, "x", SEEDED, {"gap": (0.0, 0.1)})).status == "reproduced"
    err = Rule(why="t", reproduced=conds(("a", ">=", 1.0)), erratum=conds(("b", ">=", 0.5)), trained=True)
    claim_e = Claim("000/test-interval-e", "s", "w", "p", err, lambda: None, section="x")
    m = Measurement({"a": 0.0, "b": 0.6}, "x", SEEDED, {"a": (0.0, 0.0), "b": (0.55, 0.65)})
    assert judge(claim_e, m).status == "erratum confirmed"
    m = Measurement({"a": 0.0, "b": 0.6}, "x", SEEDED, {"a": (0.0, 0.0), "b": (0.4, 0.8)})
    assert judge(claim_e, m).status == "inconclusive"


@pytest.mark.parametrize("op", [">=", ">", "<=", "<"])
def test_symmetric_judging_an_interval_straddling_a_threshold_is_inconclusive_from_either_side(op):
    """Both directions carry the same burden: with the mean on the passing side or on the failing side, an
    interval that straddles the threshold reads inconclusive; reproduced and not reproduced each need the
    whole interval on their side."""
    rule = Rule(why="t", reproduced=conds(("x", op, 0.5)), trained=True)
    claim = Claim("000/test-symmetric", "s", "w", "p", rule, lambda: None, section="x")
    up = op in (">=", ">")
    for mean in (0.45, 0.55):  # the mean on each side of the threshold
        v = judge(claim, Measurement({"x": mean}, "x", SEEDED, {"x": (0.3, 0.7)}))
        assert v.status == "inconclusive", (op, mean, v.status)
        assert "straddles" in v.reason
    whole_pass = (0.6, 0.9) if up else (0.1, 0.4)
    whole_fail = (0.1, 0.4) if up else (0.6, 0.9)
    assert judge(claim, Measurement({"x": sum(whole_pass) / 2}, "x", SEEDED, {"x": whole_pass})).status == "reproduced"
    v = judge(claim, Measurement({"x": sum(whole_fail) / 2}, "x", SEEDED, {"x": whole_fail}))
    assert v.status == "not reproduced"


def test_symmetric_judging_partial_and_boolean_seeds():
    """Partial conditions are held to the interval as well; a boolean with seeds on both sides is undecided."""
    rule = Rule(
        why="t", reproduced=conds(("a", ">=", 0.9), ("b", ">=", 0.9)), partially=conds(("a", ">=", 0.9)), trained=True
    )
    claim = Claim("000/test-partial", "s", "w", "p", rule, lambda: None, section="x")
    m = Measurement({"a": 0.95, "b": 0.2}, "x", SEEDED, {"a": (0.92, 0.98), "b": (0.1, 0.3)})
    assert judge(claim, m).status == "partially"
    m = Measurement({"a": 0.95, "b": 0.2}, "x", SEEDED, {"a": (0.85, 1.0), "b": (0.1, 0.3)})
    assert judge(claim, m).status == "inconclusive"
    m = Measurement({"a": 0.5, "b": 0.2}, "x", SEEDED, {"a": (0.4, 0.6), "b": (0.1, 0.3)})
    assert judge(claim, m).status == "not reproduced"
    flag = Rule(why="t", reproduced=conds(("ok", "true")), trained=True)
    claim_b = Claim("000/test-bool-seeds", "s", "w", "p", flag, lambda: None, section="x")
    for per_seed, status in (
        ([True] * 3, "reproduced"),
        ([False] * 3, "not reproduced"),
        ([True, False, True], "inconclusive"),
    ):
        m = Measurement({"ok": all(per_seed)}, "x", SEEDED, {}, {"ok": per_seed})
        assert judge(claim_b, m).status == status, per_seed
    nan = Measurement({"a": float("nan"), "b": 0.95}, "x", SEEDED, {"b": (0.92, 0.98)})
    assert judge(claim, nan).status == "inconclusive"


def test_malformed_declarations_are_refused():
    with pytest.raises(core.ClaimError, match="why"):
        Rule(why=" ", reproduced=conds(("a", ">=", 1)))
    with pytest.raises(core.ClaimError, match="op"):
        Cond("a", "=>", 1)
    with pytest.raises(core.ClaimError, match="not_run"):
        Claim("002/x", "s", "w", "p", Rule(why="w", reproduced=conds(("a", ">=", 1))))
    with pytest.raises(core.ClaimError, match="claim id"):
        Claim("2/x", "s", "w", "p", Rule(why="w", reproduced=conds(("a", ">=", 1))), not_run="later")
    with pytest.raises(core.ClaimError, match="lacks"):
        judge(
            Claim("002/y", "s", "w", "p", Rule(why="w", reproduced=conds(("a", ">=", 1))), lambda: 0, "x"),
            Measurement({}, "", Evidence.exact("n")),
        )
    with pytest.raises(core.ClaimError, match="unknown claim"):
        claims.get("002/no-such-claim")


def test_every_claim_is_complete():
    assert {c.paper for c in ALL} == set(core.PAPERS), "every paper declares its claims"
    for c in ALL:
        assert c.measure is not None or c.not_run, c.id
        assert c.printed.strip(), c.id
        if c.section:
            assert (ROOT / "book" / f"{c.section}.ipynb").exists(), f"{c.id}: no section {c.section}"


def test_not_run_and_record_round_trip(tmp_path):
    claim = next(c for c in ALL if c.measure is not None)
    v = core.not_run_verdict(claim, "needs a GPU")
    core.record_verdict(v, tmp_path)
    back = core.load_verdicts(tmp_path)[claim.id]
    assert back.status == "not run" and back.reason == "needs a GPU"
    (tmp_path / "000__broken.json").write_text("{")
    with pytest.raises(core.ClaimError, match="corrupt"):
        core.load_verdicts(tmp_path)


def test_generated_pages(tmp_path):
    claim = claims.get("001/KeyObs2")
    from mamba_recall.theory import worked_example as wx

    claims.check(claim.id, wx.worked_example(), directory=tmp_path)
    recorded = core.load_verdicts(tmp_path)
    page = render.scorecard_page(recorded)
    assert "001/KeyObs2" in page and render.badge("reproduced") in page and "mr-bar" in page
    assert "✅" not in page  # badges in CSS and words, no emoji glyph
    assert ":::{dropdown} 001/KeyObs2 — reproduced" in page
    for c in ALL:
        assert c.id in page, f"{c.id} missing from the scorecard page"
    table = render.chapter_status_table(recorded)
    assert "planned" not in table and table.count("\n") == 2 + len(render.CHAPTERS)
    book = tmp_path / "book"
    (book / "00_x").mkdir(parents=True)
    (book / "scorecard.md").write_text("# S\n<!-- SCORECARD -->\n")
    (book / "intro.md").write_text("# I\n<!-- CHAPTER_STATUS -->\n")
    (book / "00_x" / "overview.md").write_text("# O\n<!-- VERDICTS -->\n")
    render.fill_pages(book, recorded)
    assert "001/KeyObs2" in (book / "00_x" / "overview.md").read_text()
    (book / "scorecard.md").write_text("# S\n<!-- SCORECARD -->\n")
    (book / "intro.md").write_text("# I\n")
    with pytest.raises(SystemExit, match="CHAPTER_STATUS"):
        render.fill_pages(book, recorded)


VERDICT_WORDS = (
    "'reproduced'",
    '"reproduced"',
    "'partially'",
    '"partially"',
    "not reproduced",
    "record_claim",
    "erratum confirmed",
    "not testable here",
    "scorecard import",
    "status=",
)


def _code_cells():
    for nb in sorted((ROOT / "book").glob("*/*.ipynb")):
        for i, cell in enumerate(json.loads(nb.read_text())["cells"]):
            if cell["cell_type"] == "code":
                yield nb.relative_to(ROOT), i, "".join(cell["source"])


def test_notebook_cells_hold_no_verdict_logic():
    """Verdicts come from the registry: no status literal, record_claim or status= in a code cell."""
    bad = [f"{nb} cell {i}: {w}" for nb, i, src in _code_cells() for w in VERDICT_WORDS if w in src]
    assert not bad, "verdict logic in notebook cells (use mamba_recall.claims.check):\n" + "\n".join(bad)


def test_every_check_in_a_notebook_names_a_declared_claim():
    import re

    for nb, i, src in _code_cells():
        for cid in re.findall(r"check\(\s*[\"']([0-9]{3}/[^\"']+)[\"']", src):
            assert cid in claims.REGISTRY, f"{nb} cell {i} checks undeclared claim {cid}"


def test_smoke_runs_are_never_evidence(tmp_path):
    from mamba_recall import context, results
    from mamba_recall.theory import worked_example as wx

    with context.run_context(smoke_dir=results.smoke_results_dir()):
        v = claims.check("001/KeyObs2", wx.worked_example(), directory=tmp_path)
    assert v.status == "not run" and "smoke" in v.reason
    assert core.load_verdicts(tmp_path) == {} and (tmp_path / "smoke" / "001__KeyObs2.json").exists()
    claim = claims.get("001/KeyObs2")
    flagged = Measurement(
        {"peak_at_cat": True, "shrinks_after_sat": True},
        "x",
        Evidence("paper", "cpu", 3, "n", "live", smoke=True),
        {"peak_at_cat": (0, 1)},
    )
    assert judge(claim, flagged).status == "not run"


PAPERS_DIR = Path(__import__("os").environ.get("MAMBA_RECALL_PAPERS", "/nonexistent"))


@pytest.mark.skipif(
    not PAPERS_DIR.is_dir(),
    reason="set MAMBA_RECALL_PAPERS to a folder with the papers' text "
    "(one NNN_*.txt per paper) to check the printed fields",
)
def test_every_number_in_printed_is_in_the_papers_text():
    """``printed`` holds the paper's numbers as printed: every decimal number (and every integer of two digits or
    more) in it must occur in that paper's text. Caught a derived V = 1024 in 002/Fig6-anchor (the paper prints
    V_k = V/2 = 512)."""
    import re

    texts = {p.name[:3]: p.read_text() for p in PAPERS_DIR.glob("00*_*.txt")}
    for c in ALL:
        printed, sources = c.printed, [c.paper]
        if c.paper == "book":  # the book's own hypotheses: "paper NNN: …" names the theory, whose text holds the rest
            sources = re.findall(r"paper (\d{3})", printed)
            assert all(s in texts for s in sources), f"{c.id} names a paper the book does not have: {printed!r}"
            printed = re.sub(r"paper \d{3}", "", printed)
        for num in re.findall(r"(?<![\w.])\d+\.\d+|(?<![\w.])\d{2,}(?![\w.])", printed):
            assert any(num in texts[s] for s in sources), (
                f"{c.id}: {num} is not in paper {sources}'s text ({printed!r})"
            )


def test_keyobs2_printed_quotes_the_documents_states():
    printed = claims.get("001/KeyObs2").printed
    for state in ("[0.149, 0.112]", "[0.709, 0.557]", "[0.377, 0.410]"):
        assert state in printed


def test_rounding_level_errors_print_the_same_everywhere():
    assert core.below(0) == core.below(2e-17) == core.below(1e-12) == "≤ 1e-12"
    assert core.below(3e-8) == "≤ 1e-07" and core.below(0.5) == "≤ 1e+00"
    assert core.pass_fail(True) == "pass" and core.pass_fail(False) == "FAIL"


def test_a_checked_number_is_printed_on_the_side_of_its_threshold():
    """4 significant digits unless rounding would put the printed number on the other side of the condition."""
    c = Cond("acc", ">=", 1.0)
    assert c.shown(0.9999955) == "0.999996" and not c.holds(0.9999955)
    assert c.shown(1.0) == "1" and Cond("x", "<=", 0.1).shown(0.123456) == "0.1235"
    assert Cond("x", "<", 0.5).shown(0.49999) == "0.49999" and Cond("ok", "true").shown(True) == "True"


def test_a_null_control_that_passes_makes_the_claim_untestable():
    """Every trained claim's control is judged by the same rule beside it: a null that also reaches reproduced
    means the rule cannot tell a trained model from it; a positive control that misses the effect means a
    negative could not have been shown."""
    rule = Rule(why="t", reproduced=conds(("acc", ">=", 0.9)), trained=True)
    claim = Claim("000/test-control", "s", "w", "p", rule, lambda: None, section="x")

    def seeded(acc, lo, hi, control=None):
        return Measurement({"acc": acc}, f"acc {acc}", SEEDED, {"acc": (lo, hi)}, control=control)

    null_low = core.Control("null", "the same model untrained", seeded(0.25, 0.2, 0.3))
    v = judge(claim, seeded(0.95, 0.92, 0.98, null_low))
    assert v.status == "reproduced" and "untrained" in v.control and "not reproduced" in v.control
    null_high = core.Control("null", "the same model untrained", seeded(0.95, 0.93, 0.97))
    v = judge(claim, seeded(0.95, 0.92, 0.98, null_high))
    assert v.status == "not testable here" and "cannot tell" in v.reason
    pos_missing = core.Control("positive", "row D, where the effect must show", seeded(0.3, 0.2, 0.4))
    v = judge(claim, seeded(0.3, 0.2, 0.4, pos_missing))
    assert v.status == "not testable here" and "could not have shown" in v.reason
    pos_shown = core.Control("positive", "row D, where the effect must show", seeded(0.97, 0.95, 0.99))
    assert judge(claim, seeded(0.3, 0.2, 0.4, pos_shown)).status == "not reproduced"
    with pytest.raises(core.ClaimError, match="null"):
        core.Control("nul", "x", seeded(0.1, 0.0, 0.2))


def test_a_premise_read_over_its_interval_decides_in_neither_direction_while_undecided():
    """Rule.premise_over_interval (referee-N on 002/AppD-L-independence): a conditional sentence whose premise
    interval straddles its bar reads inconclusive whichever way the statement's numbers point; a premise failing
    over its whole interval reads not testable here, one holding over it lets the statement decide. Without the
    option the premise is read at its point value (every earlier rule, whose fingerprint is unchanged)."""
    kw = dict(why="t", reproduced=conds(("acc", ">=", 0.9)), testable=conds(("share", ">=", 0.95)),
              untestable_why="premise fails", trained=True)  # fmt: skip
    over = Claim("000/test-premise", "s", "w", "p", Rule(**kw, premise_over_interval=True), lambda: None, section="x")
    point = Claim("000/test-premise-point", "s", "w", "p", Rule(**kw), lambda: None, section="x")

    def seeded(acc, share, share_ci):
        return Measurement(
            {"acc": acc, "share": share}, "x", SEEDED, {"acc": (acc - 0.01, acc + 0.01), "share": share_ci}
        )

    straddling = (0.93, 0.97)
    for acc, point_status in ((0.5, "not reproduced"), (0.95, "reproduced")):
        v = judge(over, seeded(acc, 0.96, straddling))
        assert v.status == "inconclusive" and "premise is not decided" in v.reason and point_status in v.reason
        assert "straddles share ≥ 0.95" in v.reason
        assert judge(point, seeded(acc, 0.96, straddling)).status == point_status  # the point reading lets it decide
    assert judge(over, seeded(0.5, 0.9, (0.88, 0.92))).status == "not testable here"
    assert judge(over, seeded(0.5, 0.97, (0.96, 0.98))).status == "not reproduced"
    assert judge(over, seeded(0.95, 0.97, (0.96, 0.98))).status == "reproduced"
    assert "each over its whole 95 % interval" in over.rule.text() and "whole 95 % interval;" not in point.rule.text()
    # the fingerprint reads the option where set, and a rule at the default keeps its repr
    assert over.rule.key() != point.rule.key() and point.rule.key() == repr(point.rule)
    with pytest.raises(core.ClaimError, match="has none"):
        Rule(why="t", reproduced=conds(("acc", ">=", 0.9)), premise_over_interval=True)


def test_a_part_the_measurement_leaves_undecided_is_not_settled_by_more_seeds():
    """A NaN (a cell stopped on its step cap, a part not run) reads inconclusive, and the reason does not send the
    reader to more seeds of the same runs (referee-J on 000/Table1-rope): it names the part undecided in the
    measurement itself; where another part straddles its bar, more seeds may settle that one."""
    rule = Rule(why="t", reproduced=conds(("a", ">=", 0.9), ("b", ">=", 0.9)), trained=True)
    claim = Claim("000/test-nan", "s", "w", "p", rule, lambda: None, section="x")

    def seeded(a, a_ci, b):
        return Measurement({"a": a, "b": b}, "x", SEEDED, {"a": a_ci})

    v = judge(claim, seeded(float("nan"), (float("nan"), float("nan")), 0.95))
    assert v.status == "inconclusive" and "a is undecided in the measurement itself" in v.reason
    assert "would not settle the undecided part" in v.reason and "may settle" not in v.reason
    v = judge(claim, seeded(0.9, (0.85, 0.95), float("nan")))
    assert v.status == "inconclusive" and "straddles a ≥ 0.9" in v.reason and "may settle the straddling" in v.reason
    v = judge(claim, seeded(0.9, (0.85, 0.95), 0.95))
    assert v.status == "inconclusive" and v.reason.endswith("more seeds would settle it")


def test_a_null_that_reaches_partially_makes_a_partially_claim_untestable():
    """A null reaching the claim's partial status passes the part that holds: the rule cannot tell that part apart
    (Chapter 4's untrained twins are sparse too); a null reaching only partially leaves a reproduced claim standing."""
    rule = Rule(
        why="t", reproduced=conds(("a", ">=", 0.9), ("b", ">=", 0.9)), partially=conds(("a", ">=", 0.9)), trained=True
    )
    claim = Claim("000/test-control-partial", "s", "w", "p", rule, lambda: None, section="x")

    def seeded(a, b, control=None):
        return Measurement(
            {"a": a, "b": b}, "x", SEEDED, {"a": (a - 0.01, a + 0.01), "b": (b - 0.01, b + 0.01)}, control=control
        )

    twin = core.Control("null", "the untrained twin", seeded(0.95, 0.1))
    v = judge(claim, seeded(0.95, 0.2, twin))
    assert v.status == "not testable here" and "also reaches partially" in v.reason
    assert v.control_kind == "null" and v.control_status == "partially"
    assert judge(claim, seeded(0.95, 0.95, twin)).status == "reproduced"


def test_the_control_audit_names_a_trained_claim_without_a_control_or_passed_by_its_null():
    """claims.core.audit_controls, which `check-outputs` runs over the whole scorecard after the book's
    execution: a judged trained claim must show a control, and its null must not reach its verdict."""
    trained = next(c for c in core.REGISTRY.values() if c.rule.trained)
    exact = next(c for c in core.REGISTRY.values() if not c.rule.trained)
    base = dict(statement="s", where="w", printed="p", ours="o", rule="r", checks=[], evidence=None)
    bare = core.Verdict(trained.id, status="inconclusive", **base)
    assert core.audit_controls({trained.id: bare}) == [
        f"{trained.id} reads inconclusive with no control measured beside it (Control in its measurement)"
    ]
    ok = replace(bare, status="reproduced", control="null: …", control_kind="null", control_status="not reproduced")
    passed = replace(ok, control_status="reproduced")
    assert core.audit_controls({trained.id: ok}) == []
    assert any("while its null control reads reproduced" in p for p in core.audit_controls({trained.id: passed}))
    # a null that reaches reproduced fails the audit unless its claim is declared (and then reads not testable here)
    untestable = replace(passed, status="not testable here")
    assert "its null control reaches reproduced" in core.audit_controls({trained.id: untestable})[0]
    assert core.audit_controls({"004/Fig4-count": replace(untestable, claim_id="004/Fig4-count")}) == []
    assert "004/Fig4-count" in core.NULL_PASSES
    wrong = replace(untestable, claim_id="004/Fig4-count", status="inconclusive")
    assert any("declared in NULL_PASSES" in p for p in core.audit_controls({"004/Fig4-count": wrong}))
    # not run, or an exact claim, needs no control
    assert core.audit_controls({trained.id: replace(bare, status="not run")}) == []
    assert core.audit_controls({exact.id: replace(bare, claim_id=exact.id, status="reproduced")}) == []


def test_controls_combine_across_seeds_and_survive_a_record():
    rule = Rule(why="t", reproduced=conds(("acc", ">=", 0.9)), trained=True)
    claim = Claim("000/test-control-seeds", "s", "w", "p", rule, lambda: None, section="x")
    one = Evidence("ci", "cpu", 1, "n", "live")
    ms = [
        Measurement(
            {"acc": a}, "x", one, control=core.Control("null", "untrained", Measurement({"acc": 0.25}, "x", one))
        )
        for a in (0.95, 0.96, 0.97)
    ]
    m = core.across_seeds(ms)
    assert m.control is not None and m.control.measurement.evidence.seeds == 3
    again = core.measurement_from_record(core.measurement_record(m))
    assert judge(claim, again).control == judge(claim, m).control
    assert judge(claim, m).status == "reproduced"


def test_quote_setting_and_analogue_show_on_the_verdict():
    rule = Rule(why="t", reproduced=conds(("acc", ">=", 0.9)))
    with pytest.raises(core.ClaimError, match="analogue"):
        Claim("004/test-analogue", "s", "w", "p", rule, lambda: None, section="x", analogue=True)
    claim = Claim(
        "004/test-analogue",
        "s",
        "w",
        "p",
        rule,
        lambda: None,
        section="x",
        quote="Mamba shows a U-shaped recall curve.",
        setting="a 4-layer Mamba trained here stands in for the pretrained Falcon-Mamba-7B",
        analogue=True,
    )
    v = judge(claim, Measurement({"acc": 0.95}, "x", Evidence.exact("n")))
    md = v._repr_markdown_()
    assert "“Mamba shows a U-shaped recall curve.”" in md and "analogue — " in md and "Falcon" in md
    assert core.badge("reproduced") in md and "✅" not in md


def _normalise(text: str) -> str:
    """Whitespace collapsed and typographic quotes and dashes folded, so a sentence copied from the paper's text
    matches however the text file broke its lines."""
    import re

    for a, b in (("“", '"'), ("”", '"'), ("’", "'"), ("‘", "'"), ("–", "-"), ("—", "-"), ("ﬁ", "fi"), ("ﬂ", "fl")):
        text = text.replace(a, b)
    return re.sub(r"\s+", " ", text).strip()


@pytest.mark.skipif(
    not PAPERS_DIR.is_dir(),
    reason="set MAMBA_RECALL_PAPERS to a folder with the papers' text (one NNN_*.txt per paper) to check the quotes",
)
@pytest.mark.parametrize("paper", ["000", "001", "002", "003", "004"])
def test_every_quote_is_the_papers_own_sentence(paper):
    """A claim quotes the sentence of the paper it tests, verbatim: each quote (split at " … " where it joins two
    pieces) occurs in that paper's text, whitespace aside."""
    (path,) = PAPERS_DIR.glob(f"{paper}_*.txt")
    text = _normalise(path.read_text())
    for c in core.claims_of(paper):
        for piece in filter(None, (p.strip() for p in c.quote.split(" … "))):
            assert _normalise(piece) in text, f"{c.id}: quote not found verbatim in paper {paper}: {piece!r}"


def test_check_names_the_inputs_a_claim_takes():
    """``check`` with inputs that do not fit a claim's measurement says what it takes and where the call is shown,
    instead of a bare TypeError from inside the measurement."""
    with pytest.raises(core.ClaimError, match=r"missing a required argument: 'exact'; it takes measure\(exact\)"):
        claims.check("001/Delta1", record=False)
    assert "01_worked_example.ipynb shows the call" in core.inputs_of("001/Delta1")


# ------------------------------------------------------------------ a claim that declares the evidence it reads (issue 54)
def test_a_claim_that_declares_its_evidence_reads_it_itself(tmp_path, monkeypatch):
    """``Claim.reads``: check(id) loads the declared evidence and gives it to the measurement first; other evidence
    is taken only by name (``evidence=``) and never recorded; a missing bundle reads *not run* naming the command."""
    from mamba_recall.claims import claim_evidence
    from mamba_recall.claims.core import REGISTRY, ClaimError, Evidence, Measurement, measure_claim
    from mamba_recall.results import BundleMissing

    seen = []

    def measure(bundle, extra=1):
        seen.append((bundle, extra))
        return Measurement({"x": bundle["x"] * extra}, "x", Evidence.exact("test"))

    loaded = {"x": 2.0}
    rule = core.Rule(why="test", reproduced=core.conds(("x", ">=", 1)))
    claim = core.Claim("book/ReadsTest", "s", "w", "p", rule, measure, "00_test/page", reads=lambda: loaded)
    monkeypatch.setitem(REGISTRY, claim.id, claim)
    check = claims.check
    v = check(claim.id, 3, record=False)
    assert v.status == "reproduced" and seen[-1] == (loaded, 3)
    assert claim_evidence(claim.id) is loaded
    assert measure_claim(claim.id, evidence={"x": 0.5}).values == {"x": 0.5}
    with pytest.raises(ClaimError, match="record=False"):
        check(claim.id, evidence={"x": 0.5})
    with pytest.raises(ClaimError, match="takes"):  # the evidence is not the caller's to pass
        check(claim.id, loaded, 3, 4, record=False)

    def missing():
        raise BundleMissing("no bundle x_ci; make it with: python -m mamba_recall grid x --preset ci")

    monkeypatch.setitem(REGISTRY, claim.id, replace(claim, reads=missing))
    v = check(claim.id, record=False)
    assert v.status == "not run" and "grid x --preset ci" in v.reason

    plain = replace(claim, id="book/ReadsNone", reads=None)
    monkeypatch.setitem(REGISTRY, plain.id, plain)
    with pytest.raises(ClaimError, match="declares no evidence"):
        check(plain.id, evidence=loaded, record=False)
    with pytest.raises(ClaimError, match="declares no evidence"):
        claim_evidence(plain.id)
    with pytest.raises(ClaimError, match="no measurement"):
        core.Claim("book/ReadsBad", "s", "w", "p", rule, None, not_run="x", reads="ch3_keep_nth")


def test_every_declared_evidence_loads_and_its_page_passes_none():
    """Every claim that declares its evidence loads it from the committed results, and no notebook passes it to
    check() (the page shows what the verdict read: claim_evidence, or the same evidence() call)."""
    import json
    import re

    from mamba_recall.claims import claim_evidence

    declared = [c for c in claims.claims_of() if c.reads is not None]
    assert len(declared) >= 20
    for c in declared:
        assert claim_evidence(c.id) is not None
    book = Path(__file__).resolve().parents[2] / "book"
    for nb in book.rglob("*.ipynb"):
        src = "\n".join("".join(cell["source"]) for cell in json.loads(nb.read_text())["cells"])
        for c in declared:
            for call in re.finditer(r"check\(\s*\"" + re.escape(c.id) + r"\"([^\n]*)", src):
                assert "evidence=" not in call.group(1) or "record=False" in call.group(1), (nb, call.group(0))


def test_a_declared_evidence_is_never_taken_positionally_nor_through_check_seeds(monkeypatch):
    """A committed bundle passed positionally to a claim that reads its own would bind to another parameter (or
    be read twice): refused, as is check_seeds for such a claim; a call that does not fit is refused before any
    evidence loads (so a missing bundle cannot hide it as *not run*)."""
    from mamba_recall.claims.core import REGISTRY, ClaimError, check_seeds
    from mamba_recall.results import Bundle, BundleMissing

    def measure(bundle, untrained=None):
        return Measurement({"x": 1.0}, "x", Evidence.exact("test"))

    def missing():
        raise BundleMissing("no bundle")

    rule = core.Rule(why="test", reproduced=core.conds(("x", ">=", 1)))
    claim = core.Claim("book/ReadsBundle", "s", "w", "p", rule, measure, "00_test/page", reads=missing)
    monkeypatch.setitem(REGISTRY, claim.id, claim)
    b = Bundle.__new__(Bundle)
    with pytest.raises(ClaimError, match="reads its declared evidence itself"):
        claims.check(claim.id, b, record=False)
    with pytest.raises(ClaimError, match="takes"):  # too many inputs: refused, not "not run"
        claims.check(claim.id, 1, 2, record=False)
    assert claims.check(claim.id, 1, record=False).status == "not run"
    with pytest.raises(ClaimError, match="call check"):
        check_seeds(claim.id, [(1,)])


def test_check_seeds_measures_each_seed_as_check_does(monkeypatch):
    """check_seeds goes through measure_claim: inputs that do not fit a seed's measurement are refused naming what it
    takes (not a TypeError from inside it), and the first seed that reads *not run* makes the verdict *not run*
    with that seed's reason (the later seeds are not measured)."""
    from mamba_recall.claims.core import REGISTRY, ClaimError, NotRun, check_seeds

    measured = []

    def measure(value):
        measured.append(value)
        if value is None:
            raise NotRun("seed without its run")
        return Measurement({"x": float(value)}, "x", Evidence.exact("test"))

    rule = core.Rule(why="test", reproduced=core.conds(("x", ">=", 1)))
    claim = core.Claim("book/Seeds", "s", "w", "p", rule, measure, "00_test/page")
    monkeypatch.setitem(REGISTRY, claim.id, claim)
    with pytest.raises(ClaimError, match=r"measure\(value\)"):
        check_seeds(claim.id, [(1,), (1, 2)])
    measured.clear()
    v = check_seeds(claim.id, [(1,), (None,), (3,)], ["seed 0", "seed 1", "seed 2"])
    assert v.status == "not run" and "seed without its run" in v.reason and measured == [1, None]
    assert check_seeds(claim.id, [(1,), (2,), (3,)], ["seed 0", "seed 1", "seed 2"]).status != "not run"
