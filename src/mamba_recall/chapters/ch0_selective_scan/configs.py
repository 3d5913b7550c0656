"""Sizes of Chapter 0 (the selective scan): the backends' agreement, their speed and the Δ/A explorer.

Typed sizes (``presets/sizes.py``): one class per experiment, each field with its smoke cap.
"""

from __future__ import annotations

from dataclasses import dataclass

from mamba_recall.presets.sizes import BATCH, COUNT, Sizes, fixed, size


@dataclass(frozen=True, kw_only=True)
class Agreement(Sizes):
    """Backend agreement on random inputs (batch, channels, N, lengths)."""

    batch: int = size(BATCH)
    channels: int = size(fixed(8))  # the reference scan is a Python loop over L: the tensor sizes are the work
    d_state: int = size()
    lengths: list[int] = size(fixed([1, 7, 512]))
    seed_count: int = size(COUNT)


@dataclass(frozen=True, kw_only=True)
class Bench(Sizes):
    """Speed of each backend, forward + backward: ``sizes`` are [batch, channels, N, L]."""

    sizes: list[list[int]] = size(fixed([[2, 32, 16, 64], [2, 64, 16, 128]]))
    repeats: int = size(fixed(1))
    reference: bool = size()


@dataclass(frozen=True, kw_only=True)
class Explorer(Sizes):
    """The interactive Δ/A explorer grid (deltas × a_values × length × 3 series rows, inlined in the page: under
    Altair's 5000-row limit). Cheap, and the notebook picks its default from the 4th Δ: kept whole in a smoke run."""

    deltas: list[float] = size()
    a_values: list[float] = size()
    length: int = size()


EXPERIMENTS: dict[str, dict[str, Sizes]] = {
    "ch0_agreement": {
        "ci": Agreement(batch=2, channels=8, d_state=4, lengths=[1, 7, 64, 300, 2048], seed_count=3),
        "paper": Agreement(batch=4, channels=64, d_state=16, lengths=[1, 7, 64, 512, 4096, 8192], seed_count=5),
    },
    "scan_bench": {
        "ci": Bench(sizes=[[4, 64, 16, 128], [8, 128, 16, 256]], repeats=2, reference=True),
        "paper": Bench(sizes=[[16, 256, 16, 512], [16, 1536, 16, 2048]], repeats=3, reference=True),
    },
    "ch0_explorer": {
        "ci": Explorer(deltas=[0.05, 0.1, 0.2, 0.5, 1.0, 2.0], a_values=[-0.25, -0.5, -1.0, -2.0, -4.0], length=24),
        "paper": Explorer(
            deltas=[0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0],
            a_values=[-0.125, -0.25, -0.5, -1.0, -2.0, -4.0, -8.0],
            length=24,
        ),
    },
}
