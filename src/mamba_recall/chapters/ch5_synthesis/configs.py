"""Sizes of Chapter 5 (the book's synthesis): one model family, one task, four theories.

``ch5_capacity``: the full Mamba LM in mamba-ssm's layout (``d_conv`` 4, ``expand`` 2, RMSNorm, tied head) with 1 or
2 layers, trained on zoology's MQAR (paper 002's regime R0: V = 512, and its ratio L = 4κ: L = 64 at κ = 16) with
the authors' recipe of paper 002 ("code": AdamW lr 10⁻², β = (0.9, 0.95), no weight decay, warmup 100 → hold 400 →
cosine to 0, clip 1.5, label smoothing 0.1); for each (layers, D, N) and seed a bisection over the κ ladder finds
the largest κ with held-out recall ≥ 90 % and ≥ 50 %, one training per probe
(:mod:`mamba_recall.chapters.ch5_synthesis.runners.capacity`). ``cells`` are ``[layers, D, N]``.

* ``ci``: a 64-token vocabulary, three small cells (one 2-layer cell with its 1-layer match at 2N), one seed, a
  three-rung ladder, 800 steps (about a minute a search); the notebook shows the first cell's search;
* ``cpu-hours``: 9 one-layer cells D ∈ {16, 32, 64} × N ∈ {2, 4, 8} and 3 two-layer cells, 3 seeds (about 10
  CPU-hours on a 2-core CPU, measured: ``--preset cpu-hours`` prints its estimate);
* ``paper``: the sizes of paper 002's grids (D up to 128, N up to 32, κ up to 181), batch 128, 2000 steps, for a GPU
  or a Ray cluster.

``ch5_capacity_long``: the same grids and recipe at a training budget that does not bind (declared 2026-12-04, before
any of its runs, when the ``cpu-hours`` grid showed 82 % of its one-layer probes still learning at the step cap):
every preset's steps ×4 (:data:`LONG_FACTOR`), the schedule stretched with it (warm-up and hold ×4, then the cosine
to 0 over the rest), the plateau rule scaled to it (an evaluation every 500 steps instead of 250, so a plateau is
no gain of 0.01 over 1,500 steps, the whole of the shorter budget). It is an experiment of its own, not a preset of
the book (the presets stay ci, cpu-hours, paper):
``python -m mamba_recall grid ch5_capacity_long --preset cpu-hours --allow-long``.

``ch5_capacity_lr_sweep`` (declared 2026-12-05, before any of its runs, when 14 of the long grid's 36 searches had
finished with 21 of their 74 probes (28 %) still at the 6,000-step cap and many at κ = 6–11 stopped on the ≈ 1/κ
plateau in the D = 16 and 32 cells): a learning rate chosen per cell by a sweep on one seed (issue 52). Every cell of
the grid (the 9 one-layer cells and the 3 two-layer cells), seed 0, the long schedule, learning rates
{3·10⁻³, 10⁻², 3·10⁻²} (:data:`SWEEP_LRS`: the rates the papers' own recipes use, paper 002's code 10⁻² for its
D–N grids and 3·10⁻³ for its Λ–N_k and V–L runs, paper 003's initial η = 0.03; a factor √10 apart), one probe per
cell and rate at the κ of :data:`SWEEP_KAPPA` (the smallest ladder rung ≥ 1.5 × the cell's κ*₅₀ at paper 002's budget,
:func:`mamba_recall.chapters.ch5_synthesis.pipelines.lr_sweep.sweep_kappa`: where the long budget's probes split
between the ≈ 1/κ plateau and learning, so where the rates differ). The rule that picks a cell's rate
(:func:`~mamba_recall.chapters.ch5_synthesis.pipelines.lr_sweep.pick_rate`): the rate whose probe reaches the highest
held-out recall, the default 10⁻² kept wherever its recall is within 0.01 of the best. ``ch5_capacity_tuned`` then
re-runs the long grid (3 seeds) with each cell at its picked rate:
``python -m mamba_recall grid ch5_capacity_lr_sweep --preset cpu-hours --allow-long``, then ``grid
ch5_capacity_tuned``. Declared,
not run (``plan`` lists both with their cost). The ``paper`` preset declares no κ table (no complete bundle at paper
002's budget to read it from): its sweep has no jobs until one is declared.

Typed sizes (``presets/sizes.py``): :class:`Capacity` and its :class:`CapacityRecipe`, each field with its smoke cap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mamba_recall.presets.sizes import AXIS, BATCH, COUNT, EVERY, SAMPLES, SCHEDULE, STEPS, Sizes, derived, fixed, size


@dataclass(frozen=True, kw_only=True)
class CapacityRecipe(Sizes):
    """The authors' recipe of paper 002 (``mamba_recall.train.Recipe.from_preset`` reads it)."""

    lr: float = size()
    betas: list[float] = size()
    weight_decay: float = size()
    schedule: str = size()
    warmup: int = size(SCHEDULE)
    hold: int = size(SCHEDULE)
    grad_clip: float = size()
    label_smoothing: float = size()


def _smoke_cells(cells: list) -> list:
    """The smoke pass keeps a preset's first cell and its first 2-layer cell (both layer counts)."""
    return [cells[0], next(c for c in cells if c[0] == 2)]


@dataclass(frozen=True, kw_only=True)
class Capacity(Sizes):
    V: int = size()
    L_per_kappa: int = size()
    cells: list[list[int]] = size(derived(_smoke_cells))  # [layers, D, N]
    ladder: list[int] = size(fixed([2, 4]))  # a two-rung ladder
    thresholds: list[float] = size(AXIS)
    seeds: int = size(COUNT)
    steps: int = size(STEPS)
    batch: int = size(BATCH)
    eval_every: int = size(EVERY)
    patience: int = size()
    min_delta: float = size()
    target_accuracy: float = size()
    n_eval: int = size(SAMPLES)
    n_delta: int = size()
    recipe: CapacityRecipe = size()


#: √2-spaced κ ladder (rounded): the search's candidate numbers of pairs.
LADDER = [2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128, 181]

_RECIPE = CapacityRecipe(
    lr=1e-2, betas=[0.9, 0.95], weight_decay=0.0, schedule="code", warmup=100, hold=400, grad_clip=1.5,
    label_smoothing=0.1,
)  # fmt: skip

#: the cpu-hours preset; the others state only what differs from it
_CPU_HOURS = Capacity(
    V=512,
    L_per_kappa=4,
    cells=[[1, d, n] for d in (16, 32, 64) for n in (2, 4, 8)] + [[2, 16, 4], [2, 32, 4], [2, 32, 8]],
    ladder=LADDER[:11],
    thresholds=[0.5, 0.9],
    seeds=3,
    steps=1500,
    batch=64,
    eval_every=250,
    patience=3,
    min_delta=0.01,
    target_accuracy=0.99,
    n_eval=500,
    n_delta=64,
    recipe=_RECIPE,
)

_SIZES: dict[str, Capacity] = {
    "ci": replace(
        _CPU_HOURS,
        V=64,
        cells=[[1, 32, 8], [1, 32, 4], [2, 32, 4]],
        ladder=[2, 4, 8],
        seeds=1,
        steps=800,
        batch=32,
        eval_every=100,
        n_eval=200,
        n_delta=32,
    ),  # fmt: skip
    "cpu-hours": _CPU_HOURS,
    "paper": replace(
        _CPU_HOURS,
        cells=[[layers, d, n] for layers in (1, 2) for d in (16, 32, 64, 128) for n in (4, 8, 16, 32)],
        ladder=LADDER,
        steps=2000,
        batch=128,
        n_eval=1000,
        n_delta=128,
    ),  # fmt: skip
}

#: the long budget's factor on steps and on the schedule's phases (``ch5_capacity_long``)
LONG_FACTOR = 4
#: its evaluation interval's factor (the plateau window, ``patience`` evaluations, grows with it)
LONG_EVAL_FACTOR = 2


def long_budget(sizes: Capacity) -> Capacity:
    """``sizes`` at the long budget: steps ×:data:`LONG_FACTOR` with warm-up and hold stretched alike (the cosine
    takes the rest), evaluations ×:data:`LONG_EVAL_FACTOR` apart; the grid, the recipe's other numbers and the
    stopping thresholds unchanged."""
    recipe = replace(sizes.recipe, warmup=sizes.recipe.warmup * LONG_FACTOR, hold=sizes.recipe.hold * LONG_FACTOR)
    return replace(
        sizes, steps=sizes.steps * LONG_FACTOR, eval_every=sizes.eval_every * LONG_EVAL_FACTOR, recipe=recipe
    )


#: the learning rates of the per-cell sweep (``ch5_capacity_lr_sweep``) and the default one (paper 002's code)
SWEEP_LRS = [3e-3, 1e-2, 3e-2]
SWEEP_DEFAULT_LR = 1e-2

#: the sweep's probe of each cell, ``[layers, D, N, κ]``: κ the smallest ladder rung ≥ 1.5 × the cell's κ*₅₀ in the
#: complete ``ch5_capacity`` bundle of the preset (its geometric mean over uncensored seeds; a test recomputes it)
SWEEP_KAPPA = {
    "ci": [[1, 32, 8, 8], [1, 32, 4, 8], [2, 32, 4, 8]],
    "cpu-hours": [
        [1, 16, 2, 6], [1, 16, 4, 6], [1, 16, 8, 6], [1, 32, 2, 8], [1, 32, 4, 11], [1, 32, 8, 11],
        [1, 64, 2, 16], [1, 64, 4, 16], [1, 64, 8, 23], [2, 16, 4, 4], [2, 32, 4, 6], [2, 32, 8, 6],
    ],
    "paper": [],
}  # fmt: skip


def _smoke_sweep_cells(cells: list) -> list:
    """The smoke pass keeps the sweep's first cell and its first 2-layer cell (none where none is declared)."""
    return _smoke_cells(cells) if cells else []


@dataclass(frozen=True, kw_only=True)
class LrSweep(Capacity):
    """The long budget's sizes with the sweep's rates and its one probe per cell (``ch5_capacity_lr_sweep``)."""

    lrs: list[float] = size()
    default_lr: float = size()
    sweep_cells: list[list[int]] = size(derived(_smoke_sweep_cells))  # [layers, D, N, κ]


def lr_sweep(sizes: Capacity, preset: str) -> LrSweep:
    """The sweep's sizes at ``preset``: the long budget of ``sizes``, one seed (0), :data:`SWEEP_LRS` and the
    preset's :data:`SWEEP_KAPPA`."""
    long = long_budget(sizes)
    fields = {f: getattr(long, f) for f in Capacity.__dataclass_fields__}
    return LrSweep(
        **{**fields, "seeds": 1}, lrs=list(SWEEP_LRS), default_lr=SWEEP_DEFAULT_LR, sweep_cells=SWEEP_KAPPA[preset]
    )


EXPERIMENTS: dict[str, dict[str, Sizes]] = {
    "ch5_capacity": dict(_SIZES),
    "ch5_capacity_long": {preset: long_budget(sizes) for preset, sizes in _SIZES.items()},
    "ch5_capacity_lr_sweep": {preset: lr_sweep(sizes, preset) for preset, sizes in _SIZES.items()},
    "ch5_capacity_tuned": {preset: long_budget(sizes) for preset, sizes in _SIZES.items()},
}
#: the experiment of each training budget (its jobs' schedule): paper 002's code schedule, the long one, and
#: the long one at each cell's learning rate picked by the sweep (``ch5_capacity_lr_sweep``)
BUDGETS = {"paper002": "ch5_capacity", "long": "ch5_capacity_long", "tuned": "ch5_capacity_tuned"}
#: the experiment of the per-cell learning-rate sweep (at the long budget)
LR_SWEEP = "ch5_capacity_lr_sweep"
