"""Issue 30: one spelling of a claim's book section. Each section module of a chapter's ``claims`` package declares
``SECTION = "<chapter folder>/<notebook>"`` (the page its claims are judged on), and every claim names one of them."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from mamba_recall import claims
from mamba_recall.chapters import __path__ as CHAPTERS

BOOK = Path(__file__).resolve().parents[2] / "book"


def _sections() -> dict[str, str]:
    """module -> its SECTION, for every module of every chapter's claims package that declares one."""
    out = {}
    for chapter in sorted(m.name for m in pkgutil.iter_modules(CHAPTERS)):
        package = importlib.import_module(f"mamba_recall.chapters.{chapter}.claims")
        for m in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{m.name}")
            if hasattr(module, "SECTION"):
                out[module.__name__] = module.SECTION
    return out


def test_each_section_module_names_its_page_and_every_claim_names_a_section():
    sections = _sections()
    assert len(sections) >= 25, sorted(sections)
    for module, section in sections.items():
        assert isinstance(section, str) and (BOOK / f"{section}.ipynb").is_file(), (module, section)
        assert section.split("/")[0].startswith(f"0{module.split('.')[2][2]}_"), (module, section)  # its own chapter
    unknown = {c.id: c.section for c in claims.claims_of() if c.section and c.section not in sections.values()}
    assert not unknown, unknown
