"""Trained Mamba vs Mamba-Δ⊤ on INDUCTION HEADS (paper 003, Fig. 3, Fig. A.4).

``python -m mamba_recall.experiments.ch3_induction --preset ci|paper [--device cpu|cuda]``.
1-layer models without gate (size-4 conv, SiLU): ``s6`` (Mamba, Δ per channel) and ``s6_dT`` (Mamba-Δ⊤,
Δ per state, Eq. 15), N = N_factor·|V|; data from :func:`~mamba_recall.tasks.induction_heads.induction_heads`
(hard-case probability p, range γ) on the fly; accuracy over all positions (blank class included) and over
non-blank positions. ``ci`` is a smoke test (|V| = 5, T = 32, one d); ``paper`` the Fig. 3/A.4 grid, best of 5.
Writes ``results/ch3_induction_<preset>.json`` with the table ``runs``.
"""

from __future__ import annotations

import sys
import time

import torch

from ..tasks.induction_heads import induction_heads
from ..train import train
from .ch3_common import build_model, parse, save_runner_bundle


@torch.no_grad()
def accuracies(model, ids, labels, V, device):
    model.eval()
    pred = torch.cat([model(ids[i : i + 256].to(device)).argmax(-1).cpu() for i in range(0, len(ids), 256)])
    ok = pred == labels
    nonblank = labels != V
    return float(ok.double().mean()), float(ok[nonblank].double().mean())


# The runs whose outputs are committed in results/ (``make reproduce`` repeats them).
COMMITTED_RUNS = [["--preset", "ci", "--device", "cpu"]]


def main(argv=None):
    args = parse(__doc__.splitlines()[0], "ch3.ih_train", "ch3_induction", argv)
    cfg = args.sizes
    T = cfg["T"]
    factors = cfg["N_factor"] if isinstance(cfg["N_factor"], list) else [cfg["N_factor"]]
    rows, start = [], time.time()
    for V in cfg["Vs"]:
        ev = induction_heads(cfg["eval_sequences"], T, V, cfg["p"], cfg["gamma"], seed=1_000_000 + V)
        test = induction_heads(cfg["test_sequences"], T, V, cfg["p"], cfg["gamma"], seed=2_000_000 + V)
        for fac in factors:
            for d in cfg["ds"]:
                for mixer in ("s6", "s6_dT"):
                    for seed in cfg["seeds"]:
                        torch.manual_seed(seed)
                        model = build_model(
                            mixer,
                            V=V,
                            d=d,
                            N=fac * V,
                            T=T,
                            n_classes=V + 1,
                            backend=args.backend,
                            use_conv=True,
                            d_conv=4,
                            activation="silu",
                        )
                        res = train(
                            model,
                            lambda s, seed=seed: induction_heads(
                                cfg["batch"], T, V, cfg["p"], cfg["gamma"], seed=10_000_000 * (seed + 1) + s
                            ),
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
                        acc, acc_nb = accuracies(model, *test, V, args.device)
                        rows.append(
                            dict(
                                V=V,
                                T=T,
                                d=d,
                                N=fac * V,
                                mixer=mixer,
                                seed=seed,
                                accuracy=acc,
                                accuracy_nonblank=acc_nb,
                                steps=res.steps_run,
                                seconds=res.seconds,
                            )
                        )
                        print(rows[-1], flush=True)
    save_runner_bundle(args, "ch3_induction", {"n_runs": len(rows)}, cfg, start, {"runs": rows})


if __name__ == "__main__":
    main(sys.argv[1:])
