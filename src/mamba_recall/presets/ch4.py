"""Sizes of Chapter 4 (paper 004): primacy and recency, long-term channels.

Each entry: ``"chN.experiment": {"ci": {...}, "paper": {...}}`` (see ``presets/__init__.py``).
"""

EXPERIMENTS: dict[str, dict[str, dict]] = {}
