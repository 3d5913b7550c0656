"""Chapter 2, section 2.4 (``book/02_hashing_scaling/04_scaling.ipynb``), its App. G part: paper 002's repeating
keys and repeating queries — Figs. 10–11 on trained models of one to three layers, against the generator's own
guessing level (:func:`guess_level`) and Remark 5's superposition prediction (:func:`remark5_prediction`), and
Remarks 3 and 5 on the designed single-layer circuit. The rest of section 2.4 is :mod:`.scaling`.

Each measurement sits above the claim it measures; the package (``ch2/__init__.py``) registers the claims.
"""

from __future__ import annotations

import math

import numpy as np

from mamba_recall.claims.core import Claim, Control, Evidence, Measurement, NotRun, Revision, Rule, conds
from ._common import (
    _fig_evidence,
    _SE_WHY,
    PERFECT,
    Z,
    _bundle_ev,
    _by_seed,
    _seed_views,
    is_run_store_bundle,
    se,
    se_diff,
)
from mamba_recall.runners import runner_command

#: the repetition runs' own target accuracy (their training stops once held-out accuracy reaches it; the
#: ``target_accuracy`` of the ``ch2_fig10_11`` runs): "perfect" where the paper contrasts depths at N_k = 3
RUN_TARGET = 0.999
#: the step budget at which "the 2-layer model does not achieve perfect performance" (N_k = 3) is read: the paper's
#: own for the simplified model (App. J, Table 9). A run below the target trains to its cap (training stops only at
#: the target), so at a smaller cap "below the target" may be slower convergence, not the limit the paper reports
NK3_STEPS = 3000

#: the words Rule.text() appends to a trained rule (quoted in the revisions' earlier rules)
TRAINED_TAIL = (
    "a trained-model verdict, in either direction, needs ≥ 3 seeds and an interval: a condition holds or fails only "
    "over its number's whole 95 % interval, else inconclusive"
)

#: this module's book section (its claims are judged on that page)
SECTION = "02_hashing_scaling/04_scaling"

#: This section's claims, each declared below its measurement; ``ch2/__init__.py`` registers them with their
#: quotes, in the chapter's order (:data:`mamba_recall.chapters.ch2_hashing_scaling.claims.ORDER`).
CLAIMS: list[Claim] = []


# -------------------------------------------------------------------------------------- the repetition runs of a bundle
def _rep(bundle, task: str, reps: int, layers: int, post_query: str = "full"):
    t = bundle.tables["repetition"]
    if "post_query" in t:  # run-store tables also hold queries followed by value tokens only (Remark 5's sequences)
        t = t[t["post_query"] == post_query]
    elif post_query != "full":  # the ci tables hold the generator's default sequences only
        t = t.iloc[:0]
    s = t[(t["task"] == task) & (t["repeats"] == reps) & (t["layers"] == layers)]["acc"]
    if not len(s):
        raise NotRun(
            f"the bundle has no {task} run with {reps} repeats and {layers} layer(s); run "
            f"`{runner_command('ch2_scaling')} --preset paper --parts repetition`"
        )
    return float(s.max())


def _rep_n(bundle, task: str, reps: int) -> int:
    c = bundle.config["repetition"]
    return bundle.config["n_eval"] * c["Nf"] * (reps if task == "repeated_queries" else 1)


def _has_rep(bundle, task: str, reps: int, layers: int, post_query: str = "full") -> bool:
    try:
        _rep(bundle, task, reps, layers, post_query)
    except NotRun:
        return False
    return True


# ------------------------------------------------------------------------------------ App. G.2, Fig. 10: repeating keys
def guess_level(V: int, Nf: int, Nk: int) -> float:
    """The accuracy of "guessing one out of N_k options" (App. G.2, Remark 3) on the generator the models are trained
    on: a reader of the superposition of the N_k stored values answers the most frequent one
    (:func:`~mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing.superposition_guess_exact`, the closed form of the generator's sampling law,
    checked against its sequences by :func:`~mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing.superposition_guess_accuracy`). Above 1/N_k
    because the earlier chunks' fresh values can repeat the last one (0.508 and 0.349 for N_k = 2, 3 at V = 128).
    ``Nf`` does not enter: each key's values are drawn alike whatever the number of facts."""
    from mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing import superposition_guess_exact

    return superposition_guess_exact(int(V), int(Nk))


def _fig10_values(one: float, two: float, three: float | None, guess: float, n: int) -> dict:
    values = {
        "one_layer_excess": one - guess,
        "two_layer_accuracy": two,
        "two_layer_gain_se": (two - one) / se_diff(n),
    }
    if three is not None:
        values["three_layer_accuracy"] = three
    return values


#: Fig. 10's "approximately bounded by" / "roughly 1/3": the one-layer accuracy within this absolute margin of the
#: guessing level, both ways (as 002/Fig7's "≈"), declared in the open review before more seeds run (referee-H: a bar
#: scaled by the standard error tightens with every seed added until a model at 0.36 against 0.349 fails "roughly")
GUESS_MARGIN = 0.05
_GUESS_WHY = (
    f"'approximately bounded by' the guessing level = the one-layer accuracy within ± {GUESS_MARGIN} of it (absolute, "
    "over its whole 95 % interval; an s.e.-scaled bar until the open review, revised because more seeds or a larger "
    "evaluation set would make it refute a model at roughly the level)"
)
_SE_RULE = "one_layer_excess_se ≤ 3"
#: why both Fig. 10 rules moved from an s.e.-scaled one-layer bar to :data:`GUESS_MARGIN` (a recorded revision of each)
_MARGIN_REVISION = (
    "Open review (referee-H on 002/Fig10-Nk3): the one-layer bar was three standard errors of the accuracies, stricter "
    "than the sentence's 'approximately' / 'roughly' and tighter with every seed: the N_k = 3 one-layer models sit "
    "0.003–0.015 above the guessing level 0.349, and more seeds would have read them not at it. Now an absolute margin "
    "of ± 0.05, as 002/Fig7's '≈'; N_k = 2 is read the same way (one rule for one phrase)."
)
_AT_GUESS = (("one_layer_excess", ">=", -GUESS_MARGIN), ("one_layer_excess", "<=", GUESS_MARGIN))


@_by_seed
def measure_fig10(bundle, Nk: int = 2) -> Measurement:
    """Fig. 10: one layer against the generator's own guessing level (:func:`guess_level`, Remark 3's "one out of N_k"),
    two layers against perfect recall (and three layers where the bundle has them, N_k = 3). Its null control: a reader
    at that guessing level at every depth (a model that never orders the N_k occurrences)."""
    one, two = _rep(bundle, "repeated_keys", Nk, 1), _rep(bundle, "repeated_keys", Nk, 2)
    three = _rep(bundle, "repeated_keys", Nk, 3) if _has_rep(bundle, "repeated_keys", Nk, 3) else None
    n = _rep_n(bundle, "repeated_keys", Nk)
    c = bundle.config["repetition"]
    guess = guess_level(c["V"], c["Nf"], Nk)
    shown = (
        f"N_k = {Nk}: 1 layer {one:.3f} (guessing one of the N_k stored values on this generator: {guess:.3f}; "
        f"1/N_k = {1 / Nk:.3f}), 2 layers {two:.3f}" + ("" if three is None else f", 3 layers {three:.3f}")
    )
    if Nk == 3 and int(c["steps"]) < NK3_STEPS:  # a depth below the target trained to a cap under the budget
        capped = [name for name, a in (("two", two), ("three", three)) if a is not None and a < RUN_TARGET]
        two = float("nan") if "two" in capped else two
        three = float("nan") if "three" in capped else three
        if capped:
            shown += (
                f" ({' and '.join(capped)} layers below {RUN_TARGET} at a {c['steps']}-step cap, under the declared "
                f"{NK3_STEPS}: undecided until both depths run {NK3_STEPS} steps, evaluated on ≥ 10,000 fresh "
                f"sequences: `{runner_command('ch2_scaling')} --preset paper --parts repetition`)"
            )
    ev = _bundle_ev(
        bundle,
        f"V = {c['V']}, N_f = {c['Nf']}, D = {c['D']}, N = {c['N']}, {c['steps']} steps",
        seeds=int(c["seeds"]),
    )
    null = Measurement(
        _fig10_values(guess, guess, None if three is None else guess, guess, n),
        f"{guess:.3f} at every depth",
        Evidence.exact(f"{n} queries' worth of standard error; the guessing level on 20 000 generated sequences"),
    )
    return Measurement(
        _fig10_values(one, two, three, guess, n),
        shown,
        ev,
        control=Control(
            "null", f"a reader that guesses one of the N_k stored values ({guess:.3f}) at every depth", null
        ),
    )


CLAIMS += [
    Claim(
        "002/Fig10-Nk2",
        "with keys repeated twice one layer fails (accuracy ≈ bounded by the level of guessing one of the two stored "
        "values) and two layers solve the task perfectly",
        "App. G.2, Fig. 10; Remarks 3, 4",
        "1 layer ≈ ≤ 1/2; 2 layers perfect",
        Rule(
            why=f"{_GUESS_WHY}; perfect = ≥ 0.99; partially: one layer at its ceiling "
            "and two layers clearly better. The ceiling is the paper's own reason for ½ ('guessing one out of N_k "
            "options'), computed on the generator the models are trained on (the earlier chunks' values can repeat "
            "the last one: ≈ 0.508 at V = 128, not 0.5), changed in the verdict audit (issue 27); a reader at that "
            "level at every depth is the null control",
            reproduced=conds(*_AT_GUESS, ("two_layer_accuracy", ">=", PERFECT)),
            partially=conds(*_AT_GUESS, ("two_layer_gain_se", ">=", Z)),
            trained=True,
        ),
        lambda bundle: measure_fig10(bundle, 2),
        SECTION,
        reads=_fig_evidence("fig10_11"),
        revisions=(
            Revision(
                date="2026-12-06",
                reason=_MARGIN_REVISION,
                rule_before=f"reproduced if {_SE_RULE} and two_layer_accuracy ≥ 0.99; partially if {_SE_RULE} and "
                "two_layer_gain_se ≥ 3; otherwise not reproduced; " + TRAINED_TAIL,
                status_before="reproduced",
            ),
        ),
    ),
]


_NK3_NOT_RUN = (
    f"`{runner_command('ch2_scaling')} --preset paper --parts repetition` (N_k, N_q ∈ {{2, 3}}, "
    "1–3 layers, 5 state sizes, 3 seeds, 3000 steps: ≈ 3–5 CPU-hours or ≈ 10 GPU-minutes, estimated)"
)


def measure_fig10_nk3(bundle) -> Measurement:
    """Fig. 10 at N_k = 3 (:func:`measure_fig10`) from a bundle with 3 repeats and 1–3 layers; not run on one without
    (the ci bundle: 2 repeats, 1–2 layers). A depth below the runs' target on a run capped below the declared
    budget (:data:`NK3_STEPS`) is undecided (NaN, :func:`measure_fig10`): an under-trained model is 'not perfect'
    trivially, and a capped three-layer run has not shown it cannot reach perfect (referee-O)."""
    view = _seed_views(bundle)[0][1] if is_run_store_bundle(bundle) else bundle
    if not all(_has_rep(view, "repeated_keys", 3, k) for k in (1, 2, 3)):
        raise NotRun(_NK3_NOT_RUN)
    return measure_fig10(bundle, 3)


CLAIMS += [
    Claim(
        "002/Fig10-Nk3",
        "with keys repeated three times one layer is bounded by the level of guessing one of the three stored values "
        "(≈ 1/3), two layers do not reach perfect recall and three layers do",
        "App. G.2, Fig. 10",
        "1 layer ≈ 1/3; 2 layers not perfect; 3 layers perfect",
        Rule(
            why=f"{_GUESS_WHY}; perfect = the runs' own target accuracy "
            f"(≥ {RUN_TARGET}, where training stops), so 'does not achieve perfect performance' = below it: the "
            "sentence contrasts two layers with three, which the chapter's 0.99 bar cannot separate (both reach "
            "it), revised in the open review (issue 51); 002/Fig10-Nk2 reads 'perfect' at 0.99 because there it "
            "separates a failing layer (≈ ½) from a solving one, which 0.99 does. Both depths are read at one "
            f"budget, the paper's {NK3_STEPS} steps (App. J, Table 9): a run below the target trains to its cap, so "
            "a depth below it on runs capped earlier is undecided, two layers or three (open review, referee-O), "
            "and the rerun is evaluated on a fresh set of ≥ 10,000 sequences. Changed in the verdict audit (issue 27), for the paper's reasons: the ceiling "
            "is 'guessing one out of N_k options' computed on the generator the models are trained on (≈ 0.349 at "
            "N_k = 3, V = 128, where a repeated value makes the guess right more often than 1/3), not 1/3; and the "
            "sentence's 'the 2-layer model does not achieve perfect performance' was not tested before. A reader at "
            "the guessing level at every depth is the null control",
            reproduced=conds(
                *_AT_GUESS,
                ("two_layer_accuracy", "<", RUN_TARGET),
                ("three_layer_accuracy", ">=", RUN_TARGET),
            ),
            trained=True,
        ),
        measure_fig10_nk3,
        SECTION,
        reads=_fig_evidence("fig10_11"),
        not_run=_NK3_NOT_RUN,
        revisions=(
            Revision(
                date="2026-12-04",
                reason="Review of d645e6c (issue 51): the sentence contrasts two layers ('does not achieve perfect "
                "performance') with three ('required for perfect recall'); at the chapter's 0.99 bar both read "
                "perfect, while the runs' own target is 0.999, which two layers never reach in 1000 steps (0.9956 "
                "[0.9946, 0.9966]) and three layers reach on average (0.9991); the contrast is now read at that "
                "target.",
                rule_before="reproduced if one_layer_excess_se ≤ 3 and two_layer_accuracy < 0.99 and "
                "three_layer_accuracy ≥ 0.99; otherwise not reproduced; " + TRAINED_TAIL,
                status_before="not reproduced",
            ),
            Revision(
                date="2026-12-06",
                reason=_MARGIN_REVISION + " The same day, referee-O: the two-layer clause ('does not achieve "
                "perfect performance') was read on runs capped at 1,000 steps, a third of the paper's 3,000, where a "
                "run below the target has simply trained to its cap; a depth (two layers or three) below the target "
                "on runs capped under 3,000 steps is now undecided (NaN), and both depths are to be read at the "
                "paper's budget.",
                rule_before=f"reproduced if {_SE_RULE} and two_layer_accuracy < 0.999 (at any step cap) and "
                "three_layer_accuracy ≥ 0.999; otherwise not reproduced; " + TRAINED_TAIL,
                status_before="inconclusive",
            ),
        ),
    ),
]


# --------------------------------------------------------------------------------- App. G.3, Fig. 11: repeating queries
def remark5_prediction(Nq: int, post_query: str = "full") -> float:
    """Remark 5's superposition argument: the i-th occurrence (i = 0 … N_q − 1) of a query ties the fact's value with
    the value tokens that followed its earlier occurrences. ``"values"`` (every post-query token a value, as the
    remark assumes): 1/(1+i), mean (1/N_q) Σ_{i=1}^{N_q} 1/i = 3/4 at N_q = 2; ``"full"`` (the generator's tokens
    from the whole vocabulary, half of them values): E[1/(1+K)], K ~ Bin(i, ½), mean 0.875 at N_q = 2."""
    if post_query == "values":
        return float(np.mean([1 / (1 + i) for i in range(Nq)]))
    if post_query == "full":
        return float(np.mean([sum(math.comb(i, k) / 2**i / (1 + k) for k in range(i + 1)) for i in range(Nq)]))
    raise ValueError(f"unknown post_query {post_query!r}; use 'full' or 'values'.")


@_by_seed
def measure_fig11(bundle, Nq: int = 2) -> Measurement:
    """Fig. 11: one layer against Remark 5's superposition prediction for the post-query tokens of the sequences
    trained on (:func:`remark5_prediction`), two layers against perfect recall. Where the bundle has models trained
    with value tokens after every query (the sequences the paper's 3/4 assumes), those are read; else the
    generator's default (whole-vocabulary tokens, 0.875 at N_q = 2)."""
    post = "values" if all(_has_rep(bundle, "repeated_queries", Nq, k, "values") for k in (1, 2)) else "full"
    one, two = _rep(bundle, "repeated_queries", Nq, 1, post), _rep(bundle, "repeated_queries", Nq, 2, post)
    pred = remark5_prediction(Nq, post)
    n = _rep_n(bundle, "repeated_queries", Nq)
    c = bundle.config["repetition"]
    if post == "full":
        shown = (
            f"N_q = {Nq}: 1 layer {one:.3f} (Remark 5's argument with full-vocabulary post-query tokens: "
            f"{pred:.3f}; with value tokens only: 3/4), 2 layers {two:.3f}"
        )
    else:
        shown = (
            f"N_q = {Nq}, value tokens after every query: 1 layer {one:.3f} (Remark 5: {pred:.3f}), 2 layers {two:.3f}"
        )
        if _has_rep(bundle, "repeated_queries", Nq, 1):
            shown += (
                f"; with whole-vocabulary post-query tokens 1 layer {_rep(bundle, 'repeated_queries', Nq, 1):.3f} "
                f"(predicted {remark5_prediction(Nq, 'full'):.3f})"
            )
    three = _rep(bundle, "repeated_queries", Nq, 3, post) if _has_rep(bundle, "repeated_queries", Nq, 3, post) else None
    if three is not None:
        shown += f", 3 layers {three:.3f}"
    extra = {
        "one_layer_accuracy": one,
        "three_layer_accuracy": math.nan if three is None else three,
        # Fig. 11's "almost independently of state dimension N": the bundles hold one N per task, so it is unmeasured
        "state_sizes_compared": 1,
        "largest_gap_over_N": math.nan,
    }
    null = Measurement(
        {
            "one_layer_gap_se": 0.0,
            "two_layer_accuracy": pred,
            "two_layer_gain_se": 0.0,
            "one_layer_accuracy": pred,
            "three_layer_accuracy": pred,
            "state_sizes_compared": 1,
            "largest_gap_over_N": math.nan,
        },
        f"{pred:.3f} at every depth",
        Evidence.exact("Remark 5's superposition prediction for these sequences"),
    )
    return Measurement(
        {
            "one_layer_gap_se": abs(one - pred) / se(n),
            "two_layer_accuracy": two,
            "two_layer_gain_se": (two - one) / se_diff(n),
            **extra,
        },
        shown,
        _bundle_ev(
            bundle,
            f"V = {c['V']}, N_f = {c['Nf']}, D = {c['D']}, N = {c['N']}, {c['steps']} steps",
            seeds=int(c["seeds"]),
        ),
        control=Control("null", f"a one-layer superposition reader (Remark 5: {pred:.3f}) at every depth", null),
    )


CLAIMS += [
    Claim(
        "002/Fig11-Nq2",
        "with queries repeated twice one layer is not perfect, at the accuracy Remark 5's "
        "superposition argument predicts, and two layers recall perfectly",
        "App. G.3, Fig. 11; Remarks 5, 6",
        "1 layer ≈ 3/4 (Remark 5, every post-query token a value); 2 and 3 layers perfect",
        Rule(
            why=f"Remark 5's argument applied to the generator's post-query tokens, within {_SE_WHY}; perfect = "
            "≥ 0.99; partially: one layer as predicted and two layers clearly better",
            reproduced=conds(("one_layer_gap_se", "<=", Z), ("two_layer_accuracy", ">=", PERFECT)),
            partially=conds(("one_layer_gap_se", "<=", Z), ("two_layer_gain_se", ">=", Z)),
            trained=True,
        ),
        lambda bundle: measure_fig11(bundle, 2),
        SECTION,
        reads=_fig_evidence("fig10_11"),
    ),
]


_NQ3_NOT_RUN = (
    f"`{runner_command('ch2_scaling')} --preset paper --parts repetition` (≈ 3–5 CPU-hours "
    "or ≈ 10 GPU-minutes, estimated; it adds the 3-layer N_q = 3 models and the state sizes N that Fig. 11's "
    "'almost independently of N' needs)"
)


def measure_fig11_nq3(bundle) -> Measurement:
    """Fig. 11 at N_q = 3 (:func:`measure_fig11`) from a bundle with 3 repeats; not run on one without."""
    if not all(_has_rep(_seed_views(bundle)[0][1] if is_run_store_bundle(bundle) else bundle,
                        "repeated_queries", 3, k) for k in (1, 2)):  # fmt: skip
        raise NotRun(_NQ3_NOT_RUN)
    return measure_fig11(bundle, 3)


CLAIMS += [
    Claim(
        "002/Fig11-Nq3",
        "with queries repeated three times one layer is not perfect and two or three layers recall perfectly",
        "App. G.3, Fig. 11",
        "1 layer < 1; 2 and 3 layers perfect",
        Rule(
            why="every part of the sentence: one layer not perfect, two and three layers perfect (≥ 0.99), and "
            "'almost independently of state dimension N' = the 2- and 3-layer accuracies over the state sizes run "
            "differ by at most 0.01 (a part the committed bundle, one N and no 3-layer run, leaves unmeasured: "
            "its number is missing, so the claim reads inconclusive until it is run). Revised in the open review "
            "(issue 51): the earlier rule tested the 2-layer part only",
            reproduced=conds(
                ("one_layer_accuracy", "<", PERFECT),
                ("two_layer_accuracy", ">=", PERFECT),
                ("three_layer_accuracy", ">=", PERFECT),
                ("largest_gap_over_N", "<=", 0.01),
            ),
            trained=True,
        ),
        measure_fig11_nq3,
        SECTION,
        reads=_fig_evidence("fig10_11"),
        not_run=_NQ3_NOT_RUN,
        revisions=(
            Revision(
                date="2026-12-04",
                reason="Open review (referee-C): the sentence also says the 1-layer model fails and that the 3-layer "
                "model solves it, almost independently of N; the rule tested only the 2-layer part, and the bundle "
                "has no 3-layer N_q = 3 run and one N.",
                rule_before="reproduced if two_layer_accuracy ≥ 0.99; otherwise not reproduced; " + TRAINED_TAIL,
                status_before="reproduced",
            ),
        ),
    ),
]


# ---------------------------------------------------------- App. G, Remarks 3 and 5: the designed circuit on repetition
def measure_remark(
    kind: str, V: int, D: int, N: int, Nf: int, n_seq: int, reps: int = 2, seed: int = 0, device=None
) -> Measurement:
    """Remarks 3 and 5: the designed single-layer Thm 2 circuit (values-only readout) on repeating keys
    (prediction :func:`guess_level`: the argmax of the N_k superposed stored values, ≈ 1/N_k) or repeating queries
    with value tokens after every query (prediction (1/N_q) Σ_i 1/i: the i-th occurrence ties among i values; 3/4 for N_q = 2)."""
    from mamba_recall.theory.hashing_circuit import designed_accuracy

    L = 2 * Nf * (reps + 1)
    if kind == "keys":
        acc = designed_accuracy(
            V, D, N, Nf, L, n_seq=n_seq, seed=seed, readout="values", device=device, task="repeated_keys", Nk=reps
        )
        pred, what, n = guess_level(V, Nf, reps), f"N_k = {reps} (1/N_k = {1 / reps:.3f})", n_seq * Nf
    else:
        acc = designed_accuracy(
            V,
            D,
            N,
            Nf,
            L,
            n_seq=n_seq,
            seed=seed,
            readout="values",
            device=device,
            task="repeated_queries",
            Nq=reps,
            post_query="values",
        )
        pred, what, n = sum(1 / i for i in range(1, reps + 1)) / reps, f"N_q = {reps}", n_seq * Nf * reps
    return Measurement(
        {"gap_se": abs(acc - pred) / se(n)},
        f"{what}: designed circuit {acc:.3f}, predicted {pred:.3f}",
        Evidence.exact(f"V = {V}, D = {D}, N = {N}, N_f = {Nf}, L = {L}: {n} queries, one JL draw"),
    )


CLAIMS += [
    Claim(
        "002/Remark3",
        "the designed single-layer circuit fails on repeating keys: it returns a mix of the N_k "
        "stored values and picks one of them, accuracy ≈ 1/N_k",
        "App. G.2, Remark 3",
        "output ≈ v₁ + v₂; each value with probability ≈ ½ (N_k = 2)",
        Rule(
            why=f"≈ the level of guessing one of the N_k stored values within {_SE_WHY}: the argmax of the superposed "
            "values on the generator's sequences (:func:`guess_level`; 1/N_k plus the chance that an earlier chunk "
            "repeats the last value, 0.504 at V = 256), changed from 1/N_k in the verdict audit (issue 27) with "
            "Fig. 10's ceiling, for the remark's own reason",
            reproduced=conds(("gap_se", "<=", Z)),
        ),
        lambda **kw: measure_remark("keys", **kw),
        SECTION,
    ),
    Claim(
        "002/Remark5",
        "the designed single-layer circuit fails on repeating queries: the first occurrence of a "
        "query succeeds, the second returns the fact value or the token after the first query, accuracy ≈ 3/4",
        "App. G.3, Remark 5",
        "accuracy roughly 3/4 (N_q = 2)",
        Rule(
            why=f"≈ 3/4 within {_SE_WHY}, with value tokens after every query as the remark assumes",
            reproduced=conds(("gap_se", "<=", Z)),
        ),
        lambda **kw: measure_remark("queries", **kw),
        SECTION,
    ),
]
