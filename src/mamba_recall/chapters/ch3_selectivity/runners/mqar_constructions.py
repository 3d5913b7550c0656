"""Sweeps of the explicit MQAR constructions (paper 003, Thms. 2–4, Lemma 4; the printed Thm. 2 bias and Thm. 4 readout against the corrected ones).

``python -m mamba_recall grid ch3_mqar_constructions --preset ci|paper`` (CPU, float64; seconds to minutes; this
runner's own command, ``python -m mamba_recall.chapters.ch3_selectivity.runners.mqar_constructions``, runs the same).
One run-store job per (κ, |V|) pair of the sweep (``kappas`` × ``Vs``, then ``big_kappas`` at ``big_V``; seed 1,
the data's; JL draws ``0 .. draws − 1``), in ``results/runs/ch3_mqar_constructions/``. Tables of
``results/ch3_mqar_constructions_<preset>.json``, each the jobs' rows in job order:

* ``jl`` — accuracy (max and mean over JL draws) of every variant of ``theory.mqar_constructions.VARIANTS``
  (Thm. 2 bias as printed / corrected / centered, Thm. 3 JL values, Thm. 4 readout as printed / centered)
  against the code size p, for κ × |V| (Thm. 4 only where κ·p ≤ 2048);
* ``thm3_keys`` — Thm. 3 with JL *keys* (N = p_k) and p_v = 32: accuracy against p_k (the N ≈ log κ claim), at the
  first |V| only;
* ``thm2_N`` — Thm. 2 one-hot with N < κ state columns (keys share columns), N ∈ {1, κ/2, κ − 1, κ}, at the first
  |V| only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mamba_recall.experiment import experiment_named, runner_main
from mamba_recall.presets import experiment
from mamba_recall.runstore import finished_status, make_job
from mamba_recall.theory.mqar_constructions import VARIANTS, construction_accuracy, theory_dims

from ..training.job_configs import ConstructionPair

EXPERIMENT = "ch3_mqar_constructions"
RUNNER = "mamba_recall.chapters.ch3_selectivity.runners.mqar_constructions:run_job"
#: a run's scalar metrics (``Experiment.metrics``): none, a job's result is rows of the tables below (its measured
#: fields max, mean and accuracy per row), so its bundle's ``runs`` and ``cells`` list the runs and their (κ, |V|)
METRICS = ()
#: the bundle's tables and their columns, each the concatenation of the jobs' rows of that name (a run record keeps a
#: row's fields sorted: the columns are put back in this order)
TABLES = {
    "jl": ("kappa", "V", "p", "variant", "max", "mean", "d", "N"),
    "thm3_keys": ("kappa", "V", "pk", "N", "max", "mean"),
    "thm2_N": ("kappa", "V", "N", "accuracy"),
}
#: the seed of every sequence the sweeps draw (the JL codes are drawn with ``jl_seed`` = 0 .. draws − 1)
DATA_SEED = 1
#: Thm. 4's embedding has κ·p columns: larger ones are left out of the sweep
THM4_MAX_KAPPA_P = 2048
#: the seconds of the ci sweep by the one-process runner this grid replaced: 14.1 s for its 6 (κ, |V|) pairs, 50 sizes
#: swept in all (5 code sizes p per pair, and 5 key sizes p_k at each of the 4 pairs of the first |V|), 100 sequences
#: per point, 3 draws; one thread
_RECORDED = dict(seconds=14.1, pairs=6, sizes=50, sequences=100, draws=3)


def _sizes(preset: str, smoke: bool) -> dict:
    return experiment(EXPERIMENT, preset, smoke=True) if smoke else experiment(EXPERIMENT, preset)


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    """One job per distinct (κ, |V|) pair, in the sweep's order: every κ of ``kappas`` at each |V| of ``Vs``, then
    each of ``big_kappas`` at ``big_V``. A job at the first |V| also sweeps the key sizes ``pks`` and Thm. 2's
    state columns (``keys_and_columns``)."""
    s = _sizes(preset, smoke)
    pairs = [(k, V) for V in s["Vs"] for k in s["kappas"]] + [(k, s["big_V"]) for k in s["big_kappas"]]
    return [
        make_job(
            EXPERIMENT,
            ConstructionPair(
                kappa=kappa,
                V=V,
                T=s["T"],
                sequences=s["sweep_sequences"],
                draws=s["draws"],
                ps=list(s["ps"]),
                variants=list(VARIANTS),
                thm4_max_kappa_p=THM4_MAX_KAPPA_P,
                keys_and_columns=V == s["Vs"][0],
                pks=list(s["pks"]),
                thm3_keys_pv=32,
            ),
            DATA_SEED,
        )
        for kappa, V in dict.fromkeys(pairs)
    ]


def run_job(config: ConstructionPair, seed: int) -> dict:
    """The rows of one (κ, |V|) pair: ``jl`` (per code size p and variant: max and mean accuracy over the JL draws
    and the construction's dimensions d, N), and at the first |V| ``thm3_keys`` (per key size p_k) and ``thm2_N``
    (per number of state columns N); empty lists elsewhere."""
    unknown = [v for v in config.variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"variants {unknown} are not in theory.mqar_constructions.VARIANTS ({', '.join(VARIANTS)}).")
    kappa, V, T, n, draws = config.kappa, config.V, config.T, config.sequences, config.draws
    jl, keys, cols = [], [], []
    for p in config.ps:
        for name in config.variants:
            cons, kw = VARIANTS[name]
            if cons == "thm4" and kappa * p > config.thm4_max_kappa_p:
                continue
            accs = [
                construction_accuracy(cons, kappa, V, n=n, T=T, seed=seed, jl_seed=s, **kw(p)) for s in range(draws)
            ]
            dims = theory_dims(cons, kappa, V, p=p)
            jl.append(dict(kappa=kappa, V=V, p=p, variant=name, max=max(accs), mean=float(np.mean(accs)), **dims))
    if config.keys_and_columns:
        pv = config.thm3_keys_pv
        for pk in config.pks:
            accs = [
                construction_accuracy("thm3", kappa, V, n=n, T=T, seed=seed, jl_seed=s, pk=pk, pv=pv)
                for s in range(draws)
            ]
            keys.append(dict(kappa=kappa, V=V, pk=pk, N=pk, max=max(accs), mean=float(np.mean(accs))))
        for N in range(1, kappa + 1):
            if N in (1, kappa // 2, kappa - 1, kappa):
                accuracy = construction_accuracy("thm2", kappa, V, n=n, T=T, seed=seed, N=N)
                cols.append(dict(kappa=kappa, V=V, N=N, accuracy=accuracy))
    return {"jl": jl, "thm3_keys": keys, "thm2_N": cols}


def estimate(left: list[dict]) -> tuple[float, str]:
    """Seconds for the jobs ``left``: the recorded seconds of the ci sweep per size swept (p, and p_k at the first
    |V|), sequence and draw, times each job's (not measured here)."""
    r = _RECORDED
    per_unit = r["seconds"] / (r["sizes"] * r["sequences"] * r["draws"])
    total = 0.0
    for j in left:
        c = j["config"]
        sizes = len(c["ps"]) + (len(c["pks"]) if c["keys_and_columns"] else 0)
        total += per_unit * c["sequences"] * c["draws"] * sizes
    basis = (
        f"recorded, not measured here: the ci sweep took {r['seconds']} s for its {r['pairs']} (κ, |V|) pairs, "
        f"{r['sizes']} sizes swept × {r['sequences']} sequences × {r['draws']} draws (one thread); each job at that "
        "rate per size, sequence and draw it sweeps"
    )
    return total, basis


def write_bundle(preset: str, *, store=None, smoke: bool = False, log=print):
    """Assemble the finished jobs of ``preset`` into ``results/ch3_mqar_constructions_<preset>.json``: each of
    :data:`TABLES` the jobs' rows in job order, its columns in the order given there; ``data.variants`` the variants
    swept. ValueError if a run's row has other fields than its table's columns."""
    sizes = _sizes(preset, smoke)
    jobs = jobs_for(preset, smoke)
    runs, status = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    done = {r["key"]: r["result"] for r in runs}
    tables = {}
    for table, columns in TABLES.items():
        rows = [row for j in jobs if j["key"] in done for row in done[j["key"]][table]]
        odd = [sorted(row) for row in rows if set(row) != set(columns)]
        if odd:
            raise ValueError(
                f"{EXPERIMENT} table {table}: a run's row has the fields {odd[0]}, not {sorted(columns)}; the job "
                "function and TABLES disagree (fix the one that changed, then rerun the grid)."
            )
        tables[table] = pd.DataFrame(rows, columns=list(columns))
    data = status.with_fields(variants=list(VARIANTS))
    config = {**sizes, "preset": preset, "smoke": smoke, "runner": RUNNER}
    return experiment_named(EXPERIMENT).save_bundle(preset, data, config, tables, smoke=smoke, log=log)


main = runner_main(EXPERIMENT, "ci")


if __name__ == "__main__":
    raise SystemExit(main())
