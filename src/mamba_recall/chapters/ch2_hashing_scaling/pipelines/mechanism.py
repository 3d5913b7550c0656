"""Chapter 2's §3.2 mechanism runs (paper 002, Figs. 2–5): :func:`train_seeds` trains the ``ch2_mech`` linear Mamba
on several seeds (each seed sets the initialisation, the training stream and the loop's own seed), probes each as
:func:`~mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing.check_d1_to_d5` does, with the same model at
initialisation as its null control; :func:`~mamba_recall.chapters.ch2_hashing_scaling.claims.mechanism.check_mechanism` judges a claim over the seeds by the library's one way
of combining seeds (:func:`mamba_recall.claims.check_seeds`). No thresholds here: the rules are in ``claims``."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mamba_recall.chapters.ch2_hashing_scaling.pipelines import hashing as hs
from mamba_recall.chapters.ch2_hashing_scaling.training.ensemble import train_ensemble
from mamba_recall.models.linear_mamba import LinearMamba
from mamba_recall.tasks.mqar import batch_fn, mqar
from mamba_recall.train import evaluate

N_SEEDS = 3  # the book's minimum for a trained claim
PROBE_SEED = 4242  # the probe sequences every seed's model is read on (the same for all seeds: paired)
HELD_OUT_SEED = 10**6  # the held-out accuracy stream (the same for all seeds)


@dataclass
class MechRun:
    """One seed's trained model and its probes: ``d`` from ``check_d1_to_d5``, ``null`` = (probes, accuracy) of
    the same model at initialisation."""

    seed: int
    model: LinearMamba
    weights: dict
    acc: float
    steps: int
    seconds: float
    d: dict
    null: tuple


def probe_set(M: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The probe sequences (inputs, labels) every seed is read on."""
    return mqar(M["V"], M["Nf"], M["L"], M["n_probe"], PROBE_SEED)


def train_one(M: dict, seed: int, device="cpu") -> MechRun:
    """Train the ``ch2_mech`` model of sizes ``M`` from ``seed`` and probe it (and its initialisation)."""
    model = LinearMamba(M["V"], M["D"], M["N"], seed=seed, device=device)
    result = train_ensemble(
        model,
        batch_fn(M["V"], M["Nf"], M["L"], M["batch"], seed),
        steps=M["steps"],
        recipe=M["recipe"],
        overrides=dict(warmup=M["warmup"], hold=M["hold"]),
        seed=seed,
        device=device,
    )
    model = model.cpu().double()
    held_out = mqar(M["V"], M["Nf"], M["L"], M["n_eval"], HELD_OUT_SEED)
    acc = float(evaluate(model, *held_out, per_member=True)[0])
    w = model.member_weights(0)
    x, y = probe_set(M)
    d = hs.check_d1_to_d5(model, w, x, y, M["Nf"])
    null = hs.untrained_probes(M["V"], M["D"], M["N"], seed, x, y, M["Nf"], held_out)
    return MechRun(seed, model, w, acc, result.steps_run, result.seconds, d, null)


def train_seeds(M: dict, first_seed: int = 0, n_seeds: int = N_SEEDS, device="cpu") -> list[MechRun]:
    """:func:`train_one` on seeds ``first_seed, …, first_seed + n_seeds − 1``, one after the other."""
    return [train_one(M, first_seed + i, device) for i in range(n_seeds)]


def seed_lines(runs: list[MechRun]) -> str:
    """One printed line per seed: steps, seconds, held-out accuracy and the probes the claims read."""
    out = []
    for r in runs:
        d = r.d
        out.append(
            f"seed {r.seed}: {r.steps} steps in {r.seconds:.0f} s, held-out accuracy {r.acc:.4f}; "
            f"G_kq block {d['kq_block_share']:.3f}, G_vv half {d['vv_half_share']:.3f}; "
            f"kk {d['kk_share']:.3f}, vv {d['vv_share']:.3f}, diag keys {d['key_diag_hit']:.2f} "
            f"values {d['value_diag_hit']:.2f}; fact hit {d['d3_fact_hit']:.3f}, AUROC {d['d3_auroc']:.3f}; "
            f"attention peak {d['d4_hit']:.3f}; conv value copy {d['d5_value_copy']:.3f}, "
            f"key shift {d['d5_key_shift']:.3f}"
        )
    return "\n".join(out)
