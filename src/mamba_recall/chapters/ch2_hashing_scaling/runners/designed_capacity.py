r"""Chapter 2 runner: the D·N scaling law measured on the designed hashing circuit (paper 002, Thm 2).

    python -m mamba_recall grid ch2_designed_capacity --preset cpu-hours
    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.designed_capacity --preset cpu-hours  (the same)

One run-store job per (D, N) cell and readout of the preset (``results/runs/ch2_designed_capacity/``, seed the
preset's ``seed``, the circuit's and the bisection's): the facts recalled (largest N_f) at per-query accuracy 50 %
and 90 % by the Thm 2 circuit at fixed V (:func:`mamba_recall.theory.designed_capacity.facts_capacity`). The
bundle ``results/ch2_designed_capacity_<preset>.json`` (+ CSV) is assembled from the finished jobs: table
``capacity`` (one row per cell, readout and level, beside the N_f* each law predicts: Remark 1, Eq. 15 as printed
and as corrected, Eq. 77, the authors' later law with a = 3), then over all cells the log-log fits ``N_f* = c
(D·N)^α`` (95 % t-interval on α) for the measurements and for each law (``fits``) and each law's error against the
measurements (``law_errors``) (:func:`capacity_tables`).
"""

from __future__ import annotations

import math
import time

import pandas as pd

from mamba_recall.experiment import experiment_named, runner_main
from mamba_recall.presets import experiment
from mamba_recall.runstore import finished_status, make_job
from mamba_recall.theory.designed_capacity import LAWS_COMPARED, facts_capacity, fit_power_law, law_capacities

from .job_configs import CapacityCell

EXPERIMENT = "ch2_designed_capacity"
RUNNER = "mamba_recall.chapters.ch2_hashing_scaling.runners.designed_capacity:run_job"
#: a run's scalar metrics (``Experiment.metrics``): its count of circuit evaluations; its measurements are rows,
#: one per (level, readout) (Nf, acc_at, acc_above: the table ``capacity``)
METRICS = ("evaluations",)
#: the fields of a job's rows, the first columns of the table ``capacity`` in this order (a run record keeps a
#: row's fields sorted)
ROW_FIELDS = ("D", "N", "DN", "level", "readout", "Nf", "censored", "acc_at", "acc_above", "evaluations", "seconds")
#: the fit subsets of :func:`capacity_tables`: name -> which usable rows it keeps
SUBSETS = {
    "all cells": lambda t: t,
    "D = N": lambda t: t[t["D"] == t["N"]],
    "D = 256, N varies": lambda t: t[t["D"] == 256],
}
#: seconds per (V · query) of one job, the slowest cell of the cpu-hours bundle made by the one-process runner this
#: grid replaced (6.9 s at (D, N) = (256, 256), V = 8192, 2000 queries, values readout, one thread)
_RECORDED_SECONDS, _RECORDED_V, _RECORDED_QUERIES = 6.9, 8192, 2000


def _sizes(preset: str, smoke: bool) -> dict:
    return experiment(EXPERIMENT, preset, smoke=True) if smoke else experiment(EXPERIMENT, preset)


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    """One job per (D, N) cell and readout, in the preset's order (cells, then readouts): the config the circuit is
    built and measured with, the seed the preset's (the circuit's weights; the data of N_f are ``12345 + N_f``)."""
    s = _sizes(preset, smoke)
    return [
        make_job(
            EXPERIMENT,
            CapacityCell(
                V=s["V"],
                D=D,
                N=N,
                readout=readout,
                levels=list(s["levels"]),
                n_queries=s["n_queries"],
                construction="code",
                L="4 N_f",
                task="mqar, power_a 1, pad full",
                data_seed="12345 + N_f",
            ),
            s["seed"],
        )
        for D, N in s["cells"]
        for readout in s["readouts"]
    ]


def run_job(config: CapacityCell, seed: int) -> dict:
    """One cell and readout: ``rows``, one per level (D, N, DN, level, readout, N_f*, censored, the accuracy at
    N_f* and at N_f* + 1, the evaluations of the bisection, its seconds), and the bisection's ``evaluations``."""
    if config.construction != "code":
        raise ValueError(f"construction {config.construction!r}: the jobs measure the 'code' circuit only.")
    V, D, N, levels = config.V, config.D, config.N, config.levels
    t0 = time.perf_counter()
    res = facts_capacity(V, D, N, tuple(levels), n_queries=config.n_queries, seed=seed, readout=config.readout)
    secs = time.perf_counter() - t0
    rows = []
    for level in levels:
        c = res["capacity"][level]
        rows.append(
            dict(
                D=D,
                N=N,
                DN=D * N,
                level=level,
                readout=config.readout,
                Nf=c["Nf"],
                censored=c["censored"],
                acc_at=c["acc_at"],
                acc_above=c["acc_above"],
                evaluations=len(res["evaluations"]),
                seconds=round(secs, 1),
            )
        )
    return {"rows": rows, "evaluations": len(res["evaluations"])}


def capacity_tables(rows: list[dict], V: int, min_fit_Nf: int) -> dict[str, pd.DataFrame]:
    """The bundle's tables from the measured ``rows`` of every finished cell (:func:`run_job`'s, in job order):

    * ``capacity``: each row (its fields in the order of :data:`ROW_FIELDS`; ValueError if it has others) with each
      law's N_f* (:func:`~mamba_recall.theory.designed_capacity.law_capacities`;
      NaN at or above the search cap V/2, where the law allows at least that) and ``ratio_<law>`` = measured /
      law (NaN where the law is 0 or censored);
    * ``fits``: per (level, readout), subset of :data:`SUBSETS` and series (the measurements, each law), the OLS fit
      of ln N_f* on ln(D·N) (:func:`~mamba_recall.theory.designed_capacity.fit_power_law`: exponent α with its 95 %
      t-interval, n − 2 degrees of freedom) over the usable rows: N_f* ≥ ``min_fit_Nf`` and not censored;
    * ``law_errors``: per (level, readout) and law, over the usable rows with a finite positive ratio r: the median
      r, the mean and the largest |log₁₀ r|."""
    out = []
    for r in rows:
        if set(r) != set(ROW_FIELDS):
            raise ValueError(
                f"{EXPERIMENT}: a run's row has the fields {sorted(r)}, not {sorted(ROW_FIELDS)}; run_job and "
                "ROW_FIELDS disagree (fix the one that changed, then rerun the grid)."
            )
        row = {f: r[f] for f in ROW_FIELDS}
        for col, pred in law_capacities(V, r["D"], r["N"], r["level"]).items():
            # a law's N_f* at the search cap V/2 is censored (the law allows at least that): no ratio, no fit
            row[col] = pred if pred < V // 2 else float("nan")
            row[f"ratio_{col}"] = r["Nf"] / pred if 0 < pred < V // 2 else float("nan")
        out.append(row)
    cap = pd.DataFrame(out)
    fits, errors = [], []
    for (level, readout), g in cap.groupby(["level", "readout"]):
        usable = g[(g["Nf"] >= min_fit_Nf) & ~g["censored"]]
        for subset, keep in SUBSETS.items():
            s = keep(usable)
            for who in ["measured"] + [c for c, *_ in LAWS_COMPARED]:
                col = "Nf" if who == "measured" else who
                pts = s[s[col].notna()]
                f = fit_power_law(list(pts["DN"]), list(pts[col]))
                fits.append(
                    dict(
                        level=level,
                        readout=readout,
                        subset=subset,
                        series=who,
                        **f,
                        DN_min=int(pts["DN"].min()) if len(pts) else None,
                        DN_max=int(pts["DN"].max()) if len(pts) else None,
                    )
                )
        for col, _, _, label in LAWS_COMPARED:
            r = [x for x in usable[f"ratio_{col}"] if x == x and x > 0 and not math.isinf(x)]
            logs = [abs(math.log10(x)) for x in r]
            errors.append(
                dict(
                    level=level,
                    readout=readout,
                    law=col,
                    label=label,
                    cells=len(r),
                    median_ratio_measured_over_law=float(pd.Series(r).median()) if r else float("nan"),
                    mean_abs_log10_ratio=sum(logs) / len(logs) if logs else float("nan"),
                    max_abs_log10_ratio=max(logs) if logs else float("nan"),
                )
            )
    return {"capacity": cap, "fits": pd.DataFrame(fits), "law_errors": pd.DataFrame(errors)}


def estimate(left: list[dict]) -> tuple[float, str]:
    """Seconds for the jobs ``left``: each at the recorded seconds per (V · query) of the slowest cell measured so
    far, times its V and queries (not measured here)."""
    rate = _RECORDED_SECONDS / (_RECORDED_V * _RECORDED_QUERIES)
    total = sum(rate * j["config"]["V"] * j["config"]["n_queries"] for j in left)
    basis = (
        f"recorded, not measured here: {_RECORDED_SECONDS} s for the slowest cpu-hours cell (D = N = 256, "
        f"V = {_RECORDED_V}, {_RECORDED_QUERIES} queries, values readout, one thread), scaled by V · queries per job"
    )
    return total, basis


def write_bundle(preset: str, *, store=None, smoke: bool = False, log=print):
    """Assemble the finished jobs of ``preset`` into ``results/ch2_designed_capacity_<preset>.json``
    (:func:`capacity_tables`; ``data.exponents``: the measured fit over all cells per level and readout)."""
    sizes = _sizes(preset, smoke)
    jobs = jobs_for(preset, smoke)
    runs, status = finished_status(jobs, store, preset=preset, log=log)
    if not runs:
        return None
    done = {r["key"]: r for r in runs}
    rows = [row for j in jobs if j["key"] in done for row in done[j["key"]]["result"]["rows"]]
    tables = capacity_tables(rows, sizes["V"], sizes["min_fit_Nf"])
    fits = tables["fits"]
    main_fit = fits[(fits["subset"] == "all cells") & (fits["series"] == "measured")]
    data = status.with_fields(
        exponents={
            f"{r.level:g}/{r.readout}": dict(
                exponent=r.exponent, ci_low=r.ci_low, ci_high=r.ci_high, n=int(r.n), r2=r.r2
            )
            for r in main_fit.itertuples()
        },
        definition="N_f* = the largest number of facts (key-value pairs, L = 4 N_f, Zoology MQAR, random "
        "padding) at which the designed Thm 2 circuit's per-query accuracy is >= level, at fixed V; "
        "bisection on N_f, each N_f on its own data; fits over cells with N_f* >= min_fit_Nf and "
        "not censored; law predictions from theory.capacity.predicted_capacity with delta = 1 - level (NaN where "
        "a law allows N_f >= V/2, the search cap). Note: with L = 4 N_f every position writes a "
        "(previous token, token) pair into the state, so the circuit holds about 4 N_f pairs (facts, "
        "queries, random padding), not N_f",
    )
    # the bundle's intervals are the fits' (a slope's), not means over seeds: say so in place of the store's text
    data["interval_method"] = "95 % t-interval on the OLS slope of ln N_f* on ln(D N), n - 2 degrees of freedom"
    config = {
        "preset": preset,
        **sizes,
        "construction": "code",
        "L": "4 N_f",
        "task": "mqar, power_a 1, pad full",
        "data_seed": "12345 + N_f",
        "laws": [dict(column=c, law=l, a=a, label=lab) for c, l, a, lab in LAWS_COMPARED],
        "smoke": smoke,
        "runner": RUNNER,
    }
    return experiment_named(EXPERIMENT).save_bundle(preset, data, config, tables, smoke=smoke, log=log)


main = runner_main(EXPERIMENT, "cpu-hours")


if __name__ == "__main__":
    raise SystemExit(main())
