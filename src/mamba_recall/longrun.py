"""The long-run guard: nothing starts hours of work silently.

A run whose estimated time on the chosen device is over :data:`LONG_RUN_S` (an hour) stops before it
starts with :class:`LongRunError`, which prints the estimate and names the parameter that confirms
it: ``allow_long=True`` in a notebook (``-p allow_long True`` with papermill, ``--allow-long`` for
``python -m mamba_recall run|book|reproduce``). Confirmed runs show a progress bar with an ETA.

Estimates come from measured step times, never from guesses:

* :func:`guard_grid` -- a runner with a grid of cells times a few steps of every cell (``probe``)
  and multiplies by each cell's step budget before the first cell starts (e.g. Table 1 of
  Chapter 1 at the ``paper`` preset on a CPU: 24 cells, about 4.6 hours);
* :func:`check_steps` -- the one training loop (:func:`mamba_recall.train.train`) times its first
  steps and stops a single training whose step budget would take over an hour.

Who may start long runs is the run context's ``allow_long`` (:mod:`mamba_recall.context`): ``setup(...,
allow_long=...)`` enters it from the notebook's parameter (every notebook calls ``setup`` first); a runner's
``--allow-long`` runs its command inside it; ``python -m mamba_recall reproduce --allow-long`` hands it to the
runner processes it starts through the environment variable :data:`mamba_recall.context.ENV_ALLOW_LONG`.
"""

from __future__ import annotations

from typing import Callable, Sequence

from .context import current

LONG_RUN_S = 3600.0
CONFIRM = "allow_long=True (papermill: -p allow_long True; python -m mamba_recall run|book|reproduce: --allow-long)"


class LongRunError(RuntimeError):
    """A run estimated at over an hour on this device was not started (not confirmed)."""


def long_runs_allowed() -> bool:
    """Whether a run estimated at over an hour may start here: the run context's ``allow_long``."""
    return current().allow_long


def format_seconds(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def check_estimate(estimate_s: float, what: str, device="cpu", basis: str = "") -> None:
    """Raise :class:`LongRunError` if ``estimate_s`` is over an hour and long runs are not allowed
    (``basis``: what the estimate rests on, when it is a lower bound)."""
    if estimate_s > LONG_RUN_S and not long_runs_allowed():
        amount = f"at least {format_seconds(estimate_s)} ({basis})" if basis else format_seconds(estimate_s)
        raise LongRunError(
            f"{what}: estimated {amount} on {device}, over an hour; not "
            f"started. To run it anyway set {CONFIRM}; or use preset='ci', smoke=True, or a GPU."
        )


def guard_grid(
    what: str,
    cells: Sequence,
    probe: Callable[[object], float],
    steps: Callable[[object], int],
    *,
    device="cpu",
    min_report_s: float = 300.0,
):
    """Estimate a grid before any cell starts: Σ ``probe(cell)`` (seconds per step, measured) × ``steps(cell)``.
    Over an hour and not allowed: :class:`LongRunError` (as soon as the cells probed so far add up to
    more than an hour: a lower bound is proof enough). Otherwise returns an iterable over ``cells``: a
    progress bar with an ETA when the estimate is over ``min_report_s`` (the estimate is printed
    first), the plain cells otherwise."""
    cells = list(cells)
    estimate = 0.0
    for i, cell in enumerate(cells):
        estimate += probe(cell) * steps(cell)
        if estimate > LONG_RUN_S and not long_runs_allowed() and i + 1 < len(cells):
            check_estimate(estimate, what, device, f"measured step times of {i + 1} of {len(cells)} cells")
    check_estimate(estimate, what, device)
    if estimate < min_report_s:
        return cells
    from tqdm.auto import tqdm

    print(f"{what}: estimated {format_seconds(estimate)} on {device} ({len(cells)} cells)")
    return tqdm(cells, desc=what, unit="cell")


#: Steps the training loop times before it checks its own estimate (the first one is a warm-up).
PROBE_STEPS = 3


def check_steps(seconds_so_far: float, steps_done: int, steps_total: int, what: str, device="cpu") -> None:
    """For a training loop after ``steps_done`` steps: stop if ``steps_total`` steps would take over an hour."""
    if steps_done <= 0 or steps_total <= steps_done:
        return
    check_estimate(seconds_so_far / steps_done * steps_total, f"{what} ({steps_total} steps)", device)
