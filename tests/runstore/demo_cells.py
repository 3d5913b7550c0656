"""The tests' demo cells: :class:`mamba_recall.runstore.DemoConfig` (what ``mamba_recall.runstore:demo_job`` runs)
with the fields some tests add to tell jobs apart, each absent from the record when None, so a cell's record is the
dict the test wrote before jobs were typed (and its job keeps that key). Every test folder is on ``sys.path``
(``tests/conftest.py``): import it as ``demo_cells``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mamba_recall.runstore import DemoConfig, omitted_if_none


@dataclass(frozen=True, kw_only=True)
class DemoCell(DemoConfig):
    """A demo cell with a ``name`` (``--only``'s bare values), a second plain field ``y``, the key ``of`` the job of
    an earlier stage it follows, or a nested ``extra`` (a field that rides along in a bundle's cells)."""

    name: str | None = omitted_if_none()
    y: int | None = omitted_if_none()
    of: str | None = omitted_if_none()
    extra: dict[str, Any] | None = omitted_if_none()
