"""The pipelines of Chapter 5, synthesis: the book's own hypotheses: the probes, loaders and statistics that turn its trained
models and bundles into the numbers its claims and views read (no thresholds: the rules are in ``claims``)."""
