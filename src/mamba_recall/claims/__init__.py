"""Every claim of the four papers as data, judged by declared rules (see :mod:`.core`).

One package per chapter (``mamba_recall.chapters.chN_<topic>.claims``), one module per book section in it: ``ch0`` (the worked forward pass, paper 001), ``ch1``
(paper 000), ``ch2`` (paper 002), ``ch3`` (paper 003), ``ch4`` (paper 004); claim ids keep the papers' numbering
("002/Fig6c"), and ``ch5`` (the book's own hypotheses, ids ``book/…``). Importing this package registers them all.
Notebooks call ``check("002/Fig6c", ...)`` and display what it returns.
"""

from ..runners import chapter_modules as _chapter_modules
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
    claim_evidence,
    claims_of,
    conds,
    get,
    judge,
    load_verdicts,
    measure_claim,
    measurement_from_record,
    measurement_record,
    not_run_verdict,
    record_verdict,
    register,
)

# importing each chapter's claims package (chapters/chN_<topic>/claims) registers its claims; the packages are found by
# the one scan of the chapter packages (runners.chapter_modules, at run time), so none is named here and nothing imports
# upwards. The registry's order is declared (core.REGISTRY_ORDER), not the import order.
_chapter_modules("claims")

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
    "claim_evidence",
    "claims_of",
    "conds",
    "get",
    "judge",
    "load_verdicts",
    "measure_claim",
    "measurement_from_record",
    "measurement_record",
    "not_run_verdict",
    "record_verdict",
    "register",
]
