"""Judging: a declared rule applied to a measurement, each condition decided over its number's whole 95 %
interval (:func:`decide`), the control judged beside it (:func:`judge`, :func:`audit_controls`), seeds combined
(:func:`across_seeds`), and the calls notebooks make (:func:`check`, :func:`check_seeds`, :func:`check_stored`).
The order of the tests is in :mod:`mamba_recall.claims.core`'s docstring."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

from ...results import smoke_active
from ._records import measurement_from_record, not_run_verdict, record_verdict
from ._types import (
    MIN_SEEDS,
    REGISTRY,
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
    fmt,
    get,
)


# ------------------------------------------------------------------------------------------- judging
def decide(c: Cond, m: Measurement) -> bool | None:
    """Condition ``c`` on measurement ``m``, three-valued: ``True`` when it holds over the whole evidence (both
    ends of its metric's 95 % interval; every seed, for a boolean with per-seed values), ``False`` when it fails
    over the whole evidence, ``None`` when the evidence does not decide (the interval straddles the threshold,
    seeds on both sides, a NaN). A metric with neither interval nor per-seed values is decided by its value.
    An interval is convex and a threshold condition holds on a half-line, so it holds over the whole interval
    exactly when it holds at both ends, and fails over the whole exactly when it fails at both."""
    x = m.values[c.metric]
    if c.op in ("true", "false"):
        seeds = m.per_seed.get(c.metric)
        if seeds is not None and len(seeds) > 1:
            held = [c.holds(v) for v in seeds]
            return True if all(held) else False if not any(held) else None
        return c.holds(x)
    try:
        if math.isnan(float(x)):
            return None
    except (TypeError, ValueError):
        return c.holds(x)
    if c.metric not in m.intervals:
        return c.holds(x)
    lo, hi = (float(v) for v in m.intervals[c.metric])
    if math.isnan(lo) or math.isnan(hi):
        return None
    if c.op == "==":
        return True if lo == hi == c.value else False if not lo <= c.value <= hi else None
    at_lo, at_hi = c.holds(lo), c.holds(hi)
    return True if at_lo and at_hi else False if not (at_lo or at_hi) else None


def decide_all(conds, m: Measurement) -> bool | None:
    """Every condition of ``conds`` at once: ``False`` if one fails, else ``None`` if one is undecided, else
    ``True``."""
    states = [decide(c, m) for c in conds]
    return False if False in states else None if None in states else True


def interval_crossings(conds, m: Measurement) -> str:
    """The conditions of ``conds`` that the evidence does not decide (:func:`decide` is ``None``), as one
    readable phrase ("" when there are none): an interval that straddles the threshold, seeds on both sides."""
    bad = []
    for c in conds:
        if decide(c, m) is not None:
            continue
        if not _measured(m.values[c.metric]):
            bad.append(f"{c.metric} is undecided in the measurement itself (NaN: its numbers above say why)")
        elif c.metric in m.intervals:
            lo, hi = m.intervals[c.metric]
            bad.append(f"the 95 % interval of {c.metric} [{c.shown(lo)}, {c.shown(hi)}] straddles {c.text()}")
        elif c.metric in m.per_seed and c.op in ("true", "false"):
            held = sum(bool(c.holds(v)) for v in m.per_seed[c.metric])
            bad.append(f"{c.text()} holds on {held} of {len(m.per_seed[c.metric])} seeds")
        else:
            bad.append(f"{c.metric} is {fmt(m.values[c.metric])}")
    return "; ".join(bad)


def _measured(x) -> bool:
    """Whether a value was measured (a part of a sentence left unmeasured is NaN: undecided, not straddling)."""
    try:
        return not math.isnan(float(x))
    except (TypeError, ValueError):
        return True


def _point_status(rule: Rule, m: Measurement) -> str:
    """The status the point values (means) alone would give: what an inconclusive verdict's means point to."""
    held = lambda cs: all(c.holds(m.values[c.metric]) for c in cs)  # noqa: E731
    if held(rule.reproduced):
        return "reproduced"
    if rule.erratum and held(rule.erratum):
        return "erratum confirmed"
    if rule.partially and held(rule.partially):
        return "partially"
    return "not reproduced"


def _status(rule: Rule, m: Measurement) -> tuple[str, list, str]:
    """Status, the checks shown and the reason that ``rule`` gives measurement ``m`` (in the order that
    :mod:`mamba_recall.claims.core` states)."""

    def run(cs):  # each check as the verdict reads it, over its whole interval (decide): holds, fails or undecided
        # (None: an interval across the bar, seeds on both sides, or a NaN the measurement leaves undecided; referee-Q)
        return [(c.text(), c.shown(m.values[c.metric]), decide(c, m)) for c in cs]

    testable, printed, corrected, partial = (
        run(rule.testable),
        run(rule.reproduced),
        run(rule.erratum),
        run(rule.partially),
    )
    reason = ""
    seeds_ok = m.evidence.seeds >= MIN_SEEDS and bool(m.intervals or m.per_seed)
    if m.evidence.smoke or smoke_active():  # a smoke run checks that the code runs; its numbers judge nothing
        return "not run", printed, "smoke run (a handful of steps): the pipeline ran, its numbers are not evidence"
    if rule.premise_over_interval:
        premise = decide_all(rule.testable, m)
        if premise is False:
            return "not testable here", testable, rule.untestable_why
        if premise is None:
            return (
                "inconclusive",
                testable,
                (
                    f"{interval_crossings(rule.testable, m)}: the premise is not decided over its interval, so the "
                    f"statement is judged in neither direction (the means alone would read '{_point_status(rule, m)}')"
                ),
            )
    elif not all(c.holds(m.values[c.metric]) and _measured(m.values[c.metric]) for c in rule.testable):
        return "not testable here", testable, rule.untestable_why  # a premise read at its point value
    if rule.trained and not seeds_ok:
        reason = (
            f"on {m.evidence.seeds} seed{'s' * (m.evidence.seeds != 1)}"
            f"{'' if (m.intervals or m.per_seed) else ' without an interval'}: a trained-model verdict, in either "
            f"direction, needs ≥ {MIN_SEEDS} seeds and an interval (the means alone would read "
            f"'{_point_status(rule, m)}'); what would settle it: {MIN_SEEDS} seeds of the same recipe"
        )
        return "inconclusive", printed + corrected + partial, reason
    stated = decide_all(rule.reproduced, m)
    if stated is True:
        return "reproduced", printed, ""
    if stated is None:
        undecided = interval_crossings(rule.reproduced, m)
        # the weaker reading of the same sentence is still consulted: where it holds over its whole interval while
        # the printed statement straddles (measured, not refuted), the claim reads partially (issue 51, "the
        # judge"); a part left unmeasured (NaN) keeps it inconclusive
        measured = all(_measured(m.values[c.metric]) for c in rule.reproduced if decide(c, m) is None)
        if rule.partially and measured and decide_all(rule.partially, m) is True:
            return (
                "partially",
                printed + partial,
                f"{undecided}: the statement as printed is not decided; the partial statement holds",
            )
        if measured:
            reason = (
                undecided + f": the evidence does not decide the statement (the means alone would read "
                f"'{_point_status(rule, m)}'); more seeds would settle it"
            )
        else:  # a part the measurement leaves undecided (a run stopped on its cap, a cell not run): not a seed count
            straddles = any(_measured(m.values[c.metric]) for c in rule.reproduced if decide(c, m) is None)
            some = any(
                cs and all(_measured(m.values[c.metric]) for c in cs) for cs in (rule.reproduced, rule.partially)
            )
            means = f" (the means alone would read '{_point_status(rule, m)}')" if some else ""
            reason = undecided + (
                f": the evidence does not decide the statement{means}; more seeds of the same runs would not settle "
                "the undecided part" + ("" if not straddles else " (they may settle the straddling one)")
            )
        return "inconclusive", printed, reason
    fixed = decide_all(rule.erratum, m) if rule.erratum else False
    part = decide_all(rule.partially, m) if rule.partially else False
    for state, level, conds_, status, shown in (
        (fixed, "corrected statement", rule.erratum, "erratum confirmed", printed + corrected),
        (part, "partial statement", rule.partially, "partially", printed + partial),
    ):
        if state is True:
            why = "the statement as printed fails; the corrected statement holds" if status != "partially" else ""
            return status, shown, why
        if state is None:
            why = f"the statement as printed fails, but {interval_crossings(conds_, m)}: the evidence does not decide the {level}"
            return "inconclusive", shown, why
    return "not reproduced", printed + partial, ""


def judge(claim: Claim, m: Measurement) -> Verdict:
    """The verdict ``claim``'s declared rule gives measurement ``m`` (see :mod:`mamba_recall.claims.core`), with its
    control (:class:`Control`) judged by the same rule beside it: a null that reaches *reproduced*, or a
    positive control that does not, makes a *reproduced* or *not reproduced* read **not testable here**."""
    rule = claim.rule
    missing = rule.metrics() - set(m.values)
    if missing:
        raise ClaimError(f"claim {claim.id}: the measurement lacks {sorted(missing)} that its rule reads.")
    status, checks, reason = _status(rule, m)
    control, c_status = "", ""
    if m.control is not None:
        cm = m.control.measurement
        lacking = rule.metrics() - set(cm.values)
        if lacking:
            raise ClaimError(f"claim {claim.id}: its control's measurement lacks {sorted(lacking)}.")
        c_status, c_checks, _ = _status(rule, cm)
        shown = "; ".join(f"{c} ({v})" for c, v, _ in c_checks)
        control = f"{m.control.kind}: {m.control.what} — {shown} → {c_status}"
        if m.control.kind == "null" and (
            (c_status == "reproduced" and status in ("reproduced", "partially"))
            or (c_status == "partially" and status == "partially")
        ):
            reason = f"the null control ({m.control.what}) also reaches {c_status}: the rule cannot tell them apart"
            status = "not testable here"
        elif m.control.kind == "positive" and c_status != "reproduced" and status == "not reproduced":
            status = "not testable here"
            reason = (
                f"the positive control ({m.control.what}) does not show the effect either ({c_status}): "
                "this test could not have shown it"
            )
    return Verdict(
        claim.id,
        claim.statement,
        claim.where,
        claim.printed,
        status,
        m.shown,
        rule.text(),
        checks,
        asdict(m.evidence),
        reason,
        m.note,
        claim.section,
        {k: (float(lo), float(hi)) for k, (lo, hi) in m.intervals.items()},
        claim.quote,
        claim.setting,
        claim.analogue,
        control,
        m.control.kind if m.control is not None else "",
        c_status,
        [asdict(r) for r in claim.revisions],
        claim.cause,
    )


#: statuses a trained claim reaches only from its own evidence (the ones a control must stand beside)
DECIDED = ("reproduced", "partially", "not reproduced", "erratum confirmed", "inconclusive")


#: claims whose null control is known to pass their rule, with why: each reads *not testable here*, and the audit
#: fails on any other null that reaches *reproduced* (a rule that cannot tell a trained model from its null)
NULL_PASSES: dict[str, str] = {}


def declared_ranges() -> dict:
    """Each chapter's declared ranges, by its book folder (``ch3_selectivity`` -> ``03_selectivity``), as a function
    ``metric -> (lo, hi) | None`` (None where the name fixes no range): its claims package's ``RANGES`` table
    ({metric: (lo, hi)}: an accuracy or a fraction in [0, 1], ...) or, where names decide, its ``metric_range``
    function; found by the one scan of the chapter packages."""
    from ...runners import chapter_modules

    out = {}
    for chapter, claims in chapter_modules("claims").items():
        number, topic = chapter[2:].split("_", 1)
        declared = getattr(claims, "RANGES", None)
        range_of = declared.get if declared is not None else getattr(claims, "metric_range", None)
        if range_of is not None:
            out[f"{int(number):02d}_{topic}"] = range_of
    return out


def audit_ranges(verdicts: dict, ranges: dict | None = None) -> list[str]:
    """One line per recorded 95 % interval of a number whose chapter declares its range (:func:`declared_ranges`)
    and that leaves it (an accuracy's interval past 1: a value the quantity cannot take; issue 54 clips every
    combination of seeds to its range). Empty when every interval lies in its range."""
    ranges = declared_ranges() if ranges is None else ranges
    out = []
    for cid, v in sorted(verdicts.items()):
        section = v.section or (REGISTRY[cid].section if cid in REGISTRY else "") or ""
        range_of = ranges.get(section.split("/")[0])
        for metric, (lo, hi) in sorted((v.intervals or {}).items()):
            r = range_of(metric) if range_of else None
            if r is not None and not (math.isnan(lo) or math.isnan(hi)) and not r[0] <= lo <= hi <= r[1]:
                out.append(f"{cid} ({section}): {metric} [{lo:.6g}, {hi:.6g}] leaves its range [{r[0]}, {r[1]}]")
    return out


def audit_controls(verdicts: dict) -> list[str]:
    """What is wrong with the controls of the recorded ``verdicts`` ({claim id: Verdict}), one line each: a
    trained-model claim (``Rule.trained``) judged on evidence (any status but *not run* and *not testable here*)
    without a control measured beside it; one that reads *reproduced* or *partially* while its null control
    reaches the same (the rule cannot tell the trained model from the null); a null that reaches *reproduced* on a
    claim not declared in :data:`NULL_PASSES`, or a declared one that does not read *not testable here*. Empty when
    every control holds."""
    problems = []
    for cid, v in sorted(verdicts.items()):
        claim = REGISTRY.get(cid)
        if claim is None or not claim.rule.trained:
            continue
        if v.control_kind == "null" and v.control_status == "reproduced" and cid not in NULL_PASSES:
            problems.append(
                f"{cid}: its null control reaches reproduced ({v.control}); fix the rule, or declare why in "
                "claims.core.NULL_PASSES"
            )
        if cid in NULL_PASSES and v.status not in ("not testable here", "not run"):
            problems.append(f"{cid} is declared in NULL_PASSES but reads {v.status}, not 'not testable here'")
        if v.status not in DECIDED:
            continue
        if not v.control_kind:
            problems.append(f"{cid} reads {v.status} with no control measured beside it (Control in its measurement)")
        elif (
            v.control_kind == "null"
            and v.status in ("reproduced", "partially")
            and (v.control_status == "reproduced" or v.control_status == v.status)
        ):
            problems.append(f"{cid} reads {v.status} while its null control reads {v.control_status}: {v.control}")
    return problems


def check(claim_id: str, *args, record: bool = True, directory: Path | None = None, evidence=None, **kwargs) -> Verdict:
    """Measure claim ``claim_id`` from the given inputs (:func:`measure_claim`: a claim that declares the evidence
    it reads loads it itself), judge it by its declared rule, record it for the scorecard and return the verdict
    (it displays as Markdown with the numbers it used). Inputs that do not fit the claim's measurement raise
    :class:`ClaimError` naming the inputs it takes (:func:`inputs_of`). ``evidence``: other evidence in place of the
    declared one, for a first look (pass ``record=False``) or a test."""
    claim = get(claim_id)
    if evidence is not None and record:
        raise ClaimError(
            f"check({claim_id!r}, evidence=...) judges other evidence than the claim declares: pass record=False (a "
            "first look or a test); the recorded verdict reads the declared evidence"
        )
    m = measure_claim(claim_id, *args, evidence=evidence, **kwargs)
    v = not_run_verdict(claim, m) if isinstance(m, str) else judge(claim, m)
    if record:
        record_verdict(v, directory)
    return v


def claim_evidence(claim_id: str):
    """The committed evidence claim ``claim_id`` reads (:attr:`Claim.reads`): the strongest complete committed
    bundle of the experiment it names (:func:`mamba_recall.results.evidence`), or what its loader returns. A page
    shows its charts from the same call, so what it shows is what the verdict read. ClaimError for a claim that
    declares none; :class:`~mamba_recall.results.BundleMissing` (naming the command that makes it) when none is
    committed."""
    claim = get(claim_id)
    if claim.reads is None:
        raise ClaimError(
            f"claim {claim_id} declares no evidence it reads (Claim.reads); check() gives its measurement the inputs "
            f"it is called with: {inputs_of(claim_id)}"
        )
    if isinstance(claim.reads, str):
        from ...results import evidence as _evidence

        return _evidence(claim.reads)
    return claim.reads()


def measure_claim(claim_id: str, *args, evidence=None, **kwargs) -> Measurement | str:
    """The measurement of claim ``claim_id`` from the given inputs, or why it reads *not run* (a string): the claim
    has no measurement yet (its declared "not run" text), its measurement raised :class:`NotRun`, or the evidence it
    declares it reads (:attr:`Claim.reads`) is not committed (the reason names the command that makes it). A claim
    that declares its evidence gets it as the measurement's first argument (:func:`claim_evidence`) before ``args``;
    ``evidence`` replaces it (a test, or a first look at a grid that is not the committed evidence: never a verdict
    a page records), and is refused for a claim that declares none. Inputs that do not fit the measurement raise
    :class:`ClaimError` naming the inputs it takes. Nothing is judged: :func:`check` judges what this returns, and a
    job that stores measurements for a later judgement (:func:`measurement_record`) stores it."""
    from ...results import Bundle, BundleMissing

    claim = get(claim_id)
    if claim.measure is None:
        return claim.not_run
    if claim.reads is None and evidence is not None:
        raise ClaimError(
            f"check({claim_id!r}, evidence=...): this claim declares no evidence it reads; pass its inputs: "
            f"{inputs_of(claim_id)}"
        )
    if claim.reads is not None and any(isinstance(a, Bundle) for a in (*args, *kwargs.values())):
        raise ClaimError(
            f"check({claim_id!r}, <a bundle>, ...): the claim reads its declared evidence itself; pass its other "
            f"inputs only ({inputs_of(claim_id)}), or other evidence by name, evidence=..., with record=False"
        )
    # the evidence's place held by None: a call that does not fit is refused before any evidence loads
    check_inputs(claim, (None, *args) if claim.reads is not None else args, kwargs)
    if claim.reads is not None:
        try:
            args = (evidence if evidence is not None else claim_evidence(claim_id), *args)
        except BundleMissing as exc:
            return f"its evidence is not committed: {exc}"
    try:
        return claim.measure(*args, **kwargs)
    except NotRun as exc:
        return str(exc)


def inputs_of(claim_id: str) -> str:
    """What ``check(claim_id, ...)`` takes: the measurement's signature and the first line of its docstring."""
    import inspect

    claim = get(claim_id)
    if claim.measure is None:
        return f"{claim_id} has no measurement yet ({claim.not_run})"
    doc = (inspect.getdoc(claim.measure) or "").strip().splitlines() if claim.measure.__name__ != "<lambda>" else []
    where = f" (book/{claim.section}.ipynb shows the call)" if claim.section else ""
    signature = inspect.signature(claim.measure)
    if claim.reads is not None:  # its first parameter is the evidence check() loads
        reads = claim.reads if isinstance(claim.reads, str) else getattr(claim.reads, "__name__", "its loader")
        params = [f"<the evidence it reads: {reads}>", *map(str, list(signature.parameters.values())[1:])]
        return f"measure({', '.join(params)})" + (f": {doc[0]}" if doc else "") + where
    return f"measure{signature}" + (f": {doc[0]}" if doc else "") + where


def check_inputs(claim: Claim, args: tuple, kwargs: dict) -> None:
    """Refuse inputs that do not bind to ``claim``'s measurement, with what it takes."""
    import inspect

    try:
        inspect.signature(claim.measure).bind(*args, **kwargs)
    except TypeError as exc:
        raise ClaimError(f"check({claim.id!r}, ...): {exc}; it takes {inputs_of(claim.id)}") from None
    except ValueError:  # a callable without an inspectable signature (a builtin): let the call decide
        return


def _range_of(bounds):
    """``bounds`` of :func:`across_seeds` as a function of a metric's name (``None``: no declared range)."""
    if bounds is None:
        return lambda metric: None
    if callable(bounds):
        return bounds
    if isinstance(bounds, dict):
        return bounds.get
    raise ClaimError(
        f"bounds={bounds!r}: give the metrics' ranges as {{metric: (lo, hi)}} or a function of the metric's name."
    )


def across_seeds(ms: list[Measurement], names: list[str] | None = None, *, bounds=None) -> Measurement:
    """One measurement of a claim from its measurements on several independently trained models (seeds) of one
    recipe, combined by a rule fixed here for every claim (before any result):

    * a number: the mean over seeds, with its 95 % Student-t interval over seeds and the per-seed values
      (:func:`mamba_recall.runstore.mean_interval`, the library's one way from seeds to an interval; a NaN on any
      seed, e.g. a length at which the model has no room for the effect, makes the mean NaN, so every condition
      on it fails);
    * a boolean: holds only if it holds on every seed (so a testability condition fails when any seed fails it);
    * the evidence: the weakest tier of the seeds, the number of seeds, and each seed's sample and source.

    ``bounds``: the declared range of a metric, ``{metric: (lo, hi)}`` or a function of the metric's name giving
    ``(lo, hi)`` or ``None``; each interval is clipped to its metric's range (its control's too). Without it,
    nothing is clipped.
    """
    from ...runstore import mean_interval

    range_of = _range_of(bounds)

    if not ms:
        raise ClaimError("across_seeds needs at least one measurement.")
    names = names or [f"seed {i}" for i in range(len(ms))]
    keys = set(ms[0].values)
    if any(set(m.values) != keys for m in ms):
        raise ClaimError(
            "across_seeds: the seeds' measurements read different metrics; measure every seed with the same claim."
        )
    values, intervals, per_seed = {}, {}, {}
    for k in sorted(keys):
        vals = [m.values[k] for m in ms]
        if all(isinstance(v, (bool,)) or type(v).__name__ == "bool_" for v in vals):
            values[k] = all(bool(v) for v in vals)
            per_seed[k] = [bool(v) for v in vals]
            continue
        xs = [float(v) for v in vals]
        per_seed[k] = xs
        if any(math.isnan(x) for x in xs):
            values[k] = float("nan")
            continue
        st = mean_interval(xs, bounds=range_of(k))
        values[k] = st["mean"]
        if len(xs) > 1:
            intervals[k] = (st["ci_low"], st["ci_high"])
    ev = [m.evidence for m in ms]
    tier = min((e.tier for e in ev), key=TIERS.index)
    evidence = Evidence(
        tier,
        ev[0].device,
        len(ms),
        f"per seed: {ev[0].sample}",
        "; ".join(sorted({e.source for e in ev})),
        smoke=any(e.smoke for e in ev),
    )
    shown = " | ".join(f"{n}: {m.shown}" for n, m in zip(names, ms))
    controls = [m.control for m in ms]
    if any(c is not None for c in controls) and not all(
        c is not None and (c.kind, c.what) == (controls[0].kind, controls[0].what) for c in controls
    ):
        raise ClaimError("across_seeds: every seed's measurement carries the same control, or none does.")
    control = (
        Control(
            controls[0].kind, controls[0].what, across_seeds([c.measurement for c in controls], names, bounds=bounds)
        )
        if controls[0] is not None
        else None
    )
    return Measurement(
        values,
        shown,
        evidence,
        intervals,
        per_seed,
        note=f"{len(ms)} seeds: numbers are means over seeds (95 % t-interval); a boolean counts as holding only "
        "where it holds on every seed",
        control=control,
    )


def over_seeds(runs, measure_one, *, bounds=None) -> Measurement:
    """A claim's measurement on a table of runs with a ``seed`` column: ``measure_one`` (a table of one seed's runs
    → its :class:`Measurement`) on each seed's rows, in seed order, combined by :func:`across_seeds` (``bounds``: the
    metrics' declared ranges). A table without ``seed`` is one seed (``seed 0``)."""
    if "seed" not in runs:
        return across_seeds([measure_one(runs)], ["seed 0"], bounds=bounds)
    seeds = sorted(set(runs.seed))
    ms = [measure_one(runs[runs.seed == s]) for s in seeds]
    return across_seeds(ms, [f"seed {s}" for s in seeds], bounds=bounds)


def check_seeds(
    claim_id: str,
    inputs: list[tuple],
    names: list[str] | None = None,
    *,
    record: bool = False,
    directory: Path | None = None,
    bounds=None,
    **kwargs,
) -> Verdict:
    """Measure ``claim_id`` on each seed's inputs (``inputs[i]`` = the positional arguments of its measurement) by
    :func:`measure_claim` (inputs that do not fit raise :class:`ClaimError` naming what it takes), combine them with
    :func:`across_seeds` (``bounds``: the metrics' declared ranges) and judge the result by the declared rule. The
    first seed that reads *not run* makes the verdict *not run*, with its reason."""
    claim = get(claim_id)
    if claim.reads is not None:
        raise ClaimError(
            f"check_seeds({claim_id!r}, ...): the claim reads its declared evidence itself (Claim.reads) and combines "
            "its seeds there; call check(id)"
        )
    ms, why = [], None
    for args in inputs:
        m = measure_claim(claim_id, *args, **kwargs)
        if isinstance(m, str):
            why = m
            break
        ms.append(m)
    v = not_run_verdict(claim, why) if why is not None else judge(claim, across_seeds(ms, names, bounds=bounds))
    if record:
        record_verdict(v, directory)
    return v


def check_stored(
    claim_id: str,
    stored: list[dict],
    names: list[str],
    *,
    record: bool = True,
    directory: Path | None = None,
    bounds=None,
) -> Verdict:
    """Judge ``claim_id`` from measurements stored per seed (:func:`measurement_record`, or ``{"not_run": why}``
    where the seed could not be measured): combined by :func:`across_seeds` (``bounds``: the metrics' declared
    ranges), judged by the declared rule,
    recorded for the scorecard unless ``record=False``. A seed that could not be measured makes it *not run*."""
    claim = get(claim_id)
    missing = [f"{n}: {d['not_run']}" for n, d in zip(names, stored) if "not_run" in d]
    if missing:
        v = not_run_verdict(claim, "; ".join(missing))
    else:
        v = judge(claim, across_seeds([measurement_from_record(d) for d in stored], names, bounds=bounds))
    if record:
        record_verdict(v, directory)
    return v
