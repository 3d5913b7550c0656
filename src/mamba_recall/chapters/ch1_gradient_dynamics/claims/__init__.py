"""Chapter 1 (``book/01_gradient_dynamics/``): the claims of paper 000 (Le Corre, Huang, Bietti: "How does Mamba
Perform Associative Recall? A Mechanistic Study").

One module per section of the book, named after the section's notebook; each holds its measurement functions and the
:class:`~mamba_recall.claims.core.Claim` declarations that use them:

- :mod:`.task_and_model` (``01_task_and_model``): the task and the simplified model (§2, App. A–B: Algorithm 1,
  Eq. (1), App. B's input term), and §2.2's random-initialisation remark (exact: random features' Gram matrix);
- :mod:`.mechanism_one_key` (``02_mechanism_one_key``): the |K| = 1 mechanism read off a trained model (§3, Fig. 4,
  Fig. 8, App. C);
- :mod:`.many_keys_and_unembedding` (``03_many_keys_and_unembedding``): the |K| > 1 spikes (Figs. 5–6) and the
  learned unembedding (App. B, Fig. 7);
- :mod:`.gradient_lemma` (``04_gradient_lemma``): Lemma 1 and its remarks (§4, App. D);
- :mod:`.table1` (``05_table1``): Table 1 (App. A);
- :mod:`.seeds`: the verdicts over the cpu-hours seeds (:func:`check_over_seeds`, the runner's per-seed measurement);
- :mod:`._common`: what several sections share (the declared thresholds and the notebooks' tolerances, checkpoint
  evidence, the untrained null, the chance level, the cpu-hours seeds bundle).

Importing this package registers every claim of Chapter 1, in the registry's order (the sections' in turn, then
§2.2's remark), and re-exports the names that code outside uses (``claims.ch1.load_seeds``, ...).

Evidence. The |K| = 1 mechanism claims are measured on the committed paper-size model
(``results/checkpoints/ch1_k1_paper.pt``: |V| = 8, n_ε = 3, T = 256, identity targets, one seed, trained on
a CPU), so their tier is ``paper`` with 1 seed; Figs. 5–6 on the committed ``ci`` checkpoints (T = 64);
Table 1 on the committed bundle of the notebook's preset; Lemma 1 is exact (enumeration and closed form,
no training). A trained-model claim needs three seeds and an interval to read *reproduced*
(:mod:`mamba_recall.claims.core`); these have one seed. The stronger evidence, when committed, is the ``cpu-hours`` run of
:mod:`mamba_recall.chapters.ch1_gradient_dynamics.runners.grid` (the same claims measured per seed on 3 seeds at T = 256 with
identity targets, and Table 1 at T = 128 with 3 seeds): the notebooks judge over its seeds
(:func:`check_over_seeds`, :func:`check_table1`, loaders over core's one path ``check_stored`` → ``across_seeds`` →
``judge``; the |K| = 1 claims are measured afresh on the committed seed checkpoints) and fall back to the one-seed
evidence without it, which core reads *inconclusive* for a trained claim.

Controls. The |K| = 1 claims read off a trained model carry the untrained model of the same seed as a null
(:func:`~._common.with_untrained_null`), Fig. 7 its W_o at initialisation, Sec3-accuracy and Sec4-softplus the task's chance
level; Sec3-recency (an intervention) carries a positive control (the erase at writes removed). Without a control:
Figs. 5–6 (stored records of the k2 / k4 seeds), Fig7-full (its initial readout is shown, not judged), Table 1 (a
chance-level null is failed by every "solves" rule and passes every "struggles" rule: the rows are each other's
controls).

Rules restate the paper's words with one declared reading each: a "spike" stands at least 1.5× above the
level a noise pair gives the same quantity; "close to zero" is at most a tenth of the key-pair level;
"|V| ≫ T" is |V| ≥ 16 T; one step "succeeds" at ≥ 90 % accuracy (at |V| = 16 T² the chance that no value
repeats, exp(−(T−1)(T−2)/(2(|V|−1))), is above 0.96, so a correct |V| ≫ T² statement clears it).
"""

from __future__ import annotations

from mamba_recall.claims.core import register
from . import gradient_lemma, many_keys_and_unembedding, mechanism_one_key, table1, task_and_model
from ._common import (
    RANGES,
    EXACT,
    FLOAT32_AGREE,
    FLOAT64_AGREE,
    MC_COSINE,
    MC_Z,
    MUCH_LARGER,
    NEAR_ZERO,
    SEEDS_COMMAND,
    SEEDS_PRESET,
    SOLVES,
    SPIKE,
    load_seeds,
    seeds_claims_view,
)
from .many_keys_and_unembedding import FULL_MAMBA_COMMAND, FULL_ONEHOT_COMMAND, measure_fig7
from .seeds import K1_CLAIMS, check_over_seeds
from .table1 import MATCHED_CLAIM, check_table1

register(
    *task_and_model.CLAIMS,
    *mechanism_one_key.CLAIMS,
    *many_keys_and_unembedding.CLAIMS,
    *gradient_lemma.CLAIMS,
    *table1.CLAIMS,
    task_and_model.RANDOM_INIT,
)

__all__ = [
    "RANGES",
    "EXACT",
    "FLOAT32_AGREE",
    "FLOAT64_AGREE",
    "FULL_MAMBA_COMMAND",
    "FULL_ONEHOT_COMMAND",
    "K1_CLAIMS",
    "MATCHED_CLAIM",
    "MC_COSINE",
    "MC_Z",
    "MUCH_LARGER",
    "NEAR_ZERO",
    "SEEDS_COMMAND",
    "SEEDS_PRESET",
    "SOLVES",
    "SPIKE",
    "check_over_seeds",
    "check_table1",
    "load_seeds",
    "measure_fig7",
    "seeds_claims_view",
]
