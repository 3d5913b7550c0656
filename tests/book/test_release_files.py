"""What a reader of a research project expects beside the code, kept true: the citation (``CITATION.cff``, valid
Citation File Format 1.2.0 with the package's version and license, and the book's "How to cite" page with the same
BibTeX version, next to the references), the changelog (Keep a Changelog, an entry for this version), the
reference for Chapter 0's source document, the environment's extras (``environment.yml`` installs what ``make``
installs) and a README a newcomer reads in two minutes that links where the long parts went."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import jsonschema
import yaml

import mamba_recall

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

#: the part of the CFF 1.2.0 schema (https://citation-file-format.github.io/1.2.0/schema.json) this file uses
CFF_SUBSET = {
    "type": "object",
    "required": ["cff-version", "message", "title", "authors"],
    "properties": {
        "cff-version": {"const": "1.2.0"},
        "message": {"type": "string", "minLength": 1},
        "title": {"type": "string", "minLength": 1},
        "type": {"enum": ["software", "dataset"]},
        "abstract": {"type": "string", "minLength": 1},
        "version": {"type": "string", "minLength": 1},
        "date-released": {"type": "string", "pattern": r"^[0-9]{4}-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])$"},
        "license": {"type": "string"},
        "keywords": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        "authors": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "anyOf": [{"required": ["name"]}, {"required": ["family-names"]}, {"required": ["given-names"]}],
            },
        },
    },
}


def test_citation_cff_is_valid_and_matches_the_package():
    text = (ROOT / "CITATION.cff").read_text()
    cff = yaml.safe_load(text)
    assert isinstance(cff["date-released"], str), "quote the date: CFF wants a string"
    jsonschema.validate(cff, CFF_SUBSET)
    assert cff["title"] == "The Mamba recall book"
    assert cff["authors"] == [{"name": "The Mamba recall book contributors"}]
    assert cff["version"] == PYPROJECT["version"] == mamba_recall.__version__ == "0.2.0"
    assert cff["date-released"] == "2026-12-04"
    assert cff["license"] == PYPROJECT["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_how_to_cite_page_sits_beside_the_references_with_the_same_version():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [entry["file"] for entry in toc["chapters"]]
    assert files[files.index("book/references") + 1] == "book/how_to_cite"
    page = (ROOT / "book" / "how_to_cite.md").read_text()
    assert page.startswith("# How to cite\n")
    bibtex = re.search(r"```bibtex\n(.*?)```", page, re.S).group(1)
    assert bibtex.startswith("@software{") and bibtex.count("{") == bibtex.count("}")
    assert f"version = {{{PYPROJECT['version']}}}" in bibtex
    assert "{{The Mamba recall book contributors}}" in bibtex and "license = {MIT}" in bibtex


def test_chapter_0_source_is_in_the_references_by_its_own_title():
    bib = (ROOT / "book" / "references.bib").read_text()
    entry = re.search(r"@misc\{worked_example_forward_pass,(.*?)\n\}", bib, re.S).group(1)
    title = re.search(r"title\s*=\s*\{(.*)\},", entry).group(1)
    assert title.replace("{", "").replace("}", "") == "Worked Example: Complete Mamba Forward Pass"
    assert ":all:" in (ROOT / "book" / "references.md").read_text()  # the references page lists every entry


def test_changelog_has_this_version_s_entry():
    log = (ROOT / "CHANGELOG.md").read_text()
    assert "[Keep a Changelog]" in log and "## [Unreleased]" in log
    entry = log.split(f"## [{PYPROJECT['version']}] - 2026-12-04\n", 1)[1].split("\n## [", 1)[0]
    assert all(f"### {kind}" in entry for kind in ("Added", "Changed", "Fixed"))
    for topic in ("Determinism", "22 faults", "Run files all hashed", "Chapter 5", "open review"):
        assert topic in entry, topic


def test_environment_yml_installs_the_extras_make_installs():
    makefile = (ROOT / "Makefile").read_text()
    make_extras = re.search(r"pip install --quiet -e '\.\[([\w,]+)\]'", makefile).group(1).split(",")
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    editable = next(line for line in pip if line.startswith("-e "))
    assert re.search(r"\[([\w,]+)\]", editable).group(1).split(",") == make_extras
    assert set(make_extras) == set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    ) - {"gpu"}


def test_readme_is_a_short_page_that_links_where_the_details_went():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.split()) <= 900, len(readme.split())  # a two-minute page, the chapter table and tree included
    headings = re.findall(r"^## (.+)$", readme, re.M)
    assert headings == ["The two commands", "Where to start", "Layout", "How to cite"], headings
    assert "JOBS=2" not in readme  # make test's long paragraph lives in the appendix now
    for fact in ("2.1 GB", "about 8 minutes", "about 17 minutes", "_build/lab/", "--allow-root", "--version"):
        assert fact in readme, fact
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    assert all(f"`{extra}`" in readme.split("## Where to start", 1)[1] for extra in extras), extras
    # the appendix section it names holds what the README used to say, with the facts of today
    appendix = (ROOT / "book" / "appendix_engineering.md").read_text()
    assert "The details the README leaves out" in readme
    details = appendix.split("\n## The details the README leaves out\n", 1)[1]
    assert "`.ci/run` (venv install included) takes about 17 min" in details and "about 2.1 GB" in details
    assert "'.[book,test,bench,cluster]'" in details
    preset_row = next(line for line in details.splitlines() if line.startswith("| `preset` |"))
    assert "cpu-hours" in preset_row
    assert "Executed notebooks go to `_build/`, never into `book/`, and `make lab` opens copies" in details
