"""Chapter 3 (``book/03_selectivity/``): the claims of paper 003 (Huang et al., "Understanding Input Selectivity in
Mamba"). Importing this package registers them all.

Every theorem, lemma, corollary, remark with a testable statement, figure and table of the paper, in its
own numbering. Hand-set constructions are computed exactly (float64, tier ``exact``); trained-model claims
are read from the committed runner bundles (tier = the bundle's preset) and read *inconclusive*, whichever way
their numbers point, until they rest on ≥ 3 seeds with an interval (core's symmetric rule). Each claim quotes the
sentence of the paper it tests (:data:`._common.QUOTES`). Where the paper's proof needs a fix, the theorem (the
existence statement) and the printed step (``-bias``, ``-readout``, ``-Delta``) are separate claims: the
first is judged on the corrected construction, the second reads *erratum confirmed* when the printed
step fails and the corrected one is exact.

Seeds. Every trained claim takes the one path of :mod:`~mamba_recall.claims.core`: the claim's statistic is computed on
each trained model (seed) alone (:func:`~mamba_recall.claims.core.over_seeds`), and :func:`~mamba_recall.claims.core.across_seeds`
combines the seeds (mean with its 95 % Student-t interval over seeds, clipped to the number's declared range,
:data:`._common.RANGES`: an accuracy or a fraction in [0, 1]; a boolean holds when it holds on every seed),
which :func:`~mamba_recall.claims.core.judge` reads with the same burden both ways. Where the paper reports a mean over
seeds (Tab. 1, Tabs. A.1–A.4) this is its statistic. Where it reports the best of several seeds (Figs. 2, 3, A.2–A.4:
"best of 7 seeds", "best of 5 seeds") the rule reads each seed's own value, averaged with its interval: a best-of-k
value has no interval over seeds (a bootstrap of a maximum never exceeds the observed one), and a typical seed is what a
reader can expect to rerun. This was fixed before looking at any bundle; each such rule says so in its ``why``. (An
earlier version bootstrapped the best-of-seeds value under a metric name the rule did not read, so the verdicts ignored
it.)

Controls. Where a null is cheap, a trained claim's measurement carries one (:class:`~mamba_recall.claims.core.Control`),
judged by the same rule beside it: the same statistic with every accuracy at the task generator's chance level
(:func:`._common._chance_null`: ``1/|V|`` for KEEP n-TH and MQAR, whose targets are uniform over the vocabulary;
``1/(|V|+1)`` for INDUCTION HEADS, |V| tokens and the blank), or, for Fig. 1, the same model at initialisation. Claims
that a model *fails* (Tabs. A.2–A.4) carry none: a null fails too by construction, so a null cannot tell anything there;
what makes their "fails" informative is the same recipe solving the task with PE in the same bundle (Tab. 1, Tabs.
A.1–A.2).

Thresholds: "exact" means every query of the test set right (accuracy 1.0); a trained model "solves" a
task at ≥ 0.99 (the paper reports 1.00 with two decimals; 0.99 leaves one point for test-set sampling)
and "fails" it below the paper's own failing values plus rounding.

One module per section of the chapter, named after its notebook, each with its measurements and the claims that
use them (a claim's ``section`` names the notebook that checks it):

- :mod:`.approximation` (``01_approximation``): Thm. 1, Fig. A.1, Prop. 1, Cor. 1, Remark 1;
- :mod:`.keep_nth` (``02_keep_nth``): Cor. 2, Tab. 1, Tabs. A.1–A.4, Fig. 1 (its tables, statistics and claims in
  :mod:`.keep_nth_fig1`);
- :mod:`.sensitivity` (``03_sensitivity``): Lemmas 1–2, Eq. 45;
- :mod:`.mqar_constructions` (``04_mqar_constructions``): Thms. 2–4 and their printed steps, Remarks 3 and 7,
  Tabs. 2–3, Lemma 4, Figs. 2, A.2, A.3 (the trained models' claims in :mod:`.mqar_trained`), and paper 002's
  Appendix I claim on Thm. 2;
- :mod:`.induction_heads` (``05_induction_heads``): Lemma 3 and its printed Δ, Figs. 3, A.4;
- ``_common``, what several of them share: the sections, the thresholds, the KEEP n-TH run, the per-seed path and its
  null, and
  :data:`._common.QUOTES`.

The registry keeps the paper's order (§4.1 to §5.2; Remark 1, of §4.2, after the sensitivity lemmas; paper 002's
claim last). The names code outside uses are exported here: ``claims.ch3.fig1_stats``, ``claims.ch3.fig1_tables``.
"""

from __future__ import annotations

from dataclasses import replace

from mamba_recall.claims.core import quoted, register
from . import approximation, induction_heads, keep_nth, mqar_constructions, sensitivity
from ._common import QUOTES, RANGES, SOLVED
from .keep_nth import SOLVER_NULL, s4dpe_t20_missing
from .keep_nth_fig1 import FIG1_MODELS, decay_summary, fig1_stats, fig1_tables
from .mqar_trained import FIGA3_BUNDLE, check_figa3

register(
    *quoted(
        QUOTES,
        *approximation.CLAIMS,  # §4.1, App. A.2
        *keep_nth.CLAIMS,  # §4.1 (KEEP n-TH), §4.2 (Fig. 1)
        *sensitivity.CLAIMS,  # §4.2, App. B
        approximation.REMARK1,  # §4.2, Remark 1
        *mqar_constructions.CLAIMS,  # §5.1, Apps. C.1, D.3
        *induction_heads.CLAIMS,  # §5.2, Apps. C.2, D.4
        mqar_constructions.APP_I,  # paper 002's Appendix I
    )
)

__all__ = [
    "FIG1_MODELS",
    "FIGA3_BUNDLE",
    "RANGES",
    "SOLVED",
    "SOLVER_NULL",
    "check_figa3",
    "decay_summary",
    "fig1_stats",
    "fig1_tables",
    "s4dpe_t20_missing",
]
