"""The second half of the live explorers (see ``test_live_widgets.py`` for what is checked): a file of its own so
that pytest-xdist's ``--dist loadfile`` runs it on the other process, with its own JupyterLab, beside the first."""

from __future__ import annotations

import pytest
import test_live_widgets as live

pytestmark = pytest.mark.live
lab = live.lab  # the module-scoped fixture: one JupyterLab for this file


@pytest.mark.parametrize(
    "notebook, control, how, button", live.EXPLORERS_B, ids=[e[0].split("/")[1] for e in live.EXPLORERS_B]
)
def test_explorer_redraws_when_a_control_moves(lab, notebook, control, how, button):
    live.check_explorer(lab, notebook, control, how, button)
