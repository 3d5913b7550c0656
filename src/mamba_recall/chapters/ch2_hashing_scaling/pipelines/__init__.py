"""The pipelines of Chapter 2, hashing and scaling laws: the probes, loaders and statistics that turn its trained
models and bundles into the numbers its claims and views read (no thresholds: the rules are in ``claims``)."""
