"""Chapter 3, §4.1–4.2 and Apps. A.3, D.2 of paper 003, checked in ``book/03_selectivity/02_keep_nth.ipynb``: KEEP
n-TH, the exact construction (Cor. 2), the trained models of Tab. 1 and Tabs. A.1–A.4, and Fig. 1's forgetting and
retaining of a trained Mamba (its e^{−λΔ} histograms, :func:`decay_summary`, :func:`fig1_stats`).

The trained claims read the committed runner bundles per seed and carry null controls, as the package docstring
(:mod:`mamba_recall.claims.ch3`, the "module docstring" the rules and docstrings below cite) says.
"""

from __future__ import annotations

import numpy as np

from dataclasses import replace

from ..core import Claim, Control, Evidence, Measurement, NotRun, Rule, across_seeds, conds
from ._common import EXACT, SECTION, SOLVED, _chance_null, _per_seed, _summary, _vocab


KEEP_TS = (10, 20, 30, 40, 50)  # the T grid of Tabs. A.1–A.4

RUN_KEEP = (
    "`python -m mamba_recall.experiments.ch3_keep_nth --preset paper --device cuda` (Tabs. A.1–A.4 grid, "
    "3 seeds; about 10 GPU-hours on one H100 with the reduced protocol)"
)

RECIPE_UNTESTABLE = (
    "Mamba+PE, trained by the same recipe and seeds at the same T, does not solve the task (or is not in the bundle): "
    "a model that fails here might only be undertrained"
)


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
    SECTION["keep"],
)


# ============================================================================ §4.1 KEEP n-TH (trained)
def _keep_runs(bundle):
    runs = bundle.tables["runs"]
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
    m = _per_seed(sub, one)
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
    SECTION["keep"],
    not_run=RUN_KEEP,
)


def measure_keep_solved(bundle) -> Measurement:
    """Tabs. A.1–A.2: Mamba+PE (d = 32, every N) and the Transformer solve KEEP n-TH at every T of the grid: per seed
    the lowest accuracy over the (T, d, N, model) cells, and the share of the paper's five T covered."""
    runs, preset = _keep_runs(bundle)
    sub = runs[((runs.model == "s6+pe") & (runs.d == 32)) | (runs.model == "transformer")]
    if sub.empty:
        raise NotRun(f"the {preset} bundle has no Mamba+PE or Transformer runs; needs {RUN_KEEP}")
    Ts = sorted(set(sub["T"]))

    def one(r):
        cell = r.groupby(["T", "d", "N", "model"]).accuracy.mean()
        return Measurement(
            {"min_accuracy": float(cell.min()), "T_coverage": len(set(r["T"]) & set(KEEP_TS)) / len(KEEP_TS)},
            f"lowest cell {cell.min():.4f}",
            Evidence.from_bundle(bundle, f"T ∈ {Ts}", 1),
        )

    V = _vocab(bundle)
    cell = sub.groupby(["T", "d", "N", "model"]).accuracy.mean()
    m = replace(_per_seed(sub, one), control=_chance_null(sub, 1 / V, one, f"every model at chance, 1/|V| = 1/{V}"))
    return _summary(
        m,
        "; ".join(f"{k} T={T} d={d} N={N}: {a:.4f}" for (T, d, N, k), a in cell.items()) + " (means over seeds)",
        f"T covered: {Ts} of {list(KEEP_TS)}",
    )


TABA1_A2 = Claim(
    "003/TabA1-A2",
    "Mamba+PE (d = 32) and a 1-layer Transformer solve KEEP n-TH at every T ∈ {10, …, 50}",
    "App. D.2, Tabs. A.1–A.2",
    "Mamba+PE d = 32 (N = 8, 32, 64): 1.00 at every T; Transformer 1.00 at every T",
    Rule(
        why="solved means ≥ 0.99 in every cell; the claim covers the five lengths, so a subset of them is partial. "
        "The quoted sentence says Mamba+PE solves at any length, but Tab. A.2 prints d = 8 below 1.00 at T ≥ 30 "
        "(0.22–0.98), so the rule tests the d = 32 rows, where the tables print 1.00 at every T",
        reproduced=conds(("min_accuracy", ">=", SOLVED), ("T_coverage", ">=", 1.0)),
        partially=conds(("min_accuracy", ">=", SOLVED)),
        trained=True,
    ),
    measure_keep_solved,
    SECTION["keep"],
    not_run=RUN_KEEP,
)


def s4dpe_t20_missing(bundle) -> str | None:
    """What ``bundle`` lacks for :func:`measure_s4dpe_t20` (S4D+PE and S4D runs at T = 20, d = 32, N = 8), or None."""
    runs, preset = _keep_runs(bundle)
    sub = runs[(runs["T"] == 20) & (runs.d == 32) & (runs.N == 8) & runs.model.isin(["s4d+pe", "s4d"])]
    if set(sub.model) != {"s4d+pe", "s4d"}:
        return f"the {preset} bundle has no S4D±PE runs at T = 20, d = 32, N = 8"
    return None


def measure_s4dpe_t20(bundle, pe_spread: dict) -> Measurement:
    """Tab. A.1, S4D+PE at T = 20 (d = 32, N = 8), against S4D without PE in the same bundle (per seed: |S4D+PE −
    0.72| and |S4D+PE − S4D|), with the exact check ``pe_spread``
    (:func:`mamba_recall.analysis.keep_nth.pe_logit_dependence`: per mixer, how much the PE's effect on the
    logits varies across input sequences; 0 means the PE is only a per-position bias), and a null control at the
    generator's chance level (both models at 1/|V|)."""
    missing = s4dpe_t20_missing(bundle)
    if missing:
        raise NotRun(f"{missing}; needs {RUN_KEEP}")
    runs, preset = _keep_runs(bundle)
    sub = runs[(runs["T"] == 20) & (runs.d == 32) & (runs.N == 8) & runs.model.isin(["s4d+pe", "s4d"])]

    def one(r):
        a = r.groupby("model").accuracy.mean()
        return Measurement(
            {
                "abs_diff_from_printed": abs(float(a["s4d+pe"]) - 0.72),
                "s4dpe_vs_s4d": abs(float(a["s4d+pe"]) - float(a["s4d"])),
                "pe_effect_spread_s4d": float(pe_spread["s4d"]),
            },
            f"S4D+PE {a['s4d+pe']:.3f}, S4D {a['s4d']:.3f}",
            Evidence.from_bundle(bundle, "T = 20, d = 32, N = 8", 1),
        )

    V = _vocab(bundle)
    acc = sub.groupby("model").accuracy.mean()
    m = replace(
        _per_seed(sub, one),
        control=_chance_null(
            sub, 1 / V, one, f"S4D+PE and S4D both at chance, 1/|V| = 1/{V} (the PE check as measured)"
        ),
    )
    return _summary(
        m,
        f"S4D+PE {acc['s4d+pe']:.3f}, S4D {acc['s4d']:.3f} (T = 20, d = 32, N = 8; means over seeds); spread across "
        f"inputs of the PE's effect on the logits: S4D {pe_spread['s4d']:.1e}, S6 {pe_spread['s6']:.1e}",
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
        "corrected statement is S4D+PE = S4D (within 0.05) with a PE effect identical for every input (1e-9)",
        reproduced=conds(("abs_diff_from_printed", "<=", 0.10)),
        erratum=conds(("pe_effect_spread_s4d", "<=", 1e-9), ("s4dpe_vs_s4d", "<=", 0.05)),
        trained=True,
    ),
    measure_s4dpe_t20,
    SECTION["keep"],
    not_run=RUN_KEEP,
    setting="the architecture as the paper describes it (embedding → depthwise S4D → linear, App. D.2), in which "
    "the PE can only add a per-position bias to the logits (exact, for any weights). What this can conclude: that "
    "model cannot reach 0.72 where S4D gets 0.10, so the table and the described architecture disagree. What it "
    "cannot: that the authors' number is wrong. Their own tables show a PE effect the described S4D cannot have "
    "(T = 10, d = 8: S4D+PE 0.99 in Tab. A.1 against S4D 0.08 in Tab. A.3), so their S4D+PE was most likely "
    "another model (a channel-mixing input map or a normalisation would let the PE reach the tokens), which we "
    "cannot rerun. The trained half of the corrected statement (S4D+PE = S4D) is also met by two models at chance "
    "(the null control reads erratum confirmed): the erratum rests on the exact check, the trained runs only agree "
    "with it, and need 3 seeds to say so",
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
    return Control("null", SOLVER_NULL, _per_seed(solver, measure_one))


def measure_s4dpe_decline(bundle) -> Measurement:
    """Tab. A.2: S4D+PE at T ∈ {40, 50} (every d, N) fails (printed 0.03–0.15): per seed the highest accuracy over
    those cells. A model at chance fails too: testable only where the recipe trains Mamba+PE to solve it, and the
    null control is that Mamba+PE read by the same rule."""
    runs, preset = _keep_runs(bundle)
    sub = runs[(runs.model == "s4d+pe") & runs["T"].isin([40, 50])]
    if sub.empty:
        raise NotRun(f"the {preset} bundle has no S4D+PE runs at T ≥ 40; needs {RUN_KEEP}")

    def one(r):
        fail = r[r.model == "s4d+pe"]
        mx = float(fail.groupby(["T", "d", "N"]).accuracy.mean().max())
        return Measurement(
            {"max_accuracy_T40_50": mx, "recipe_solves_with_pe": _recipe_solves_with_pe(r, fail)},
            f"max {mx:.3f}",
            Evidence.from_bundle(bundle, "T ∈ {40, 50}", 1),
        )

    cell = sub.groupby(["T", "d", "N"]).accuracy.mean()
    first = runs[(runs.model == "s4d+pe") & (runs["T"] == min(runs["T"]))].accuracy.mean()
    both = runs[runs.model.isin(["s4d+pe", "s6+pe"]) & runs["T"].isin([40, 50])]
    return _summary(
        replace(_per_seed(both, one), control=_solver_null(both, ("s4d+pe",), one)),
        f"S4D+PE at T ∈ {{40, 50}}: max {cell.max():.3f} (at T = {min(runs['T'])}: {first:.3f}; means over seeds)",
    )


TABA2_S4DPE = Claim(
    "003/TabA2-S4D+PE",
    "S4D+PE degrades with T and fails at T ∈ {40, 50}",
    "App. D.2, Tab. A.2",
    "S4D+PE 0.03–0.15 at T = 40, 0.03–0.10 at T = 50 (every d, N)",
    Rule(
        why="the printed values are at most 0.15; ≤ 0.20 allows our reduced protocol and stays far from solving. "
        "The quoted sentence says S4D fails already at T = 20, but Tab. A.1 prints S4D+PE 0.72 there (d = 32), so "
        "the rule tests only T ∈ {40, 50}, where the sentence and the table agree; T = 20 is 003/TabA1-S4D+PE. "
        "A model that learned nothing fails too, so a 'fails' verdict needs the same recipe to train: testable only "
        "if Mamba+PE (d = 32), trained by the same recipe and seeds at the same T, solves the task (≥ 0.99), as "
        "the paper's tables set the failing models beside Mamba+PE solving (declared with the null controls, "
        "before reading this number)",
        reproduced=conds(("max_accuracy_T40_50", "<=", 0.20)),
        testable=conds(("recipe_solves_with_pe", ">=", SOLVED)),
        untestable_why=RECIPE_UNTESTABLE,
        trained=True,
    ),
    measure_s4dpe_decline,
    SECTION["keep"],
    not_run=RUN_KEEP,
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
    return _summary(
        replace(_per_seed(both, one), control=_solver_null(both, ("s6", "s4d"), one)),
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
    SECTION["keep"],
    not_run=RUN_KEEP,
)


# ============================================================================ Fig. 1
def decay_summary(before, after) -> dict:
    """Fig. 1 in three numbers: the mass of e^{−λΔ} below 0.1 before n (forget), above 0.9 from n on (retain),
    and below 0.1 from n on; ``split`` = the first minus the third."""
    forget, keep, low_after = float(np.mean(before < 0.1)), float(np.mean(after > 0.9)), float(np.mean(after < 0.1))
    return {
        "frac_below_0.1_before_n": forget,
        "frac_above_0.9_from_n": keep,
        "frac_below_0.1_from_n": low_after,
        "split": forget - low_after,
    }


def measure_fig1_split(pairs: list, ck: dict, checkpoint: str) -> Measurement:
    """Fig. 1 (right): ``pairs`` = one (trained, untrained) per seed, each a (values at t < n, values at t ≥ n) of
    e^{−λΔ_t} pooled over channels and states: the trained Mamba+PE model against the same model at
    initialisation (same seed, same architecture), one measurement per seed combined over seeds. The untrained models
    are also the null control: the same statistics with the untrained model in the trained model's place (its split
    gain over itself is 0)."""
    # the sidecar records no device: the ci checkpoints are trained on a CPU; anything else says so instead of guessing
    device = ck.get("device") or ("cpu" if ck["preset"] == "ci" else "not recorded")
    evidence = Evidence(ck["preset"], str(device), 1, f"T = {ck['T']}, 500 test sequences", checkpoint)

    def one(tr: dict, un: dict) -> Measurement:
        return Measurement(
            {
                "frac_below_0.1_before_n": tr["frac_below_0.1_before_n"],
                "frac_above_0.9_from_n": tr["frac_above_0.9_from_n"],
                "split_gain_over_untrained": tr["split"] - un["split"],
            },
            f"frac(e^−λΔ < 0.1 | t < n) {tr['frac_below_0.1_before_n']:.2f}, frac(> 0.9 | t ≥ n) "
            f"{tr['frac_above_0.9_from_n']:.2f}, split {tr['split']:.2f}",
            evidence,
        )

    stats = [(decay_summary(*trained), decay_summary(*untrained)) for trained, untrained in pairs]
    names = [f"seed {i}" for i in range(len(stats))]
    m = across_seeds([one(tr, un) for tr, un in stats], names)
    null = across_seeds([one(un, un) for _, un in stats], names)
    tr, un = stats[0]
    shown = "; ".join(
        f"{name}: frac(e^−λΔ < 0.1 | t < n) {d['frac_below_0.1_before_n']:.2f}, frac(> 0.9 | t ≥ n) "
        f"{d['frac_above_0.9_from_n']:.2f}, split {d['split']:.2f}"
        for name, d in (("trained", tr), ("untrained (same seed)", un))
    )
    if len(stats) > 1:
        shown += (
            f" (first seed; means over {len(stats)} seeds: "
            + ", ".join(f"{k} {v:.2f}" for k, v in m.values.items())
            + ")"
        )
    return replace(
        _summary(
            m,
            shown,
            "S4D's e^{−λΔ} is the same at every step by construction (input-independent), so its 'indiscriminate' "
            "memory needs no measurement",
        ),
        control=Control("null", "the same Mamba+PE models at initialisation (same seeds)", null),
    )


FIG1_RIGHT = Claim(
    "003/Fig1-right",
    "trained Mamba forgets before the kept token (e^(−λΔ) mostly 0 at t < n) and retains from it "
    "on (mostly 1 at t ≥ n); S4D memorizes indiscriminately",
    "§4.2, Fig. 1 (right histogram)",
    "no number given (histograms)",
    Rule(
        why="'mostly' is a majority (> 0.5 of the mass below 0.1 before n, above 0.9 from n on), and training must "
        "create the split: at initialisation Δ is small everywhere, so the split must exceed the untrained "
        "model's by ≥ 0.25 (the paper gives no number)",
        reproduced=conds(
            ("frac_below_0.1_before_n", ">", 0.5),
            ("frac_above_0.9_from_n", ">", 0.5),
            ("split_gain_over_untrained", ">=", 0.25),
        ),
        trained=True,
    ),
    measure_fig1_split,
    SECTION["keep"],
)


FIG1_MODELS = {"s6+pe": "mamba", "s4d+pe": "s4d"}  # Fig. 1's two trained models → the rule's metric suffix
FIG1_COLUMNS = ["T", "d", "N", "model", "seed"]


def fig1_stats(decay, decay_untrained):
    r"""Fig. 1 per run, trained and at initialisation, from two tables in the format of a bundle's ``decay`` table
    (per run ``T, d, N, model[, seed]``: rows ``bin`` = the lower edge of each of the equal bins of [0, 1] with the
    counts of :math:`e^{-\lambda\Delta_t}` at t < n in ``before`` and at t ≥ n in ``after``, plus the row ``bin`` = −1
    holding frac(< 0.1 | t < n) in ``before`` and frac(> 0.9 | t ≥ n) in ``after``, computed on the raw values).
    One row per run and ``weights`` ∈ {trained, untrained}: ``frac_above_0_9_from_n`` and ``frac_below_0_1_before_n``
    (the exact fractions of the bin = −1 row) and ``mean_from_n``, the mean of :math:`e^{-\lambda\Delta_t}` at t ≥ n
    read off the histogram at the bin midpoints (within half a bin, 0.01 for 50 bins, of the exact mean; the same
    estimator for both weights, so their difference has no binning bias). A table without ``seed`` is one seed (0).
    Raises ValueError when a run of ``decay`` has no untrained row (the fix: compute the baseline with
    ``analysis.keep_nth.untrained_decay_table``)."""
    import pandas as pd

    out = []
    for weights, table in (("trained", decay), ("untrained", decay_untrained)):
        table = table if "seed" in table else table.assign(seed=0)
        missing = [c for c in (*FIG1_COLUMNS, "bin", "before", "after") if c not in table]
        if missing:
            raise ValueError(
                f"fig1_stats: the {weights} decay table lacks the columns {missing}; pass a bundle's "
                "`decay` table (or `decay_untrained`) as written by experiments.ch3_keep_nth."
            )
        for cell, rows in table.groupby(FIG1_COLUMNS):
            hist = rows[rows.bin >= 0].sort_values("bin")
            frac = rows[rows.bin == -1]
            if len(frac) != 1 or hist.empty:
                raise ValueError(
                    f"fig1_stats: run {dict(zip(FIG1_COLUMNS, cell))} of the {weights} table needs its "
                    "histogram rows and exactly one bin = −1 row."
                )
            mid = hist.bin.to_numpy(float) + 0.5 / len(hist)  # equal bins of [0, 1]: width 1/len(hist)
            counts = hist.after.to_numpy(float)
            out.append(
                dict(
                    zip(FIG1_COLUMNS, cell),
                    weights=weights,
                    frac_above_0_9_from_n=float(frac.after.iloc[0]),
                    frac_below_0_1_before_n=float(frac.before.iloc[0]),
                    mean_from_n=float((mid * counts).sum() / counts.sum()),
                )
            )
    stats = pd.DataFrame(out)
    runs = lambda w: {tuple(r) for r in stats[stats.weights == w][FIG1_COLUMNS].itertuples(index=False)}  # noqa: E731
    lacking = sorted(runs("trained") - runs("untrained"))
    if lacking:
        raise ValueError(
            f"fig1_stats: no untrained baseline for the runs {lacking[:3]}{' …' * (len(lacking) > 3)} "
            "(T, d, N, model, seed); make it with analysis.keep_nth.untrained_decay_table(bundle)."
        )
    return stats.sort_values([*FIG1_COLUMNS, "weights"]).reset_index(drop=True)


def fig1_tables(bundle, backend: str = "auto") -> dict:
    """Fig. 1's three tables for ``bundle`` (a KEEP n-TH bundle of any preset): ``decay`` (trained, with a ``seed``
    column), ``decay_untrained`` (the bundle's own when it has one, else
    :func:`~mamba_recall.analysis.keep_nth.untrained_decay_table`, computed here in seconds) and ``fig1``
    (:func:`fig1_stats` of the two)."""
    from ...analysis.keep_nth import untrained_decay_table

    dec = bundle.tables["decay"]
    dec = dec if "seed" in dec else dec.assign(seed=0)
    un = (
        bundle.tables["decay_untrained"]
        if "decay_untrained" in bundle.tables
        else untrained_decay_table(bundle, backend)
    )
    return {"decay": dec, "decay_untrained": un, "fig1": fig1_stats(dec, un)}


def _fitted_rise(Ts, ys) -> float:
    """slope × (max T − min T) of the least-squares line of ``ys`` on ``Ts``: the rise over the T range, read from
    every T rather than the two ends (equal to the end-to-end difference with two T)."""
    Ts, ys = np.asarray(Ts, float), np.asarray(ys, float)
    if len(Ts) < 2 or not np.isfinite(ys).all():
        return float("nan")
    return float(np.polyfit(Ts, ys, 1)[0] * (Ts.max() - Ts.min()))


def measure_fig1_trend(bundle, untrained=None) -> Measurement:
    r"""Fig. 1 (left), against the untrained model: per seed and model (Mamba+PE, S4D+PE at d = 32, N = 8), the
    fraction :math:`f(T)` of :math:`e^{-\lambda\Delta_t}` > 0.9 at t ≥ n of the trained run and :math:`f_0(T)` of the
    same model at initialisation (same kind, sizes and init seed, same test inputs), over the T at which every seed
    has both models. Values (means over seeds, each with a 95 % t-interval over seeds under the metric's own name, so
    the rule's condition must hold over all of it): ``rise_<m>`` = fitted rise of :math:`f` over T
    (:func:`_fitted_rise`), ``rise_over_untrained_<m>`` = fitted rise of :math:`f-f_0`, for m = mamba, s4d.

    The untrained histograms come from the bundle's ``decay_untrained`` table, else from ``untrained`` (a table in
    the same format: ``analysis.keep_nth.untrained_decay_table(bundle)``). The untrained model is also the null
    control: the same statistics with :math:`f_0` in :math:`f`'s place (its excess over itself is 0)."""

    dec = bundle.tables["decay"]
    preset = bundle.config.get("preset", "ci")
    trained = dec[(dec.d == 32) & (dec.N == 8) & dec.model.isin(list(FIG1_MODELS))]
    if len(set(trained["T"])) < 2:
        raise NotRun(
            f"the {preset} bundle has decay histograms at T = {sorted(set(trained['T']))} only; the trend in T needs "
            f"{RUN_KEEP}"
        )
    untrained = bundle.tables.get("decay_untrained", untrained)
    if untrained is None:
        raise NotRun(
            f"the {preset} bundle has no `decay_untrained` table and no untrained baseline was passed: "
            "check('003/Fig1-left', bundle, analysis.keep_nth.untrained_decay_table(bundle))"
        )
    stats = fig1_stats(trained, untrained)
    stats = stats.merge(trained.assign(seed=trained.get("seed", 0))[FIG1_COLUMNS].drop_duplicates(), on=FIG1_COLUMNS)
    seeds = sorted(set(stats.seed))
    cover = [set(stats[(stats.seed == s) & (stats.model == m)]["T"]) for s in seeds for m in FIG1_MODELS]
    Ts = sorted(set.intersection(*cover))
    if len(Ts) < 2:
        raise NotRun(
            f"the {preset} bundle has both Fig. 1 models for every seed at T = {Ts} only; the trend in T needs "
            f"{RUN_KEEP}"
        )
    wide = stats[stats["T"].isin(Ts)].pivot_table(
        index=["model", "seed", "T"], columns="weights", values="frac_above_0_9_from_n"
    )
    evidence = Evidence.from_bundle(bundle, f"T ∈ {Ts}, d = 32, N = 8, 500 test sequences", 1)

    def one(s, weights):
        values = {}
        for m, short in FIG1_MODELS.items():
            f = wide.loc[(m, s)]
            values[f"rise_{short}"] = _fitted_rise(Ts, f[weights])
            values[f"rise_over_untrained_{short}"] = _fitted_rise(Ts, f[weights] - f.untrained)
        return Measurement(values, ", ".join(f"{k} {x:+.2f}" for k, x in values.items()), evidence)

    names = [f"seed {s}" for s in seeds]
    combined = across_seeds([one(s, "trained") for s in seeds], names)
    null = across_seeds([one(s, "untrained") for s in seeds], names)
    v = combined.values
    means = (
        stats[stats["T"].isin(Ts)].groupby(["model", "weights", "T"])[["frac_above_0_9_from_n", "mean_from_n"]].mean()
    )

    def ends(m, w, col):
        return f"{means.loc[(m, w, Ts[0]), col]:.2f} → {means.loc[(m, w, Ts[-1]), col]:.2f}"

    shown = "; ".join(
        f"{name}: frac(e^−λΔ > 0.9 | t ≥ n) T = {Ts[0]} → {Ts[-1]} trained {ends(m, 'trained', 'frac_above_0_9_from_n')}, "
        f"untrained {ends(m, 'untrained', 'frac_above_0_9_from_n')} (mean e^−λΔ {ends(m, 'trained', 'mean_from_n')} vs "
        f"{ends(m, 'untrained', 'mean_from_n')}); fitted rise {v[f'rise_{s}']:+.2f}, over untrained "
        f"{v[f'rise_over_untrained_{s}']:+.2f}"
        for (m, s), name in zip(FIG1_MODELS.items(), ("Mamba+PE", "S4D+PE"))
    )
    return replace(
        _summary(
            combined,
            shown,
            "the untrained model is the trained run's own initialisation (same init seed, same test inputs)",
        ),
        control=Control("null", "the same runs at initialisation (same init seeds, same test inputs)", null),
    )


FIG1_LEFT = Claim(
    "003/Fig1-left",
    "as T grows, trained models push e^(−λΔ_t) toward 1 (Mamba, and S4D as well)",
    "§4.2, Fig. 1 (left histogram)",
    "no number given (histograms)",
    Rule(
        why="the fraction of e^(−λΔ) > 0.9 at t ≥ n, fitted linearly against T per seed, must rise over the T range "
        "by more than 0.05 (histogram noise; the paper gives no number) for both models, and so must its excess over the same run's untrained "
        "model: at initialisation Δ is small and the PE p_t = t feeds Mamba's Δ, so the untrained fraction moves "
        "with T as well, and only the excess is training's doing; Mamba alone (Lem. 2's model) is partial",
        reproduced=conds(
            ("rise_mamba", ">", 0.05),
            ("rise_s4d", ">", 0.05),
            ("rise_over_untrained_mamba", ">", 0.05),
            ("rise_over_untrained_s4d", ">", 0.05),
        ),
        partially=conds(("rise_mamba", ">", 0.05), ("rise_over_untrained_mamba", ">", 0.05)),
        trained=True,
    ),
    measure_fig1_trend,
    SECTION["keep"],
    not_run=RUN_KEEP,
)


#: this section's claims, in the registry's order
CLAIMS = (COR2, TAB1, TABA1_A2, TABA1_S4DPE, TABA2_S4DPE, TABA3_A4, FIG1_RIGHT, FIG1_LEFT)
