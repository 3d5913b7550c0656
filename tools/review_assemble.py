"""Assemble the open review's committed data (``results/review/<paper>.json``) from the referees' own files and the
book's answers, as made at issue 51 (2026-12-04).

    python tools/review_assemble.py RAW_DIR

``RAW_DIR`` holds what the review produced, kept verbatim under ``results/review/raw/`` by this command:

* ``round1/<paper>.json``: each paper's referee, on the records of the rules as they stood (``reviewed_at``);
* ``answers/<paper>.json``: the book's answer to each objection (the referee's, and the earlier review round's);
* ``round2/<paper>.json`` (where present): the referee's pass over the claims whose rule changed after round 1, on
  their new records.

A claim's entry is its latest referee's reading of its current rule (round 2 where its rule changed, else round 1),
with every objection of the earlier reading and the earlier round answered. The rule fingerprint is the
registry's today (:func:`mamba_recall.claims.review.rule_fingerprint`) for a claim whose latest reading is of its
current rule; otherwise the fingerprint the referee read, so that the test names it as still to referee.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from mamba_recall.claims import REGISTRY
from mamba_recall.claims.review import REVIEW_DIR, rule_fingerprint

BRIEF = (
    "a referee given only the paper's text, the claims' records and the committed bundles they read (never the "
    "library's code or the authors' notes), asked to sign or object to each verdict with numbers: is the rule the "
    "sentence, could it fail, is the evidence enough, does anything committed contradict it"
)
EARLIER = "review of d645e6c (issue 51)"


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _objection(raw: dict, by: str, answers: list[dict]) -> dict:
    """The referee's objection with the book's answer to it (matched by who objected)."""
    mine = [a for a in answers if a.get("by") == by]
    answer = mine[0]["answer"] if mine else {"action": "open", "why": "not yet answered", "status_after": ""}
    return {
        "by": by,
        "kind": raw["kind"],
        "objection": raw["objection"],
        "proposed_status": raw.get("proposed_status", ""),
        "settle": raw.get("settle", ""),
        "answer": answer,
    }


def assemble(raw_dir: Path, old_fingerprints: dict[str, str], out_dir: Path) -> dict[str, int]:
    counts = {}
    papers = sorted({p.stem for p in (raw_dir / "round1").glob("*.json")})
    for paper in papers:
        r1 = _load(raw_dir / "round1" / f"{paper}.json")
        r2 = _load(raw_dir / "round2" / f"{paper}.json")
        answers = _load(raw_dir / "answers" / f"{paper}.json")
        first = {e["claim_id"]: e for e in r1.get("entries", [])}
        second = {e["claim_id"]: e for e in r2.get("entries", [])}
        entries = []
        for cid, claim in REGISTRY.items():
            if claim.paper != paper:
                continue
            now = rule_fingerprint(claim)
            e1, e2 = first.get(cid), second.get(cid)
            mine = answers.get(cid, [])
            if e2 is not None:  # an entry may name its own referee (a later pass merged into the round's file)
                latest, referee = e2, e2.get("referee") or r2.get("referee")
            else:
                latest, referee = e1, ((e1.get("referee") if e1 else None) or r1.get("referee"))
            if latest is None:
                continue  # never refereed: the test names it
            read_now = e2 is not None or old_fingerprints.get(cid) == now
            entry = {
                "claim_id": cid,
                "referee": referee,
                "rule_fingerprint": now if read_now else old_fingerprints.get(cid, "0" * 16),
                "status_reviewed": latest["status_reviewed"],
                "decision": latest["decision"],
            }
            earlier = []
            if latest["decision"] == "signed":
                entry["note"] = latest.get("note", "")
            else:
                o = _objection(latest, referee, mine)
                entry.update({k: o[k] for k in ("kind", "objection", "proposed_status", "settle", "answer")})
            if e2 is not None and e1 is not None and e1["decision"] == "objection":
                earlier.append(_objection(e1, e1.get("referee") or r1.get("referee"), mine))
            first_referee = (e1 or {}).get("referee") or r1.get("referee")
            # the earlier round's objections and the audit's (issue 51's kinds over every verdict), answered
            earlier += [a for a in mine if a.get("by") not in (referee, first_referee)]
            if earlier:
                entry["earlier_objections"] = earlier
            entries.append(entry)
        data = {
            "paper": paper,
            "referee": r2.get("referee") or r1.get("referee"),
            "date": "2026-12-04",
            "reviewed_at": r1.get("reviewed_at", ""),
            "brief": BRIEF,
            "entries": entries,
        }
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"{paper}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        counts[paper] = len(entries)
    return counts


def main(argv: list[str]) -> int:
    raw = Path(argv[0])
    old = json.loads(Path(argv[1]).read_text(encoding="utf-8")) if len(argv) > 1 else {}
    keep = REVIEW_DIR / "raw"
    if raw.resolve() != keep.resolve():
        shutil.rmtree(keep, ignore_errors=True)
        shutil.copytree(raw, keep)
    print(assemble(keep, old, REVIEW_DIR))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
