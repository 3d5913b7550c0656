"""Chapter 4 (``book/04_primacy_recency/``): the claims of paper 004 ("Towards Understanding Primacy and Recency
Effects in Mamba: A Mechanistic Perspective").

One module per section of the book, named after the section's notebook; each holds its measurement functions and the
:class:`~mamba_recall.claims.core.Claim` declarations that use them, with the paper's sentence each tests:

- :mod:`.serial_recall` (``01_serial_recall``): the U-shaped serial-position curve (§4.1, Figs. 1–2) and recency
  (§4.4);
- :mod:`.long_term_channels` (``02_long_term_channels``): the long-term channels and their ablation (§4.2, Figs. 3–4;
  App. C–E, Figs. 8–12);
- :mod:`.periodicity` (``03_periodicity``): periodic inputs and Δ (§4.3, Figs. 6–7; §1's stated direction);
- :mod:`.recency_state_init` (``04_recency_state_init``): distractors (Fig. 5b) and a non-zero initial state
  (Fig. 5a, Fig. 14);
- :mod:`.transfer` (``05_transfer``): Table 1, the channels ablated on other long-context tasks;
- :mod:`.mamba2_heads` (``06_mamba2_heads``): Mamba 2 (App. F, Fig. 13), and :data:`MAMBA2_CLAIMS`;
- :mod:`.model_comparison` (``07_model_comparison``): no claim of its own; the verdicts over the edge family's seeds
  that every section's notebook reads (:func:`check_family`) and §4.7's claim × recipe table (:func:`family_table`);
- :mod:`._common`: what several sections share (the decision rules' thresholds, the evidence of a checkpoint and its
  convergence gate, the U-shape rule, the untrained null, the S-model setting every claim is registered with).

Importing this package registers every claim of Chapter 4, in the registry's order, each with its quote and setting
and marked an analogue; it re-exports the names that code outside uses (``claims.ch4.check_family``, ...).

The paper probes pretrained Falcon Mamba 7B, Mamba 1.4B and a Mamba 2 (and LongBench for its Table 1); none
can be had here, so every claim is measured on the chapter's S-models — small Mamba models trained from
scratch on the paper's structured recall task (``results/checkpoints/ch4_*.pt``). Every claim about them is a
trained-model claim (``Rule.trained``): one training run per model, so at best *partially* until three seeds
are evaluated.

**The ceiling.** A serial-position effect can only be seen where recall is imperfect. The committed
``s_small`` recalls every position at L = 8 (middle third ≥ 0.95) and is below acc(1) = 0.5 at L ≥ 16, so a
claim about *removing* primacy or *raising* the middle cannot show there: those rules carry ``testable``
conditions measured on the same data (the baseline middle third at most :data:`CEILING`, the first position
recalled in at least half of the contexts) and read **not testable here** when they fail. The thresholds of
the rules (0.10 for a U arm, 0.15 and 2× random for a causal drop, p < 0.01 for clustering, a 10 % effect size
for Δ shifts) are those of the chapter's decision rules written before the models were trained. Where a rule
departs from those earlier checks (a regression over all sequences instead of a rank correlation over four
means, a χ² test instead of a layer share that two units pass by chance, ceiling cells left out, no
monotonicity asked of a sweep sitting at the floor), its ``why`` says so.

Measurement functions take what the notebooks compute (recall arrays, channel statistics, Δ records) plus
``ctx`` (the notebook context: preset, device) and ``side`` (the checkpoint's sidecar: its path and the
preset it was trained with), and return a :class:`~mamba_recall.claims.core.Measurement`.
:mod:`mamba_recall.chapters.ch4_primacy_recency.runners.model_checks` calls the same functions on other checkpoints (§4.7).
"""

from __future__ import annotations

from mamba_recall.claims.core import register
from . import long_term_channels, mamba2_heads, periodicity, recency_state_init, serial_recall, transfer
from ._common import (
    metric_range,
    CAUSAL_DROP,
    CEILING,
    CLUSTER_P,
    EFFECT,
    FIRST_MIN,
    GATE_NOT_RUN,
    LATER_DROP,
    NULL_UNTRAINED,
    RANDOM_FACTOR,
    SPARSE,
    U_ARM,
)
from .long_term_channels import (
    measure_all_steps,
    measure_first_triplet,
    measure_grid_counts,
    measure_lengths,
    measure_sparsity,
)
from .mamba2_heads import MAMBA2_CLAIMS, layer_spread_p, measure_head_ablation, measure_heads
from .model_comparison import EDGE_CHECKS, check_family, family_table, stored_measurement
from .periodicity import measure_kernel, measure_layer_delta, measure_period_delta, period_trend
from .recency_state_init import measure_distractors, measure_init_change, measure_state_init
from .serial_recall import measure_recency, measure_relations, measure_ushape
from .transfer import EDGE_MIX_BUNDLE, TRANSFER_NULL, check_transfer_family, measure_transfer

# the sections' claims in the registry's order (§4.4's distractor and state claims were declared before §4.3's)
register(
    *serial_recall.CLAIMS,
    *long_term_channels.CLAIMS,
    *recency_state_init.CLAIMS,
    *periodicity.CLAIMS,
    *transfer.CLAIMS,
    *mamba2_heads.CLAIMS,
)

__all__ = [
    "metric_range",
    "CAUSAL_DROP",
    "CEILING",
    "CLUSTER_P",
    "EDGE_CHECKS",
    "EFFECT",
    "FIRST_MIN",
    "GATE_NOT_RUN",
    "LATER_DROP",
    "MAMBA2_CLAIMS",
    "NULL_UNTRAINED",
    "RANDOM_FACTOR",
    "SPARSE",
    "TRANSFER_NULL",
    "U_ARM",
    "check_family",
    "family_table",
    "layer_spread_p",
    "measure_all_steps",
    "measure_distractors",
    "measure_first_triplet",
    "measure_grid_counts",
    "measure_head_ablation",
    "measure_heads",
    "measure_init_change",
    "measure_kernel",
    "measure_layer_delta",
    "measure_lengths",
    "measure_period_delta",
    "measure_recency",
    "measure_relations",
    "measure_sparsity",
    "measure_state_init",
    "measure_transfer",
    "check_transfer_family",
    "EDGE_MIX_BUNDLE",
    "measure_ushape",
    "period_trend",
    "stored_measurement",
]
