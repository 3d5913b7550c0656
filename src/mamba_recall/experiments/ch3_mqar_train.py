"""Trained 1-layer models on MQAR against the construction bounds (paper 003, Fig. 2, Figs. A.2–A.3).

``python -m mamba_recall.experiments.ch3_mqar_train --preset ci|paper [--device cpu|cuda]``.
Data: the paper-003 MQAR of App. D.3 (:func:`~mamba_recall.theory.mqar_constructions.gen_mqar`: κ distinct
keys, each queried once), on the fly. Models: ``s6`` = 1-layer Mamba without gate (size-4 conv, SiLU,
S6), ``s4d`` = the Mamba-S4D mixer *with* gate (Thm. 4's setting), ``mamba2`` = single-head Mamba-2 without gate
(its own three convs, ``models.s6.Mamba2Mixer``, N = round(8 ln κ)). ``ci``: micro-MQAR (κ = 4,
|V| = 16, T = 24, d = 32) with N below and above κ. ``paper``: the Fig. 2 grid (κ × d,
N = 2κ for Mamba, 4 for S4D, 8 ln κ for Mamba-2) and the Fig. A.3 N sweep, best of 7 seeds. Writes
``results/ch3_mqar_train_<preset>.json`` with the table ``runs``.
"""

from __future__ import annotations

import math
import sys
import time

import torch

from ..theory.mqar_constructions import gen_mqar
from ..train import evaluate, train
from .ch3_common import build_model, parse, save_runner_bundle


def configs(cfg):
    for kappa in cfg["kappas"]:
        for d in cfg["ds"]:
            for mixer, Ns in cfg["Ns"].items():
                Ns = (
                    {"2kappa": [2 * kappa], "8lnkappa": [round(8 * math.log(kappa))]}.get(Ns, Ns)
                    if isinstance(Ns, str)
                    else Ns
                )
                for N in Ns:
                    yield kappa, d, mixer, N
            for N in cfg.get("N_sweep", []):
                if d in (64, 256):
                    yield kappa, d, "s6", N


# The runs whose outputs are committed in results/ (``make reproduce`` repeats them).
COMMITTED_RUNS = [["--preset", "ci", "--device", "cpu"]]


def main(argv=None):
    args = parse(__doc__.splitlines()[0], "ch3.mqar_train", "ch3_mqar_train", argv)
    cfg = args.sizes
    T, V = cfg["T"], cfg["V"]
    rows, start = [], time.time()
    for kappa, d, mixer, N in dict.fromkeys(configs(cfg)):
        ev = gen_mqar(cfg["eval_sequences"], T, kappa, V, seed=1_000_000 + kappa)
        test = gen_mqar(cfg["test_sequences"], T, kappa, V, seed=2_000_000 + kappa)
        for seed in cfg["seeds"]:
            torch.manual_seed(seed)
            model = build_model(
                mixer,
                V=kappa + V,
                d=d,
                N=N,
                T=T,
                n_classes=V,
                backend=args.backend,
                use_conv=mixer != "mamba2",
                d_conv=4,
                activation="silu",
                use_gate=mixer == "s4d",
            )
            res = train(
                model,
                lambda s, seed=seed: gen_mqar(cfg["batch"], T, kappa, V, seed=10_000_000 * (seed + 1) + s),
                steps=cfg["steps"],
                lr=cfg["lr"],
                weight_decay=0.0,
                seed=seed,
                eval_every=100,
                eval_batch=ev,
                target_accuracy=1.0,
                device=args.device,
                progress=False,
            )
            acc = evaluate(model, *test, device=args.device)
            rows.append(
                dict(
                    kappa=kappa,
                    V=V,
                    T=T,
                    d=d,
                    N=N,
                    mixer=mixer,
                    seed=seed,
                    accuracy=acc,
                    steps=res.steps_run,
                    seconds=res.seconds,
                )
            )
            print(rows[-1], flush=True)
    save_runner_bundle(args, "ch3_mqar_train", {"n_runs": len(rows)}, cfg, start, {"runs": rows})


if __name__ == "__main__":
    main(sys.argv[1:])
