"""mamba_recall: the library behind the Mamba recall book.

Modules: ``scan`` (selective scans and their backends), ``models`` (Mamba block and LM with
mamba-ssm parameter names), ``tasks`` (data generators), ``train`` (the training loop),
``results`` (result bundles with provenance), ``runstore`` (resumable training grids), ``presets``
(ci / cpu-hours / paper sizes), ``claims`` (every claim of the four papers, its declared verdict rule and
the generated scorecard), ``plots`` and ``widgets`` (charts and explorers), ``cli``.
"""
__version__ = "0.1.0"
