"""Sizes of Chapter 3 (paper 003): input selectivity, Haar wavelets, MQAR constructions.

Each entry: ``"chN.experiment": {"ci": {...}, "paper": {...}}`` (see ``presets/__init__.py``).
"""

EXPERIMENTS: dict[str, dict[str, dict]] = {}
