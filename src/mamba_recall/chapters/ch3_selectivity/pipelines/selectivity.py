"""Chapter 3 (paper 003, selectivity): the evidence its pages read (:func:`load_evidence`), the committed bundle of a
Chapter 3 runner (:mod:`mamba_recall.chapters.ch3_selectivity.runners.keep_nth`, ``ch3_mqar_train``, ``ch3_induction``, ...) at the
book's preset.
"""

from __future__ import annotations

from mamba_recall import results


def load_evidence(stem: str, preset: str, log=print, lacks=None):
    """The bundle a Chapter 3 page reads for runner ``stem``: at ``ci`` (the book's default) the strongest committed one
    (:func:`~mamba_recall.results.load_strongest_bundle`: a complete ``paper``, then ``cpu-hours``, then the ``ci``
    bundle; the page prints the bundle's preset), at another preset that preset's bundle (the ci one, saying so, where
    it was never made). ``lacks``: at ``ci``, skip a stronger bundle that lacks what the check needs (see
    ``load_strongest_bundle``); the verdict's evidence line names the preset used."""
    if preset == "ci":
        return results.load_strongest_bundle(stem, log=lambda m: None, lacks=lacks)
    return results.load_preset_bundle(stem, preset, log=log)
