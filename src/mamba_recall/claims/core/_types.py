"""The claim registry's data: the condition language (:class:`Cond`, :func:`conds`, :class:`Rule`), what a
measurement rests on (:class:`Evidence`, :class:`Measurement`, :class:`Control`), the declared :class:`Claim` and
the :class:`Verdict` it earns, the helpers that print them, and the registry of declared claims
(see :mod:`mamba_recall.claims.core`)."""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ._tex import tex_to_unicode

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
    """A verdict rule declared before the result: see :mod:`mamba_recall.claims.core` for the order of the tests."""

    why: str  # one line of reasoning, written without our numbers
    reproduced: tuple[Cond, ...]  # all hold → reproduced (the paper's statement, as printed)
    partially: tuple[Cond, ...] = ()  # all hold → partially (empty: no partial level)
    erratum: tuple[Cond, ...] = ()  # the corrected statement: holds while the printed fails → erratum confirmed
    testable: tuple[Cond, ...] = ()  # any fails → not testable here
    untestable_why: str = ""  # why, when a testable condition fails
    trained: bool = False  # a trained-model claim: ≥ 3 seeds and an interval for a verdict either way
    # the premise read over its whole interval (a conditional sentence): a ``testable`` condition that fails over its
    # whole interval → not testable here, one the evidence does not decide → inconclusive, whatever the statement's
    # own numbers give; False (every rule before 2026-12-06): each testable condition is read at its point value.
    # Out of the dataclass repr (so the registry's fingerprints of the rules that keep the default are unchanged) and
    # into :meth:`key` only where set
    premise_over_interval: bool = field(default=False, repr=False)

    def key(self) -> str:
        """The rule as the registry's fingerprint reads it: its repr, plus each field kept out of the repr that is
        not at its default (``premise_over_interval``)."""
        extra = [f"{f}={getattr(self, f)!r}" for f in ("premise_over_interval",) if getattr(self, f)]
        return repr(self) + (f" [{', '.join(extra)}]" if extra else "")

    def __post_init__(self):
        if not self.why.strip():
            raise ClaimError("a rule needs its one line of reasoning (why).")
        if not self.reproduced:
            raise ClaimError("a rule needs at least one 'reproduced' condition.")
        if self.testable and not self.untestable_why:
            raise ClaimError("a rule with 'testable' conditions must say why a failure makes it untestable.")
        if self.premise_over_interval and not self.testable:
            raise ClaimError(
                "premise_over_interval reads the 'testable' conditions over their intervals: the rule has none."
            )

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
            over = (
                " (each over its whole 95 % interval; undecided → inconclusive)" if self.premise_over_interval else ""
            )
            parts.insert(0, f"testable only if {' and '.join(c.text() for c in self.testable)}{over}")
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
        from ...paths import REPO_ROOT

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
class Revision:
    """A rule revised after its evidence was committed (the page says rules are declared before the result; where
    one was not, the record says so): when (``date``, and the ``commit`` that revised it where known), why
    (``reason``, e.g. an open-review objection), the rule before (``rule_before``, its words) and the verdict the
    earlier rule gave on the same evidence (``status_before``, one of :data:`STATUSES`)."""

    date: str
    reason: str
    rule_before: str
    status_before: str
    commit: str = ""

    def __post_init__(self):
        if self.status_before not in STATUSES:
            raise ClaimError(f"a rule revision's status_before must be one of {STATUSES}, got {self.status_before!r}.")
        if not self.reason.strip() or not self.rule_before.strip():
            raise ClaimError("a rule revision says why (reason) and what the rule was (rule_before).")

    def text(self) -> str:
        at = f" at {self.commit[:7]}" if self.commit else ""
        return (
            f"rule revised after the data ({self.date}{at}): {self.reason} Under the earlier rule "
            f"(“{self.rule_before}”) the verdict was {self.status_before}."
        )


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
    revisions: tuple[Revision, ...] = ()  # the rule's revisions after its evidence was committed, oldest first
    #: for a claim that can read "erratum confirmed": its root cause, one short id shared by every claim the same
    #: slip produces ("001-delta-drops-one-plus"); the scorecard counts errata by cause (issue 51)
    cause: str = ""
    #: the committed evidence the claim reads, declared once: an experiment's name (its strongest complete committed
    #: bundle, :func:`mamba_recall.results.evidence`) or a function of no arguments returning a bundle (a chapter's
    #: loader with a fallback of its own). :func:`check` loads it and gives it to the measurement as its first
    #: argument, so a page cannot judge the claim on other evidence; None: the measurement takes what it is given
    reads: str | Callable[[], object] | None = None

    def __post_init__(self):
        if self.analogue and not self.setting.strip():
            raise ClaimError(f"claim {self.id}: an analogue says what it stands in for (setting).")
        if not re.fullmatch(r"(000|001|002|003|004|book)/[A-Za-z0-9_.()+-]+", self.id):
            raise ClaimError(f"claim id {self.id!r} must be '<paper>/<name>' with paper in {tuple(PAPERS)}.")
        if self.measure is None and not self.not_run:
            raise ClaimError(f"claim {self.id}: no measurement, so 'not_run' must say what it would take.")
        if self.reads is not None and self.measure is None:
            raise ClaimError(f"claim {self.id}: it declares the evidence it reads but no measurement to read it.")
        if self.reads is not None and not (isinstance(self.reads, str) or callable(self.reads)):
            raise ClaimError(f"claim {self.id}: reads={self.reads!r}: name an experiment or give a loader function.")
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
    revisions: list = field(default_factory=list)  # Revision fields as dicts (Claim.revisions), oldest first
    cause: str = ""  # an erratum's root cause (Claim.cause)

    def record_lines(self) -> list[str]:
        """The claim's whole record as Markdown bullets (the notebook's display and the scorecard's dropdown):
        the paper's sentence and numbers, ours with the intervals, the rule, the checks, the control, the
        evidence, the setting and the verdict."""
        # the paper's sentence as text: its TeX would show raw outside math (a notebook's Markdown output, a page)
        said = f"“{tex_to_unicode(self.quote)}”" if self.quote else self.statement
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
        if self.revisions:
            out.append(f"- **rule**: {self.rule}")
            out += [f"- **{Revision(**r).text()}**" for r in self.revisions]
        else:
            out.append(f"- **rule** (declared before the result): {self.rule}")
        if self.checks:
            out.append("- **checks**: " + "; ".join(f"{c} (ours {x}) {_HELD[ok]}" for c, x, ok in self.checks))
        if self.control:
            out.append(f"- **control**: {self.control}")
        if self.evidence:
            out.append(f"- **evidence**: {Evidence(**self.evidence).text()}")
        if self.setting:
            out.append(f"- **setting**: {'analogue — ' if self.analogue else ''}{self.setting}")
        out.append(f"- **verdict**: {badge(self.status)}" + (f" — {self.reason}" if self.reason else ""))
        if self.cause and self.status == "erratum confirmed":
            out.append(f"- **erratum's root cause**: `{self.cause}`")
        if self.note:
            out.append(f"- **note**: {self.note}")
        return [line.replace("\n", " ") for line in out]

    def _repr_markdown_(self) -> str:
        return "\n".join([f"**{self.claim_id}** — {self.statement}", *self.record_lines()])

    def __str__(self) -> str:
        checks = "; ".join(f"{c} (ours {v}) {_HELD_SHORT[ok]}" for c, v, ok in self.checks)
        return (
            f"[{self.status}] {self.claim_id}: ours {self.ours} | paper {self.printed}"
            + (f" | {checks}" if checks else "")
            + (f" | {self.reason}" if self.reason else "")
        )


#: how a check's outcome reads on a record (None: the measurement leaves the number undecided, a NaN)
_HELD = {True: "holds", False: "fails", None: "undecided"}
_HELD_SHORT = {True: "ok", False: "FAILS", None: "UNDECIDED"}


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
#: The registry's order: chapter by chapter, Chapter 1 first (the order the scorecard and the overviews have listed
#: since Chapter 0 joined), each chapter's claims in the order its ``claims`` package registers them; claims
#: registered from outside the chapters come last. Import order would not do: a runner or a view that imports
#: Chapter 0's claims before ``mamba_recall.claims`` has imported Chapter 1's registers Chapter 0 first.
REGISTRY_ORDER = (1, 0, 2, 3, 4, 5)
_CHAPTER_MODULE = re.compile(r"mamba_recall\.chapters\.ch(\d+)_")
_RANK: dict[str, tuple[int, int]] = {}


def quoted(quotes: dict[str, str], *claims: Claim) -> tuple[Claim, ...]:
    """``claims`` each with its source's sentence ``quotes[claim.id]`` as its ``quote`` (a chapter keeps the sentences
    its claims test in one ``QUOTES`` table); ClaimError naming a claim the table has no sentence for."""
    missing = [c.id for c in claims if c.id not in quotes]
    if missing:
        raise ClaimError(f"no quoted sentence for claims {missing}; add each one's sentence, verbatim, to QUOTES.")
    return tuple(replace(c, quote=quotes[c.id]) for c in claims)


def register(*claims: Claim) -> None:
    """Add ``claims`` to the registry; a chapter's ``claims`` package calls it (the chapter is read from the calling
    module's name, for :data:`REGISTRY_ORDER`). ClaimError on an id declared twice."""
    match = _CHAPTER_MODULE.match(sys._getframe(1).f_globals.get("__name__", ""))
    chapter = int(match.group(1)) if match else None
    rank = REGISTRY_ORDER.index(chapter) if chapter in REGISTRY_ORDER else len(REGISTRY_ORDER)
    for c in claims:
        if c.id in REGISTRY:
            raise ClaimError(f"claim {c.id} is declared twice.")
        REGISTRY[c.id] = c
        _RANK[c.id] = (rank, len(_RANK))


def get(claim_id: str) -> Claim:
    if claim_id not in REGISTRY:
        near = [k for k in REGISTRY if k.split("/")[0] == claim_id.split("/")[0]]
        raise ClaimError(f"unknown claim {claim_id!r}; this paper's claims: {', '.join(sorted(near)) or 'none'}.")
    return REGISTRY[claim_id]


def claims_of(paper: str | None = None, chapter: int | None = None) -> list[Claim]:
    """The registered claims in the registry's order (:data:`REGISTRY_ORDER`), whichever module imported a chapter's
    claims first."""
    last = (len(REGISTRY_ORDER) + 1, 0)  # a claim put in REGISTRY by hand (a test) comes last
    return sorted(
        (
            c
            for c in REGISTRY.values()
            if (paper is None or c.paper == paper) and (chapter is None or c.chapter == chapter)
        ),
        key=lambda c: _RANK.get(c.id, last),
    )
