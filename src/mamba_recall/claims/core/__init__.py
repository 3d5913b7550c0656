"""Claims as data: each claim of a paper, its declared verdict rule, and the verdict a measurement earns.

A :class:`Claim` is declared once, in ``claims/pNNN.py`` (one module per paper), with

* an id in the paper's own numbering (``"002/Fig6c"``, ``"000/Lemma1-key"``),
* the claim in one sentence and its exact place in the paper (section, equation, figure, table),
* the paper's numbers **as printed** (``printed``; "no number given" when the paper has none),
* the measurement: a function from committed bundles, models or live results to our numbers
  (a :class:`Measurement`, with intervals over seeds where there are seeds),
* the verdict rule as data (a :class:`Rule` of :class:`Cond` thresholds) with one line of reasoning,
  written before looking at our numbers,
* the section of the book that checks it (or ``not_run``: what it would take, command and cost).

Notebooks call :func:`check` (measure → judge → record → display); they hold no verdict logic,
thresholds or paper numbers. :func:`judge` is the only place a status is decided, and it judges both
directions with the same burden (:func:`decide`): a condition **holds** when it holds over its number's
whole 95 % interval (over seeds), **fails** when it fails over the whole interval, and is **undecided**
when the interval straddles its threshold (a boolean over seeds: every seed holds / no seed holds / seeds
on both sides; a NaN number: undecided). A number without an interval is its own point.

1. a failed ``testable`` condition (at its point value) → **not testable here** (the setup could not show
   the effect); a rule with ``premise_over_interval`` reads its testable conditions as the statement's are read:
   failing over the whole interval → **not testable here**, undecided → **inconclusive** (a conditional sentence is
   judged in neither direction while its premise is undecided);
2. a trained-model claim (``Rule.trained``) with fewer than three seeds, or with no interval and no
   per-seed values → **inconclusive**, whichever way its numbers point (the reason says which way the
   means point and what would settle it);
3. every ``reproduced`` condition holds → **reproduced**; any undecided (none failing) → **inconclusive**;
4. the printed statement fails (a condition fails over its whole interval) and every ``erratum`` condition
   (the corrected statement) holds → **erratum confirmed** (undecided → **inconclusive**);
5. every ``partially`` condition holds (when the rule has any) → **partially** (undecided →
   **inconclusive**);
6. otherwise → **not reproduced**: a condition of the printed statement fails over its whole interval.

A claim with no measurement yet, or whose measurement raises :class:`NotRun`, reads **not run**.
Every rule is tested to flip when a measurement crosses each of its thresholds (``tests/claims/test_claims.py``),
so no rule can pass whatever the numbers are; a measurement whose interval straddles a threshold reads
inconclusive from either side.

The code is split by responsibility; import every name from here (``from mamba_recall.claims.core import judge``):
``_types`` holds the data and the condition language (:class:`Cond`, :class:`Rule`, :class:`Evidence`,
:class:`Measurement`, :class:`Control`, :class:`Claim`, :class:`Verdict`), the printing helpers and the registry;
``_judge`` the judging (:func:`decide`, :func:`judge`, :func:`audit_controls`, :func:`across_seeds`,
:func:`over_seeds`, :func:`check`, :func:`check_seeds`, :func:`check_stored`); ``_records`` the records
(:func:`measurement_record`, :func:`measurement_from_record`, :func:`not_run_verdict`, :func:`record_verdict`,
:func:`load_verdicts`).
"""

from __future__ import annotations

from ._judge import (
    DECIDED,
    NULL_PASSES,
    across_seeds,
    audit_controls,
    audit_ranges,
    declared_ranges,
    check,
    check_inputs,
    claim_evidence,
    check_seeds,
    check_stored,
    decide,
    decide_all,
    inputs_of,
    interval_crossings,
    judge,
    measure_claim,
    over_seeds,
)
from ._tex import tex_to_unicode
from ._records import load_verdicts, measurement_from_record, measurement_record, not_run_verdict, record_verdict
from ._types import (
    MARK,
    MIN_SEEDS,
    OPS,
    PAPERS,
    REGISTRY,
    STATUSES,
    TIER_NOTE,
    TIERS,
    Claim,
    ClaimError,
    Cond,
    Control,
    Evidence,
    Measurement,
    NotRun,
    Revision,
    Rule,
    Verdict,
    badge,
    below,
    claims_of,
    conds,
    fmt,
    get,
    pass_fail,
    quoted,
    register,
    status_class,
)

__all__ = [
    "MARK",
    "MIN_SEEDS",
    "OPS",
    "PAPERS",
    "REGISTRY",
    "tex_to_unicode",
    "STATUSES",
    "TIER_NOTE",
    "TIERS",
    "DECIDED",
    "NULL_PASSES",
    "Claim",
    "ClaimError",
    "Cond",
    "Control",
    "Evidence",
    "Measurement",
    "NotRun",
    "Revision",
    "Rule",
    "Verdict",
    "across_seeds",
    "over_seeds",
    "audit_controls",
    "audit_ranges",
    "declared_ranges",
    "badge",
    "below",
    "check",
    "check_inputs",
    "claim_evidence",
    "check_seeds",
    "check_stored",
    "claims_of",
    "conds",
    "decide",
    "decide_all",
    "fmt",
    "get",
    "inputs_of",
    "interval_crossings",
    "judge",
    "measure_claim",
    "load_verdicts",
    "measurement_from_record",
    "measurement_record",
    "not_run_verdict",
    "pass_fail",
    "record_verdict",
    "quoted",
    "register",
    "status_class",
]
