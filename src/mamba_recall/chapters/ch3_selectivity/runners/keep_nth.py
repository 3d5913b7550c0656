"""Trained KEEP n-TH models (paper 003, Tab. 1, Tabs. A.1–A.4, Fig. 1).

``python -m mamba_recall.chapters.ch3_selectivity.runners.keep_nth --preset ci`` trains every
(T, d, N, model, seed) of ``presets ch3_keep_nth`` on on-the-fly data (a deviation from the paper's
fixed 10⁵-sample set, App. D.1), Adam (no weight decay), cosine lr, early stop at 100 % held-out
accuracy, and tests on fresh sequences, one run-store job per run at every preset (``results/runs/ch3_keep_nth/``,
resumable). It writes ``results/ch3_keep_nth_<preset>.json`` with the tables
``rows`` (one row per run) and ``decay`` (Fig. 1: 50-bin histograms of e^{−λΔ} of the S6/S4D models, counts in
``before`` (t < n) and ``after`` (t ≥ n); the extra row with ``bin = −1`` holds frac(< 0.1 | t < n) in ``before`` and
frac(> 0.9 | t ≥ n) in ``after``; one set per seed), and the checkpoint of every S6+PE model with d = 32, N = 8 in
``results/checkpoints/ch3_keep_nth_s6pe_<preset>_T<T>_seed<s>.pt``, named as every preset names them.

``--preset cpu-hours|paper --allow-long [--jobs N]`` runs the larger grids (below); a ``paper`` job trains on a GPU where the process that runs it has one (``training.selectivity.GPU_PRESETS``), and its
checkpoints are ``ch3_keep_nth_s6pe_paper_T<T>_seed<s>``, so a preset never overwrites another's files.

``python -m mamba_recall.chapters.ch3_selectivity.runners.keep_nth --preset cpu-hours --allow-long [--jobs 1]`` runs the ``cpu-hours``
grid (Tab. 1 at the paper's T = 50, d = 32, N = 8 with all five models; Fig. 1's T ∈ {10, …, 50} for Mamba+PE and
S4D+PE; 3 seeds) as run-store jobs (``results/runs/ch3_keep_nth/``, resumable, estimate printed first), saves every
Mamba+PE model as ``ch3_keep_nth_s6pe_cpu-hours_T<T>_seed<s>`` and aggregates ``results/ch3_keep_nth_cpu-hours.json``:
tables ``rows`` and ``decay`` as above, ``runs`` and ``cells`` (mean over seeds, 95 % t-interval, per-seed values) and ``curves``
(each run's training loss and held-out accuracy every 100 steps). ``--aggregate-only`` rewrites the bundle only.
The aggregation adds Fig. 1's baseline, computed there and not in the jobs (so job configs and keys stay as they
were): ``decay_untrained`` (the ``decay`` histograms of every S6/S4D run's model at initialisation: same kind, sizes
and init seed, same 500 test sequences, same pooling; :func:`~mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth.untrained_decay_rows`) and ``fig1`` (per run and
``weights`` ∈ {trained, untrained}: frac(e^{−λΔ} > 0.9 | t ≥ n), frac(< 0.1 | t < n) and the histogram mean of
e^{−λΔ} at t ≥ n; :func:`mamba_recall.chapters.ch3_selectivity.claims.fig1_stats`), at every preset.
"""

from __future__ import annotations

from dataclasses import replace


from mamba_recall.experiment import runner_main
from mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth import (
    decay_rows_of,
    initial_model,
    keep_test_set,
    resolved_config,
    untrained_decay_rows,
)
from mamba_recall.runstore import job_device, output_record, repo_relative
from mamba_recall.tasks.keep_nth import copy_baseline, keep_nth
from mamba_recall.train import evaluate
from mamba_recall.chapters.ch3_selectivity.training.selectivity import (
    CHECKPOINT_DIR,
    keep_checkpoint_name,
    regenerate_command,
    job_config,
    save_checkpoint,
    train_recipe,
)
from .common import curve_of, store_bundle_writer
from ..training.job_configs import KeepRun


def train_one(c: KeepRun, seed: int, *, steps: int | None = None, device: str = "cpu", backend: str = "auto"):
    """Train and test one KEEP n-TH model of resolved config ``c``
    (:func:`~mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth.resolved_config`) and init seed ``seed`` (``steps`` overrides the budget,
    for timing). Returns (model on the CPU, TrainResult, the ``runs`` row)."""
    T, V, nth = c.T, c.V, c.nth
    ev = keep_nth(c.eval_sequences, T, V, nth, seed=c.eval_seed)
    test = keep_test_set(c)
    model = initial_model(c, seed, backend)
    res = train_recipe(
        model,
        lambda n, data_seed: keep_nth(n, T, V, nth, seed=data_seed),
        c,
        seed,
        ev,
        steps=steps,
        device=device,
        desc=f"{c.model} T={T} d={c.d} N={c.N} s={seed}",
    )
    acc = evaluate(model, *test, device=device)
    row = dict(
        T=T,
        d=c.d,
        N=c.N,
        model=c.model,
        seed=seed,
        accuracy=acc,
        steps=res.steps_run,
        params=sum(p.numel() for p in model.parameters()),
        seconds=res.seconds,
        copy_baseline=copy_baseline(T, nth),
    )
    return model.cpu(), res, row, test


# ------------------------------------------------------------------------------------------ run store (cpu-hours)
EXPERIMENT = "ch3_keep_nth"
RUNNER = "mamba_recall.chapters.ch3_selectivity.runners.keep_nth:run_job"


def store_cells(sizes: dict) -> list[tuple[int, int, int, str]]:
    """(T, d, N, model) of a run-store preset: ``table`` (Tab. 1: every model at ``table_T``) and ``sweep`` (Fig. 1:
    ``sweep_models`` at every T of ``Ts``), each at every (d, N) of ``dN``; the Transformer once per T."""
    out = []
    for T in sizes["Ts"]:
        kinds = sizes["models"] if T == sizes.get("table_T") else sizes.get("sweep_models", sizes["models"])
        for i, (d, N) in enumerate(sizes["dN"]):
            out += [(T, d, N, k) for k in kinds if not (k == "transformer" and i)]
    return out


def jobs_for(preset: str, smoke: bool = False) -> list[dict]:
    from mamba_recall.presets import experiment
    from mamba_recall.runstore import make_job

    sizes = experiment(EXPERIMENT, preset, smoke=smoke)
    jobs = []
    for T, d, N, k in store_cells(sizes):
        config = job_config(replace(resolved_config(sizes, T, d, N, k), preset=preset), preset)
        jobs += [make_job(EXPERIMENT, config, s, output=_checkpoint_of(config, s)) for s in sizes["seeds"]]
    return jobs


def _saves_checkpoint(config: KeepRun) -> bool:
    """The job's model is the one whose checkpoint is kept: Mamba+PE at d = 32, N = 8."""
    return config.model == "s6+pe" and (config.d, config.N) == (32, 8)


def _checkpoint_of(config: KeepRun, seed: int) -> str | None:
    """The checkpoint the job writes, repository-relative (the job's ``output``: the run store runs a finished job
    again while it is missing, committed records naming none), or None."""
    if not _saves_checkpoint(config):
        return None
    name = keep_checkpoint_name(config.preset, config.T, seed)
    return repo_relative(CHECKPOINT_DIR / f"{name}.pt")


def run_job(config: KeepRun, seed: int) -> dict:
    """One run-store job: train, test, the decay histograms (S6/S4D), the training curve; the Mamba+PE model at
    d = 32, N = 8 is saved as ``ch3_keep_nth_s6pe_<preset>_T<T>_seed<s>``
    (:func:`~mamba_recall.chapters.ch3_selectivity.training.selectivity.keep_checkpoint_name`)."""
    device = job_device(config)
    model, res, row, test = train_one(config, seed, device=device)
    decay = decay_rows_of(model, test[0], config, seed) if config.model != "transformer" else []
    out = {"row": row, "decay": decay, "curve": curve_of(res, config.eval_every)}
    if _saves_checkpoint(config):
        meta = dict(
            V=config.V, d=32, N=8, T=config.T, nth=config.nth, kind="s6+pe", seed=seed,
            preset=config.preset, device=device,
        )  # fmt: skip
        name = keep_checkpoint_name(config.preset, config.T, seed)
        # checkpoint and sha256: a job whose checkpoint is gone or changed is run again (runs committed before name
        # none: for them the store checks the job's declared output, :func:`_checkpoint_of`)
        out.update(output_record(save_checkpoint(model, name, meta, regenerate_command(config.preset))))
    return out


def _extra_tables(runs: list[dict]) -> dict:
    """The bundle's tables beyond runs/cells/curves: ``decay`` (each job's own histograms) and ``decay_untrained``
    (Fig. 1's baseline, computed here at aggregation from each job's config and seed: no job and no key changes).
    No claim statistic: the Fig. 1 claims compute theirs from these two tables when they are checked
    (:func:`~mamba_recall.chapters.ch3_selectivity.claims.fig1_tables`)."""
    ordered = sorted(runs, key=lambda r: r["key"])
    decay = [d for r in ordered for d in r["result"]["decay"]]
    untrained = [
        u
        for r in ordered
        if r["result"]["decay"]
        for u in untrained_decay_rows(KeepRun.from_record(r["config"]), r["seed"])
    ]
    return {"decay": decay, "decay_untrained": untrained}


write_bundle = store_bundle_writer(
    "ch3_keep_nth",
    EXPERIMENT,
    jobs_for,
    by=["T", "d", "N", "model"],
    extra_tables=_extra_tables,
)


main = runner_main(EXPERIMENT, "ci")


if __name__ == "__main__":
    raise SystemExit(main())
