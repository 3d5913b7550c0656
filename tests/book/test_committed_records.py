"""The claim records a committed page shows (the outputs a JupyterLab reader opens, which `check-outputs` does not
compare: only its NBVAL_CHECK_OUTPUT cells) carry the registry's claims and their current rules. A rule redeclared
without refreshing its page left the page showing the old rule (002/AppD-phase-transition, 2026-12-06): the fix is
`python -m mamba_recall refresh <notebook>`."""

from __future__ import annotations

import json
import re

import pytest

from mamba_recall.claims import REGISTRY
from mamba_recall.cli._run import toc_notebooks
from mamba_recall.paths import REPO_ROOT

_HEAD = re.compile(r"\*\*(\d{3}/[^*]+)\*\* — ")
_RULE = re.compile(r"^- \*\*rule\*\* \([^)]*\): (.*)$", re.M)


def records(path):
    """(claim id, the rule line's text or None) for each claim record among a notebook's Markdown outputs."""
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            md = "".join(out.get("data", {}).get("text/markdown", ""))
            head = _HEAD.match(md)
            if head:
                rule = _RULE.search(md)
                yield head.group(1), rule.group(1).strip() if rule else None


@pytest.mark.parametrize("nb", toc_notebooks(), ids=str)
def test_a_committed_page_shows_each_claim_with_its_current_rule(nb):
    stale = []
    for cid, rule in records(REPO_ROOT / nb):
        if cid not in REGISTRY:
            stale.append(f"{cid}: not in the registry")
        elif rule is not None and rule != REGISTRY[cid].rule.text().strip():
            stale.append(f"{cid}: the page shows an earlier rule")
    assert not stale, f"{nb}: {stale}; refresh it: python -m mamba_recall refresh {nb}"


def test_the_record_reader_finds_records():
    """The reader is not vacuous: the book's pages show more than a hundred claim records, each with its rule."""
    found = [r for nb in toc_notebooks() for r in records(REPO_ROOT / nb)]
    assert len(found) > 100 and sum(rule is not None for _, rule in found) > 100
