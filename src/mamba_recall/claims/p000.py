"""Claims of paper 000 (placeholder module: being filled in this session)."""
from __future__ import annotations
