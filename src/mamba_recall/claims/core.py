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
   the effect);
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
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from ..results import smoke_active

STATUSES = (
    "reproduced",
    "partially",
    "not reproduced",
    "erratum confirmed",
    "inconclusive",
    "not testable here",
    "not run",
)
MARK = {
    "reproduced": "✅",
    "partially": "🟡",
    "not reproduced": "❌",
    "erratum confirmed": "📝",
    "inconclusive": "❔",
    "not testable here": "⚪",
    "not run": "⏸",
}
TIERS = ("exact", "ci", "cpu-hours", "paper")  # evidence tiers, weakest trained tier first; exact = no training
TIER_NOTE = {
    "exact": "computed exactly (no training)",
    "ci": "ci preset (reduced sizes)",
    "cpu-hours": "the papers' settings on a CPU-sized part of the grid",
    "paper": "the papers' sizes",
}
PAPERS = {
    "001": 0,
    "000": 1,
    "002": 2,
    "003": 3,
    "004": 4,
    "book": 5,
}  # paper → chapter ("book": the book's own findings)
MIN_SEEDS = 3
OPS = {">=": "≥", "<=": "≤", ">": ">", "<": "<", "==": "=", "true": "is true", "false": "is false"}


class ClaimError(ValueError):
    """A claim, rule or measurement is malformed (names the claim and the fix)."""


class NotRun(Exception):
    """Raised by a measurement when the evidence it needs does not exist here (say what would make it)."""


@dataclass(frozen=True)
class Cond:
    """One declared condition: ``metric op value`` (``op`` one of ``>= <= > < ==``), or a boolean metric
    (``op`` ``true``/``false``, no value)."""

    metric: str
    op: str
    value: float | None = None

    def __post_init__(self):
        if self.op not in OPS:
            raise ClaimError(f"condition on {self.metric!r}: op {self.op!r} is not one of {tuple(OPS)}.")
        if (self.op in ("true", "false")) != (self.value is None):
            raise ClaimError(f"condition on {self.metric!r}: ops true/false take no value, the others need one.")

    def holds(self, x) -> bool:
        if self.op == "true":
            return bool(x) is True
        if self.op == "false":
            return bool(x) is False
        x = float(x)
        if math.isnan(x):
            return False
        return {
            ">=": x >= self.value,
            "<=": x <= self.value,
            ">": x > self.value,
            "<": x < self.value,
            "==": x == self.value,
        }[self.op]

    def text(self) -> str:
        return f"{self.metric} {OPS[self.op]}" + ("" if self.value is None else f" {fmt(self.value)}")

    def shown(self, x) -> str:
        """``x`` as printed beside this condition: :func:`fmt`'s 4 significant digits, or as many more as it takes
        for the printed number to hold the condition exactly when ``x`` does (0.9999955 against ``≥ 1`` prints
        0.999996, not a failing "1")."""
        s = fmt(x)
        if self.value is None or isinstance(x, bool):
            return s
        try:
            x = float(x)
            for digits in range(5, 18):
                if math.isnan(x) or self.holds(float(s)) == self.holds(x):
                    return s
                s = f"{x:.{digits}g}"
        except (TypeError, ValueError):
            pass
        return s

    def crossing(self) -> tuple[object, object]:
        """A value that satisfies the condition and one just across it (for the flip tests)."""
        if self.op in ("true", "false"):
            return (self.op == "true"), (self.op != "true")
        v = float(self.value)
        eps = max(abs(v) * 1e-6, 1e-9)
        return {">=": (v, v - eps), ">": (v + eps, v), "<=": (v, v + eps), "<": (v - eps, v), "==": (v, v + eps)}[
            self.op
        ]


def conds(*specs) -> tuple[Cond, ...]:
    """Shorthand: ``conds(("acc", ">=", 0.99), ("signs_ok", "true"))``."""
    return tuple(Cond(*s) for s in specs)


@dataclass(frozen=True)
class Rule:
    """A verdict rule declared before the result: see the module docstring for the order of the tests."""

    why: str  # one line of reasoning, written without our numbers
    reproduced: tuple[Cond, ...]  # all hold → reproduced (the paper's statement, as printed)
    partially: tuple[Cond, ...] = ()  # all hold → partially (empty: no partial level)
    erratum: tuple[Cond, ...] = ()  # the corrected statement: holds while the printed fails → erratum confirmed
    testable: tuple[Cond, ...] = ()  # any fails → not testable here
    untestable_why: str = ""  # why, when a testable condition fails
    trained: bool = False  # a trained-model claim: ≥ 3 seeds and an interval for a verdict either way

    def __post_init__(self):
        if not self.why.strip():
            raise ClaimError("a rule needs its one line of reasoning (why).")
        if not self.reproduced:
            raise ClaimError("a rule needs at least one 'reproduced' condition.")
        if self.testable and not self.untestable_why:
            raise ClaimError("a rule with 'testable' conditions must say why a failure makes it untestable.")

    def metrics(self) -> set[str]:
        return {c.metric for c in (*self.reproduced, *self.partially, *self.erratum, *self.testable)}

    def text(self) -> str:
        parts = [f"reproduced if {' and '.join(c.text() for c in self.reproduced)}"]
        if self.erratum:
            parts.append(f"erratum confirmed if that fails while {' and '.join(c.text() for c in self.erratum)}")
        if self.partially:
            parts.append(f"partially if {' and '.join(c.text() for c in self.partially)}")
        parts.append("otherwise not reproduced")
        if self.testable:
            parts.insert(0, f"testable only if {' and '.join(c.text() for c in self.testable)}")
        if self.trained:
            parts.append(
                f"a trained-model verdict, in either direction, needs ≥ {MIN_SEEDS} seeds and an interval: a "
                "condition holds or fails only over its number's whole 95 % interval, else inconclusive"
            )
        return "; ".join(parts)


@dataclass(frozen=True)
class Evidence:
    """What a number rests on: tier (preset, or ``exact``), device, seeds, sample size, source."""

    tier: str
    device: str
    seeds: int
    sample: str
    source: str  # "live" (computed in the notebook) or the bundle / checkpoint path it came from
    smoke: bool = False  # a smoke run (the preset's structure, a handful of steps): never evidence

    def __post_init__(self):
        if self.tier not in TIERS:
            raise ClaimError(f"evidence tier {self.tier!r} is not one of {TIERS}.")
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 0:
            raise ClaimError(f"evidence seeds must be a non-negative integer, got {self.seeds!r}.")

    @classmethod
    def live(cls, ctx, sample: str, seeds: int = 1, source: str = "live") -> "Evidence":
        """Evidence computed in the notebook under ``ctx`` (its preset is the tier, its device the device)."""
        return cls(
            ctx.preset,
            ctx.device.type if hasattr(ctx.device, "type") else str(ctx.device),
            seeds,
            sample,
            source,
            smoke=bool(getattr(ctx, "smoke", False)),
        )

    @classmethod
    def exact(cls, sample: str, source: str = "live") -> "Evidence":
        """A deterministic computation with no training (a formula, a construction, an enumeration)."""
        return cls("exact", "cpu", 0, sample, source)

    @classmethod
    def from_bundle(cls, bundle, sample: str, seeds: int, tier: str | None = None) -> "Evidence":
        """Evidence from a committed bundle (its preset and device as recorded in its provenance)."""
        cfg, prov = getattr(bundle, "config", {}) or {}, getattr(bundle, "provenance", {}) or {}
        tier = tier or cfg.get("preset") or "ci"
        from ..paths import REPO_ROOT

        source = getattr(bundle, "path", None) or cfg.get("name", "bundle")
        try:
            source = Path(source).resolve().relative_to(Path(REPO_ROOT).resolve())
        except ValueError:
            pass
        return cls(tier, str(prov.get("device", "cpu")), seeds, sample, str(source), smoke=bool(cfg.get("smoke")))

    def text(self) -> str:
        seeds = "no seeds (deterministic)" if self.seeds == 0 else f"{self.seeds} seed{'s' * (self.seeds != 1)}"
        smoke = "SMOKE RUN (structure only, not evidence) · " if self.smoke else ""
        return f"{smoke}{self.tier} · {self.device} · {seeds} · {self.sample} · {self.source}"


@dataclass(frozen=True)
class Measurement:
    """Our numbers: ``values`` (what the rule reads), ``shown`` (one line for a reader), optional 95 %
    ``intervals`` and ``per_seed`` values, and the :class:`Evidence`."""

    values: dict
    shown: str
    evidence: Evidence
    intervals: dict = field(default_factory=dict)  # metric → (low, high), 95 % (over seeds, for trained models)
    per_seed: dict = field(default_factory=dict)  # metric → [value per seed]
    note: str = ""
    control: "Control | None" = None  # the same rule's numbers on the claim's control (see Control)


@dataclass(frozen=True)
class Control:
    """A trained claim's control, measured like the claim and judged by the same rule beside it.

    ``kind`` ``"null"``: a model or data that must **not** show the effect (the same architecture untrained at the
    same seeds, shuffled data, the generator's chance level); if the null reaches *reproduced* (or *partially*
    where the claim reads *partially*), the rule cannot tell a trained model from it and the claim reads **not
    testable here**. ``kind`` ``"positive"``: for a
    negative verdict, a setting that must show the effect the test looks for (as Tab. 10's row D does for row E);
    if it does not reach *reproduced*, the test could not have shown the effect and a *not reproduced* reads
    **not testable here**."""

    kind: str  # "null" | "positive"
    what: str  # what the control is, in a reader's words ("the same architecture untrained, seeds 0-2")
    measurement: Measurement

    def __post_init__(self):
        if self.kind not in ("null", "positive"):
            raise ClaimError(f"control kind {self.kind!r} is not 'null' or 'positive'.")
        if not self.what.strip():
            raise ClaimError("a control says what it is (what).")


@dataclass(frozen=True)
class Claim:
    id: str  # "<paper>/<the paper's own name>", e.g. "002/Fig6c"
    statement: str  # the claim in one sentence
    where: str  # section, equation, figure, table
    printed: str  # the paper's numbers as printed ("no number given")
    rule: Rule
    measure: Callable[..., Measurement] | None = None
    section: str = ""  # book doc that checks it, e.g. "01_gradient_dynamics/02_mechanism_one_key"
    not_run: str = ""  # when nothing measures it yet: what it would take (command, cost)
    quote: str = ""  # the paper's sentence this claim tests, verbatim (its rule tests that proposition)
    setting: str = ""  # how our setting differs from the paper's in kind, named on the claim and the scorecard
    analogue: bool = False  # evidence on a stand-in (a small model trained here for a pretrained LLM)

    def __post_init__(self):
        if self.analogue and not self.setting.strip():
            raise ClaimError(f"claim {self.id}: an analogue says what it stands in for (setting).")
        if not re.fullmatch(r"(000|001|002|003|004|book)/[A-Za-z0-9_.()+-]+", self.id):
            raise ClaimError(f"claim id {self.id!r} must be '<paper>/<name>' with paper in {tuple(PAPERS)}.")
        if self.measure is None and not self.not_run:
            raise ClaimError(f"claim {self.id}: no measurement, so 'not_run' must say what it would take.")
        if self.measure is not None and not self.section:
            raise ClaimError(f"claim {self.id}: a measured claim names the book section that checks it.")
        for name in ("statement", "where", "printed"):
            if not getattr(self, name).strip():
                raise ClaimError(f"claim {self.id}: '{name}' is empty.")

    @property
    def paper(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def chapter(self) -> int:
        return PAPERS[self.paper]


@dataclass(frozen=True)
class Verdict:
    claim_id: str
    statement: str
    where: str
    printed: str
    status: str
    ours: str
    rule: str
    checks: list  # [(condition text, measured value text, held)]
    evidence: dict | None
    reason: str = ""  # why not testable / not run / capped
    note: str = ""
    section: str = ""
    intervals: dict = field(default_factory=dict)
    quote: str = ""  # the paper's sentence, verbatim
    setting: str = ""  # how our setting differs from the paper's in kind
    analogue: bool = False
    control: str = ""  # the control's numbers and what the same rule reads on them
    control_kind: str = ""  # "null" | "positive" | "" (none measured)
    control_status: str = ""  # the status the claim's rule gives the control ("" when none)

    def record_lines(self) -> list[str]:
        """The claim's whole record as Markdown bullets (the notebook's display and the scorecard's dropdown):
        the paper's sentence and numbers, ours with the intervals, the rule, the checks, the control, the
        evidence, the setting and the verdict."""
        said = f"“{self.quote}”" if self.quote else self.statement
        if self.claim_id.startswith("book/"):  # the book's own hypothesis: no paper sentence to quote
            out = [f"- **rests on**: {self.where}", f"- **the theory's numbers**: {self.printed}"]
        else:
            out = [f"- **the paper** ({self.where}): {said}", f"- **paper's numbers**: {self.printed}"]
        out.append(f"- **ours**: {self.ours or (self.reason if self.status == 'not run' else '—')}")
        if self.intervals:
            out.append(
                "- **95 % intervals over seeds**: "
                + "; ".join(f"{k} [{fmt(lo)}, {fmt(hi)}]" for k, (lo, hi) in self.intervals.items())
            )
        out.append(f"- **rule** (declared before the result): {self.rule}")
        if self.checks:
            out.append(
                "- **checks**: " + "; ".join(f"{c} (ours {x}) {'holds' if ok else 'fails'}" for c, x, ok in self.checks)
            )
        if self.control:
            out.append(f"- **control**: {self.control}")
        if self.evidence:
            out.append(f"- **evidence**: {Evidence(**self.evidence).text()}")
        if self.setting:
            out.append(f"- **setting**: {'analogue — ' if self.analogue else ''}{self.setting}")
        out.append(f"- **verdict**: {badge(self.status)}" + (f" — {self.reason}" if self.reason else ""))
        if self.note:
            out.append(f"- **note**: {self.note}")
        return [line.replace("\n", " ") for line in out]

    def _repr_markdown_(self) -> str:
        return "\n".join([f"**{self.claim_id}** — {self.statement}", *self.record_lines()])

    def __str__(self) -> str:
        checks = "; ".join(f"{c} (ours {v}) {'ok' if ok else 'FAILS'}" for c, v, ok in self.checks)
        return (
            f"[{self.status}] {self.claim_id}: ours {self.ours} | paper {self.printed}"
            + (f" | {checks}" if checks else "")
            + (f" | {self.reason}" if self.reason else "")
        )


def status_class(status: str) -> str:
    """The CSS class that colours a status (``book/_static/scorecard.css``): ``mr-status-<status with dashes>``."""
    return "mr-status-" + status.replace(" ", "-")


def badge(status: str) -> str:
    """A status as a coloured badge drawn with CSS (:func:`status_class`) and its words, no emoji glyph (those print
    as empty boxes where no emoji font is installed)."""
    return f'<span class="mr-status {status_class(status)}">{status}</span>'


def fmt(x) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, (int,)) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e6):
        return str(int(x))
    try:
        return f"{float(x):.4g}"
    except (TypeError, ValueError):
        return str(x)


def below(x: float, floor: float = 1e-12) -> str:
    """A rounding-level error printed so that it reads the same on every machine: ``≤ 1e-12`` (``floor``)
    when at or below the floor (zero included), else the power of ten above it (``≤ 1e-07`` for 3e-8)."""
    x = abs(float(x))
    if math.isnan(x):
        return "nan"
    return f"≤ {floor if x <= floor else 10.0 ** math.ceil(math.log10(x)):.0e}"


def pass_fail(ok: bool) -> str:
    """How a library sanity check reports itself next to its measured number."""
    return "pass" if ok else "FAIL"


# ----------------------------------------------------------------------------------------- registry
REGISTRY: dict[str, Claim] = {}


def register(*claims: Claim) -> None:
    for c in claims:
        if c.id in REGISTRY:
            raise ClaimError(f"claim {c.id} is declared twice.")
        REGISTRY[c.id] = c


def get(claim_id: str) -> Claim:
    if claim_id not in REGISTRY:
        near = [k for k in REGISTRY if k.split("/")[0] == claim_id.split("/")[0]]
        raise ClaimError(f"unknown claim {claim_id!r}; this paper's claims: {', '.join(sorted(near)) or 'none'}.")
    return REGISTRY[claim_id]


def claims_of(paper: str | None = None, chapter: int | None = None) -> list[Claim]:
    return [
        c
        for c in REGISTRY.values()
        if (paper is None or c.paper == paper) and (chapter is None or c.chapter == chapter)
    ]


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
        if c.metric in m.intervals:
            lo, hi = m.intervals[c.metric]
            bad.append(f"the 95 % interval of {c.metric} [{c.shown(lo)}, {c.shown(hi)}] straddles {c.text()}")
        elif c.metric in m.per_seed and c.op in ("true", "false"):
            held = sum(bool(c.holds(v)) for v in m.per_seed[c.metric])
            bad.append(f"{c.text()} holds on {held} of {len(m.per_seed[c.metric])} seeds")
        else:
            bad.append(f"{c.metric} is {fmt(m.values[c.metric])}")
    return "; ".join(bad)


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
    """Status, the checks shown and the reason that ``rule`` gives measurement ``m`` (module docstring)."""

    def run(cs):
        return [(c.text(), c.shown(m.values[c.metric]), c.holds(m.values[c.metric])) for c in cs]

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
    if not all(ok for *_, ok in testable):
        return "not testable here", testable, rule.untestable_why
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
        reason = (
            interval_crossings(rule.reproduced, m)
            + f": the evidence does not decide the statement (the means alone would read "
            f"'{_point_status(rule, m)}'); more seeds would settle it"
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
    """The verdict ``claim``'s declared rule gives measurement ``m`` (see the module docstring), with its
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
    )


#: statuses a trained claim reaches only from its own evidence (the ones a control must stand beside)
DECIDED = ("reproduced", "partially", "not reproduced", "erratum confirmed", "inconclusive")


#: claims whose null control is known to pass their rule, with why: each reads *not testable here*, and the audit
#: fails on any other null that reaches *reproduced* (a rule that cannot tell a trained model from its null)
NULL_PASSES: dict[str, str] = {}


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


def not_run_verdict(claim: Claim, reason: str | None = None) -> Verdict:
    return Verdict(
        claim.id,
        claim.statement,
        claim.where,
        claim.printed,
        "not run",
        "",
        claim.rule.text(),
        [],
        None,
        reason or claim.not_run,
        "",
        claim.section,
        quote=claim.quote,
        setting=claim.setting,
        analogue=claim.analogue,
    )


def check(claim_id: str, *args, record: bool = True, directory: Path | None = None, **kwargs) -> Verdict:
    """Measure claim ``claim_id`` from the given inputs, judge it by its declared rule, record it for the
    scorecard and return the verdict (it displays as Markdown with the numbers it used). Inputs that do not
    fit the claim's measurement raise :class:`ClaimError` naming the inputs it takes (:func:`inputs_of`)."""
    claim = get(claim_id)
    if claim.measure is None:
        v = not_run_verdict(claim)
    else:
        check_inputs(claim, args, kwargs)
        try:
            v = judge(claim, claim.measure(*args, **kwargs))
        except NotRun as exc:
            v = not_run_verdict(claim, str(exc))
    if record:
        record_verdict(v, directory)
    return v


def inputs_of(claim_id: str) -> str:
    """What ``check(claim_id, ...)`` takes: the measurement's signature and the first line of its docstring."""
    import inspect

    claim = get(claim_id)
    if claim.measure is None:
        return f"{claim_id} has no measurement yet ({claim.not_run})"
    doc = (inspect.getdoc(claim.measure) or "").strip().splitlines() if claim.measure.__name__ != "<lambda>" else []
    where = f" (book/{claim.section}.ipynb shows the call)" if claim.section else ""
    return f"measure{inspect.signature(claim.measure)}" + (f": {doc[0]}" if doc else "") + where


def check_inputs(claim: Claim, args: tuple, kwargs: dict) -> None:
    """Refuse inputs that do not bind to ``claim``'s measurement, with what it takes."""
    import inspect

    try:
        inspect.signature(claim.measure).bind(*args, **kwargs)
    except TypeError as exc:
        raise ClaimError(f"check({claim.id!r}, ...): {exc}; it takes {inputs_of(claim.id)}") from None
    except ValueError:  # a callable without an inspectable signature (a builtin): let the call decide
        return


def across_seeds(ms: list[Measurement], names: list[str] | None = None) -> Measurement:
    """One measurement of a claim from its measurements on several independently trained models (seeds) of one
    recipe, combined by a rule fixed here for every claim (before any result):

    * a number: the mean over seeds, with its 95 % Student-t interval over seeds and the per-seed values (a NaN
      on any seed, e.g. a length at which the model has no room for the effect, makes the mean NaN, so every
      condition on it fails);
    * a boolean: holds only if it holds on every seed (so a testability condition fails when any seed fails it);
    * the evidence: the weakest tier of the seeds, the number of seeds, and each seed's sample and source.
    """
    from ..runstore import mean_interval

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
        st = mean_interval(xs)
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
        Control(controls[0].kind, controls[0].what, across_seeds([c.measurement for c in controls], names))
        if controls[0] is not None
        else None
    )
    return Measurement(
        values,
        shown,
        evidence,
        intervals,
        per_seed,
        note=f"{len(ms)} seeds: numbers are means over seeds (95 % t-interval), booleans hold on every seed",
        control=control,
    )


def check_seeds(
    claim_id: str,
    inputs: list[tuple],
    names: list[str] | None = None,
    *,
    record: bool = False,
    directory: Path | None = None,
    **kwargs,
) -> Verdict:
    """Measure ``claim_id`` on each seed's inputs (``inputs[i]`` = the positional arguments of its measurement),
    combine them with :func:`across_seeds` and judge the result by the declared rule."""
    claim = get(claim_id)
    if claim.measure is None:
        v = not_run_verdict(claim)
    else:
        try:
            v = judge(claim, across_seeds([claim.measure(*args, **kwargs) for args in inputs], names))
        except NotRun as exc:
            v = not_run_verdict(claim, str(exc))
    if record:
        record_verdict(v, directory)
    return v


def measurement_record(m: Measurement) -> dict:
    """``m`` as plain JSON data (numpy numbers → Python), to be stored in a bundle and re-judged later
    (:func:`measurement_from_record`)."""
    return json.loads(json.dumps(asdict(m), default=lambda o: o.item() if hasattr(o, "item") else str(o)))


def measurement_from_record(d: dict) -> Measurement:
    return Measurement(
        d["values"],
        d["shown"],
        Evidence(**d["evidence"]),
        {k: tuple(v) for k, v in d.get("intervals", {}).items()},
        d.get("per_seed", {}),
        d.get("note", ""),
        _control_from_record(d.get("control")),
    )


def _control_from_record(d: dict | None) -> Control | None:
    if not d:
        return None
    return Control(d["kind"], d["what"], measurement_from_record(d["measurement"]))


def check_stored(
    claim_id: str, stored: list[dict], names: list[str], *, record: bool = True, directory: Path | None = None
) -> Verdict:
    """Judge ``claim_id`` from measurements stored per seed (:func:`measurement_record`, or ``{"not_run": why}``
    where the seed could not be measured): combined by :func:`across_seeds`, judged by the declared rule,
    recorded for the scorecard unless ``record=False``. A seed that could not be measured makes it *not run*."""
    claim = get(claim_id)
    missing = [f"{n}: {d['not_run']}" for n, d in zip(names, stored) if "not_run" in d]
    if missing:
        v = not_run_verdict(claim, "; ".join(missing))
    else:
        v = judge(claim, across_seeds([measurement_from_record(d) for d in stored], names))
    if record:
        record_verdict(v, directory)
    return v


# ------------------------------------------------------------------------------------------ records
def _dir(directory: Path | None) -> Path:
    from ..paths import scorecard_dir

    return Path(directory or scorecard_dir())


def record_verdict(v: Verdict, directory: Path | None = None) -> Path:
    """Write ``v`` where the build collects verdicts; a smoke run's go to ``<that folder>/smoke/``, which the
    scorecard never reads."""
    folder = _dir(directory) / ("smoke" if smoke_active() or (v.evidence or {}).get("smoke") else "")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (v.claim_id.replace("/", "__") + ".json")
    path.write_text(json.dumps(asdict(v), indent=1, ensure_ascii=False) + "\n")
    return path


def load_verdicts(directory: Path | None = None) -> dict[str, Verdict]:
    """Recorded verdicts by claim id (a corrupt record raises, naming the file and the fix)."""
    out = {}
    folder = _dir(directory)
    for path in sorted(folder.glob("*__*.json")):
        try:
            data = json.loads(path.read_text())
            data["checks"] = [tuple(c) for c in data["checks"]]
            data["intervals"] = {k: tuple(v) for k, v in data.get("intervals", {}).items()}
            v = Verdict(**data)
        except (json.JSONDecodeError, TypeError, KeyError) as exc:
            raise ClaimError(f"recorded verdict {path} is corrupt ({exc}); delete it and re-run its notebook.") from exc
        out[v.claim_id] = v
    return out
