"""The open review: every verdict signed, or objected to, by a referee who did not write its rule.

Each paper's claims were read by a referee (a reviewer given only the paper's text, the claims' records: quote,
rule, numbers, control, evidence, and the bundles they read; never the library's code or the authors' notes), who
signed each verdict or objected to it with numbers. The objections and the book's answers (the verdict changed, or
kept and why, with numbers, or still open with what would settle it) are data, committed in
``results/review/<paper>.json``, and shown in the book's appendix "Open review" (:func:`review_page`) and in each
claim's record (:func:`review_line`).

An entry belongs to the rule it reviewed: it records the claim's :func:`rule_fingerprint` (everything that decides
the verdict apart from the evidence) and the status it read. When a claim's rule changes, or its verdict moves for
any reason, the entry no longer matches (:func:`stale_reviews`, :func:`audit_reviews`) and the claim must be
refereed again; ``tests/claims/test_review.py`` and ``check-outputs`` (on the book pass's verdicts) fail until it is.

File layout (``results/review/<paper>.json``)::

    {"paper": "000", "referee": "referee-B", "date": "2026-12-04", "reviewed_at": "<commit the records came from>",
     "brief": "<what the referee was given and asked>",
     "entries": [{"claim_id": "000/Alg1", "rule_fingerprint": "<16 hex>", "status_reviewed": "reproduced",
                  "decision": "signed", "note": "..."},
                 {"claim_id": ..., "decision": "objection", "kind": "judge", "objection": "...",
                  "proposed_status": "...", "settle": "...",
                  "answer": {"action": "changed" | "kept" | "open", "why": "...", "status_after": "..."}}]}
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..atomic import replace_file
from ..paths import RESULTS_DIR
from .core import REGISTRY, STATUSES, Claim, Verdict

#: Where the review's files are: one per paper.
REVIEW_DIR = RESULTS_DIR / "review"
DECISIONS = ("signed", "objection")
#: The kinds of mistake a referee names (issue 51's list, plus two of the referees' own).
KINDS = (
    "rule-not-the-sentence",
    "partial-other-proposition",
    "partial-coverage",
    "fails-without-positive-control",
    "analogue-without-positive-control",
    "bar-mismatch",
    "biased-statistic",
    "judge",
    "errata-by-symptom",
    "sentence-misread",
    "evidence-insufficient",
    "contradicted-by-data",
    "other",
)
ACTIONS = ("changed", "kept", "open")


class ReviewError(ValueError):
    """A review file is malformed (names the file, the entry and the fix)."""


def rule_fingerprint(claim: Claim) -> str:
    """16 hex digits of sha256 over everything that decides a claim's verdict apart from the evidence: its
    statement, place, printed numbers, section, declared rule, "not run" text and the measurement feeding the rule
    (``tests/data/registry_fingerprint.json`` holds the same per claim)."""
    body = {
        "statement": claim.statement,
        "where": claim.where,
        "printed": claim.printed,
        "section": claim.section,
        "rule": claim.rule.key(),
        "not_run": claim.not_run or "",
        "measure": None if claim.measure is None else claim.measure.__name__,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Answer:
    action: str  # changed | kept | open
    why: str
    status_after: str = ""  # the status after the answer (changed: the new one)


@dataclass(frozen=True)
class Objection:
    by: str  # who objected: the referee, or an earlier review round
    kind: str
    text: str
    proposed_status: str
    settle: str
    answer: Answer


@dataclass(frozen=True)
class ReviewEntry:
    claim_id: str
    referee: str
    rule_fingerprint: str
    status_reviewed: str
    decision: str  # signed | objection (the referee's own reading; earlier rounds' objections may come with it)
    note: str = ""
    objections: tuple[Objection, ...] = ()
    paper_file: str = field(default="", compare=False)

    @property
    def status_now(self) -> str:
        """The status this review leaves: the last changed answer's, else the one reviewed."""
        changed = [o.answer.status_after for o in self.objections if o.answer.action == "changed"]
        return changed[-1] if changed else self.status_reviewed


def _objection(raw: dict, by: str, need) -> Objection:
    need(raw.get("kind") in KINDS, f"an objection names its kind, one of {KINDS}")
    need(bool(str(raw.get("objection", "")).strip()), "an objection says what is wrong")
    a = raw.get("answer")
    need(isinstance(a, dict), "an objection has an answer (changed, kept or open, and why)")
    need(a.get("action") in ACTIONS, f"answer.action must be one of {ACTIONS}")
    need(bool(str(a.get("why", "")).strip()), "an answer says why, with numbers")
    if a["action"] == "changed":
        need(a.get("status_after") in STATUSES, "a changed verdict names its status_after")
    return Objection(
        by=raw.get("by") or by,
        kind=raw["kind"],
        text=raw["objection"],
        proposed_status=raw.get("proposed_status", ""),
        settle=raw.get("settle", ""),
        answer=Answer(a["action"], a["why"], a.get("status_after", "")),
    )


def _entry(raw: dict, referee: str, where: str) -> ReviewEntry:
    def need(cond: bool, what: str):
        if not cond:
            raise ReviewError(f"{where}, entry {raw.get('claim_id', '?')}: {what}; fix the entry.")

    need(isinstance(raw.get("claim_id"), str), "no claim_id")
    need(raw.get("decision") in DECISIONS, f"decision must be one of {DECISIONS}")
    need(raw.get("status_reviewed") in STATUSES, f"status_reviewed must be one of {STATUSES}")
    need(isinstance(raw.get("rule_fingerprint"), str) and len(raw["rule_fingerprint"]) == 16, "no rule_fingerprint")
    by = raw.get("referee") or referee
    objections = []
    if raw["decision"] == "objection":
        objections.append(_objection(raw, by, need))
    else:
        need(bool(str(raw.get("note", "")).strip()), "a signature says why, in a sentence with a number")
    for extra in raw.get("earlier_objections", []):  # an earlier round's objection, answered here too
        objections.append(_objection(extra, extra.get("by", ""), need))
    return ReviewEntry(
        claim_id=raw["claim_id"],
        referee=by,
        rule_fingerprint=raw["rule_fingerprint"],
        status_reviewed=raw["status_reviewed"],
        decision=raw["decision"],
        note=raw.get("note", ""),
        objections=tuple(objections),
        paper_file=where,
    )


def load_review_files(directory: Path | None = None) -> list[dict]:
    """The review files as written (``results/review/*.json``), each checked to be JSON with entries."""
    folder = Path(REVIEW_DIR if directory is None else directory)
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ReviewError(f"{path} is not valid JSON ({exc}); restore it with git checkout {path}.") from None
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            raise ReviewError(f"{path} has no list of entries; restore it with git checkout {path}.")
        data["_path"] = str(path)
        out.append(data)
    return out


def load_reviews(directory: Path | None = None) -> dict[str, ReviewEntry]:
    """Claim id -> its review entry, from every file; ReviewError on a malformed entry or a claim reviewed twice."""
    out: dict[str, ReviewEntry] = {}
    for data in load_review_files(directory):
        for raw in data["entries"]:
            e = _entry(raw, data.get("referee", ""), Path(data["_path"]).name)
            if e.claim_id in out:
                raise ReviewError(f"{e.claim_id} is reviewed twice ({out[e.claim_id].paper_file}, {e.paper_file}).")
            out[e.claim_id] = e
    return out


def stale_reviews(reviews: dict[str, ReviewEntry] | None = None) -> list[str]:
    """One line per registered claim without a review of its current rule: no entry, or an entry whose rule
    fingerprint is not the claim's now (its rule changed after the review: referee it again); and per entry of a
    claim that is no longer registered."""
    reviews = load_reviews() if reviews is None else reviews
    out = []
    for cid, claim in REGISTRY.items():
        e = reviews.get(cid)
        if e is None:
            out.append(f"{cid}: no review entry (results/review/{claim.paper}.json)")
        elif e.rule_fingerprint != rule_fingerprint(claim):
            out.append(f"{cid}: reviewed under another rule ({e.rule_fingerprint}, now {rule_fingerprint(claim)})")
    out += [f"{cid}: reviewed but not a registered claim" for cid in sorted(set(reviews) - set(REGISTRY))]
    return out


def audit_reviews(verdicts: dict[str, Verdict], reviews: dict[str, ReviewEntry] | None = None) -> list[str]:
    """One line per verdict whose status is not the one its review left (:attr:`ReviewEntry.status_now`): the
    evidence or the rule moved it after the referee read it, so it must be refereed again."""
    reviews = load_reviews() if reviews is None else reviews
    out = []
    for cid, v in verdicts.items():
        e = reviews.get(cid)
        if e is not None and v.status != e.status_now:
            out.append(f"{cid}: reads {v.status}, its review left it {e.status_now}; referee it again")
    return out


def anchor(claim_id: str) -> str:
    """The appendix's label of a claim's objections (``review-002-Fig6ab``), which its scorecard record links to."""
    return "review-" + claim_id.replace("/", "-")


def review_line(claim_id: str, reviews: dict[str, ReviewEntry] | None = None) -> str:
    """One line for a claim's record: who signed it, or the objections and their answers (a verdict kept against
    an objection says so)."""
    reviews = load_reviews() if reviews is None else reviews
    e = reviews.get(claim_id)
    if e is None:
        return "Open review: not yet refereed."
    said = {"changed": "verdict changed to {}", "kept": "verdict kept against it", "open": "still open"}
    parts = [
        f"{o.by} objected ({o.kind}): " + said[o.answer.action].format(o.answer.status_after) for o in e.objections
    ]
    head = f"signed by {e.referee}" if e.decision == "signed" else ""
    return "Open review: " + "; ".join([p for p in [head, *parts] if p]) + "."


def _md(text: str) -> str:
    """One line of Markdown: whitespace folded, ``|`` escaped (table cells), and a break opportunity (``<wbr>``)
    after the ``/``, ``_`` and ``-`` of a long token (a file path, a metric name), which would otherwise make the page
    wider than a 400 px screen; a word is never split between letters."""
    words = []
    for w in str(text).split():
        if len(w) > 24:
            w = re.sub(r"([/_\-])", r"\1<wbr>", w)
        words.append(w)
    return " ".join(words).replace("|", "\\|")


def review_summary(reviews: dict[str, ReviewEntry]) -> list[dict]:
    """Per chapter: claims reviewed, signed by their referee, claims with objections, objections and how they were
    answered."""
    rows = {}
    for cid, e in reviews.items():
        claim = REGISTRY.get(cid)
        ch = claim.chapter if claim is not None else -1
        r = rows.setdefault(ch, {"chapter": ch, "claims": 0, "signed": 0, "objections": 0, "changed": 0,
                                 "kept": 0, "open": 0})  # fmt: skip
        r["claims"] += 1
        r["signed"] += e.decision == "signed"
        for o in e.objections:
            r["objections"] += 1
            r[o.answer.action] += 1
    return [rows[k] for k in sorted(rows)]


def review_page(reviews: dict[str, ReviewEntry] | None = None) -> str:
    """The appendix's generated part: the counts per chapter, then every objection with its answer, then the
    signatures, chapter by chapter."""
    reviews = load_reviews() if reviews is None else reviews
    lines = [
        "| chapter | claims | signed by their referee | objections | changed | kept | open |",
        "|---|---|---|---|---|---|---|",
    ]
    total = {k: 0 for k in ("claims", "signed", "objections", "changed", "kept", "open")}
    for r in review_summary(reviews):
        lines.append(
            f"| {r['chapter']} | {r['claims']} | {r['signed']} | {r['objections']} | {r['changed']} | {r['kept']} "
            f"| {r['open']} |"
        )
        for k in total:
            total[k] += r[k]
    lines.append(
        f"| **all** | **{total['claims']}** | **{total['signed']}** | **{total['objections']}** | "
        f"**{total['changed']}** | **{total['kept']}** | **{total['open']}** |"
    )
    by_chapter: dict[int, list[ReviewEntry]] = {}
    for cid, e in reviews.items():
        claim = REGISTRY.get(cid)
        by_chapter.setdefault(claim.chapter if claim else -1, []).append(e)
    for ch in sorted(by_chapter):
        entries = by_chapter[ch]
        earlier = "review of d645e6c (issue 51)"
        named = {e.referee for e in entries} | {o.by for e in entries for o in e.objections if o.by != earlier}
        referees = ", ".join(sorted(named))
        lines += ["", f"## Chapter {ch} (referees: {referees})", ""]
        for e in (e for e in entries if e.objections):
            after = e.status_now
            verdict = e.status_reviewed if after == e.status_reviewed else f"{e.status_reviewed} → {after}"
            lines += [f"({anchor(e.claim_id)})=", f"### {e.claim_id}: {verdict}", ""]
            if e.decision == "signed":
                lines.append(f"- **Signed by {e.referee}:** {_md(e.note)}")
            for o in e.objections:
                a = o.answer
                lines.append(
                    f"- **Objection by {o.by}** ({o.kind}; would read *{_md(o.proposed_status) or '—'}*): {_md(o.text)}"
                )
                if o.settle:
                    lines.append(f"  - *What would settle it:* {_md(o.settle)}")
                lines.append(f"  - **Answer: {a.action}.** {_md(a.why)}")
            lines.append("")
        signed = [e for e in entries if e.decision == "signed" and not e.objections]
        if signed:
            lines += ["**Signed:**", "", "| claim | verdict | the referee's note |", "|---|---|---|"]
            lines += [f"| {e.claim_id} | {e.status_reviewed} | {_md(e.note)} |" for e in signed]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the kinds of mistake, over every claim


def _refuted_beyond_interval(cond, interval) -> bool:
    """Whether a numeric condition fails over its metric's whole 95 % interval (both ends on the failing side)."""
    if cond.value is None or interval is None:
        return False
    lo, hi = interval
    return not cond.holds(lo) and not cond.holds(hi)


@dataclass(frozen=True)
class Offence:
    """One verdict of a kind the open review forbids: its claim, the objection kind it is published under
    (:data:`KINDS`) and the line that says what is wrong."""

    claim_id: str
    kind: str
    text: str


def offences(verdicts: dict[str, Verdict]) -> list[Offence]:
    """The open review's kinds of mistake, checked over every recorded verdict:

    * a *partially* whose printed statement (a ``reproduced`` condition) is refuted beyond its interval: that reads
      not reproduced (or erratum), never partially;
    * an *erratum confirmed* without a root cause (``Claim.cause``): errata are counted by cause;
    * a trained *not reproduced* whose failing model is not shown to learn where it should: neither a positive
      control that reproduced nor a declared learning gate (the rule's ``testable`` conditions);
    * an analogue negative (*not reproduced* on an analogue) without a positive control that shows the effect.
    """
    out = []
    for cid, v in verdicts.items():
        claim = REGISTRY.get(cid)
        if claim is None:
            continue
        if v.status == "partially":
            for cond in claim.rule.reproduced:
                if _refuted_beyond_interval(cond, v.intervals.get(cond.metric)):
                    lo, hi = v.intervals[cond.metric]
                    why = (
                        f"{cid}: partially, but its printed statement {cond.text()} is refuted over its whole "
                        f"interval [{lo:.4g}, {hi:.4g}]: that is not reproduced (or an erratum), never partially"
                    )
                    out.append(Offence(cid, "partial-other-proposition", why))
        if v.status == "erratum confirmed" and not claim.cause:
            out.append(
                Offence(cid, "errata-by-symptom", f"{cid}: erratum confirmed without a root cause (Claim.cause)")
            )
        if v.status == "not reproduced" and (claim.rule.trained or claim.analogue):
            # the failing model learned where it should: a positive control that shows the effect, or the rule's
            # declared learning gate (its ``testable`` conditions, which held, or the verdict would read not
            # testable here)
            positive = (v.control_kind == "positive" and v.control_status == "reproduced") or bool(claim.rule.testable)
            if not positive:
                what, kind = (
                    ("an analogue negative", "analogue-without-positive-control")
                    if claim.analogue
                    else ("a trained failure", "fails-without-positive-control")
                )
                control = f"{v.control_kind or 'none'} {v.control_status or ''}".rstrip()
                out.append(
                    Offence(cid, kind, f"{cid}: {what} without a positive control that shows the effect ({control})")
                )
    return out


def audit_kinds(verdicts: dict[str, Verdict]) -> list[str]:
    """:func:`offences`, one line each."""
    return [o.text for o in offences(verdicts)]


def unpublished_offences(verdicts: dict[str, Verdict], reviews: dict[str, ReviewEntry] | None = None) -> list[str]:
    """The :func:`offences` that the open review does not publish: an offence stands in the book only as an
    objection of its kind on its claim, answered (kept, with numbers, or open, with what would settle it), so that a
    reader sees it in the claim's record and the appendix; any other fails ``check-outputs``."""
    reviews = load_reviews() if reviews is None else reviews
    published = {(cid, o.kind) for cid, e in reviews.items() for o in e.objections}
    return [o.text for o in offences(verdicts) if (o.claim_id, o.kind) not in published]


#: The appendix page: the text above the marker is written by hand, below it is :func:`review_page`'s.
PAGE_MARKER = "<!-- generated by python -m mamba_recall.claims.review --write: do not edit below -->"


def page_path() -> Path:
    from ..paths import REPO_ROOT

    return Path(REPO_ROOT) / "book" / "appendix_review.md"


def page_text(head: str, reviews: dict[str, ReviewEntry] | None = None) -> str:
    """The whole appendix page: ``head`` (the hand-written part, up to and including :data:`PAGE_MARKER`) and the
    generated review."""
    return head.rstrip("\n") + "\n\n" + review_page(reviews)


def main(argv: list[str] | None = None) -> int:
    """``python -m mamba_recall.claims.review [--write]``: check the review against the registry (every claim
    reviewed under its current rule) and the committed appendix page; ``--write`` rewrites the page's generated
    part from ``results/review/``."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m mamba_recall.claims.review", description=main.__doc__)
    ap.add_argument("--write", action="store_true", help="rewrite book/appendix_review.md's generated part")
    args = ap.parse_args(argv)
    reviews = load_reviews()
    path = page_path()
    text = path.read_text(encoding="utf-8")
    if PAGE_MARKER not in text:
        print(f"error: {path} lost its line {PAGE_MARKER!r}; put it back above the generated part.", file=sys.stderr)
        return 1
    want = page_text(text[: text.index(PAGE_MARKER) + len(PAGE_MARKER)], reviews)
    if args.write:
        replace_file(path, want.encode("utf-8"))
        print(f"wrote {path}")
    elif want != text:
        print(f"error: {path} is not the review's page; python -m mamba_recall.claims.review --write", file=sys.stderr)
        return 1
    stale = stale_reviews(reviews)
    for line in stale:
        print(f"not reviewed under its current rule: {line}", file=sys.stderr)
    print(f"open review: {len(reviews)} claims reviewed, {len(stale)} to referee again")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
