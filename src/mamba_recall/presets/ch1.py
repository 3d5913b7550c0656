"""Sizes of Chapter 1 (paper 000): gradient dynamics of simplified Mamba on associative recall.

Each entry: ``"chN.experiment": {"ci": {...}, "paper": {...}}`` (see ``presets/__init__.py``).
"""

EXPERIMENTS: dict[str, dict[str, dict]] = {}
