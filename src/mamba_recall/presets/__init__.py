"""The ``ci`` and ``paper`` sizes of every experiment, in one place.

``ci``: small enough that a section notebook runs in ≤ 2 minutes on 2 CPU cores.
``paper``: the papers' own sizes (a GPU is expected; ``PRESET=paper DEVICE=cuda make book``).
Chapters read their sizes with ``experiment(name, preset)``; nothing else hard-codes a size.
Chapter 0's sizes are here; chapters 1-4 keep theirs in ``presets/chN.py`` (merged below), one
file per chapter so that each chapter's sizes sit together.
"""
from __future__ import annotations

import copy

PRESETS = ("ci", "paper")

EXPERIMENTS: dict[str, dict[str, dict]] = {
    # Chapter 0: backend agreement on random inputs (batch, channels, N, lengths).
    "scan.agreement": {
        "ci": {"batch": 2, "channels": 8, "d_state": 4, "lengths": [1, 7, 64, 300, 2048], "seed_count": 3},
        "paper": {"batch": 4, "channels": 64, "d_state": 16, "lengths": [1, 7, 64, 512, 4096, 8192],
                  "seed_count": 5},
    },
    # Chapter 0: speed of each backend, forward + backward.
    "scan.bench": {
        "ci": {"sizes": [[4, 64, 16, 128], [8, 128, 16, 256]], "repeats": 2, "reference": True},
        "paper": {"sizes": [[16, 256, 16, 512], [16, 1536, 16, 2048]], "repeats": 3, "reference": True},
    },
    # Chapter 0: the interactive Δ/A explorer grid.
    "scan.explorer": {
        "ci": {"deltas": [0.05, 0.1, 0.2, 0.5, 1.0, 2.0], "a_values": [-0.25, -0.5, -1.0, -2.0, -4.0], "length": 24},
        "paper": {"deltas": [0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0],
                  "a_values": [-0.125, -0.25, -0.5, -1.0, -2.0, -4.0, -8.0], "length": 48},
    },
}


def _merge_chapter_sizes() -> None:
    from . import ch1, ch2, ch3, ch4

    for module in (ch1, ch2, ch3, ch4):
        for name, sizes in module.EXPERIMENTS.items():
            if name in EXPERIMENTS:
                raise RuntimeError(f"experiment {name!r} is defined twice (presets/{module.__name__}).")
            if set(sizes) != set(PRESETS):
                raise RuntimeError(f"experiment {name!r} must define exactly the presets {PRESETS}.")
            EXPERIMENTS[name] = sizes


_merge_chapter_sizes()


class PresetError(ValueError):
    """An unknown preset or experiment name."""


def check_preset(preset: str) -> str:
    if preset not in PRESETS:
        raise PresetError(f"unknown preset {preset!r}; use 'ci' (small, a laptop CPU, minutes) or 'paper' "
                          "(the papers' sizes, a GPU: -p preset paper -p device cuda).")
    return preset


def experiment(name: str, preset: str) -> dict:
    """A copy of the sizes of experiment ``name`` in ``preset``."""
    check_preset(preset)
    if name not in EXPERIMENTS:
        raise PresetError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}.")
    return copy.deepcopy(EXPERIMENTS[name][preset])
