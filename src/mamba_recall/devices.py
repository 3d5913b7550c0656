"""The device a notebook or a runner computes on: ``auto`` (CUDA when torch sees a GPU, else the CPU), ``cpu``
or ``cuda``, checked with one clear message.

It sits below every other layer (it imports only torch), so that the runners (``experiments``) and the
notebooks' ``notebook.setup`` resolve the same names the same way without the runners importing the
notebook layer.
"""

from __future__ import annotations

import torch

DEVICES = ("auto", "cpu", "cuda")


class ParameterError(ValueError):
    """A run parameter (a notebook's preset, seed, device or backend, or a runner's device) has a wrong value."""


def resolve_device(device: str) -> torch.device:
    """The ``torch.device`` for ``device`` in :data:`DEVICES`; ParameterError on an unknown name, or on
    ``"cuda"`` when torch sees no CUDA device."""
    if device not in DEVICES:
        raise ParameterError(f"unknown device {device!r}; use one of {DEVICES}.")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ParameterError(
            "device='cuda' was asked for but torch sees no CUDA device; use device='cpu' or "
            "'auto', or run on a GPU machine."
        )
    return torch.device(device)
