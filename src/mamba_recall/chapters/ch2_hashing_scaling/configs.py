"""Sizes of Chapter 2 (paper 002): hashing circuits and recall scaling laws.

Each entry: ``"chN_experiment": {"ci": Sizes, "paper": Sizes}`` (see ``presets/__init__.py``): typed sizes, one
:class:`~mamba_recall.presets.sizes.Sizes` class per kind below, each field with its type and its smoke cap.
Regimes (V, N_f, L): R0 (512, 16, 64), R1 (512, 32, 128), R2 (1024, 16, 64) [authors' code];
R-ci (64, 8, 32), R-a (128, 16, 64, App. K's setting), R-b (256, 16, 64) [ours: CPU-sized].
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mamba_recall.presets.sizes import AXIS, BATCH, COUNT, EVERY, SAMPLES, SCHEDULE, STEPS, Sizes, size
from .configs_scaling import SCALING, Regime

# --------------------------------------------------------------------------------------------- the sizes' kinds
# One class per kind of sizes (presets/sizes.py): each field's type and its smoke cap (KEEP unless said). Regimes
# (V, N_f, L) are triples, not grid axes: kept whole.


@dataclass(frozen=True, kw_only=True)
class CircuitThm1(Regime):
    n_seq: int = size(SAMPLES)


@dataclass(frozen=True, kw_only=True)
class CircuitLemma1(Regime):
    D: int = size()
    N: int = size()
    n_seq: int = size(SAMPLES)


@dataclass(frozen=True, kw_only=True)
class CircuitDesigned(Regime):
    n_seq: int = size(SAMPLES)
    Ds: list[int] = size(AXIS)
    Ns: list[int] = size(AXIS)


@dataclass(frozen=True, kw_only=True)
class CircuitFig1(Sizes):
    V: int = size()
    D: int = size()
    N: int = size()


@dataclass(frozen=True, kw_only=True)
class Circuit(Sizes):
    """Notebook 01: Thm 1 exactness, Lemma 1 inside its domain, the designed Thm 2 grid, Fig. 1's toy."""

    thm1: CircuitThm1 = size()
    lemma1: CircuitLemma1 = size()
    designed: CircuitDesigned = size()
    fig1: CircuitFig1 = size()


@dataclass(frozen=True, kw_only=True)
class Theory(Sizes):
    Ds: list[int] = size(AXIS)
    Ns: list[int] = size(AXIS)
    Vs: list[int] = size(AXIS)
    Nfs: list[int] = size(AXIS)


@dataclass(frozen=True, kw_only=True)
class Vsweep(Sizes):
    cells: list[list[int]] = size(AXIS)
    Nf: int = size()
    L: int = size()
    n_seq: int = size(SAMPLES)
    Vs: list[int] = size(AXIS)


@dataclass(frozen=True, kw_only=True)
class Mech(Regime):
    D: int = size()
    N: int = size()
    steps: int = size(STEPS)
    batch: int = size(BATCH)
    warmup: int = size(SCHEDULE)
    hold: int = size(SCHEDULE)
    n_eval: int = size(SAMPLES)
    n_probe: int = size(SAMPLES)
    recipe: str = size()


@dataclass(frozen=True, kw_only=True)
class Remarks(Sizes):
    V: int = size()
    D: int = size()
    N: int = size()
    Nf: int = size()
    n_seq: int = size(SAMPLES)


@dataclass(frozen=True, kw_only=True)
class MultiheadDesigned(Sizes):
    V: int = size()
    D: int = size()
    N: int = size()
    M: int = size()
    L: int = size()
    batch: int = size(BATCH)


@dataclass(frozen=True, kw_only=True)
class Multihead(Regime):
    """Section 05: head patterns over (N, M) at fixed D; the run store's lists its ``cells`` (pattern, values, M, N)."""

    D: int = size()
    Ns: list[int] = size(AXIS)
    Ms: list[int] = size(AXIS)
    patterns: list[str] = size(optional=True)
    cells: list[list[Any]] = size(AXIS, optional=True)
    values: str = size()
    seeds: int = size(COUNT)
    steps: int = size(STEPS)
    batch: int = size(BATCH)
    warmup: int = size(SCHEDULE)
    hold: int = size(SCHEDULE)
    grad_clip: float = size()
    n_eval: int = size(SAMPLES)
    n_noise: int = size(SAMPLES)
    designed: MultiheadDesigned = size(optional=True)


@dataclass(frozen=True, kw_only=True)
class Thm5(Regime):
    """Thm 5's MHA pairs in the regime of a ch2_multihead preset."""

    D: int = size()
    batch: int = size(BATCH)
    warmup: int = size(SCHEDULE)
    hold: int = size(SCHEDULE)
    grad_clip: float = size()
    n_eval: int = size(SAMPLES)
    n_noise: int = size(SAMPLES)
    values: str = size()
    Ns: list[int] = size(AXIS)
    Ms: list[int] = size(AXIS)
    cells: list[list[Any]] = size(AXIS)
    seeds: int = size(COUNT)
    steps: int = size(STEPS)


@dataclass(frozen=True, kw_only=True)
class Overrides(Sizes):
    """Changes to a named recipe's schedule (``RECIPES``)."""

    warmup: int = size(SCHEDULE, optional=True)
    hold: int = size(SCHEDULE, optional=True)


@dataclass(frozen=True, kw_only=True)
class TrainedGrid(Regime):
    """Trained simplified models on (D, N) cells of one regime (run store): the README reference grid (``Ds`` ×
    ``Ns``) or a row and a column of the D–N plane (``cells``)."""

    Ds: list[int] = size(AXIS, optional=True)
    Ns: list[int] = size(AXIS, optional=True)
    skip_N_gt_D: bool = size(optional=True)
    cells: list[list[int]] = size(AXIS, optional=True)
    batch: int = size(BATCH)
    steps: int = size(STEPS)
    recipe: str = size()
    overrides: Overrides = size()
    seeds: int = size(COUNT)
    n_eval: int = size(SAMPLES)
    eval_every: int = size(EVERY)
    target_accuracy: float = size()


@dataclass(frozen=True, kw_only=True)
class DesignedCapacity(Sizes):
    V: int = size()
    cells: list[list[int]] = size(AXIS)
    levels: list[float] = size(AXIS)
    readouts: list[str] = size()
    n_queries: int = size()
    seed: int = size()
    min_fit_Nf: int = size()


# ------------------------------------------------------------------------------------------------- the presets


#: Training recipes of the simplified models (paper 002), run by :func:`.training.ensemble.train_ensemble`.
#: ``warmup`` / ``hold`` are steps; ``schedule`` names a :func:`mamba_recall.train.lr_at` schedule; ``batch_size`` is
#: informational (the runners build batches of that size).
RECIPES = {
    # the authors' code, D–N linear recipe: warmup 100 → hold 400 → cosine 1500 → 0, AdamW β=(0.9,0.95), wd 0
    "code": dict(
        lr=1e-2,
        betas=(0.9, 0.95),
        weight_decay=0.0,
        warmup=100,
        hold=400,
        schedule="code",
        grad_clip=1.5,
        label_smoothing=0.1,
        batch_size=128,
    ),
    # Tab. 9 (App. J): warmup 500, linear decay ÷10 over 15000 steps, wd 0.1, clip 0.75
    "tab9": dict(
        lr=1e-2,
        betas=(0.9, 0.999),
        weight_decay=0.1,
        warmup=500,
        hold=0,
        schedule="tab9",
        grad_clip=0.75,
        label_smoothing=0.1,
        batch_size=128,
    ),
}


_CIRCUIT_CI = Circuit(
    thm1=CircuitThm1(V=128, Nf=16, L=64, n_seq=1000),
    lemma1=CircuitLemma1(V=1024, Nf=4, L=16, D=1000, N=900, n_seq=256),
    designed=CircuitDesigned(V=256, Nf=16, L=64, n_seq=64, Ds=[16, 32, 64, 128, 256], Ns=[4, 8, 16, 32, 64, 128, 256]),
    fig1=CircuitFig1(V=16, D=8, N=4),
)
_VSWEEP_CI = Vsweep(cells=[[128, 64], [64, 32]], Nf=16, L=64, n_seq=64, Vs=[128, 256, 512, 1024, 2048, 4096, 8192])
_MECH_CI = Mech(
    V=128, Nf=16, L=64, D=64, N=16, steps=200, batch=128, warmup=50, hold=50, n_eval=500, n_probe=50, recipe="code"
)

EXPERIMENTS: dict[str, dict[str, Sizes]] = {
    # Notebook 01: Thm 1 exactness, Lemma 1 inside its domain N < D < V (V = 1024, N_f = 4: the condition holds at
    # D = 1000, N = 900), the designed Thm 2 grid (Fig. 6b).
    "ch2_circuit": {
        "ci": _CIRCUIT_CI,
        "paper": replace(
            _CIRCUIT_CI,
            thm1=replace(_CIRCUIT_CI.thm1, n_seq=10000),
            lemma1=replace(_CIRCUIT_CI.lemma1, n_seq=2500),
            designed=replace(_CIRCUIT_CI.designed, n_seq=1000),
        ),
    },
    # Notebook 02: the laws on (D, N) grids with sliders over V and N_f.
    "ch2_theory": {
        "ci": Theory(
            Ds=[4, 8, 16, 32, 64, 128, 256],
            Ns=[2, 4, 8, 16, 32, 64, 128, 256],
            Vs=[64, 128, 256, 512, 1024, 8192],
            Nfs=[8, 16, 32, 64],
        ),
        "paper": Theory(
            Ds=[2**k for k in range(1, 11)],
            Ns=[2**k for k in range(0, 10)],
            Vs=[64, 128, 256, 512, 1024, 2048, 4096, 8192, 65536],
            Nfs=[4, 8, 16, 32, 64, 128, 256],
        ),
    },
    # Notebook 02: Thm 2 and Thm 3's V_max: the designed model's accuracy vs V at fixed (D, N, N_f).
    "ch2_vsweep": {
        "ci": _VSWEEP_CI,
        "paper": replace(
            _VSWEEP_CI,
            cells=[[128, 64], [64, 32], [64, 16], [32, 16]],
            n_seq=1000,
            Vs=[128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536],
        ),
    },
    # Notebook 03: one trained model read as a hash table (Figs. 2-5, 9). R-a, D=64, N=16.
    "ch2_mech": {
        "ci": _MECH_CI,
        "paper": replace(_MECH_CI, V=256, N=32, steps=2000, warmup=100, hold=400, n_eval=2000, n_probe=100),
    },
    # Notebook 04 / runner ch2_scaling: Fig. 6 (a, a', a'', b, c, d), Fig. 7, Figs. 10-11, Tab. 10 (chapters/ch2_hashing_scaling/configs_scaling.py).
    "ch2_scaling": SCALING,
}

# Notebook 04: Remarks 3 and 5, the designed single-layer circuit on repeating keys / queries (App. G).
_REMARKS_CI = Remarks(V=256, D=128, N=128, Nf=8, n_seq=500)
EXPERIMENTS["ch2_remarks"] = {"ci": _REMARKS_CI, "paper": replace(_REMARKS_CI, n_seq=5000)}

# Section 05 / runner ch2_multihead: Fig. 8 (head patterns over (N, M) at fixed D), Fig. 15 (logit noise vs M),
# and Thm 5. Paper: the authors' MQAR__N_M__linear_trained__regime_0 (R-mh, D=60).
_MULTIHEAD_CI = Multihead(
    V=64,
    Nf=8,
    L=32,
    D=32,
    Ns=[1, 2, 4, 8],
    Ms=[1, 2, 4],
    patterns=["MQA", "MKA", "MVA", "MHA"],
    values="code",
    seeds=1,
    steps=300,
    batch=64,
    warmup=50,
    hold=50,
    grad_clip=5.0,
    n_eval=500,
    n_noise=200,
    designed=MultiheadDesigned(V=64, D=32, N=2, M=4, L=32, batch=4),
)
_MULTIHEAD_PAPER = replace(
    _MULTIHEAD_CI,
    V=512,
    Nf=16,
    L=64,
    D=60,
    Ns=list(range(2, 11)),
    Ms=[1, 2, 3, 4, 5, 6],
    seeds=3,
    steps=4000,
    batch=128,
    warmup=100,
    hold=1400,
    n_eval=2000,
    n_noise=1000,
    designed=MultiheadDesigned(V=512, D=60, N=4, M=6, L=64, batch=8),
)
EXPERIMENTS["ch2_multihead"] = {"ci": _MULTIHEAD_CI, "paper": _MULTIHEAD_PAPER}

# Runner ch2_scaling, run-store part heads: Fig. 8 and Thm 5 at the paper's regime (V = 512, N_f = 16, L = 64, D = 60, batch
# 128, recipe [code] with clip 5), M ∈ {1, 2, 4, 8}, >= 1000 steps (the paper: 4000), 3 seeds. Cells (pattern,
# values, M, N), chosen for about 1.3 CPU-hours (65-175 ms per step with one thread, CPU time): MHA with the authors' heads
# over M × N ∈ {2, 4} and one head at N = 8 (Thm 5's pairs M·N on the grid: (2, 2), (2, 4), (4, 2)); the full-width
# value ablation (values="full", every head reads the whole value vector as Lemma 5's proof) at N = 2;
# MQA, MKA, MVA at M ∈ {1, 2, 4, 8}, N = 4 (where one head is mid-transition), so that every pattern has the four head
# counts a rank test over M needs (Fig. 15's shared patterns, MVA its null; M = 2, 4 added for issue 31, ~50 CPU-min).
EXPERIMENTS["ch2_multihead"]["cpu-hours"] = replace(
    _MULTIHEAD_PAPER,
    Ns=[2, 4, 8],
    Ms=[1, 2, 4, 8],
    patterns=None,
    cells=[["MHA", "code", m, n] for m in (1, 2, 4, 8) for n in (2, 4)]
    + [["MHA", "code", 1, 8]]
    + [["MHA", "full", m, 2] for m in (2, 4, 8)]
    + [[p, "code", m, 4] for p in ("MQA", "MKA", "MVA") for m in (1, 8)]
    + [[p, "code", m, 4] for p in ("MQA", "MKA", "MVA") for m in (2, 4)],
    steps=1000,
    hold=400,  # the paper's hold 1400 is for 4000 steps: past 1000 steps it would leave no decay at all
    n_eval=1000,
    designed=None,
)

# Runner ch2_scaling, run-store part thm5 (issue 31): Thm 5's MHA pairs at the paper's 4000 steps (hold 1400, the paper's
# schedule), to see whether the split heads' gap at M = 4, N = 2 (−0.19 after 1000 steps) closes with training. The
# cells are only those Thm 5's rule reads: one head at N ∈ {2, 4, 8} and the MHA pairs with M·N on that grid,
# (2, 2), (2, 4), (4, 2); the regime and recipe are the fig8 part's. 18 jobs, about 1.6 CPU-hours (80 ms per step).
_THM5_CELLS = [["MHA", "code", 1, n] for n in (2, 4, 8)] + [["MHA", "code", m, n] for m, n in ((2, 2), (2, 4), (4, 2))]
_THM5_SHARED = ("V", "Nf", "L", "D", "batch", "warmup", "hold", "grad_clip", "n_eval", "n_noise", "values")


def _thm5(preset: str, **sizes) -> Thm5:
    """Thm 5's cells in the regime of ch2_multihead's ``preset`` entry, with ``sizes`` (seeds, steps, ...) on top."""
    base = EXPERIMENTS["ch2_multihead"][preset].as_dict()
    shared = {k: base[k] for k in _THM5_SHARED}
    return Thm5(**(shared | {"Ns": [2, 4, 8], "Ms": [1, 2, 4], "cells": _THM5_CELLS} | sizes))


EXPERIMENTS["ch2_thm5"] = {
    "ci": _thm5("ci", seeds=1, steps=300),  # a check that the part runs; the claim reads the cpu-hours bundle
    "paper": _thm5("paper", seeds=3, steps=4000),  # the paper's evaluation size (2000 sequences)
    "cpu-hours": _thm5("cpu-hours", seeds=3, steps=4000, hold=1400),
}

# The trained (D, N) grids of ch2_reference_grid and ch2_trained_dn: a tiny regime at ci, R0 with the [code] recipe
# and 3 seeds at cpu-hours; each grid states its cells (and batch) on top.
_GRID_CI = TrainedGrid(
    V=64,
    Nf=8,
    L=32,
    batch=32,
    steps=200,
    recipe="code",
    overrides=Overrides(warmup=20, hold=40),
    seeds=2,
    n_eval=200,
    eval_every=50,
    target_accuracy=0.999,
)
_GRID_R0 = replace(
    _GRID_CI, V=512, Nf=16, L=64, steps=2000, overrides=Overrides(), seeds=3, n_eval=1000, eval_every=250
)

# Runner ch2_reference_grid (run store, one job per cell and seed): the authors' README reference grid
# (config MQAR__D_N__linear_trained__example: R0, D ∈ {16..64} × N ∈ {8..32}, batch 32, ≤ 2000 steps, [code]
# recipe, validation set of 1000 sequences, evaluated every 250 steps). ``cpu-hours`` is that grid with 3 seeds;
# ``paper`` the same with the paper's 10 seeds (§5.1); ``ci`` a tiny version of it.
_REFERENCE = replace(_GRID_R0, Ds=[16, 32, 48, 64], Ns=[8, 16, 24, 32], skip_N_gt_D=True)
EXPERIMENTS["ch2_reference_grid"] = {
    "ci": replace(_GRID_CI, Ds=[8, 16], Ns=[4, 8], skip_N_gt_D=True),
    "cpu-hours": _REFERENCE,
    "paper": replace(_REFERENCE, seeds=10),
}

# Runner ch2_designed_capacity: facts recalled at 50 % and 90 % by the designed Thm 2 circuit against D·N (the
# D·N scaling law of Remark 1 / Eq. 15 measured; theory/designed_capacity.py). L = 4 N_f, V fixed, N ≤ D ≤ V.
_DC_SQUARE = [16, 24, 32, 48, 64, 96, 128, 192, 256]
_DC_CPU_HOURS = DesignedCapacity(
    V=8192,
    cells=[[d, d] for d in _DC_SQUARE] + [[256, n] for n in (16, 32, 64, 128)] + [[64, 16], [128, 32]],
    levels=[0.5, 0.9],
    readouts=["values"],
    n_queries=2000,
    seed=0,
    min_fit_Nf=4,
)
EXPERIMENTS["ch2_designed_capacity"] = {
    "ci": replace(_DC_CPU_HOURS, V=2048, cells=[[d, d] for d in (16, 32, 64, 128)] + [[128, 32]], n_queries=1000),
    "cpu-hours": _DC_CPU_HOURS,
    "paper": replace(_DC_CPU_HOURS, readouts=["values", "full"], n_queries=8000),
}

# Runner ch2_trained_dn (run store): trained simplified models along one row (D = 64, N varies) and one column
# (N = 16, D varies) of regime R0 at the [code] D–N recipe (batch 128, ≤ 2000 steps), 3 seeds, beside each law's p.
_TRAINED_DN = replace(
    _GRID_R0, cells=[[64, n] for n in (2, 4, 8, 16, 32)] + [[d, 16] for d in (16, 24, 32, 48)], batch=128
)
EXPERIMENTS["ch2_trained_dn"] = {
    "ci": replace(_GRID_CI, cells=[[16, 2], [16, 4], [16, 8], [8, 4]], batch=64),
    "cpu-hours": _TRAINED_DN,
    "paper": replace(
        _TRAINED_DN,
        cells=[[64, n] for n in range(2, 33, 2)] + [[d, 16] for d in range(16, 64, 4)],
        seeds=10,
        n_eval=2000,
    ),
}
