r"""Interventions and statistics of paper 004: Ā ablations, U(0,1) state init, recall by position.

Ablation (paper §4.2, App. D): for targeted (layer ℓ, channel i) set ``Ā_t^{(ℓ,i)} ← 0`` (all N states) at
chosen 0-based token indices ``t``; then ``h_t = B̄_t x_t`` there, i.e. the channel forgets everything
before ``t``. "First triplet" = indices 1–4 (``r_1 o_1 . s_2``); "all" = every step (the channel
becomes memoryless). Implemented with the ``abar_hook`` of :class:`~mamba_recall.models.mamba.Mamba`
(a bool mask (1, E, L) per layer), so it works unchanged on any mamba_ssm-named checkpoint. On a
Mamba-2 model (:mod:`mamba_recall.models.mamba2`) the units are *heads*: the mask is (1, H, L), the
width is the mixer's ``ablation_units`` and "channels" below means head indices.

State ablation (Mamba-1 only; extends the above to single states): for targeted (layer ℓ, channel i,
state n) set ``Ā_{t,i,n} ← 0`` at the chosen steps, so ``h_{t,i,n} = Δ_t B_{t,n} x_{t,i}`` there and the
other N − 1 states of channel i keep their memory (a (1, E, L, N) mask). A target is then a (k, 2) list
of (channel, state) pairs or an (E, N) bool mask per layer (:func:`state_targets_mask`); ablating all N
states of a channel equals ablating the channel bit for bit (tests/analysis/test_slow_states.py).

Recall by position uses **prefix-state evaluation**: each context is run once
(with its ablation / initial state), the per-layer :class:`LayerState` (conv + SSM) is kept, and
every query ``s_k r_k`` (k = 1..L) continues from it — exact for a recurrent model (tested against
the full forward) and L× cheaper, with a paired design across positions.

Statistics, all from :mod:`scipy.stats` (tests/analysis/test_stats.py checks them against textbook values and
against the numbers of the committed bundles): 95 % Wilson interval (:func:`wilson`), percentile paired
bootstrap over prompts with 2,000 resamples (:func:`paired_bootstrap`), McNemar's exact test for paired
binary outcomes (:func:`mcnemar_p`), Welch's t-test (:func:`welch_test`), Spearman's ρ (:func:`spearman`)
and Pearson's χ² goodness of fit (:func:`chi2_uniform_p`).

The code is split by responsibility; import every name from here
(``from mamba_recall.analysis import interventions as iv``):

* ``_ablation``: the Ā ablation (:func:`ablate`, :func:`ablation_steps`, :func:`first_triplet_steps`,
  :func:`state_targets_mask`), :func:`labelled_scores` under it, and the random controls (:func:`random_channels`,
  :func:`random_states`);
* ``_recall``: :func:`uniform_init_states`, :func:`recall_by_position` and the state-ablation comparison
  (:func:`state_ablation_effects`, :func:`first_position_drops`);
* ``_stats``: the statistics (:func:`wilson`, :func:`summary`, :func:`paired_bootstrap`, :func:`mcnemar_p`,
  :func:`welch_test`, :func:`spearman`, :func:`chi2_uniform_p`);
* ``_mamba_ssm``: :func:`load_mamba_ssm_checkpoint`;
* ``_held_at_one``: paper 000's forgetting factor held at 1 (:func:`forgetting_held_at_one`, on the |K| = 1 model).

A test that patches a function patches it in the part that looks it up (``recall_by_position`` and ``ablate`` are
called inside ``_recall``): the names here are the same objects, bound once at import.
"""

from __future__ import annotations

from ._ablation import (
    ablate,
    ablation_steps,
    first_triplet_steps,
    is_state_target,
    labelled_scores,
    random_channels,
    random_states,
    state_targets_mask,
)
from ._held_at_one import FixedLogits, forgetting_held_at_one, held_scan, k1_recurrence
from ._mamba_ssm import load_mamba_ssm_checkpoint
from ._recall import first_position_drops, recall_by_position, state_ablation_effects, uniform_init_states
from ._stats import chi2_uniform_p, mcnemar_p, paired_bootstrap, spearman, summary, welch_test, wilson

__all__ = [
    "ablate",
    "ablation_steps",
    "chi2_uniform_p",
    "first_position_drops",
    "first_triplet_steps",
    "is_state_target",
    "labelled_scores",
    "load_mamba_ssm_checkpoint",
    "mcnemar_p",
    "paired_bootstrap",
    "random_channels",
    "random_states",
    "recall_by_position",
    "spearman",
    "state_ablation_effects",
    "state_targets_mask",
    "summary",
    "uniform_init_states",
    "welch_test",
    "wilson",
]
