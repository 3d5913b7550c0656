"""The book's chapters, one package each, named like their folders in ``book/``: everything that belongs to one
chapter and to no other.

========================== ==================================== ============================================
package                    book folder                          paper
========================== ==================================== ============================================
``ch0_selective_scan``     ``book/00_selective_scan/``          001, the worked forward pass
``ch1_gradient_dynamics``  ``book/01_gradient_dynamics/``       000, gradient dynamics of associative recall
``ch2_hashing_scaling``    ``book/02_hashing_scaling/``         002, hashing and recall scaling laws
``ch3_selectivity``        ``book/03_selectivity/``             003, input selectivity, Haar wavelets, MQAR
``ch4_primacy_recency``    ``book/04_primacy_recency/``         004, primacy and recency
``ch5_synthesis``          ``book/05_synthesis/``               the book's own hypotheses
========================== ==================================== ============================================

In each chapter package (the parts a chapter has; Chapter 0 has only configs and claims), from the lowest layer up:

- ``configs``: the chapter's experiments' sizes at each preset, as typed frozen dataclasses
  (:mod:`mamba_recall.presets` merges every chapter's ``EXPERIMENTS`` into one table, read with
  :func:`mamba_recall.presets.experiment`). Declared data: it imports only :mod:`mamba_recall.presets.sizes`.
- ``training`` (Chapters 1 to 3): the chapter's own models, recipes and checkpoints, on the one training loop of
  :mod:`mamba_recall.train`.
- ``pipelines``: the chapter's own probes, loaders and statistics over its models and bundles (no thresholds);
  what several chapters use stays in :mod:`mamba_recall.analysis`.
- ``claims``: one module per book section, each with the claims its notebook checks and the measurements they use
  (:mod:`mamba_recall.claims` registers every chapter's claims; a claim's ``section`` names its notebook).
- ``runners``: the modules with a ``main`` write the committed bundles and checkpoints
  (``python -m mamba_recall.chapters.<chapter>.runners.<name> --preset ci``); the others are the chapter's
  shared runner code. A runner's short name, used by the results manifest, ``DEPENDS_ON`` and ``make reproduce``,
  is the chapter's number and the module's name: ``runners/keep_nth.py`` of Chapter 3 is ``ch3_keep_nth``
  (:mod:`mamba_recall.runners`).
- ``experiments``: the chapter's run-store experiments, each declared once (``EXPERIMENTS``, a tuple of
  :class:`mamba_recall.experiment.Experiment` over its runners' job lists, job functions and bundle writers);
  :func:`mamba_recall.experiment.experiments` reads every chapter's list, and ``python -m mamba_recall grid <name>
  --preset P`` runs any of them (``plan`` lists them).
- ``views``: the chapter's charts and live explorers over its bundles (one module, or a package of two).

A chapter imports the layers below it and never another chapter (``tests/base/test_layering.py``).
"""
