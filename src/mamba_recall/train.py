r"""The one training loop every chapter uses: AdamW, an LR schedule, held-out accuracy, early stopping.

Defaults follow zoology's ``TrainConfig`` (HazyResearch/zoology, ``zoology/config.py``): AdamW,
lr 1e-3, weight decay 0.1, cosine schedule to 0, early stopping on held-out accuracy. The loss and
the accuracy are taken only where ``labels != -100`` (zoology's ``compute_metrics``).

Data contract
-------------
``make_batch(step) -> (inputs, labels)`` is called with ``step = 0, 1, …, steps-1`` and must be a
*deterministic function of the step* (e.g. ``multiquery_ar(..., seed=base_seed + step)``, or
:func:`dataset_batches` over a fixed set). Together with ``torch.manual_seed(seed)`` at the start
of :func:`train` and a model built after ``torch.manual_seed``, a run is reproducible bit for bit
on the same machine and backend. Evaluation uses one fixed held-out ``eval_batch = (inputs, labels)``.

Learning rate at (0-based) step ``s`` with ``W = warmup_steps``, ``S = steps``::

    warmup   lr · (s + 1) / W                         for s < W   (every schedule)
    constant lr
    cosine   lr · ½ (1 + cos(π (s − W) / (S − W)))    (no floor: decays towards 0, like zoology's eta_min=0)
    linear_warmup_cosine  = cosine with W ≥ 1 required

Weight decay rule: a parameter is decayed iff it has ≥ 2 dimensions and is not marked
``_no_weight_decay`` (mamba-ssm marks ``A_log`` and ``D``). So biases, norm weights, ``D`` and
``A_log`` get no decay; Linear/Conv/Embedding weights do (a tied head counts once).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .longrun import PROBE_STEPS, check_steps
from .tasks.mqar import IGNORE_INDEX

SCHEDULES = ("constant", "cosine", "linear_warmup_cosine")

__all__ = ["IGNORE_INDEX", "SCHEDULES", "TrainResult", "dataset_batches", "evaluate", "lr_at",
           "masked_accuracy", "masked_cross_entropy", "param_groups", "train"]


@dataclass
class TrainResult:
    """Outcome of :func:`train`.

    history: one dict per step ``{"step", "loss", "lr"}`` (``step`` counts steps done, 1-based), plus
        ``"accuracy"`` (held-out) on evaluated steps and ``"grad_norm"`` when ``grad_clip`` is set.
    final_accuracy: the last held-out accuracy (None without ``eval_batch``).
    steps_run: optimiser steps taken.  stopped_early: True if the target was reached before ``steps``.
    seconds: wall time of the loop.
    """

    history: list[dict] = field(default_factory=list)
    final_accuracy: float | None = None
    steps_run: int = 0
    stopped_early: bool = False
    seconds: float = 0.0

    @property
    def final_loss(self) -> float | None:
        return self.history[-1]["loss"] if self.history else None

    @property
    def evals(self) -> list[dict]:
        """The history entries that carry a held-out accuracy."""
        return [h for h in self.history if "accuracy" in h]


def masked_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = IGNORE_INDEX):
    """Mean cross-entropy over positions with ``labels != ignore_index``; logits (B, L, V), labels (B, L)."""
    logits = logits.reshape(-1, logits.shape[-1])
    if logits.dtype != torch.float64:
        logits = logits.float()  # half-precision logits: the loss in fp32
    return F.cross_entropy(logits, labels.reshape(-1), ignore_index=ignore_index)


@torch.no_grad()
def masked_accuracy(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = IGNORE_INDEX) -> float:
    """Fraction of positions with ``labels != ignore_index`` where ``argmax(logits) == labels``
    (zoology: ``(pred == target)[target != ignore_index].mean()``). NaN if nothing is labelled."""
    mask = labels != ignore_index
    n = int(mask.sum())
    if n == 0:
        return float("nan")
    return float((logits.argmax(-1)[mask] == labels[mask]).sum()) / n


@torch.no_grad()
def evaluate(model, inputs, labels, *, batch_size=512, device="cpu", ignore_index=IGNORE_INDEX) -> float:
    """Held-out accuracy over all labelled positions (pooled, not a mean of batch means), in eval mode."""
    was_training = model.training
    model.eval()
    correct = total = 0
    try:
        for i in range(0, inputs.shape[0], batch_size):
            x = inputs[i:i + batch_size].to(device)
            y = labels[i:i + batch_size].to(device)
            mask = y != ignore_index
            correct += int((model(x).argmax(-1)[mask] == y[mask]).sum())
            total += int(mask.sum())
    finally:
        model.train(was_training)
    return correct / total if total else float("nan")


def param_groups(model, weight_decay: float) -> list[dict]:
    """AdamW groups: decay for ≥2-D parameters not marked ``_no_weight_decay``, none for the rest."""
    decay, no_decay = [], []
    for p in model.parameters():  # deduplicates tied parameters
        if not p.requires_grad:
            continue
        (no_decay if p.dim() < 2 or getattr(p, "_no_weight_decay", False) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def lr_at(step: int, *, lr: float, steps: int, schedule: str, warmup_steps: int = 0) -> float:
    """Learning rate used at 0-based ``step`` (see the module docstring)."""
    if step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    if schedule == "constant":
        return lr
    progress = (step - warmup_steps) / max(1, steps - warmup_steps)
    return lr * 0.5 * (1.0 + math.cos(math.pi * progress))


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
        idx = cache[epoch][k * batch_size:(k + 1) * batch_size]
        return inputs[idx], labels[idx]

    return make_batch


def _validate(steps, lr, weight_decay, schedule, warmup_steps, grad_clip, eval_every, eval_batch,
              target_accuracy):
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got steps={steps!r}.")
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}.")
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or not 0 <= warmup_steps < steps:
        raise ValueError(f"warmup_steps must be an integer in [0, steps={steps}), got {warmup_steps!r}.")
    if schedule == "linear_warmup_cosine" and warmup_steps < 1:
        raise ValueError("schedule='linear_warmup_cosine' needs warmup_steps >= 1; "
                         "use schedule='cosine' for no warmup.")
    if not (isinstance(lr, (int, float)) and lr > 0):
        raise ValueError(f"lr must be a number > 0, got lr={lr!r}.")
    if not (isinstance(weight_decay, (int, float)) and weight_decay >= 0):
        raise ValueError(f"weight_decay must be a number >= 0, got {weight_decay!r}.")
    if grad_clip is not None and not grad_clip > 0:
        raise ValueError(f"grad_clip must be None or > 0, got {grad_clip!r}.")
    if isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 1:
        raise ValueError(f"eval_every must be an integer >= 1, got {eval_every!r}.")
    if eval_batch is not None and (not isinstance(eval_batch, (tuple, list)) or len(eval_batch) != 2):
        raise ValueError("eval_batch must be None or a pair (inputs, labels).")
    if target_accuracy is not None:
        if eval_batch is None:
            raise ValueError("target_accuracy needs eval_batch=(inputs, labels) to measure accuracy on.")
        if not 0 < target_accuracy <= 1:
            raise ValueError(f"target_accuracy must be in (0, 1], got {target_accuracy!r}.")


def train(model: torch.nn.Module, make_batch: Callable[[int], tuple], *, steps: int, lr: float = 1e-3,
          weight_decay: float = 0.1, betas=(0.9, 0.999), schedule: str = "cosine", warmup_steps: int = 0,
          grad_clip: float | None = None, seed: int = 0, eval_every: int = 100, eval_batch=None,
          target_accuracy: float | None = None, loss_fn=None, device="cpu", progress: bool = True,
          desc: str = "train", num_threads: int | None = None) -> TrainResult:
    """Train ``model`` (input ids (B, L) → logits (B, L, V)) for up to ``steps`` AdamW steps.

    ``make_batch(step)`` gives the training batch of 0-based ``step`` (deterministic in ``step``);
    ``loss_fn(logits, labels)`` defaults to :func:`masked_cross_entropy`. The held-out accuracy on
    ``eval_batch`` is measured every ``eval_every`` steps and after the last step; training stops
    as soon as it reaches ``target_accuracy``. ``torch.manual_seed(seed)`` is called first.
    The model is moved to ``device`` and left in train mode. Raises ``FloatingPointError`` on a
    non-finite loss. See the module docstring for the schedule and the weight-decay rule.
    After its first steps it applies the long-run guard (:mod:`mamba_recall.longrun`): a budget of
    ``steps`` estimated at over an hour on ``device`` stops with ``LongRunError`` unless allowed.

    ``num_threads``: if given, ``torch.set_num_threads(num_threads)`` for the duration of the loop
    (restored afterwards). Tiny CPU models train fastest on one thread, and on a busy machine
    several intra-op threads can be >10× slower (they wait on each other at every op).
    """
    _validate(steps, lr, weight_decay, schedule, warmup_steps, grad_clip, eval_every, eval_batch,
              target_accuracy)
    if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, int)
                                    or num_threads < 1):
        raise ValueError(f"num_threads must be None or an integer >= 1, got {num_threads!r}.")
    loss_fn = loss_fn or masked_cross_entropy
    threads_before = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        return _train_loop(model, make_batch, steps, lr, weight_decay, betas, schedule, warmup_steps,
                           grad_clip, seed, eval_every, eval_batch, target_accuracy, loss_fn, device,
                           progress, desc)
    finally:
        if num_threads is not None:
            torch.set_num_threads(threads_before)


def _train_loop(model, make_batch, steps, lr, weight_decay, betas, schedule, warmup_steps, grad_clip, seed,
                eval_every, eval_batch, target_accuracy, loss_fn, device, progress, desc) -> TrainResult:
    torch.manual_seed(seed)
    model.to(device)
    model.train()
    opt = torch.optim.AdamW(param_groups(model, weight_decay), lr=lr, betas=tuple(betas))
    result = TrainResult()
    start = time.perf_counter()
    bar = tqdm(total=steps, desc=desc, disable=not progress)
    try:
        for s in range(steps):
            cur_lr = lr_at(s, lr=lr, steps=steps, schedule=schedule, warmup_steps=warmup_steps)
            for g in opt.param_groups:
                g["lr"] = cur_lr
            inputs, labels = make_batch(s)
            inputs, labels = inputs.to(device), labels.to(device)
            loss = loss_fn(model(inputs), labels)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"{desc}: loss is {loss.item()} at step {s + 1}; lower lr "
                                         "or set grad_clip.")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            entry = {"step": s + 1, "loss": loss.item(), "lr": cur_lr}
            if grad_clip is not None:
                entry["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip))
            opt.step()
            result.steps_run = s + 1
            if s + 1 == PROBE_STEPS:  # the long-run guard: stop now if the whole budget is over an hour
                check_steps(time.perf_counter() - start, s + 1, steps, desc, device)
            if eval_batch is not None and ((s + 1) % eval_every == 0 or s + 1 == steps):
                acc = evaluate(model, *eval_batch, device=device)
                entry["accuracy"] = result.final_accuracy = acc
            result.history.append(entry)
            bar.update(1)
            postfix = {"loss": f"{entry['loss']:.3f}"}
            if result.final_accuracy is not None:
                postfix["acc"] = f"{result.final_accuracy:.3f}"
            bar.set_postfix(postfix, refresh=False)
            if target_accuracy is not None and "accuracy" in entry and entry["accuracy"] >= target_accuracy:
                result.stopped_early = s + 1 < steps
                break
    finally:
        bar.close()
        result.seconds = time.perf_counter() - start
    return result
