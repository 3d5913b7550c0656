"""Claims of paper 004 (placeholder module: being filled in this session)."""
from __future__ import annotations
