"""Chapter 2 (``book/02_hashing_scaling/``): the claims of paper 002, "On the Recall Scaling Laws in Mamba: A
Theoretical and Mechanistic Study via Hashing" — the hashing circuit (§3.1, Thms 1–2), its mechanistic reading
(§3.2, Figs. 2–5, 9, App. C–D, Tab. 10), the scaling laws (§4, Lemma 1, Thm 3, Remarks 1–2), their tests (§5,
Figs. 6–8, 12–15) and the repetition variants (App. G, Figs. 10–11).

One module per book section, named after its notebook; in each, a claim's measurement sits above its declaration:

* :mod:`.circuit` — 2.1, ``01_circuit``: Thm 1, Fig. 6(b) (the designed circuit), Lemma 1;
* :mod:`.theory` — 2.2, ``02_theory``: Thm 2, Eq. 15, Remark 2, Thm 3's V_max, Remark 1;
* :mod:`.mechanism` — 2.3, ``03_mechanism``: Eq. 10, Figs. 2–5;
* :mod:`.scaling` — 2.4, ``04_scaling``: Fig. 6 (a–d), Fig. 12, Fig. 7, Tab. 10, App. D;
* :mod:`.scaling_repetition` — 2.4, ``04_scaling``, App. G: Figs. 10–11, Remarks 3 and 5 (apart from
  :mod:`.scaling` for size);
* :mod:`.multihead` — 2.5, ``05_multihead``: Thm 5, Fig. 8, Figs. 14–15;
* ``_common`` — what several sections share: the constants below, the standard errors, the evidence and
  chance-level helpers, the strongest committed evidence read seed by seed, and :data:`QUOTES`, the paper's
  sentence each claim tests.

Importing this package registers every claim of the chapter, with its quote, in :data:`ORDER` (the registry's
order since the claims were first declared in one module).

Conventions of the rules (declared before looking at our numbers):

* **perfect recall** means accuracy ≥ 0.99, i.e. a failure probability δ ≤ 0.01 per query (the δ the
  chapter's capacity code uses for "perfect");
* **near-perfect** (the paper's word for the regions of Fig. 6) means accuracy ≥ 0.9;
* **equal within noise** means within three standard errors of an accuracy measured on n queries, with the
  worst-case binomial standard error 0.5/√n (√2 times that for a difference of two accuracies). Rules read such
  gaps in units of this standard error, so they hold the same meaning at every preset;
* a claim about trained models has ``trained=True``: it reads *reproduced* only with ≥ 3 seeds and an interval.

The paper's figures carry no numbers in its text, so ``printed`` quotes what the text says about them.
"""

from __future__ import annotations

from mamba_recall.claims.core import ClaimError, quoted, register
from . import circuit, mechanism, multihead, scaling, scaling_repetition, theory
from ._common import (
    RANGES,
    FIG_PARTS,
    NEAR_PERFECT,
    PERFECT,
    QUOTES,
    Z,
    chance_level,
    is_run_store_bundle,
    se,
    se_diff,
    strongest_fig_bundle,
)
from .multihead import FIG15_COMMAND, spearman_p
from .scaling import TAB10, measure_fig6ab
from .scaling_repetition import guess_level, remark5_prediction

#: The registry's order of the chapter's claims (the paper's order), with the module that declares each.
ORDER = (
    "002/Thm1",  # circuit
    "002/Fig6b",  # circuit
    "002/Thm2",  # theory
    "002/Lemma1",  # circuit
    "002/Eq15",  # theory
    "002/Remark2",  # theory
    "002/Thm3-Vmax",  # theory
    "002/Remark1",  # theory
    "002/AppD-phase-transition",  # scaling
    "002/AppD-L-independence",  # scaling
    "002/Eq10",  # mechanism
    "002/Fig2",  # mechanism
    "002/Fig2-selectivity",  # mechanism
    "002/Fig3",  # mechanism
    "002/Fig4",  # mechanism
    "002/Fig5",  # mechanism
    "002/Fig6ab",  # scaling
    "002/Fig6bc",  # scaling
    "002/Fig6c",  # scaling
    "002/Fig6d",  # scaling
    "002/Fig6-anchor",  # scaling
    "002/Fig12",  # scaling
    "002/Fig7",  # scaling
    "002/Fig10-Nk2",  # scaling_repetition
    "002/Fig10-Nk3",  # scaling_repetition
    "002/Fig11-Nq2",  # scaling_repetition
    "002/Fig11-Nq3",  # scaling_repetition
    "002/Tab10-Base-to-D",  # scaling
    "002/Tab10-E",  # scaling
    "002/Thm5-algebra",  # multihead
    "002/Fig8-shared",  # multihead
    "002/Fig8-MHA",  # multihead
    "002/Thm5-MHA-MN",  # multihead
    "002/Fig15",  # multihead
    "002/Remark3",  # scaling_repetition
    "002/Remark5",  # scaling_repetition
)

_declared = {c.id: c for m in (circuit, theory, mechanism, scaling, scaling_repetition, multihead) for c in m.CLAIMS}
if sorted(_declared) != sorted(ORDER):
    raise ClaimError(
        f"Chapter 2: claims declared but not in ORDER: {sorted(set(_declared) - set(ORDER))}; in ORDER but declared "
        f"in no section module: {sorted(set(ORDER) - set(_declared))}. Add each claim to ORDER (ch2/__init__.py)."
    )
register(*quoted(QUOTES, *(_declared[i] for i in ORDER)))

__all__ = [
    "RANGES",
    "FIG15_COMMAND",
    "FIG_PARTS",
    "NEAR_PERFECT",
    "ORDER",
    "PERFECT",
    "QUOTES",
    "TAB10",
    "Z",
    "chance_level",
    "circuit",
    "guess_level",
    "is_run_store_bundle",
    "measure_fig6ab",
    "mechanism",
    "multihead",
    "remark5_prediction",
    "scaling",
    "scaling_repetition",
    "se",
    "se_diff",
    "spearman_p",
    "strongest_fig_bundle",
    "theory",
]
