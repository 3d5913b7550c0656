"""Sizes of Chapter 2 (paper 002): hashing circuits and recall scaling laws.

Each entry: ``"chN.experiment": {"ci": {...}, "paper": {...}}`` (see ``presets/__init__.py``).
Regimes (V, N_f, L): R0 (512, 16, 64), R1 (512, 32, 128), R2 (1024, 16, 64) [authors' code];
R-ci (64, 8, 32), R-a (128, 16, 64, App. K's setting), R-b (256, 16, 64) [ours: CPU-sized].
"""

#: Training recipes of the simplified models (paper 002), run by :func:`mamba_recall.train.train_ensemble`.
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

_CODE_D = list(range(2, 65, 2))  # [code] grid: D ∈ {2, 4, …, 64}
_CODE_N = list(range(2, 33))  # N ∈ {2, …, 32}; cells with N > D are skipped

EXPERIMENTS: dict[str, dict[str, dict]] = {
    # Notebook 01: Thm 1 exactness, Lemma 1 inside its domain N < D < V (V = 1024, N_f = 4: the condition holds at
    # D = 1000, N = 900), the designed Thm 2 grid (Fig. 6b).
    "ch2.circuit": {
        "ci": {
            "thm1": {"V": 128, "Nf": 16, "L": 64, "n_seq": 1000},
            "lemma1": {"V": 1024, "Nf": 4, "L": 16, "D": 1000, "N": 900, "n_seq": 256},
            "designed": {
                "V": 256,
                "Nf": 16,
                "L": 64,
                "n_seq": 64,
                "Ds": [16, 32, 64, 128, 256],
                "Ns": [4, 8, 16, 32, 64, 128, 256],
            },
            "fig1": {"V": 16, "D": 8, "N": 4},
        },
        "paper": {
            "thm1": {"V": 128, "Nf": 16, "L": 64, "n_seq": 10000},
            "lemma1": {"V": 1024, "Nf": 4, "L": 16, "D": 1000, "N": 900, "n_seq": 2500},
            "designed": {
                "V": 256,
                "Nf": 16,
                "L": 64,
                "n_seq": 1000,
                "Ds": [16, 32, 64, 128, 256],
                "Ns": [4, 8, 16, 32, 64, 128, 256],
            },
            "fig1": {"V": 16, "D": 8, "N": 4},
        },
    },
    # Notebook 02: the laws on (D, N) grids with sliders over V and N_f.
    "ch2.theory": {
        "ci": {
            "Ds": [4, 8, 16, 32, 64, 128, 256],
            "Ns": [2, 4, 8, 16, 32, 64, 128, 256],
            "Vs": [64, 128, 256, 512, 1024, 8192],
            "Nfs": [8, 16, 32, 64],
        },
        "paper": {
            "Ds": [2**k for k in range(1, 11)],
            "Ns": [2**k for k in range(0, 10)],
            "Vs": [64, 128, 256, 512, 1024, 2048, 4096, 8192, 65536],
            "Nfs": [4, 8, 16, 32, 64, 128, 256],
        },
    },
    # Notebook 02: Thm 2 and Thm 3's V_max: the designed model's accuracy vs V at fixed (D, N, N_f).
    "ch2.vsweep": {
        "ci": {
            "cells": [[128, 64], [64, 32]],
            "Nf": 16,
            "L": 64,
            "n_seq": 64,
            "Vs": [128, 256, 512, 1024, 2048, 4096, 8192],
        },
        "paper": {
            "cells": [[128, 64], [64, 32], [64, 16], [32, 16]],
            "Nf": 16,
            "L": 64,
            "n_seq": 1000,
            "Vs": [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536],
        },
    },
    # Notebook 03: one trained model read as a hash table (Figs. 2-5, 9). R-a, D=64, N=16.
    "ch2.mech": {
        "ci": {
            "V": 128,
            "Nf": 16,
            "L": 64,
            "D": 64,
            "N": 16,
            "steps": 200,
            "batch": 128,
            "warmup": 50,
            "hold": 50,
            "n_eval": 500,
            "n_probe": 50,
            "recipe": "code",
        },
        "paper": {
            "V": 256,
            "Nf": 16,
            "L": 64,
            "D": 64,
            "N": 32,
            "steps": 2000,
            "batch": 128,
            "warmup": 100,
            "hold": 400,
            "n_eval": 2000,
            "n_probe": 100,
            "recipe": "code",
        },
    },
    # Notebook 04 / runner ch2_scaling: Fig. 6 (a, a', a'', b, c, d), Fig. 7, Figs. 10-11, Tab. 10.
    "ch2.scaling": {
        "ci": {
            "regimes": {"R-ci": [64, 8, 32]},
            "Ds": [8, 16, 32],
            "Ns": [2, 4, 8, 16],
            "skip_N_gt_D": False,
            "seeds": 1,
            "steps": 300,
            "batch": 64,
            "warmup": 50,
            "hold": 50,
            "n_eval": 500,
            "designed_n_seq": 64,
            "full": {"cells": [[16, 8], [32, 8]], "steps": 300, "seeds": 1},
            "multilayer": {
                "V": 64,
                "Nf": 8,
                "L": 32,
                "D": 32,
                "Ns": [1, 2, 4, 8],
                "layers": [1, 2],
                "steps": 300,
                "seeds": 1,
            },
            "repetition": {
                "V": 64,
                "Nf": 4,
                "D": 32,
                "N": 16,
                "layers": [1, 2],
                "Nk": [2],
                "Nq": [2],
                "steps": 400,
                "seeds": 1,
                "batch": 64,
            },
            "ablation": {
                "V": 128,
                "Nf": 16,
                "L": 64,
                "D": 64,
                "N": 16,
                "steps": 300,
                "seeds": 1,
                "batch": 64,
                "half_batch_rows": ["Base", "A"],
            },
            "speed": {
                "V": 128,
                "Nf": 16,
                "L": 64,
                "D": 64,
                "N": 16,
                "batch": 128,
                "steps": 10,
                "ensembles": [1, 4, 16],
            },
        },
        "paper": {
            "regimes": {"R0": [512, 16, 64], "R1": [512, 32, 128], "R2": [1024, 16, 64]},
            "Ds": _CODE_D,
            "Ns": _CODE_N,
            "skip_N_gt_D": True,
            "seeds": 10,
            "steps": 3000,
            "batch": 128,
            "warmup": 100,
            "hold": 400,
            "n_eval": 2000,
            "designed_n_seq": 1000,
            "full": {
                "cells": [[d, n] for d in (8, 16, 32, 64) for n in (4, 8, 16, 32) if n <= d],
                "steps": 10000,
                "seeds": 3,
            },
            "multilayer": {
                "V": 512,
                "Nf": 80,
                "L": 320,
                "D": 64,
                "Ns": list(range(2, 17)),
                "layers": [1, 2, 3, 4, 5],
                "steps": 4000,
                "seeds": 3,
            },
            "repetition": {
                "V": 128,
                "Nf": 8,
                "D": 64,
                "N": [4, 8, 16, 32, 64],
                "layers": [1, 2, 3],
                "Nk": [2, 3],
                "Nq": [2, 3],
                "steps": 3000,
                "seeds": 3,
                "batch": 128,
            },
            "ablation": {
                "V": 128,
                "Nf": 16,
                "L": 64,
                "D": 64,
                "N": 16,
                "steps": 4000,
                "seeds": 3,
                "batch": 128,
                "half_batch_rows": ["Base", "A"],
            },
            "speed": {
                "V": 128,
                "Nf": 16,
                "L": 64,
                "D": 64,
                "N": 16,
                "batch": 128,
                "steps": 50,
                "ensembles": [1, 8, 64, 256],
            },
        },
    },
}

# Runner ch2_figs_cpu (run store, one job per model and seed): Fig. 7, Figs. 10-11 and Tab. 10 at the paper's own
# settings (recipe [code], batch 128, the paper's V / N_f / L / D where a CPU can) on the part of each grid that a
# 2-core CPU trains in about 3 CPU-hours together with Fig. 8 below, 3 seeds, >= 1000 steps (the paper: 3000-4000).
# Step times measured with one thread (CPU time, AMD EPYC, torch 2.13): V 512, L 64, D 64, batch 128: 55 / 106 /
# 200 ms per step at Λ = 1 / 2 / 4; V 128, L 64, D 64: 30-80 ms at Λ = 1-3; Tab. 10's selective rows 70-100 ms.
EXPERIMENTS["ch2.scaling"]["cpu-hours"] = {
    "batch": 128,
    "warmup": 100,
    "hold": 400,
    "n_eval": 1000,
    # Fig. 7 (§5.2): the paper's V = 512 and D = 64, but N_f = 16, L = 64 (regime R0) instead of N_f = 80,
    # L = 320: the (B, L, L) attention form makes a step at L = 320 ≈ 11x dearer (0.6 s at Λ = 1), which would
    # leave one cell. At N_f = 16 and D = 64 one layer crosses from 0.24 (N = 2) to 0.90 (N = 8) (ch2_trained_dn),
    # so N ∈ {2, 4} × Λ ∈ {1, 2, 4} puts two groups of equal Λ·N (4 and 8) inside the transition.
    "multilayer": {
        "V": 512,
        "Nf": 16,
        "L": 64,
        "D": 64,
        "Ns": [2, 4],
        "layers": [1, 2, 4],
        "steps": 1000,
        "seeds": 3,
    },
    # Figs. 10-11 (App. G): the paper's V = 128, N_f = 8, D = 64, batch 128; one state size N = 16 of its five
    # (4-64); cells (task, repeats, layers, post-query tokens): N_k, N_q = 2 with 1-2 layers, N_k = 3 with 1-3 layers
    # (Fig. 10 needs 3 layers there), N_q = 3 with 1-2 layers (Fig. 11: 2 layers already recall), and N_q = 2 with
    # value tokens after every query, the sequences Remark 5's 3/4 assumes (the generator's default pads with
    # tokens from the whole vocabulary); L = 2 N_f (repeats + 1).
    "repetition": {
        "V": 128,
        "Nf": 8,
        "D": 64,
        "N": 16,
        "cells": [
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
        "steps": 1000,
        "seeds": 3,
        "batch": 128,
    },
    # Tab. 10 (App. K): every row at the paper's V = 128, N_f = 16, L = 64, D = 64, N = 16, batch 128 (Base and A at
    # half batch for twice the steps, as App. K), 3 seeds; 1000 steps instead of 4000 (early stop at 0.999).
    "ablation": {
        "V": 128,
        "Nf": 16,
        "L": 64,
        "D": 64,
        "N": 16,
        "steps": 1000,
        "seeds": 3,
        "batch": 128,
        "half_batch_rows": ["Base", "A"],
    },
}

# Notebook 04: Remarks 3 and 5, the designed single-layer circuit on repeating keys / queries (App. G).
EXPERIMENTS["ch2.remarks"] = {
    "ci": {"V": 256, "D": 128, "N": 128, "Nf": 8, "n_seq": 500},
    "paper": {"V": 256, "D": 128, "N": 128, "Nf": 8, "n_seq": 5000},
}

# Section 05 / runner ch2_multihead: Fig. 8 (head patterns over (N, M) at fixed D), Fig. 15 (logit noise vs M),
# and Thm 5. Paper: the authors' MQAR__N_M__linear_trained__regime_0 (R-mh, D=60).
EXPERIMENTS["ch2.multihead"] = {
    "ci": {
        "V": 64,
        "Nf": 8,
        "L": 32,
        "D": 32,
        "Ns": [1, 2, 4, 8],
        "Ms": [1, 2, 4],
        "patterns": ["MQA", "MKA", "MVA", "MHA"],
        "values": "code",
        "seeds": 1,
        "steps": 300,
        "batch": 64,
        "warmup": 50,
        "hold": 50,
        "grad_clip": 5.0,
        "n_eval": 500,
        "n_noise": 200,
        "designed": {"V": 64, "D": 32, "N": 2, "M": 4, "L": 32, "batch": 4},
    },
    "paper": {
        "V": 512,
        "Nf": 16,
        "L": 64,
        "D": 60,
        "Ns": list(range(2, 11)),
        "Ms": [1, 2, 3, 4, 5, 6],
        "patterns": ["MQA", "MKA", "MVA", "MHA"],
        "values": "code",
        "seeds": 3,
        "steps": 4000,
        "batch": 128,
        "warmup": 100,
        "hold": 1400,
        "grad_clip": 5.0,
        "n_eval": 2000,
        "n_noise": 1000,
        "designed": {"V": 512, "D": 60, "N": 4, "M": 6, "L": 64, "batch": 8},
    },
}

# Runner ch2_figs_cpu, part heads: Fig. 8 and Thm 5 at the paper's regime (V = 512, N_f = 16, L = 64, D = 60, batch
# 128, recipe [code] with clip 5), M ∈ {1, 2, 4, 8}, >= 1000 steps (the paper: 4000), 3 seeds. Cells (pattern,
# values, M, N), chosen for about 1.3 CPU-hours (65-175 ms per step with one thread, CPU time): MHA with the authors' heads
# over M × N ∈ {2, 4} and one head at N = 8 (Thm 5's pairs M·N on the grid: (2, 2), (2, 4), (4, 2)); the full-width
# value ablation (values="full", every head reads the whole value vector as Lemma 5's proof) at N = 2;
# MQA, MKA, MVA at M ∈ {1, 2, 4, 8}, N = 4 (where one head is mid-transition), so that every pattern has the four head
# counts a rank test over M needs (Fig. 15's shared patterns, MVA its null; M = 2, 4 added for issue 31, ~50 CPU-min).
EXPERIMENTS["ch2.multihead"]["cpu-hours"] = {
    "V": 512,
    "Nf": 16,
    "L": 64,
    "D": 60,
    "Ns": [2, 4, 8],
    "Ms": [1, 2, 4, 8],
    "cells": [["MHA", "code", m, n] for m in (1, 2, 4, 8) for n in (2, 4)]
    + [["MHA", "code", 1, 8]]
    + [["MHA", "full", m, 2] for m in (2, 4, 8)]
    + [[p, "code", m, 4] for p in ("MQA", "MKA", "MVA") for m in (1, 8)]
    + [[p, "code", m, 4] for p in ("MQA", "MKA", "MVA") for m in (2, 4)],
    "values": "code",
    "seeds": 3,
    "steps": 1000,
    "batch": 128,
    "warmup": 100,
    "hold": 400,  # the paper's hold 1400 is for 4000 steps: past 1000 steps it would leave no decay at all
    "grad_clip": 5.0,
    "n_eval": 1000,
    "n_noise": 1000,
}

# Runner ch2_figs_cpu, part thm5 (issue 31): Thm 5's MHA pairs at the paper's 4000 steps (hold 1400, the paper's
# schedule), to see whether the split heads' gap at M = 4, N = 2 (−0.19 after 1000 steps) closes with training. The
# cells are only those Thm 5's rule reads: one head at N ∈ {2, 4, 8} and the MHA pairs with M·N on that grid,
# (2, 2), (2, 4), (4, 2); the regime and recipe are the fig8 part's. 18 jobs, about 1.6 CPU-hours (80 ms per step).
_THM5_CELLS = [["MHA", "code", 1, n] for n in (2, 4, 8)] + [["MHA", "code", m, n] for m, n in ((2, 2), (2, 4), (4, 2))]
_THM5_SHARED = ("V", "Nf", "L", "D", "batch", "warmup", "hold", "grad_clip", "n_eval", "n_noise", "values")


def _thm5(preset: str, **sizes) -> dict:
    """Thm 5's cells in the regime of ch2.multihead's ``preset`` entry, with ``sizes`` (seeds, steps, ...) on top."""
    base = EXPERIMENTS["ch2.multihead"][preset]
    return {**{k: base[k] for k in _THM5_SHARED}, "Ns": [2, 4, 8], "Ms": [1, 2, 4], "cells": _THM5_CELLS, **sizes}


EXPERIMENTS["ch2.thm5"] = {
    "ci": _thm5("ci", seeds=1, steps=300),  # a check that the part runs; the claim reads the cpu-hours bundle
    "paper": _thm5("paper", seeds=3, steps=4000),  # the paper's evaluation size (2000 sequences)
    "cpu-hours": _thm5("cpu-hours", seeds=3, steps=4000, hold=1400),
}

# Runner ch2_reference_grid (run store, one job per cell and seed): the authors' README reference grid
# (config MQAR__D_N__linear_trained__example: R0, D ∈ {16..64} × N ∈ {8..32}, batch 32, ≤ 2000 steps, [code]
# recipe, validation set of 1000 sequences, evaluated every 250 steps). ``cpu-hours`` is that grid with 3 seeds;
# ``paper`` the same with the paper's 10 seeds (§5.1); ``ci`` a tiny version of it.
EXPERIMENTS["ch2.reference_grid"] = {
    "ci": {
        "V": 64,
        "Nf": 8,
        "L": 32,
        "Ds": [8, 16],
        "Ns": [4, 8],
        "skip_N_gt_D": True,
        "batch": 32,
        "steps": 200,
        "recipe": "code",
        "overrides": {"warmup": 20, "hold": 40},
        "seeds": 2,
        "n_eval": 200,
        "eval_every": 50,
        "target_accuracy": 0.999,
    },
    "cpu-hours": {
        "V": 512,
        "Nf": 16,
        "L": 64,
        "Ds": [16, 32, 48, 64],
        "Ns": [8, 16, 24, 32],
        "skip_N_gt_D": True,
        "batch": 32,
        "steps": 2000,
        "recipe": "code",
        "overrides": {},
        "seeds": 3,
        "n_eval": 1000,
        "eval_every": 250,
        "target_accuracy": 0.999,
    },
    "paper": {
        "V": 512,
        "Nf": 16,
        "L": 64,
        "Ds": [16, 32, 48, 64],
        "Ns": [8, 16, 24, 32],
        "skip_N_gt_D": True,
        "batch": 32,
        "steps": 2000,
        "recipe": "code",
        "overrides": {},
        "seeds": 10,
        "n_eval": 1000,
        "eval_every": 250,
        "target_accuracy": 0.999,
    },
}

# Runner ch2_designed_capacity: facts recalled at 50 % and 90 % by the designed Thm 2 circuit against D·N (the
# D·N scaling law of Remark 1 / Eq. 15 measured; theory/designed_capacity.py). L = 4 N_f, V fixed, N ≤ D ≤ V.
_DC_SQUARE = [16, 24, 32, 48, 64, 96, 128, 192, 256]
EXPERIMENTS["ch2.designed_capacity"] = {
    "ci": {
        "V": 2048,
        "cells": [[d, d] for d in (16, 32, 64, 128)] + [[128, 32]],
        "levels": [0.5, 0.9],
        "readouts": ["values"],
        "n_queries": 1000,
        "seed": 0,
        "min_fit_Nf": 4,
    },
    "cpu-hours": {
        "V": 8192,
        "cells": [[d, d] for d in _DC_SQUARE] + [[256, n] for n in (16, 32, 64, 128)] + [[64, 16], [128, 32]],
        "levels": [0.5, 0.9],
        "readouts": ["values"],
        "n_queries": 2000,
        "seed": 0,
        "min_fit_Nf": 4,
    },
    "paper": {
        "V": 8192,
        "cells": [[d, d] for d in _DC_SQUARE] + [[256, n] for n in (16, 32, 64, 128)] + [[64, 16], [128, 32]],
        "levels": [0.5, 0.9],
        "readouts": ["values", "full"],
        "n_queries": 8000,
        "seed": 0,
        "min_fit_Nf": 4,
    },
}

# Runner ch2_trained_dn (run store): trained simplified models along one row (D = 64, N varies) and one column
# (N = 16, D varies) of regime R0 at the [code] D–N recipe (batch 128, ≤ 2000 steps), 3 seeds, beside each law's p.
EXPERIMENTS["ch2.trained_dn"] = {
    "ci": {
        "V": 64,
        "Nf": 8,
        "L": 32,
        "cells": [[16, 2], [16, 4], [16, 8], [8, 4]],
        "batch": 64,
        "steps": 200,
        "recipe": "code",
        "overrides": {"warmup": 20, "hold": 40},
        "seeds": 2,
        "n_eval": 200,
        "eval_every": 50,
        "target_accuracy": 0.999,
    },
    "cpu-hours": {
        "V": 512,
        "Nf": 16,
        "L": 64,
        "cells": [[64, n] for n in (2, 4, 8, 16, 32)] + [[d, 16] for d in (16, 24, 32, 48)],
        "batch": 128,
        "steps": 2000,
        "recipe": "code",
        "overrides": {},
        "seeds": 3,
        "n_eval": 1000,
        "eval_every": 250,
        "target_accuracy": 0.999,
    },
    "paper": {
        "V": 512,
        "Nf": 16,
        "L": 64,
        "cells": [[64, n] for n in range(2, 33, 2)] + [[d, 16] for d in range(16, 64, 4)],
        "batch": 128,
        "steps": 2000,
        "recipe": "code",
        "overrides": {},
        "seeds": 10,
        "n_eval": 2000,
        "eval_every": 250,
        "target_accuracy": 0.999,
    },
}
