"""The claims registry as a fingerprint: one hash per claim of everything that decides its verdict apart from the
evidence (its statement, place, printed numbers, section, declared rule, the "not run" text and the measurement
that feeds the rule). A move of code (issue 30's folder per chapter) must leave every hash as it was; a change to a
claim on purpose rewrites the file, in the same commit, with the reason in its message:

    python tests/base/test_registry_fingerprint.py --write

The evidence side is checked elsewhere: the bundles' tables by their sha256 (``results/manifest.json``,
``tests/base/test_manifest.py``) and the verdicts a reader sees by the checked outputs of every notebook
(``python -m mamba_recall check-outputs`` in ``make test``).

``tests/data/registry_fingerprint.json`` was first written at commit 81dc60d, before the chapters' folders, with the
runners' old module paths in "not run" texts read as today's (the only text the move changed, 22 claims)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FINGERPRINT = Path(__file__).resolve().parents[1] / "data" / "registry_fingerprint.json"


def fingerprint() -> dict[str, str]:
    """Claim id -> :func:`mamba_recall.claims.review.rule_fingerprint` (the open review records the same hash)."""
    from mamba_recall import claims
    from mamba_recall.claims.review import rule_fingerprint

    return {c.id: rule_fingerprint(c) for c in claims.claims_of()}


def test_every_claim_is_as_fingerprinted():
    want = json.loads(FINGERPRINT.read_text())
    got = fingerprint()
    added, gone = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    changed = sorted(k for k in set(got) & set(want) if got[k] != want[k])
    assert not (added or gone or changed), (
        f"claims added {added}, gone {gone}, changed {changed}; on purpose? "
        "python tests/base/test_registry_fingerprint.py --write"
    )
    assert list(got) == list(want), "the registry's order changed (the scorecard and the overviews list claims in it)"


def test_the_order_does_not_depend_on_which_chapter_is_imported_first():
    """A module that imports one chapter's claims before ``mamba_recall.claims`` used to register that chapter last
    (its package was half-imported while ``mamba_recall.claims`` registered the others), which reordered the
    scorecard; the order is declared (``REGISTRY_ORDER``), not the import order."""
    code = (
        "import importlib, json, sys; importlib.import_module(sys.argv[1]); "
        "from mamba_recall import claims; print(json.dumps([c.id for c in claims.claims_of()]))"
    )
    want = list(json.loads(FINGERPRINT.read_text()))
    chapters = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "src/mamba_recall/chapters").glob("ch*"))
    assert len(chapters) == 6, chapters
    for first in (f"mamba_recall.chapters.{c}.claims" for c in chapters):
        out = subprocess.run([sys.executable, "-c", code, first], capture_output=True, text=True, check=True).stdout
        assert json.loads(out) == want, first


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    FINGERPRINT.write_text(json.dumps(fingerprint(), indent=1) + "\n")
    print(f"wrote {FINGERPRINT}")
