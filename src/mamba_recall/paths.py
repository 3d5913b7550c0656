"""Where the book's files live. The package is installed editable from the repository (``src/`` layout)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(os.environ.get("MAMBA_RECALL_ROOT", Path(__file__).resolve().parents[2]))
RESULTS_DIR = REPO_ROOT / "results"
BUILD_DIR = REPO_ROOT / "_build"


def scorecard_dir() -> Path:
    """Folder where chapters record their claims (``MAMBA_RECALL_SCORECARD_DIR`` overrides)."""
    return Path(os.environ.get("MAMBA_RECALL_SCORECARD_DIR", BUILD_DIR / "scorecard"))
