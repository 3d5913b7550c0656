"""Experiment runners that produce the committed result bundles and checkpoints in ``results/``.

Each module has a ``main`` and runs as ``python -m mamba_recall.experiments.<module> --preset ci|paper``;
``make reproduce`` calls them all."""
