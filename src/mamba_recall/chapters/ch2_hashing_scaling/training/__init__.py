"""The training of Chapter 2: its named recipes on ensembles of simplified models, on the one training loop of
:mod:`mamba_recall.train`."""
