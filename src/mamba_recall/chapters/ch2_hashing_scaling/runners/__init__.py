"""The runners of Chapter 2, hashing and scaling laws: each module with a ``main`` writes committed bundles or checkpoints
(``python -m mamba_recall.chapters.ch2_hashing_scaling.runners.<name> --preset ci``); the others are shared helpers."""
