"""Chapter 3, input selectivity (book/03_selectivity/, paper 003): its configs, claims, runners and views (see :mod:`mamba_recall.chapters`)."""
