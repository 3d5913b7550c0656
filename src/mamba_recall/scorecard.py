"""The replication scorecard: every claim checked, our number, the paper's, and a verdict.

Chapters call :func:`record_claim` once per claim; each call writes one small JSON file into
:func:`mamba_recall.paths.scorecard_dir` (``_build/scorecard`` by default), keyed by chapter and
claim id so re-running a notebook replaces its rows. The book build turns the folder into the
table on the intro page (:func:`scorecard_markdown`).
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .paths import scorecard_dir

STATUSES = ("reproduced", "partially", "not reproduced")
_ICON = {"reproduced": "✅ reproduced", "partially": "🟡 partially", "not reproduced": "❌ not reproduced"}


@dataclass(frozen=True)
class Claim:
    chapter: str
    claim_id: str
    claim: str
    ours: str
    paper: str
    status: str
    preset: str
    note: str = ""

    def _repr_markdown_(self) -> str:
        return (f"**{self.claim_id}** {self.claim} — ours: {self.ours}; paper: {self.paper} → "
                f"**{_ICON[self.status]}** ({self.preset}){' — ' + self.note if self.note else ''}")

    def __str__(self) -> str:
        return f"[{self.status}] {self.chapter}/{self.claim_id}: ours {self.ours} | paper {self.paper}"


def record_claim(chapter: str, claim_id: str, claim: str, *, ours, paper, status: str, preset: str,
                 note: str = "", directory: Path | None = None) -> Claim:
    """Record one checked claim for the scorecard and return it (it displays as a line of Markdown).

    ``status`` must be one of ``reproduced``, ``partially``, ``not reproduced``; it is the verdict of a
    check computed in the notebook, never typed in by hand.
    """
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {STATUSES}.")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", chapter) or not re.fullmatch(r"[A-Za-z0-9_.-]+", claim_id):
        raise ValueError(f"chapter {chapter!r} and claim_id {claim_id!r} may use letters, digits, '.', '_', '-'.")
    item = Claim(chapter, claim_id, claim, str(ours), str(paper), status, preset, note)
    folder = Path(directory or scorecard_dir())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{chapter}__{claim_id}.json").write_text(json.dumps(asdict(item), indent=1) + "\n")
    return item


def load_claims(directory: Path | None = None) -> list[Claim]:
    folder = Path(directory or scorecard_dir())
    claims = []
    for path in sorted(folder.glob("*.json")):
        try:
            claims.append(Claim(**json.loads(path.read_text())))
        except (json.JSONDecodeError, TypeError) as exc:
            raise ValueError(f"scorecard entry {path} is corrupt ({exc}); delete it and re-run its chapter.") from exc
    return claims


def scorecard_markdown(claims: list[Claim]) -> str:
    """The scorecard as a Markdown table, one row per claim, grouped by chapter."""
    if not claims:
        return "*No claims recorded yet: build the book with `make book` to run the chapters.*\n"
    counts = {s: sum(c.status == s for c in claims) for s in STATUSES}
    lines = [", ".join(f"{n} {s}" for s, n in counts.items()) + f" (of {len(claims)} claims checked).", "",
             "| chapter | claim | ours | paper | verdict | preset |", "|---|---|---|---|---|---|"]
    for c in sorted(claims, key=lambda c: (c.chapter, c.claim_id)):
        text = f"**{c.claim_id}** {c.claim}" + (f" <br>*{c.note}*" if c.note else "")
        cells = [c.chapter, text, c.ours, c.paper, _ICON[c.status], c.preset]
        lines.append("| " + " | ".join(x.replace("|", "\\|").replace("\n", " ") for x in cells) + " |")
    return "\n".join(lines) + "\n"


def verdict(ours, paper, atol: float) -> str:
    """``reproduced`` if every number is within ``atol`` of the paper's, ``partially`` if some are,
    ``not reproduced`` if none are."""
    import numpy as np

    ok = np.abs(np.atleast_1d(np.asarray(ours, dtype=float)) - np.atleast_1d(np.asarray(paper, dtype=float))) <= atol
    return "reproduced" if ok.all() else "partially" if ok.any() else "not reproduced"
