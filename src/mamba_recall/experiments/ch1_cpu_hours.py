r"""Chapter 1 at the paper's settings with 3 seeds (preset ``cpu-hours``), through the run store.

    python -m mamba_recall.experiments.ch1_cpu_hours --preset cpu-hours --allow-long [--jobs 2]
    python -m mamba_recall.experiments.ch1_cpu_hours --preset cpu-hours --aggregate-only
    python -m mamba_recall.experiments.ch1_cpu_hours --preset cpu-hours --parts full_mamba --allow-long

``--parts`` (default: all) picks the parts below: ``models``, ``table1``, ``full_mamba``, ``wo``,
``table1_matched``, ``full_onehot``.

What it runs (sizes in ``presets/ch1.py``, entries ``cpu-hours``), one run-store job per (config, seed), so the
same command resumes after an interruption:

* ``ch1.cpu_hours_models``: the simplified Mamba (Eq. 3) at |V| = 8, n_ε = 3, T = 256 with identity targets (§3,
  App. A), trained "until it reaches 100 % accuracy on the training set" (or the step cap) by
  :func:`~mamba_recall.train.latest_value.train_recall` — |K| = 1 (N = 1, B = C = 1), |K| = 2 (N = 2) and |K| = 4
  (|V| = 16, N = 4), 3 seeds each. Each job saves its checkpoint ``results/checkpoints/ch1_<model>_cpu-hours_seed<s>.pt`` and measures,
  on ``n_probe`` held-out sequences (seed 1000 + s), every claim of Section 1.2 (|K| = 1: Sec3-accuracy, Fig4a–d,
  Sec3-Delta, Sec3-regimes, AppC-values, Sec3-recency, Fig8) or Fig5 / Fig6 (|K| = 2 / 4) with the registry's own
  measurement functions (``claims/ch1/``), stored per seed (:func:`~mamba_recall.claims.core.measurement_record`).
* the |K| = 1 jobs also run **our causal probe** (not a claim of the paper): the forgetting factor
  exp(Λ ⊙ Δ_t) set to 1 at every noise pair (x_{t−1}, x_t) = (v₁, v₂), everything else unchanged, and the
  recall of the latest value measured before and after
  (:func:`~mamba_recall.analysis.forgetting_probe.noise_forgetting_probe`).
* ``ch1.cpu_hours_table1``: Table 1 (App. A) at T = 128, κ ∈ {1, 4}, the four rows of the paper and our control
  ``tf1_pair`` (a 1-layer Transformer fed the Mamba's fixed pairwise concatenation), 3 seeds, early stopping on the
  training set (:func:`~mamba_recall.train.table1.run_cell`).
* ``ch1.cpu_hours_full_mamba`` (part ``full_mamba``): App. B, Fig. 7 with "the original Mamba model": the library's
  full Mamba LM (:class:`~mamba_recall.models.mamba.MambaLMHeadModel`, one layer: learned embedding tied to the
  readout, causal conv, gate, selective scan; sizes ``ch1.full_mamba``) on the |K| = 1 task of ``ch1.k1`` (the same
  training and held-out sets per seed), 3 seeds, trained as ``ch1.k1``. Each job saves its checkpoint
  ``results/checkpoints/ch1_full_mamba_cpu-hours_seed<s>.pt`` and measures claim 000/Fig7-full: the readout in the
  paper's (previous token, current token) coordinates, W_o^full = [R U_1 | R U_0] (|V| × 2|V|,
  :func:`~mamba_recall.analysis.full_mamba_readout.pair_readout`), against [−I I] by the centred cosine, at the end
  and (baseline) at initialisation, and the held-out query accuracy; the matrix itself is stored (Fig. 7's plot).

* ``ch1.cpu_hours_table1_matched`` (part ``table1_matched``): Table 1's row 3 (1-layer Transformer with convolution,
  no PE) size-matched to the Mamba (d_model 8: about 1,200 parameters against the Mamba's 1,056-1,408), conv widths 2
  and 4, T = 128, κ ∈ {1, 4}, 3 seeds, trained as the Table 1 cells; bundle ``results/ch1_table1_matched_cpu-hours.json``.
* ``ch1.cpu_hours_full_onehot`` (part ``full_onehot``): App. B, Fig. 7 where the paper's sentence has a matrix to
  compare: the same full Mamba LM over the fixed doubled one-hot embedding of §2.2 (E[v] = [e_v; e_v], d_model = 2|V|,
  frozen) with an untied, learned output layer (sizes ``ch1.full_onehot``), trained a fixed 2000 steps past 100 %
  training accuracy, 3 seeds; measured as ``full_mamba`` (claim 000/Fig7-full); bundle
  ``results/ch1_full_onehot_cpu-hours.json``.
* ``ch1.cpu_hours_wo`` (part ``wo``): App. B, Fig. 7 on the simplified model with a learned unembedding W_o
  (``ch1.wo``: |V| = 8, T = 256, the paper's sizes), 5 seeds × identity and masked targets; each job saves
  ``results/checkpoints/ch1_wo_<target>_cpu-hours_seed<s>.pt`` and measures claim 000/Fig7 with its null (the same
  seed's W_o at initialisation); bundle ``results/ch1_wo_cpu-hours.json``.

Bundles (mean and 95 % Student-t interval over seeds, :data:`~mamba_recall.runstore.INTERVAL_METHOD`):
``results/ch1_mechanism_cpu-hours.json`` (per-model accuracies, per-claim per-seed measurements and their means and
intervals, the causal probe) and ``results/ch1_table1_cpu-hours.json`` (per cell the mean accuracy with its interval;
every run), and ``results/ch1_full_mamba_cpu-hours.json`` (accuracies, the 000/Fig7-full records per seed with their
mean and interval, the readout matrices). The notebooks of Chapter 1 judge the claims over the seeds from them
(:func:`~mamba_recall.claims.core.check_stored`) and fall back to the ``ci`` evidence when they are not committed.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import pandas as pd
import torch

from ..analysis.forgetting_probe import noise_forgetting_probe
from ..claims import ch1
from ..claims.ch1.seeds import FULL_CLAIM, measure_model
from ..paths import BUILD_DIR, REPO_ROOT, RESULTS_DIR
from ..presets import experiment
from ..results import command_provenance
from ..runstore import add_grid_args, aggregate, finished_status, grid_main, make_job, save_grid_bundle
from ..train.latest_value import FULL_NAME, ONEHOT_NAME, build_full_model, held_out_accuracy

MODELS_EXPERIMENT = "ch1.cpu_hours_models"
TABLE_EXPERIMENT = "ch1.cpu_hours_table1"
FULL_EXPERIMENT = "ch1.cpu_hours_full_mamba"
WO_EXPERIMENT = "ch1.cpu_hours_wo"
MATCHED_EXPERIMENT = "ch1.cpu_hours_table1_matched"
ONEHOT_EXPERIMENT = "ch1.cpu_hours_full_onehot"
#: the runner's parts (``--parts``): name → run-store experiment
PARTS = {
    "models": MODELS_EXPERIMENT,
    "table1": TABLE_EXPERIMENT,
    "full_mamba": FULL_EXPERIMENT,
    "wo": WO_EXPERIMENT,
    "table1_matched": MATCHED_EXPERIMENT,
    "full_onehot": ONEHOT_EXPERIMENT,
}
WO_CLAIM = "000/Fig7"
#: the full-Mamba parts: part (= checkpoint name, job "model") → its sizes' experiment
FULL_PARTS = {FULL_NAME: "ch1.full_mamba", ONEHOT_NAME: "ch1.full_onehot"}
RUNNER = "mamba_recall.experiments.ch1_cpu_hours:run_job"
MODELS = ("k1", "k2", "k4")
PROBE_METRICS = (
    "probe_accuracy_before",
    "probe_accuracy_after",
    "probe_margin_positive_before",
    "probe_margin_positive_after",
    "probe_accuracy_no_write_erase",
)
CHECKPOINT_DIR = RESULTS_DIR / "checkpoints"
SMOKE_CHECKPOINT_DIR = BUILD_DIR / "smoke" / "checkpoints"  # a smoke run never writes into results/


def _sizes(name: str, preset: str, smoke: bool) -> dict:
    sizes = experiment(name, preset, smoke=smoke)
    if "seeds" not in sizes:
        raise ValueError(f"{name} at preset {preset!r} has no 'seeds': this runner runs the cpu-hours preset.")
    return sizes


def _check_parts(parts) -> tuple[str, ...]:
    parts = tuple(PARTS) if parts is None else tuple(parts)
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise ValueError(f"parts={list(parts)}: name one or more of {list(PARTS)} (or None for all).")
    return parts


def jobs_for(preset: str = "cpu-hours", smoke: bool = False, parts=None) -> list[dict]:
    """Every job of the preset's ``parts`` (default all, :data:`PARTS`): the models (k1, k2, k4 × seeds), then the
    Table 1 cells (T × κ × model × seeds), then the full Mamba LM (× seeds). A part's jobs do not depend on which
    other parts are picked (the run store's keys are the same)."""
    parts = _check_parts(parts)
    jobs = []
    if "models" in parts:
        for name in MODELS:
            sizes = _sizes(f"ch1.{name}", preset, smoke)
            config = {"kind": "model", "model": name, "preset": preset, "smoke": smoke, "sizes": sizes}
            jobs += [make_job(MODELS_EXPERIMENT, config, s) for s in range(sizes["seeds"])]
    if "table1" in parts:
        jobs += _table_jobs(preset, smoke)
    if "full_mamba" in parts:
        sizes = _sizes("ch1.full_mamba", preset, smoke)
        config = {"kind": FULL_NAME, "model": FULL_NAME, "preset": preset, "smoke": smoke, "sizes": sizes}
        jobs += [make_job(FULL_EXPERIMENT, config, s) for s in range(sizes["seeds"])]
    if "full_onehot" in parts:
        sizes = _sizes("ch1.full_onehot", preset, smoke)
        config = {"kind": FULL_NAME, "model": ONEHOT_NAME, "preset": preset, "smoke": smoke, "sizes": sizes}
        jobs += [make_job(ONEHOT_EXPERIMENT, config, s) for s in range(sizes["seeds"])]
    if "table1_matched" in parts:
        base = _sizes("ch1.table1_matched", preset, smoke)
        for width in base["conv_widths"]:
            sizes = {**{k: v for k, v in base.items() if k != "conv_widths"}, "conv_width": width}
            jobs += _table_jobs(preset, smoke, sizes, MATCHED_EXPERIMENT)
    if "wo" in parts:
        base = _sizes("ch1.wo", preset, smoke)
        for target in base["targets"]:
            sizes = {**{k: v for k, v in base.items() if k != "targets"}, "target": target}
            config = {"kind": "wo", "model": f"wo_{target}", "preset": preset, "smoke": smoke, "sizes": sizes}
            jobs += [make_job(WO_EXPERIMENT, config, s) for s in range(sizes["seeds"])]
    return jobs


def _table_jobs(preset: str, smoke: bool, table: dict | None = None, experiment_name: str = TABLE_EXPERIMENT):
    jobs = []
    table = table or _sizes("ch1.table1", preset, smoke)
    for T in table["seq_lens"]:
        for kappa in table["num_keys"]:
            for model in table["models"]:
                config = {
                    "kind": "table1",
                    "model": model,
                    "T": T,
                    "kappa": kappa,
                    "preset": preset,
                    "smoke": smoke,
                    "sizes": table,
                }
                jobs += [make_job(experiment_name, config, s) for s in range(table["seeds"])]
    return jobs


# ---------------------------------------------------------------------------------------------- jobs
def checkpoint_path(name: str, preset: str, seed: int, smoke: bool = False) -> Path:
    """``results/checkpoints/ch1_<name>_<preset>_seed<s>.pt`` (a smoke run: under ``_build/smoke/checkpoints``)."""
    from ..results import checkpoint_file

    folder = SMOKE_CHECKPOINT_DIR if smoke else CHECKPOINT_DIR
    return checkpoint_file("ch1", name, f"{preset}{'_smoke' if smoke else ''}_seed{seed}", folder)


def _relative(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT.resolve()))
    except ValueError:
        return str(path)


def load_seed_checkpoint(name: str, preset: str, seed: int, smoke: bool = False):
    """``(model, sidecar)`` of one seed's checkpoint (its sha256 checked)."""
    from ..results import read_checkpoint
    from ..train.latest_value import build_model

    path = checkpoint_path(name, preset, seed, smoke)
    state, meta = read_checkpoint(
        path, regenerate=f"python -m mamba_recall.experiments.ch1_cpu_hours --preset {preset} --allow-long"
    )
    model = build_full_model(meta["config"], seed) if name in FULL_PARTS else build_model(meta["config"], seed)
    model.load_state_dict(state)
    return model.eval(), meta


def _train_and_save(config: dict, seed: int, command: str, **train_kw):
    """Train the job's model (:func:`~mamba_recall.train.latest_value.train_recall`, ``train_kw`` passed on), save
    its checkpoint with its sidecar ``meta`` (what the claims' measurements read) and ``command`` as its regenerate
    line → (the training's result, ``meta``, the job result's common fields: accuracies, training length, checkpoint
    and its sha256)."""
    import hashlib

    from ..results import save_checkpoint
    from ..train.latest_value import train_recall

    name, preset, smoke, sizes = config["model"], config["preset"], config["smoke"], config["sizes"]
    tr = train_recall(sizes, seed=seed, device="cpu", **train_kw)
    path = checkpoint_path(name, preset, seed, smoke)
    meta = {
        "name": name,
        "preset": preset,
        "seed": seed,
        "config": sizes,
        "device": "cpu",
        "test_query_accuracy": tr.test_accuracy,
        "train_query_accuracy": tr.train_accuracy,
        "steps_run": tr.result.steps_run,
        "stopped_early": tr.result.stopped_early,
        "checkpoint": _relative(path),
    }
    state = {k: v.detach().cpu() for k, v in tr.model.state_dict().items()}
    path = save_checkpoint(path, state, meta, command=command, device="cpu", wall_seconds=tr.result.seconds)
    meta["checkpoint"] = _relative(path)
    result = {
        "test_accuracy": tr.test_accuracy,
        "train_accuracy": tr.train_accuracy,
        "steps_run": tr.result.steps_run,
        "stopped_early": tr.result.stopped_early,
        "train_seconds": tr.result.seconds,
        "checkpoint": meta["checkpoint"],
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }
    return tr, meta, result


def run_model_job(config: dict, seed: int) -> dict:
    """Train one model of ``config["model"]`` (k1, k2, k4) at one seed, save its checkpoint, measure its claims."""
    from ..tasks.latest_value import latest_value_batch

    name, preset, smoke, sizes = config["model"], config["preset"], config["smoke"], config["sizes"]
    command = f"python -m mamba_recall.experiments.ch1_cpu_hours --preset {preset} --allow-long"
    tr, meta, result = _train_and_save(config, seed, command)
    result["measurements"] = measure_model(name, tr.model, meta, sizes, tr.test_set, tr.test_accuracy, seed, smoke)
    if name == "k1":
        held = latest_value_batch(
            sizes["n_probe"], sizes["vocab_size"], 1, sizes["seq_len"], sizes["max_noise"], seed=1000 + seed
        )
        result.update(noise_forgetting_probe(tr.model, held))
    return result


def run_table_job(config: dict, seed: int) -> dict:
    """One Table 1 cell (model, T, κ) at one seed (:func:`~mamba_recall.train.table1.run_cell`)."""
    from ..train.table1 import run_cell

    return run_cell(config["model"], config["T"], config["kappa"], config["sizes"], seed=seed, device="cpu")


def run_full_job(config: dict, seed: int) -> dict:
    r"""App. B, Fig. 7 on the full Mamba LM, one seed: train it on the ``ch1.k1`` task as
    :func:`~mamba_recall.train.latest_value.train_recall` trains the simplified model (the same training / held-out sets of this seed, AdamW without weight
    decay, constant lr, until 100 % training-set query accuracy or ``steps``), save its checkpoint, and measure
    claim 000/Fig7-full: the readout W_o^full = [R U_1 | R U_0] ∈ R^{|V| × 2|V|} in the paper's (previous token,
    current token) coordinates (:mod:`~mamba_recall.analysis.full_mamba_readout`) against [−I I], at the end and at
    initialisation (the same seed's untrained model). Returns the accuracies, the training length, the claim's record
    and both matrices (``readout``, ``readout_init``: |V| lists of 2|V| floats)."""
    import copy

    from ..analysis.full_mamba_readout import pair_readout
    from ..claims import NotRun, get, measurement_record

    preset, smoke, sizes = config["preset"], config["smoke"], config["sizes"]
    model = build_full_model(sizes, seed)
    init = copy.deepcopy(model).eval()
    part = config["model"]  # full_mamba or full_onehot: the part, the checkpoint's name
    command = f"python -m mamba_recall.experiments.ch1_cpu_hours --preset {preset} --parts {part} --allow-long"
    _, meta, result = _train_and_save(config, seed, command, model=model, desc=f"ch1 {part}")
    try:
        record = measurement_record(get(FULL_CLAIM).measure(model, meta, init, held_out_accuracy(init, sizes, seed)))
        record["evidence"]["smoke"] = bool(smoke)
    except NotRun as exc:
        record = {"not_run": str(exc)}
    return {
        **result,
        "measurements": {FULL_CLAIM: record},
        "readout": pair_readout(model).tolist(),
        "readout_init": pair_readout(init).tolist(),
    }


def run_wo_job(config: dict, seed: int) -> dict:
    """App. B, Fig. 7 on the simplified model with a learned unembedding W_o (``ch1.wo``), one target and seed: train
    it (:func:`~mamba_recall.train.latest_value.train_recall`), save its checkpoint, and measure claim 000/Fig7 on
    its W_o, with the same seed's W_o at initialisation as the null (:func:`~mamba_recall.claims.ch1.measure_fig7`)."""
    from ..claims import measurement_record

    command = f"python -m mamba_recall.experiments.ch1_cpu_hours --preset {config['preset']} --parts wo --allow-long"
    tr, meta, result = _train_and_save(config, seed, command)
    record = measurement_record(ch1.measure_fig7(tr.model.W_o.detach(), meta))
    record["evidence"]["smoke"] = bool(config["smoke"])
    return {**result, "measurements": {WO_CLAIM: record}, "W_o": tr.model.W_o.detach().tolist()}


def run_job(config: dict, seed: int) -> dict:
    """The run store's job function: a model job, a Table 1 cell, a full-Mamba job or a learned-W_o job."""
    if config["kind"] == "model":
        return run_model_job(config, seed)
    if config["kind"] == "table1":
        return run_table_job(config, seed)
    if config["kind"] == FULL_NAME:
        return run_full_job(config, seed)
    if config["kind"] == "wo":
        return run_wo_job(config, seed)
    raise ValueError(f"unknown job kind {config['kind']!r}; jobs come from jobs_for().")


# ---------------------------------------------------------------------------------------------- estimate
def _time_steps(model, inputs, labels, lr: float, steps: int = 4) -> float:
    """Seconds per AdamW step (one thread), measured after one warm-up step."""
    from ..train import Recipe, train

    recipe = Recipe(lr=lr, weight_decay=0.0, schedule="constant")
    train(model, lambda s: (inputs, labels), steps=1, recipe=recipe, progress=False)
    res = train(model, lambda s: (inputs, labels), steps=steps, recipe=recipe, progress=False)
    return res.seconds / steps


def _time_eval(model, inputs, labels) -> float:
    from ..train import evaluate

    t0 = time.perf_counter()
    evaluate(model, inputs, labels)
    return time.perf_counter() - t0


def measure_job(config: dict) -> tuple[float, float]:
    """(seconds per training step, seconds per training-set evaluation) of a job's model, measured here."""
    from ..tasks.latest_value import latest_value_batch
    from ..train.latest_value import build_model
    from ..train.table1 import build

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        s = config["sizes"]
        if config["kind"] in ("model", "wo"):
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


# ---------------------------------------------------------------------------------------------- bundles
def _claims_table(runs: list[dict]) -> tuple[pd.DataFrame, dict]:
    """Per claim: the seeds' stored measurements (bundle data) and one row per (claim, number) with its mean,
    95 % interval and per-seed values (the combination of :func:`~mamba_recall.claims.core.across_seeds`)."""

    stored, rows = {}, []
    by_model: dict[str, list[dict]] = {}
    for r in runs:
        by_model.setdefault(r["config"]["model"], []).append(r)
    for model, recs in sorted(by_model.items()):
        recs = sorted(recs, key=lambda r: r["seed"])
        for cid in recs[0]["result"]["measurements"]:
            records = [r["result"]["measurements"][cid] for r in recs]
            names = [f"{model} seed {r['seed']}" for r in recs]
            stored[cid] = {"model": model, "names": names, "records": records}
            if any("not_run" in d for d in records):
                rows.append(dict(claim=cid, model=model, metric="(not run)", n_seeds=len(recs)))
                continue
            rows += _claim_rows(cid, model, records, names)
    return pd.DataFrame(rows), stored


def _claim_rows(cid: str, model: str, records: list[dict], names: list[str]) -> list[dict]:
    """One row per number of claim ``cid`` on ``model``'s per-seed ``records``: its mean over the seeds, 95 % interval
    and per-seed values, combined by :func:`~mamba_recall.claims.core.across_seeds`."""
    from ..claims.core import across_seeds, measurement_from_record

    m = across_seeds([measurement_from_record(d) for d in records], names)
    return [
        dict(
            claim=cid,
            model=model,
            metric=k,
            mean=float(v),
            ci_low=m.intervals.get(k, (float("nan"), float("nan")))[0],
            ci_high=m.intervals.get(k, (float("nan"), float("nan")))[1],
            per_seed=" ".join(f"{float(x):.4g}" for x in m.per_seed[k]),
            n_seeds=len(records),
        )
        for k, v in m.values.items()
    ]


def _write(name, data, config, tables, log, directory):
    command = f"python -m mamba_recall.experiments.ch1_cpu_hours --preset {config['preset']} --allow-long"
    return save_grid_bundle(name, data, config, command=command, tables=tables, directory=directory, log=log)


def _wo_bundle(runs: list[dict], data: dict, preset: str, smoke: bool, suffix: str, log, directory) -> Path:
    """``ch1_wo_<preset>``: per target the accuracies and the 000/Fig7 numbers (mean, interval over seeds), every
    model's record of 000/Fig7 (``measurements``: both targets' seeds together, the claim's evidence, read by
    :func:`~mamba_recall.claims.ch1.seeds.check_over_seeds`) and the learned matrices (table ``W_o``: target, seed,
    row, col, value)."""
    runs = sorted(runs, key=lambda r: (r["config"]["sizes"]["target"], r["seed"]))
    models = aggregate(
        [dict(r, config={"model": r["config"]["model"]}) for r in runs],
        by=["model"],
        metrics=["test_accuracy", "train_accuracy", "steps_run"],
    )
    claims, _ = _claims_table(runs)  # per target
    records = [r["result"]["measurements"][WO_CLAIM] for r in runs]
    names = [f"{r['config']['sizes']['target']} targets seed {r['seed']}" for r in runs]
    stored = {WO_CLAIM: {"model": "wo", "names": names, "records": records}}
    if not any("not_run" in d for d in records):
        both = pd.DataFrame(_claim_rows(WO_CLAIM, "both targets", records, names))
        claims = pd.concat([claims, both], ignore_index=True)
    matrices = pd.DataFrame(
        [
            {"target": r["config"]["sizes"]["target"], "seed": r["seed"], "row": a, "col": c, "value": x}
            for r in runs
            for a, row in enumerate(r["result"]["W_o"])
            for c, x in enumerate(row)
        ]
    )
    data.update(
        measurements=stored,
        checkpoints={n: r["result"]["checkpoint"] for n, r in zip(names, runs)},
        aggregation="000/Fig7 over every model of both targets (claims.core.across_seeds); per target in table claims",
    )
    config = {"preset": preset, "smoke": smoke, "sizes": experiment("ch1.wo", preset, smoke=smoke)}
    tables = {"models": models, "claims": claims, "W_o": matrices}
    return _write(f"ch1_wo_{preset}{suffix}", data, config, tables, log, directory)


def _full_bundle(
    runs: list[dict], data: dict, preset: str, smoke: bool, suffix: str, log, directory, part: str = FULL_NAME
) -> Path:
    """``ch1_<part>_<preset>`` (``part``: full_mamba or full_onehot): per-seed accuracies (mean, interval), the 000/Fig7-full records per seed and
    their combination over seeds (``measurements``, read by :func:`~mamba_recall.claims.ch1.seeds.check_over_seeds`),
    and the readout matrices W_o^full at the end and at initialisation (table ``readout``: seed, stage, row a =
    the logit's token, col = j·|V| + v for token v at lag 1 (j = 0, previous) or lag 0 (j = 1, current), value)."""
    models = aggregate(
        [dict(r, config={"model": part}) for r in runs],
        by=["model"],
        metrics=["test_accuracy", "train_accuracy", "steps_run"],
    )
    claims, stored = _claims_table(runs)
    readout = pd.DataFrame(
        [
            {"seed": r["seed"], "stage": stage, "row": a, "col": c, "value": x}
            for r in sorted(runs, key=lambda r: r["seed"])
            for stage, key in (("trained", "readout"), ("init", "readout_init"))
            for a, row in enumerate(r["result"][key])
            for c, x in enumerate(row)
        ]
    )
    data.update(
        measurements=stored,
        checkpoints={f"{part} seed {r['seed']}": r["result"]["checkpoint"] for r in runs},
        aggregation="per claim: mean over seeds with a 95 % t-interval (claims.core.across_seeds)",
        readout_note="W_o^full = [R U_1 | R U_0] (|V| × 2|V|): the full model's readout in the paper's (previous, "
        "current) token coordinates (analysis.full_mamba_readout.pair_readout)",
    )
    config = {
        "preset": preset,
        "smoke": smoke,
        "sizes": experiment(FULL_PARTS[part], preset, smoke=smoke),
        "runner": RUNNER,
    }
    tables = {"models": models, "claims": claims, "readout": readout}
    command = f"python -m mamba_recall.experiments.ch1_cpu_hours --preset {preset} --parts {part} --allow-long"
    return save_grid_bundle(
        f"ch1_{part}_{preset}{suffix}", data, config, command=command, tables=tables, directory=directory, log=log
    )


def write_bundles(
    preset: str = "cpu-hours",
    *,
    store=None,
    smoke: bool = False,
    log=print,
    directory: Path | None = None,
    parts=None,
) -> list[Path]:
    """Aggregate the finished jobs of ``parts`` (default all) into ``results/ch1_mechanism_<preset>.json``,
    ``results/ch1_table1_<preset>.json`` and ``results/ch1_full_mamba_<preset>.json`` (a smoke run: ``_smoke``
    appended, written under ``_build/smoke/results`` unless ``directory`` is given); each says whether it is
    complete. A part with no finished job writes nothing."""
    if directory is None and smoke:
        directory = BUILD_DIR / "smoke" / "results"
    parts = _check_parts(parts)
    jobs = jobs_for(preset, smoke, parts)
    suffix = "_smoke" if smoke else ""
    paths = []
    for experiment_name in [PARTS[p] for p in PARTS if p in parts]:
        mine = [j for j in jobs if j["experiment"] == experiment_name]
        runs, data = finished_status(mine, store, preset=preset, log=log)
        if not runs:
            continue
        if experiment_name in (FULL_EXPERIMENT, ONEHOT_EXPERIMENT):
            part = FULL_NAME if experiment_name == FULL_EXPERIMENT else ONEHOT_NAME
            paths.append(_full_bundle(runs, data, preset, smoke, suffix, log, directory, part))
        elif experiment_name == WO_EXPERIMENT:
            paths.append(_wo_bundle(runs, data, preset, smoke, suffix, log, directory))
        elif experiment_name == MODELS_EXPERIMENT:
            models = aggregate(
                [dict(r, config={"model": r["config"]["model"]}) for r in runs],
                by=["model"],
                metrics=["test_accuracy", "train_accuracy", "steps_run"],
            )
            k1 = [dict(r, config={"model": "k1"}) for r in runs if r["config"]["model"] == "k1"]
            probe = aggregate(k1, by=["model"], metrics=list(PROBE_METRICS)) if k1 else pd.DataFrame()
            claims, stored = _claims_table(runs)
            data.update(
                measurements=stored,
                checkpoints={f"{r['config']['model']} seed {r['seed']}": r["result"]["checkpoint"] for r in runs},
                aggregation="per model and claim: mean over seeds with a 95 % t-interval (claims.core.across_seeds)",
                probe_note="our causal probe, not a claim of the paper: the forgetting factor set to 1 at noise pairs",
            )
            config = {
                "preset": preset,
                "smoke": smoke,
                "sizes": {m: experiment(f"ch1.{m}", preset, smoke=smoke) for m in MODELS},
                "runner": RUNNER,
            }
            tables = {"models": models, "claims": claims, "probe": probe}
            paths.append(_write(f"ch1_mechanism_{preset}{suffix}", data, config, tables, log, directory))
        else:  # Table 1 (and its size-matched row 3)
            from ..train.table1 import LABELS, PAPER_TABLE1

            matched = experiment_name == MATCHED_EXPERIMENT
            keys = ("model", "conv_width", "T", "kappa") if matched else ("model", "T", "kappa")

            def cell(r):  # the run's cell: its config's keys, the conv width from its sizes
                return {k: r["config"]["sizes"][k] if k == "conv_width" else r["config"][k] for k in keys}

            per_run = pd.DataFrame(
                [
                    {
                        "seed": r["seed"],
                        **{k: r["result"][k] for k in ("model", "label", "T", "kappa", "accuracy", "paper")},
                        **({"conv_width": r["config"]["sizes"]["conv_width"]} if matched else {}),
                        **{k: r["result"].get(k) for k in ("train_accuracy", "stopped", "steps_run", "params")},
                        "seconds": r["result"]["seconds"],
                    }
                    for r in sorted(runs, key=lambda r: (*cell(r).values(), r["seed"]))
                ]
            )
            cells = aggregate(
                [dict(r, config=cell(r)) for r in runs],
                by=list(keys),
                metrics=["accuracy", "train_accuracy", "steps_run"],
            )
            cells.insert(1, "label", [LABELS[m] for m in cells["model"]])
            cells["accuracy"] = cells["accuracy_mean"]  # the column the Table 1 claims read (the mean over seeds)
            cells["paper"] = [
                PAPER_TABLE1.get(m, {}).get((t, k)) for m, t, k in zip(cells.model, cells["T"], cells.kappa)
            ]
            data["aggregation"] = "held-out query accuracy per run; mean over seeds with a 95 % t-interval per cell"
            stem, sizes_name = ("ch1_table1_matched", "ch1.table1_matched") if matched else ("ch1_table1", "ch1.table1")
            config = {"preset": preset, "smoke": smoke, "sizes": experiment(sizes_name, preset, smoke=smoke)}
            tables = {"accuracy": cells, "runs": per_run}
            paths.append(_write(f"{stem}_{preset}{suffix}", data, config, tables, log, directory))
    return paths


@command_provenance()  # one git state for the command, taken before it writes anything
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="cpu-hours", choices=["cpu-hours"])
    ap.add_argument("--device", default="cpu", choices=["cpu"])
    add_grid_args(
        ap,
        smoke="the preset's structure with a handful of steps",
        aggregate_only=None,
        no_estimate=None,
        store="run store folder (default results/runs)",
    )
    ap.add_argument(
        "--parts",
        nargs="+",
        default=list(PARTS),
        choices=list(PARTS),
        help="which parts to run / aggregate (default all); e.g. --parts full_mamba runs the full Mamba LM alone",
    )
    args = ap.parse_args(argv)
    what = f"ch1 cpu-hours ({' '.join(args.parts)}) at preset {args.preset}"

    def write(preset, **kw):
        return write_bundles(preset, parts=args.parts, **kw)

    jobs = jobs_for(args.preset, args.smoke, args.parts)
    from ..results import smoke_run_store  # a smoke run's store is under _build/smoke/results, not results/runs

    grid_main(args, RUNNER, jobs, write, estimate=estimate, what=what, default_store=smoke_run_store(args.smoke))


if __name__ == "__main__":
    main()
