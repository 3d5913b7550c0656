r"""Chapter 2 runner: trained simplified models along one row and one column of a paper regime, 3 seeds.

    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.trained_dn --preset cpu-hours --allow-long [--jobs 1]
    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.trained_dn --preset cpu-hours --aggregate-only

Regime R0 of the authors' code (V = 512, N_f = 16, L = 64), their D–N recipe (batch 128, ≤ 2000 steps, AdamW
lr 1e-2, β = (0.9, 0.95), no weight decay, clip 1.5, label smoothing 0.1, warmup 100 → hold 400 → cosine);
the row D = 64 with N ∈ {2, 4, 8, 16, 32} and the column N = 16 with D ∈ {16, 24, 32, 48} (and 64 from the row).
One run-store job per cell and seed (the same job function as :mod:`.reference_grid`), so the command
resumes. The bundle ``results/ch2_trained_dn_<preset>.json`` has per cell the mean best accuracy over seeds with
a 95 % t-interval, the seed-max, and each law's predicted accuracy (Eq. 77, Eq. 15 printed and corrected, the
authors' later law with a = 5/4 for trained linear models) with its error; and a table of each law's error.
"""

from __future__ import annotations

import pandas as pd

from mamba_recall.presets import experiment
from mamba_recall.runstore import make_job
from mamba_recall.theory.capacity import p_success
from .reference_grid import RUNNER, finished_cells, resolved_config, shared_config
from mamba_recall.experiment import experiment_named, runner_main

EXPERIMENT = "ch2_trained_dn"
#: (column, law, a): each law's predicted per-query accuracy.
LAWS = (
    ("eq77", "eq77", 3.0),
    ("eq15_printed", "eq15", 3.0),
    ("eq15_corrected", "eq15_consistent", 3.0),
    ("rev_a54", "rev_mV", 1.25),
)


def _sizes(preset: str, smoke: bool) -> dict:
    return experiment(EXPERIMENT, preset, smoke=True) if smoke else experiment(EXPERIMENT, preset)


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    sizes = _sizes(preset, smoke)
    return [
        make_job(EXPERIMENT, resolved_config(sizes, d, n), s) for d, n in sizes["cells"] for s in range(sizes["seeds"])
    ]


def write_bundle(preset: str, *, store=None, smoke: bool = False, log=print):
    sizes = _sizes(preset, smoke)
    table, data = finished_cells(jobs_for(preset, smoke), store, preset=preset, log=log)
    if table is None:
        return None
    table["DN"] = table["D"] * table["N"]
    row_D = max(d for d, _ in sizes["cells"])
    table["line"] = ["row" if d == row_D else "column" for d in table["D"]]
    errors = []
    for col, law, a in LAWS:
        table[col] = [p_success(sizes["V"], sizes["Nf"], d, n, law, a=a) for d, n in zip(table["D"], table["N"])]
        table[f"err_{col}"] = table[col] - table["best_accuracy_mean"]
        e = table[f"err_{col}"].abs()
        errors.append(
            dict(
                law=col,
                a=a,
                cells=len(table),
                mean_abs_error=float(e.mean()),
                max_abs_error=float(e.max()),
                mean_signed_error=float(table[f"err_{col}"].mean()),
            )
        )
    base = shared_config(sizes, sizes["cells"][0])
    data["aggregation"] = "best accuracy over evaluations per run; mean and 95 % interval over seeds, and seed-max"
    config = {
        "preset": preset,
        "smoke": smoke,
        "sizes": sizes,
        "job_config": base,
        "runner": RUNNER,
        "laws": [dict(column=c, law=l, a=a) for c, l, a in LAWS],
    }
    tables = {"predictions": table, "law_errors": pd.DataFrame(errors)}
    return experiment_named(EXPERIMENT).save_bundle(preset, data, config, tables, smoke=smoke, by=["D", "N"], log=log)


main = runner_main(EXPERIMENT, "cpu-hours")


if __name__ == "__main__":
    raise SystemExit(main())
