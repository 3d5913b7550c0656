"""The training loop itself: :func:`train` (one model or an ensemble, the formulas in the docstring of
:mod:`mamba_recall.train`), the AdamW parameter groups and
:func:`dataset_batches` (a ``make_batch`` over a fixed data set)."""

from __future__ import annotations

import itertools
import time
from typing import Callable

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from ..labels import IGNORE_INDEX
from ..longrun import PROBE_STEPS, check_steps
from ._metrics import TrainResult, evaluate, masked_ce_per_member, masked_cross_entropy
from ._recipe import Recipe, Stopping, _is_int, _past_target_error, lr_at


def param_groups(model, weight_decay: float) -> list[dict]:
    """AdamW groups: decay for ≥2-D parameters not marked ``_no_weight_decay``, none for the rest."""
    decay, no_decay = [], []
    for p in model.parameters():  # deduplicates tied parameters
        if not p.requires_grad:
            continue
        (no_decay if p.dim() < 2 or getattr(p, "_no_weight_decay", False) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


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
    _check_run(model, steps, recipe, stop, eval_batch, per_member, loss_fn, num_threads)
    if not per_member and loss_fn is None:
        loss_fn = _default_loss(recipe.label_smoothing)
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


def _check_run(model, steps, recipe, stop, eval_batch, per_member, loss_fn, num_threads) -> None:
    """The checks of :func:`train`'s arguments, in its order: a ``TypeError`` or ``ValueError`` that names the fix."""
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
    if stop.freeze_reached and not per_member:
        raise ValueError("Stopping(freeze_reached=True) is for an ensemble (per_member=True); one model just stops.")
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


def _default_loss(label_smoothing: float):
    """One model's default ``loss_fn``: :func:`masked_cross_entropy`, or the same with ``label_smoothing``."""
    return (
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
    params = None  # the members' parameters, for the per-member clipping
    if per_member:
        params = list(model.parameters())
        opt = torch.optim.AdamW(params, lr=recipe.lr, betas=recipe.betas, weight_decay=recipe.weight_decay)
        best = torch.zeros(model.n_members, dtype=torch.float64)
    else:
        opt = torch.optim.AdamW(param_groups(model, recipe.weight_decay), lr=recipe.lr, betas=recipe.betas)
        best = None
    result = TrainResult()
    freeze = _MemberFreeze(params, model.n_members, stop.target_accuracy) if stop.freeze_reached else None
    stale = 0  # evaluations since the best accuracy last grew by more than min_delta (patience)
    start = time.perf_counter()
    bar = tqdm(total=steps, desc=desc, disable=not progress)
    limit = steps  # the last step; past the target (steps_past_target): the target's step + steps_past_target
    try:
        for s in itertools.count():
            if s >= limit:
                break
            entry = _step(model, opt, params, make_batch, s, steps, recipe, per_member, loss_fn, device, desc)
            if freeze is not None:
                freeze.restore()
            result.steps_run = s + 1
            if s + 1 == PROBE_STEPS:  # the long-run guard: stop now if the whole budget is over an hour
                check_steps(time.perf_counter() - start, s + 1, steps, desc, device)
            reached = False
            if eval_batch is not None and ((s + 1) % stop.eval_every == 0 or s + 1 == limit):
                reached, best, stale = _evaluate_step(
                    model, eval_batch, entry, result, best, stale, stop, per_member, device
                )
                if freeze is not None:
                    reached = freeze.update(entry["accuracy"], s + 1)
            result.history.append(entry)
            bar.update(1)
            if progress:
                _show_progress(bar, entry, result, per_member)
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
        if freeze is not None:
            result.member_target_steps = list(freeze.steps)
    elif best is not None:
        result.best_accuracy = [best]
    return result


class _MemberFreeze:
    """``Stopping.freeze_reached``: each member stops at the first evaluation at which its accuracy reaches
    ``target`` (as it would alone); its parameters are kept as they were then (copied, and put back after every
    later step: the optimiser's update of a stopped member is undone, whatever its state)."""

    def __init__(self, params, n_members: int, target: float):
        self.params, self.target = params, target
        self.frozen = torch.zeros(n_members, dtype=torch.bool)
        self.steps: list[int | None] = [None] * n_members
        self.kept = [p.detach().clone() for p in params]

    @torch.no_grad()
    def update(self, accuracy: list[float], step: int) -> bool:
        """Freeze the members that reach the target at this evaluation (after ``step`` steps); True once all have."""
        new = (torch.tensor(accuracy) >= self.target) & ~self.frozen
        if new.any():
            for p, kept in zip(self.params, self.kept):
                kept[new.to(p.device)] = p[new.to(p.device)]
            for e in new.nonzero().flatten().tolist():
                self.steps[e] = step
            self.frozen |= new
        return bool(self.frozen.all())

    @torch.no_grad()
    def restore(self) -> None:
        if self.frozen.any():
            for p, kept in zip(self.params, self.kept):
                mask = self.frozen.to(p.device)
                p[mask] = kept[mask]


def _step(model, opt, params, make_batch, s, steps, recipe: Recipe, per_member, loss_fn, device, desc) -> dict:
    """One AdamW step at 0-based step ``s`` (its lr, batch, loss, clipping, masks) → its history entry
    ``{"step", "loss", "lr"}`` (+ ``"grad_norm"`` with clipping)."""
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
    return entry


def _evaluate_step(
    model, eval_batch, entry: dict, result: TrainResult, best, stale: int, stop: Stopping, per_member, device
):
    """The held-out accuracy after a step, into ``entry`` and ``result`` → ``(reached, best, stale)``: whether to
    stop (the target, or for one model a plateau of ``stop.patience`` evaluations), the best accuracy so far (per
    member: a tensor; one model: a float or None) and the evaluations since it last grew by more than
    ``stop.min_delta``."""
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
    return reached, best, stale


def _show_progress(bar, entry: dict, result: TrainResult, per_member) -> None:
    """The progress bar's postfix: the step's loss (mean over members) and the last (lowest member's) accuracy."""
    show = entry["loss"] if not per_member else sum(entry["loss"]) / len(entry["loss"])
    postfix = {"loss": f"{show:.3f}"}
    if result.accuracy:
        postfix["acc"] = f"{min(result.accuracy):.3f}"
    bar.set_postfix(postfix, refresh=False)
