"""The repository's ``benchmarks/`` (scripts, not modules of the library: ``python benchmarks/scan.py``,
``python benchmarks/ch2_ensemble.py``) on ``sys.path``, so that the tests here import them by their file names."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))
