"""Chapter 1, gradient dynamics (book/01_gradient_dynamics/, paper 000): its configs, claims, runners and views (see :mod:`mamba_recall.chapters`)."""
