"""The training of Chapter 3: its models, recipes and checkpoints, on the one training loop of
:mod:`mamba_recall.train`."""
