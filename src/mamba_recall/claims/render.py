"""Generated pages: the scorecard page, each chapter overview's verdict table, the intro's status table.

The book build executes every notebook (each :func:`~mamba_recall.claims.core.check` records its verdict),
then :func:`fill_pages` replaces the markers in the staged Markdown:

* ``<!-- SCORECARD_SUMMARY -->`` (``book/scorecard.md``, the page's first screen): per chapter, the counts of each
  status, with the verdicts resting on an analogue counted apart (:func:`counts_table`); without that marker the
  summary opens the ``<!-- SCORECARD -->`` text instead;
* ``<!-- SCORECARD -->`` (``book/scorecard.md``): counts per evidence tier, then per chapter one row per claim
  of the four papers (its id, linked to the section that checks it, and its statement on one line), a claim no
  notebook checked in this build reading *not run* with what it would take;
* ``<!-- CHAPTER_STATUS -->`` (``book/intro.md``): the same per-chapter counts as the scorecard's summary;
* ``<!-- VERDICTS -->`` (each ``book/NN_*/overview.md``): that chapter's table.
"""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path

from . import review
from .core import (
    PAPERS,
    STATUSES,
    TIERS,
    Verdict,
    badge,
    claims_of,
    load_verdicts,
    not_run_verdict,
    status_class,
)

CHAPTERS = {
    0: ("0. The selective scan", "001"),
    1: ("1. Gradient dynamics on associative recall", "000"),
    2: ("2. Hashing circuits and recall scaling laws", "002"),
    3: ("3. Input selectivity, Haar wavelets, MQAR constructions", "003"),
    4: ("4. Primacy and recency", "004"),
    5: ("5. Synthesis: four theories on one model", "book"),
}
MARKERS = {"scorecard": "<!-- SCORECARD -->", "status": "<!-- CHAPTER_STATUS -->", "verdicts": "<!-- VERDICTS -->"}
#: Optional marker of the scorecard's summary table (the page's first screen, above its explanation).
SUMMARY_MARKER = "<!-- SCORECARD_SUMMARY -->"
#: Longest statement shown beside a claim's id in a verdict table (longer ones are cut at a word, with "…").
STATEMENT_CHARS = 90


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


def one_line(text: str, limit: int = STATEMENT_CHARS) -> str:
    """``text`` on one line, cut at the last space before ``limit`` characters (with "…") when longer."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:—-") + "…"


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


def _html(text: str) -> str:
    return html.escape(str(text), quote=True)


def counts_table(verdicts: list[Verdict], link: bool = False) -> str:
    """Per chapter, the number of claims in each status, as one HTML table (a row per chapter, a column per status
    that some claim has, and the total); a count's verdicts resting on an analogue (a stand-in for the paper's
    model) are counted apart under it ("2 analogue"). ``link``: each chapter's title links to its section of the
    scorecard page (the table is on that page).

    Wide screens read it as a table; on a narrow one (``book/_static/scorecard.css``) each chapter is a block of
    its non-zero counts, each beside its status's badge, so the table never scrolls sideways. Its lines: the
    header and ``<tbody>``, one per chapter, the total row and the closing tags."""
    by_chapter = {ch: [v for v in verdicts if PAPERS[v.claim_id.split("/")[0]] == ch] for ch in CHAPTERS}
    shown = [s for s in STATUSES if any(v.status == s for v in verdicts)]
    head = "".join(f'<th scope="col">{badge(s)}</th>' for s in shown)
    lines = [
        '<table class="mr-counts"><thead><tr><th scope="col">chapter</th><th scope="col">claims</th>'
        f"{head}</tr></thead><tbody>"
    ]
    for ch, (title, paper) in CHAPTERS.items():
        vs = by_chapter[ch]
        c = Counter(v.status for v in vs)
        a = Counter(v.status for v in vs if v.analogue)
        name = f'<a href="#{_label(paper)}">{_html(title)}</a>' if link else _html(title)
        cells = [
            f'<th scope="row" class="mr-chapter">{name}</th>',
            f'<td class="mr-total">{len(vs)}<span class="mr-unit"> claims</span></td>',
        ]
        for s in shown:
            extra = f'<span class="mr-analogue">{a[s]} analogue</span>' if a[s] else ""
            zero = " mr-zero" if not c[s] else ""
            cells.append(
                f'<td class="mr-count{zero}"><span class="mr-label">{badge(s)} </span>'
                f'<span class="mr-n">{c[s] if c[s] else "–"}</span>{extra}</td>'
            )
        lines.append("<tr>" + "".join(cells) + "</tr>")
    c = Counter(v.status for v in verdicts)
    a = Counter(v.status for v in verdicts if v.analogue)
    total = [
        '<th scope="row" class="mr-chapter">all chapters</th>',
        f'<td class="mr-total">{len(verdicts)}<span class="mr-unit"> claims</span></td>',
    ]
    for s in shown:
        extra = f'<span class="mr-analogue">{a[s]} analogue</span>' if a[s] else ""
        total.append(
            f'<td class="mr-count"><span class="mr-label">{badge(s)} </span><span class="mr-n">{c[s]}</span>{extra}</td>'
        )
    return "\n".join(lines) + '\n<tr class="mr-all">' + "".join(total) + "</tr></tbody></table>\n"


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


#: the statuses whose row says why beside the badge (a reader scanning the table sees *why* a claim is undecided)
WHY_STATUSES = ("inconclusive", "not testable here", "not run")
#: the characters of that reason shown in the row (the whole reason is in the claim's record, one click away)
WHY_CHARS = 60


def verdict_cell(v: Verdict) -> str:
    """A row's verdict: the badge, and for an undecided claim (:data:`WHY_STATUSES`) its reason's first clause
    (up to the first colon, at most :data:`WHY_CHARS` characters), e.g. Chapter 5's "budget-bound (42 of 47 probes
    not converged"."""
    if v.status not in WHY_STATUSES or not v.reason.strip():
        return badge(v.status)
    why = one_line(v.reason.split(":")[0], WHY_CHARS)
    why += ")" * max(0, why.count("(") - why.count(")"))  # a clause cut inside its parenthesis closes it
    return f"{badge(v.status)}<br><small>{_html(why)}</small>"


def verdict_table(verdicts: list[Verdict], prefix: str = "/book/") -> str:
    """One compact row per claim (its id, linked to the section that checks it, with its statement on one line;
    verdict; evidence), then the whole record of each claim one click away (a dropdown: the statement in full,
    the paper's sentence, its numbers, ours with intervals, the rule, the checks, the control, the evidence, the
    setting)."""
    lines = ["| claim | verdict | evidence |", "|---|---|---|"]
    for v in verdicts:
        claim = _cell(_link(v, prefix)) + " — " + _cell(one_line(v.statement))
        lines.append("| " + " | ".join((claim, _cell(verdict_cell(v)), _cell(_evidence(v)))) + " |")
    lines.append("")
    reviews = review.load_reviews()  # read once for the whole table
    for v in verdicts:
        lines += [f":::{{dropdown}} {v.claim_id} — {v.status}", *_details(v, prefix, reviews), ":::", ""]
    return "\n".join(lines) + "\n"


def _details(v: Verdict, prefix: str, reviews: dict) -> list[str]:
    entry = reviews.get(v.claim_id)
    link = (
        f"{{ref}}`the objections and answers <{review.anchor(v.claim_id)}>`"
        if entry is not None and entry.objections
        else f"{{doc}}`the open review <{prefix}appendix_review>`"
    )
    return (
        [f"- **claim**: {' '.join(v.statement.split())}", *v.record_lines()]
        + ([f"- checked in {{doc}}`{prefix}{v.section}`"] if v.section else [])
        + [f"- **{review.review_line(v.claim_id, reviews)}** ({link})"]
    )


def scorecard_summary(recorded: dict[str, Verdict] | None = None) -> str:
    """The scorecard's first screen: per chapter, the counts of each status (:func:`counts_table`, each chapter
    linked to its section below, and the total), then one line each: the errata counted by root cause, the rules
    revised after their data, and the open review's count."""
    everything = verdicts_for(None, recorded)
    errata = [v for v in everything if v.status == "erratum confirmed"]
    causes = sorted({v.cause or v.claim_id for v in errata})
    revised = [v.claim_id for v in everything if v.revisions]
    reviews = review.load_reviews()
    objected = sum(1 for e in reviews.values() if e.objections)
    changed = sum(1 for e in reviews.values() for o in e.objections if o.answer.action == "changed")
    lines = [
        f"**Errata by root cause:** {len(causes)} causes behind the {len(errata)} claims that read erratum confirmed"
        + (f" ({', '.join(f'`{c}`' for c in causes)})." if causes else "."),
        f"**Rules revised after their data:** {len(revised)} claims; each record says so, with the verdict under the "
        "earlier rule" + (f" ({', '.join(revised)})." if revised else "."),
        f"**Open review:** {len(reviews)} of {len(everything)} claims refereed by a reviewer who did not write their "
        f"rule; {objected} drew objections, {changed} answered by a changed verdict ({{doc}}`the objections and "
        "answers </book/appendix_review>`).",
    ]
    return counts_table(everything, link=True) + "\n" + "\n\n".join(lines) + "\n"


def scorecard_page(recorded: dict[str, Verdict] | None = None, summary: bool = True) -> str:
    """The scorecard's generated text: (``summary``: :func:`scorecard_summary` first), the counts per evidence tier,
    what the *not run* claims would take, then each chapter's section (its status bar and counts, its verdict
    table)."""
    everything = verdicts_for(None, recorded)
    tiers = Counter((v.evidence or {}).get("tier", "none") for v in everything)
    out = [scorecard_summary(recorded)] if summary else []
    out += [
        "By evidence tier: "
        + ", ".join(f"{t} {tiers[t]}" for t in (*TIERS, "none") if tiers[t])
        + " (*none*: not run).",
        "",
        "What the *not run* claims and the papers' full grids would take: `python -m mamba_recall plan --preset paper "
        "--estimate` lists every run-store grid with its jobs finished and left, the CPU-hours left measured on the "
        "machine that runs it, and the command (with `--engine ray` on a GPU box or a cluster).",
        "",
    ]
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
    """The intro's table: per chapter, the counts of each status (:func:`counts_table`, analogues apart)."""
    return counts_table(verdicts_for(None, recorded))


def fill_pages(book_dir: Path, recorded: dict[str, Verdict] | None = None) -> None:
    """Replace the markers in the staged book's Markdown (``book_dir`` = the staged ``book/``)."""
    recorded = load_verdicts() if recorded is None else recorded
    scorecard = book_dir / "scorecard.md"
    split = SUMMARY_MARKER in scorecard.read_text(encoding="utf-8")  # the summary above the page's explanation
    pages = {
        scorecard: ("scorecard", scorecard_page(recorded, summary=not split)),
        book_dir / "intro.md": ("status", chapter_status_table(recorded)),
    }
    for ch in CHAPTERS:
        for overview in book_dir.glob(f"{ch:02d}_*/overview.md"):
            pages[overview] = (
                "verdicts",
                counts_line(verdicts_for(ch, recorded)) + ".\n\n" + verdict_table(verdicts_for(ch, recorded)),
            )
    for path, (kind, _) in pages.items():  # check every page before writing any
        if MARKERS[kind] not in path.read_text(encoding="utf-8"):
            raise SystemExit(
                f"error: {path} lost its {MARKERS[kind]} line; put it back where the generated table belongs."
            )
    for path, (kind, text) in pages.items():
        page = path.read_text(encoding="utf-8").replace(MARKERS[kind], text)
        if split and path == scorecard:
            page = page.replace(SUMMARY_MARKER, scorecard_summary(recorded))
        path.write_text(page, encoding="utf-8")
