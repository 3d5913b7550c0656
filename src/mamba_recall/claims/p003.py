"""Claims of paper 003 (Huang et al., "Understanding Input Selectivity in Mamba"), Chapter 3.

Every theorem, lemma, corollary, remark with a testable statement, figure and table of the paper, in its
own numbering. Hand-set constructions are computed exactly (float64, tier ``exact``); trained-model claims
are read from the committed runner bundles (tier = the bundle's preset) and read *inconclusive*, whichever way
their numbers point, until they rest on ≥ 3 seeds with an interval (core's symmetric rule). Each claim quotes the
sentence of the paper it tests (:data:`QUOTES`). Where the paper's proof needs a fix, the theorem (the
existence statement) and the printed step (``-bias``, ``-readout``, ``-Delta``) are separate claims: the
first is judged on the corrected construction, the second reads *erratum confirmed* when the printed
step fails and the corrected one is exact.

Seeds. Every trained claim takes the one path of :mod:`~mamba_recall.claims.core`: the claim's statistic is computed on
each trained model (seed) alone (:func:`_per_seed`), and :func:`~mamba_recall.claims.core.across_seeds` combines the
seeds (mean with its 95 % Student-t interval over seeds; a boolean holds when it holds on every seed), which
:func:`~mamba_recall.claims.core.judge` reads with the same burden both ways. Where the paper reports a mean over seeds
(Tab. 1, Tabs. A.1–A.4) this is its statistic. Where it reports the best of several seeds (Figs. 2, 3, A.2–A.4: "best
of 7 seeds", "best of 5 seeds") the rule reads each seed's own value, averaged with its interval: a best-of-k value has
no interval over seeds (a bootstrap of a maximum never exceeds the observed one), and a typical seed is what a reader
can expect to rerun. This was fixed before looking at any bundle; each such rule says so in its ``why``. (An earlier
version bootstrapped the best-of-seeds value under a metric name the rule did not read, so the verdicts ignored it.)

Controls. Where a null is cheap, a trained claim's measurement carries one (:class:`~mamba_recall.claims.core.Control`),
judged by the same rule beside it: the same statistic with every accuracy at the task generator's chance level
(:func:`_chance_null`: ``1/|V|`` for KEEP n-TH and MQAR, whose targets are uniform over the vocabulary; ``1/(|V|+1)`` for
INDUCTION HEADS, |V| tokens and the blank), or, for Fig. 1, the same model at initialisation. Claims that a model
*fails* (Tabs. A.2–A.4) carry none: a null fails too by construction, so a null cannot tell anything there; what
makes their "fails" informative is the same recipe solving the task with PE in the same bundle (Tab. 1, Tabs. A.1–A.2).

Thresholds: "exact" means every query of the test set right (accuracy 1.0); a trained model "solves" a
task at ≥ 0.99 (the paper reports 1.00 with two decimals; 0.99 leaves one point for test-set sampling)
and "fails" it below the paper's own failing values plus rounding.
"""

from __future__ import annotations

import math

import numpy as np

from dataclasses import replace

from .core import Claim, Control, Evidence, Measurement, NotRun, Rule, across_seeds, conds, register

SECTION = {
    "approx": "03_selectivity/01_approximation",
    "keep": "03_selectivity/02_keep_nth",
    "sens": "03_selectivity/03_sensitivity",
    "mqar": "03_selectivity/04_mqar_constructions",
    "ih": "03_selectivity/05_induction_heads",
}
SOLVED = 0.99  # a trained model solves a task (paper: 1.00)
EXACT = 1.0  # a construction is exact: every test query right
KEEP_TS = (10, 20, 30, 40, 50)  # the T grid of Tabs. A.1–A.4

RUN_KEEP = (
    "`python -m mamba_recall.experiments.ch3_keep_nth --preset paper --device cuda` (Tabs. A.1–A.4 grid, "
    "3 seeds; about 10 GPU-hours on one H100 with the reduced protocol)"
)
RUN_MQAR = (
    "`python -m mamba_recall.experiments.ch3_mqar_train --preset paper --device cuda` (Fig. 2 grid and the "
    "Fig. A.3 N sweep, 7 seeds; about 20 GPU-hours)"
)
RUN_IH = (
    "`python -m mamba_recall.experiments.ch3_induction --preset paper --device cuda` (Fig. 3 / A.4 grid, "
    "5 seeds, N ∈ {|V|, 2|V|, 4|V|}; about 15 GPU-hours)"
)


def _per_seed(runs, measure_one) -> Measurement:
    """The claim's measurement on each seed's runs alone (``measure_one(runs of one seed)``, a Measurement with that
    model's numbers), combined by :func:`~mamba_recall.claims.core.across_seeds`: the chapter's single path from
    trained models to a verdict. A table without ``seed`` is one seed."""
    if "seed" not in runs:
        return across_seeds([measure_one(runs)], ["seed 0"])
    seeds = sorted(set(runs.seed))
    return across_seeds([measure_one(runs[runs.seed == s]) for s in seeds], [f"seed {s}" for s in seeds])


def _chance_null(runs, chance, measure_one, what: str) -> Control:
    """A null control: the same per-seed measurement with every run's accuracy replaced by ``chance`` (a number, or
    one per row), the accuracy of a model that learned nothing about the task (a uniform guess over the generator's
    targets)."""
    return Control("null", what, _per_seed(runs.assign(accuracy=chance), measure_one))


def _vocab(bundle, default: int = 128) -> int:
    """The bundle's |V| (a ci bundle's config, a run-store bundle's sizes), else the paper's 128."""
    cfg = bundle.config or {}
    return int(cfg.get("V") or (cfg.get("sizes") or {}).get("V") or default)


def _summary(m: Measurement, shown: str, note: str = "") -> Measurement:
    """``m`` with the reader's one line ``shown`` (means over seeds) instead of every seed's line."""
    return replace(m, shown=shown, note="; ".join(filter(None, (m.note, note))))


# ============================================================================ §4.1 approximation (exact)
def measure_thm1(errors: dict, l2: list, widths: list, sup_all: float, sup_away: float, w_sup: float) -> Measurement:
    """Thm. 1: ``errors`` the max |y_T − P_jk(x)| of the discrete constructions per discretisation; ``l2`` the
    continuous L² errors of g¹ − 2g² + g³ against ψ₀,₀ at |w_Δ| = ``widths``; ``sup_all`` the sup error over
    all s ∈ [0, 1] and ``sup_away`` the sup error outside 6/√|w| of the jumps, both at |w_Δ| = ``w_sup``."""
    ratios = [b / a for a, b in zip(l2, l2[1:])]
    real = max(errors["euler"], errors["zoh"])
    v = {
        "sup_error_all_s": sup_all,
        "sup_error_away_from_jumps": sup_away,
        "l2_decreasing": all(b < a for a, b in zip(l2, l2[1:])),
        "l2_ratio_per_decade_min": min(ratios),
        "l2_ratio_per_decade_max": max(ratios),
        "discrete_error_aonly": errors["aonly"],
        "discrete_error_euler_zoh": real,
    }
    shown = (
        f"continuous: sup error over all s {sup_all:.2f} at |w| = {w_sup:.0e}; away from the "
        f"jumps {sup_away:.1e}; L² error {l2[0]:.3f} → {l2[-1]:.3f} for |w| {widths[0]:.0e} → {widths[-1]:.0e} "
        f"(ratio per decade {min(ratios):.2f}–{max(ratios):.2f}); discrete: max error aonly {errors['aonly']:.0e}, "
        f"euler/zoh {real:.0e}"
    )
    return Measurement(v, shown, Evidence.exact(f"{len(widths)} sharpnesses, quadrature; discrete (j, k, T) grid"))


_THM1_ERRATUM = conds(
    ("l2_decreasing", "true"),
    ("l2_ratio_per_decade_min", ">=", 0.45),
    ("l2_ratio_per_decade_max", "<=", 0.70),
    ("sup_error_away_from_jumps", "<=", 1e-6),
    ("discrete_error_aonly", "<=", 1e-10),
    ("discrete_error_euler_zoh", "<=", 1e-6),
)


def measure_prop1(h: np.ndarray) -> Measurement:
    err = float(np.max(np.abs(np.asarray(h) - np.arange(1, len(h) + 1))))
    return Measurement(
        {"max_error": err},
        f"max |h_t − t| = {err:.0e} for t = 1..{len(h)}",
        Evidence.exact(f"T = {len(h)}, all-ones input"),
    )


def measure_cor1(slopes: dict, curves) -> Measurement:
    """Cor. 1 from :func:`~mamba_recall.theory.haar.cor1_slopes` (slopes of the *squared* L² error) and the
    mean curves (columns m, N, haar, fourier). The printed statement is about the error itself
    (‖ρ − Σg‖, un-squared): its slopes are half the squared ones."""
    ratio_sq = min(-s["haar_slope_per_wavelet"] * m for m, s in slopes.items())
    f_sq = [s["fourier_loglog_slope"] for s in slopes.values()]
    largest = curves[curves.N == curves.N.max()]
    beats = bool((largest.haar < largest.fourier).all())
    v = {
        "haar_rate_ratio_norm": ratio_sq / 2,
        "fourier_slope_norm_min": min(f_sq) / 2,
        "fourier_slope_norm_max": max(f_sq) / 2,
        "haar_rate_ratio_squared": ratio_sq,
        "fourier_slope_squared_min": min(f_sq),
        "fourier_slope_squared_max": max(f_sq),
        "haar_below_fourier_at_largest_N": beats,
    }
    shown = (
        "squared error: "
        + "; ".join(
            f"m = {m}: Haar log₂ slope per wavelet {s['haar_slope_per_wavelet']:.2f} "
            f"(claimed −1/m = {-1 / m:.2f}), Fourier log–log slope {s['fourier_loglog_slope']:.2f}"
            for m, s in slopes.items()
        )
        + f"; the error itself decays at half these rates; Haar below Fourier at N = {int(curves.N.max())}: {beats}"
    )
    return Measurement(v, shown, Evidence.exact(f"m ∈ {sorted(slopes)}, random piecewise-constant targets"))


def measure_cor2(keep_err: dict, token_acc: float, sequences: int) -> Measurement:
    worst = max(keep_err.values())
    return Measurement(
        {"max_error_real": worst, "token_accuracy": token_acc},
        f"max |y_t − x_n| {worst:.0e} (real inputs; euler/zoh one channel, aonly two for t > n); token "
        f"model accuracy {token_acc:.4f} on {sequences} sequences",
        Evidence.exact(f"T = 50, n = 5; {sequences} token sequences"),
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
    (:func:`mamba_recall.experiments.ch3_keep_nth.pe_logit_dependence`: per mixer, how much the PE's effect on the
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
    ``experiments.ch3_keep_nth.untrained_decay_table``)."""
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
            "(T, d, N, model, seed); make it with experiments.ch3_keep_nth.untrained_decay_table(bundle)."
        )
    return stats.sort_values([*FIG1_COLUMNS, "weights"]).reset_index(drop=True)


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
    the same format: ``experiments.ch3_keep_nth.untrained_decay_table(bundle)``). The untrained model is also the null
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
            "check('003/Fig1-left', bundle, experiments.ch3_keep_nth.untrained_decay_table(bundle))"
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


# ============================================================================ §4.2 sensitivity (exact)
def measure_lemma1(rel: dict, slope_s6: float, slope_s4d: float, lam: float) -> Measurement:
    v = {
        "autograd_vs_closed_form": max(rel.values()),
        "s6_slope_error": abs(slope_s6 + lam),
        "s4d_slope_error": abs(slope_s4d + lam),
    }
    return Measurement(
        v,
        f"autograd = Eqs. (35)–(38) to {max(rel.values()):.0e}; slope of log|∂h_t/∂x_j| {slope_s6:.6f} "
        f"against ΣΔ (S6), {slope_s4d:.6f} against t (S4D); −λ = {-lam}",
        Evidence.exact("one random input sequence, float64"),
    )


def measure_lemma2(sens: float, bound: float, c: float, s4d_factor: float, T: int) -> Measurement:
    return Measurement(
        {"sensitivity_over_bound": sens / bound, "s4d_factor": s4d_factor},
        f"T = {T}: |∂h_T/∂x₁| = {sens:.1f} ≥ e^−c|∂(BΔx)| = {bound:.2f} (c = {c:.2f}); S4D factor "
        f"e^−(T−1) = {s4d_factor:.1e}",
        Evidence.exact(f"T = {T}, Δ ≈ 0 on fillers"),
    )


def measure_eq45(sens: np.ndarray, j: int = 1, fit_from: int = 10) -> Measurement:
    """Eq. 45: log–log slope of :func:`~mamba_recall.theory.haar.attention_sensitivity` (t = j+1..T) against t,
    fitted from t = ``fit_from`` on."""
    t = np.arange(j + 1, j + 1 + len(sens))
    keep = t >= fit_from
    slope = float(np.polyfit(np.log(t[keep]), np.log(sens[keep]), 1)[0])
    return Measurement(
        {"loglog_slope": slope},
        f"|∂y_t/∂x_{j}| of a random causal softmax-attention layer: log–log slope {slope:.3f} over "
        f"t = {fit_from}..{t[-1]} (|∂y_t/∂x_{j}| = {sens[fit_from - j - 1]:.3g} at t = {fit_from}, "
        f"{sens[-1]:.3g} at t = {t[-1]})",
        Evidence.exact(f"T = {t[-1]}, d = 4, one random draw"),
    )


def measure_remark1(err_ssd: float, checked: int) -> Measurement:
    return Measurement(
        {"max_error_ssd": err_ssd},
        f"euler Haar construction on Mamba-2's scan (one scalar λ, one head per channel): max |y_T − P_jk(x)| "
        f"{err_ssd:.1e} over {checked} (j, k, T)",
        Evidence.exact(f"{checked} (j, k, T), random inputs"),
    )


# ============================================================================ §5.1 MQAR constructions (exact)
def _jl_at(jl, variant, V, p):
    sub = jl[(jl.variant == variant) & (jl.V == V) & (jl.p == p)]
    return float(sub["max"].min()) if len(sub) else float("nan")


def measure_thm2(step1: dict, mqc) -> Measurement:
    """Thm. 2: step 1 (one-hot, N = κ) over κ and |V|; step 2 (JL values, corrected bias) at p = 16 (|V| = 128)
    and p = 24 (|V| = 512), best of the JL draws, every κ of the sweep."""
    jl = mqc.tables["jl"]
    s1 = min(a for (n, _, _), a in step1.items() if n == "thm2")
    c128, c512 = _jl_at(jl, "Thm 2, corrected bias", 128, 16), _jl_at(jl, "Thm 2, corrected bias", 512, 24)
    kap = sorted({k for (n, k, _) in step1 if n == "thm2"})
    return Measurement(
        {"step1_min": s1, "step2_V128_p16": c128, "step2_V512_p24": c512},
        f"step 1 (d = κ + |V|, N = κ): {s1:.4f} for κ ∈ {kap}; step 2 (d = κ + p, corrected bias): "
        f"{c128:.4f} at p = 16 (|V| = 128), {c512:.4f} at p = 24 (|V| = 512)",
        Evidence.from_bundle(
            mqc, "T = 100; step 1 on the notebook's sequences, step 2 best of the bundle's JL draws", 0, tier="exact"
        ),
    )


def measure_thm2_bias(mqc) -> Measurement:
    jl = mqc.tables["jl"]
    printed = float(jl[jl.variant == "Thm 2, bias as printed"]["max"].max())
    corrected = min(_jl_at(jl, "Thm 2, corrected bias", 128, 16), _jl_at(jl, "Thm 2, corrected bias", 512, 24))
    return Measurement(
        {"printed_bias_best": printed, "corrected_bias_best": corrected},
        f"best accuracy with the bias as printed {printed:.4f} (any κ, |V|, p); corrected "
        f"−(c₀k−b)(c₁k−b)W_o s: {corrected:.4f} at p = 16 / 24",
        Evidence.from_bundle(mqc, "every (κ, |V|, p) of the sweep, best of the JL draws", 0, tier="exact"),
    )


def measure_thm3(step1: dict, mqc, growth) -> Measurement:
    """Thm. 3 rests on the key codes: ``growth`` (:func:`~mamba_recall.theory.mqar_constructions.thm3_key_growth`)
    gives, per κ, the best accuracy at N = p_k = ⌈log₂ κ⌉ and the smallest p_k of the grid at which the
    construction is exact; the growth exponent is the log–log slope of that N against κ."""
    from ..theory.mqar_constructions import state_needed

    s1 = min(a for (n, _, _), a in step1.items() if n == "thm3")
    values_exact = _jl_at(mqc.tables["jl"], "Thm 3, JL values (keys one-hot)", 128, 12)
    need = state_needed(growth)
    at_log = growth[growth.at_log2]
    ok = {k: n for k, n in need.items() if math.isfinite(n)}
    exponent = float(np.polyfit(np.log(list(ok)), np.log(list(ok.values())), 1)[0]) if len(ok) >= 2 else float("nan")
    v = {
        "keys_acc_at_log2_kappa": float(at_log["max"].min()),
        "step1_min": s1,
        "jl_values_p12": values_exact,
        "state_growth_exponent": exponent,
    }
    shown = (
        "N = ⌈log₂κ⌉: best accuracy "
        + ", ".join(f"κ={r.kappa}: {r['max']:.2f}" for _, r in at_log.iterrows())
        + "; smallest exact N = p_k: "
        + ", ".join(
            f"κ={k}: {('>' + str(int(growth.pk.max()))) if not math.isfinite(n) else int(n)}" for k, n in need.items()
        )
        + f" (N ∝ κ^{exponent:.2f}); step 1 (one-hot keys, N = κ) {s1:.4f}; JL values p_v = 12 {values_exact:.4f}"
    )
    return Measurement(
        v,
        shown,
        Evidence.exact(
            f"κ ∈ {sorted(need)}, |V| = {int(growth.V.iloc[0])}, p_v = "
            f"{int(growth.pv.iloc[0])}, {int(growth.sequences.iloc[0])} sequences, "
            f"best of {int(growth.draws.iloc[0])} JL draws"
        ),
    )


def measure_thm3_recall(sweep) -> Measurement:
    """Thm. 3's N = log κ against the state size the construction needs for 99 % recall, from ``sweep``
    (:func:`~mamba_recall.theory.mqar_constructions.thm3_state_for_recall`): the growth of N / log₂κ from the
    smallest to the largest κ (constant under log growth, κ/log κ-like under linear growth), the log–log
    exponent of N against κ, and the span of the sweep in κ."""
    from ..theory.mqar_constructions import state_for_recall

    need = state_for_recall(sweep).sort_values("kappa")
    finite = need[np.isfinite(need.N)]
    lo, hi = need.iloc[0], need.iloc[-1]
    exponent = float(np.polyfit(np.log(finite.kappa), np.log(finite.N), 1)[0]) if len(finite) >= 2 else float("nan")
    v = {
        "log_ratio_growth": float(hi.N_over_log2_kappa / lo.N_over_log2_kappa),
        "state_growth_exponent": exponent,
        "kappa_span": float(hi.kappa / lo.kappa),
    }
    shown = (
        "smallest N = p_k with ≥ 99 % recall: "
        + ", ".join(
            f"κ={int(r.kappa)}: {int(r.N) if math.isfinite(r.N) else '> ' + str(int(sweep.pk.max()))}"
            for r in need.itertuples()
        )
        + f" (N ∝ κ^{exponent:.2f}); N / log₂κ grows {v['log_ratio_growth']:.1f}× from κ = {int(lo.kappa)} to "
        f"{int(hi.kappa)}"
    )
    return Measurement(
        v,
        shown,
        Evidence.exact(
            f"κ ∈ {need.kappa.tolist()}, |V| = {int(sweep.V.iloc[0])}, p_v = {int(sweep.pv.iloc[0])}, "
            f"≈ {int(sweep.queries.min())} queries per point, best of {int(sweep.draws.iloc[0])} JL draws, p_k on a "
            "√2 grid"
        ),
    )


def measure_remark3(growth) -> Measurement:
    """Remark 3: Mamba-2 (Thm. 3) needs fewer state columns than Mamba (Thm. 2, N = κ)."""
    from ..theory.mqar_constructions import state_needed

    need = state_needed(growth)
    below = [k for k, n in need.items() if n < k]
    return Measurement(
        {"fraction_kappa_below_thm2": len(below) / len(need)},
        "smallest exact N (Thm. 3, JL keys) against Thm. 2's N = κ: "
        + ", ".join(
            f"κ={k}: {('>' + str(int(growth.pk.max()))) if not math.isfinite(n) else int(n)} vs {k}"
            for k, n in need.items()
        ),
        Evidence.exact(f"κ ∈ {sorted(need)}, best of {int(growth.draws.iloc[0])} JL draws"),
    )


#: Remark 7's worst case, the rule's margins around the argument's threshold ε(κ − 1) = 1 (declared before the
#: judged run; one sanity run of the implementation at κ ∈ {8, 16} preceded it): it must hold well below, fail well above
R7_BELOW, R7_ABOVE = 0.8, 1.25


def measure_remark7(sweep, worst) -> Measurement:
    """Remark 7 at its worst case (:func:`~mamba_recall.theory.mqar_constructions.remark7_worst_case`: key codes with
    one same-sign overlap ε, ε(κ − 1) swept across 1; accuracy at the query of k₁): on the adversarial input the
    construction must hold where ε(κ − 1) ≤ 0.8 and fail where ε(κ − 1) ≥ 1.25, while random values stay exact
    (the failure is the input's). Shown beside it, not judged: JL codes at N = p_k
    (:func:`~mamba_recall.theory.mqar_constructions.remark7_sweep`), whose overlaps have random signs."""
    below = worst[worst.eps_kappa <= R7_BELOW]
    above = worst[worst.eps_kappa >= R7_ABOVE]
    if below.empty or above.empty:
        raise NotRun(f"the sweep needs products ε(κ − 1) ≤ {R7_BELOW} and ≥ {R7_ABOVE} (preset ch3.remark7)")
    f = sweep.sort_values("pk")
    cells = "; ".join(
        f"κ={int(k)}: " + ", ".join(f"{r.eps_kappa:g} → {r.adversarial:.2f}" for r in g.itertuples())
        for k, g in worst.groupby("kappa")
    )
    return Measurement(
        {
            "adversarial_below": float(below.adversarial.min()),
            "adversarial_above": float(above.adversarial.max()),
            "random_min": float(worst.random.min()),
        },
        f"worst case (one same-sign overlap ε), accuracy at the query of k₁ against ε(κ − 1): {cells} (random values "
        f"{worst.random.min():.2f} or better everywhere); JL codes at κ = {int(f.kappa.iloc[0])}, random vs "
        "adversarial: " + ", ".join(f"p_k={r.pk}: {r.random:.2f} vs {r.adversarial:.2f}" for r in f.itertuples()),
        Evidence.exact(
            f"{int(worst.sequences.iloc[0])} sequences per κ, T = max(100, 4κ), |V| = 128, κ ∈ {sorted(set(worst.kappa))}"
        ),
        note="the equal-overlap codes need N = κ (their Gram matrix has full rank): the worst case of the remark's "
        "argument, not of the N = log κ construction, whose JL codes have overlaps of random sign (~√κ·ε summed)",
    )


def measure_thm4(thm4_step1: dict, mqc) -> Measurement:
    jl = mqc.tables["jl"]
    s1 = min(thm4_step1.values())
    c = _jl_at(jl, "Thm 4, centered readout", 128, 16)
    return Measurement(
        {"step1_min": s1, "step2_centered_p16": c},
        f"step 1 (d = κ|V|, N = 1): {s1:.4f} for κ ∈ {sorted(thm4_step1)}; step 2 (d = κp, centered "
        f"readout) {c:.4f} at p = 16, every κ of the sweep",
        Evidence.from_bundle(mqc, "T = 100, |V| = 128, best of the JL draws", 0, tier="exact"),
    )


def measure_thm4_readout(mqc) -> Measurement:
    jl = mqc.tables["jl"]
    printed = float(jl[jl.variant == "Thm 4, readout as printed"]["max"].max())
    c = _jl_at(jl, "Thm 4, centered readout", 128, 16)
    return Measurement(
        {"printed_readout_best": printed, "centered_readout_best": c},
        f"best accuracy with the readout as printed {printed:.4f} (any κ, |V|, p); centered {c:.4f} at p = 16",
        Evidence.from_bundle(mqc, "every (κ, |V|, p) of the sweep, best of the JL draws", 0, tier="exact"),
    )


def measure_tab2_gate(printed_gate: float, corrected_gate: float, kappa: int, V: int) -> Measurement:
    """Tab. 2, (14g): Thm. 4's gated construction with the gate as printed (ỹ = g(x) ⊙ x) and as corrected
    (ỹ = g(x) ⊙ y)."""
    return Measurement(
        {"printed_gate_accuracy": printed_gate, "corrected_gate_accuracy": corrected_gate},
        f"Thm. 4 step 1 (κ = {kappa}, |V| = {V}): gate on x as printed {printed_gate:.3f}; gate on y "
        f"{corrected_gate:.4f}",
        Evidence.exact(f"κ = {kappa}, |V| = {V}, T = 100"),
    )


def measure_tab3(step1: dict, thm4_step1: dict) -> Measurement:
    rows = {
        "Mamba (Thm. 2)": min(a for (n, _, _), a in step1.items() if n == "thm2"),
        "Mamba-2 (Thm. 3)": min(a for (n, _, _), a in step1.items() if n == "thm3"),
        "S4D mixer (Thm. 4)": min(thm4_step1.values()),
    }
    return Measurement(
        {"min_accuracy": min(rows.values())},
        "one-hot constructions: " + ", ".join(f"{k} {a:.4f}" for k, a in rows.items()),
        Evidence.exact("T = 100, |V| ∈ the notebook's grid"),
    )


def measure_lemma4(rows) -> Measurement:
    """Lemma 4 (JL): ``rows`` from :func:`~mamba_recall.theory.mqar_constructions.jl_inner_products`."""
    worst = float(rows.ratio.max())
    return Measurement(
        {"eps_sqrt_p_over_log_d_max": worst, "norm_error": float(rows.norm_error.max())},
        "max |⟨Me_i, Me_j⟩|·√(p / ln d): "
        + ", ".join(f"d={r.d} p={r.p}: {r.ratio:.2f}" for r in rows.itertuples())
        + f"; max |‖Me_i‖ − 1| {rows.norm_error.max():.0e}",
        Evidence.exact(f"d ∈ {sorted(set(rows.d))}, p ∈ {sorted(set(rows.p))}, one draw each"),
    )


def measure_app_i(cmp) -> Measurement:
    exact16 = float(cmp.query("N == 16 and d == 144").accuracy.iloc[0])
    share8 = float(cmp.query("N == 8 and d == 144").accuracy.iloc[0])
    hashing = cmp.query("d == 64").sort_values("N").accuracy
    return Measurement(
        {
            "thm2_at_N_kappa": exact16,
            "thm2_below_kappa": share8,
            "hashing_rises_with_N": bool(hashing.is_monotonic_increasing and hashing.iloc[-1] > hashing.iloc[0]),
            "hashing_exact_anywhere": bool((hashing >= EXACT).any()),
        },
        "; ".join(f"{r.circuit} d={r.d} N={r.N}: {r.accuracy:.3f}" for r in cmp.itertuples()),
        Evidence.exact("κ = 16, |V| = 128, T = 100, 100 sequences per cell"),
    )


# ============================================================================ trained MQAR
def _mqar_runs(bundle):
    runs = bundle.tables["runs"]
    return runs, bundle.config.get("preset", "ci")


def measure_fig2(bundle) -> Measurement:
    """Fig. 2: per seed and (mixer, κ) the smallest d with accuracy ≥ 0.99 (d*), against the bound d_th (Thm. 2:
    κ + log₂|V|; Thm. 3: log₂κ + log₂|V|; Thm. 4: κ·log₂|V|), and the order d*(Mamba-2) ≤ d*(Mamba) ≤ d*(S4D) for
    κ ≥ 8; each seed's own d* (the paper's is the best of 7 seeds: module docstring), combined over seeds; a null
    control at the generator's chance level 1/|V|."""
    runs, preset = _mqar_runs(bundle)
    main = (
        runs[
            runs.apply(
                lambda r: r.N == {"s6": 2 * r.kappa, "s4d": 4, "mamba2": round(8 * math.log(r.kappa))}.get(r.mixer, -1),
                axis=1,
            )
        ]
        if len(runs)
        else runs
    )
    if main.empty or main.d.nunique() < 3 or main.mixer.nunique() < 3:
        raise NotRun(f"the {preset} bundle has no (κ × d) grid with the three mixers; Fig. 2 needs {RUN_MQAR}")
    V = int(main.V.iloc[0])

    def one(r):
        frac, order, dstar = _fig2_metrics(r, V)
        return Measurement(
            {"fraction_cells_tracking_bound": frac, "efficiency_order": order},
            "d* " + ", ".join(f"{m} κ={k}: {d:g}" for (m, k), d in sorted(dstar.items())),
            Evidence.from_bundle(bundle, f"|V| = {V}, κ × d grid", 1),
        )

    dstar = _fig2_metrics(main, V)[2]
    m = replace(_per_seed(main, one), control=_chance_null(main, 1 / V, one, f"every model at chance, 1/|V| = 1/{V}"))
    return _summary(
        m, "d* (best of seeds ≥ 0.99): " + ", ".join(f"{m} κ={k}: {d:g}" for (m, k), d in sorted(dstar.items()))
    )


def _fig2_metrics(main, V):
    best = main.groupby(["mixer", "kappa", "d"]).accuracy.max().reset_index()
    bound = {
        "s6": lambda k: k + math.log2(V),
        "mamba2": lambda k: math.log2(k) + math.log2(V),
        "s4d": lambda k: k * math.log2(V),
    }
    ok, dstar = [], {}
    for (mixer, kappa), g in best.groupby(["mixer", "kappa"]):
        dth = bound[mixer](kappa)
        solved = g[g.accuracy >= SOLVED]
        ds = float(solved.d.min()) if len(solved) else float("inf")
        dstar[(mixer, kappa)] = ds
        ok.append(ds <= 2 * dth and bool((g[g.d <= dth / 2].accuracy < SOLVED).all()))
    order = all(
        dstar.get(("mamba2", k), math.inf) <= dstar.get(("s6", k), math.inf) <= dstar.get(("s4d", k), math.inf)
        for k in sorted(set(best.kappa))
        if k >= 8
    )
    return float(np.mean(ok)), order, dstar


def _figa3_values(runs) -> dict:
    best = runs.groupby(["mixer", "kappa", "N"]).accuracy.max().reset_index()
    s6 = best[best.mixer == "s6"]
    below, above = s6[s6.N < s6.kappa], s6[s6.N >= s6.kappa]
    m2 = best[best.mixer == "mamba2"]
    m2_below = m2[m2.N < 4 * np.log(m2.kappa)]
    s4 = best[best.mixer == "s4d"]
    s4_range = (
        float(s4.groupby("kappa").accuracy.agg(lambda a: a.max() - a.min()).max())
        if s4.N.nunique() >= 2
        else float("nan")
    )
    return {
        "mamba_best_below_kappa": float(below.accuracy.max()),
        "mamba_best_above_kappa_min": float(above.groupby("kappa").accuracy.max().min()),
        "mamba2_best_below_4lnk": float(m2_below.accuracy.max()) if len(m2_below) else float("nan"),
        "s4d_range_over_N": s4_range,
    }


def measure_figa3(bundle) -> Measurement:
    """Fig. A.3: Mamba is not exact for N < κ and is for some N ≥ κ; Mamba-2 is not exact for N < 4 ln κ;
    S4D's accuracy does not depend on N (range ≤ 0.05): each seed's best over d (the paper's is the best of 7 seeds:
    module docstring), combined over seeds; a null control at the generator's chance level 1/|V|. A run-store bundle
    with several grids (column ``grid``) is read on its N-sweep grid (the one with the most values of N), so that
    grids of other T and |V| do not mix."""
    runs, preset = _mqar_runs(bundle)
    if "grid" in runs and runs.grid.nunique() > 1:
        runs = runs[runs.grid == runs.groupby("grid").N.nunique().idxmax()]
    s6 = runs[runs.mixer == "s6"]
    if not ((s6.N < s6.kappa).any() and (s6.N >= s6.kappa).any()):
        raise NotRun(f"the {preset} bundle has no Mamba runs on both sides of N = κ; needs {RUN_MQAR}")
    best = runs.groupby(["mixer", "kappa", "N"]).accuracy.max().reset_index()

    def one(r):
        return Measurement(
            _figa3_values(r),
            "; ".join(f"{x.mixer} κ={x.kappa} N={x.N}: {x.accuracy:.4f}" for x in r.itertuples()),
            Evidence.from_bundle(bundle, f"κ ∈ {sorted(set(best.kappa))}", 1),
        )

    chance = 1 / runs.V if "V" in runs else 1 / _vocab(bundle)
    m = replace(_per_seed(runs, one), control=_chance_null(runs, chance, one, "every model at chance, 1/|V|"))
    has_both = len(best[best.mixer == "mamba2"]) and len(best[best.mixer == "s4d"])
    return _summary(
        m,
        "best of seeds: " + "; ".join(f"{r.mixer} κ={r.kappa} N={r.N}: {r.accuracy:.4f}" for r in best.itertuples()),
        "" if has_both else "Mamba-2 and S4D N sweeps not in this bundle",
    )


# ============================================================================ induction heads
def measure_lemma3(ih: dict, example_ok: bool) -> Measurement:
    fixed = [r["all"] for (V, n), r in ih.items() if n.startswith("fixed")]
    Vs = sorted({V for V, _ in ih})
    return Measurement(
        {"fixed_min_accuracy": min(fixed), "worked_example_matches": example_ok},
        f"with the Δ bias: {min(fixed):.4f} on all positions (blank included), |V| ∈ {Vs}; worked example "
        f"(Eq. 103) reproduced: {example_ok}",
        Evidence.exact(f"T = 100, |V| ∈ {Vs}"),
    )


def measure_lemma3_delta(ih: dict) -> Measurement:
    printed = [r["all"] for (V, n), r in ih.items() if not n.startswith("fixed")]
    fixed = [r["all"] for (V, n), r in ih.items() if n.startswith("fixed")]
    return Measurement(
        {"printed_max_accuracy": max(printed), "fixed_min_accuracy": min(fixed)},
        f"Δ = softplus(w[I|0]x̂) as printed: {min(printed):.2f}–{max(printed):.2f} on all positions; with "
        f"the bias −b_Δ: {min(fixed):.4f}",
        Evidence.exact("T = 100, |V| ∈ {5, 10, 20, 40}"),
    )


def _ih_cells(bundle):
    runs = bundle.tables["runs"]
    best = runs.groupby(["V", "d", "N", "mixer"]).accuracy.max().unstack("mixer")
    return runs, best


def _ih_threshold(best) -> float:
    """Fraction of |V| where Mamba-Δ⊤ reaches 0.99 only at d ≥ |V| (one grid step below 2|V|) and does
    reach it at some d ≥ 4|V|; NaN where the d grid cannot show it (fewer than 3 values of d)."""
    ok = []
    for V, g in best.reset_index().groupby("V"):
        if g.d.nunique() < 3:
            continue
        solved = g[g.s6_dT >= SOLVED]
        ok.append(bool((solved.d >= V).all()) and bool((solved.d >= 4 * V).any()))
    return float(np.mean(ok)) if ok else float("nan")


def _ih_values(runs, factors=(4,)) -> dict:
    """One seed's INDUCTION HEADS numbers: the lowest Mamba-Δ⊤ − Mamba gap over the (|V|, d, N) cells, the lowest
    threshold fraction (:func:`_ih_threshold`) over the N factors, and Mamba-Δ⊤'s best accuracy (whether it learns
    the task at all)."""
    cells = runs.groupby(["V", "d", "N", "mixer"]).accuracy.max().unstack("mixer")
    thr = [_ih_threshold(cells[[n == f * V for V, d, n in cells.index]]) for f in factors]
    return {
        "min_gap_dT_minus_mamba": float((cells["s6_dT"] - cells["s6"]).min()),
        "fraction_V_threshold_as_bound": float(np.min(thr)),
        "dT_best_accuracy": float(cells["s6_dT"].max()),
    }


def _ih_null(runs, one) -> Control:
    return _chance_null(
        runs, 1 / (runs.V + 1), one, "both mixers at chance, 1/(|V| + 1) (a uniform guess over the tokens and blank)"
    )


def measure_fig3(bundle) -> Measurement:
    """Fig. 3 (N = 4|V|): Mamba-Δ⊤ ≥ Mamba − 0.02 at every (|V|, d); Mamba-Δ⊤ hits 0.99 only above the
    Lemma 3 bound d = 2|V| (one grid step of tolerance) and does hit it at d ≥ 4|V|: each seed's own cells (the
    paper's are the best of 5 seeds: module docstring), combined over seeds; a null control at chance."""
    runs, best = _ih_cells(bundle)
    best = best[[n == 4 * V for V, d, n in best.index]]
    if best.empty:
        raise NotRun(f"the bundle has no N = 4|V| runs; needs {RUN_IH}")
    sub = runs[runs.N == 4 * runs.V]

    def one(r):
        return Measurement(
            _ih_values(r),
            "min gap {min_gap_dT_minus_mamba:+.3f}".format(**_ih_values(r)),
            Evidence.from_bundle(bundle, f"|V| ∈ {sorted(set(runs.V))}, d ∈ {sorted(set(runs.d))}", 1),
        )

    m = replace(_per_seed(sub, one), control=_ih_null(sub, one))
    return _summary(
        m,
        "best of seeds: "
        + "; ".join(f"|V|={V} d={d}: Mamba {r.s6:.3f}, Mamba-Δ⊤ {r.s6_dT:.3f}" for (V, d, N), r in best.iterrows()),
        "" if best.reset_index().d.nunique() >= 3 else "one value of d: the d threshold is not measured",
    )


def measure_figa4(bundle) -> Measurement:
    runs, best = _ih_cells(bundle)
    factors = sorted({n // V for V, d, n in best.index})
    if len(factors) < 2:
        raise NotRun(f"the bundle has runs at N = {factors}·|V| only; Fig. A.4 needs N ∈ {{|V|, 2|V|, 4|V|}}: {RUN_IH}")

    def one(r):
        v = _ih_values(r, factors)
        return Measurement(
            v,
            f"min gap {v['min_gap_dT_minus_mamba']:+.3f}",
            Evidence.from_bundle(bundle, "N ∈ {|V|, 2|V|, 4|V|}", 1),
        )

    m = replace(_per_seed(runs, one), control=_ih_null(runs, one))
    gap = float((best["s6_dT"] - best["s6"]).min())
    return _summary(m, f"N factors {factors}: min(Mamba-Δ⊤ − Mamba) of the best of seeds {gap:.3f}")


# ============================================================================ the claims
RECIPE_UNTESTABLE = (
    "Mamba+PE, trained by the same recipe and seeds at the same T, does not solve the task (or is not in the bundle): "
    "a model that fails here might only be undertrained"
)
_EXACT_WHY = "a construction claimed exact must get every test query right"

# The sentence of the paper each claim tests, verbatim from its text (two pieces joined with " … "; paper 002's
# Appendix I for the claim that compares the two papers). LaTeX is as the text file has it.
QUOTES = {
    "003/Thm1": (
        r"For any $\epsilon > 0$ , there exist 3 Mamba basis functions … is smaller than $\epsilon$ , $\forall "
        r"s \in [0, 1]$ ."
    ),
    "003/FigA1": (
        "by linearly combining shifted Heaviside bases, one can immediately recover the required Haar "
        "wavelets (see Fig. A.1, middle-right subplots)."
    ),
    "003/Prop1": ("A 1-layer Mamba can recover absolute time, given an all-ones input."),
    "003/Cor1": (
        r"For a piecewise-constant function $\rho(t)$ with $m \ge 1$ discontinuities, there exist N Mamba "
        r"basis functions (8) such that the $L^2$ approximation error $\|\rho - \sum_{n=1}^{N} g_n^M\|_{L^2}$ "
        r"is of order $\mathcal{O}(2^{-\frac{N}{3m}})$ . On the other hand, S4D basis functions can achieve an "
        r"approximation error of $\mathcal{O}(N^{-1})$ ."
    ),
    "003/Cor2": ("There exists an S6 layer that solves KEEP *n*-TH on input augmented with time Positional Encoding."),
    "003/Tab1": (
        "the results in Tab. 1 verify empirically that Mamba with PE can perfectly … solve the task (same as "
        "Transformers), whereas Mamba without PE and S4D both fail"
    ),
    "003/TabA1-A2": (
        "When equipped with PE, Mamba manages to achieve 100% accuracy on KEEP *n*-TH, regardless of sequence "
        "length. … Then again Transformers do not need to retain memory, as they can look back to the whole "
        "sequence at each step, in light of their attention mechanism, and have no issue solving the task for "
        "any T."
    ),
    "003/TabA1-S4D+PE": (
        "Table A.1: Ablation on KEEP *n*-TH: MAMBA+PE, S4D+PE, TRANSFORMERS with varying sequence length T = "
        "10, 20, embedding dimension *d*, and state size *N*. … d=32, N=8 0.94 (0.00) 600 8.7k 0.72 (0.01) "
        "600 8.7k"
    ),
    "003/TabA2-S4D+PE": (
        "On the other hand, S4D is lacking such ability, and already fails at the task for T = 20 (Tab. A.1 and A.2)."
    ),
    "003/TabA3-A4": (
        "When removing PE from Mamba, however (Tab. A.3 and A.4), the model loses its way to discriminate the "
        "specific token that must be retrieved, and performance drops to that of S4D, as expected."
    ),
    "003/Fig1-right": (
        "Meanwhile, the right histogram shows that, compared to S4D, Mamba has additional flexibility in "
        r"forgetting irrelevant information ( $e^{-\lambda\Delta_t}$ is mostly 0 before timestep *n*) and "
        r"memorizing information selectively ( $e^{-\lambda\Delta_t}$ is mostly 1 from timestep *n* onwards), "
        "while S4D is forced to memorize indiscriminately."
    ),
    "003/Fig1-left": (
        r"The left histogram confirms that the Mamba model must push $e^{-\lambda\Delta_t} \rightarrow 1$ as "
        "*T* increases, as implied by Lem. 2, to retain information throughout the sequence. Also the S4D "
        "must behave similarly."
    ),
    "003/Lemma1": (
        "Lemma 1 shows that both S4D and S6 have exponential decay of sensitivity when the sequence length t increases."
    ),
    "003/Lemma2": (
        "Then the sensitivity of the *n*-th component of the state at time t with respect to any input $x_i$ "
        "is lower bounded by"
    ),
    "003/Eq45": ("Only the denominator at the first factor remains as a function of t, providing"),
    "003/Remark1": (
        "we note that the results proven in Thm. 1, Lem. 1 and Lem. 2 hold analogously for the Mamba-2 mixer "
        r"(Dao & Gu, 2024). … choosing a suitable scalar $\lambda$ suffices (see details in App. A.2)."
    ),
    "003/Thm2": (
        r"There exists a 1-layer Mamba model without gating that solves MQAR with $\kappa$ pairs using "
        r"embedding size $d = O(\kappa + \log |V|)$ , and state size $N = \kappa$ ."
    ),
    "003/Thm2-bias": (
        r"We set the output linear layer with the weight matrix $W_o = [\mathbf{0}|M_v^\top] \in "
        r"\mathbb{R}^{|V| \times (\kappa+p)}$ and the bias vector $\mathbf{b}_o = -(c_0k b)W_os$ ."
    ),
    "003/Thm3": (
        r"There exists a 1-layer Mamba-2 model without gating that solves MQAR with $\kappa$ pairs using "
        r"embedding size $d = O(\log \kappa + \log |V|)$ , and state size $N = \log \kappa$ ."
    ),
    "003/Thm3-recall99": (
        "We remind that, according to Thm. 2 to 4, our theorized MQAR solutions require a value of at least N "
        r"= 1, $N = \kappa$ and $N \sim \log \kappa$ for S4D, Mamba and Mamba-2, respectively."
    ),
    "003/Remark3": (
        "we can infer that the extra convolutions included in the Mamba-2 layer over vanilla Mamba in general "
        r"allow for a more parameter-efficient solution of MQAR, by noting that $d = \log \kappa + \log |V| < "
        r"\kappa + \log |V|$ , and $N = \log \kappa < \kappa$ ."
    ),
    "003/Remark7": (
        "Such construction may fail in the adversarial case where most values are the same and the number of "
        r"keys $\kappa$ is large. … This can be counteracted by decreasing $\epsilon$ ;"
    ),
    "003/Thm4": (
        r"There exists a 1-layer Mamba model with an S4D mixer that solves MQAR with $\kappa$ pairs, using "
        r"embedding size $d = O(\kappa \log |V|)$ , and state size N = 1."
    ),
    "003/Thm4-readout": (
        r"per the assumption that $Me_{|V|+1}$ is parallel to $\mathbf{1}_p$ . This allows us to recover the "
        "correct value, completing the proof."
    ),
    "003/Tab2": ("Comparison of Mamba (including S4D as a special case) and Mamba-2 (single-head) mixers."),
    "003/Tab3": (
        "Overview of exact solutions to the MQAR task that can be implemented by the Mamba model with "
        "S4D-mixer in Thm. 4 (top), Mamba-mixer in Thm. 2 (middle), and Mamba-2-mixer in Thm. 3 (bottom)."
    ),
    "003/Lemma4": (
        r"there exists a random projection matrix $M : \mathbb{R}^d \to \mathbb{R}^p$ where $p = "
        r"O(\epsilon^{-2} \log d), M_{i,j} \stackrel{i.i.d.}{\sim} \frac{1}{\sqrt{p}} \operatorname{Unif} "
        r"\{\pm 1\}$ such that for all pairs (i, j),"
    ),
    "003/Fig2": (
        "The theoretical bounds on model size for assembling the solutions proposed in Thm. 2 to 4 (black "
        "lines) separate reasonably well models that can achieve 100% accuracy (above black lines) from those "
        "that do not (below). In terms of model size efficiency, Mamba-2 is better than Mamba, which in turn "
        "is better than S4D."
    ),
    "003/FigA2": (
        "The bounds are still reasonably tight, and the observations drawn from Fig. 2 still hold in this "
        r"case. … Notice also that, for Mamba-2, the simplest task $\kappa = 4$ can achieve 100% accuracy even "
        "*below* the theoretical curve proposed in our theorems."
    ),
    "003/FigA3": (
        "Indeed, in Fig. A.3 we observe that varying N does not have a particular impact on the final "
        r"accuracy of S4D. For Mamba, on the other hand, we see that for $N < \kappa$ the training procedure "
        "fails to recover an exact solution to MQAR. Similarly, for Mamba-2, no solution is recovered for $N "
        r"< 4 \log \kappa$ ."
    ),
    "003/Lemma3": (
        r"There exists a 1-layer Mamba model with the Mamba- $\Delta^{\top}$ SSM mixer (15) that solves "
        "INDUCTION HEADS with vocabulary V using embedding size d = 2|V| and state size N = |V|."
    ),
    "003/Lemma3-Delta": (
        r"We design $\Delta(\hat{x}_t) \in \mathbb{R}^N \equiv \mathbb{R}^{|V|}$ such that when the input "
        "contains the key information, the corresponding key column in the state is *erased* (while the other "
        "columns remain the same)."
    ),
    "003/Fig3": (
        r"Mamba- $\Delta^{\top}$ 's performance (outlined) is equal or better than Mamba's (filled) and only "
        "hits 100% above the theoretical bound from Lem. 3 (black)."
    ),
    "003/FigA4": (
        r"Trained models accuracy on INDUCTION HEADS task (best of 5 seeds), varying |V| and d, with $N \in "
        r"\{|V|, 2|V|, 4|V|\}$ (left, middle, right). Mamba- $\Delta^{\top}$ 's performance (outlined) is "
        "equal or better than Mamba's (filled) and only hits 100% above the theoretical bound from Lem. 3 "
        "(black)."
    ),
    "002/AppI-003Thm2": (
        r"Theorem 2 in Huang et al. (2025) shows that a 1-layer *Mamba* with dimensions $D = O(V_k + \log "
        "V_v)$ and $N = V_k$ can solve MQAR, by applying JL lemma to the values (but not to the keys, which "
        "remain uncompressed)."
    ),
}

_CLAIMS = (
    # ---- §4.1, App. A.2
    Claim(
        "003/Thm1",
        "three Mamba basis functions (8) with time PE approximate any Haar wavelet ψ_jk to any ε, for all s ∈ [0, 1]",
        "§4.1, Thm. 1; App. A.2, Eqs. 16–23",
        "|ψ_jk(s) − (g¹ + g³ − 2g²)| < ε ∀s ∈ [0, 1] as w_Δ → −∞ (no number given)",
        Rule(
            why="a uniform ε needs the sup error over all s to fall below any ε (we ask ≤ 0.5, a quarter of ψ₀,₀'s jump "
            "of 2); the corrected statement is L² convergence at the rate |w|^(−1/4) (theory 10^(−1/4) = 0.56 per "
            "decade, ±0.13), pointwise convergence away from the jumps, and an exact discrete construction",
            reproduced=conds(("sup_error_all_s", "<=", 0.5)),
            erratum=_THM1_ERRATUM,
        ),
        measure_thm1,
        SECTION["approx"],
    ),
    Claim(
        "003/FigA1",
        "the three Mamba bases are shifted (smoothed) Heavisides whose combination (1, −2, 1) approaches "
        "the Haar wavelet",
        "App. A.2, Fig. A.1",
        "no number given (an illustration)",
        Rule(
            why="the figure's shapes: the L² distance must shrink with the sharpness and the curves must coincide "
            "away from the jumps (to 1e-6)",
            reproduced=conds(("l2_decreasing", "true"), ("sup_error_away_from_jumps", "<=", 1e-6)),
        ),
        measure_thm1,
        SECTION["approx"],
    ),
    Claim(
        "003/Prop1",
        "a 1-layer Mamba recovers absolute time from an all-ones input (B = 1, λ = 0)",
        "App. A.2, Prop. 1, Eq. 24",
        "h(t) = t exactly",
        Rule(why="h_t = Σ_{s≤t} 1 is exact in float64 for t ≤ 2⁵³", reproduced=conds(("max_error", "<=", 1e-12))),
        measure_prop1,
        SECTION["approx"],
    ),
    Claim(
        "003/Cor1",
        "for piecewise-constant ρ with m jumps, N Mamba bases reach L² error O(2^(−N/3m)); S4D (Fourier) "
        "bases only O(1/N)",
        "§4.1, Cor. 1; App. A.2, Eqs. 27–31",
        "‖ρ − Σ g_n‖_L² = O(2^(−N/3m)) (Mamba) vs O(N^(−1)) (S4D)",
        Rule(
            why="O() bounds the decay: the measured rate per wavelet must reach at least 75 % of the claimed 1/m (finite-N "
            "curvature), and the Fourier slope must lie within ±0.15 of −1; the proof (28)–(31) sums squared "
            "coefficients, so the corrected statement is the same rates for the squared error",
            reproduced=conds(
                ("haar_rate_ratio_norm", ">=", 0.75),
                ("fourier_slope_norm_max", "<=", -0.85),
                ("fourier_slope_norm_min", ">=", -1.15),
            ),
            erratum=conds(
                ("haar_rate_ratio_squared", ">=", 0.75),
                ("fourier_slope_squared_max", "<=", -0.85),
                ("fourier_slope_squared_min", ">=", -1.15),
                ("haar_below_fourier_at_largest_N", "true"),
            ),
        ),
        measure_cor1,
        SECTION["approx"],
    ),
    Claim(
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
    ),
    Claim(
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
    ),
    Claim(
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
    ),
    Claim(
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
    ),
    Claim(
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
    ),
    Claim(
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
    ),
    # ---- Fig. 1
    Claim(
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
    ),
    Claim(
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
    ),
    # ---- §4.2, App. B
    Claim(
        "003/Lemma1",
        "the sensitivity |∂h_t/∂x_j| decays exponentially: in t for S4D, in Σ_r Δ(x_r) for S6",
        "§4.2, Lemma 1; App. B, Eqs. 34–41",
        "slope −λ_n (no number given)",
        Rule(
            why="the closed form is exact: autograd agrees to float64 round-off (1e-10 relative) and the log-slopes "
            "equal −λ to 1e-6",
            reproduced=conds(
                ("autograd_vs_closed_form", "<=", 1e-10),
                ("s6_slope_error", "<=", 1e-6),
                ("s4d_slope_error", "<=", 1e-6),
            ),
        ),
        measure_lemma1,
        SECTION["sens"],
    ),
    Claim(
        "003/Lemma2",
        "if λΣΔ stays bounded by c, the S6 sensitivity stays above e^(−c)|∂(BΔx)| as t → ∞",
        "§4.2, Lemma 2, Eqs. 12–13",
        "lim |∂h_t/∂x_j| ≥ e^(−c)|∂_{x_j}(B Δ x)| (no number given)",
        Rule(
            why="the bound must hold at T = 10⁴, where the time-invariant factor e^(−(T−1)) is below 1e-100",
            reproduced=conds(("sensitivity_over_bound", ">=", 1.0), ("s4d_factor", "<=", 1e-100)),
        ),
        measure_lemma2,
        SECTION["sens"],
    ),
    Claim(
        "003/Eq45",
        "softmax attention's sensitivity decays only like 1/t",
        "App. B, Eqs. 44–45",
        "|∂h_t/∂x_j| ≤ C/t · (min_r e^{x_t W_Qᵀ W_K x_r})^(−1)",
        Rule(
            why="decaying like 1/t means a log–log slope of the sensitivity against t of −1; ±0.2 allows the random "
            "attention weights, and an exponential decay would be far steeper",
            reproduced=conds(("loglog_slope", ">=", -1.2), ("loglog_slope", "<=", -0.8)),
        ),
        measure_eq45,
        SECTION["sens"],
    ),
    Claim(
        "003/Remark1",
        "Thm. 1, Lemma 1 and Lemma 2 hold for the Mamba-2 mixer (a scalar λ suffices)",
        "§4.2, Remark 1",
        "no number given",
        Rule(
            why="the discrete Haar construction uses one λ for every channel; run through Mamba-2's scan (one head per "
            "channel) it must stay exact to the euler construction's 1e-6 (Lemmas 1–2 are already scalar-λ, N = 1)",
            reproduced=conds(("max_error_ssd", "<=", 1e-6)),
        ),
        measure_remark1,
        SECTION["approx"],
    ),
    # ---- §5.1, App. C.1
    Claim(
        "003/Thm2",
        "a 1-layer Mamba without gate solves MQAR with d = O(κ + log|V|) and N = κ",
        "§5.1, Thm. 2; App. C.1, Eqs. 53–71",
        "exact (no number given)",
        Rule(
            why=_EXACT_WHY + ": step 1 at N = κ for every κ, |V|, and step 2 (d = κ + p) at p = 16 (|V| = 128) and "
            "p = 24 (|V| = 512) for some JL draw (an existence claim)",
            reproduced=conds(
                ("step1_min", ">=", EXACT), ("step2_V128_p16", ">=", EXACT), ("step2_V512_p24", ">=", EXACT)
            ),
        ),
        measure_thm2,
        SECTION["mqar"],
    ),
    Claim(
        "003/Thm2-bias",
        "the output bias of Thm. 2's step 2 is b_o = −(c₀kb)W_o s",
        "App. C.1, after Eq. 71",
        "b_o = −(c₀kb)W_o s (no accuracy given)",
        Rule(
            why="the printed bias must make the construction solve MQAR (≥ 0.99 for some κ, |V|, p); the corrected "
            "bias −(c₀k−b)(c₁k−b)W_o s must make it exact",
            reproduced=conds(("printed_bias_best", ">=", SOLVED)),
            erratum=conds(("corrected_bias_best", ">=", EXACT)),
        ),
        measure_thm2_bias,
        SECTION["mqar"],
    ),
    Claim(
        "003/Thm3",
        "a 1-layer Mamba-2 without gate solves MQAR with d = O(log κ + log|V|) and N = log κ",
        "§5.1, Thm. 3; App. C.1, Eqs. 72–86",
        "exact with N = log κ (no number given)",
        Rule(
            why="as printed, the key codes at N = ⌈log₂κ⌉ (generous: log₂ ≥ ln) must be exact for every κ; partially if "
            "the construction is exact with one-hot keys and JL values and the N it needs grows like log κ "
            "(log–log slope ≤ 0.5: c·log κ has slope 1/ln κ ≈ 0.25–0.7 over κ = 4–64, linear growth has 1)",
            reproduced=conds(("keys_acc_at_log2_kappa", ">=", EXACT)),
            partially=conds(
                ("step1_min", ">=", EXACT), ("jl_values_p12", ">=", EXACT), ("state_growth_exponent", "<=", 0.5)
            ),
        ),
        measure_thm3,
        SECTION["mqar"],
    ),
    Claim(
        "003/Thm3-recall99",
        "the state size a 1-layer Mamba-2 needs to solve MQAR grows like log κ (N = log κ)",
        "§5.1, Thm. 3; App. C.1, Step 2 after Eq. 77",
        "N = log κ (no constant given)",
        Rule(
            why="N = log κ up to a constant: over a sweep spanning at least 16× in κ, the smallest N with 99 % recall "
            "divided by log₂κ may grow at most 2× (finite-size slack; linear growth makes it grow ~κ/log κ); "
            "partially if N still grows sublinearly (log–log exponent ≤ 0.5, as for Thm3)",
            reproduced=conds(("log_ratio_growth", "<=", 2.0)),
            partially=conds(("state_growth_exponent", "<=", 0.5)),
            testable=conds(("kappa_span", ">=", 16.0)),
            untestable_why="the sweep spans less than 16× in κ, too little to tell log κ from a power of κ",
        ),
        measure_thm3_recall,
        SECTION["mqar"],
    ),
    Claim(
        "003/Remark3",
        "Mamba-2's extra convolutions give a more parameter-efficient MQAR solution than Mamba: N = log κ < κ",
        "§5.1, Remark 3",
        "d = log κ + log|V| < κ + log|V|, N = log κ < κ",
        Rule(
            why="Thm. 3's construction must be exact with fewer state columns than Thm. 2's N = κ at every κ tested; "
            "at some κ only is partial",
            reproduced=conds(("fraction_kappa_below_thm2", ">=", 1.0)),
            partially=conds(("fraction_kappa_below_thm2", ">", 0.0)),
        ),
        measure_remark3,
        SECTION["mqar"],
    ),
    Claim(
        "003/Remark7",
        "Thm. 3's N = log κ construction may fail on adversarial inputs (all values equal but one) when "
        "ε(κ − 1) > 1, and a smaller ε (larger p) counteracts it",
        "App. C.1, Remark 7",
        "no number given",
        Rule(
            why="the remark's argument at its worst case (every overlap ⟨k₁, k_i⟩ = ε, the same sign): on the "
            f"adversarial input the query of k₁ must be answered (≥ 0.99) where ε(κ − 1) ≤ {R7_BELOW} and missed (≤ 0.05) "
            f"where ε(κ − 1) ≥ {R7_ABOVE}, at every κ of the sweep, with random values answered (≥ 0.99) at the same "
            "codes; a smaller ε counteracting it is the same sweep read downwards. Changed in the fair-test audit "
            "(issue 31): the earlier rule read JL codes, whose overlaps have random signs and never reach ε(κ − 1)",
            reproduced=conds(
                ("adversarial_below", ">=", 0.99), ("adversarial_above", "<=", 0.05), ("random_min", ">=", 0.99)
            ),
        ),
        measure_remark7,
        SECTION["mqar"],
    ),
    Claim(
        "003/Thm4",
        "a 1-layer Mamba with an S4D mixer (and gate) solves MQAR with d = O(κ log|V|) and N = 1",
        "§5.1, Thm. 4; App. C.1, Eqs. 87–99",
        "exact (no number given)",
        Rule(
            why=_EXACT_WHY + ": step 1 (d = κ|V|) and step 2 (d = κp, p = 16) for some JL draw",
            reproduced=conds(("step1_min", ">=", EXACT), ("step2_centered_p16", ">=", EXACT)),
        ),
        measure_thm4,
        SECTION["mqar"],
    ),
    Claim(
        "003/Thm4-readout",
        "in Thm. 4's step 2 the shift term cancels because Me_{|V|+1} ∥ 1 (readout Me_l, β = 1)",
        "App. C.1, Eqs. 93–99",
        "(Me_i)ᵀ1 ≤ ε (no accuracy given)",
        Rule(
            why="the printed readout must solve MQAR (≥ 0.99 for some κ, p); the centered readout (I − 11ᵀ/p)Me_l must "
            "make it exact",
            reproduced=conds(("printed_readout_best", ">=", SOLVED)),
            erratum=conds(("centered_readout_best", ">=", EXACT)),
        ),
        measure_thm4_readout,
        SECTION["mqar"],
    ),
    Claim(
        "003/Tab2",
        "the Mamba block's gated output is ỹ_t = g(x_t) ⊙ x_t (Table 2, (14g), Mamba column)",
        "§5, Tab. 2, Eq. 14g",
        "ỹ_t = g(x_t) ⊙ x_t",
        Rule(
            why="a gate on x alone makes the output independent of the SSM, so Thm. 4's gated construction must still "
            "solve MQAR (≥ 0.99) for the printed form to stand; the corrected ỹ_t = g(x_t) ⊙ y_t must be exact",
            reproduced=conds(("printed_gate_accuracy", ">=", SOLVED)),
            erratum=conds(("corrected_gate_accuracy", ">=", EXACT)),
        ),
        measure_tab2_gate,
        SECTION["mqar"],
    ),
    Claim(
        "003/Tab3",
        "Mamba (Thm. 2), Mamba-2 (Thm. 3) and the S4D mixer (Thm. 4) each solve MQAR exactly with the listed mechanism",
        "§5.1, Tab. 3 (body missing from the source; reconstructed from the proofs)",
        "no number given",
        Rule(
            why=_EXACT_WHY + ", for each of the three one-hot constructions",
            reproduced=conds(("min_accuracy", ">=", EXACT)),
        ),
        measure_tab3,
        SECTION["mqar"],
    ),
    Claim(
        "003/Lemma4",
        "random ±1/√p projections keep unit norms and pairwise inner products below ε with p = O(ε^(−2) log d)",
        "App. C.1, Lemma 4 (JL)",
        "p = O(ε^(−2) log d) (no constant given)",
        Rule(
            why="for d²/2 sub-Gaussian inner products of variance 1/p the maximum is ≈ 2√(ln d / p); the ratio "
            "ε·√(p / ln d) must stay ≤ 3 at every (d, p), and norms are exactly 1",
            reproduced=conds(("eps_sqrt_p_over_log_d_max", "<=", 3.0), ("norm_error", "<=", 1e-12)),
        ),
        measure_lemma4,
        SECTION["mqar"],
    ),
    Claim(
        "003/Fig2",
        "trained 1-layer models' MQAR thresholds in d follow the bounds of Thms. 2–4, and Mamba-2 needs "
        "less d than Mamba, which needs less than S4D",
        "§5.1, Fig. 2",
        "best of 7 seeds, T = 100, |V| = 128; S4D N = 4, Mamba N = 2κ, Mamba-2 N = 8 ln κ (no numbers given)",
        Rule(
            why="'reasonably well' (the paper gives no number): in ≥ 75 % of (mixer, κ) cells the smallest solved d (≥ 0.99) is within 2× the bound "
            "and nothing at half the bound or below solves; the order must hold for every κ ≥ 8. The paper's d* is the "
            "best of 7 seeds; the rule reads each seed's own d* and the mean over seeds (module docstring)",
            reproduced=conds(("fraction_cells_tracking_bound", ">=", 0.75), ("efficiency_order", "true")),
            trained=True,
        ),
        measure_fig2,
        SECTION["mqar"],
        not_run=RUN_MQAR,
    ),
    Claim(
        "003/FigA2",
        "with |V| ∈ {256, 512} the bounds still separate solved from unsolved sizes; Mamba-2 at κ = 4 "
        "solves below its bound",
        "App. D.3, Fig. A.2",
        "best of 7 seeds, T = 100 (no numbers given)",
        Rule(
            why="as Fig. 2: ≥ 75 % of (mixer, κ) cells track the bound",
            reproduced=conds(("fraction_cells_tracking_bound", ">=", 0.75)),
            trained=True,
        ),
        None,
        SECTION["mqar"],
        not_run="add |V| ∈ {256, 512} to the paper preset of ch3.mqar_train and run `python -m "
        "mamba_recall.experiments.ch3_mqar_train --preset paper --device cuda` (about 2× Fig. 2: "
        "40 GPU-hours)",
    ),
    Claim(
        "003/FigA3",
        "trained Mamba recovers no exact MQAR solution for N < κ and does for some N ≥ κ; Mamba-2 none "
        "for N < 4 log κ; S4D's accuracy does not depend on N",
        "App. D.3, Fig. A.3",
        "best of 7 seeds, |V| = 512 (S4D 256), T = 100 (no numbers given)",
        Rule(
            why="exact means ≥ 0.99; the threshold is only visible if the N ≥ κ control solves the task, S4D 'no "
            "impact' is a range ≤ 0.05 over N; the Mamba part alone is partial. The paper's 'log κ' is read as ln κ, "
            "as in Fig. 2's N = 8 ln κ. Its values are the best of 7 seeds ('no solution is recovered': no seed); the "
            "rule reads each seed's best over d and their mean over seeds (module docstring), whose whole interval "
            "must stay below 0.99",
            testable=conds(("mamba_best_above_kappa_min", ">=", SOLVED)),
            untestable_why="the N ≥ κ control did not reach an exact solution (≥ 0.99) with this training budget, so "
            "the run cannot locate a threshold at N = κ",
            reproduced=conds(
                ("mamba_best_below_kappa", "<", SOLVED),
                ("mamba2_best_below_4lnk", "<", SOLVED),
                ("s4d_range_over_N", "<=", 0.05),
            ),
            partially=conds(("mamba_best_below_kappa", "<", SOLVED)),
            trained=True,
        ),
        measure_figa3,
        SECTION["mqar"],
        not_run=RUN_MQAR,
    ),
    # ---- §5.2, App. C.2
    Claim(
        "003/Lemma3",
        "a 1-layer Mamba-Δ⊤ (15) with d = 2|V| and N = |V| solves INDUCTION HEADS",
        "§5.2, Lemma 3; App. C.2, Eqs. 100–110",
        "exact (no number given); worked example (103)",
        Rule(
            why=_EXACT_WHY + " (all positions, blank included), and the worked example (103) must come out as printed",
            reproduced=conds(("fixed_min_accuracy", ">=", EXACT), ("worked_example_matches", "true")),
        ),
        measure_lemma3,
        SECTION["ih"],
    ),
    Claim(
        "003/Lemma3-Delta",
        "Lemma 3's step is Δ(x̂) = SoftPlus(w_Δ[I|0]x̂), with Δ = 0 on the untouched columns",
        "App. C.2, Eqs. 109–110",
        "Δ = SoftPlus(w_Δ[I|0]x̂) (no accuracy given)",
        Rule(
            why="softplus(0) = ln 2, not 0: the printed Δ must still solve the task (≥ 0.99 on all positions) to stand; "
            "with a bias −b_Δ the construction must be exact",
            reproduced=conds(("printed_max_accuracy", ">=", SOLVED)),
            erratum=conds(("fixed_min_accuracy", ">=", EXACT)),
        ),
        measure_lemma3_delta,
        SECTION["ih"],
    ),
    Claim(
        "003/Fig3",
        "trained Mamba-Δ⊤ is at least as good as Mamba on INDUCTION HEADS and reaches 100 % only above the "
        "Lemma 3 bound d = 2|V|",
        "§5.2, Fig. 3",
        "best of 5 seeds, N = 4|V|, T = 100 (no numbers given)",
        Rule(
            why="'equal or better' up to 0.02 of test noise at every (|V|, d); 'only above the bound' means 0.99 is "
            "reached at no d below |V| (one grid step of tolerance under 2|V|) and is reached at some d ≥ 4|V|; "
            "the ordering alone is partial, and only among models that learn the task (Mamba-Δ⊤ reaching 0.99 "
            "somewhere): two models at chance are 'equal', so without that the partial level passed the null control "
            "(declared after the chance null reached it, not after our numbers). The paper's values are the best of 5 "
            "seeds; the rule reads each seed's own and their mean over seeds (module docstring)",
            reproduced=conds(("min_gap_dT_minus_mamba", ">=", -0.02), ("fraction_V_threshold_as_bound", ">=", 1.0)),
            partially=conds(("min_gap_dT_minus_mamba", ">=", -0.02), ("dT_best_accuracy", ">=", SOLVED)),
            trained=True,
        ),
        measure_fig3,
        SECTION["ih"],
        not_run=RUN_IH,
    ),
    Claim(
        "003/FigA4",
        "Fig. 3's findings hold for N ∈ {|V|, 2|V|, 4|V|}",
        "App. D.4, Fig. A.4",
        "best of 5 seeds (no numbers given)",
        Rule(
            why="as Fig. 3, at every N (the partial level only among models that learn the task: two models at chance "
            "are 'equal'); best of 5 seeds in the paper, each seed's own value here (module docstring)",
            reproduced=conds(("min_gap_dT_minus_mamba", ">=", -0.02), ("fraction_V_threshold_as_bound", ">=", 1.0)),
            partially=conds(("min_gap_dT_minus_mamba", ">=", -0.02), ("dT_best_accuracy", ">=", SOLVED)),
            trained=True,
        ),
        measure_figa4,
        SECTION["ih"],
        not_run=RUN_IH,
    ),
    # ---- paper 002's Appendix I, checked here on this paper's constructions
    Claim(
        "002/AppI-003Thm2",
        "paper 003's Thm. 2 stores one key per state column (exact at N = κ, not below), while "
        "paper 002's circuit compresses keys too (noisy recall that improves with N)",
        "paper 002, Appendix I",
        "no number given (qualitative)",
        Rule(
            why="Thm. 2 must be exact at N = κ and not at N = κ/2; the hashing circuit's accuracy must rise with N "
            "without being exact at these sizes (noisy)",
            reproduced=conds(
                ("thm2_at_N_kappa", ">=", EXACT),
                ("thm2_below_kappa", "<", SOLVED),
                ("hashing_rises_with_N", "true"),
                ("hashing_exact_anywhere", "false"),
            ),
        ),
        measure_app_i,
        SECTION["mqar"],
    ),
)

register(*(replace(c, quote=QUOTES[c.id]) for c in _CLAIMS))
