"""Chapter 5, synthesis: the book's own hypotheses (book/05_synthesis/): its configs, claims, runners and views (see :mod:`mamba_recall.chapters`)."""
