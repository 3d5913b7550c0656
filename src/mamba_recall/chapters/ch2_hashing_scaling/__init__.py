"""Chapter 2, hashing and scaling laws (book/02_hashing_scaling/, paper 002): its configs, claims, runners and views (see :mod:`mamba_recall.chapters`)."""
