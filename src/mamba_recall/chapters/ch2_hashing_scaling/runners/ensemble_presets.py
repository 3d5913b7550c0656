"""Which experiments of Chapter 2 are ensembles, the presets they run at and their one command: below both the
ensembles' runner (:mod:`.ensembles`) and the one-model figure grids (:mod:`.figure_grids`), which refuse these presets
for the figures the ensembles make there (one route per figure and preset)."""

from __future__ import annotations

#: the ensemble experiments, each the name of its runner, its sizes (``presets.experiment``), its run-store folder
#: and the stem of its bundle
EXPERIMENTS = ("ch2_scaling", "ch2_multihead")
#: the presets of the ensembles, at which they are the one route to Figs. 7, 8, 10–11 and Tab. 10 (``cpu-hours``:
#: the one-model-per-job figure grids of :mod:`.figure_grids`, which refuse these presets for those figures)
PRESETS = ("ci", "paper")


def grid_command(runner: str, preset: str) -> str:
    """The one command of the declared experiment ``runner`` (its ensembles) at ``preset``."""
    from mamba_recall.experiment import command_line

    return command_line(runner, preset)
