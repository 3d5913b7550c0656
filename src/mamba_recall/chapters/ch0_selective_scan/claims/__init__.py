"""Chapter 0 (``book/00_selective_scan/``): the claims of paper 001, "Worked Example: Complete Mamba Forward Pass",
a hand calculation of one Mamba forward pass, checked against the exact float64 recurrence (tier ``exact``).

One module per book section, named after its notebook; in each, a claim's measurement sits above its declaration:

* :mod:`.worked_example` — 0.1, ``01_worked_example``: the printed Δ, Ā, B̄, states and outputs, the document's
  arithmetic on its own Δ, and its three key observations; the precision rule of every printed number
  (:data:`ROUNDING`);
* :mod:`.parallel_scan` — 0.2, ``02_parallel_scan``: "efficient linear-time processing" (the parallel scan agrees
  with the sequential loop; memory linear in L);
* ``_common`` — :data:`QUOTES`, the document's sentence each claim tests.

Importing this package registers every claim of the chapter, with its quote, in the order of the sections.
"""

from __future__ import annotations

from mamba_recall.claims.core import quoted, register
from . import parallel_scan, worked_example
from ._common import QUOTES
from .worked_example import LAST_DIGIT, ROUNDING

register(*quoted(QUOTES, *worked_example.CLAIMS, *parallel_scan.CLAIMS))

__all__ = ["LAST_DIGIT", "QUOTES", "ROUNDING", "parallel_scan", "worked_example"]
