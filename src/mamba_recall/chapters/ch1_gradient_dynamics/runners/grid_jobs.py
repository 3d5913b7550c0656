"""Chapter 1's run-store grid, run by ``python -m mamba_recall grid <experiment>`` and ``ch1_checkpoints`` (:mod:`mamba_recall.chapters.ch1_gradient_dynamics.runners.grid`) and its job functions:
the run-store experiments and parts, :func:`jobs_for` (one job per config and seed), the checkpoints, and
:func:`run_job` (a model job, a Table 1 cell, a full-Mamba job or a learned-W_o job), which the grid's
``RUNNER`` string names at ``mamba_recall.chapters.ch1_gradient_dynamics.runners.grid:run_job``."""

from __future__ import annotations

from pathlib import Path

from mamba_recall.chapters.ch1_gradient_dynamics.pipelines.forgetting_probe import noise_forgetting_probe
from .. import claims as ch1
from ..claims.seeds import FULL_CLAIM, measure_model
from mamba_recall.paths import BUILD_DIR, RESULTS_DIR
from mamba_recall.presets import experiment
from mamba_recall.runstore import make_job, output_record, repo_relative

from .job_configs import ModelJob, Table1Cell
from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import (
    FULL_NAME,
    ONEHOT_NAME,
    build_full_model,
    held_out_accuracy,
)
from mamba_recall.runners import runner_command

MODELS_EXPERIMENT = "ch1_mechanism"
TABLE_EXPERIMENT = "ch1_table1"
FULL_EXPERIMENT = "ch1_full_mamba"
WO_EXPERIMENT = "ch1_wo"
MATCHED_EXPERIMENT = "ch1_table1_matched"
ROPE_EXPERIMENT = "ch1_table1_rope"
SEEDS_EXPERIMENT = "ch1_table1_seeds"
K4_EXPERIMENT = "ch1_table1_k4"
SEEDS_LONG_EXPERIMENT = "ch1_table1_seeds_long"
ONEHOT_EXPERIMENT = "ch1_full_onehot"
CHECKPOINTS_EXPERIMENT = "ch1_checkpoints"
#: the runner's parts (``--parts``): name → run-store experiment
PARTS = {
    "checkpoints": CHECKPOINTS_EXPERIMENT,
    "models": MODELS_EXPERIMENT,
    "table1": TABLE_EXPERIMENT,
    "full_mamba": FULL_EXPERIMENT,
    "wo": WO_EXPERIMENT,
    "table1_matched": MATCHED_EXPERIMENT,
    "full_onehot": ONEHOT_EXPERIMENT,
    "table1_rope": ROPE_EXPERIMENT,
    "table1_seeds": SEEDS_EXPERIMENT,
    "table1_k4": K4_EXPERIMENT,
    "table1_seeds_long": SEEDS_LONG_EXPERIMENT,
}
WO_CLAIM = "000/Fig7"
#: the full-Mamba parts: part (= checkpoint name, job "model") → its sizes' experiment
FULL_PARTS = {FULL_NAME: "ch1_full_mamba", ONEHOT_NAME: "ch1_full_onehot"}
RUNNER = "mamba_recall.chapters.ch1_gradient_dynamics.runners.grid:run_job"
MODELS = ("k1", "k2", "k4")
#: the models of part ``checkpoints`` (``grid ch1_checkpoints --preset ci|paper``; its ``--only`` picks some): one model of
#: each name at seed 0, its checkpoint ``results/checkpoints/ch1_<name>_<preset>.pt``, what the notebooks load
CHECKPOINT_MODELS = ("k1", "k1_masked", "k2", "k4", "wo")
#: the parts of Chapter 1 at each preset (``jobs_for(parts=None)``; the experiments a runner names when it refuses a
#: preset): at ``ci`` and ``paper`` the one-seed models whose checkpoints the notebooks load and Table 1 with its
#: size-matched row 3 (ci: one seed; paper: 3); at ``cpu-hours`` every part but ``checkpoints`` (3 seeds each, 5 for
#: W_o), not the open review's added Table 1 rows (``grid ch1_table1_rope ch1_table1_seeds ch1_table1_k4 ch1_table1_seeds_long``)
DEFAULT_PARTS = {
    "ci": ("checkpoints", "table1", "table1_matched"),
    "paper": ("checkpoints", "table1", "table1_matched"),
    "cpu-hours": ("models", "table1", "full_mamba", "wo", "table1_matched", "full_onehot"),
}
PROBE_METRICS = (
    "probe_accuracy_before",
    "probe_accuracy_after",
    "probe_margin_positive_before",
    "probe_margin_positive_after",
    "probe_accuracy_no_write_erase",
)
CHECKPOINT_DIR = RESULTS_DIR / "checkpoints"
SMOKE_CHECKPOINT_DIR = BUILD_DIR / "smoke" / "checkpoints"  # a smoke run never writes into results/


def grid_command(experiment_name: str, preset: str) -> str:
    """The one command that runs the declared experiment ``experiment_name`` at ``preset`` (what its bundle and its
    checkpoints' sidecars record): ``python -m mamba_recall grid <experiment> --preset P --allow-long``."""
    from mamba_recall.experiment import command_line

    return command_line(experiment_name, preset)


def seed_experiment(name: str) -> str:
    """The experiment whose jobs save the per-seed checkpoint of model ``name`` (k1 ..., wo_<target>, full_mamba,
    full_onehot)."""
    if name in FULL_PARTS:
        return FULL_PARTS[name]
    return WO_EXPERIMENT if name.startswith("wo_") else MODELS_EXPERIMENT


def _sizes(name: str, preset: str, smoke: bool) -> dict:
    sizes = experiment(name, preset, smoke=smoke)
    if "seeds" not in sizes:
        raise ValueError(
            f"{name} at preset {preset!r} has no 'seeds': this part runs the entries that declare seeds (every "
            "cpu-hours one; Table 1 at every preset; at paper, the full Mamba LM; the simplified models' cpu-hours "
            "entries are at the paper's settings). At ci and paper the simplified models are part 'checkpoints'."
        )
    return sizes


def check_parts(parts, preset: str = "cpu-hours") -> tuple[str, ...]:
    """The parts to run or aggregate: ``parts`` as a tuple, or for None the preset's (:data:`DEFAULT_PARTS`; every
    part but ``checkpoints`` at ``cpu-hours``); an unknown or empty selection raises ``ValueError``."""
    parts = DEFAULT_PARTS.get(preset, tuple(PARTS)) if parts is None else tuple(parts)
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise ValueError(f"parts={list(parts)}: name one or more of {list(PARTS)} (or None for the preset's).")
    return parts


def jobs_for(preset: str = "cpu-hours", smoke: bool = False, parts=None) -> list[dict]:
    """Every job of the preset's ``parts`` (default the preset's, :data:`DEFAULT_PARTS`): the one-seed models whose checkpoints the
    notebooks load (``checkpoints``: :data:`CHECKPOINT_MODELS`), the models (k1, k2, k4 ×
    seeds), then the Table 1 cells (T × κ × model × seeds), then the full Mamba LM (× seeds). A part's jobs do not
    depend on which other parts are picked (the run store's keys are the same)."""
    parts = check_parts(parts, preset)
    jobs = []
    if "checkpoints" in parts:
        if preset not in ("ci", "paper"):
            others = " ".join(PARTS[p] for p in DEFAULT_PARTS.get(preset, ()) if p != "checkpoints")
            raise ValueError(
                f"part checkpoints (one model of each name at seed 0) runs at ci and paper, not {preset!r}; at "
                f"{preset} Chapter 1's models are declared experiments (3 seeds each), run by name: "
                f"{grid_command(others or MODELS_EXPERIMENT, preset)}"
            )
        for name in CHECKPOINT_MODELS:
            sizes = experiment(f"ch1_{name}", preset, smoke=smoke)
            config = ModelJob(kind="checkpoint", model=name, preset=preset, smoke=smoke, sizes=sizes)
            jobs.append(make_job(CHECKPOINTS_EXPERIMENT, config, 0))
    if "models" in parts:
        for name in MODELS:
            sizes = _sizes(f"ch1_{name}", preset, smoke)
            config = ModelJob(kind="model", model=name, preset=preset, smoke=smoke, sizes=sizes)
            jobs += [make_job(MODELS_EXPERIMENT, config, s) for s in range(sizes["seeds"])]
    if "table1" in parts:
        jobs += _table_jobs(preset, smoke)
    if "full_mamba" in parts:
        sizes = _sizes("ch1_full_mamba", preset, smoke)
        config = ModelJob(kind=FULL_NAME, model=FULL_NAME, preset=preset, smoke=smoke, sizes=sizes)
        jobs += [make_job(FULL_EXPERIMENT, config, s) for s in range(sizes["seeds"])]
    if "full_onehot" in parts:
        sizes = _sizes("ch1_full_onehot", preset, smoke)
        config = ModelJob(kind=FULL_NAME, model=ONEHOT_NAME, preset=preset, smoke=smoke, sizes=sizes)
        jobs += [make_job(ONEHOT_EXPERIMENT, config, s) for s in range(sizes["seeds"])]
    if "table1_matched" in parts:
        base = _sizes("ch1_table1_matched", preset, smoke)
        for width in base["conv_widths"]:
            sizes = {**{k: v for k, v in base.items() if k != "conv_widths"}, "conv_width": width}
            jobs += _table_jobs(preset, smoke, sizes, MATCHED_EXPERIMENT)
    for part in ("table1_rope", "table1_seeds", "table1_k4", "table1_seeds_long"):
        if part in parts:
            jobs += _table_jobs(preset, smoke, _sizes(PARTS[part], preset, smoke), PARTS[part])
    if "wo" in parts:
        base = _sizes("ch1_wo", preset, smoke)
        for target in base["targets"]:
            sizes = {**{k: v for k, v in base.items() if k != "targets"}, "target": target}
            config = ModelJob(kind="wo", model=f"wo_{target}", preset=preset, smoke=smoke, sizes=sizes)
            jobs += [make_job(WO_EXPERIMENT, config, s) for s in range(sizes["seeds"])]
    return jobs


def _table_jobs(preset: str, smoke: bool, table: dict | None = None, experiment_name: str = TABLE_EXPERIMENT):
    jobs = []
    table = table or _sizes("ch1_table1", preset, smoke)
    for T in table["seq_lens"]:
        for kappa in table["num_keys"]:
            for model in table["models"]:
                config = Table1Cell(
                    kind="table1", model=model, T=T, kappa=kappa, preset=preset, smoke=smoke, sizes=table
                )
                first = table.get("first_seed", 0)
                jobs += [make_job(experiment_name, config, s) for s in range(first, first + table["seeds"])]
    return jobs


# ---------------------------------------------------------------------------------------------- jobs
def checkpoint_path(name: str, preset: str, seed: int | None, smoke: bool = False) -> Path:
    """``results/checkpoints/ch1_<name>_<preset>_seed<s>.pt`` (a smoke run: under ``_build/smoke/checkpoints``,
    ``_smoke`` after the preset; seed None: no seed, as part ``checkpoints``'s smoke files)."""
    from mamba_recall.results import checkpoint_file

    folder = SMOKE_CHECKPOINT_DIR if smoke else CHECKPOINT_DIR
    return checkpoint_file(f"ch1_{name}", f"{preset}{'_smoke' if smoke else ''}", seed=seed, directory=folder)


def load_seed_checkpoint(name: str, preset: str, seed: int, smoke: bool = False):
    """``(model in eval mode, sidecar)`` of one seed's checkpoint (its sha256 checked): the one model loader
    (:func:`~mamba_recall.results.model_from_checkpoint`) at :func:`checkpoint_path`, the part's constructor (the full Mamba's
    for :data:`FULL_PARTS`, the simplified model's otherwise)."""
    from mamba_recall.results import model_from_checkpoint
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import build_model

    build = build_full_model if name in FULL_PARTS else build_model
    return model_from_checkpoint(
        checkpoint_path(name, preset, seed, smoke),
        lambda meta: build(meta["config"], seed),
        regenerate=grid_command(seed_experiment(name), preset),
    )


def _train_and_save(config: ModelJob, seed: int, command: str, path: Path | None = None, **train_kw):
    """Train the job's model (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.train_recall`, ``train_kw`` passed on), save
    its checkpoint (at ``path``, default :func:`checkpoint_path` of its name, preset and seed) with its sidecar ``meta``
    (what the claims' measurements read) and ``command`` as its regenerate line → (the training's result, ``meta``,
    the job result's common fields: accuracies, training length, checkpoint and its sha256)."""

    from mamba_recall.results import save_checkpoint
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import train_recall

    name, preset, smoke, sizes = config.model, config.preset, config.smoke, config.sizes
    tr = train_recall(sizes, seed=seed, device="cpu", **train_kw)
    path = checkpoint_path(name, preset, seed, smoke) if path is None else path
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
        "checkpoint": repo_relative(path),
    }
    state = {k: v.detach().cpu() for k, v in tr.model.state_dict().items()}
    path = save_checkpoint(path, state, meta, command=command, device="cpu", wall_seconds=tr.result.seconds)
    meta["checkpoint"] = repo_relative(path)
    result = {
        "test_accuracy": tr.test_accuracy,
        "train_accuracy": tr.train_accuracy,
        "steps_run": tr.result.steps_run,
        "stopped_early": tr.result.stopped_early,
        "train_seconds": tr.result.seconds,
        **output_record(path),  # checkpoint and sha256: a job whose checkpoint is gone is run again
    }
    return tr, meta, result


def run_model_job(config: ModelJob, seed: int) -> dict:
    """Train one model of ``config.model`` (k1, k2, k4) at one seed, save its checkpoint, measure its claims."""
    from mamba_recall.tasks.latest_value import latest_value_batch

    name, preset, smoke, sizes = config.model, config.preset, config.smoke, config.sizes
    tr, meta, result = _train_and_save(config, seed, grid_command(MODELS_EXPERIMENT, preset))
    result["measurements"] = measure_model(name, tr.model, meta, sizes, tr.test_set, tr.test_accuracy, seed, smoke)
    if name == "k1":
        held = latest_value_batch(
            sizes["n_probe"], sizes["vocab_size"], 1, sizes["seq_len"], sizes["max_noise"], seed=1000 + seed
        )
        result.update(noise_forgetting_probe(tr.model, held))
    return result


def run_full_job(config: ModelJob, seed: int) -> dict:
    r"""App. B, Fig. 7 on the full Mamba LM, one seed: train it on the ``ch1_k1`` task as
    :func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.train_recall` trains the simplified model (the same training / held-out sets of this seed, AdamW without weight
    decay, constant lr, until 100 % training-set query accuracy or ``steps``), save its checkpoint, and measure
    claim 000/Fig7-full: the readout W_o^full = [R U_1 | R U_0] ∈ R^{|V| × 2|V|} in the paper's (previous token,
    current token) coordinates (:mod:`~mamba_recall.chapters.ch1_gradient_dynamics.pipelines.full_mamba_readout`) against [−I I], at the end and at
    initialisation (the same seed's untrained model). Returns the accuracies, the training length, the claim's record
    and both matrices (``readout``, ``readout_init``: |V| lists of 2|V| floats)."""
    import copy

    from mamba_recall.chapters.ch1_gradient_dynamics.pipelines.full_mamba_readout import pair_readout
    from mamba_recall.claims import NotRun, get, measurement_record

    preset, smoke, sizes = config.preset, config.smoke, config.sizes
    model = build_full_model(sizes, seed)
    init = copy.deepcopy(model).eval()
    part = config.model  # full_mamba or full_onehot: the part, the checkpoint's name
    command = grid_command(FULL_PARTS[part], preset)
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


def run_wo_job(config: ModelJob, seed: int) -> dict:
    """App. B, Fig. 7 on the simplified model with a learned unembedding W_o (``ch1_wo``), one target and seed: train
    it (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.train_recall`), save its checkpoint, and measure claim 000/Fig7 on
    its W_o, with the same seed's W_o at initialisation as the null (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.claims.measure_fig7`)."""
    from mamba_recall.claims import measurement_record

    tr, meta, result = _train_and_save(config, seed, grid_command(WO_EXPERIMENT, config.preset))
    record = measurement_record(ch1.measure_fig7(tr.model.W_o.detach(), meta))
    record["evidence"]["smoke"] = bool(config.smoke)
    return {**result, "measurements": {WO_CLAIM: record}, "W_o": tr.model.W_o.detach().tolist()}


def run_checkpoint_job(config: ModelJob, seed: int) -> dict:
    """One model of part ``checkpoints`` (``config.model`` of :data:`CHECKPOINT_MODELS`, seed 0): train and save it
    as every job does (:func:`_train_and_save`), at ``results/checkpoints/ch1_<name>_<preset>.pt``, what the notebooks
    load (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.load_or_train`); the row of the
    bundle ``ch1_checkpoints_<preset>``, in the fields that bundle has always listed."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import checkpoint_path as model_checkpoint

    name, preset, smoke = config.model, config.preset, config.smoke
    # the file the notebooks load (latest_value's folder); a smoke run's under _build/smoke
    target = checkpoint_path(name, preset, None, smoke=True) if smoke else model_checkpoint(name, preset)
    command = f"{runner_command('ch1_checkpoints')} --preset {preset} --only {name}"
    tr, _, result = _train_and_save(config, seed, command, path=target)
    return {
        "test_query_accuracy": tr.test_accuracy,
        "train_query_accuracy": tr.train_accuracy,
        "steps_run": tr.result.steps_run,
        "seconds": tr.result.seconds,
        "checkpoint": result["checkpoint"],
        "sha256": result["sha256"],
    }


def run_job(config: ModelJob | Table1Cell, seed: int) -> dict:
    """The run store's job function: a checkpoint model, a model job, a Table 1 cell (model, T, κ) at one seed
    (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.table1.run_cell`), a full-Mamba job or a
    learned-W_o job."""
    if isinstance(config, Table1Cell):
        from mamba_recall.chapters.ch1_gradient_dynamics.training.table1 import run_cell

        return run_cell(config.model, config.T, config.kappa, config.sizes, seed=seed, device="cpu")
    if config.kind == "checkpoint":
        return run_checkpoint_job(config, seed)
    if config.kind == "model":
        return run_model_job(config, seed)
    if config.kind == FULL_NAME:
        return run_full_job(config, seed)
    if config.kind == "wo":
        return run_wo_job(config, seed)
    raise ValueError(f"unknown job kind {config.kind!r}; jobs come from jobs_for().")
