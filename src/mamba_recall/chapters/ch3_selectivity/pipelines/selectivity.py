"""Chapter 3 (paper 003, selectivity): the evidence its pages read (:func:`load_evidence`), the committed bundle of a
Chapter 3 runner (:mod:`mamba_recall.chapters.ch3_selectivity.runners.keep_nth`, ``ch3_mqar_train``, ``ch3_induction``, ...) at the
book's preset.
"""

from __future__ import annotations

from mamba_recall import results


def load_evidence(stem: str, preset: str, log=print, lacks=None):
    """The bundle a Chapter 3 page reads for runner ``stem`` (:func:`~mamba_recall.results.evidence`): at ``ci`` (the
    book's default) the strongest complete committed one (``paper``, then ``cpu-hours``, then ``ci``; the page prints
    the bundle's preset), skipping one that ``lacks`` what the check needs; at another preset that preset's bundle,
    or where it was never made (or is incomplete) the strongest one, saying so through ``log``: the chapter logic
    this adds to ``evidence``. The verdict's evidence line names the preset used."""
    if preset != "ci":
        try:
            return results.evidence(stem, preset=preset)
        except results.BundleMissing as exc:
            log(f"{exc}; using the strongest committed bundle instead")
    return results.evidence(stem, lacks=lacks)
