"""Every claim of the four papers as data, judged by declared rules (see :mod:`.core`).

One package per chapter (``mamba_recall.chapters.chN_<topic>.claims``), one module per book section in it: ``ch0`` (the worked forward pass, paper 001), ``ch1``
(paper 000), ``ch2`` (paper 002), ``ch3`` (paper 003), ``ch4`` (paper 004); claim ids keep the papers' numbering
("002/Fig6c"), and ``ch5`` (the book's own hypotheses, ids ``book/…``). Importing this package registers them all.
Notebooks call ``check("002/Fig6c", ...)`` and display what it returns.
"""

from .core import (
    MARK,
    MIN_SEEDS,
    REGISTRY,
    STATUSES,
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
    across_seeds,
    check,
    check_seeds,
    check_stored,
    claims_of,
    conds,
    get,
    judge,
    load_verdicts,
    measurement_from_record,
    measurement_record,
    not_run_verdict,
    record_verdict,
    register,
)

# importing each chapter's claims (chapters/chN_<topic>/claims) registers them, in this order, which the registry
# keeps; the one import of the chapters' claims from below them (tests/base/test_layering.py allows it)
from mamba_recall.chapters.ch1_gradient_dynamics import claims as ch1  # noqa: E402,F401  Chapter 1
from mamba_recall.chapters.ch0_selective_scan import claims as ch0  # noqa: E402,F401  Chapter 0
from mamba_recall.chapters.ch2_hashing_scaling import claims as ch2  # noqa: E402,F401  Chapter 2
from mamba_recall.chapters.ch3_selectivity import claims as ch3  # noqa: E402,F401  Chapter 3
from mamba_recall.chapters.ch4_primacy_recency import claims as ch4  # noqa: E402,F401  Chapter 4
from mamba_recall.chapters.ch5_synthesis import claims as ch5  # noqa: E402,F401  Chapter 5 (the book's hypotheses)

__all__ = [
    "MARK",
    "MIN_SEEDS",
    "REGISTRY",
    "STATUSES",
    "TIERS",
    "Claim",
    "ClaimError",
    "Cond",
    "Evidence",
    "Control",
    "Measurement",
    "NotRun",
    "Revision",
    "Rule",
    "Verdict",
    "across_seeds",
    "check",
    "check_seeds",
    "check_stored",
    "claims_of",
    "conds",
    "get",
    "judge",
    "load_verdicts",
    "measurement_from_record",
    "measurement_record",
    "not_run_verdict",
    "record_verdict",
    "register",
]
