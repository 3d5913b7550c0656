"""One-way layers in ``src/mamba_recall``: every import points down, no two modules import each other, and
no module reaches into another's private names.

The layers, lowest first (issue 17, "Layers that import downwards only")::

    base → scan → models | tasks → train → theory | analysis → claims → experiments → views → entry

``experiments`` and ``views`` are now the layers of a chapter's ``runners`` and ``views``: a chapter's package
(``chapters/chN_<topic>/``) spans the layers, each of its parts where that part's kind sits (``CHAPTER_PARTS``: its
``configs`` in base, ``training`` in train, ``pipelines`` in analysis, ``claims`` in claims), and no chapter imports
another (:func:`test_no_chapter_imports_another_and_below_them_none_is_imported_by_name`).

``a | b`` are siblings at one height: each may import what lies below, neither may import the other (the
issue names ``models.linear_mamba`` importing ``tasks`` and ``theory.gradient_lemma`` importing ``analysis``
as leaks). Imports inside one layer are allowed; a cycle between modules is not, whatever the layers.

What is checked, by walking the ``ast`` of every module (imports at any depth, so the ones inside functions
too): ``import a.b``, ``from a import b`` and ``from . import b`` (``b`` counts as the module ``a.b`` when
that is a module of the package, else as a name of ``a``). Not seen: ``importlib.import_module`` with a
string (``runners.experiment_runners`` and the run store's job functions), which by design find their targets
at run time. The implicit import of a parent package's ``__init__`` is not counted either (it would make
every package ``__init__`` that imports its own submodules a cycle).

Private names: ``from m import _x`` and ``m._x`` (``_x`` not a dunder) from any module other than ``m``
fail. One exception, the Python convention for packages: a private *module* (``scan._common``,
``scan._fused_kernels``) is its package's internals, so the modules of that package may import it and use
all of it (``scan/__init__.py`` re-exports what other layers need); nothing outside the package may.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "mamba_recall"
SRC = Path(__file__).resolve().parents[2] / "src" / PACKAGE

# Lowest first; the names in one tuple are siblings at one height.
LAYERS = (
    ("base",),
    ("scan",),
    ("models", "tasks"),
    ("train",),
    ("theory", "analysis"),
    ("claims",),  # rules and measurements over analysis/theory outputs and bundles; runners judge with them
    ("experiments",),
    ("views",),
    ("entry",),  # notebooks (notebook.setup) and the command line
)

# module or package -> (layer, why). A package entry covers its submodules; the longest entry wins. The
# root package's entry covers only its __init__, so a new top-level module must be placed here by hand.
MODULE_LAYERS = {
    PACKAGE: ("base", "the package docstring and __version__, stamped on bundles by results and runners"),
    f"{PACKAGE}.paths": ("base", "repository, results and build directories; runstore and results read them"),
    f"{PACKAGE}.context": (
        "base",
        "the run context (stdlib only): long-run permission, smoke folder, the command's git state; longrun, "
        "results, runstore, notebook and the command lines read or set it",
    ),
    f"{PACKAGE}.longrun": ("base", "the long-run guard (stdlib only); train and models.linear_mamba call it"),
    f"{PACKAGE}.presets": ("base", "sizes as data (no library imports); train is to read the recipes there"),
    f"{PACKAGE}.atomic": (
        "base",
        "the one atomic file replacement (stdlib only); runstore, claims, manifest, cli use it",
    ),
    f"{PACKAGE}.determinism": (
        "base",
        "what is promised about repeating a computation, the cross-CPU tolerance and the CPU fingerprint (stdlib, "
        "torch inside functions); provenance and the tests read it",
    ),
    f"{PACKAGE}.devices": ("base", "device names and resolve_device (torch only), for runners and notebooks alike"),
    f"{PACKAGE}.labels": (
        "base",
        "the label convention and the one labelled-position accuracy (torch only); tasks and train use it",
    ),
    f"{PACKAGE}.provenance": (
        "base",
        "how a number was made (git state, versions, device); results and runstore record it",
    ),
    f"{PACKAGE}.runstore": (
        "base",
        "resumable grids (imports paths and longrun); theory.designed_capacity runs one. A package: the entry covers "
        "its private modules (_records, _store, _engines, _aggregate, _bundles, _cli, _demo), all in this layer",
    ),
    f"{PACKAGE}.results": (
        "base",
        "result bundles and checkpoints (imports paths, runners): written by the "
        "runners, read by analysis.primacy, views and claims",
    ),
    f"{PACKAGE}.manifest": (
        "base",
        "the results manifest: committed results, their commands and readers (reads results)",
    ),
    f"{PACKAGE}.experiment": (
        "base",
        "Experiment and the one registry of the chapters' declared experiments, found at run time with importlib "
        "(runners.chapter_modules); plan and the grid command read it",
    ),
    f"{PACKAGE}.runners": (
        "base",
        "the runner list, found at run time with importlib; results names the "
        "runner that remakes a missing bundle, cli reproduce runs them",
    ),
    f"{PACKAGE}.scan": (
        "scan",
        "the selective scans and their backends (pure tensor maths) and their timing (scan.timing, run in Chapter 0)",
    ),
    f"{PACKAGE}.models": ("models", "the networks, built on scan"),
    f"{PACKAGE}.tasks": ("tasks", "the data generators; no model in them"),
    f"{PACKAGE}.train": ("train", "the one training loop over a model and a task's batches, and its recipes"),
    f"{PACKAGE}.theory": ("theory", "the papers' constructions and closed forms, on models and tasks"),
    f"{PACKAGE}.analysis": ("analysis", "probes and statistics of trained models"),
    f"{PACKAGE}.plots": ("views", "Altair charts (no library imports); widgets and notebook.setup use them"),
    f"{PACKAGE}.book_render": ("views", "the HTML book's MyST-NB renderer for plots' chart outputs"),
    f"{PACKAGE}.widgets": ("views", "live explorers on scan and plots, used by views"),
    f"{PACKAGE}.claims": (
        "claims",
        "every claim's verdict rule and measurement, over analysis, theory and result "
        "bundles; runners (ch4_model_checks, ch4_edge) and notebooks judge with them",
    ),
    f"{PACKAGE}.notebook": ("entry", "the first cell of every notebook: sets up everything below"),
    f"{PACKAGE}.cli": ("entry", "the command line: runs runners, notebooks and the checks"),
    f"{PACKAGE}.plan": ("entry", "the plan of every run-store grid (imports the runners), called by the command line"),
    f"{PACKAGE}.__main__": ("entry", "python -m mamba_recall, the command line"),
}

# A chapter's package (``chapters/chN_<topic>/``) spans the layers: its parts sit where they did before each chapter
# had its folder. Generated for every chapter folder, so that a new chapter is placed without editing this table.
CHAPTER_PARTS = {
    "": ("views", "the chapter package's docstring"),
    "configs": ("base", "the chapter's sizes as declared data (imports presets.sizes only); presets merges them"),
    "configs_scaling": ("base", "Chapter 2's scaling regimes, declared data beside its configs"),
    "training": ("train", "the chapter's models, recipes and checkpoints, on the one training loop"),
    "pipelines": ("analysis", "the chapter's probes, loaders and statistics over its models and bundles"),
    "claims": ("claims", "the chapter's claims, one module per book section; claims registers them"),
    "runners": ("experiments", "the runners that train, measure and write the chapter's result bundles"),
    "experiments": ("experiments", "the chapter's run-store experiments, declared once over its runners' functions"),
    "views": ("views", "the chapter's charts and explorers, over its runners' outputs"),
    "overview": ("views", "its overview page's blocks, computed from the committed bundles when the book is built"),
}
CHAPTERS = sorted(p.name for p in (SRC / "chapters").iterdir() if (p / "__init__.py").exists())
MODULE_LAYERS[f"{PACKAGE}.chapters"] = ("views", "the chapters' package docstring")
for _chapter in CHAPTERS:
    for _part, _entry in CHAPTER_PARTS.items():
        MODULE_LAYERS[".".join(filter(None, (PACKAGE, "chapters", _chapter, _part)))] = _entry

# Violations in modules owned by another change in progress; remove when fixed. The test fails on any
# violation not listed here and on any entry listed here that no longer occurs, so the list only shrinks.
KNOWN_VIOLATIONS: set = set()


def _rank(layer: str) -> int:
    return next(i for i, group in enumerate(LAYERS) if layer in group)


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = module_files()


def layer_of(module: str) -> str | None:
    if module == PACKAGE:
        return MODULE_LAYERS[PACKAGE][0]
    keys = [k for k in MODULE_LAYERS if k != PACKAGE and (module == k or module.startswith(k + "."))]
    return MODULE_LAYERS[max(keys, key=len)][0] if keys else None


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module_owner(module: str) -> str | None:
    """The package whose internals ``module`` is (``a.b`` for ``a.b._c`` or ``a.b._c.d``), else None."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if _private(part):
            return ".".join(parts[:i])
    return None


def imports_of(module: str) -> list[tuple[str, str | None, int]]:
    """(imported module, private name of it used or None, line) for every import and ``alias._x`` use."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == PACKAGE or a.name.startswith(PACKAGE + "."):
                    found.append((a.name, None, node.lineno))
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not (source == PACKAGE or source.startswith(PACKAGE + ".")):
                continue
            for a in node.names:
                sub = f"{source}.{a.name}"
                if sub in MODULES:
                    found.append((sub, None, node.lineno))
                    aliases[a.asname or a.name] = sub
                else:
                    found.append((source, a.name if _private(a.name) else None, node.lineno))
    for node in ast.walk(tree):  # alias._x, alias.sub._x
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                target = ".".join([aliases[value.id], *chain])
                if target in MODULES and f"{target}.{node.attr}" not in MODULES:
                    found.append((target, node.attr, node.lineno))
    return found


def violations() -> dict[tuple[str, str, str], str]:
    """(kind, importer, imported) -> message, for every upward, sideways or private import and every cycle."""
    out = {}
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        mine = layer_of(module)
        for target, name, line in imports_of(module):
            where = f"{MODULES[module].relative_to(SRC.parent)}:{line}"
            if target != module:
                graph[module].add(target)
            owner = _private_module_owner(target)
            if owner is not None and not (module == owner or module.startswith(owner + ".")):
                out[("private", module, target)] = (
                    f"{where}: {module} imports {target}, the internals of package {owner}; import the public "
                    f"name that {owner} exports instead (or export it there, with a docstring)"
                )
            if (
                name is not None
                and target != module
                and not (owner is not None and (module == owner or module.startswith(owner + ".")))
            ):
                out[("private", module, f"{target}.{name}")] = (
                    f"{where}: {module} uses the private name {name} of {target}; make it public there (with a "
                    f"docstring) or move it"
                )
            theirs = layer_of(target)
            if mine is None or theirs is None or mine == theirs:
                continue
            if _rank(theirs) > _rank(mine):
                out[("upward", module, target)] = (
                    f"{where}: {module} (layer {mine}) imports {target} (layer {theirs}), a higher layer; move "
                    f"what it needs down into layer {mine} or below, or the importer up"
                )
            elif _rank(theirs) == _rank(mine):
                out[("sideways", module, target)] = (
                    f"{where}: {module} (layer {mine}) imports {target} (layer {theirs}), a sibling layer at "
                    f"the same height; move what it needs below both"
                )
    for comp in _cycles(graph):
        path = _cycle_through(graph, comp)
        out[("cycle", comp[0], comp[1])] = (
            f"import cycle among {comp}: {' -> '.join(path)}; move what both sides need into a module below them"
        )
    return out


def _cycle_through(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """A shortest import path from comp[0] back to itself inside the strongly connected component ``comp``."""
    start, inside = comp[0], set(comp)
    previous, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & inside):
                if w == start:
                    path = [v]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if w not in previous:
                    previous[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{comp} is not a cycle")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def test_every_module_has_a_layer():
    unplaced = [m for m in MODULES if layer_of(m) is None]
    assert not unplaced, (
        f"modules with no layer: {unplaced}; add each to MODULE_LAYERS in tests/base/test_layering.py with one line of why"
    )
    assert {layer for layer, _ in MODULE_LAYERS.values()} <= {name for group in LAYERS for name in group}
    assert all(why.strip() for _, why in MODULE_LAYERS.values())


def test_imports_point_down_with_no_cycle_and_no_private_names():
    found = violations()
    new = {k: v for k, v in found.items() if k not in KNOWN_VIOLATIONS}
    assert not new, "imports against the layers:\n" + "\n".join(sorted(new.values()))


def test_known_violations_still_occur():
    stale = KNOWN_VIOLATIONS - set(violations())
    assert not stale, f"fixed, so remove from KNOWN_VIOLATIONS in tests/base/test_layering.py: {sorted(stale)}"


# ------------------------------------------------------------------------- the checker on small packages
def _checker_on(tmp_path, monkeypatch, files: dict[str, str]):
    root = tmp_path / PACKAGE
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    monkeypatch.setitem(globals(), "SRC", root)
    monkeypatch.setitem(globals(), "MODULES", module_files())
    return violations()


def test_checker_flags_upward_sideways_private_and_cycles(tmp_path, monkeypatch):
    found = _checker_on(
        tmp_path,
        monkeypatch,
        {
            "__init__.py": "",
            "scan/__init__.py": "from ._common import helper\n",
            "scan/_common.py": "def helper():\n    pass\n",
            "models/__init__.py": "",
            "models/a.py": "def f():\n    from ..train import fit\n\n\ndef _x():\n    pass\n",
            "models/b.py": "from . import a\nfrom ..tasks import t\nfrom ..scan._common import helper\n\na._x()\n",
            "tasks/__init__.py": "",
            "tasks/t.py": "",
            "train.py": "from .models import a\nfrom .models.a import _x\n",
            "theory/__init__.py": "",
            "theory/p.py": "from . import q\n",
            "theory/q.py": "from . import p\n",
        },
    )
    assert set(found) == {
        ("upward", f"{PACKAGE}.models.a", f"{PACKAGE}.train"),
        ("sideways", f"{PACKAGE}.models.b", f"{PACKAGE}.tasks.t"),
        ("private", f"{PACKAGE}.models.b", f"{PACKAGE}.scan._common"),
        ("private", f"{PACKAGE}.models.b", f"{PACKAGE}.models.a._x"),
        ("private", f"{PACKAGE}.train", f"{PACKAGE}.models.a._x"),
        ("cycle", f"{PACKAGE}.models.a", f"{PACKAGE}.train"),
        ("cycle", f"{PACKAGE}.theory.p", f"{PACKAGE}.theory.q"),
    }
    assert "models/a.py:2" in found[("upward", f"{PACKAGE}.models.a", f"{PACKAGE}.train")]
    assert "(layer models)" in found[("upward", f"{PACKAGE}.models.a", f"{PACKAGE}.train")]
    assert "(layer train)" in found[("upward", f"{PACKAGE}.models.a", f"{PACKAGE}.train")]
    assert (
        "mamba_recall.models.a -> mamba_recall.train -> mamba_recall.models.a"
        in found[("cycle", f"{PACKAGE}.models.a", f"{PACKAGE}.train")]
    )
    assert (
        "uses the private name _x of mamba_recall.models.a"
        in found[("private", f"{PACKAGE}.models.b", f"{PACKAGE}.models.a._x")]
    )


def chapter_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "chapters" else None


def test_no_chapter_imports_another_and_below_them_none_is_imported_by_name():
    """A chapter imports the layers below it and never another chapter. Below the chapters no module names one: the
    registries that read every chapter (``presets`` their ``configs``, ``claims`` their ``claims``, ``experiment``
    their ``experiments``, ``runners`` their ``runners``) find them with the one scan of the chapter packages
    (:func:`mamba_recall.runners.chapter_modules`, ``importlib`` at run time), so nothing imports upwards; only the
    entry layer (the command line, ``plan``) may import a chapter."""
    bad = []
    for module in MODULES:
        mine = chapter_of(module)
        for target, _, line in imports_of(module):
            theirs = chapter_of(target)
            if theirs is None or theirs == mine:
                continue
            where = f"{MODULES[module].relative_to(SRC.parent)}:{line}"
            if mine is not None:
                bad.append(f"{where}: chapter {mine} imports {target} of chapter {theirs}; move what both need below")
            elif layer_of(module) != "entry":
                bad.append(
                    f"{where}: {module} imports {target}; below the chapters no module names a chapter: find its "
                    "parts with mamba_recall.runners.chapter_modules(part), as presets, claims and experiment do"
                )
    assert not bad, "\n".join(bad)


def test_every_chapter_part_is_placed():
    """Each module of a chapter package is one of the declared parts (configs, claims, runners, views)."""
    loose = [m for m in MODULES if chapter_of(m) and len(m.split(".")) > 3 and m.split(".")[3] not in CHAPTER_PARTS]
    assert not loose, f"modules of a chapter outside its parts {sorted(CHAPTER_PARTS)}: {loose}"
