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

from .core import PAPERS, STATUSES, TIERS, Verdict, badge, claims_of, load_verdicts, not_run_verdict, status_class

CHAPTERS = {
    0: ("0. The selective scan", "001"),
    1: ("1. Gradient dynamics on associative recall", "000"),
    2: ("2. Hashing circuits and recall scaling laws", "002"),
    3: ("3. Input selectivity, Haar wavelets, MQAR constructions", "003"),
    4: ("4. Primacy and recency", "004"),
    5: ("5. Synthesis: four theories on one model", "book"),
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
    text = f"{e['tier']}, {e['seeds']} seed{'s' * (e['seeds'] != 1)}" if e["seeds"] else e["tier"]
    return text + (", analogue" if v.analogue else "")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _link(v: Verdict, prefix: str) -> str:
    return f"{{doc}}`{v.claim_id} <{prefix}{v.section}>`" if v.section else v.claim_id


def counts_line(verdicts: list[Verdict]) -> str:
    """Counts per status as badges; the verdicts resting on an analogue are counted apart."""
    c = Counter(v.status for v in verdicts)
    line = " ".join(f"{badge(s)} {c[s]}" for s in STATUSES if c[s]) + f" — {len(verdicts)} claims"
    analogue = Counter(v.status for v in verdicts if v.analogue)
    if analogue:
        line += (
            f"; of these, {sum(analogue.values())} rest on an analogue (a stand-in for the paper's model): "
            + ", ".join(f"{s} {analogue[s]}" for s in STATUSES if analogue[s])
        )
    return line


def status_bar(verdicts: list[Verdict]) -> str:
    """A chart of a chapter's statuses: one bar, a segment per status, wide as its share (HTML and CSS)."""
    c = Counter(v.status for v in verdicts)
    n = max(len(verdicts), 1)
    label = ", ".join(f"{c[s]} {s}" for s in STATUSES if c[s])
    parts = "".join(
        f'<span class="{status_class(s)}" style="width:{100 * c[s] / n:.2f}%" title="{c[s]} {s}"></span>'
        for s in STATUSES
        if c[s]
    )
    return f'<div class="mr-bar" role="img" aria-label="{label}">{parts}</div>'


def verdict_table(verdicts: list[Verdict], prefix: str = "/book/") -> str:
    """One compact row per claim (claim, verdict, evidence), then the whole record of each claim one click away
    (a dropdown: the paper's sentence, its numbers, ours with intervals, the rule, the checks, the control,
    the evidence, the setting)."""
    lines = ["| claim | verdict | evidence |", "|---|---|---|"]
    for v in verdicts:
        lines.append("| " + " | ".join((_cell(_link(v, prefix)), badge(v.status), _cell(_evidence(v)))) + " |")
    lines.append("")
    for v in verdicts:
        lines += [f":::{{dropdown}} {v.claim_id} — {v.status}", *_details(v, prefix), ":::", ""]
    return "\n".join(lines) + "\n"


def _details(v: Verdict, prefix: str) -> list[str]:
    return v.record_lines() + ([f"- checked in {{doc}}`{prefix}{v.section}`"] if v.section else [])


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
        "What the *not run* claims and the papers' full grids would take: `python -m mamba_recall plan --preset paper "
        "--estimate` lists every run-store grid with its jobs finished and left, the CPU-hours left measured on the "
        "machine that runs it, and the command (with `--engine ray` on a GPU box or a cluster).",
        "",
        "| chapter | statuses |",
        "|---|---|",
    ]
    for ch, (title, paper) in CHAPTERS.items():
        vs = [v for v in everything if PAPERS[v.claim_id.split("/")[0]] == ch]
        out.append(f"| [{title}](#{_label(paper)}) | {status_bar(vs)} |")
    out.append("")
    for ch, (title, paper) in CHAPTERS.items():
        vs = [v for v in everything if PAPERS[v.claim_id.split("/")[0]] == ch]
        out += [
            f"({_label(paper)})=",
            f"## {title} ({_source(paper)})",
            "",
            status_bar(vs),
            "",
            counts_line(vs) + ".",
            "",
            verdict_table(vs),
            "",
        ]
    return "\n".join(out)


def _source(paper: str) -> str:
    """What a scorecard section judges: a paper's claims, or (``book``) the book's own hypotheses."""
    return "the book's own findings, declared before their runs" if paper == "book" else f"paper {paper}"


def _label(paper: str) -> str:
    """The MyST label of a paper's section of the scorecard (the summary table links to it)."""
    return f"scorecard-paper-{paper}"


def chapter_status_table(recorded: dict[str, Verdict] | None = None) -> str:
    lines = ["| chapter | " + " | ".join(badge(s) for s in STATUSES) + " |", "|---|" + "---|" * len(STATUSES)]
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
