"""The notation table: the book's glossary page and the package docstring hold the same table, which covers
every symbol the chapters lean on and names each paper's own letter."""

from pathlib import Path

import mamba_recall

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- GLOSSARY TABLE -->", "<!-- END GLOSSARY TABLE -->"


def _table(text: str) -> list[list[str]]:
    assert START in text and END in text, f"the glossary table must sit between {START} and {END}"
    body = text.split(START, 1)[1].split(END, 1)[0].strip().splitlines()
    return [[c.strip() for c in line.strip().strip("|").replace("\\|", "¦").split("|")] for line in body]


def test_glossary_page_and_package_docstring_agree():
    page = _table((ROOT / "book" / "glossary.md").read_text())
    doc = _table(mamba_recall.__doc__)
    assert page == doc, "book/glossary.md and mamba_recall/__init__.py hold different tables: copy one into the other"


def test_glossary_covers_the_symbols_and_papers():
    rows = _table(mamba_recall.__doc__)
    header, rows = rows[0], rows[2:]
    assert header[3:8] == [
        f"paper {p} (Ch. {c})" for p, c in (("001", 0), ("000", 1), ("002", 2), ("003", 3), ("004", 4))
    ]
    assert all(len(r) == len(header) for r in rows), [r[0] for r in rows if len(r) != len(header)]
    symbols = {r[0] for r in rows}
    for s in (
        "b",
        "l, T",
        "d_model",
        "d_inner",
        "N",
        "Δ",
        "A",
        "Ā",
        "B",
        "B̄",
        "C",
        "D",
        "¦V¦",
        "N_f",
        "κ",
        "Λ (layers)",
        "M",
        "E",
        "h",
    ):
        assert s in symbols, f"the glossary lacks {s}"
    clashes = {r[0]: r[-1] for r in rows}
    assert "002" in clashes["D"] and "004" in clashes["D"]  # D: skip vs model width
    assert "embedding" in clashes["d_inner"] or "embedding" in clashes["E"]


def test_glossary_is_in_the_toc_and_linked_from_the_intro():
    assert "file: book/glossary" in (ROOT / "_toc.yml").read_text()
    assert "{doc}`glossary`" in (ROOT / "book" / "intro.md").read_text()
