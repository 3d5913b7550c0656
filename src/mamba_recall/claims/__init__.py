"""Every claim of the four papers as data, judged by declared rules (see :mod:`.core`).

One module per paper: ``p001`` (Chapter 0, the worked forward pass), ``p000`` (Chapter 1), ``p002``
(Chapter 2), ``p003`` (Chapter 3), ``p004`` (Chapter 4). Importing this package registers them all.
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
# importing each chapter's claims registers them (in this order, which the registry keeps)
from . import p000  # noqa: E402,F401  Chapter 1
from . import p001  # noqa: E402,F401  Chapter 0
from . import p002  # noqa: E402,F401  Chapter 2
from . import p003  # noqa: E402,F401  Chapter 3
from . import p004  # noqa: E402,F401  Chapter 4

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
