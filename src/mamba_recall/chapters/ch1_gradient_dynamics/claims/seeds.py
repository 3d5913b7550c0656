r"""Chapter 1's verdicts over the committed seeds: the cpu-hours bundles of
:mod:`mamba_recall.chapters.ch1_gradient_dynamics.runners.grid` (3 seeds at the paper's settings) measure every claim of Section 1.2
per seed with :func:`measure_model`, and :func:`check_over_seeds` judges a claim on them through core's one path
(``check_stored`` → ``across_seeds`` → ``judge``), re-measuring a |K| = 1 or Fig. 5 / 6 / 7-full claim on the
committed seed checkpoints (:func:`seed_records`), and on the one-seed evidence where no bundle is committed.
The notebooks of Chapter 1 call :func:`check_over_seeds`; the runner calls :func:`measure_model` in its jobs.
"""

from __future__ import annotations

import functools

from mamba_recall.paths import REPO_ROOT
from ._common import RANGES, SEEDS_COMMAND
from .many_keys_and_unembedding import FULL_MAMBA_COMMAND, FULL_ONEHOT_COMMAND

FULL_CLAIM = "000/Fig7-full"
#: the claims each model's job measures (the registry's measurement functions, per seed)
K1_CLAIMS = (
    "000/Sec3-accuracy",
    "000/Fig4a",
    "000/Fig4b",
    "000/Fig4c",
    "000/Fig4d",
    "000/Sec3-Delta",
    "000/Sec3-regimes",
    "000/AppC-values",
    "000/Sec3-recency",
    "000/Fig8",
)
SPIKE_CLAIM = {"k2": "000/Fig5", "k4": "000/Fig6"}


def measure_model(
    name: str, model, meta: dict, sizes: dict, test_set, test_accuracy: float, seed: int, smoke: bool = False
) -> dict:
    """The stored measurement of every claim this model checks ({claim id: record or {"not_run": why}}); a smoke
    run's records are marked as such (their verdicts read *not run*)."""
    from mamba_recall.claims.core import NotRun, get, measurement_record
    from mamba_recall.tasks.latest_value import latest_value_batch
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import Sourced

    n = sizes["n_probe"]
    out = {}
    if name == "k1":
        held = latest_value_batch(n, sizes["vocab_size"], 1, sizes["seq_len"], sizes["max_noise"], seed=1000 + seed)
        args = {
            "000/Sec3-accuracy": (meta,),
            "000/Fig4a": (model, held.inputs, meta),
            "000/Fig4b": (model, held.inputs, meta),
            "000/Fig4c": (model, meta),
            "000/Fig4d": (model, held.inputs, meta),
            "000/Sec3-Delta": (model, meta),
            "000/Sec3-regimes": (model, meta),
            "000/AppC-values": (model, meta),
            "000/Sec3-recency": (model, held, meta),
            "000/Fig8": (model, meta),
        }
        kwargs = {}
    else:
        src = Sourced(
            model, test_set, test_accuracy, sizes, meta["preset"], str(meta["device"]), meta["checkpoint"], seed=seed
        )
        args, kwargs = {SPIKE_CLAIM[name]: (src,)}, {"n": n}
    for cid, a in args.items():
        try:
            out[cid] = measurement_record(get(cid).measure(*a, **kwargs))
            out[cid]["evidence"]["smoke"] = bool(smoke)
        except NotRun as exc:
            out[cid] = {"not_run": str(exc)}
    return out


def _seed_model(checkpoint: str, build, regenerate: str):
    """(model in eval mode, sidecar with its ``checkpoint``) of one committed seed checkpoint (its sha256 checked),
    the model made by ``build(config, seed)`` and loaded with the saved weights (:func:`~mamba_recall.results.model_from_checkpoint`)."""
    from mamba_recall.results import model_from_checkpoint

    model, meta = model_from_checkpoint(
        REPO_ROOT / checkpoint, lambda m: build(m["config"], m["seed"]), regenerate=regenerate
    )
    return model, {**meta, "checkpoint": checkpoint}


@functools.lru_cache(maxsize=None)
def _k1_seed_records(checkpoint: str, n_probe: int) -> dict:
    """Every |K| = 1 claim's measurement record on one committed cpu-hours checkpoint (its sha256 checked), made by
    :func:`measure_model`, as the runner measured it, on the same held-out sequences
    (seed 1000 + s) as when the bundle was made; cached per checkpoint (a page reads ten claims of three seeds)."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import build_model

    model, meta = _seed_model(checkpoint, build_model, SEEDS_COMMAND)
    sizes = {**meta["config"], "n_probe": n_probe}
    return measure_model("k1", model, meta, sizes, None, meta["test_query_accuracy"], meta["seed"])


def remeasured_k1(claim_id: str, records: list[dict], n_probe: int) -> list[dict]:
    """A |K| = 1 claim's per-seed records measured afresh on the checkpoints they name (``records[i]["evidence"]
    ["source"]``, committed and sha256-checked) by the runner's own measurement (:func:`measure_model`, on the same
    held-out sequences), so that a measurement revised after the models were trained (a metric a rule now reads, a
    gate, a control) reads the same trained models: what the pages judge and what the bundle stores
    (:mod:`~mamba_recall.chapters.ch1_gradient_dynamics.runners.grid_bundles`)."""
    return [_k1_seed_records(r["evidence"]["source"], n_probe)[claim_id] for r in records]


WO_CLAIM = "000/Fig7"


@functools.lru_cache(maxsize=None)
def _wo_seed_record(checkpoint: str) -> dict:
    """000/Fig7's record on one committed learned-unembedding checkpoint (``ch1_wo``, its sha256 checked), with its
    null (the same seed's W_o at initialisation, with that model's own held-out accuracy)."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import build_model
    from mamba_recall.claims.core import get, measurement_record
    from mamba_recall.experiment import command_line

    model, meta = _seed_model(checkpoint, build_model, command_line("ch1_wo", "cpu-hours"))
    return measurement_record(get(WO_CLAIM).measure(model.W_o.detach(), meta))


def remeasured_wo(records: list[dict]) -> list[dict]:
    """000/Fig7's per-model records measured afresh on the checkpoints they name, as :func:`remeasured_k1` does for
    the |K| = 1 claims (the pages' and the ``ch1_wo`` bundle's one measurement)."""
    return [_wo_seed_record(r["evidence"]["source"]) for r in records]


def seed_records(claim_id: str, seeds) -> tuple[list[dict], list[str]] | None:
    """The per-seed measurement records of ``claim_id`` in the cpu-hours bundle ``seeds`` and the seeds' names, or
    ``None`` when the bundle does not measure it. A |K| = 1 claim is measured afresh on the seed checkpoints the bundle
    names (committed, sha256-checked), by the runner's own measurement (:func:`measure_model`), so that a measurement changed after the bundle was
    made (a metric a rule now reads, a control) reads the same trained models; the others are the stored records."""
    stored = seeds.data.get("measurements", {}).get(claim_id)
    if stored is None:
        return None
    records, names = stored["records"], stored["names"]
    if any("not_run" in r for r in records):
        return records, names
    if claim_id in K1_CLAIMS:
        records = remeasured_k1(claim_id, records, int(seeds.config["sizes"]["k1"]["n_probe"]))
    elif claim_id in SPIKE_CLAIM.values():
        name = next(k for k, c in SPIKE_CLAIM.items() if c == claim_id)
        n_probe = int(seeds.config["sizes"][name]["n_probe"])
        records = [_spike_seed_record(name, r["evidence"]["source"], n_probe) for r in records]
    elif claim_id == WO_CLAIM:
        records = remeasured_wo(records)
    elif claim_id == FULL_CLAIM:
        records = [_full_seed_record(r["evidence"]["source"]) for r in records]
    return records, names


@functools.lru_cache(maxsize=None)
def _spike_seed_record(name: str, checkpoint: str, n_probe: int) -> dict:
    """Fig. 5 / Fig. 6's record on one committed |K| = 2 / 4 checkpoint, made by
    :func:`measure_model` (as the runner) on the seed's held-out set (with its null control, the untrained twin)."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import build_model, held_out_set

    model, meta = _seed_model(checkpoint, build_model, SEEDS_COMMAND)
    test_set = held_out_set(meta["config"], meta["seed"])
    sizes = {**meta["config"], "n_probe": n_probe}
    acc = meta["test_query_accuracy"]
    return measure_model(name, model, meta, sizes, test_set, acc, meta["seed"])[SPIKE_CLAIM[name]]


@functools.lru_cache(maxsize=None)
def _full_seed_record(checkpoint: str) -> dict:
    """000/Fig7-full's record on one committed full-Mamba checkpoint, with its null control: the same seed's model
    untrained (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value.build_full_model`) and its held-out accuracy."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training.latest_value import (
        ONEHOT_NAME,
        build_full_model,
        held_out_accuracy,
    )
    from mamba_recall.claims.core import get, measurement_record

    command = FULL_ONEHOT_COMMAND if f"ch1_{ONEHOT_NAME}_" in checkpoint else FULL_MAMBA_COMMAND
    model, meta = _seed_model(checkpoint, build_full_model, command)
    sizes, seed = meta["config"], meta["seed"]
    init = build_full_model(sizes, seed).eval()
    return measurement_record(get(FULL_CLAIM).measure(model, meta, init, held_out_accuracy(init, sizes, seed)))


def check_over_seeds(claim_id: str, seeds, *args, record: bool = True, **kwargs):
    """The verdict of ``claim_id`` on the strongest committed evidence, through core's one path
    (:func:`~mamba_recall.claims.core.check_stored` → ``across_seeds``, with the ranges of :data:`._common.RANGES` → ``judge``):
    the per-seed records of the
    cpu-hours bundle ``seeds`` (:func:`~mamba_recall.chapters.ch1_gradient_dynamics.claims.load_seeds`, :func:`seed_records`). Without a bundle (``None``) or without this
    claim in it, the one-seed measurement on ``args`` (:func:`~mamba_recall.claims.core.check`), which core reads
    *inconclusive* for a trained claim whichever way its numbers point."""
    from mamba_recall.claims.core import check, check_stored

    found = None if seeds is None else seed_records(claim_id, seeds)
    if found is None:
        return check(claim_id, *args, record=record, **kwargs)
    if claim_id in SPIKE_CLAIM.values():
        found = learned_seeds(*found)
    return check_stored(claim_id, *found, record=record, bounds=RANGES)


#: Figs. 5–6 probe trained models: a seed enters the spike verdict when it learned the task (held-out query accuracy
#: ≥ this), the gate applied per seed (open review, 2026-12-04), not to the mean over seeds
LEARNED = 0.95


def learned_seeds(records: list[dict], names: list[str]) -> tuple[list[dict], list[str]]:
    """The seeds of a Fig. 5 / 6 verdict: those whose held-out query accuracy is ≥ :data:`LEARNED` (each seed's
    testability gate; the others are named, with their accuracy, in the seeds' names of the first kept seed). With no
    seed learned, every seed (the gate then reads *not testable here*); with fewer than 3 learned, the verdict reads
    *inconclusive* (core: a trained verdict needs 3 seeds)."""
    if any("not_run" in r for r in records):
        return records, names
    acc = [float(r["values"]["accuracy"]) for r in records]
    keep = [i for i, a in enumerate(acc) if a >= LEARNED]
    if not keep or len(keep) == len(records):
        return records, names
    left = ", ".join(
        f"{names[i]} (held-out accuracy {acc[i]:.4f} < {LEARNED})" for i in range(len(records)) if i not in keep
    )
    kept_names = [names[i] for i in keep]
    kept_names[0] = f"[seeds that did not learn, left out: {left}] {kept_names[0]}"
    return [records[i] for i in keep], kept_names
