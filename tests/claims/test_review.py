"""The open review (:mod:`mamba_recall.claims.review`): every claim has a referee's entry for its current rule, the
appendix page is the data's, and each kind of mistake the reviews found is checked over the whole registry
(``audit_kinds``: ``check-outputs`` runs it on the book pass's verdicts; here on verdicts made to offend)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mamba_recall.claims import REGISTRY, Verdict
from mamba_recall.claims import review as R


def test_every_claim_has_a_review_entry_for_its_current_rule():
    stale = R.stale_reviews()
    assert not stale, "\n".join(stale[:20]) + f"\n({len(stale)} in all: referee them, results/review/)"


def test_the_appendix_page_is_the_review_data():
    done = subprocess.run([sys.executable, "-m", "mamba_recall.claims.review"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    page = R.page_path().read_text(encoding="utf-8")
    for cid, e in R.load_reviews().items():
        if e.objections:
            assert f"### {cid}:" in page, cid


def test_every_objection_is_answered_and_every_signature_says_why():
    reviews = R.load_reviews()
    assert len(reviews) == len(REGISTRY)
    for e in reviews.values():
        assert e.decision == "signed" and e.note.strip() or e.objections, e.claim_id
        for o in e.objections:
            assert o.answer.action in R.ACTIONS and o.answer.why.strip(), e.claim_id


def test_errata_carry_a_root_cause():
    """Errata are counted by cause: every claim whose rule can read "erratum confirmed" names its cause."""
    missing = [cid for cid, c in REGISTRY.items() if c.rule.erratum and not c.cause]
    assert not missing, missing


def _verdict(cid: str, status: str, **kw) -> Verdict:
    c = REGISTRY[cid]
    base = dict(claim_id=cid, statement=c.statement, where=c.where, printed=c.printed, status=status, ours="",
                rule=c.rule.text(), checks=[], evidence=None)  # fmt: skip
    return Verdict(**{**base, **kw})


def _claim_with(pred) -> str:
    return next(cid for cid, c in REGISTRY.items() if pred(c))


def test_the_audit_flags_a_partial_whose_printed_statement_is_refuted_beyond_its_interval():
    cid = _claim_with(lambda c: c.rule.partially and any(x.value is not None for x in c.rule.reproduced))
    cond = next(x for x in REGISTRY[cid].rule.reproduced if x.value is not None)
    bad = cond.value - 1.0 if cond.op in (">=", ">") else cond.value + 1.0
    refuted = _verdict(cid, "partially", intervals={cond.metric: (bad - 0.1, bad + 0.1)})
    straddling = _verdict(cid, "partially", intervals={cond.metric: (cond.value - 1.0, cond.value + 1.0)})
    assert any("never partially" in line for line in R.audit_kinds({cid: refuted}))
    assert not any("never partially" in line for line in R.audit_kinds({cid: straddling}))


def test_the_audit_flags_a_trained_failure_whose_model_is_not_shown_to_learn():
    cid = _claim_with(lambda c: c.rule.trained and not c.rule.testable and not c.analogue)
    null = _verdict(cid, "not reproduced", control_kind="null", control_status="not reproduced")
    positive = _verdict(cid, "not reproduced", control_kind="positive", control_status="reproduced")
    assert R.audit_kinds({cid: null}) and not R.audit_kinds({cid: positive})


def test_the_audit_flags_an_erratum_without_its_cause(monkeypatch):
    cid = _claim_with(lambda c: c.rule.erratum)
    import dataclasses

    monkeypatch.setitem(REGISTRY, cid, dataclasses.replace(REGISTRY[cid], cause=""))
    assert any("root cause" in line for line in R.audit_kinds({cid: _verdict(cid, "erratum confirmed")}))


def test_a_verdict_that_moved_after_its_review_is_named():
    cid, e = next(iter(R.load_reviews().items()))
    other = next(s for s in ("reproduced", "not reproduced") if s != e.status_now)
    assert R.audit_reviews({cid: _verdict(cid, other)}) and not R.audit_reviews({cid: _verdict(cid, e.status_now)})


def test_a_malformed_review_file_names_the_file_and_the_entry(tmp_path):
    (tmp_path / "000.json").write_text(
        json.dumps({"entries": [{"claim_id": "000/Alg1", "decision": "objection", "status_reviewed": "reproduced",
                                 "rule_fingerprint": "0" * 16, "kind": "judge", "objection": "x"}]}),
        encoding="utf-8",
    )  # fmt: skip
    with pytest.raises(R.ReviewError, match=r"000.json, entry 000/Alg1: an objection has an answer"):
        R.load_reviews(tmp_path)
    (tmp_path / "000.json").write_text("{", encoding="utf-8")
    with pytest.raises(R.ReviewError, match="not valid JSON"):
        R.load_reviews(tmp_path)


def test_every_reading_names_its_referee_and_its_objections_their_answers(tmp_path):
    """Each committed entry names the referee who read it, and tools/review_assemble.py attributes an entry that
    does not name its own to its round's referee (round 1's when round 2 did not read it again), so its objection
    is matched to the book's answer to that referee (a None here had shown round 2's referee on the page and
    "not yet answered" for an answered objection)."""
    import importlib.util
    from pathlib import Path

    for path in sorted(R.REVIEW_DIR.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert all(e.get("referee") for e in data["entries"]), path.name

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("review_assemble", root / "tools" / "review_assemble.py")
    assemble = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(assemble)
    cid = next(c for c, claim in REGISTRY.items() if claim.paper == "004")
    raw = tmp_path / "raw"
    for rnd, body in (
        ("round1", {"referee": "referee-E", "entries": [{"claim_id": cid, "status_reviewed": "inconclusive",
                                                          "decision": "objection", "kind": "other", "objection": "o"}]}),
        ("round2", {"referee": "referee-I", "entries": []}),
        ("answers", {cid: [{"by": "referee-E", "kind": "other", "objection": "o",
                            "answer": {"action": "kept", "why": "because", "status_after": "inconclusive"}}]}),
    ):  # fmt: skip
        (raw / rnd).mkdir(parents=True)
        (raw / rnd / "004.json").write_text(json.dumps(body), encoding="utf-8")
    assemble.assemble(raw, {}, tmp_path / "out")
    (entry,) = json.loads((tmp_path / "out" / "004.json").read_text(encoding="utf-8"))["entries"]
    assert entry["referee"] == "referee-E" and entry["answer"]["action"] == "kept"
