r"""The one training loop of the library: AdamW, an LR schedule, held-out accuracy, early stopping -- for one
model, or for an ensemble whose members are optimised exactly as if alone.

Defaults follow zoology's ``TrainConfig`` (HazyResearch/zoology, ``zoology/config.py``): AdamW,
lr 1e-3, weight decay 0.1, cosine schedule to 0, early stopping on held-out accuracy. The loss and
the accuracy are taken only where ``labels != -100`` (zoology's ``compute_metrics``;
:mod:`mamba_recall.labels`).

Data contract
-------------
``make_batch(step) -> (inputs, labels)`` is called with ``step = 0, 1, …, steps-1`` and must be a
*deterministic function of the step* (e.g. ``multiquery_ar(..., seed=base_seed + step)``, or
:func:`dataset_batches` over a fixed set). Together with ``torch.manual_seed(seed)`` at the start
of :func:`train` and a model built after ``torch.manual_seed``, a run is reproducible bit for bit
on the same machine and backend. Evaluation uses one fixed held-out ``eval_batch = (inputs, labels)``.

Learning rate at (0-based) step ``s`` with ``W = warmup_steps``, ``H = hold_steps`` (:class:`Recipe`), ``S = steps``
(:func:`lr_at`, the one schedule function)::

    warmup   lr · (s + 1) / W                               for s < W   (every schedule but tab9)
    constant lr
    cosine   lr                                             for W ≤ s < W + H (the hold; H = 0 by default)
             lr · ½ (1 + cos(π min(1, (s − W − H) / (S − W − H))))   after (no floor: decays to 0, zoology's eta_min=0)
    linear_warmup_cosine  = cosine with W ≥ 1 required
    code     = cosine with warmup and hold allowed to exceed S: the authors' paper-002 D–N / N–M recipe
               (warmup 100 → hold 400 → cosine to 0; ``presets.ch2.RECIPES["code"]``)
    tab9     lr · min(1, (s + 1)/W) · max(0.1, 1 − 0.9 s / 15000)   paper 002, App. J, Tab. 9 (our reading:
             linear warmup, then a linear decay to lr/10 over 15000 steps)

Weight decay rule (one model): a parameter is decayed iff it has ≥ 2 dimensions and is not marked
``_no_weight_decay`` (mamba-ssm marks ``A_log`` and ``D``). So biases, norm weights, ``D`` and
``A_log`` get no decay; Linear/Conv/Embedding weights do (a tied head counts once).

Ensembles (``per_member=True``)
-------------------------------
The model carries a leading member axis of size ``n_members`` on every parameter
(:class:`~mamba_recall.models.linear_mamba.LinearMamba` and its siblings): inputs ``(B, L)`` shared or
``(n_members, B, L)``, logits ``(n_members, B, L, V)``. Each member is trained exactly as if alone:

    loss      = Σ_e  CE_e,  CE_e = mean over member e's labelled positions (label smoothing as the recipe)
                (∂loss/∂θ_e = ∂CE_e/∂θ_e: the members' gradients do not mix)
    clipping  g_e ← g_e · min(1, c / (‖g_e‖ + 1e-6)),  ‖g_e‖ the global norm over member e's slices only
    AdamW     element-wise, so per member; one parameter group: every parameter decayed with the recipe's
              weight decay (the authors' recipes use 0 or decay everything)
    masks     ``model.apply_masks_()`` after every step keeps the padded entries of smaller members at 0
    stop      when *every* member reaches ``target_accuracy``; ``best_accuracy`` is per member

With shared labels only the labelled positions are unembedded (``model.hidden`` → ``model.unembed`` on the
N_f query positions instead of all L: the (·, V) unembedding is the dominant cost). :func:`train_ensemble`
runs a named recipe (``presets.ch2.RECIPES``) through this loop.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from ..labels import IGNORE_INDEX, labelled_accuracy, labelled_counts
from ..longrun import PROBE_STEPS, check_steps
from ..presets.ch2 import RECIPES

SCHEDULES = ("constant", "cosine", "linear_warmup_cosine", "code", "tab9")
TAB9_DECAY_STEPS = 15000  # paper 002, App. J, Tab. 9: the linear decay to lr/10 spans 15000 steps

__all__ = [
    "IGNORE_INDEX",
    "RECIPES",
    "SCHEDULES",
    "Recipe",
    "Stopping",
    "TrainResult",
    "dataset_batches",
    "evaluate",
    "labelled_accuracy",
    "lr_at",
    "masked_ce_per_member",
    "masked_cross_entropy",
    "param_groups",
    "train",
    "train_ensemble",
]


@dataclass
class TrainResult:
    """Outcome of :func:`train` (one model or an ensemble).

    history: one dict per step ``{"step", "loss", "lr"}`` (``step`` counts steps done, 1-based), plus
        ``"accuracy"`` (held-out) on evaluated steps and ``"grad_norm"`` when ``grad_clip`` is set. For an
        ensemble ``loss``, ``accuracy`` and ``grad_norm`` are lists over the members.
    final_accuracy: the last held-out accuracy of a single model (None without ``eval_batch`` or for an ensemble).
    accuracy: the last held-out accuracy per member (``[final_accuracy]`` for one model; [] without evaluations).
    best_accuracy: the best held-out accuracy per member over the evaluations (0 where none was made).
    steps_run: optimiser steps taken.  stopped_early: True if the target was reached before ``steps``.
    target_step: the step at which the held-out accuracy first reached ``target_accuracy`` (None if it did not).
    seconds: wall time of the loop.
    """

    history: list[dict] = field(default_factory=list)
    final_accuracy: float | None = None
    accuracy: list = field(default_factory=list)
    best_accuracy: list = field(default_factory=list)
    steps_run: int = 0
    stopped_early: bool = False
    target_step: int | None = None
    seconds: float = 0.0

    @property
    def final_loss(self):
        return self.history[-1]["loss"] if self.history else None

    @property
    def evals(self) -> list[dict]:
        """The history entries that carry a held-out accuracy."""
        return [h for h in self.history if "accuracy" in h]

    @property
    def steps_per_second(self) -> float:
        return self.steps_run / self.seconds if self.seconds else float("nan")


def masked_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = IGNORE_INDEX):
    """Mean cross-entropy over positions with ``labels != ignore_index``; logits (B, L, V), labels (B, L)."""
    logits = logits.reshape(-1, logits.shape[-1])
    if logits.dtype != torch.float64:
        logits = logits.float()  # half-precision logits: the loss in fp32
    return F.cross_entropy(logits, labels.reshape(-1), ignore_index=ignore_index)


def masked_ce_per_member(logits: torch.Tensor, labels: torch.Tensor, label_smoothing: float = 0.0):
    """logits (n_members, B, L, V), labels (B, L) or (n_members, B, L) → per-member mean CE over the labelled
    positions, shape (n_members,): ``CE_e = Σ_{b,t} m·ce / max(1, Σ m)`` with ``m = labels != IGNORE_INDEX``."""
    n_members, V = logits.shape[0], logits.shape[-1]
    if labels.dim() == 2:
        labels = labels.unsqueeze(0).expand(n_members, -1, -1)
    ce = F.cross_entropy(
        logits.reshape(-1, V).float(),
        labels.reshape(-1),
        ignore_index=IGNORE_INDEX,
        label_smoothing=label_smoothing,
        reduction="none",
    ).view(n_members, -1)
    mask = (labels.reshape(n_members, -1) != IGNORE_INDEX).to(ce.dtype)
    return (ce * mask).sum(1) / mask.sum(1).clamp_min(1)


@torch.no_grad()
def evaluate(
    model,
    inputs,
    labels,
    *,
    batch_size: int | None = None,
    device="cpu",
    ignore_index=IGNORE_INDEX,
    per_member: bool = False,
    values_only: bool = False,
):
    """Held-out accuracy over all labelled positions (pooled over mini-batches, not a mean of batch means), in
    eval mode (the mode is restored).

    One model: inputs, labels (B, L) → a float. ``per_member=True`` (an ensemble, or a member-axis model with
    ``ensemble=None``): inputs (B, L) or (n_members, B, L) → float64 tensor (n_members,) on the CPU.
    ``values_only``: argmax over the value half ``[V/2, V)`` of the vocabulary only (MQAR's values).
    ``batch_size`` defaults to 512 (one model) / 256 (members), the sizes the committed runs used."""
    batch_size = batch_size or (256 if per_member else 512)
    was_training = model.training
    model.eval()
    correct = total = 0
    try:
        for i in range(0, inputs.shape[-2], batch_size):
            x = inputs[..., i : i + batch_size, :].to(device)
            y = labels[..., i : i + batch_size, :].to(device)
            logits = model(x)
            if per_member and getattr(model, "ensemble", True) is None:
                logits = logits.unsqueeze(0)
            if values_only:
                logits[..., : logits.shape[-1] // 2] = -float("inf")
            c, t = labelled_counts(logits, y, dims=2 if per_member else y.dim(), ignore_index=ignore_index)
            if per_member:
                correct, total = correct + c.double(), total + t.double()
            else:
                correct, total = correct + int(c.sum()), total + int(t.sum())
    finally:
        model.train(was_training)
    if per_member:
        return (correct / total).cpu()
    return correct / total if total else float("nan")


def param_groups(model, weight_decay: float) -> list[dict]:
    """AdamW groups: decay for ≥2-D parameters not marked ``_no_weight_decay``, none for the rest."""
    decay, no_decay = [], []
    for p in model.parameters():  # deduplicates tied parameters
        if not p.requires_grad:
            continue
        (no_decay if p.dim() < 2 or getattr(p, "_no_weight_decay", False) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def lr_at(step: int, *, lr: float, steps: int, schedule: str, warmup_steps: int = 0, hold_steps: int = 0) -> float:
    """Learning rate used at 0-based ``step`` (the formulas are in the module docstring)."""
    if schedule == "tab9":
        return lr * min(1.0, (step + 1) / max(warmup_steps, 1)) * max(0.1, 1 - 0.9 * step / TAB9_DECAY_STEPS)
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}.")
    if step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    if schedule == "constant" or step < warmup_steps + hold_steps:
        return lr
    progress = (step - warmup_steps - hold_steps) / max(1, steps - warmup_steps - hold_steps)
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def dataset_batches(inputs: torch.Tensor, labels: torch.Tensor, batch_size: int, seed: int = 0):
    """A ``make_batch(step)`` over a fixed data set: epoch ``e`` is a permutation seeded by ``seed + e``,
    consecutive steps take consecutive slices (the last partial batch of an epoch is dropped)."""
    n = inputs.shape[0]
    if not 1 <= batch_size <= n:
        raise ValueError(f"batch_size must be in [1, {n}] (the data set size), got {batch_size}.")
    per_epoch = n // batch_size
    cache: dict[int, torch.Tensor] = {}

    def make_batch(step: int):
        epoch, k = divmod(step, per_epoch)
        if epoch not in cache:
            cache.clear()
            cache[epoch] = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))
        idx = cache[epoch][k * batch_size : (k + 1) * batch_size]
        return inputs[idx], labels[idx]

    return make_batch


def _is_int(v, lo: int) -> bool:
    return not isinstance(v, bool) and isinstance(v, int) and v >= lo


def _is_number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float))


#: a preset recipe's key (``presets.ch2.RECIPES``, the ch5 presets' ``recipe``) -> the :class:`Recipe` field
_PRESET_KEYS = {
    "lr": "lr",
    "betas": "betas",
    "weight_decay": "weight_decay",
    "warmup": "warmup_steps",
    "hold": "hold_steps",
    "schedule": "schedule",
    "grad_clip": "grad_clip",
    "label_smoothing": "label_smoothing",
}
_PRESET_INFO_KEYS = ("batch_size",)  # recorded in a preset for the reader; ``make_batch`` sets the batch


@dataclass(frozen=True)
class Recipe:
    """The optimiser and the learning-rate schedule of a :func:`train` run: AdamW(``lr``, ``betas``,
    ``weight_decay``), the schedule ``schedule`` with ``warmup_steps`` and ``hold_steps`` (:func:`lr_at`; the
    formulas are in the module docstring), gradient clipping at ``grad_clip`` (None: none) and ``label_smoothing``
    of the default loss. The defaults are zoology's (lr 1e-3, weight decay 0.1, cosine to 0, no warmup).

    ``Recipe.from_preset(cfg)`` reads a preset's recipe dict (``presets.ch2.RECIPES``, ``recipe`` of the ch5
    presets); ``dataclasses.replace(recipe, lr=3e-2)`` makes a variant. Every field is checked when the recipe is
    built; what also depends on the run's length (``warmup_steps < steps``) is checked by :func:`train`.

    A frozen dataclass, not a pydantic model: the training loop is the library's core and takes no new dependency
    for it; a frozen recipe is hashable and cannot be changed behind a run's back; ``dataclasses.replace`` gives
    the variants; the checks live in ``__post_init__``, next to the fields they guard.
    """

    lr: float = 1e-3
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.999)
    schedule: str = "cosine"
    warmup_steps: int = 0
    hold_steps: int = 0
    grad_clip: float | None = None
    label_smoothing: float = 0.0

    def __post_init__(self):
        schedule, warmup_steps, hold_steps = self.schedule, self.warmup_steps, self.hold_steps
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}.")
        if not _is_int(warmup_steps, 0):
            raise ValueError(f"warmup_steps must be an integer >= 0, got {warmup_steps!r}.")
        if schedule == "linear_warmup_cosine" and warmup_steps < 1:
            raise ValueError(
                "schedule='linear_warmup_cosine' needs warmup_steps >= 1; use schedule='cosine' for no warmup."
            )
        if not _is_int(hold_steps, 0):
            raise ValueError(f"hold_steps must be an integer >= 0, got {hold_steps!r}.")
        if hold_steps and schedule in ("constant", "tab9"):
            raise ValueError(f"schedule={schedule!r} has no hold phase; use hold_steps=0 or schedule='code'.")
        if not (_is_number(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a number > 0, got lr={self.lr!r}.")
        if not (_is_number(self.weight_decay) and self.weight_decay >= 0):
            raise ValueError(f"weight_decay must be a number >= 0, got {self.weight_decay!r}.")
        betas = tuple(self.betas) if isinstance(self.betas, (tuple, list)) else self.betas
        if not (isinstance(betas, tuple) and len(betas) == 2 and all(_is_number(b) and 0 <= b < 1 for b in betas)):
            raise ValueError(f"betas must be a pair of numbers in [0, 1), got betas={self.betas!r}.")
        object.__setattr__(self, "betas", betas)  # a preset's list (JSON) becomes a tuple: the recipe stays hashable
        if self.grad_clip is not None and not (_is_number(self.grad_clip) and self.grad_clip > 0):
            raise ValueError(f"grad_clip must be None or > 0, got {self.grad_clip!r}.")
        if not (_is_number(self.label_smoothing) and 0 <= self.label_smoothing < 1):
            raise ValueError(f"label_smoothing must be a number in [0, 1), got {self.label_smoothing!r}.")

    @classmethod
    def from_preset(cls, cfg: dict) -> Recipe:
        """The recipe of a preset's dict with keys ``lr, betas, weight_decay, warmup, hold, schedule, grad_clip,
        label_smoothing`` (each optional: a missing one keeps the default) and an informational ``batch_size``
        (ignored: ``make_batch`` sets the batch). A ``grad_clip`` of 0 means no clipping."""
        unknown = set(cfg) - set(_PRESET_KEYS) - set(_PRESET_INFO_KEYS)
        if unknown:
            raise ValueError(
                f"unknown recipe entries {sorted(unknown)}; use keys of {sorted([*_PRESET_KEYS, *_PRESET_INFO_KEYS])}."
            )
        fields = {_PRESET_KEYS[k]: v for k, v in cfg.items() if k in _PRESET_KEYS}
        if "grad_clip" in fields:
            fields["grad_clip"] = fields["grad_clip"] or None
        return cls(**fields)


@dataclass(frozen=True)
class Stopping:
    """When :func:`train` evaluates and stops: the held-out accuracy is measured every ``eval_every`` steps and
    after the last; training stops once it (every member's) reaches ``target_accuracy``, or (``patience`` set, one
    model) once the best accuracy has not grown by more than ``min_delta`` over ``patience`` consecutive
    evaluations (a plateau). ``steps_past_target = n`` (one model, a constant schedule): once the target is reached,
    train exactly ``n`` more steps instead of stopping ("trained past 100 %"; the step cap then no longer applies).
    A frozen dataclass like :class:`Recipe`; what also depends on the run (an ``eval_batch``, one model, the
    schedule) is checked by :func:`train`."""

    eval_every: int = 100
    target_accuracy: float | None = None
    patience: int | None = None
    min_delta: float = 0.0
    steps_past_target: int = 0

    def __post_init__(self):
        if not _is_int(self.eval_every, 1):
            raise ValueError(f"eval_every must be an integer >= 1, got {self.eval_every!r}.")
        if self.target_accuracy is not None and not (
            _is_number(self.target_accuracy) and 0 < self.target_accuracy <= 1
        ):
            raise ValueError(f"target_accuracy must be in (0, 1], got {self.target_accuracy!r}.")
        if self.patience is not None and not _is_int(self.patience, 1):
            raise ValueError(
                f"patience must be None or an integer >= 1, got patience={self.patience!r}; it stops when the "
                f"evaluated accuracy plateaus."
            )
        if not (_is_number(self.min_delta) and self.min_delta >= 0):
            raise ValueError(f"min_delta must be a number >= 0, got min_delta={self.min_delta!r}.")
        if self.steps_past_target and (not _is_int(self.steps_past_target, 0) or self.target_accuracy is None):
            raise _past_target_error(self)


def _past_target_error(stop: Stopping, schedule: str | None = None) -> ValueError:
    got = f"steps_past_target={stop.steps_past_target!r}, target_accuracy={stop.target_accuracy!r}"
    return ValueError(
        f"steps_past_target must be an integer >= 0, with target_accuracy, one model and schedule='constant' "
        f"(the steps after the target keep the same lr), got {got}" + (f", schedule={schedule!r}." if schedule else ".")
    )


def train(
    model: torch.nn.Module,
    make_batch: Callable[[int], tuple],
    *,
    steps: int,
    recipe: Recipe = Recipe(),
    stop: Stopping = Stopping(),
    eval_batch=None,
    per_member: bool = False,
    seed: int = 0,
    loss_fn=None,
    device="cpu",
    progress: bool = True,
    desc: str = "train",
    num_threads: int | None = None,
) -> TrainResult:
    """Train ``model`` for up to ``steps`` AdamW steps with ``recipe`` (:class:`Recipe`: optimiser and lr schedule)
    and ``stop`` (:class:`Stopping`: evaluation and early stopping): one model (input ids (B, L) → logits (B, L, V))
    or, with ``per_member=True``, every member of an ensemble at once (see the module docstring).

    ``make_batch(step)`` gives the training batch of 0-based ``step`` (deterministic in ``step``);
    ``loss_fn(logits, labels)`` (one model only) defaults to :func:`masked_cross_entropy` (with the recipe's
    ``label_smoothing`` if set). The held-out accuracy on ``eval_batch = (inputs, labels)`` is measured as ``stop``
    says (:func:`evaluate`); ``stop.target_accuracy`` and ``stop.patience`` need an ``eval_batch``, ``patience``
    and ``steps_past_target`` one model, and ``steps_past_target`` the schedule ``"constant"``.
    ``torch.manual_seed(seed)`` is called first. The model is moved to ``device`` and left in train mode. Raises
    ``FloatingPointError`` on a non-finite loss. After its first steps it applies the long-run guard
    (:mod:`mamba_recall.longrun`): a budget of ``steps`` estimated at over an hour on ``device`` stops with
    ``LongRunError`` unless allowed.

    ``num_threads``: if given, ``torch.set_num_threads(num_threads)`` for the duration of the loop
    (restored afterwards). Tiny CPU models train fastest on one thread, and on a busy machine
    several intra-op threads can be >10× slower (they wait on each other at every op).
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a Recipe (a preset's dict: Recipe.from_preset(cfg)), got {recipe!r}.")
    if not isinstance(stop, Stopping):
        raise TypeError(f"stop must be a Stopping, got {stop!r}.")
    if not _is_int(steps, 1):
        raise ValueError(f"steps must be an integer >= 1, got steps={steps!r}.")
    # the authors' recipes ("code", "tab9"): a short run may stay inside the warmup
    if recipe.schedule not in ("code", "tab9") and not recipe.warmup_steps < steps:
        raise ValueError(f"warmup_steps must be an integer in [0, steps={steps}), got {recipe.warmup_steps!r}.")
    if eval_batch is not None and (not isinstance(eval_batch, (tuple, list)) or len(eval_batch) != 2):
        raise ValueError("eval_batch must be None or a pair (inputs, labels).")
    if stop.target_accuracy is not None and eval_batch is None:
        raise ValueError("target_accuracy needs eval_batch=(inputs, labels) to measure accuracy on.")
    if num_threads is not None and not _is_int(num_threads, 1):
        raise ValueError(f"num_threads must be None or an integer >= 1, got {num_threads!r}.")
    if stop.steps_past_target and (per_member or recipe.schedule != "constant"):
        raise _past_target_error(stop, recipe.schedule)
    if stop.patience is not None and (eval_batch is None or per_member):
        raise ValueError(
            f"patience needs eval_batch=(inputs, labels) and one model (per_member=False), got "
            f"patience={stop.patience!r}; it stops when the evaluated accuracy plateaus."
        )
    if per_member:
        if loss_fn is not None:
            raise ValueError("per_member=True uses the per-member masked cross-entropy; drop loss_fn.")
        for attr in ("n_members", "hidden", "unembed", "apply_masks_"):
            if not hasattr(model, attr):
                raise ValueError(
                    f"per_member=True needs a member-axis model (LinearMamba, MultiHeadLinearMamba, "
                    f"SelectiveAblationMamba); {type(model).__name__} has no {attr!r}."
                )
    elif loss_fn is None:
        label_smoothing = recipe.label_smoothing
        loss_fn = (
            masked_cross_entropy
            if not label_smoothing
            else (
                lambda logits, labels: F.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]).float(),
                    labels.reshape(-1),
                    ignore_index=IGNORE_INDEX,
                    label_smoothing=label_smoothing,
                )
            )
        )
    threads_before = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        return _train_loop(
            model, make_batch, steps, recipe, stop, per_member, seed, eval_batch, loss_fn, device, progress, desc
        )
    finally:
        if num_threads is not None:
            torch.set_num_threads(threads_before)


def _member_loss(model, inputs, labels, label_smoothing):
    """Per-member losses (n_members,). Shared labels (B, L): unembed only the labelled positions."""
    if labels.dim() == 2:
        mask = labels != IGNORE_INDEX
        h = model.hidden(inputs)[:, mask]  # (n_members, Q, D)
        logits = model.unembed(h)  # (n_members, Q, V)
        return masked_ce_per_member(logits[:, None], labels[mask][None], label_smoothing)
    logits = model(inputs)
    if model.ensemble is None:
        logits = logits.unsqueeze(0)
    return masked_ce_per_member(logits, labels, label_smoothing)


@torch.no_grad()
def _clip_per_member(params, n_members: int, grad_clip: float) -> torch.Tensor:
    """g_e ← g_e · min(1, c / (‖g_e‖ + 1e-6)) with member e's own global norm; returns the norms (n_members,)."""
    sq = sum(p.grad.reshape(n_members, -1).pow(2).sum(1) for p in params if p.grad is not None)
    norm = sq.sqrt()
    scale = (grad_clip / (norm + 1e-6)).clamp(max=1.0)
    for p in params:
        if p.grad is not None:
            p.grad.mul_(scale.view(-1, *([1] * (p.dim() - 1))))
    return norm


def _train_loop(
    model,
    make_batch,
    steps,
    recipe: Recipe,
    stop: Stopping,
    per_member,
    seed,
    eval_batch,
    loss_fn,
    device,
    progress,
    desc,
) -> TrainResult:
    torch.manual_seed(seed)
    model.to(device)
    model.train()
    if per_member:
        params = list(model.parameters())
        opt = torch.optim.AdamW(params, lr=recipe.lr, betas=recipe.betas, weight_decay=recipe.weight_decay)
        best = torch.zeros(model.n_members, dtype=torch.float64)
    else:
        opt = torch.optim.AdamW(param_groups(model, recipe.weight_decay), lr=recipe.lr, betas=recipe.betas)
        best = None
    result = TrainResult()
    stale = 0  # evaluations since the best accuracy last grew by more than min_delta (patience)
    start = time.perf_counter()
    bar = tqdm(total=steps, desc=desc, disable=not progress)
    limit = steps  # the last step; past the target (steps_past_target): the target's step + steps_past_target
    try:
        for s in itertools.count():
            if s >= limit:
                break
            cur_lr = lr_at(
                s,
                lr=recipe.lr,
                steps=steps,
                schedule=recipe.schedule,
                warmup_steps=recipe.warmup_steps,
                hold_steps=recipe.hold_steps,
            )
            for g in opt.param_groups:
                g["lr"] = cur_lr
            inputs, labels = make_batch(s)
            if per_member:
                losses = _member_loss(model, inputs.to(device), labels.to(device), recipe.label_smoothing)
                loss = losses.sum()
            else:
                inputs, labels = inputs.to(device), labels.to(device)
                loss = loss_fn(model(inputs), labels)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"{desc}: loss is {loss.item()} at step {s + 1}; lower lr or set grad_clip.")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if per_member:
                entry = {"step": s + 1, "loss": losses.detach().cpu().tolist(), "lr": cur_lr}
                if recipe.grad_clip is not None:
                    entry["grad_norm"] = _clip_per_member(params, model.n_members, recipe.grad_clip).cpu().tolist()
            else:
                entry = {"step": s + 1, "loss": loss.item(), "lr": cur_lr}
                if recipe.grad_clip is not None:
                    entry["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip))
            opt.step()
            if per_member:
                model.apply_masks_()  # keeps padded entries exactly zero (weight decay / Adam ε never revive them)
            result.steps_run = s + 1
            if s + 1 == PROBE_STEPS:  # the long-run guard: stop now if the whole budget is over an hour
                check_steps(time.perf_counter() - start, s + 1, steps, desc, device)
            reached = False
            if eval_batch is not None and ((s + 1) % stop.eval_every == 0 or s + 1 == limit):
                acc = evaluate(model, *eval_batch, device=device, per_member=per_member)
                if per_member:
                    best = torch.maximum(best, acc)
                    entry["accuracy"] = result.accuracy = acc.tolist()
                    reached = stop.target_accuracy is not None and bool((acc >= stop.target_accuracy).all())
                else:
                    entry["accuracy"] = result.final_accuracy = acc
                    result.accuracy = [acc]
                    stale = 0 if best is None or acc > best + stop.min_delta else stale + 1
                    best = acc if best is None else max(best, acc)
                    reached = stop.target_accuracy is not None and acc >= stop.target_accuracy
                    reached = reached or (stop.patience is not None and stale >= stop.patience)
            result.history.append(entry)
            bar.update(1)
            if progress:
                show = entry["loss"] if not per_member else sum(entry["loss"]) / len(entry["loss"])
                postfix = {"loss": f"{show:.3f}"}
                if result.accuracy:
                    postfix["acc"] = f"{min(result.accuracy):.3f}"
                bar.set_postfix(postfix, refresh=False)
            if reached and result.target_step is None:
                result.target_step = s + 1
                if not stop.steps_past_target:
                    result.stopped_early = s + 1 < steps
                    break
                limit = s + 1 + stop.steps_past_target
                bar.total = limit
    finally:
        bar.close()
        result.seconds = time.perf_counter() - start
    if per_member:
        result.best_accuracy = best.tolist()
    elif best is not None:
        result.best_accuracy = [best]
    return result


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
    """:func:`train` with ``per_member=True`` and a named recipe of :data:`~mamba_recall.presets.ch2.RECIPES`
    (``"code"``: the authors' committed paper-002 recipe; ``"tab9"``: the paper's Tab. 9); ``overrides`` replace
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
