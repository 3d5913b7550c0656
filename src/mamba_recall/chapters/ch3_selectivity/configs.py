"""Sizes of Chapter 3 (paper 003): input selectivity, Haar wavelets, MQAR constructions.

Each entry: ``"chN_experiment": {"ci": Sizes, "paper": Sizes}`` (merged by :mod:`mamba_recall.presets`): typed sizes, one
:class:`~mamba_recall.presets.sizes.Sizes` class per shape below, each field with its type and its smoke cap
(``presets/sizes.py``); :func:`mamba_recall.presets.experiment` reads them as dicts. The trained ones also
``"cpu-hours"`` (the paper's settings on what a 2-core CPU finishes in a few hours, 3 seeds, one run-store job per
run: ``python -m mamba_recall.chapters.ch3_selectivity.runners.<name> --preset cpu-hours --allow-long``).
Trained experiments (``ch3_keep_nth``, ``ch3_mqar_train``, ``ch3_induction``) are run by the runners
``python -m mamba_recall.chapters.ch3_selectivity.runners.<name> --preset ci|paper`` and loaded by the notebooks.
The ``paper`` sizes follow a reduced GPU protocol (on-the-fly data, ≤ 20k steps, early stop at 100 %
held-out accuracy); the paper's own protocol (App. D.1: 600 epochs of 10⁵ samples) is ~10³ GPU-hours.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mamba_recall.presets.sizes import AXIS, BATCH, COUNT, SAMPLES, STEPS, Sizes, fixed, size

# --------------------------------------------------------------------------------------------- the sizes' shapes
# One class per shape of sizes (presets/sizes.py): each field's type and its smoke cap (KEEP unless said).


@dataclass(frozen=True, kw_only=True)
class Haar(Sizes):
    lengths: list[int] = size(AXIS)
    max_j: int = size(fixed(2))  # the (j, k) grid has 2^(max_j+1) − 1 cells per length: a grid size, capped at 2
    draws: int = size(COUNT)
    widths: list[float] = size(AXIS)
    quad_points: int = size()
    slider_js: list[int] = size(AXIS)
    slider_sharpness: list[int] = size(AXIS)
    slider_points: int = size()


@dataclass(frozen=True, kw_only=True)
class Cor1(Sizes):
    ms: list[int] = size(AXIS)
    n_wavelets: int = size()
    draws: int = size(COUNT)


@dataclass(frozen=True, kw_only=True)
class KeepConstruction(Sizes):
    T: int = size()
    nth: int = size()
    V: int = size()
    real_sequences: int = size(SAMPLES)
    token_sequences: int = size(SAMPLES)


@dataclass(frozen=True, kw_only=True)
class KeepTrain(Sizes):
    """KEEP n-TH models × T × (d, N) × seeds; the run store's grid adds Tab. 1 at ``table_T`` with every model and
    Fig. 1's T sweep for ``sweep_models``."""

    Ts: list[int] = size(AXIS)
    table_T: int = size(optional=True)
    dN: list[list[int]] = size(AXIS)
    models: list[str] = size()
    sweep_models: list[str] = size(optional=True)
    seeds: list[int] = size(AXIS)
    steps: int = size(STEPS)
    batch: int = size(BATCH)
    lr: float = size()
    lr_transformer: float = size()
    V: int = size()
    nth: int = size()
    eval_sequences: int = size(SAMPLES)
    test_sequences: int = size(SAMPLES)
    transformer_d: int = size()


@dataclass(frozen=True, kw_only=True)
class Sensitivity(Sizes):
    T: int = size()
    lam: float = size()
    long_T: int = size()
    attention_T: int = size()


@dataclass(frozen=True, kw_only=True)
class MqarConstructions(Sizes):
    T: int = size()
    kappas: list[int] = size(AXIS)
    Vs: list[int] = size(AXIS)
    exact_sequences: int = size(SAMPLES)
    sweep_sequences: int = size(SAMPLES)
    draws: int = size(COUNT)
    ps: list[int] = size(AXIS)
    pks: list[int] = size(AXIS)
    big_V: int = size()
    big_kappas: list[int] = size(AXIS)
    explorer_kappas: list[int] = size(AXIS)
    explorer_Vs: list[int] = size(AXIS)
    explorer_ps: list[int] = size(AXIS)


@dataclass(frozen=True, kw_only=True)
class Thm3Growth(Sizes):
    kappas: list[int] = size(AXIS)
    pks: list[int] = size(AXIS)
    V: int = size()
    pv: int = size()
    draws: int = size(COUNT)
    sequences: int = size(SAMPLES)


@dataclass(frozen=True, kw_only=True)
class Thm3Recall99(Sizes):
    kappas: list[int] = size(AXIS)
    V: int = size()
    pv: int = size()
    draws: int = size(COUNT)
    queries: int = size(fixed(512))  # κ = 256 walks the whole p_k grid from the first κ's answer: a few per point


@dataclass(frozen=True, kw_only=True)
class Remark7(Sizes):
    kappa: int = size()
    pks: list[int] = size(AXIS)
    draws: int = size(COUNT)
    sequences: int = size(SAMPLES)
    worst_kappas: list[int] = size(AXIS)
    products: list[float] = size(AXIS)


@dataclass(frozen=True, kw_only=True)
class JLLemma(Sizes):
    ds: list[int] = size(AXIS)
    ps: list[int] = size(AXIS)


@dataclass(frozen=True, kw_only=True)
class MqarTrain(Sizes):
    """One MQAR grid (κ × d × mixer's N; ``Ns``: mixer → N values, or ``"2kappa"`` / ``"8lnkappa"``) with its seeds;
    a grid of :class:`MqarTrainGrids` leaves ``seeds`` out (its grids share theirs)."""

    T: int = size()
    V: int = size()
    kappas: list[int] = size(AXIS)
    ds: list[int] = size(AXIS)
    Ns: dict[str, list[int] | str] = size(AXIS)
    seeds: list[int] = size(AXIS, optional=True)
    steps: int = size(STEPS)
    batch: int = size(BATCH)
    lr: float = size()
    eval_sequences: int = size(SAMPLES)
    test_sequences: int = size(SAMPLES)


@dataclass(frozen=True, kw_only=True)
class MqarTrainGrids(Sizes):
    """Several MQAR grids run with the same seeds (the run store's cpu-hours preset)."""

    seeds: list[int] = size(AXIS)
    grids: dict[str, MqarTrain] = size()


@dataclass(frozen=True, kw_only=True)
class IhConstruction(Sizes):
    T: int = size()
    Vs: list[int] = size(AXIS)
    p: float = size()
    gamma: float = size()
    sequences: int = size(SAMPLES)


@dataclass(frozen=True, kw_only=True)
class IhTrain(Sizes):
    """INDUCTION HEADS models × |V| × d × N factor × seeds; ``ds_per_V[str(V)]``, where given, replaces ``ds``."""

    T: int = size()
    Vs: list[int] = size(AXIS)
    ds: list[int] = size(AXIS)
    ds_per_V: dict[str, list[int]] = size(AXIS, optional=True)
    N_factor: int | list[int] = size(AXIS)
    seeds: list[int] = size(AXIS)
    steps: int = size(STEPS)
    batch: int = size(BATCH)
    lr: float = size()
    p: float = size()
    gamma: float = size()
    eval_sequences: int = size(SAMPLES)
    test_sequences: int = size(SAMPLES)


@dataclass(frozen=True, kw_only=True)
class MqarFigA3(Sizes):
    """Fig. A.3's N sweep: (κ, N) cells × d × seeds of Mamba at ``V``, or of each mixer of ``mixers`` (mixer → |V|)."""

    T: int = size()
    V: int = size()
    ds: list[int] = size(AXIS)
    kappa_N: list[list[int]] = size(AXIS)
    seeds: list[int] = size(AXIS)
    steps: int = size(STEPS)
    batch: int = size(BATCH)
    lr: float = size()
    eval_sequences: int = size(SAMPLES)
    test_sequences: int = size(SAMPLES)
    mixers: dict[str, int] = size(optional=True)


# ------------------------------------------------------------------------------------------------- the presets

_HAAR_CI = Haar(
    lengths=[16, 64, 256],
    max_j=4,
    draws=20,
    widths=[1e2, 1e3, 1e4, 1e5],
    quad_points=400_001,
    slider_js=[0, 1, 2],
    slider_sharpness=[1, 2, 3, 4],
    slider_points=161,
)
_KEEP_CONSTRUCTION_CI = KeepConstruction(T=50, nth=5, V=128, real_sequences=50, token_sequences=2000)
_KEEP_NTH_CI = KeepTrain(
    Ts=[20],
    dN=[[32, 8]],
    models=["s6+pe", "s6", "s4d+pe", "s4d", "transformer"],
    seeds=[0],
    steps=1500,
    batch=64,
    lr=1e-2,
    lr_transformer=3e-3,
    V=128,
    nth=5,
    eval_sequences=1000,
    test_sequences=2000,
    transformer_d=16,
)
_KEEP_NTH_PAPER = replace(
    _KEEP_NTH_CI,
    Ts=[10, 20, 30, 40, 50],
    dN=[[8, 8], [8, 32], [8, 64], [32, 8], [32, 32], [32, 64], [64, 8], [64, 32], [64, 64]],
    seeds=[0, 1, 2],
    steps=20_000,
    batch=128,
    test_sequences=10_000,
)
_MQAR_CONSTRUCTIONS_CI = MqarConstructions(
    T=100,
    kappas=[4, 8, 16, 32],
    Vs=[128],
    exact_sequences=500,
    sweep_sequences=100,
    draws=3,
    ps=[8, 12, 16, 24, 32],
    pks=[4, 8, 16, 24, 32],
    big_V=512,
    big_kappas=[4, 8],
    explorer_kappas=[4, 8, 16],
    explorer_Vs=[64, 128],
    explorer_ps=[6, 8, 12, 16, 24],
)
_THM3_GROWTH_CI = Thm3Growth(
    kappas=[4, 8, 16, 32, 64], pks=[4, 8, 16, 32, 64, 128, 256], V=128, pv=32, draws=3, sequences=100
)
_THM3_RECALL99_CI = Thm3Recall99(kappas=[4, 8, 16, 32, 64, 128, 256], V=128, pv=32, draws=3, queries=3200)
_REMARK7_CI = Remark7(
    kappa=16,
    pks=[4, 8, 16, 32, 64],
    draws=3,
    sequences=100,
    worst_kappas=[8, 16, 32],
    products=[0.5, 0.8, 0.95, 1.05, 1.25, 2.0],
)
_MQAR_TRAIN_CI = MqarTrain(
    T=24,
    V=16,
    kappas=[4],
    ds=[32],
    Ns={"s6": [2, 8]},
    seeds=[0],
    steps=1500,
    batch=64,
    lr=3e-3,
    eval_sequences=500,
    test_sequences=1000,
)
_MQAR_TRAIN_PAPER = replace(
    _MQAR_TRAIN_CI,
    T=100,
    V=128,
    kappas=[4, 8, 16, 32],
    ds=[4, 8, 16, 32, 64, 128, 256, 512],
    Ns={"s6": "2kappa", "s4d": [4], "mamba2": "8lnkappa"},
    seeds=[0, 1, 2, 3, 4, 5, 6],
    steps=20_000,
    batch=128,
    eval_sequences=1000,
    test_sequences=10_000,
)
_IH_CONSTRUCTION_CI = IhConstruction(T=100, Vs=[5, 10, 20, 40], p=0.75, gamma=0.1, sequences=200)
_INDUCTION_CI = IhTrain(
    T=32,
    Vs=[5],
    ds=[16],
    N_factor=4,
    seeds=[0],
    steps=600,
    batch=64,
    lr=3e-3,
    p=0.75,
    gamma=0.1,
    eval_sequences=500,
    test_sequences=1000,
)
_INDUCTION_PAPER = replace(
    _INDUCTION_CI,
    T=100,
    Vs=[5, 10, 20, 40],
    ds=[4, 8, 16, 32, 64, 128],
    N_factor=[1, 2, 4],
    seeds=[0, 1, 2, 3, 4],
    steps=20_000,
    batch=128,
    eval_sequences=1000,
    test_sequences=10_000,
)

EXPERIMENTS: dict[str, dict[str, Sizes]] = {
    # Thm. 1 / Fig. A.1: discrete constructions on random inputs, continuous quadrature, sliders.
    "ch3_haar": {
        "ci": _HAAR_CI,
        "paper": replace(
            _HAAR_CI,
            lengths=[16, 64, 256, 1024],
            max_j=9,
            draws=50,
            widths=[1e2, 1e3, 1e4, 1e5, 1e6],
            quad_points=2_000_001,
        ),
    },
    # Cor. 1: best-N Haar (Mamba) vs Fourier (S4D) squared errors.
    "ch3_cor1": {
        "ci": Cor1(ms=[1, 2, 4], n_wavelets=36, draws=10),
        "paper": Cor1(ms=[1, 2, 4, 8], n_wavelets=64, draws=50),
    },
    # Cor. 2: hand-built KEEP n-TH S6 (real-valued and token versions).
    "ch3_keep_construction": {
        "ci": _KEEP_CONSTRUCTION_CI,
        "paper": replace(_KEEP_CONSTRUCTION_CI, real_sequences=1000, token_sequences=100_000),
    },
    # Tab. 1 / A.1-A.4 / Fig. 1: trained KEEP n-TH models (runner ch3_keep_nth).
    "ch3_keep_nth": {
        "ci": _KEEP_NTH_CI,
        "paper": _KEEP_NTH_PAPER,
        # Tab. 1 at the paper's T = 50 and h ∈ R^{8×32} (d = 32, N = 8) with all five models, and Fig. 1's T sweep for
        # Mamba+PE and S4D+PE; 3 seeds, the paper preset's recipe with a 4000-step budget (run store, one job per run).
        "cpu-hours": replace(_KEEP_NTH_PAPER, table_T=50, dN=[[32, 8]], sweep_models=["s6+pe", "s4d+pe"], steps=4000),
    },
    # Lemmas 1-2: sensitivities.
    "ch3_sensitivity": {
        "ci": Sensitivity(T=64, lam=0.7, long_T=10_000, attention_T=4096),
        "paper": Sensitivity(T=256, lam=0.7, long_T=100_000, attention_T=16384),
    },
    # Thms. 2-4: construction checks and sweeps (sequences per point, JL draws).
    "ch3_mqar_constructions": {
        "ci": _MQAR_CONSTRUCTIONS_CI,
        "paper": replace(
            _MQAR_CONSTRUCTIONS_CI,
            Vs=[128, 256, 512],
            exact_sequences=1000,
            sweep_sequences=500,
            draws=5,
            ps=[6, 8, 12, 16, 24, 32, 48],
            pks=[4, 8, 12, 16, 24, 32, 48],
            big_kappas=[4, 8, 16, 32],
            explorer_kappas=[4, 8, 16, 32],
            explorer_Vs=[64, 128, 256],
            explorer_ps=[6, 8, 12, 16, 24, 32],
        ),
    },
    # Thm. 3 / Remark 3: the state size N = p_k the JL-key construction needs, against κ (theory.mqar_constructions.thm3_key_growth).
    "ch3_thm3_growth": {
        "ci": _THM3_GROWTH_CI,
        "paper": replace(
            _THM3_GROWTH_CI,
            kappas=[4, 8, 16, 32, 64, 128, 256],
            pks=[4, 8, 16, 32, 64, 128, 256, 512, 1024],
            draws=5,
            sequences=200,
        ),
    },
    # Thm. 3: smallest N = p_k with 99 % recall against κ (theory.mqar_constructions.thm3_state_for_recall).
    "ch3_thm3_recall99": {
        "ci": _THM3_RECALL99_CI,
        "paper": replace(_THM3_RECALL99_CI, draws=5, queries=12800),
    },
    # Remark 7: Thm. 3 (JL keys) on the adversarial input [k1, v1, k2, v, ..., kκ, v] (theory.mqar_constructions.remark7_sweep).
    # Its worst case (theory.mqar_constructions.remark7_worst_case): key codes with one same-sign overlap ε, the
    # product ε(κ − 1) swept across the remark's threshold 1 at several κ (seconds; no training).
    "ch3_remark7": {
        "ci": _REMARK7_CI,
        "paper": replace(
            _REMARK7_CI, kappa=32, pks=[4, 8, 16, 32, 64, 128], draws=5, sequences=500, worst_kappas=[8, 16, 32, 64]
        ),
    },
    # Lemma 4: JL inner products against d and p (theory.mqar_constructions.jl_inner_products).
    "ch3_jl_lemma": {
        "ci": JLLemma(ds=[128, 512, 2048], ps=[16, 64, 256]),
        "paper": JLLemma(ds=[128, 512, 2048, 8192], ps=[16, 64, 256, 1024]),
    },
    # Fig. 2 (micro version in ci): trained 1-layer Mamba without gate, N below/above κ; the paper preset is Fig. 2's
    # (κ × d) grid of the three mixers. Fig. A.3's N sweep is experiment ch3_mqar_figa3 (below).
    "ch3_mqar_train": {
        "ci": _MQAR_TRAIN_CI,
        "paper": _MQAR_TRAIN_PAPER,
        # Two grids with the same 3 seeds (run store): the micro-MQAR N sweep across N = κ (Thm. 2's state size),
        # and the smallest paper κ at the paper's T = 100, |V| = 128 with N = 2κ (Fig. 2's Mamba), d across κ + log₂|V| = 11.
        "cpu-hours": MqarTrainGrids(
            seeds=[0, 1, 2],
            grids={
                "micro": replace(_MQAR_TRAIN_CI, Ns={"s6": [1, 2, 3, 4, 8]}, seeds=None, steps=3000),
                "paper": replace(
                    _MQAR_TRAIN_PAPER, kappas=[4], ds=[8, 16, 64], Ns={"s6": "2kappa"}, seeds=None, steps=2000
                ),
            },
        ),
    },
    # Lemma 3: construction checks.
    "ch3_ih_construction": {
        "ci": _IH_CONSTRUCTION_CI,
        "paper": replace(_IH_CONSTRUCTION_CI, sequences=1000),
    },
    # Fig. 3 / A.4 (smoke test in ci): Mamba vs Mamba-Δ⊤ trained on INDUCTION HEADS.
    "ch3_induction": {
        "ci": _INDUCTION_CI,
        "paper": _INDUCTION_PAPER,
        # Fig. 3 at the paper's T = 100, N = 4|V|: for |V| = 5 a d sweep across Lem. 3's d = 2|V| = 10, and (issue
        # 31, the paper's second vocabulary) for |V| = 10 across its 2|V| = 20 up to 4|V| = 40, Mamba and Mamba-Δ⊤,
        # 5 seeds as the paper's "best of 5" (run store, one job per run; seeds 3 and 4 and |V| = 10 added for issue
        # 31, the rule unchanged: each seed's own numbers, combined over the seeds).
        "cpu-hours": replace(
            _INDUCTION_PAPER,
            Vs=[5, 10],
            ds=[4, 10, 20],
            ds_per_V={"10": [8, 20, 40]},
            N_factor=4,
            steps=2000,
            batch=64,
        ),
    },
}

# Fig. A.3 at the paper's T = 100 and |V| = 128 (chapters/ch3_selectivity/runners/mqar_figa3.py; issue "fair tests", declared
# 2026-11-27 before any of its runs). The claim is about the state size N against κ, so the grid sweeps N across κ
# at each κ ∈ {4, 8}: N = κ − 1 (the largest N below κ, the sharpest test of "fails for N < κ"), N = κ and N = 2κ
# (Fig. 2's Mamba, the control that must solve), 7 seeds as the paper's "best of 7". The width is d = 64, the
# smallest of the committed paper cell's d ∈ {8, 16, 64} that solved κ = 4 at N = 2κ on every seed (Thm. 2's
# d = κ + log₂|V| is 11 and 15): Fig. A.3 is about N, so d is held where the control can solve. The recipe is the
# chapter's (Adam, lr 3e-3 with cosine decay, batch 128, early stop at 100 % held-out accuracy), with 2,000 steps, a
# tenth of the paper's 20,000 (what a 2-core CPU finishes in a session: about 3.5 CPU-hours). Mamba only: Mamba-2
# and S4D are the paper preset's (GPU) work, and read "not in this bundle" on the page.
_FIGA3 = MqarFigA3(
    T=100,
    V=128,
    ds=[64],
    kappa_N=[[4, 3], [4, 4], [4, 8], [8, 7], [8, 8], [8, 16]],
    seeds=[0, 1, 2, 3, 4, 5, 6],
    steps=2000,
    batch=128,
    lr=3e-3,
    eval_sequences=1000,
    test_sequences=10_000,
)
EXPERIMENTS["ch3_mqar_figa3"] = {
    # the ci preset names the same grid (the page loads the cpu-hours bundle; nothing is trained in ci)
    "ci": _FIGA3,
    "cpu-hours": _FIGA3,
    # the GPU size: the paper's |V| = 512 (S4D: 256) and 20,000 steps, N over powers of two across κ ∈ {4, 8, 16},
    # d ∈ {64, 256}, the three mixers (``mixers``: mixer → |V|; without it, Mamba at ``V``)
    "paper": replace(
        _FIGA3,
        V=512,
        ds=[64, 256],
        kappa_N=[[k, n] for k in (4, 8, 16) for n in (1, 2, 4, 8, 16, 32, 64)],
        steps=20_000,
        mixers={"s6": 512, "mamba2": 512, "s4d": 256},
    ),
}
