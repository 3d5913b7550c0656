"""The ``ci`` and ``paper`` sizes of every experiment, in one place.

``ci``: small enough that a section notebook runs in ≤ 2 minutes on 2 CPU cores.
``paper``: the papers' own sizes (a GPU is expected; ``PRESET=paper DEVICE=cuda make book``).
Chapters read their sizes with ``experiment(name, preset)``; nothing else hard-codes a size.
Each chapter keeps its sizes in its own folder, ``chapters/chN_<topic>/configs.py`` (merged below), so that a
chapter's sizes sit with its runners and claims.

Typed sizes: every preset is an instance of a frozen dataclass (:class:`~mamba_recall.presets.sizes.Sizes`, one
class per kind of sizes in its chapter's file), each field with its type and its smoke cap, checked when built and
read as a plain dict by :func:`experiment`. A plain dict in a chapter's ``EXPERIMENTS`` is refused when merged, with
the fix.

``smoke=True`` (the notebooks' ``smoke`` parameter; ``experiment(name, preset, smoke=True)``) keeps a
preset's whole structure -- every grid axis, every model and pattern list, every dict of regimes,
hence every verdict branch, bundle and chart -- with a handful of steps and cells: each field capped as it declares
(``size(smoke=...)``, ``presets/sizes.py``):

* training length (``STEPS``, ``EVERY``) at most :data:`SMOKE_STEPS`, schedule phases (``SCHEDULE``) at most 1;
* sample sizes (``SAMPLES``) at most :data:`SMOKE_SAMPLES`, batch sizes (``BATCH``) at most :data:`SMOKE_BATCH`,
  counts of seeds, draws and random controls (``COUNT``) at most :data:`SMOKE_COUNT`;
* grid axes (``AXIS``) their first and last values; lists of names (models, patterns, tasks) kept whole;
* an experiment's own exception where a generic cap cannot work: ``fixed(value)`` or ``derived(fn)``.

Model sizes (``D``, ``d_model``, ``vocab_size``, lengths) are not capped: the paper's models are
built, only trained and evaluated on a handful of steps and samples.
"""

from __future__ import annotations

from .sizes import SMOKE_BATCH, SMOKE_COUNT, SMOKE_SAMPLES, SMOKE_STEPS, Sizes

#: ``ci`` and ``paper`` are required of every experiment; ``cpu-hours`` (the papers' own settings -- sizes,
#: steps, recipe -- on the subsets of their grids that a 2-core CPU finishes in a few hours, 3 seeds) is optional.
#: ``PRESETS`` stays the presets every experiment defines (what notebooks and ``run`` accept); ``ALL_PRESETS``
#: adds the optional ones, accepted by :func:`check_preset` and :func:`experiment` where an experiment defines them.
REQUIRED_PRESETS = ("ci", "paper")
OPTIONAL_PRESETS = ("cpu-hours",)
PRESETS = REQUIRED_PRESETS
ALL_PRESETS = REQUIRED_PRESETS + OPTIONAL_PRESETS

#: every experiment's sizes by name and preset, merged from the chapters' ``configs`` on first use (a chapter's
#: configs import :mod:`.sizes`, hence this package, so merging them at import would be a cycle whenever a chapter's
#: configs are the first thing imported). Read it as ``presets.EXPERIMENTS``: the
#: module attribute merges on first access (:func:`__getattr__`).
_EXPERIMENTS: dict[str, dict[str, Sizes]] = {}


def __getattr__(name: str):
    if name == "EXPERIMENTS":
        return _merge_chapter_sizes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _merge_chapter_sizes() -> dict[str, dict[str, Sizes]]:
    """``EXPERIMENTS``, merged from the chapters' ``configs`` on the first call (all or nothing: a chapter that
    breaks a rule stops it with the fix, and the next call tries again)."""
    if _EXPERIMENTS:
        return _EXPERIMENTS
    from mamba_recall.runners import chapter_modules  # the one scan of the chapter packages, at run time

    merged: dict[str, dict[str, Sizes]] = {}
    for module in chapter_modules("configs").values():
        if hasattr(module, "SMOKE"):
            raise RuntimeError(
                f"{module.__name__} has a SMOKE dict; declare each field's smoke cap on the field instead "
                "(size(smoke=fixed(...)) or derived(...), presets/sizes.py)."
            )
        for name, sizes in module.EXPERIMENTS.items():
            if name in merged:
                raise RuntimeError(f"experiment {name!r} is defined twice ({module.__name__}).")
            if not set(REQUIRED_PRESETS) <= set(sizes) <= set(ALL_PRESETS):
                raise RuntimeError(
                    f"experiment {name!r} must define the presets {REQUIRED_PRESETS} and may define "
                    f"{OPTIONAL_PRESETS}; it defines {tuple(sizes)}."
                )
            untyped = [preset for preset, entry in sizes.items() if not isinstance(entry, Sizes)]
            if untyped:
                raise RuntimeError(
                    f"experiment {name!r} ({module.__name__}) gives {untyped} as plain dicts; give each "
                    "preset as an instance of a Sizes class (presets/sizes.py), its fields' smoke caps declared."
                )
            merged[name] = sizes
    _EXPERIMENTS.update(merged)
    return _EXPERIMENTS


#: Experiments whose name changed other than by its dot (``chN.x`` became ``chN_x``): the old name -> today's.
RENAMED = {"scan.agreement": "ch0_agreement", "scan.explorer": "ch0_explorer"}


class PresetError(ValueError):
    """An unknown preset or experiment name."""


def check_preset(preset: str) -> str:
    if preset not in ALL_PRESETS:
        raise PresetError(
            f"unknown preset {preset!r}; use 'ci' (small, a laptop CPU, minutes), 'cpu-hours' (the "
            "papers' own settings on the part of their grids a 2-core CPU finishes in hours, 3 seeds; "
            "defined for some experiments only) or 'paper' (the papers' sizes, a GPU: -p preset paper "
            "-p device cuda)."
        )
    return preset


def presets_defining(preset: str) -> list[str]:
    """The experiments that define ``preset`` (every one for ``ci`` and ``paper``)."""
    return sorted(name for name, sizes in _merge_chapter_sizes().items() if preset in sizes)


def experiment(name: str, preset: str, *, smoke: bool = False) -> dict:
    """A copy of the sizes of experiment ``name`` in ``preset``; ``smoke=True``: capped (module docstring)."""
    check_preset(preset)
    EXPERIMENTS = _merge_chapter_sizes()
    if name not in EXPERIMENTS:
        renamed = RENAMED.get(name, name.replace(".", "_", 1))
        if renamed in EXPERIMENTS:
            raise PresetError(f"experiment {name!r} is now called {renamed!r} (one name per experiment, issue 30).")
        raise PresetError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}.")
    if not isinstance(smoke, bool):
        raise PresetError(f"smoke must be True or False, got {smoke!r}.")
    if preset not in EXPERIMENTS[name]:
        have = [p for p in ALL_PRESETS if p in EXPERIMENTS[name]]
        raise PresetError(
            f"experiment {name!r} has no {preset!r} preset (it defines {', '.join(have)}); "
            f"experiments with one: {', '.join(presets_defining(preset))}."
        )
    entry = EXPERIMENTS[name][preset]
    return entry.smoke() if smoke else entry.as_dict()
