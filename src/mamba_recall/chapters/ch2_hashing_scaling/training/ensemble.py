"""Chapter 2's training entry point: :func:`train_ensemble`, a named recipe of paper 002 (:data:`..configs.RECIPES`)
on an ensemble of simplified models, through the one training loop (:func:`mamba_recall.train.train` with
``per_member=True``)."""

from __future__ import annotations

from typing import Callable

import torch

from mamba_recall.models.linear_mamba import LinearMamba, SelectiveAblationMamba
from mamba_recall.presets import seeds
from mamba_recall.tasks.mqar import batch_fn, mqar
from mamba_recall.train import Recipe, Stopping, TrainResult, train

from ..configs import RECIPES

#: How :func:`train_members` trains a group of simplified models: one batched ensemble, or each member alone.
WAYS = ("ensemble", "separate")
#: On the CPU one ensemble is faster while its activations stay in the cache; past that, training the members one
#: after the other is. Measured with ``python benchmarks/ch2_ensemble.py`` (model-steps per CPU second, one thread,
#: AMD EPYC with a 32 MiB L3; README, "Speed of the scans"): 12 members of V 64, D 32, N 16, batch 64, L 32
#: (9 MiB of activations by :func:`activation_bytes`): ensemble 209 vs separate 148; 8 members of V 512, D 32,
#: batch 128, L 64 (32 MiB): 27 vs 42; 8 members of V 1024, D 64, N 32, batch 128, L 64 (48 MiB): 8.9 vs 15.3.
CPU_ENSEMBLE_BYTES = 16 * 2**20
EVAL_SEED = seeds.MQAR_EVAL  # held-out data stream, disjoint from training seeds (base 0 + step)


def train_ensemble(
    model,
    make_batch: Callable[[int], tuple],
    *,
    steps: int,
    recipe: str = "code",
    overrides: dict | None = None,
    eval_batch=None,
    eval_every: int = 100,
    target_accuracy: float | None = None,
    seed: int = 0,
    device="cpu",
    num_threads: int | None = None,
    progress: bool = False,
) -> TrainResult:
    """:func:`train` with ``per_member=True`` and a named recipe of :data:`~mamba_recall.chapters.ch2_hashing_scaling.configs.RECIPES`
    (``"code"``: the authors' committed recipe for paper 002; ``"tab9"``: the paper's Tab. 9); ``overrides`` replace
    recipe entries (e.g. ``{"warmup": 50, "hold": 50}``; ``batch_size`` is informational: ``make_batch`` sets
    the batch). ``make_batch(step) -> (inputs (B, L) or (n_members, B, L), labels)``. Early stop when *every*
    member reaches ``target_accuracy``."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; use one of {tuple(RECIPES)}.")
    return train(
        model,
        make_batch,
        steps=steps,
        recipe=Recipe.from_preset({**RECIPES[recipe], **(overrides or {})}),
        stop=Stopping(eval_every=eval_every, target_accuracy=target_accuracy),
        eval_batch=eval_batch,
        per_member=True,
        seed=seed,
        device=device,
        progress=progress,
        desc="train_ensemble",
        num_threads=num_threads,
    )


def _chunks(seq, size):
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def activation_bytes(n_members: int, batch: int, L: int, d_inner: int, n_layer: int = 1) -> int:
    """float32 bytes of the main activations of one training step of an ensemble: per member and layer the
    (batch, L, d_inner) streams and the (batch, L, L) attention-form scores, ``4 n Λ B L (d_inner + L)``."""
    return 4 * n_members * n_layer * batch * L * (d_inner + L)


def default_way(device, n_members: int = 1, batch: int = 1, L: int = 1, d_inner: int = 1, n_layer: int = 1) -> str:
    """The faster way (:data:`WAYS`) to train a group of ``n_members`` simplified models on ``device``: always
    ``"ensemble"`` on a GPU; on the CPU ``"ensemble"`` up to :data:`CPU_ENSEMBLE_BYTES` of activations
    (:func:`activation_bytes`), ``"separate"`` above."""
    if torch.device(device).type != "cpu":
        return "ensemble"
    small = activation_bytes(n_members, batch, L, d_inner, n_layer) <= CPU_ENSEMBLE_BYTES
    return "ensemble" if small else "separate"


def _train_separately(model, make_batch, *, target_accuracy, **kw) -> list[float]:
    """Every member of the ensemble ``model`` trained alone (:meth:`LinearMamba.member_model`: same allocated size,
    same initial parameters, same data stream, all ``steps``), then the ensemble's rule applied to the evaluation
    records: stop at the first evaluation where *every* member has reached ``target_accuracy``, and return each
    member's best accuracy over the evaluations up to there -- the numbers :func:`train_ensemble` gives for
    ``model``, bit for bit on one machine (a member alone computes what it computes inside the ensemble)."""
    curves = []
    for e in range(model.n_members):
        r = train_ensemble(model.member_model(e), make_batch, **kw)
        curves.append([h["accuracy"][0] for h in r.evals])
    n_evals = len(curves[0])
    stop = next((i for i in range(n_evals) if all(c[i] >= target_accuracy for c in curves)), n_evals - 1)
    return [max(c[: stop + 1]) for c in curves]


def train_members(
    V,
    Nf,
    L,
    sizes,
    *,
    steps,
    batch,
    warmup,
    hold,
    n_eval,
    seed=0,
    device="cpu",
    task="mqar",
    task_kw=None,
    d_conv=2,
    residual=None,
    max_members=None,
    recipe="code",
    memory_gb=None,
    way=None,
):
    """Train one simplified model per entry of ``sizes`` ((D, N[, Λ]) tuples), grouped in ensembles of at most
    ``max_members``; return the list of held-out accuracies (best over evaluations, as the [code] runs).

    ``way`` (:data:`WAYS`; default: :func:`default_way` for each group on ``device``): ``"ensemble"`` trains a group
    as one batched :class:`LinearMamba`; ``"separate"`` trains its members one after the other as one-member models
    (:func:`_train_separately`). Both give the same numbers; they differ in speed only."""
    if way is not None and way not in WAYS:
        raise ValueError(f"unknown way {way!r}; use one of {WAYS}.")
    task_kw = task_kw or {}
    ev = mqar(V, Nf, L, n_eval, EVAL_SEED, variant="standard" if task == "mqar" else task, **task_kw)
    accs = []
    if max_members is None:  # as many members as the activations allow (≈ 4 saved copies, fp32)
        Dm, Nm = max(s[0] for s in sizes), max(s[1] for s in sizes)
        Lm = max(s[2] if len(s) > 2 else 1 for s in sizes)
        per_member = 4 * 4 * batch * (Nf * V + Lm * (L * L + L * (2 * Dm * 4 + 2 * Nm + Dm)))
        budget = (memory_gb or (20 if torch.device(device).type == "cuda" else 1)) * 2**30
        max_members = max(1, min(1024, int(budget // per_member)))
    for k, chunk in enumerate(_chunks(list(sizes), max_members)):
        Dm = max(s[0] for s in chunk)
        Nm = max(s[1] for s in chunk)
        Lm = max(s[2] if len(s) > 2 else 1 for s in chunk)
        res = residual if residual is not None else (Lm > 1)
        chunk_way = way or default_way(device, len(chunk), batch, L, 2 * Dm, Lm)
        model = LinearMamba(
            V,
            Dm,
            Nm,
            Lm,
            ensemble=len(chunk),
            member_sizes=chunk,
            d_conv=d_conv,
            residual=res,
            seed=seed + 7919 * k,
            device=device,
        )
        make_batch = batch_fn(V, Nf, L, batch, seed * seeds.TRAIN_STRIDE, task=task, **task_kw)
        kw = dict(
            steps=steps,
            eval_batch=ev,
            eval_every=max(50, steps // 6),
            seed=seed,
            device=device,
            recipe=recipe,
            overrides=dict(
                warmup=min(warmup, steps - 1),
                batch_size=batch,
                **({"hold": hold} if RECIPES[recipe]["schedule"] == "code" else {}),
            ),
        )
        if chunk_way == "separate":
            accs += _train_separately(model, make_batch, target_accuracy=0.999, **kw)
        else:
            accs += train_ensemble(model, make_batch, target_accuracy=0.999, **kw).best_accuracy
    return accs


def train_selective_rows(row, c, cfg, device, seed=0, members=None):
    """Tab. 10 rows Base / A / B: ``members`` (default ``c["seeds"]``) members of one :class:`SelectiveAblationMamba`
    ensemble (d_conv 4), trained as the linear rows (:func:`train_members`: same data stream, recipe, schedule, early
    stop). App. K trains Base and A with half the batch (S = 112 vs 224) for the same 10 epochs, i.e. twice the
    steps: rows listed in ``c["half_batch_rows"]`` get batch ``c["batch"] // 2`` and ``2 · c["steps"]`` steps (same
    number of samples). ``seed``: initialisation ``seed`` and training stream ``seed · 100003 + step`` (as
    :func:`train_members`; the ci bundle's one ensemble is ``seed=0``)."""
    half = row in c.get("half_batch_rows", ())
    steps, batch = (2 * c["steps"], c["batch"] // 2) if half else (c["steps"], c["batch"])
    ev = mqar(c["V"], c["Nf"], c["L"], cfg["n_eval"], EVAL_SEED)
    n = c["seeds"] if members is None else members
    model = SelectiveAblationMamba(c["V"], c["D"], c["N"], row, d_conv=4, ensemble=n, seed=seed, device=device)
    r = train_ensemble(
        model,
        batch_fn(c["V"], c["Nf"], c["L"], batch, seed * 100003),
        steps=steps,
        eval_batch=ev,
        eval_every=max(50, steps // 6),
        target_accuracy=0.999,
        seed=seed,
        device=device,
        overrides=dict(warmup=min(cfg["warmup"], steps - 1), hold=cfg["hold"], batch_size=batch),
    )
    curve = [(h["step"], sum(h["accuracy"]) / len(h["accuracy"])) for h in r.history if "accuracy" in h]
    return r.best_accuracy, curve
