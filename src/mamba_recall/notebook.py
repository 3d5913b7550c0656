"""What the first cell of every chapter notebook calls: check the papermill parameters, seed, set up.

Every notebook starts with a cell tagged ``parameters``::

    preset = "ci"; seed = 0; device = "auto"; backend = "auto"

and then ``ctx = setup(preset, seed, device, backend)``, which stops the notebook with one clear
message on a wrong value, seeds Python, NumPy and torch, enables the offline chart renderer and
prints the preset, device and scan backend that will be used (backends are never chosen silently).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import torch

from .devices import DEVICES, ParameterError, resolve_device  # noqa: F401  (part of this module's interface)
from .longrun import allow_long_runs
from .plots import enable_offline_renderer
from .presets import check_preset, experiment
from .results import redirect_smoke_outputs
from .scan import BACKENDS, resolve_backend


@dataclass(frozen=True)
class NotebookContext:
    preset: str
    seed: int
    device: torch.device
    backend: str  # the concrete backend: reference | chunked | mamba_ssm
    smoke: bool = False  # the preset's whole structure with a handful of steps and cells
    allow_long: bool = False  # may start runs estimated at over an hour on this device

    def sizes(self, name: str) -> dict:
        """The sizes of experiment ``name`` in this preset, capped when ``smoke`` (see ``presets``)."""
        return experiment(name, self.preset, smoke=self.smoke)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def setup(
    preset: str = "ci",
    seed: int = 0,
    device: str = "auto",
    backend: str = "auto",
    quiet: bool = False,
    smoke: bool = False,
    allow_long: bool = False,
) -> NotebookContext:
    try:
        check_preset(preset)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"seed must be a non-negative integer, got {seed!r}.")
    if backend not in BACKENDS:
        raise ParameterError(f"unknown backend {backend!r}; use one of {BACKENDS}.")
    for name, value in (("smoke", smoke), ("allow_long", allow_long)):
        if not isinstance(value, bool):
            raise ParameterError(f"{name} must be True or False, got {value!r}.")
    dev = resolve_device(device)
    concrete = resolve_backend(backend, dev)
    allow_long_runs(allow_long)
    redirect_smoke_outputs(smoke)
    seed_everything(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    enable_offline_renderer()
    if not quiet:
        print(
            f"preset={preset} seed={seed} device={dev} scan backend={concrete} (asked: {backend}) "
            f"torch={torch.__version__}"
            + (" smoke=True (capped sizes, see mamba_recall.presets)" if smoke else "")
            + (" allow_long=True" if allow_long else "")
        )
    return NotebookContext(preset, seed, dev, concrete, smoke, allow_long)
