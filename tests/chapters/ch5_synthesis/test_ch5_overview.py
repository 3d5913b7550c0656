"""Chapter 5's overview computes its running grids' numbers when the book is built (``chapters/ch5_synthesis/
overview.py``, the build's :func:`mamba_recall.cli._run.fill_chapter_blocks`): the page holds the marker, not
hand-written counts of a running grid's jobs; the block is page 5.1's tables (the same functions) on the committed
bundles; a staged page without its marker stops the build."""

from __future__ import annotations

import re
import shutil

import pytest

from mamba_recall.paths import REPO_ROOT

OVERVIEW = REPO_ROOT / "book" / "05_synthesis" / "overview.md"


def test_the_overview_holds_the_marker_and_no_hand_written_count_of_a_running_grid():
    from mamba_recall.chapters.ch5_synthesis.overview import BLOCKS, LONGER_BUDGETS

    text = OVERVIEW.read_text(encoding="utf-8")
    assert set(BLOCKS) == {LONGER_BUDGETS} and text.count(LONGER_BUDGETS) == 1
    counts = re.findall(r"\b\d+ of 36 (?:jobs|searches)\b", text)
    assert not counts, f"a running grid's job count written by hand ({counts}): the block gives it"


def test_the_block_is_page_5_1_s_numbers_on_the_committed_bundles():
    from mamba_recall.chapters.ch5_synthesis import views
    from mamba_recall.chapters.ch5_synthesis.overview import longer_budgets
    from mamba_recall.chapters.ch5_synthesis.pipelines import budgets
    from mamba_recall.results import evidence

    block = longer_budgets()
    short = evidence("ch5_capacity", preset="cpu-hours")
    longer = [b for b in (budgets.long_bundle(lambda *_: None), budgets.tuned_bundle(lambda *_: None)) if b]
    assert longer, "the long and tuned grids' bundles are committed (partial or complete)"
    for b in longer:  # each running grid's committed searches, as its bundle counts them
        assert f"{b.data['jobs_finished']} of {b.data['jobs_total']} searches committed" in block
    fits = views.fits_table(short, *longer)
    # the short budget, then per grid: like with like (a partial grid's only), and the grid
    assert len(fits) == 1 + len(longer) + sum(bool(budgets.partial_label(b)) for b in longer)
    for row in fits.itertuples():  # every fit of the page's table, its intervals as printed there
        assert f"| {row._3} | {row._4} | {row._5} |" in block
    cap = views.capacity_table(short, *longer)
    for value in cap[next(c for c in cap.columns if c.startswith("κ*"))]:
        assert f"| {value} |" in block
    assert block.count("\n| H") == 6  # one row per hypothesis H1–H6 in the converged-share table


def test_the_build_fills_the_block_and_stops_on_a_lost_marker(tmp_path):
    from mamba_recall.chapters.ch5_synthesis.overview import LONGER_BUDGETS
    from mamba_recall.cli._run import fill_chapter_blocks

    staged = tmp_path / "book" / "05_synthesis"
    staged.mkdir(parents=True)
    shutil.copy2(OVERVIEW, staged / "overview.md")
    fill_chapter_blocks(tmp_path / "book")
    filled = (staged / "overview.md").read_text(encoding="utf-8")
    assert LONGER_BUDGETS not in filled and "| tuned" in filled and "**The fits over one-layer searches**" in filled
    (staged / "overview.md").write_text("# 5. Synthesis\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="lost its <!-- CH5_LONGER_BUDGETS --> line"):
        fill_chapter_blocks(tmp_path / "book")
