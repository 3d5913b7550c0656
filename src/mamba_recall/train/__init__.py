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
    code     = cosine with warmup and hold allowed to exceed S: the authors' recipe for paper 002's D–N / N–M grids
               (warmup 100 → hold 400 → cosine to 0; Chapter 2's ``RECIPES["code"]``)
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
    stop      when *every* member reaches ``target_accuracy``; ``best_accuracy`` is per member; with
              ``Stopping(freeze_reached=True)`` each member stops alone, at the first evaluation at which it
              reaches the target (its parameters kept from then on; ``TrainResult.member(e)`` is its result)

With shared labels only the labelled positions are unembedded (``model.hidden`` → ``model.unembed`` on the
N_f query positions instead of all L: the (·, V) unembedding is the dominant cost). Chapter 2's
:func:`~mamba_recall.chapters.ch2_hashing_scaling.training.ensemble.train_ensemble` runs its named recipes through
this loop.

The package's parts (the names are all exported here): ``_recipe`` (:class:`Recipe`, :func:`lr_at`,
:class:`Stopping`), ``_metrics`` (the masked losses, :func:`evaluate`, :class:`TrainResult`) and ``_loop``
(:func:`train`, :func:`param_groups`, :func:`dataset_batches`). A chapter's own models,
recipes and checkpoints are in its ``training`` package (``mamba_recall.chapters.chN_<topic>.training``)."""

from __future__ import annotations

from ..labels import IGNORE_INDEX, labelled_accuracy
from ._loop import dataset_batches, param_groups, train
from ._metrics import TrainResult, evaluate, masked_ce_per_member, masked_cross_entropy
from ._recipe import SCHEDULES, TAB9_DECAY_STEPS, Recipe, Stopping, lr_at

__all__ = [
    "IGNORE_INDEX",
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
]
