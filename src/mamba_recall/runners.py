"""The experiment runners: the modules of the chapters' ``runners`` packages that have a ``main``, in run order.

Each runner regenerates bundles in ``results/`` (``python -m mamba_recall reproduce`` runs them all); the
other modules of a ``runners`` package are that chapter's shared helpers. A runner's short name is its chapter's
number and its module's name (``chapters/ch3_selectivity/runners/keep_nth.py`` is ``ch3_keep_nth``): the results
manifest, ``DEPENDS_ON`` lists and bundle file names use it. The runners are found at run time (``importlib`` on
the package's files), not imported by name: ``results`` names the runner that remakes a missing bundle and sits
below the runners, which write their bundles with it. :func:`chapter_modules` is that one scan of the chapter
packages; the presets' sizes (``configs``) and the declared experiments (``experiments``,
:mod:`mamba_recall.experiment`) are collected with it too.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import re

CHAPTERS = f"{__package__}.chapters"
#: a chapter package's name: ``ch<N>_<topic>``
_CHAPTER = re.compile(r"ch(\d+)_[a-z0-9_]+")


def chapter_modules(part: str) -> dict:
    """Chapter package name -> its module ``part`` (``runners``, ``experiments``), imported, in chapter order; a
    chapter without that part is left out. The one scan of the chapter packages (``importlib`` at run time, so
    that the registries below the chapters never import them by name). SystemExit if a chapter package is not named
    ``ch<N>_<topic>``."""
    chapters = importlib.import_module(CHAPTERS)
    out = {}
    for chapter in sorted(m.name for m in pkgutil.iter_modules(chapters.__path__)):
        if _CHAPTER.fullmatch(chapter) is None:
            raise SystemExit(f"error: {CHAPTERS}.{chapter} is not named ch<N>_<topic>; rename it.")
        name = f"{CHAPTERS}.{chapter}.{part}"
        if importlib.util.find_spec(name) is not None:
            out[chapter] = importlib.import_module(name)
    return out


@functools.cache
def _runner_modules() -> dict[str, str]:
    """Short name -> module path, for every module of every chapter's ``runners`` package (helpers too). Read once
    per process; callers do not change it."""
    out = {}
    for chapter, runners in chapter_modules("runners").items():
        number = _CHAPTER.fullmatch(chapter).group(1)
        for m in pkgutil.iter_modules(runners.__path__):
            if not m.name.startswith("_"):
                out[f"ch{number}_{m.name}"] = f"{runners.__name__}.{m.name}"
    return out


def runner_module(name: str) -> str:
    """The module path of runner (or runner helper) ``name``: ``ch3_keep_nth`` ->
    ``mamba_recall.chapters.ch3_selectivity.runners.keep_nth``. ValueError naming the known ones if unknown."""
    modules = _runner_modules()
    if name not in modules:
        raise ValueError(f"no runner named {name!r}; the runners are {', '.join(experiment_runners())}.")
    return modules[name]


def runner_command(name: str) -> str:
    """``python -m <module>`` of runner ``name`` (``ch4_edge`` -> ``python -m
    mamba_recall.chapters.ch4_primacy_recency.runners.edge``): the one place a runner's command is spelled, for the
    commands runners record, the regenerate lines of load errors and the "not run" texts of claims. ValueError
    (:func:`runner_module`) if no runner has that name."""
    return f"python -m {runner_module(name)}"


def runner_name(module: str) -> str | None:
    """The short name of a runner's module path (``mamba_recall.chapters.ch3_selectivity.runners.keep_nth`` ->
    ``ch3_keep_nth``); None for any other module."""
    parts = module.split(".")
    if len(parts) == 5 and parts[:2] == CHAPTERS.split(".") and parts[3] == "runners":
        match = _CHAPTER.fullmatch(parts[2])
        return f"ch{match.group(1)}_{parts[4]}" if match else None
    return None


def experiment_runners() -> list[str]:
    """The short names of the runners (the modules with a ``main``: each regenerates bundles in ``results/``; the
    others are shared helpers), ordered so that a runner comes after those in its ``DEPENDS_ON`` (it reads their
    outputs). SystemExit if the ``DEPENDS_ON`` lists form a cycle."""
    paths = _runner_modules()
    modules = {n: importlib.import_module(p) for n, p in sorted(paths.items())}
    runners = [n for n in modules if hasattr(modules[n], "main")]
    # a runner that reads another's outputs lists it in DEPENDS_ON and runs after it
    ordered: list[str] = []
    while len(ordered) < len(runners):
        ready = [
            n for n in runners if n not in ordered and all(d in ordered for d in getattr(modules[n], "DEPENDS_ON", ()))
        ]
        if not ready:
            raise SystemExit("error: the runners' DEPENDS_ON lists form a cycle or name a missing runner.")
        ordered.append(ready[0])
    return ordered
