"""Sizes of Chapter 2's scaling laws (paper 002, §5 and Apps. G, K; notebook 04 and runner ch2_scaling, its
ensemble and its run-store parts): experiment ``ch2_scaling``, merged into ``chapters/ch2_hashing_scaling/configs.py``'s ``EXPERIMENTS``. Typed sizes
(``presets/sizes.py``): each field with its type and its smoke cap (KEEP unless said).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mamba_recall.presets.sizes import AXIS, BATCH, COUNT, SAMPLES, SCHEDULE, STEPS, Sizes, size

_CODE_D = list(range(2, 65, 2))  # [code] grid: D ∈ {2, 4, …, 64}
_CODE_N = list(range(2, 33))  # N ∈ {2, …, 32}; cells with N > D are skipped


@dataclass(frozen=True, kw_only=True)
class Regime(Sizes):
    """A regime's vocabulary, facts and length (V, N_f, L), first in the sizes of every model trained or built on
    it (here and in ``chapters/ch2_hashing_scaling/configs.py``)."""

    V: int = size()
    Nf: int = size()
    L: int = size()


@dataclass(frozen=True, kw_only=True)
class ScalingFull(Sizes):
    cells: list[list[int]] = size(AXIS)
    steps: int = size(STEPS)
    seeds: int = size(COUNT)


@dataclass(frozen=True, kw_only=True)
class ScalingMultilayer(Regime):
    D: int = size()
    Ns: list[int] = size(AXIS)
    layers: list[int] = size(AXIS)
    steps: int = size(STEPS)
    seeds: int = size(COUNT)


@dataclass(frozen=True, kw_only=True)
class ScalingRepetition(Sizes):
    """Figs. 10-11: layers × N_k × N_q grids, or (run store) ``cells`` of (task, repeats, layers, post-query
    tokens)."""

    V: int = size()
    Nf: int = size()
    D: int = size()
    N: int | list[int] = size(AXIS)
    layers: list[int] = size(AXIS, optional=True)
    Nk: list[int] = size(AXIS, optional=True)
    Nq: list[int] = size(AXIS, optional=True)
    cells: list[list[Any]] = size(AXIS, optional=True)
    steps: int = size(STEPS)
    seeds: int = size(COUNT)
    batch: int = size(BATCH)


@dataclass(frozen=True, kw_only=True)
class ScalingAblation(Regime):
    D: int = size()
    N: int = size()
    steps: int = size(STEPS)
    seeds: int = size(COUNT)
    batch: int = size(BATCH)
    half_batch_rows: list[str] = size()


@dataclass(frozen=True, kw_only=True)
class ScalingSpeed(Regime):
    D: int = size()
    N: int = size()
    batch: int = size(BATCH)
    steps: int = size(STEPS)
    ensembles: list[int] = size(AXIS)


@dataclass(frozen=True, kw_only=True)
class Scaling(Sizes):
    """Notebook 04 / runner ch2_scaling: Fig. 6's (D, N) grids per regime, Fig. 7, Figs. 10-11, Tab. 10, speed."""

    regimes: dict[str, list[int]] = size()
    Ds: list[int] = size(AXIS)
    Ns: list[int] = size(AXIS)
    skip_N_gt_D: bool = size()
    seeds: int = size(COUNT)
    steps: int = size(STEPS)
    batch: int = size(BATCH)
    warmup: int = size(SCHEDULE)
    hold: int = size(SCHEDULE)
    n_eval: int = size(SAMPLES)
    designed_n_seq: int = size(SAMPLES)
    full: ScalingFull = size()
    multilayer: ScalingMultilayer = size()
    repetition: ScalingRepetition = size()
    ablation: ScalingAblation = size()
    speed: ScalingSpeed = size()


@dataclass(frozen=True, kw_only=True)
class ScalingStore(Sizes):
    """Runner ch2_scaling's run-store parts of ch2_scaling (run store): Fig. 7, Figs. 10-11, Tab. 10."""

    batch: int = size(BATCH)
    warmup: int = size(SCHEDULE)
    hold: int = size(SCHEDULE)
    n_eval: int = size(SAMPLES)
    multilayer: ScalingMultilayer = size()
    repetition: ScalingRepetition = size()
    ablation: ScalingAblation = size()


# Tab. 10's ablation (App. K: V = 128, N_f = 16, L = 64, D = 64, N = 16; Base and A at half batch) and the speed
# benchmark, at ci; the other presets state what differs.
_ABLATION_CI = ScalingAblation(
    V=128, Nf=16, L=64, D=64, N=16, steps=300, seeds=1, batch=64, half_batch_rows=["Base", "A"]
)
_SPEED_CI = ScalingSpeed(V=128, Nf=16, L=64, D=64, N=16, batch=128, steps=10, ensembles=[1, 4, 16])

# Notebook 04 / runner ch2_scaling: Fig. 6 (a, a', a'', b, c, d), Fig. 7, Figs. 10-11, Tab. 10.
SCALING: dict[str, Sizes] = {
    "ci": Scaling(
        regimes={"R-ci": [64, 8, 32]},
        Ds=[8, 16, 32],
        Ns=[2, 4, 8, 16],
        skip_N_gt_D=False,
        seeds=1,
        steps=300,
        batch=64,
        warmup=50,
        hold=50,
        n_eval=500,
        designed_n_seq=64,
        full=ScalingFull(cells=[[16, 8], [32, 8]], steps=300, seeds=1),
        multilayer=ScalingMultilayer(
            V=64,
            Nf=8,
            L=32,
            D=32,
            Ns=[1, 2, 4, 8],
            layers=[1, 2],
            steps=300,
            seeds=1,
        ),
        repetition=ScalingRepetition(
            V=64,
            Nf=4,
            D=32,
            N=16,
            layers=[1, 2],
            Nk=[2],
            Nq=[2],
            steps=400,
            seeds=1,
            batch=64,
        ),
        ablation=_ABLATION_CI,
        speed=_SPEED_CI,
    ),
    "paper": Scaling(
        regimes={"R0": [512, 16, 64], "R1": [512, 32, 128], "R2": [1024, 16, 64]},
        Ds=_CODE_D,
        Ns=_CODE_N,
        skip_N_gt_D=True,
        seeds=10,
        steps=3000,
        batch=128,
        warmup=100,
        hold=400,
        n_eval=2000,
        designed_n_seq=1000,
        full=ScalingFull(
            cells=[[d, n] for d in (8, 16, 32, 64) for n in (4, 8, 16, 32) if n <= d],
            steps=10000,
            seeds=3,
        ),
        multilayer=ScalingMultilayer(
            V=512,
            Nf=80,
            L=320,
            D=64,
            Ns=list(range(2, 17)),
            layers=[1, 2, 3, 4, 5],
            steps=4000,
            seeds=3,
        ),
        repetition=ScalingRepetition(
            V=128,
            Nf=8,
            D=64,
            N=[4, 8, 16, 32, 64],
            layers=[1, 2, 3],
            Nk=[2, 3],
            Nq=[2, 3],
            steps=3000,
            seeds=3,
            batch=128,
        ),
        ablation=replace(_ABLATION_CI, steps=4000, seeds=3, batch=128),
        speed=replace(_SPEED_CI, steps=50, ensembles=[1, 8, 64, 256]),
    ),
}

# Runner ch2_scaling's run-store parts (one job per model and seed): Fig. 7, Figs. 10-11 and Tab. 10 at the paper's own
# settings (recipe [code], batch 128, the paper's V / N_f / L / D where a CPU can) on the part of each grid that a
# 2-core CPU trains in about 3 CPU-hours together with Fig. 8 below, 3 seeds, >= 1000 steps (the paper: 3000-4000).
# Step times measured with one thread (CPU time, AMD EPYC, torch 2.13): V 512, L 64, D 64, batch 128: 55 / 106 /
# 200 ms per step at Λ = 1 / 2 / 4; V 128, L 64, D 64: 30-80 ms at Λ = 1-3; Tab. 10's selective rows 70-100 ms.
SCALING["cpu-hours"] = ScalingStore(
    batch=128,
    warmup=100,
    hold=400,
    n_eval=1000,
    # Fig. 7 (§5.2): the paper's V = 512 and D = 64, but N_f = 16, L = 64 (regime R0) instead of N_f = 80,
    # L = 320: the (B, L, L) attention form makes a step at L = 320 ≈ 11x dearer (0.6 s at Λ = 1), which would
    # leave one cell. At N_f = 16 and D = 64 one layer crosses from 0.24 (N = 2) to 0.90 (N = 8) (ch2_trained_dn),
    # so N ∈ {2, 4} × Λ ∈ {1, 2, 4} puts two groups of equal Λ·N (4 and 8) inside the transition.
    multilayer=replace(SCALING["paper"].multilayer, Nf=16, L=64, Ns=[2, 4], layers=[1, 2, 4], steps=1000),
    # Figs. 10-11 (App. G): the paper's V = 128, N_f = 8, D = 64, batch 128; one state size N = 16 of its five
    # (4-64); cells (task, repeats, layers, post-query tokens): N_k, N_q = 2 with 1-2 layers, N_k = 3 with 1-3 layers
    # (Fig. 10 needs 3 layers there), N_q = 3 with 1-2 layers (Fig. 11: 2 layers already recall), and N_q = 2 with
    # value tokens after every query, the sequences Remark 5's 3/4 assumes (the generator's default pads with
    # tokens from the whole vocabulary); L = 2 N_f (repeats + 1).
    repetition=replace(
        SCALING["paper"].repetition,
        N=16,
        layers=None,
        Nk=None,
        Nq=None,
        cells=[
            ["repeated_keys", 2, 1, "full"],
            ["repeated_keys", 2, 2, "full"],
            ["repeated_keys", 3, 1, "full"],
            ["repeated_keys", 3, 2, "full"],
            ["repeated_keys", 3, 3, "full"],
            ["repeated_queries", 2, 1, "full"],
            ["repeated_queries", 2, 2, "full"],
            ["repeated_queries", 3, 1, "full"],
            ["repeated_queries", 3, 2, "full"],
            ["repeated_queries", 2, 1, "values"],
            ["repeated_queries", 2, 2, "values"],
        ],
        steps=1000,
    ),
    # Tab. 10 (App. K): every row at the paper's V = 128, N_f = 16, L = 64, D = 64, N = 16, batch 128 (Base and A at
    # half batch for twice the steps, as App. K), 3 seeds; 1000 steps instead of 4000 (early stop at 0.999).
    ablation=replace(SCALING["paper"].ablation, steps=1000),
)
