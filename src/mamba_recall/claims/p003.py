"""Claims of paper 003 (placeholder module: being filled in this session)."""
from __future__ import annotations
