"""What the training loop measures: the masked losses, the held-out accuracy (:func:`evaluate`) and the record of
a run (:class:`TrainResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..labels import IGNORE_INDEX, labelled_counts


@dataclass
class TrainResult:
    """Outcome of :func:`train` (one model or an ensemble).

    * ``history``: one dict per step ``{"step", "loss", "lr"}`` (``step`` counts steps done, 1-based), plus
      ``"accuracy"`` (held-out) on evaluated steps and ``"grad_norm"`` when ``grad_clip`` is set. For an
      ensemble ``loss``, ``accuracy`` and ``grad_norm`` are lists over the members.
    * ``final_accuracy``: the last held-out accuracy of a single model (None without ``eval_batch`` or for an
      ensemble).
    * ``accuracy``: the last held-out accuracy per member (``[final_accuracy]`` for one model; [] without
      evaluations).
    * ``best_accuracy``: the best held-out accuracy per member over the evaluations (0 where none was made).
    * ``steps_run``: optimiser steps taken. ``stopped_early``: True if the target was reached before ``steps``.
    * ``target_step``: the step at which the held-out accuracy first reached ``target_accuracy`` (None if it did
      not).
    * ``seconds``: wall time of the loop.
    * ``member_target_steps``: an ensemble with ``Stopping.freeze_reached``: per member, the step at which it
      reached the target and stopped (None where it did not: it trained ``steps_run`` steps); [] otherwise.
    """

    history: list[dict] = field(default_factory=list)
    final_accuracy: float | None = None
    accuracy: list = field(default_factory=list)
    best_accuracy: list = field(default_factory=list)
    steps_run: int = 0
    stopped_early: bool = False
    target_step: int | None = None
    seconds: float = 0.0
    member_target_steps: list = field(default_factory=list)

    def member(self, e: int) -> TrainResult:
        """Member ``e`` of an ensemble trained with ``Stopping.freeze_reached`` as the result of one model: its
        history up to the step it stopped, with its own loss, accuracy and gradient norm; ``seconds`` is the
        ensemble's (the members trained together)."""
        if not self.member_target_steps:
            raise ValueError("TrainResult.member needs an ensemble trained with Stopping(freeze_reached=True).")
        target = self.member_target_steps[e]
        stop = self.steps_run if target is None else target
        pick = ("loss", "accuracy", "grad_norm")
        history = [{k: (v[e] if k in pick else v) for k, v in h.items()} for h in self.history if h["step"] <= stop]
        accs = [h["accuracy"] for h in history if "accuracy" in h]
        return TrainResult(
            history=history,
            final_accuracy=accs[-1] if accs else None,
            accuracy=[accs[-1]] if accs else [],
            best_accuracy=[max(accs)] if accs else [],
            steps_run=stop,
            stopped_early=target is not None and (target < self.steps_run or self.stopped_early),
            target_step=target,
            seconds=self.seconds,
        )

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
