"""Generated pages: the scorecard page, each chapter overview's verdict table, the intro's status table.

The book build executes every notebook (each :func:`~mamba_recall.claims.core.check` records its verdict),
then :func:`fill_pages` replaces the markers in the staged Markdown:

* ``<!-- SCORECARD -->`` (``book/scorecard.md``): counts per status and per evidence tier, then one row
  per claim of the four papers, linked to the section that checks it; a claim no notebook checked in
  this build reads *not run* with what it would take;
* ``<!-- CHAPTER_STATUS -->`` (``book/intro.md``): per chapter, the counts of each status;
* ``<!-- VERDICTS -->`` (each ``book/NN_*/overview.md``): that chapter's table.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .core import MARK, PAPERS, STATUSES, TIERS, Verdict, claims_of, load_verdicts, not_run_verdict

CHAPTERS = {
    0: ("0. The selective scan", "001"),
    1: ("1. Gradient dynamics on associative recall", "000"),
    2: ("2. Hashing circuits and recall scaling laws", "002"),
    3: ("3. Input selectivity, Haar wavelets, MQAR constructions", "003"),
    4: ("4. Primacy and recency", "004"),
}
MARKERS = {"scorecard": "<!-- SCORECARD -->", "status": "<!-- CHAPTER_STATUS -->", "verdicts": "<!-- VERDICTS -->"}


def verdicts_for(chapter: int | None = None, recorded: dict[str, Verdict] | None = None) -> list[Verdict]:
    """Every declared claim (of one chapter, or all), with its recorded verdict or *not run*."""
    recorded = load_verdicts() if recorded is None else recorded
    unknown = sorted(set(recorded) - {c.id for c in claims_of()})
    if unknown:
        raise ValueError(
            f"recorded verdicts for undeclared claims {unknown}: declare them in claims/ or delete "
            "the stale records (make clean)."
        )
    return [recorded.get(c.id) or not_run_verdict(c) for c in claims_of(chapter=chapter)]


def _evidence(v: Verdict) -> str:
    if not v.evidence:
        return "—"
    e = v.evidence
    return f"{e['tier']}, {e['seeds']} seed{'s' * (e['seeds'] != 1)}" if e["seeds"] else e["tier"]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _link(v: Verdict, prefix: str) -> str:
    return f"{{doc}}`{v.claim_id} <{prefix}{v.section}>`" if v.section else v.claim_id


def counts_line(verdicts: list[Verdict]) -> str:
    c = Counter(v.status for v in verdicts)
    return ", ".join(f"{MARK[s]} {c[s]} {s}" for s in STATUSES if c[s]) + f" — {len(verdicts)} claims"


def verdict_table(verdicts: list[Verdict], prefix: str = "/book/") -> str:
    """A compact table: claim (linked) and statement, paper, ours, verdict mark, evidence."""
    lines = ["| claim | paper | ours | verdict | evidence |", "|---|---|---|---|---|"]
    for v in verdicts:
        what = f"{_link(v, prefix)} {v.statement} *({v.where})*"
        ours = v.ours or (v.reason if v.status == "not run" else "—")
        shown_reason = v.reason and v.status not in ("not run", "erratum confirmed")  # those say it in 'ours'
        verdict = f"{MARK[v.status]} {v.status}" + (f" ({v.reason})" if shown_reason else "")
        lines.append("| " + " | ".join(_cell(x) for x in (what, v.printed, ours, verdict, _evidence(v))) + " |")
    return "\n".join(lines) + "\n"


def scorecard_page(recorded: dict[str, Verdict] | None = None) -> str:
    everything = verdicts_for(None, recorded)
    tiers = Counter((v.evidence or {}).get("tier", "none") for v in everything)
    out = [
        counts_line(everything) + ".",
        "",
        "By evidence tier: "
        + ", ".join(f"{t} {tiers[t]}" for t in (*TIERS, "none") if tiers[t])
        + " (*none*: not run).",
        "",
    ]
    for ch, (title, paper) in CHAPTERS.items():
        vs = [v for v in everything if PAPERS[v.claim_id.split("/")[0]] == ch]
        out += [f"## {title} (paper {paper})", "", counts_line(vs) + ".", "", verdict_table(vs), ""]
    return "\n".join(out)


def chapter_status_table(recorded: dict[str, Verdict] | None = None) -> str:
    lines = ["| chapter | " + " | ".join(f"{MARK[s]} {s}" for s in STATUSES) + " |", "|---|" + "---|" * len(STATUSES)]
    for ch, (title, _) in CHAPTERS.items():
        c = Counter(v.status for v in verdicts_for(ch, recorded))
        lines.append(f"| {title} | " + " | ".join(str(c[s]) for s in STATUSES) + " |")
    return "\n".join(lines) + "\n"


def fill_pages(book_dir: Path, recorded: dict[str, Verdict] | None = None) -> None:
    """Replace the markers in the staged book's Markdown (``book_dir`` = the staged ``book/``)."""
    recorded = load_verdicts() if recorded is None else recorded
    pages = {
        book_dir / "scorecard.md": ("scorecard", scorecard_page(recorded)),
        book_dir / "intro.md": ("status", chapter_status_table(recorded)),
    }
    for ch in CHAPTERS:
        for overview in book_dir.glob(f"{ch:02d}_*/overview.md"):
            pages[overview] = (
                "verdicts",
                counts_line(verdicts_for(ch, recorded)) + ".\n\n" + verdict_table(verdicts_for(ch, recorded)),
            )
    for path, (kind, _) in pages.items():  # check every page before writing any
        if MARKERS[kind] not in path.read_text():
            raise SystemExit(
                f"error: {path} lost its {MARKERS[kind]} line; put it back where the generated table belongs."
            )
    for path, (kind, text) in pages.items():
        path.write_text(path.read_text().replace(MARKERS[kind], text))
