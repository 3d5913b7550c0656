"""Sweeps of the explicit MQAR constructions (paper 003, Thms. 2–4, Lemma 4; the printed Thm. 2 bias and Thm. 4 readout against the corrected ones).

``python -m mamba_recall.chapters.ch3_selectivity.runners.mqar_constructions --preset ci|paper`` (CPU, float64; minutes).
Tables written to ``results/ch3_mqar_constructions_<preset>.json``:

* ``jl`` — accuracy (max and mean over JL draws) of every variant of ``theory.mqar_constructions.VARIANTS``
  (Thm. 2 bias as printed / corrected / centered, Thm. 3 JL values, Thm. 4 readout as printed / centered)
  against the code size p, for κ × |V|;
* ``thm3_keys`` — Thm. 3 with JL *keys* (N = p_k) and p_v = 32: accuracy against p_k (the N ≈ log κ claim);
* ``thm2_N`` — Thm. 2 one-hot with N < κ state columns (keys share columns).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from mamba_recall.results import command_provenance
from mamba_recall.theory.mqar_constructions import VARIANTS, construction_accuracy, theory_dims
from .common import parse, save_runner_bundle


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    args = parse(__doc__.splitlines()[0], "ch3_mqar_constructions", "ch3_mqar_constructions", argv, one_process=True)
    cfg = args.sizes
    T, n, draws = cfg["T"], cfg["sweep_sequences"], cfg["draws"]
    start = time.time()
    jl, keys, cols = [], [], []
    grid = [(k, V) for V in cfg["Vs"] for k in cfg["kappas"]] + [(k, cfg["big_V"]) for k in cfg["big_kappas"]]
    for kappa, V in dict.fromkeys(grid):
        for p in cfg["ps"]:
            for name, (cons, kw) in VARIANTS.items():
                if cons == "thm4" and kappa * p > 2048:
                    continue
                accs = [
                    construction_accuracy(cons, kappa, V, n=n, T=T, seed=1, jl_seed=s, **kw(p)) for s in range(draws)
                ]
                dims = theory_dims(cons, kappa, V, p=p)
                jl.append(dict(kappa=kappa, V=V, p=p, variant=name, max=max(accs), mean=float(np.mean(accs)), **dims))
            print(kappa, V, p, flush=True)
        if V == cfg["Vs"][0]:
            for pk in cfg["pks"]:
                accs = [
                    construction_accuracy("thm3", kappa, V, n=n, T=T, seed=1, jl_seed=s, pk=pk, pv=32)
                    for s in range(draws)
                ]
                keys.append(dict(kappa=kappa, V=V, pk=pk, N=pk, max=max(accs), mean=float(np.mean(accs))))
            for N in range(1, kappa + 1):
                if N in (1, kappa // 2, kappa - 1, kappa):
                    cols.append(
                        dict(
                            kappa=kappa,
                            V=V,
                            N=N,
                            accuracy=construction_accuracy("thm2", kappa, V, n=n, T=T, seed=1, N=N),
                        )
                    )
    save_runner_bundle(
        args,
        "ch3_mqar_constructions",
        {"variants": list(VARIANTS)},
        cfg,
        start,
        {"jl": jl, "thm3_keys": keys, "thm2_N": cols},
        device="cpu",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
