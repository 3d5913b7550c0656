"""Sizes of Chapter 2 (paper 002): hashing circuits and recall scaling laws.

Each entry: ``"chN.experiment": {"ci": {...}, "paper": {...}}`` (see ``presets/__init__.py``).
"""

EXPERIMENTS: dict[str, dict[str, dict]] = {}
