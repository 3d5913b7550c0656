"""Probes and interventions on trained models that more than one chapter uses: recall probes, channel statistics,
ablations and their statistics (no thresholds: the rules are in the claims). A probe of one chapter only is in that
chapter's ``pipelines`` (``mamba_recall.chapters.chN_<topic>.pipelines``)."""
