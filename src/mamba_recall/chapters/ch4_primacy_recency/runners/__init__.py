"""The runners of Chapter 4, primacy and recency: each module with a ``main`` writes committed bundles or checkpoints
(``python -m mamba_recall.chapters.ch4_primacy_recency.runners.<name> --preset ci``); the others are shared helpers."""
