"""The runners of Chapter 1, gradient dynamics: each module with a ``main`` writes committed bundles or checkpoints
(``python -m mamba_recall.chapters.ch1_gradient_dynamics.runners.<name> --preset ci``); the others are shared helpers."""
