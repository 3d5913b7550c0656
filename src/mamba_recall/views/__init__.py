"""Chapter-specific Altair charts (static book, sliders over precomputed grids) and ipywidgets explorers
(Jupyter). Generic builders live in ``plots.py`` and ``widgets.py``."""
