"""Chapter 4, primacy and recency (book/04_primacy_recency/, paper 004): its configs, claims, runners and views (see :mod:`mamba_recall.chapters`)."""
