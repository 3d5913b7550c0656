r"""The label convention of every task, and the one accuracy over labelled positions.

Bottom layer: imports nothing from the package, so that ``tasks``, ``models``, ``train`` and everything above
can use it.

Every task generator returns ``(inputs, labels)`` with ``labels = IGNORE_INDEX`` (-100, PyTorch's
``ignore_index``) except at the positions that carry a target (zoology's convention: the loss and the accuracy
are taken only where ``labels != -100``, ``compute_metrics``).

Accuracy (:func:`labelled_accuracy`) with ``m = (labels != IGNORE_INDEX)`` and ``ŷ = argmax_v logits[..., v]``::

    hit[..., b, t]   = m[..., b, t] · [ŷ[..., b, t] = labels[..., b, t]]
    per=None         Σ hit / Σ m                    over every position (a float; NaN if nothing is labelled)
    per="member"     Σ_{b,t} hit / Σ_{b,t} m         (*lead,)   e.g. (n_members,) for an ensemble; NaN if empty
    per="example"    Σ_t hit / max(1, Σ_t m)         (*lead, B) a score per sequence (0 if it has no label)

Shapes: ``logits (*lead, B, L, V)``; ``labels (B, L)`` (shared by every leading index, e.g. the members of an
ensemble fed one batch) or ``(*lead, B, L)``. :func:`labelled_counts` returns the two sums (int64) so that a
caller can pool them over mini-batches (pooled, not a mean of batch means).
"""

from __future__ import annotations

import torch

__all__ = ["IGNORE_INDEX", "labelled_accuracy", "labelled_counts"]

#: Label value for positions that carry no target (PyTorch's ``ignore_index``).
IGNORE_INDEX: int = -100

PER = (None, "member", "example")


def _check(logits: torch.Tensor, labels: torch.Tensor, per) -> None:
    if per not in PER:
        raise ValueError(f"per must be one of {PER}, got {per!r}.")
    if logits.dim() < 3 or labels.dim() < 2:
        raise ValueError(
            f"logits must be (*lead, B, L, V) and labels (B, L) or (*lead, B, L); got logits "
            f"{tuple(logits.shape)}, labels {tuple(labels.shape)}."
        )
    if labels.shape[-2:] != logits.shape[-3:-1]:
        raise ValueError(
            f"labels {tuple(labels.shape)} do not match logits {tuple(logits.shape)} in (B, L); "
            "pass the labels of the same batch."
        )


@torch.no_grad()
def labelled_counts(
    logits: torch.Tensor, labels: torch.Tensor, *, dims: int = 2, ignore_index: int = IGNORE_INDEX
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(correct, total)`` int64, summed over the last ``dims`` axes of the (broadcast) labels: ``dims=2`` gives
    ``(*lead,)`` per member, ``dims=1`` gives ``(*lead, B)`` per example. See the module docstring."""
    _check(logits, labels, None)
    if labels.dim() < logits.dim() - 1:  # shared labels (B, L) for every leading index
        labels = labels.expand(*logits.shape[:-1])
    mask = labels != ignore_index
    hit = (logits.argmax(-1) == labels) & mask
    axes = tuple(range(-dims, 0))
    return hit.sum(axes), mask.sum(axes)


@torch.no_grad()
def labelled_accuracy(
    logits: torch.Tensor, labels: torch.Tensor, *, per: str | None = None, ignore_index: int = IGNORE_INDEX
):
    """Accuracy at the labelled positions (zoology: ``(pred == target)[target != ignore_index].mean()``):
    a float (``per=None``), a float64 tensor ``(*lead,)`` (``per="member"``) or ``(*lead, B)``
    (``per="example"``). See the module docstring for the formulas and shapes."""
    _check(logits, labels, per)
    if per is None:
        correct, total = labelled_counts(logits, labels, dims=labels.dim(), ignore_index=ignore_index)
        correct, total = int(correct.sum()), int(total.sum())
        return correct / total if total else float("nan")
    if per == "member":
        correct, total = labelled_counts(logits, labels, dims=2, ignore_index=ignore_index)
        return correct.double() / total.double()
    correct, total = labelled_counts(logits, labels, dims=1, ignore_index=ignore_index)
    return correct.double() / total.clamp(min=1).double()
