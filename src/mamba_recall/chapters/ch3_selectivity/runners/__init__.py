"""The runners of Chapter 3, input selectivity: each module with a ``main`` writes committed bundles or checkpoints
(``python -m mamba_recall.chapters.ch3_selectivity.runners.<name> --preset ci``); the others are shared helpers."""
