"""Chapter 0, the selective scan (book/00_selective_scan/, paper 001): its configs and claims (see :mod:`mamba_recall.chapters`)."""
