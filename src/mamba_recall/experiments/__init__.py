"""Moved: the runners are in their chapters' folders, ``mamba_recall.chapters.<chapter>.runners.<name>``.

Bundles and run records made before the move record commands such as ``python -m
mamba_recall.experiments.ch3_keep_nth --preset ci``; the library reads them as today's
(:func:`mamba_recall.runners.current_command`). Run as a command, such an old path stops at once with the command
to run instead (the same arguments), rather than with Python's bare "No module named ...".
"""

from __future__ import annotations

import sys
from importlib.abc import MetaPathFinder


class _MovedRunners(MetaPathFinder):
    """Finds nothing: names the chapter's runner module for ``mamba_recall.experiments.<name>``."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(__name__ + "."):
            return None
        from ..runners import current_module, experiment_runners

        new = current_module(fullname)
        if new != fullname:
            message = f"{fullname} has moved to its chapter's folder: run `python -m {new}` with the same arguments."
        else:
            message = (
                f"{fullname}: no runner is named {fullname.rsplit('.', 1)[1]!r} (the runners are in their chapters' "
                f"folders now, mamba_recall.chapters.<chapter>.runners); the runners are "
                f"{', '.join(experiment_runners())}."
            )
        raise ModuleNotFoundError(message, name=fullname)


if not any(isinstance(f, _MovedRunners) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedRunners())
