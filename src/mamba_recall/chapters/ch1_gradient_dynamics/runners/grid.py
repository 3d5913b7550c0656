r"""Chapter 1's run-store grid, one declared experiment per part (:mod:`..experiments`, named as its run-store
folder and bundle), each run by its name:

    python -m mamba_recall grid ch1_mechanism ch1_table1 ch1_full_mamba ch1_wo ch1_table1_matched ch1_full_onehot --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall grid ch1_full_mamba --preset cpu-hours --allow-long
    python -m mamba_recall grid ch1_checkpoints ch1_table1 ch1_table1_matched --preset ci
    python -m mamba_recall grid ch1_table1 --preset cpu-hours --aggregate-only

At ``--preset paper``, ``grid ch1_table1`` runs Table 1 (T ∈ {128, 256, 512} with d_model 64, every model trained to
its full step budget or 100 % held-out accuracy) and ``grid ch1_full_mamba ch1_full_onehot`` the full Mamba LM to
6,000 steps (``python -m mamba_recall plan --preset paper`` lists them), on the CPU like ``cpu-hours``. The simplified
models and W_o have no paper grid: their cpu-hours entries are the paper's settings. The runner ``ch1_checkpoints``
(:mod:`.checkpoints`, named as its experiment) is the grid of ``ch1_checkpoints``; the grid's ``--only k1`` retrains some of its
models.

What it runs (sizes in ``chapters/ch1_gradient_dynamics/configs.py``, entries ``cpu-hours``), one run-store job per (config, seed), so the
same command resumes after an interruption:

* ``ch1_mechanism``: the simplified Mamba (Eq. 3) at |V| = 8, n_ε = 3, T = 256 with identity targets (§3,
  App. A), trained "until it reaches 100 % accuracy on the training set" (or the step cap) by
  :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.train_recall` — |K| = 1 (N = 1, B = C = 1), |K| = 2 (N = 2) and |K| = 4
  (|V| = 16, N = 4), 3 seeds each. Each job saves its checkpoint ``results/checkpoints/ch1_<model>_cpu-hours_seed<s>.pt`` and measures,
  on ``n_probe`` held-out sequences (seed 1000 + s), every claim of Section 1.2 (|K| = 1: Sec3-accuracy, Fig4a–d,
  Sec3-Delta, Sec3-regimes, AppC-values, Sec3-recency, Fig8) or Fig5 / Fig6 (|K| = 2 / 4) with the registry's own
  measurement functions (``chapters/ch1_gradient_dynamics/claims/``), stored per seed (:func:`~mamba_recall.claims.core.measurement_record`).
* the |K| = 1 jobs also run **our causal probe** (not a claim of the paper): the forgetting factor
  exp(Λ ⊙ Δ_t) set to 1 at every noise pair (x_{t−1}, x_t) = (v₁, v₂), everything else unchanged, and the
  recall of the latest value measured before and after
  (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.pipelines.forgetting_probe.noise_forgetting_probe`).
* ``ch1_table1``: Table 1 (App. A) at T = 128, κ ∈ {1, 4}, the four rows of the paper and our control
  ``tf1_pair`` (a 1-layer Transformer fed the Mamba's fixed pairwise concatenation), 3 seeds, early stopping on the
  training set (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_cell`).
* ``ch1_full_mamba`` (part ``full_mamba``): App. B, Fig. 7 with "the original Mamba model": the library's
  full Mamba LM (:class:`~mamba_recall.models.mamba.MambaLMHeadModel`, one layer: learned embedding tied to the
  readout, causal conv, gate, selective scan; sizes ``ch1_full_mamba``) on the |K| = 1 task of ``ch1_k1`` (the same
  training and held-out sets per seed), 3 seeds, trained as ``ch1_k1``. Each job saves its checkpoint
  ``results/checkpoints/ch1_full_mamba_cpu-hours_seed<s>.pt`` and measures claim 000/Fig7-full: the readout in the
  paper's (previous token, current token) coordinates, W_o^full = [R U_1 | R U_0] (|V| × 2|V|,
  :func:`~mamba_recall.chapters.ch1_gradient_dynamics.pipelines.full_mamba_readout.pair_readout`), against [−I I] by the centred cosine, at the end
  and (baseline) at initialisation, and the held-out query accuracy; the matrix itself is stored (Fig. 7's plot).

* ``ch1_table1_matched`` (part ``table1_matched``): Table 1's row 3 (1-layer Transformer with convolution,
  no PE) size-matched to the Mamba (d_model 8: about 1,200 parameters against the Mamba's 1,056-1,408), conv widths 2
  and 4, T = 128, κ ∈ {1, 4}, 3 seeds, trained as the Table 1 cells; bundle ``results/ch1_table1_matched_cpu-hours.json``.
* ``ch1_full_onehot`` (part ``full_onehot``): App. B, Fig. 7 where the paper's sentence has a matrix to
  compare: the same full Mamba LM over the fixed doubled one-hot embedding of §2.2 (E[v] = [e_v; e_v], d_model = 2|V|,
  frozen) with an untied, learned output layer (sizes ``ch1_full_onehot``), trained a fixed 2000 steps past 100 %
  training accuracy, 3 seeds; measured as ``full_mamba`` (claim 000/Fig7-full); bundle
  ``results/ch1_full_onehot_cpu-hours.json``.
* ``ch1_wo`` (part ``wo``): App. B, Fig. 7 on the simplified model with a learned unembedding W_o
  (``ch1_wo``: |V| = 8, T = 256, the paper's sizes), 5 seeds × identity and masked targets; each job saves
  ``results/checkpoints/ch1_wo_<target>_cpu-hours_seed<s>.pt`` and measures claim 000/Fig7 with its null (the same
  seed's W_o at initialisation); bundle ``results/ch1_wo_cpu-hours.json``.

Bundles (mean and 95 % Student-t interval over seeds, :data:`~mamba_recall.runstore.INTERVAL_METHOD`):
``results/ch1_mechanism_cpu-hours.json`` (per-model accuracies, per-claim per-seed measurements and their means and
intervals, the causal probe) and ``results/ch1_table1_cpu-hours.json`` (per cell the mean accuracy with its interval;
every run), and ``results/ch1_full_mamba_cpu-hours.json`` (accuracies, the 000/Fig7-full records per seed with their
mean and interval, the readout matrices). The notebooks of Chapter 1 judge the claims over the seeds from them
(:func:`~mamba_recall.claims.core.check_stored`) and fall back to the ``ci`` evidence when they are not committed.

The grid's parts: :mod:`~mamba_recall.chapters.ch1_gradient_dynamics.runners.grid_jobs` (the grid, :func:`jobs_for`, and the job
functions, :func:`run_job` among them), :mod:`~mamba_recall.chapters.ch1_gradient_dynamics.runners.grid_bundles` (:func:`write_bundles`)
and this module (the time estimate, :func:`estimate`); every name is importable from here.
"""

from __future__ import annotations

import math
import time

import torch

from mamba_recall.runners import runner_command
from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import FULL_NAME, build_full_model
from .grid_bundles import write_bundles  # noqa: F401  (importable from the runner)
from .grid_jobs import (  # noqa: F401  (the grid and its job functions, importable from the runner)
    CHECKPOINT_DIR,
    CHECKPOINT_MODELS,
    CHECKPOINTS_EXPERIMENT,
    DEFAULT_PARTS,
    FULL_EXPERIMENT,
    FULL_PARTS,
    MATCHED_EXPERIMENT,
    MODELS,
    MODELS_EXPERIMENT,
    ONEHOT_EXPERIMENT,
    PARTS,
    PROBE_METRICS,
    RUNNER,
    SMOKE_CHECKPOINT_DIR,
    TABLE_EXPERIMENT,
    WO_CLAIM,
    WO_EXPERIMENT,
    check_parts,
    grid_command,
    seed_experiment,
    checkpoint_path,
    jobs_for,
    load_seed_checkpoint,
    run_checkpoint_job,
    run_full_job,
    run_job,
    run_model_job,
    run_wo_job,
)


# ---------------------------------------------------------------------------------------------- estimate
def _time_steps(model, inputs, labels, lr: float, steps: int = 4) -> float:
    """Seconds per AdamW step (one thread), measured after one warm-up step."""
    from mamba_recall.train import Recipe, train

    recipe = Recipe(lr=lr, weight_decay=0.0, schedule="constant")
    train(model, lambda s: (inputs, labels), steps=1, recipe=recipe, progress=False)
    res = train(model, lambda s: (inputs, labels), steps=steps, recipe=recipe, progress=False)
    return res.seconds / steps


def _time_eval(model, inputs, labels) -> float:
    from mamba_recall.train import evaluate

    t0 = time.perf_counter()
    evaluate(model, inputs, labels)
    return time.perf_counter() - t0


def measure_job(config: dict) -> tuple[float, float]:
    """(seconds per training step, seconds per training-set evaluation) of a job's model, measured here."""
    from mamba_recall.tasks.latest_value import latest_value_batch
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import build_model
    from mamba_recall.chapters.ch1_gradient_dynamics.training.table1 import build

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        s = config["sizes"]
        if config["kind"] in ("checkpoint", "model", "wo"):
            V, K, T, lr = s["vocab_size"], s["num_keys"], s["seq_len"], s["lr"]
            model = build_model(s, 0)
        elif config["kind"] == FULL_NAME:
            V, K, T, lr = s["vocab_size"], s["num_keys"], s["seq_len"], s["lr"]
            model = build_full_model(s, 0)
        else:
            V, K, T = s["vocab_size"], config["kappa"], config["T"]
            lr = s["mamba_lr"] if config["model"] == "mamba" else s["tf_lr"]
            model = build(config["model"], V, K, T, s, 0)
        n_eval = min(256, s["train_size"])
        data = latest_value_batch(max(s["batch_size"], n_eval), V, K, T, s["max_noise"], seed=0, target=s["target"])
        step = _time_steps(model, data.inputs[: s["batch_size"]], data.labels[: s["batch_size"]], lr)
        ev = _time_eval(model, data.inputs[:n_eval], data.query_labels[:n_eval]) * s["train_size"] / n_eval
        return step, ev
    finally:
        torch.set_num_threads(threads)


def _timing_key(config: dict) -> tuple:
    return (config["kind"], config["model"], config.get("kappa"), config.get("T"))


def estimate(left: list[dict]) -> tuple[float, str]:
    """Upper bound (every job at its step cap, no early stop) for the jobs left, from step and evaluation times
    measured here on one thread for each distinct model; printed per model."""
    timings = {}
    total = 0.0
    for job in left:
        c = job["config"]
        key = _timing_key(c)
        if key not in timings:
            timings[key] = measure_job(c)
        step, ev = timings[key]
        s = c["sizes"]
        total += s["steps"] * step + math.ceil(s["steps"] / s["eval_every"]) * ev + ev  # + the final evaluations
    lines = ", ".join(
        f"{k[1]}{'' if k[2] is None else f' κ={k[2]}'}: {1e3 * st:.0f} ms/step, eval {ev:.2f} s"
        for k, (st, ev) in timings.items()
    )
    basis = f"measured here, 1 thread, every job at its step cap (early stopping makes it shorter): {lines}"
    print(f"step times: {basis}", flush=True)
    return total, basis


if __name__ == "__main__":
    raise SystemExit(
        "error: this module holds Chapter 1's run-store grid; run its experiments by name: python -m mamba_recall grid "
        f"{' '.join(PARTS.values())} --preset P (or {runner_command('ch1_checkpoints')} --only <model>)."
    )
