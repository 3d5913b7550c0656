"""Chapter 3, §4.1–4.2 and Apps. A.3, D.2 of paper 003, checked in ``book/03_selectivity/02_keep_nth.ipynb``: KEEP
n-TH, the exact construction (Cor. 2), the trained models of Tab. 1 and Tabs. A.1–A.4, and Fig. 1's forgetting and
retaining of a trained Mamba (its e^{−λΔ} histograms; their tables, statistics and claims are in
:mod:`.keep_nth_fig1`, registered from here in the section's order).

The trained claims read the committed runner bundles per seed and carry null controls, as the package docstring
(:mod:`mamba_recall.chapters.ch3_selectivity.claims`, the "module docstring" the rules and docstrings below cite) says.
"""

from __future__ import annotations

from dataclasses import replace

from mamba_recall.claims.core import Claim, Control, Evidence, Measurement, NotRun, Revision, Rule, conds, over_seeds
from ._common import EXACT, RANGES, RUN_KEEP, SOLVED, _chance_null, _summary, _vocab
from .keep_nth_fig1 import FIG1_LEFT, FIG1_RIGHT

#: this module's book section (its claims are judged on that page)
SECTION = "03_selectivity/02_keep_nth"


KEEP_TS = (10, 20, 30, 40, 50)  # the T grid of Tabs. A.1–A.4

RECIPE_UNTESTABLE = (
    "Mamba+PE, trained by the same recipe and seeds at the same T, does not solve the task (or is not in the bundle): "
    "a model that fails here might only be undertrained"
)


def _grid_shares(m: Measurement, *metrics: str) -> Measurement:
    """``m`` without an interval on ``metrics``: shares of the paper's grid that the runs cover are a property of the
    grid run, the same on every seed, not a quantity estimated from them (so a share below 1 is untested, never
    'refuted beyond its interval'); their per-seed values stay."""
    return replace(m, intervals={k: v for k, v in m.intervals.items() if k not in metrics})


def measure_cor2(keep_err: dict, token_acc: float, sequences: int) -> Measurement:
    worst = max(keep_err.values())
    return Measurement(
        {"max_error_real": worst, "token_accuracy": token_acc},
        f"max |y_t − x_n| {worst:.0e} (real inputs; euler/zoh one channel, aonly two for t > n); token "
        f"model accuracy {token_acc:.4f} on {sequences} sequences",
        Evidence.exact(f"T = 50, n = 5; {sequences} token sequences"),
    )


COR2 = Claim(
    "003/Cor2",
    "an S6 layer on input augmented with time PE solves KEEP n-TH exactly",
    "§4.1, Cor. 2; App. A.3",
    "exact (w_Δ → −∞; no number given)",
    Rule(
        why="an exact construction: real-valued outputs equal x_n to float64 round-off (1e-9 allows the softplus "
        "tails at W = 60) and the token model gets every position right",
        reproduced=conds(("max_error_real", "<=", 1e-9), ("token_accuracy", ">=", EXACT)),
    ),
    measure_cor2,
    SECTION,
)


# ============================================================================ §4.1 KEEP n-TH (trained)
def _keep_runs(bundle):
    runs = bundle.tables["rows"]
    return runs, bundle.config.get("preset", "ci")


def measure_tab1(bundle) -> Measurement:
    """Tab. 1 (T = 50, d = 32, N = 8): per seed, the lower of Mamba+PE's and the Transformer's accuracy
    (``solved_min``) and the highest of Mamba's, S4D's and S4D+PE's (``failing_max``), combined over seeds; a
    null control at the generator's chance level 1/|V|."""
    runs, preset = _keep_runs(bundle)
    sub = runs[(runs["T"] == 50) & (((runs.d == 32) & (runs.N == 8)) | (runs.model == "transformer"))]
    if sub.empty or set(sub.model) < {"s6+pe", "s6", "s4d", "s4d+pe", "transformer"}:
        raise NotRun(f"the {preset} bundle has no T = 50 runs; Tab. 1 needs {RUN_KEEP}")

    def one(r):
        a = r.groupby("model").accuracy.mean()
        return Measurement(
            {
                "solved_min": float(min(a["s6+pe"], a["transformer"])),
                "failing_max": float(max(a["s6"], a["s4d"], a["s4d+pe"])),
            },
            ", ".join(f"{m} {x:.2f}" for m, x in a.items()),
            Evidence.from_bundle(bundle, "T = 50, d = 32, N = 8", 1),
        )

    V = _vocab(bundle)
    acc = sub.groupby("model").accuracy.mean()
    m = over_seeds(sub, one, bounds=RANGES)
    m = replace(m, control=_chance_null(sub, 1 / V, one, f"every model at chance, 1/|V| = 1/{V}"))
    return _summary(m, ", ".join(f"{k} {a:.2f}" for k, a in acc.items()) + " (T = 50, d = 32, N = 8; means over seeds)")


TAB1 = Claim(
    "003/Tab1",
    "KEEP FIFTH at T = 50: Mamba+PE and a Transformer solve it; Mamba without PE, S4D and S4D+PE fail",
    "§4.1, Tab. 1",
    "Mamba+PE 1.00, Mamba 0.08, S4D 0.09, S4D+PE 0.08, Transformer 1.0 (3 seeds, s.e. 0.00)",
    Rule(
        why="solved means ≥ 0.99 (printed 1.00); the failing models are printed at 0.08–0.09, and ≤ 0.15 allows our "
        "reduced protocol while staying far from any partial solution",
        reproduced=conds(("solved_min", ">=", SOLVED), ("failing_max", "<=", 0.15)),
        trained=True,
    ),
    measure_tab1,
    SECTION,
    reads="ch3_keep_nth",
    not_run=RUN_KEEP,
)


KEEP_NS = (8, 32, 64)  # the N rows of Mamba+PE (d = 32) in Tabs. A.1–A.2
SOLVERS = ("s6+pe", "transformer")  # the models Tabs. A.1–A.2 print solving at every T


def measure_keep_solved(bundle) -> Measurement:
    """Tabs. A.1–A.2: Mamba+PE (d = 32, every N) and the Transformer solve KEEP n-TH at every T of the grid: per seed
    the lowest accuracy over the (T, d, N, model) cells, the share of the paper's five T covered by the model that
    covers fewest (coverage per model, never pooled), and the share of Mamba+PE's N ∈ {8, 32, 64} covered."""
    runs, preset = _keep_runs(bundle)
    sub = runs[((runs.model == "s6+pe") & (runs.d == 32)) | (runs.model == "transformer")]
    if sub.empty:
        raise NotRun(f"the {preset} bundle has no Mamba+PE or Transformer runs; needs {RUN_KEEP}")
    Ts = {k: sorted(set(sub[sub.model == k]["T"])) for k in SOLVERS}

    def one(r):
        cell = r.groupby(["T", "d", "N", "model"]).accuracy.mean()
        per_model = [len(set(r[r.model == k]["T"]) & set(KEEP_TS)) / len(KEEP_TS) for k in SOLVERS]
        ns = set(r[r.model == "s6+pe"].N)
        return Measurement(
            {
                "min_accuracy": float(cell.min()),
                "T_coverage": float(min(per_model)),
                "N_coverage_mamba_pe": len(ns & set(KEEP_NS)) / len(KEEP_NS),
            },
            f"lowest cell {cell.min():.4f}",
            Evidence.from_bundle(bundle, "T per model: " + "; ".join(f"{k} {t}" for k, t in Ts.items()), 1),
        )

    V = _vocab(bundle)
    cell = sub.groupby(["T", "d", "N", "model"]).accuracy.mean()
    null = _chance_null(sub, 1 / V, one, f"every model at chance, 1/|V| = 1/{V}")
    shares = ("T_coverage", "N_coverage_mamba_pe")
    null = replace(null, measurement=_grid_shares(null.measurement, *shares))
    m = replace(_grid_shares(over_seeds(sub, one, bounds=RANGES), *shares), control=null)
    return _summary(
        m,
        "; ".join(f"{k} T={T} d={d} N={N}: {a:.4f}" for (T, d, N, k), a in cell.items()) + " (means over seeds)",
        "T covered per model: "
        + "; ".join(f"{k} {t} of {list(KEEP_TS)}" for k, t in Ts.items())
        + f"; Mamba+PE N covered: {sorted(set(sub[sub.model == 's6+pe'].N))} of {list(KEEP_NS)}",
    )


TABA1_A2 = Claim(
    "003/TabA1-A2",
    "Mamba+PE (d = 32) and a 1-layer Transformer solve KEEP n-TH at every T ∈ {10, …, 50}",
    "App. D.2, Tabs. A.1–A.2",
    "Mamba+PE d = 32 (N = 8, 32, 64): 1.00 at every T; Transformer 1.00 at every T",
    Rule(
        why="solved means ≥ 0.99 in every cell; the claim covers the five lengths for each of the two models (coverage "
        "counted per model, the one that covers fewest deciding) and Mamba+PE's three N rows, so solving at a subset "
        "of them is partial (a weaker reading of the same sentence: solved wherever it was run). The quoted sentence "
        "says Mamba+PE solves at any length, but Tab. A.2 prints d = 8 below 1.00 at T ≥ 30 (0.22–0.98), so the "
        "rule tests the d = 32 rows, where the tables print 1.00 at every T",
        reproduced=conds(("min_accuracy", ">=", SOLVED), ("T_coverage", ">=", 1.0), ("N_coverage_mamba_pe", ">=", 1.0)),
        partially=conds(("min_accuracy", ">=", SOLVED)),
        trained=True,
    ),
    measure_keep_solved,
    SECTION,
    reads="ch3_keep_nth",
    not_run=RUN_KEEP,
    revisions=(
        Revision(
            date="2026-12-04",
            reason="Open review (referee-D; review of d645e6c, issue 51): T coverage was computed over Mamba+PE "
            "only, while the Transformer ran at T = 50 alone and Mamba+PE at N = 8 alone (the paper has N = 8, 32, "
            "64); coverage is now counted per model, and over Mamba+PE's N.",
            rule_before="reproduced if min_accuracy ≥ 0.99 and T_coverage ≥ 1; partially if min_accuracy ≥ 0.99; "
            "otherwise not reproduced",
            status_before="reproduced",
        ),
    ),
)


def s4dpe_t20_missing(bundle) -> str | None:
    """What ``bundle`` lacks for :func:`measure_s4dpe_t20` (S4D+PE and, as its positive control, Mamba+PE runs at
    T = 20, d = 32, N = 8), or None."""
    runs, preset = _keep_runs(bundle)
    sub = runs[(runs["T"] == 20) & (runs.d == 32) & (runs.N == 8) & runs.model.isin(["s4d+pe", "s6+pe"])]
    if set(sub.model) != {"s4d+pe", "s6+pe"}:
        return f"the {preset} bundle has no S4D+PE and Mamba+PE runs at T = 20, d = 32, N = 8"
    return None


def keep_t20_evidence():
    """The evidence 003/TabA1-S4D+PE reads (``Claim.reads``): the strongest committed ``ch3_keep_nth`` bundle with
    S4D+PE and Mamba+PE at T = 20 (:func:`s4dpe_t20_missing`; the cpu-hours grid has S4D without PE at T = 50 only)."""
    from mamba_recall.results import evidence

    return evidence("ch3_keep_nth", lacks=s4dpe_t20_missing)


S4D_T20_PRINTED = 0.10  # Tab. A.3, S4D without PE, T = 20, d = 32, N = 8


def measure_s4dpe_t20(bundle, pe_spread: dict) -> Measurement:
    """Tab. A.1, S4D+PE at T = 20 (d = 32, N = 8): per seed |S4D+PE − 0.72| and |S4D+PE − 0.10| (the paper's S4D
    without PE in that cell, Tab. A.3), Mamba+PE of the same seeds at T = 20 (whether the recipe trains a model
    that can solve the task), with the exact check ``pe_spread``
    (:func:`mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth.pe_logit_dependence`: per mixer, how much the PE's effect on the
    logits varies across input sequences; 0 means the PE is only a per-position bias), and a null control at the
    generator's chance level (every model at 1/|V|). Our S4D without PE at T = 20 is shown where the bundle has it."""
    missing = s4dpe_t20_missing(bundle)
    if missing:
        raise NotRun(f"{missing}; needs {RUN_KEEP}")
    runs, preset = _keep_runs(bundle)
    sub = runs[(runs["T"] == 20) & (runs.d == 32) & (runs.N == 8) & runs.model.isin(["s4d+pe", "s6+pe", "s4d"])]

    def one(r):
        a = r.groupby("model").accuracy.mean()
        return Measurement(
            {
                "abs_diff_from_printed": abs(float(a["s4d+pe"]) - 0.72),
                "abs_diff_from_printed_s4d": abs(float(a["s4d+pe"]) - S4D_T20_PRINTED),
                "pe_effect_spread_s4d": float(pe_spread["s4d"]),
                "recipe_solves_with_pe": _recipe_solves_with_pe(r, r[r.model == "s4d+pe"]),
            },
            f"S4D+PE {a['s4d+pe']:.3f}, Mamba+PE {a['s6+pe']:.4f}",
            Evidence.from_bundle(bundle, "T = 20, d = 32, N = 8", 1),
        )

    V = _vocab(bundle)
    acc = sub.groupby("model").accuracy.mean()
    ours_s4d = f", our S4D without PE {acc['s4d']:.3f}" if "s4d" in acc else ""
    m = replace(
        over_seeds(sub, one, bounds=RANGES),
        control=_chance_null(sub, 1 / V, one, f"every model at chance, 1/|V| = 1/{V} (the PE check as measured)"),
    )
    return _summary(
        m,
        f"S4D+PE {acc['s4d+pe']:.3f}, Mamba+PE {acc['s6+pe']:.4f}{ours_s4d} (T = 20, d = 32, N = 8; means over "
        f"seeds); spread across inputs of the PE's effect on the logits: S4D {pe_spread['s4d']:.1e}, S6 "
        f"{pe_spread['s6']:.1e}",
        "the PE check is exact (float64, freshly initialised models; it holds for any weights)",
    )


TABA1_S4DPE = Claim(
    "003/TabA1-S4D+PE",
    "S4D+PE (d = 32, N = 8) reaches 0.72 on KEEP n-TH at T = 20, far above S4D without PE (0.10, Tab. A.3)",
    "App. D.2, Tab. A.1 (T = 20 column)",
    "S4D+PE 0.72 (0.01); S4D 0.10 (0.00) in Tab. A.3",
    Rule(
        why="the printed 0.72 ± 0.10 (seed s.e. 0.01 plus our reduced protocol); but in the architecture described "
        "(embedding → depthwise S4D → linear) the PE reaches the logits only as a per-position bias, so the "
        "corrected statement is a PE effect identical for every input (1e-9) and S4D+PE at the level the paper "
        "prints for S4D without PE in that cell (0.10 ± 0.05). Missing 0.72 is a failure of the trained model, so "
        "it is testable only where the same recipe and seeds train Mamba+PE to solve the task at T = 20 (≥ 0.99)",
        reproduced=conds(("abs_diff_from_printed", "<=", 0.10)),
        erratum=conds(("pe_effect_spread_s4d", "<=", 1e-9), ("abs_diff_from_printed_s4d", "<=", 0.05)),
        testable=conds(("recipe_solves_with_pe", ">=", SOLVED)),
        untestable_why=RECIPE_UNTESTABLE,
        trained=True,
    ),
    measure_s4dpe_t20,
    SECTION,
    reads=keep_t20_evidence,
    not_run=RUN_KEEP,
    setting="the architecture as the paper describes it (embedding → depthwise S4D → linear, App. D.2), in which "
    "the PE can only add a per-position bias to the logits (exact, for any weights). What this can conclude: that "
    "model cannot reach 0.72 where S4D gets 0.10, so the table and the described architecture disagree. What it "
    "cannot: that the authors' number is wrong. Their own tables show a PE effect the described S4D cannot have "
    "(T = 10, d = 8: S4D+PE 0.99 in Tab. A.1 against S4D 0.08 in Tab. A.3), so their S4D+PE was most likely "
    "another model (a channel-mixing input map or a normalisation would let the PE reach the tokens), which we "
    "cannot rerun. The trained half of the corrected statement compares S4D+PE with the paper's S4D (0.10), which "
    "a model at chance (1/128) misses; our own S4D without PE at T = 20 is in the ci bundle only (1 seed)",
    revisions=(
        Revision(
            date="2026-12-04",
            reason="Open review (referee-D; review of d645e6c, issue 51): the cpu-hours bundle has S4D+PE at T = 20 "
            "on 3 seeds (0.1137, 0.1120, 0.1148) beside Mamba+PE solving it, but no S4D without PE there, so the "
            "bundle choice no longer requires S4D, the trained half of the corrected statement compares with the "
            "paper's S4D (0.10), and a positive control (Mamba+PE, same recipe and seeds) is required.",
            rule_before="reproduced if abs_diff_from_printed ≤ 0.1; erratum confirmed if that fails while "
            "pe_effect_spread_s4d ≤ 1e-09 and s4dpe_vs_s4d ≤ 0.05; otherwise not reproduced",
            status_before="inconclusive",
        ),
    ),
    cause="003-s4dpe-table-vs-described-architecture",
)


def _recipe_solves_with_pe(r, failing) -> float:
    """The lowest Mamba+PE (d = 32) accuracy of runs ``r`` over the T of the ``failing`` runs (the same seed and
    recipe), NaN where Mamba+PE lacks one of those T: whether the recipe that 'fails' could train a model at all."""
    Ts = set(failing["T"])
    pe = r[(r.model == "s6+pe") & (r.d == 32) & r["T"].isin(Ts)]
    if not Ts or set(pe["T"]) != Ts:
        return float("nan")
    return float(pe.groupby("T").accuracy.mean().min())


SOLVER_NULL = (
    "Mamba+PE (d = 32) of the same runs and seeds in the failing models' place, read by the same rule: a model the "
    "recipe trained to solve the task must not read as failing"
)


def _solver_null(runs, failing: tuple, measure_one) -> Control | None:
    """The null control of a 'fails' claim: ``measure_one`` per seed on ``runs`` with the Mamba+PE (d = 32) rows
    relabelled as each of the ``failing`` models (the rest dropped); None where the runs have no Mamba+PE (then the
    rule's testability, the recipe training Mamba+PE, fails as well)."""
    import pandas as pd

    pe = runs[(runs.model == "s6+pe") & (runs.d == 32)]
    if pe.empty:
        return None
    solver = pd.concat([pe.assign(model=m) for m in failing] + [pe], ignore_index=True)
    return Control("null", SOLVER_NULL, over_seeds(solver, measure_one, bounds=RANGES))


S4DPE_T10_PRINTED = 0.94  # Tab. A.1, S4D+PE at T = 10, d = 32, N = 8: where the paper's S4D+PE learns the task


def measure_s4dpe_decline(bundle) -> Measurement:
    """Tab. A.2: S4D+PE at T ∈ {40, 50} (every d, N) fails (printed 0.03–0.15): per seed the highest accuracy over
    those cells. A model at chance fails too, and one that never learned the task cannot show that it degrades
    with T: testable only where the recipe trains Mamba+PE to solve it and S4D+PE learns the task at T = 10 (d = 32,
    N = 8), as the paper's does (0.94); the null control is Mamba+PE read by the same rule."""
    runs, preset = _keep_runs(bundle)
    sub = runs[(runs.model == "s4d+pe") & runs["T"].isin([40, 50])]
    if sub.empty:
        raise NotRun(f"the {preset} bundle has no S4D+PE runs at T ≥ 40; needs {RUN_KEEP}")

    def one(r):
        fail = r[(r.model == "s4d+pe") & r["T"].isin([40, 50])]
        short = r[(r.model == "s4d+pe") & (r["T"] == 10) & (r.d == 32) & (r.N == 8)]
        mx = float(fail.groupby(["T", "d", "N"]).accuracy.mean().max())
        return Measurement(
            {
                "max_accuracy_T40_50": mx,
                "recipe_solves_with_pe": _recipe_solves_with_pe(r, fail),
                "s4dpe_accuracy_T10": float(short.accuracy.mean()) if len(short) else float("nan"),
            },
            f"max {mx:.3f}",
            Evidence.from_bundle(bundle, "T ∈ {40, 50}; S4D+PE at T = 10", 1),
        )

    cell = sub.groupby(["T", "d", "N"]).accuracy.mean()
    first = runs[(runs.model == "s4d+pe") & (runs["T"] == min(runs["T"]))].accuracy.mean()
    both = runs[runs.model.isin(["s4d+pe", "s6+pe"]) & runs["T"].isin([10, 40, 50])]
    return _summary(
        replace(over_seeds(both, one, bounds=RANGES), control=_solver_null(both, ("s4d+pe",), one)),
        f"S4D+PE at T ∈ {{40, 50}}: max {cell.max():.3f} (at T = {min(runs['T'])}: {first:.3f}, where the paper "
        f"prints {S4DPE_T10_PRINTED} at d = 32; means over seeds)",
    )


TABA2_S4DPE = Claim(
    "003/TabA2-S4D+PE",
    "S4D+PE degrades with T and fails at T ∈ {40, 50}",
    "App. D.2, Tab. A.2",
    "S4D+PE 0.94 at T = 10 (d = 32, N = 8); 0.03–0.15 at T = 40, 0.03–0.10 at T = 50 (every d, N)",
    Rule(
        why="the printed values are at most 0.15; ≤ 0.20 allows our reduced protocol and stays far from solving. "
        "The quoted sentence says S4D fails already at T = 20, but Tab. A.1 prints S4D+PE 0.72 there (d = 32), so "
        "the rule tests only T ∈ {40, 50}, where the sentence and the table agree; T = 20 is 003/TabA1-S4D+PE. "
        "A model that learned nothing fails too, so a 'fails' verdict needs the same recipe to train: testable only "
        "if Mamba+PE (d = 32), trained by the same recipe and seeds at the same T, solves the task (≥ 0.99), and "
        "'degrades' needs the failing model to learn where the paper's does: S4D+PE at T = 10 (d = 32, N = 8) "
        f"within 0.10 of the printed {S4DPE_T10_PRINTED} (≥ 0.84)",
        reproduced=conds(("max_accuracy_T40_50", "<=", 0.20)),
        testable=conds(("recipe_solves_with_pe", ">=", SOLVED), ("s4dpe_accuracy_T10", ">=", 0.84)),
        untestable_why="either Mamba+PE, trained by the same recipe and seeds at the same T, does not solve the task, "
        "or S4D+PE does not learn it at T = 10, where the paper's reaches 0.94 (d = 32): a model that never learned "
        "the task fails at every T and cannot show that it degrades with T (in the architecture described the PE "
        "reaches the logits only as a per-position bias: 003/TabA1-S4D+PE)",
        trained=True,
    ),
    measure_s4dpe_decline,
    SECTION,
    reads="ch3_keep_nth",
    not_run=RUN_KEEP,
    revisions=(
        Revision(
            date="2026-12-04",
            reason="Open review (review of d645e6c, issue 51): our S4D+PE scores 0.185 at T = 10, near the copy "
            "baseline 0.167, where the paper's reaches 0.94; a failure verdict needs the failing model to learn "
            "where it should, so S4D+PE learning at T = 10 is now a testability condition.",
            rule_before="testable only if recipe_solves_with_pe ≥ 0.99; reproduced if max_accuracy_T40_50 ≤ 0.2; "
            "otherwise not reproduced",
            status_before="reproduced",
        ),
    ),
)


def measure_keep_failing(bundle) -> Measurement:
    """Tabs. A.3–A.4: Mamba without PE and S4D fail at every T (the tables' largest value is 0.28): per seed the
    highest accuracy over the (T, d, N, model) cells. A model at chance fails too: the rule is testable only where
    the recipe trains Mamba+PE to solve the task, and the null control is that Mamba+PE read by the same rule."""
    runs, preset = _keep_runs(bundle)
    sub = runs[runs.model.isin(["s6", "s4d"])]
    if sub.empty:
        raise NotRun(f"the {preset} bundle has no Mamba or S4D runs without PE; needs {RUN_KEEP}")
    Ts = sorted(set(sub["T"]))

    def one(r):
        fail = r[r.model.isin(["s6", "s4d"])]
        cell = fail.groupby(["T", "d", "N", "model"]).accuracy.mean()
        return Measurement(
            {
                "max_accuracy": float(cell.max()),
                "T_coverage": len(set(fail["T"]) & set(KEEP_TS)) / len(KEEP_TS),
                "recipe_solves_with_pe": _recipe_solves_with_pe(r, fail),
            },
            f"highest cell {cell.max():.3f}",
            Evidence.from_bundle(bundle, f"T ∈ {Ts}", 1),
        )

    cell = sub.groupby(["T", "d", "N", "model"]).accuracy.mean()
    both = runs[runs.model.isin(["s6", "s4d", "s6+pe"])]
    null = _solver_null(both, ("s6", "s4d"), one)
    if null is not None:
        null = replace(null, measurement=_grid_shares(null.measurement, "T_coverage"))
    return _summary(
        replace(_grid_shares(over_seeds(both, one, bounds=RANGES), "T_coverage"), control=null),
        "; ".join(f"{k} T={T} d={d} N={N}: {a:.3f}" for (T, d, N, k), a in cell.items()) + " (means over seeds)",
        f"T covered: {Ts} of {list(KEEP_TS)}",
    )


TABA3_A4 = Claim(
    "003/TabA3-A4",
    "without PE, Mamba and S4D fail KEEP n-TH at every T",
    "App. D.2, Tabs. A.3–A.4",
    "0.03–0.28 (Mamba), 0.03–0.20 (S4D) over d, N, T",
    Rule(
        why="the tables' largest failing value is 0.28; ≤ 0.30 allows rounding; the claim covers five lengths. "
        "A model that learned nothing fails too, so a 'fails' verdict needs the same recipe to train: testable only "
        "if Mamba+PE (d = 32), trained by the same recipe and seeds at the same T, solves the task (≥ 0.99), as "
        "the paper's tables set the failing models beside Mamba+PE solving (declared with the null controls, "
        "before reading this number)",
        reproduced=conds(("max_accuracy", "<=", 0.30), ("T_coverage", ">=", 1.0)),
        partially=conds(("max_accuracy", "<=", 0.30)),
        testable=conds(("recipe_solves_with_pe", ">=", SOLVED)),
        untestable_why=RECIPE_UNTESTABLE,
        trained=True,
    ),
    measure_keep_failing,
    SECTION,
    reads="ch3_keep_nth",
    not_run=RUN_KEEP,
)


#: this section's claims, in the registry's order
CLAIMS = (COR2, TAB1, TABA1_A2, TABA1_S4DPE, TABA2_S4DPE, TABA3_A4, FIG1_RIGHT, FIG1_LEFT)
