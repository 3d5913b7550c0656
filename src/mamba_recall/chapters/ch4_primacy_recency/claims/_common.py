"""What several sections of Chapter 4 share: the thresholds of the chapter's decision rules, the evidence of a
measurement on a checkpoint (:func:`_evidence`, with its convergence gate), the recall summaries, the U-shape rule
(§4.1 and App. F), the untrained null control's words, and the registration of a section's claims as analogues
(:func:`_analogues`).

A private module of :mod:`mamba_recall.chapters.ch4_primacy_recency.claims`: its section modules import it, and the package re-exports the
public names that code outside uses.
"""

from __future__ import annotations

import re

from dataclasses import replace

import numpy as np

from mamba_recall.claims.core import TIERS, Evidence, NotRun, Rule, conds

CEILING = 0.95  # middle-third recall above this: no room to see a trough, a rise or a removed advantage
FIRST_MIN = 0.5  # first-position recall below this: the first fact is mostly lost already, nothing to remove
U_ARM = 0.10  # an end of the U at least 10 points above the middle third
EFFECT = 0.10  # a 10 % relative shift of Δ counts as a systematic effect
CAUSAL_DROP = 0.15  # first-triple ablation: δ(1) at least 15 points ...
RANDOM_FACTOR = 2.0  # ... and at least twice the same-count random ablation
CLUSTER_P = 0.01  # χ² of the per-layer counts against a spread proportional to layer widths
SPARSE = 0.15  # "a sparse subset": at most 15 % of the units (the paper's Mamba 2 value is 9.32 %)
LATER_DROP = 0.03  # Mamba 2: degradation beyond position 1, mean δ(k ≥ 2)

_CEILING_WHY = (
    f"at the evaluated length the S-model's baseline recall is at its ceiling (middle third > {CEILING}) or "
    f"its first position is already lost (acc(1) < {FIRST_MIN}): with no primacy to remove, an ablation "
    "cannot show that these units carry it; the check needs a model at its capacity edge"
)


# ----------------------------------------------------------------------------------------- helpers
def _tier(ctx, side) -> str:
    """The weaker of the checkpoint's training preset and the notebook's preset (a ci-trained model evaluated
    with more contexts is still ci evidence)."""
    m = re.search(r"--preset ([\w-]+)", str((side or {}).get("command", "")))
    trained = m.group(1) if m and m.group(1) in TIERS else "ci"
    run = getattr(ctx, "preset", "ci")
    run = run if run in TIERS else "ci"
    return min(trained, run, key=TIERS.index)


GATE_NOT_RUN = (
    "the checkpoint did not pass its convergence gate ({criterion}): a model that has not learned the task can "
    "neither show nor refute the effect; train it further"
)
#: the chapter's gate, named where a sidecar's gate does not say its criterion
CHAPTER_GATE = "held-out recall ≥ 0.95 at L = 4 and ≥ 0.80 at L = 8"


def _evidence(ctx, side, sample: str) -> Evidence:
    """The evidence of a measurement on the checkpoint described by ``side``; a checkpoint that failed its
    convergence gate is no evidence at all (:class:`NotRun`)."""
    gate = (side or {}).get("gate")
    if gate is not None and not gate.get("passed"):
        raise NotRun(GATE_NOT_RUN.format(criterion=gate.get("criterion") or CHAPTER_GATE))
    device = getattr(ctx, "device", "cpu")
    device = getattr(device, "type", str(device))
    return Evidence(
        _tier(ctx, side),
        device,
        1,
        sample,
        str((side or {}).get("source", "live")),
        smoke=bool(getattr(ctx, "smoke", False)),
    )


def _summary(correct):
    from mamba_recall.analysis.interventions import summary

    return summary(np.asarray(correct))


def _informative(base) -> bool:
    """The baseline leaves room for a primacy effect: middle third not at the ceiling, first position kept."""
    s = _summary(base)
    return bool(s["mid"] <= CEILING and s["acc"][0] >= FIRST_MIN)


def _chi2_p(counts, widths) -> float:
    from mamba_recall.analysis.interventions import chi2_uniform_p

    counts, widths = np.asarray(counts, float), np.asarray(widths, float)
    if counts.sum() == 0:
        return 1.0
    return float(chi2_uniform_p(counts, counts.sum() * widths / widths.sum()))


#: what the untrained null control is, in a reader's words
NULL_UNTRAINED = (
    "the same architecture untrained (each model's configuration and vocabulary, initialised under its training seed), "
    "measured by the same probes at the same length"
)


# ------------------------------------------------------------------------- rules used by several sections
_PRIMACY_TESTABLE = conds(("baseline_informative", "true"))


def _primacy_rule(why: str, *reproduced: tuple) -> Rule:
    """The rule of a trained primacy-ablation claim: reproduced when every condition of ``reproduced`` holds,
    testable only where the baseline leaves primacy to remove (``baseline_informative``; :data:`_CEILING_WHY`)."""
    return Rule(
        why=why,
        reproduced=conds(*reproduced),
        testable=_PRIMACY_TESTABLE,
        untestable_why=_CEILING_WHY,
        trained=True,
    )


def _ushape_rule() -> Rule:
    return Rule(
        why="a U needs both ends ≥ 10 points above the middle third, outside its Wilson band, with the minimum "
        'inside, at the first length that strains the model and the next ("across lengths"); the recency '
        "arm alone is part of the claim",
        reproduced=conds(
            ("min_primacy", ">=", U_ARM),
            ("min_recency", ">=", U_ARM),
            ("ends_separated", "true"),
            ("interior_minimum", "true"),
        ),
        partially=conds(("min_recency", ">=", U_ARM)),
        testable=conds(("pressure_lengths", ">=", 2)),
        untestable_why="no two evaluated lengths strain the model (middle third ≤ 0.80), so no trough can show",
        trained=True,
    )


# ------------------------------------------------------------------------------------------ the analogue
_S_MODEL = (
    "the paper probes pretrained Falcon Mamba 7B (and Mamba 1.4B), LLMs trained on natural text; here a small Mamba-1 "
    "LM (the chapter's S-models: a few layers, a synthetic vocabulary) trained from scratch on the paper's recall task "
    "stands in for it, so the effect is looked for in a model that learned only this task"
)


def _analogues(declared, quote: dict, setting: dict | None = None) -> tuple:
    """A section's ``declared`` claims as the registry holds them: each with the paper's sentence it tests
    (``quote``), how its setting differs from the paper's in kind (``setting``, else :data:`_S_MODEL`: every 004
    claim is measured, or would be, on such a model) and marked an analogue."""
    setting = {**{c.id: _S_MODEL for c in declared}, **(setting or {})}
    return tuple(replace(c, quote=quote[c.id], setting=setting[c.id], analogue=True) for c in declared)


# ------------------------------------------------------------------ the range of a combined number (issue 51)
def metric_range(metric: str) -> tuple[float, float] | None:
    """The range a metric of this chapter can take, by its name, to clip its 95 % interval over seeds to (a
    p-value, a fraction or a share in [0, 1]; a ratio of non-negative masses, a count in [0, ∞)); None where the
    name does not fix it. Passed as ``bounds`` to core's :func:`~mamba_recall.claims.core.check_stored`, which clips
    each interval (its control's too); clipping moves no decision: a bound past the range's edge is a value the
    quantity cannot take."""
    if metric.endswith("_p") or "_p_" in metric or "fraction" in metric:
        return (0.0, 1.0)
    if (
        "ratio" in metric
        or metric in ("pressure_lengths", "best_scale")
        or metric.startswith(("informative", "learned"))
    ):
        return (0.0, float("inf"))
    return None
