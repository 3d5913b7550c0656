r"""Chapter 2 runner, multi-head part: the head patterns MQA / MKA / MVA / MHA of paper 002 (Fig. 8, 13–15, Thm 5).

    python -m mamba_recall grid ch2_multihead --preset ci [--jobs 2]
    python -m mamba_recall grid ch2_multihead --preset paper --allow-long   (a GPU)
    python -m mamba_recall grid ch2_fig8 ch2_thm5 --preset cpu-hours --allow-long [--jobs 2]

The experiment ``ch2_multihead`` (:mod:`..experiments`), run-store jobs at ``ci`` and ``paper`` (resumable;
``--jobs``, ``--allow-long``, ``--aggregate-only``, ``--smoke``, ``--store``): one job per (pattern, M) ensemble below
(:mod:`.ensembles`; at ``paper`` on a GPU where the process running the job has one), and the bundle
``results/ch2_multihead_<preset>.json`` with tables

* ``grid``  — per (pattern, M, N): trained accuracy (max over seeds, best over evaluations), the Eq. 77
  prediction with the Thm 5 effective state (N' = M N for MHA, N otherwise) and N';
* ``noise`` — Fig. 15: statistics of the output logits at query positions of every trained model: the correct
  entry, the *wrong* entries (values of the other facts in the context) and the *empty* entries (values absent
  from the context); raw variances and variances relative to the squared margin (mean correct − mean empty);
* ``hist``  — Fig. 14: histograms of the normalised logits ``(y − mean_empty) / (mean_correct − mean_empty)``.

All models of one (pattern, M) train together as one :class:`MultiHeadLinearMamba` ensemble with the authors' N–M
recipe (AdamW lr 1e-2, β = (0.9, 0.95), wd 0, warmup → hold → cosine, clip 5, label smoothing 0.1). Its members
(every N, ``seeds`` adjacent members each) share one initialisation draw (seed 1000 · pattern index + 10 · M index,
then tensors of shape (n_members, …): a "seed" is a member's slice of it, not a seed of its own [ours]), one data
stream (training seed 0, held-out set ``EVAL_SEED``) and one joint early stop (every member at 0.999), so a member's
numbers depend on its ensemble and one (pattern, M) is one run-store job, never one per (N, seed) (see
:mod:`.scaling`). At ``ci`` and ``paper`` this grid is Fig. 8's one route (``ch2_fig8`` refuses those presets).

Fig. 8 and Thm 5 with one model per job and seed (3 seeds, preset ``cpu-hours``) are the declared experiments
``ch2_fig8`` and ``ch2_thm5`` (:mod:`.figure_grids`), run only by their names. This runner's ``main`` is the grid of
``ch2_multihead`` under its name (:func:`.ensembles.command`); given ``--only fig8`` (or ``--parts fig8``) or
``--preset cpu-hours`` it stops naming those grid commands.
"""

from __future__ import annotations

import time

import pandas as pd
import torch

from mamba_recall.presets import seeds
from mamba_recall.results import command_provenance
from mamba_recall.tasks.mqar import mqar
from mamba_recall.theory.capacity import multihead_prediction
from ..pipelines.heads import NOISE_SEED, logit_noise
from ..training.heads import train_heads

EVAL_SEED = seeds.MQAR_EVAL  # held-out stream, disjoint from the training stream (base 0 + step)
HIST_EDGES = [round(-1.0 + 0.1 * i, 2) for i in range(31)]  # normalised logit in [-1, 2]

# The runs whose outputs are committed in results/ (``make reproduce`` repeats them).


def ensemble_units(sizes: dict) -> list[dict]:
    """The run-store units: one per (head pattern, M) ensemble, in the preset's order."""
    return [{"pattern": pattern, "M": M} for pattern in sizes["patterns"] for M in sizes["Ms"]]


def unit_name(config: dict) -> str:
    return f"{config['pattern']} M={config['M']}"


def run_unit(cfg: dict, unit: dict, device, log) -> dict[str, pd.DataFrame]:
    """One (pattern, M) ensemble (a run-store job of :mod:`.ensembles`): every N and seed of the preset trained as one
    :class:`MultiHeadLinearMamba` (init seed 1000 · pattern index + 10 · M index), its rows of ``grid``, ``noise``
    and ``hist``."""
    V, Nf, L, D = cfg["V"], cfg["Nf"], cfg["L"], cfg["D"]
    pattern, M = unit["pattern"], unit["M"]
    pi, mi = cfg["patterns"].index(pattern), cfg["Ms"].index(M)
    ev = mqar(V, Nf, L, cfg["n_eval"], EVAL_SEED)
    xn, yn = mqar(V, Nf, L, cfg["n_noise"], NOISE_SEED)
    grid, noise, hist = [], [], []
    edges = torch.tensor(HIST_EDGES)
    t0 = time.perf_counter()
    states = [n for n in cfg["Ns"] for _ in range(cfg["seeds"])]
    model, r = train_heads(cfg, pattern, M, states, ev, init_seed=1000 * pi + 10 * mi, device=device)
    stats = logit_noise(model, xn, yn, V, Nf)
    for i, N in enumerate(cfg["Ns"]):
        sl = slice(i * cfg["seeds"], (i + 1) * cfg["seeds"])
        accs = r.best_accuracy[sl]
        best = max(range(sl.start, sl.stop), key=lambda j: r.best_accuracy[j])
        pred = multihead_prediction(V, Nf, D, N, M, pattern)
        grid.append(
            dict(
                pattern=pattern,
                M=M,
                N=N,
                D=D,
                V=V,
                Nf=Nf,
                L=L,
                acc=max(accs),
                acc_mean=sum(accs) / len(accs),
                N_eff=pred["N_eff"],
                eq77=pred["p_eq77"],
                steps_run=r.steps_run,
            )
        )
        st = stats[best]
        noise.append(dict(pattern=pattern, M=M, N=N, acc=max(accs), **{k: v for k, v in st.items() if k != "norm"}))
        for kind, vals in st["norm"].items():
            counts = torch.histogram(vals.clamp(HIST_EDGES[0], HIST_EDGES[-1]), bins=edges)[0]
            frac = (counts / max(1, vals.numel())).tolist()
            for b, f in enumerate(frac):
                hist.append(
                    dict(pattern=pattern, M=M, N=N, entry=kind, bin=round(HIST_EDGES[b] + 0.05, 2), frac=round(f, 5))
                )
    log(
        f"{pattern} M={M}: {len(states)} members, {r.steps_run} steps, {time.perf_counter() - t0:.0f} s, "
        f"acc " + " ".join(f"{a:.2f}" for a in r.best_accuracy)
    )
    return dict(grid=pd.DataFrame(grid), noise=pd.DataFrame(noise), hist=pd.DataFrame(hist))


def bundle_data(runs: list[dict]) -> dict:
    """The bundle's ``seconds`` (the ensembles' sum), ``unit_seconds`` (per ensemble) and ``hist_edges``."""
    return {
        "seconds": round(sum(r["result"]["seconds"] for r in runs), 1),
        "unit_seconds": {unit_name(r["config"]): r["result"]["seconds"] for r in runs},
        "hist_edges": HIST_EDGES,
    }


def recorded_seconds(bundle) -> dict[str, float]:
    """Per ensemble: the seconds the bundle records for it, or (an older bundle) its total shared out evenly."""
    if "unit_seconds" in bundle.data:
        return dict(bundle.data["unit_seconds"])
    units = ensemble_units(bundle.config)
    return {unit_name(u): float(bundle.data.get("seconds", 0.0)) / max(1, len(units)) for u in units}


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None) -> int:
    """``python -m mamba_recall grid ch2_multihead --preset P`` under this runner's command (:func:`.ensembles.command`;
    ``--only fig8`` / ``thm5`` or ``--preset cpu-hours`` stops naming the grid commands of those experiments)."""
    from . import ensembles

    return ensembles.command("ch2_multihead", argv)


if __name__ == "__main__":
    raise SystemExit(main())
