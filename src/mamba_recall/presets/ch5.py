"""Sizes of Chapter 5 (the book's synthesis): one model family, one task, four theories.

``ch5.capacity``: the full Mamba LM in mamba-ssm's layout (``d_conv`` 4, ``expand`` 2, RMSNorm, tied head) with 1 or
2 layers, trained on zoology's MQAR (paper 002's regime R0: V = 512, and its ratio L = 4κ: L = 64 at κ = 16) with
the authors' recipe of paper 002 ("code": AdamW lr 10⁻², β = (0.9, 0.95), no weight decay, warmup 100 → hold 400 →
cosine to 0, clip 1.5, label smoothing 0.1); for each (layers, D, N) and seed a bisection over the κ ladder finds
the largest κ with held-out recall ≥ 90 % and ≥ 50 %, one training per probe
(:mod:`mamba_recall.experiments.ch5_capacity`). ``cells`` are ``[layers, D, N]``.

* ``ci``: a 64-token vocabulary, three small cells (one 2-layer cell with its 1-layer match at 2N), one seed, a
  three-rung ladder, 800 steps (about a minute a search); the notebook shows the first cell's search;
* ``cpu-hours``: 9 one-layer cells D ∈ {16, 32, 64} × N ∈ {2, 4, 8} and 3 two-layer cells, 3 seeds (about 10
  CPU-hours on a 2-core CPU, measured: ``--preset cpu-hours`` prints its estimate);
* ``paper``: the sizes of paper 002's grids (D up to 128, N up to 32, κ up to 181), batch 128, 2000 steps, for a GPU
  or a Ray cluster.
"""

#: √2-spaced κ ladder (rounded): the search's candidate numbers of pairs.
LADDER = [2, 3, 4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128, 181]

_RECIPE = {
    "lr": 1e-2,
    "betas": [0.9, 0.95],
    "weight_decay": 0.0,
    "schedule": "code",
    "warmup": 100,
    "hold": 400,
    "grad_clip": 1.5,
    "label_smoothing": 0.1,
}

EXPERIMENTS: dict[str, dict[str, dict]] = {
    "ch5.capacity": {
        "ci": {
            "V": 64,
            "L_per_kappa": 4,
            "cells": [[1, 32, 8], [1, 32, 4], [2, 32, 4]],
            "ladder": [2, 4, 8],
            "thresholds": [0.5, 0.9],
            "seeds": 1,
            "steps": 800,
            "batch": 32,
            "eval_every": 100,
            "patience": 3,
            "min_delta": 0.01,
            "target_accuracy": 0.99,
            "n_eval": 200,
            "n_delta": 32,
            "recipe": _RECIPE,
        },
        "cpu-hours": {
            "V": 512,
            "L_per_kappa": 4,
            "cells": [[1, d, n] for d in (16, 32, 64) for n in (2, 4, 8)] + [[2, 16, 4], [2, 32, 4], [2, 32, 8]],
            "ladder": LADDER[:11],
            "thresholds": [0.5, 0.9],
            "seeds": 3,
            "steps": 1500,
            "batch": 64,
            "eval_every": 250,
            "patience": 3,
            "min_delta": 0.01,
            "target_accuracy": 0.99,
            "n_eval": 500,
            "n_delta": 64,
            "recipe": _RECIPE,
        },
        "paper": {
            "V": 512,
            "L_per_kappa": 4,
            "cells": [[layers, d, n] for layers in (1, 2) for d in (16, 32, 64, 128) for n in (4, 8, 16, 32)],
            "ladder": LADDER,
            "thresholds": [0.5, 0.9],
            "seeds": 3,
            "steps": 2000,
            "batch": 128,
            "eval_every": 250,
            "patience": 3,
            "min_delta": 0.01,
            "target_accuracy": 0.99,
            "n_eval": 1000,
            "n_delta": 128,
            "recipe": _RECIPE,
        },
    },
}

#: the smoke pass keeps each preset's first cell and one 2-layer cell (both layer counts) and a two-rung ladder.
SMOKE = {
    "ch5.capacity": {
        preset: {"cells": [sizes["cells"][0], next(c for c in sizes["cells"] if c[0] == 2)], "ladder": [2, 4]}
        for preset, sizes in EXPERIMENTS["ch5.capacity"].items()
    }
}
