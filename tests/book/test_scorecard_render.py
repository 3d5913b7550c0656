"""The scorecard's first screen and the intro's count table (mamba_recall.claims.render): a per-chapter table of
counts per status with numbers, the analogues counted apart; one line of each claim's statement beside its id."""

from __future__ import annotations

import re
from dataclasses import replace

from mamba_recall.claims import core, render
from mamba_recall.claims.core import tex_to_unicode


def _verdicts():
    """Every declared claim as *not run*, three of Chapter 1's reproduced, one of Chapter 4's an analogue."""
    out = {}
    for c in core.claims_of():
        out[c.id] = core.not_run_verdict(c)
    ch1 = [c.id for c in core.claims_of(chapter=1)][:3]
    for cid in ch1:
        out[cid] = replace(out[cid], status="reproduced", analogue=cid == ch1[0])
    return out


def _row(table: str, title: str) -> str:
    return next(line for line in table.splitlines() if title in line)


def test_counts_table_has_numbers_per_status_and_analogues_apart():
    recorded = _verdicts()
    table = render.chapter_status_table(recorded)
    assert table.startswith('<table class="mr-counts">') and "mr-bar" not in table
    header = table.splitlines()[0]
    assert core.badge("reproduced") in header and core.badge("not run") in header
    assert core.badge("inconclusive") not in header  # a status no claim has gets no column
    row = _row(table, render.CHAPTERS[1][0])
    n1 = len(core.claims_of(chapter=1))
    assert f'<td class="mr-total">{n1}<' in row
    cells = re.findall(r'<span class="mr-n">([^<]+)</span>(<span class="mr-analogue">[^<]+</span>)?', row)
    assert cells == [("3", '<span class="mr-analogue">1 analogue</span>'), (str(n1 - 3), "")], cells
    total = _row(table, "all chapters")
    assert f'<td class="mr-total">{len(recorded)}<' in total


def test_scorecard_summary_comes_first_and_links_each_chapter(tmp_path):
    recorded = _verdicts()
    book = tmp_path / "book"
    book.mkdir()
    (book / "scorecard.md").write_text(
        "# S\n\nintro ✓\n\n<!-- SCORECARD_SUMMARY -->\n\n## How to read it\n\ntext\n\n<!-- SCORECARD -->\n",
        encoding="utf-8",
    )
    (book / "intro.md").write_text("# I\n<!-- CHAPTER_STATUS -->\n", encoding="utf-8")
    render.fill_pages(book, recorded)
    page = (book / "scorecard.md").read_text(encoding="utf-8")
    assert "intro ✓" in page
    summary, how, sections = (
        page.index('<table class="mr-counts">'),
        page.index("## How to read it"),
        page.index("## 0."),
    )
    assert summary < how < sections and page.count('<table class="mr-counts">') == 1
    for ch, (title, paper) in render.CHAPTERS.items():
        assert f'<a href="#scorecard-paper-{paper}">{title}</a>' in page
    assert '<table class="mr-counts">' in (book / "intro.md").read_text(encoding="utf-8")


def test_verdict_rows_give_the_statement_on_one_line():
    recorded = _verdicts()
    claim = max(core.claims_of(), key=lambda c: len(c.statement))
    table = render.verdict_table([recorded[claim.id]])
    row = next(line for line in table.splitlines() if line.startswith("| ") and claim.id in line)
    short = render.one_line(claim.statement)
    assert f" — {short} |" in row.replace("\\|", "|") or f" — {short.replace('|', chr(92) + '|')} |" in row
    assert len(short) <= render.STATEMENT_CHARS and short.endswith("…")
    assert f"- **claim**: {' '.join(claim.statement.split())}" in table  # the whole statement in its dropdown


def test_one_line():
    assert render.one_line("a  short\nstatement") == "a short statement"
    text = "word " * 40
    cut = render.one_line(text, 30)
    assert cut.endswith("…") and len(cut) <= 30 and "  " not in cut and not cut[:-1].endswith(" ")


def test_quotes_on_the_scorecard_show_no_raw_tex():
    """A paper's quote beside its verdict is text, not math: its simple TeX is written as the characters it prints
    (the browser check fails raw ``\\frac``, ``\\ll`` or ``$...$`` outside math)."""
    quote = "an MQAR task of $V_k = \\frac{V}{2} = 512$ given $N = 32 \\ll V_k$ and $\\frac{1}{\\sqrt{p}}$"
    assert tex_to_unicode(quote) == "an MQAR task of Vₖ = V/2 = 512 given N = 32 ≪ Vₖ and 1/√p"
    assert tex_to_unicode("no math here") == "no math here"
    page = render.scorecard_page(_verdicts())
    quotes = re.findall(r"- \*\*the paper\*\* [^\n]*", page)
    assert quotes and not [q for q in quotes if re.search(r"\\[A-Za-z]{2,}|\$[^$]+\$", q)]


def test_an_undecided_row_says_why_beside_its_badge():
    """A scorecard row of an inconclusive claim carries its reason's first clause (Chapter 5's budget reading), a
    decided one only its badge; the whole reason stays in the record."""
    v = core.not_run_verdict(core.claims_of(chapter=5)[0])
    why = (
        "budget-bound (42 of 47 probes not converged: 38 at the step cap, 4 stopped on the ≈ 1/κ plateau; 89% > 10 %)"
        ": at 1500 steps κ* measures what this budget learns"
    )
    cell = render.verdict_cell(replace(v, status="inconclusive", reason=why))
    assert cell == core.badge("inconclusive") + "<br><small>budget-bound (42 of 47 probes not converged)</small>"
    assert render.verdict_cell(replace(v, status="reproduced", reason=why)) == core.badge("reproduced")
    table = render.verdict_table([replace(v, status="inconclusive", reason=why)])
    assert "budget-bound (42 of 47 probes not converged)</small> |" in table.splitlines()[2]
