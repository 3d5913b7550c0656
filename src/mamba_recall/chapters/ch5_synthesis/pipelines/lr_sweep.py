r"""The per-cell learning-rate sweep of Chapter 5's long budget (issue 52: "if the probes still do not converge, a
learning rate chosen per cell by a declared sweep on one seed"), declared before any of its runs
(:mod:`mamba_recall.chapters.ch5_synthesis.configs`, ``ch5_capacity_lr_sweep``).

For each cell (layers, D, N) of the grid, one probe per learning rate, seed 0, at the long schedule, at one κ per
cell (:func:`sweep_kappa`): the smallest rung of the ladder at or above :data:`KAPPA_FACTOR` × the cell's κ*₅₀ at
paper 002's budget (geometric mean over its uncensored seeds, the complete ``ch5_capacity`` bundle). The finished
long-budget searches reach 1.3–1.6× the shorter budget's κ*₅₀, and at that rung their probes split between the
≈ 1/κ plateau (never learned) and learning at the step cap: the failure a better rate would fix, where the rates
differ. Below it every rate reaches the target (a tie), far above it every rate stays on the plateau (a tie).

The rule that picks a cell's rate (:func:`pick_rate`): the rate whose probe reaches the highest held-out recall; the
default rate (paper 002's code, 10⁻²) is kept wherever its recall is within :data:`TIE` (the plateau rule's
``min_delta``) of the best; among other rates an exact tie goes to the smaller rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pandas as pd

__all__ = ["KAPPA_FACTOR", "TIE", "pick_rate", "picked_rates", "sweep_kappa", "sweep_kappas"]

#: the sweep's probe sits at the first ladder rung ≥ this × the cell's κ*₅₀ at paper 002's budget
KAPPA_FACTOR = 1.5
#: recalls within this of the best are tied (the plateau rule's min_delta): the default rate wins a tie
TIE = 0.01


def sweep_kappa(kappa50: float, ladder: Iterable[int], factor: float = KAPPA_FACTOR) -> int:
    """The smallest rung of ``ladder`` at or above ``factor`` × ``kappa50`` (the last rung if none is)."""
    ladder = sorted(int(k) for k in ladder)
    if not ladder:
        raise ValueError("the κ ladder is empty; give the ladder of the preset (chapters/ch5_synthesis/configs.py).")
    if not (isinstance(kappa50, (int, float)) and math.isfinite(kappa50) and kappa50 > 0):
        raise ValueError(
            f"κ*₅₀ = {kappa50!r}: the sweep's κ needs a finite positive κ*₅₀ of the cell at paper 002's budget "
            "(a cell whose every seed is censored has none)."
        )
    target = factor * float(kappa50)
    return next((k for k in ladder if k >= target - 1e-9), ladder[-1])


def sweep_kappas(cells: pd.DataFrame, ladder: Iterable[int], factor: float = KAPPA_FACTOR) -> dict[tuple, int]:
    """``{(layers, D, N): κ}`` of :func:`sweep_kappa` for every row of ``cells`` (a
    :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.synthesis.cell_capacity` table at θ = 0.5)."""
    ladder = list(ladder)
    return {
        (int(r.layers), int(r.D), int(r.N)): sweep_kappa(float(r.kappa), ladder, factor) for r in cells.itertuples()
    }


def pick_rate(recall: Mapping[float, float], default: float, tie: float = TIE) -> float:
    """The declared rule: of ``{rate: held-out recall of its probe}``, the rate with the highest recall; ``default``
    wherever its recall is within ``tie`` of the best; an exact tie between other rates goes to the smaller rate.
    ValueError if a recall is not in [0, 1] or ``default`` was not swept."""
    if not recall:
        raise ValueError("no rate was swept: give the recall of each rate's probe.")
    for rate, acc in recall.items():
        if not (isinstance(acc, (int, float)) and math.isfinite(acc) and 0.0 <= acc <= 1.0):
            raise ValueError(f"the recall of rate {rate:g} is {acc!r}; a held-out recall in [0, 1] is needed.")
    if default not in recall:
        raise ValueError(f"the default rate {default:g} was not swept (rates {sorted(recall)}); sweep it too.")
    best = max(recall.values())
    if recall[default] >= best - tie:
        return default
    return min((r for r, a in recall.items() if a == best))


def picked_rates(rates: pd.DataFrame, default: float, tie: float = TIE) -> pd.DataFrame:
    """Per cell (layers, D, N) of a sweep's ``rates`` table (one row per cell and rate: ``lr``, ``accuracy``): the
    rate :func:`pick_rate` picks, its recall and the default's."""
    rows = []
    for (layers, D, N), g in rates.groupby(["layers", "D", "N"]):
        recall = {float(r.lr): float(r.accuracy) for r in g.itertuples()}
        lr = pick_rate(recall, default, tie)
        rows.append(
            {
                "layers": int(layers),
                "D": int(D),
                "N": int(N),
                "kappa": int(g.kappa.iloc[0]),
                "lr": lr,
                "accuracy": recall[lr],
                "default_accuracy": recall[default],
            }
        )
    return pd.DataFrame(rows)
