r"""Chapter 2 runner: the D·N scaling law measured on the designed hashing circuit (paper 002, Thm 2).

    python -m mamba_recall.chapters.ch2_hashing_scaling.runners.designed_capacity --preset cpu-hours

For every (D, N) cell of the preset: the facts recalled (largest N_f) at per-query accuracy 50 % and 90 % by the
Thm 2 circuit at fixed V (:func:`mamba_recall.theory.designed_capacity.facts_capacity`), beside the N_f* each law
predicts (Remark 1, Eq. 15 as printed and as corrected, Eq. 77, the authors' later law with a = 3). Then log-log
fits ``N_f* = c (D·N)^α`` (95 % t-interval on α) for the measurements and for each law over the same cells, and
each law's error against the measurements. Writes ``results/ch2_designed_capacity_<preset>.json`` (+ CSV).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import pandas as pd

from mamba_recall.presets import experiment
from mamba_recall.results import command_provenance
from mamba_recall.theory.designed_capacity import LAWS_COMPARED, facts_capacity, fit_power_law, law_capacities
from mamba_recall.runners import runner_command

EXPERIMENT = "ch2_designed_capacity"


def run(cfg: dict, log=print) -> dict[str, pd.DataFrame]:
    import torch

    torch.set_num_threads(1)
    V = cfg["V"]
    rows = []
    for D, N in cfg["cells"]:
        for readout in cfg["readouts"]:
            t0 = time.perf_counter()
            res = facts_capacity(
                V, D, N, tuple(cfg["levels"]), n_queries=cfg["n_queries"], seed=cfg["seed"], readout=readout
            )
            secs = time.perf_counter() - t0
            for level in cfg["levels"]:
                c = res["capacity"][level]
                row = dict(
                    D=D,
                    N=N,
                    DN=D * N,
                    level=level,
                    readout=readout,
                    Nf=c["Nf"],
                    censored=c["censored"],
                    acc_at=c["acc_at"],
                    acc_above=c["acc_above"],
                    evaluations=len(res["evaluations"]),
                    seconds=round(secs, 1),
                )
                for col, pred in law_capacities(V, D, N, level).items():
                    # a law's N_f* at the search cap V/2 is censored (the law allows at least that): no ratio, no fit
                    row[col] = pred if pred < V // 2 else float("nan")
                    row[f"ratio_{col}"] = c["Nf"] / pred if 0 < pred < V // 2 else float("nan")
                rows.append(row)
            log(
                f"D={D} N={N} {readout}: "
                + ", ".join(f"{l:.0%}: N_f*={res['capacity'][l]['Nf']}" for l in cfg["levels"])
                + f" ({secs:.0f} s)"
            )
    cap = pd.DataFrame(rows)
    fits, errors = [], []
    for (level, readout), g in cap.groupby(["level", "readout"]):
        usable = g[(g["Nf"] >= cfg["min_fit_Nf"]) & ~g["censored"]]
        subsets = {
            "all cells": usable,
            "D = N": usable[usable["D"] == usable["N"]],
            "D = 256, N varies": usable[usable["D"] == 256],
        }
        for subset, s in subsets.items():
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


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="cpu-hours", choices=["ci", "cpu-hours", "paper"])
    ap.add_argument("--device", default="cpu", choices=["auto", "cpu"])
    args = ap.parse_args(argv)
    from mamba_recall.results import save_bundle

    cfg = experiment(EXPERIMENT, args.preset)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    start = time.perf_counter()
    tables = run(cfg, log)
    fits = tables["fits"]
    main_fit = fits[(fits["subset"] == "all cells") & (fits["series"] == "measured")]
    data = {
        "exponents": {
            f"{r.level:g}/{r.readout}": dict(
                exponent=r.exponent, ci_low=r.ci_low, ci_high=r.ci_high, n=int(r.n), r2=r.r2
            )
            for r in main_fit.itertuples()
        },
        "definition": "N_f* = the largest number of facts (key-value pairs, L = 4 N_f, Zoology MQAR, random "
        "padding) at which the designed Thm 2 circuit's per-query accuracy is >= level, at fixed V; "
        "bisection on N_f, each N_f on its own data; fits over cells with N_f* >= min_fit_Nf and "
        "not censored; law predictions from theory.capacity.predicted_capacity with delta = 1 - level (NaN where "
        "a law allows N_f >= V/2, the search cap). Note: with L = 4 N_f every position writes a "
        "(previous token, token) pair into the state, so the circuit holds about 4 N_f pairs (facts, "
        "queries, random padding), not N_f",
        "interval_method": "95 % t-interval on the OLS slope of ln N_f* on ln(D N), n - 2 degrees of freedom",
    }
    config = {
        "preset": args.preset,
        **cfg,
        "construction": "code",
        "L": "4 N_f",
        "task": "mqar, power_a 1, pad full",
        "data_seed": "12345 + N_f",
        "laws": [dict(column=c, law=l, a=a, label=lab) for c, l, a, lab in LAWS_COMPARED],
    }
    path = save_bundle(
        f"ch2_designed_capacity_{args.preset}",
        data,
        config,
        command=f"{runner_command('ch2_designed_capacity')} --preset {args.preset}",
        device="cpu",
        wall_seconds=round(time.perf_counter() - start, 1),
        tables=tables,
    )
    print(path)


if __name__ == "__main__":
    main()
