"""The experiment runners: the modules of ``mamba_recall.experiments`` that have a ``main``, in run order.

Each runner regenerates bundles in ``results/`` (``python -m mamba_recall reproduce`` runs them all); the
other modules of ``experiments`` are shared helpers. The runners are found at run time (``importlib`` on the
package's files), not imported by name: ``results`` names the runner that remakes a missing bundle and sits
below the runners, which write their bundles with it.
"""

from __future__ import annotations

import importlib
import pkgutil


def experiment_runners() -> list[str]:
    """The runner modules of ``mamba_recall.experiments``: those with a ``main`` (each regenerates bundles in
    ``results/``; the others are shared helpers), ordered so that a runner comes after those in its
    ``DEPENDS_ON`` (it reads their outputs). SystemExit if the ``DEPENDS_ON`` lists form a cycle."""
    experiments = importlib.import_module(f"{__package__}.experiments")
    names = sorted(m.name for m in pkgutil.iter_modules(experiments.__path__) if not m.name.startswith("_"))
    modules = {n: importlib.import_module(f"mamba_recall.experiments.{n}") for n in names}
    runners = [n for n in names if hasattr(modules[n], "main")]
    # a runner that reads another's outputs lists it in DEPENDS_ON and runs after it
    ordered: list[str] = []
    while len(ordered) < len(runners):
        ready = [
            n for n in runners if n not in ordered and all(d in ordered for d in getattr(modules[n], "DEPENDS_ON", ()))
        ]
        if not ready:
            raise SystemExit("error: the runners' DEPENDS_ON lists form a cycle or name a missing runner.")
        ordered.append(ready[0])
    return ordered
