"""Claims of paper 002 (placeholder module: being filled in this session)."""
from __future__ import annotations
