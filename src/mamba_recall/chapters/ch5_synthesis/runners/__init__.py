"""The runners of Chapter 5, synthesis: the book's own hypotheses: each module with a ``main`` writes committed bundles or checkpoints
(``python -m mamba_recall.chapters.ch5_synthesis.runners.<name> --preset ci``); the others are shared helpers."""
