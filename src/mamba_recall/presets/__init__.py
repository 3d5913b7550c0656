"""The ``ci`` and ``paper`` sizes of every experiment, in one place.

``ci``: small enough that a section notebook runs in ≤ 2 minutes on 2 CPU cores.
``paper``: the papers' own sizes (a GPU is expected; ``PRESET=paper DEVICE=cuda make book``).
Chapters read their sizes with ``experiment(name, preset)``; nothing else hard-codes a size.
Each chapter keeps its sizes in ``presets/chN.py`` (merged below), one file per chapter so that each chapter's
sizes sit together.

Typed sizes: an experiment may give each preset as a frozen dataclass (:class:`~mamba_recall.presets._sizes.Sizes`,
one class per shape, each field with its type and its smoke cap; every chapter but 2 is), checked when
built and read as the same dicts. Chapter 2's presets are still dicts, capped by the generic rule below,
until it is typed the same way.

``smoke=True`` (the notebooks' ``smoke`` parameter; ``experiment(name, preset, smoke=True)``) keeps a
preset's whole structure -- every grid axis, every model and pattern list, every dict of regimes,
hence every verdict branch, bundle and chart -- with a handful of steps and cells. Typed sizes cap each field as
it declares (``size(smoke=...)``); dict presets take the generic cap (:func:`smoke_cap`), applied recursively to
every entry, which guesses each entry's kind from its key's name:

* training length: ``steps`` / ``epochs`` → at most :data:`SMOKE_STEPS`; ``warmup`` / ``hold`` /
  ``warmup_steps`` → at most 1; ``eval_every`` / ``checkpoint_every`` → at most :data:`SMOKE_STEPS`;
* sample sizes (:data:`SAMPLE_KEYS`: ``n``, ``n_eval``, ``train_size``, ``*_sequences`` …) → at most
  :data:`SMOKE_SAMPLES`; batch sizes → at most :data:`SMOKE_BATCH`; counts of seeds, draws, repeats
  and random controls → at most 2;
* grid axes (more than 2 numbers in monotone order, or more than 2 lists) → their first and last
  values;
  lists of names (models, patterns, tasks) are kept whole;
* then the experiment's own overrides, ``SMOKE = {name: {key: value}}`` in ``presets/chN.py``, where
  the generic rule cannot work (e.g. an axis that must contain a particular value).

Model sizes (``D``, ``d_model``, ``vocab_size``, lengths) are not capped: the paper's models are
built, only trained and evaluated on a handful of steps and samples.
"""

from __future__ import annotations

import copy

from ._sizes import SMOKE_BATCH, SMOKE_COUNT, SMOKE_SAMPLES, SMOKE_STEPS, Sizes

#: ``ci`` and ``paper`` are required of every experiment; ``cpu-hours`` (the papers' own settings -- sizes,
#: steps, recipe -- on the subsets of their grids that a 2-core CPU finishes in a few hours, 3 seeds) is optional.
#: ``PRESETS`` stays the presets every experiment defines (what notebooks and ``run`` accept); ``ALL_PRESETS``
#: adds the optional ones, accepted by :func:`check_preset` and :func:`experiment` where an experiment defines them.
REQUIRED_PRESETS = ("ci", "paper")
OPTIONAL_PRESETS = ("cpu-hours",)
PRESETS = REQUIRED_PRESETS
ALL_PRESETS = REQUIRED_PRESETS + OPTIONAL_PRESETS

#: every experiment's sizes by name and preset (the chapters' ``presets/chN.py``, merged below): a dict, or typed
#: :class:`~mamba_recall.presets._sizes.Sizes`
EXPERIMENTS: dict[str, dict[str, dict | Sizes]] = {}

#: Overrides of the generic smoke cap of the dict presets, per experiment and preset: ``{name: {preset: {key:
#: value}}}`` or ``{name: {key: value}}`` (every preset), from the chapters' ``SMOKE`` dicts (typed sizes declare
#: their caps on their fields instead).
SMOKE_OVERRIDES: dict[str, dict] = {}


def _merge_chapter_sizes() -> None:
    from . import ch0, ch1, ch2, ch3, ch4, ch5

    for module in (ch0, ch1, ch2, ch3, ch4, ch5):
        for name, sizes in module.EXPERIMENTS.items():
            if name in EXPERIMENTS:
                raise RuntimeError(f"experiment {name!r} is defined twice (presets/{module.__name__}).")
            if not set(REQUIRED_PRESETS) <= set(sizes) <= set(ALL_PRESETS):
                raise RuntimeError(
                    f"experiment {name!r} must define the presets {REQUIRED_PRESETS} and may define "
                    f"{OPTIONAL_PRESETS}; it defines {tuple(sizes)}."
                )
            EXPERIMENTS[name] = sizes
        for name, override in getattr(module, "SMOKE", {}).items():
            if name not in module.EXPERIMENTS:
                raise RuntimeError(f"presets/{module.__name__}: SMOKE names unknown experiment {name!r}.")
            if any(isinstance(v, Sizes) for v in module.EXPERIMENTS[name].values()):
                raise RuntimeError(
                    f"presets/{module.__name__}: {name!r} has typed sizes; declare its smoke cap on the field "
                    "(size(smoke=fixed(...))), not in SMOKE."
                )
            SMOKE_OVERRIDES[name] = override


_merge_chapter_sizes()


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


STEP_KEYS = frozenset({"steps", "epochs", "max_steps", "steps_past_target"})
SCHEDULE_KEYS = frozenset({"warmup", "hold", "warmup_steps"})
EVERY_KEYS = frozenset({"eval_every", "checkpoint_every"})
BATCH_KEYS = frozenset({"batch", "batch_size", "eval_batch"})
COUNT_KEYS = frozenset({"seeds", "draws", "repeats", "seed_count", "n_random"})
SAMPLE_KEYS = frozenset(
    {
        "n",
        "n_seq",
        "n_eval",
        "n_probe",
        "n_noise",
        "mc_n",
        "onestep_n",
        "train_size",
        "test_size",
        "sequences",
        "eval_sequences",
        "test_sequences",
        "real_sequences",
        "token_sequences",
        "exact_sequences",
        "sweep_sequences",
        "designed_n_seq",
    }
)


def _is_axis(value) -> bool:
    """A grid axis: more than 2 numbers in monotone order (a regime triple such as [512, 16, 64] is not
    one), or more than 2 lists (grid cells, size tuples)."""
    if not isinstance(value, list) or len(value) <= 2:
        return False
    if all(isinstance(v, list) for v in value):
        return True
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return False
    steps = [b - a for a, b in zip(value, value[1:])]
    return all(d > 0 for d in steps) or all(d < 0 for d in steps)


def smoke_cap(sizes, key: str | None = None):
    """The generic smoke cap of one entry (see the module docstring); ``sizes`` is not changed."""
    if isinstance(sizes, dict):
        return {k: smoke_cap(v, k) for k, v in sizes.items()}
    if _is_axis(sizes):
        return [copy.deepcopy(sizes[0]), copy.deepcopy(sizes[-1])]
    if isinstance(sizes, list):
        return [smoke_cap(v) for v in sizes]
    if isinstance(sizes, bool) or not isinstance(sizes, int):
        return copy.deepcopy(sizes)
    limit = (
        SMOKE_STEPS
        if key in STEP_KEYS or key in EVERY_KEYS
        else 1
        if key in SCHEDULE_KEYS
        else SMOKE_BATCH
        if key in BATCH_KEYS
        else SMOKE_COUNT
        if key in COUNT_KEYS
        else SMOKE_SAMPLES
        if key in SAMPLE_KEYS
        else None
    )
    return sizes if limit is None else min(sizes, limit)


def presets_defining(preset: str) -> list[str]:
    """The experiments that define ``preset`` (every one for ``ci`` and ``paper``)."""
    return sorted(name for name, sizes in EXPERIMENTS.items() if preset in sizes)


def experiment(name: str, preset: str, *, smoke: bool = False) -> dict:
    """A copy of the sizes of experiment ``name`` in ``preset``; ``smoke=True``: capped (module docstring)."""
    check_preset(preset)
    if name not in EXPERIMENTS:
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
    if isinstance(entry, Sizes):  # typed sizes: each field declares its smoke cap (presets/_sizes.py)
        return entry.smoke() if smoke else entry.as_dict()
    sizes = copy.deepcopy(entry)
    if not smoke:
        return sizes
    capped = smoke_cap(sizes)
    override = SMOKE_OVERRIDES.get(name, {})
    if set(override) <= set(ALL_PRESETS) and override:
        override = override.get(preset, {})
    capped.update(copy.deepcopy(override))
    return capped
