"""Names a reader meets in several places are written in one place and checked everywhere else: the scan
backends (``mamba_recall.scan.BACKENDS``) in every notebook's parameter comment and the Makefile, and the
chapter titles (``mamba_recall.claims.render.CHAPTERS``) in the README, the intro, the sidebar (each
overview's heading) and the scorecard."""

from __future__ import annotations

import re

import nbformat
import pytest

from mamba_recall.cli import toc_notebooks
from mamba_recall.claims.render import CHAPTERS
from mamba_recall.paths import REPO_ROOT
from mamba_recall.scan import BACKENDS

BACKEND_COMMENT = "  # " + " | ".join(BACKENDS)


@pytest.mark.parametrize("notebook", toc_notebooks(), ids=str)
def test_every_notebook_lists_every_backend(notebook):
    cells = nbformat.read(REPO_ROOT / notebook, as_version=4).cells
    (params,) = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    (line,) = [line for line in params.source.splitlines() if line.startswith("backend =")]
    assert line == 'backend = "auto"' + BACKEND_COMMENT, f"{notebook}: {line!r}"


def test_makefile_lists_every_backend():
    text = (REPO_ROOT / "Makefile").read_text()
    assert "BACKEND=" + "|".join(BACKENDS) + " " in text


def test_chapter_titles_are_the_same_everywhere():
    titles = [title for title, _ in CHAPTERS.values()]
    readme = (REPO_ROOT / "README.md").read_text()
    intro = (REPO_ROOT / "book" / "intro.md").read_text()
    for title in titles:
        assert f"| {title} |" in readme, f"README's chapter table lacks {title!r}"
        assert f"| {title} |" in intro, f"the intro's chapter table lacks {title!r}"
    headings = []
    for ch in CHAPTERS:
        (overview,) = (REPO_ROOT / "book").glob(f"{ch:02d}_*/overview.md")
        headings.append(overview.read_text().splitlines()[0])
    assert headings == [f"# {title}" for title in titles]  # the sidebar shows each overview's heading
    assert all(re.fullmatch(r"\d\. \S.*", t) for t in titles)


def test_scan_errors_name_the_cpu_default():
    """A mamba_ssm error on a CPU machine names the fused backend (the CPU default) among the alternatives."""
    from mamba_recall.scan.mamba_ssm_backend import INSTALL_HINT

    assert "backend='fused'" in INSTALL_HINT
