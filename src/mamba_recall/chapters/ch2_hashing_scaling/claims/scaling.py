"""Chapter 2, section 2.4 (``book/02_hashing_scaling/04_scaling.ipynb``): paper 002's scaling laws measured —
§5.1's Fig. 6 (theory as a lower bound, trained against designed, the trained D–N trade-off, the full Mamba) and
Fig. 12, §5.2's Fig. 7 (N_eff = ΛN), App. K's Tab. 10 (which components are needed), and App. D's phase
transition and L-independence (not run here). The section's App. G claims (Figs. 10–11, Remarks 3 and 5) are in
:mod:`.scaling_repetition`, kept apart for size.

Each measurement sits above the claim it measures; the package (``ch2/__init__.py``) registers the claims.
"""

from __future__ import annotations

import functools

from mamba_recall.claims.core import (
    MIN_SEEDS,
    Claim,
    ClaimError,
    Control,
    Evidence,
    Measurement,
    NotRun,
    Revision,
    Rule,
    across_seeds,
    conds,
)
from ._common import (
    _fig_evidence,
    _NEAR,
    _SE_WHY,
    PERFECT,
    Z,
    _bundle_ev,
    _by_seed,
    _n_near,
    _nonincreasing,
    chance_level,
    chance_null,
    se,
    se_diff,
)
from mamba_recall.runners import runner_command

TRAINED_TAIL = (
    "a trained-model verdict, in either direction, needs ≥ 3 seeds and an interval: a condition holds or fails only "
    "over its number's whole 95 % interval, else inconclusive"
)

#: this module's book section (its claims are judged on that page)
SECTION = "02_hashing_scaling/04_scaling"

#: This section's claims, each declared below its measurement; ``ch2/__init__.py`` registers them with their
#: quotes, in the chapter's order (:data:`mamba_recall.chapters.ch2_hashing_scaling.claims.ORDER`).
CLAIMS: list[Claim] = []


# ---------------------------------------------------------------------- §5.1, Fig. 6(a, b): the theory as a lower bound
def _grid_n(bundle, which: str) -> int:
    cfg = bundle.config
    return cfg["designed_n_seq"] if which == "designed" else cfg["n_eval"]


def _fig6ab_values(pairs: list) -> dict:
    """``pairs``: (measured N_f*, Eq. 77's N_f) for every (cell, level) where Eq. 77 promises at least one fact."""
    held = [m >= p for m, p in pairs]
    return {"informative_pairs": len(pairs), "lower_bound_fraction": sum(held) / len(held) if held else 0.0}


def measure_designed_vs_eq77(bundle=None) -> Measurement:
    """Eq. 77 (Thm 3) against the designed Thm 2 circuit it analyses, on the strongest committed designed-capacity
    bundle (``ch2_designed_capacity``; cpu-hours: V = 8192, 15 (D, N) cells, two accuracy levels): at each (cell,
    level) the facts the circuit recalls (N_f*, bisection) against the facts Eq. 77 promises. Until the open review
    (issue 51) this was 002/Fig6ab's test; §5.1's sentence compares the construction with the *trained* models, so it
    is kept as the book's own observation, not scored as the paper's claim."""
    from mamba_recall.results import evidence

    if bundle is None or "capacity" not in bundle.tables:
        bundle = evidence("ch2_designed_capacity")
    cap, V = bundle.tables["capacity"], bundle.config["V"]
    cap = cap[cap["readout"] == "values"] if "readout" in cap else cap
    pairs, parts, excluded = [], [], 0
    for _, r in cap.iterrows():
        pred = r["eq77"]
        if not pred == pred or pred < 1:  # Eq. 77 promises no fact at this accuracy: nothing to bound
            excluded += 1
            continue
        pairs.append((int(r["Nf"]), int(pred)))
        parts.append(f"({int(r['D'])}, {int(r['N'])}) at {r['level']:.0%}: {int(r['Nf'])} vs {int(pred)}")
    return Measurement(
        _fig6ab_values(pairs),
        f"V = {V}: facts recalled by the designed circuit vs Eq. 77's promise, per (D, N) and accuracy level: "
        + "; ".join(parts)
        + f" — measured ≥ Eq. 77 in {sum(m >= p for m, p in pairs)} of {len(pairs)}"
        + f"; {excluded} (cell, level) pairs where Eq. 77 promises no fact left out",
        _bundle_ev(bundle, f"designed Thm 2 circuit, V = {V}", seeds=0, tier="exact"),
    )


#: queries of the designed circuit per reference-grid cell (n sequences × N_f): its standard error enters the
#: comparison with the trained models beside the trained models' own
DESIGNED_N_SEQ = 256


@functools.lru_cache(maxsize=4)
def _designed_on_reference(V: int, Nf: int, L: int, cells: tuple, n_seq: int = DESIGNED_N_SEQ) -> tuple:
    """The designed Thm 2 circuit (full-vocabulary readout, as the trained models are read) and Eq. 77's accuracy
    at every (D, N) of ``cells`` (the reference grid's, sorted by D then N: the i-th one's circuit is drawn with
    seed 1000 + i), at the grid's (V, N_f, L): ((D, N, designed, eq77), …)."""
    import math as _m

    from mamba_recall.theory.capacity import log_p_success
    from mamba_recall.theory.hashing_circuit import designed_accuracy

    out = []
    for i, (D, N) in enumerate(cells):
        con = "code" if V >= D >= N else "iid"
        des = designed_accuracy(V, D, N, Nf, L, n_seq=n_seq, seed=1000 + i, construction=con, readout="full")
        out.append((D, N, float(des), float(_m.exp(log_p_success(V, Nf, D, N, "eq77")))))
    return tuple(out)


def _reference_with_designed(bundle):
    """The reference grid ``bundle`` (trained, per seed) beside the designed circuit and Eq. 77 at its cells:
    (bundle, rows [(D, N, [trained per seed], designed, eq77)], sizes, chance)."""
    bundle, t = _reference_cells(bundle)
    cfg = bundle.config["sizes"]
    cells = tuple(sorted((int(D), int(N)) for D, N in zip(t["D"], t["N"])))
    des = {(D, N): (d, e) for D, N, d, e in _designed_on_reference(cfg["V"], cfg["Nf"], cfg["L"], cells)}
    rows = []
    for _, r in t.sort_values(["D", "N"]).iterrows():
        D, N = int(r["D"]), int(r["N"])
        rows.append((D, N, [float(x) for x in str(r["best_accuracy_per_seed"]).split()], *des[(D, N)]))
    return bundle, rows, cfg, chance_level(cfg["V"], cfg["Nf"], cfg["L"])


def _per_seed_fractions(rows, cfg, key, seeds: int, cells=None) -> list:
    """Per seed: the fraction of ``cells`` (default all rows) where the trained accuracy is at least the bound
    ``key(row)`` minus three standard errors of the comparison (the designed circuit's and the trained model's
    sampling noise; Eq. 77 is exact)."""
    n_t = cfg["n_eval"] * cfg["Nf"]
    n_d = DESIGNED_N_SEQ * cfg["Nf"]
    out = []
    for i in range(seeds):
        held = []
        for row in cells if cells is not None else rows:
            bound, tol = key(row)
            tol = Z * (se_diff(n_t, n_d) if tol == "designed" else se(n_t))
            held.append(row[2][i] >= bound - tol)
        out.append(sum(held) / len(held) if held else 0.0)
    return out


def measure_fig6ab(bundle) -> Measurement:
    """§5.1 (i) as the paper means it: the theory, built on one construction (column b), is a lower bound on the
    *trained* model (column c) rather than a direct predictor. On the strongest committed reference grid (trained at
    the authors' settings, V = 512, 3 seeds), per seed: in every cell where Eq. 77 promises more than the generator's
    chance level, trained ≥ Eq. 77's accuracy (− 3 s.e.); and in every cell, trained ≥ the designed construction
    (− 3 s.e. of the difference), the construction evaluated here (exact tier, CPU seconds). Seeds combined by
    :func:`~mamba_recall.claims.core.across_seeds`. Null control: a model at the generator's chance level."""
    import dataclasses

    bundle, rows, cfg, chance = _reference_with_designed(bundle)
    seeds = min(len(r[2]) for r in rows)
    informative = [r for r in rows if r[4] > chance]
    eq = _per_seed_fractions(rows, cfg, lambda r: (r[4], "eq77"), seeds, informative)
    des = _per_seed_fractions(rows, cfg, lambda r: (r[3], "designed"), seeds)
    ev = _bundle_ev(
        bundle,
        f"{len(rows)} (D, N) cells at V = {cfg['V']}, N_f = {cfg['Nf']}, L = {cfg['L']}, batch {cfg['batch']}, "
        f"≤ {cfg['steps']} steps; designed circuit live, {DESIGNED_N_SEQ * cfg['Nf']} queries per cell",
        seeds=1,
    )
    per = [
        Measurement(
            {
                "informative_cells": len(informative),
                "eq77_lower_fraction": e,
                "designed_lower_fraction": d,
                "trained_ge_designed_fraction": d,  # the construction half alone: 002/Fig6bc's metric
            },
            f"seed {i}",
            ev,
        )
        for i, (e, d) in enumerate(zip(eq, des))
    ]
    m = across_seeds(per, [f"seed {i}" for i in range(seeds)])
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    shown = (
        "trained (mean over seeds) vs Eq. 77 and vs the designed circuit, per (D, N): "
        + "; ".join(f"({D}, {N}): {mean(a):.3f} vs {e:.3g} / {d:.3f}" for D, N, a, d, e in rows)
        + f" — Eq. 77 exceeds chance ({chance:.4f}) in {len(informative)} cells; trained ≥ Eq. 77 there in "
        f"{m.values['eq77_lower_fraction']:.0%} and ≥ the construction in {m.values['designed_lower_fraction']:.0%} "
        "of cells (mean over seeds)"
    )
    nv = {
        "informative_cells": len(informative),
        "eq77_lower_fraction": sum(chance >= r[4] for r in informative) / max(len(informative), 1),
        "designed_lower_fraction": sum(chance >= r[3] - Z * se(DESIGNED_N_SEQ * cfg["Nf"]) for r in rows) / len(rows),
    }
    nv["trained_ge_designed_fraction"] = nv["designed_lower_fraction"]
    null = Measurement(
        nv,
        f"{chance:.4f} in every cell",
        Evidence(
            "exact", "cpu", MIN_SEEDS, "the generator's chance level (deterministic, stands for any seed)", "live"
        ),
        intervals={k: (v, v) for k, v in nv.items()},
    )
    return dataclasses.replace(
        m,
        shown=shown,
        control=Control("null", f"a model at the generator's chance level ({chance:.4f}) in every cell", null),
        note="the earlier test of this claim (Eq. 77 against the designed circuit at V = 8192) is kept as the "
        "book's observation beside it (measure_designed_vs_eq77), not scored as the paper's sentence",
    )


CLAIMS += [
    Claim(
        "002/Fig6ab",
        "the theory, built on one construction with fixed weights, is a lower bound on the trained model rather "
        "than a direct predictor: wherever Eq. 77 promises more than chance, and in every cell for the construction "
        "itself, the trained model recalls at least as well",
        "§5.1 (i), Fig. 6 columns (a)–(c)",
        'no number given ("should be considered a lower bound rather than a direct predictor")',
        Rule(
            why="a lower bound on the trained variant, as the sentence says ('not necessarily optimal compared to "
            f"the trained variant'): trained ≥ Eq. 77's accuracy in every cell where Eq. 77 exceeds chance, and "
            f"trained ≥ the designed construction in every cell, each up to {_SE_WHY}; read over 3 seeds. Revised "
            "in the open review (issue 51): the earlier rule compared Eq. 77 with the designed circuit, which the "
            "sentence does not claim (its point (iii) calls Eq. 77 a coarse approximation)",
            reproduced=conds(("eq77_lower_fraction", ">=", 1.0), ("designed_lower_fraction", ">=", 1.0)),
            testable=conds(("informative_cells", ">=", 1)),
            untestable_why="Eq. 77 exceeds chance in no cell of the grid: there is no theory bound to test",
            trained=True,
        ),
        measure_fig6ab,
        SECTION,
        reads="ch2_reference_grid",
        revisions=(
            Revision(
                date="2026-12-04",
                reason="Open review (referee-C; review of d645e6c, issue 51): the rule tested Eq. 77 against the "
                "designed circuit, while §5.1 (i) says the construction-based theory is a lower bound on the "
                "trained models, and its point (iii) calls Eq. 77 a coarse approximation.",
                rule_before="testable only if informative_pairs ≥ 1; reproduced if lower_bound_fraction ≥ 1; "
                "partially if lower_bound_fraction ≥ 0.9; otherwise not reproduced",
                status_before="not reproduced",
            ),
        ),
    ),
]


# ------------------------------------------------------------------------- §5.1, Fig. 6(b, c): trained against designed
def _measure_fig6bc_grid(bundle) -> Measurement:
    """The ci grid's reading (one seed, max over seeds): trained ≥ designed (full readout) − 3 s.e. per cell."""
    g = bundle.tables["grid"]
    tol = Z * g["Nf"].map(lambda nf: se_diff(_grid_n(bundle, "trained") * nf, _grid_n(bundle, "designed") * nf))
    frac = float((g["trained"] >= g["designed_full"] - tol).mean())
    chance = g.apply(lambda r: chance_level(r["V"], r["Nf"], r["L"]), axis=1)
    null = float((chance >= g["designed_full"] - tol).mean())
    return Measurement(
        {"trained_ge_designed_fraction": frac},
        f"trained ≥ designed − 3 s.e. in {frac:.0%} of {len(g)} cells",
        _bundle_ev(
            bundle, f"{len(g)} cells, max over {bundle.config['seeds']} seed(s), {bundle.config['steps']} steps"
        ),
        control=Control(
            "null",
            "a model at the generator's chance level (a random context value) in every cell",
            Measurement(
                {"trained_ge_designed_fraction": null},
                f"chance ≥ designed − 3 s.e. in {null:.0%} of the cells",
                Evidence(
                    "ci", "cpu", MIN_SEEDS, "the generator's chance level (deterministic, stands for any seed)", "live"
                ),
                intervals={"trained_ge_designed_fraction": (null, null)},
            ),
        ),
    )


def _fig6bc_evidence():
    """The evidence 002/Fig6bc reads (``Claim.reads``): the strongest committed reference grid (3 seeds, the
    authors' settings), else the strongest committed ``ch2_scaling`` grid (one seed) when no reference grid is
    committed."""
    from mamba_recall.results import BundleMissing, evidence

    try:
        return evidence("ch2_reference_grid")
    except BundleMissing:
        return evidence("ch2_scaling")


def measure_fig6bc(bundle) -> Measurement:
    """Trained against the designed circuit on the evidence the claim declares (:func:`_fig6bc_evidence`): the
    reference grid (3 seeds, the authors' settings) beside the designed circuit evaluated at its cells
    (:func:`measure_fig6ab`'s reading, the construction half), per seed then combined; a ``ch2_scaling`` grid (one
    seed, its ``grid`` table) only where no reference grid is committed."""
    import dataclasses

    if "comparison" in bundle.tables:
        return dataclasses.replace(measure_fig6ab(bundle), note="")
    if "grid" in bundle.tables:
        return _measure_fig6bc_grid(bundle)
    raise ClaimError(
        f"002/Fig6bc reads a reference grid (a comparison table) or a ch2_scaling grid (a grid table); {bundle.name} "
        "has neither."
    )


CLAIMS += [
    Claim(
        "002/Fig6bc",
        "trained models recall at least as well as the designed construction",
        '§5.1 ("not necessarily optimal compared to the trained variant"), Fig. 6 columns (b), (c)',
        "no number given",
        Rule(
            why=f"at least as well in every cell, up to {_SE_WHY}, over 3 seeds of the reference grid beside the "
            "designed circuit at its cells; no partial level (a majority of cells is not a weaker reading of 'the "
            "trained variant does at least as well', open review issue 51)",
            reproduced=conds(("trained_ge_designed_fraction", ">=", 1.0)),
            trained=True,
        ),
        measure_fig6bc,
        SECTION,
        reads=_fig6bc_evidence,
        revisions=(
            Revision(
                date="2026-12-04",
                reason="Review of d645e6c (issue 51): the claim read one ci seed (300 steps) while the committed "
                "reference grid has 3 seeds at the authors' settings; it now reads that grid beside the designed "
                "circuit evaluated at its cells, and the majority-of-cells partial level is dropped.",
                rule_before="reproduced if trained_ge_designed_fraction ≥ 1; partially if "
                "trained_ge_designed_fraction ≥ 0.5; otherwise not reproduced; " + TRAINED_TAIL,
                status_before="inconclusive",
            ),
        ),
    ),
]


# --------------------------------------------------------------------------- §5.1, Fig. 6(c): the trained D-N trade-off
def measure_fig6c(bundle) -> Measurement:
    """Fig. 6(c): N_90(D) of the trained simplified model in each regime; the trade-off needs N_90 defined
    for at least two D to say anything."""
    g = bundle.tables["grid"]
    shown, defined, mono = [], [], True
    for regime, r in g.groupby("regime", sort=False):
        piv = r.pivot(index="D", columns="N", values="trained")
        n90 = _n_near(piv)
        defined.append(sum(v is not None for v in n90.values()))
        mono &= _nonincreasing(list(n90.values()))
        shown.append(f"{regime}: N_90(D) = {n90}")
    return Measurement(
        {"defined_n90": min(defined), "n90_nonincreasing": mono},
        "; ".join(shown),
        _bundle_ev(
            bundle, f"{len(g)} cells, max over {bundle.config['seeds']} seed(s), {bundle.config['steps']} steps"
        ),
    )


def _reference_cells(bundle):
    """The authors' reference grid ``bundle`` (``ch2_reference_grid``, the evidence 002/Fig6ab and 002/Fig6c declare)
    and its ``comparison`` table; ClaimError for a bundle without one."""
    if "comparison" not in bundle.tables:
        raise ClaimError(
            f"{bundle.name} is not an authors' reference grid (no comparison table): 002/Fig6ab and 002/Fig6c read "
            "ch2_reference_grid; give such a bundle (check(id, evidence=..., record=False))."
        )
    return bundle, bundle.tables["comparison"]


def measure_fig6c_reference(bundle) -> Measurement:
    """Fig. 6(c) on the authors' reference grid at their settings (V = 512, L = 64, N_f = 16, batch 32, 2000 steps):
    N_90(D) of each seed's grid (a :class:`Measurement` per seed), combined by
    :func:`~mamba_recall.claims.core.across_seeds`; N_90(D) of the mean grid and the crossing cells' 95 % intervals
    over seeds are shown beside it."""
    import dataclasses

    bundle, t = _reference_cells(bundle)
    seeds = int(t["n_seeds"].min())
    cfg = bundle.config["sizes"]
    ev = _bundle_ev(
        bundle,
        f"{len(t)} (D, N) cells, batch {cfg['batch']}, ≤ {cfg['steps']} steps, {cfg['n_eval']} validation sequences",
        seeds=1,
    )
    chance = chance_level(cfg["V"], cfg["Nf"], cfg["L"])
    acc = t.assign(v=t["best_accuracy_per_seed"].map(lambda s: [float(x) for x in str(s).split()]))
    per_seed = []
    for i in range(seeds):
        n = _n_near(acc.assign(a=acc["v"].map(lambda v: v[i])).pivot(index="D", columns="N", values="a").sort_index())
        per_seed.append(
            Measurement(
                {
                    "defined_n90": sum(v is not None for v in n.values()),
                    "n90_nonincreasing": _nonincreasing(list(n.values())),
                },
                f"N_90(D) = {n}",
                ev,
                control=chance_null(chance, {"defined_n90": 0, "n90_nonincreasing": True}, "no cell reaches 0.9"),
            )
        )
    m = across_seeds(per_seed, [f"seed {i}" for i in range(seeds)])
    n90 = _n_near(t.pivot(index="D", columns="N", values="best_accuracy_mean").sort_index())
    crossing = []
    for D, n in n90.items():  # the cell at N_90(D) and the one before it: where the 0.9 line is crossed
        row = t[t["D"] == D].sort_values("N")
        Ns = list(row["N"])
        at = Ns.index(n) if n is not None else len(Ns)
        for _, r in row.iloc[max(0, at - 1) : at + 1].iterrows():
            if r["best_accuracy_ci_low"] == r["best_accuracy_ci_low"]:
                crossing.append(
                    f"D={int(r['D'])}, N={int(r['N'])}: [{r['best_accuracy_ci_low']:.3f}, {r['best_accuracy_ci_high']:.3f}]"
                )
    mono = sum(m.per_seed["n90_nonincreasing"])
    shown = (
        f"reference grid (V = {cfg['V']}, L = {cfg['L']}, N_f = {cfg['Nf']}): N_90(D) = {n90} from the mean over "
        f"{seeds} seeds; N_90 non-increasing in {mono} of {seeds} seeds taken alone ({m.shown}); accuracy near the "
        f"0.9 line, 95 % interval over seeds: {'; '.join(crossing)}"
    )
    return dataclasses.replace(m, shown=shown)


def measure_fig6c_strongest(bundle) -> Measurement:
    """Fig. 6(c) on the evidence the claim declares, the strongest committed reference grid
    (:func:`measure_fig6c_reference`); a ``ch2_scaling`` bundle (a ``grid`` table) given in its place reads as the
    ci grid (:func:`measure_fig6c`)."""
    if "grid" in bundle.tables:
        return measure_fig6c(bundle)
    return measure_fig6c_reference(bundle)


CLAIMS += [
    Claim(
        "002/Fig6c",
        "the trained simplified model shows the D–N trade-off: the minimal N for near-perfect recall falls as D grows",
        "§5.1, Fig. 6 column (c)",
        'no number given ("for larger D, the minimal N required for perfect recall is lower")',
        Rule(
            why=f"N_90(D) non-increasing ({_NEAR}); a trade-off needs N_90 defined in at least two D rows",
            reproduced=conds(("n90_nonincreasing", "true")),
            testable=conds(("defined_n90", ">=", 2)),
            untestable_why="fewer than two D rows reach near-perfect recall on this grid, so no trade-off can show",
            trained=True,
        ),
        measure_fig6c_strongest,
        SECTION,
        reads="ch2_reference_grid",
    ),
]


def _gaps(replicates: int, k: int = 30) -> str:
    """002/Fig12's declared power: the detectable gap at replicate spreads 0.01, 0.03 and 0.1."""
    from mamba_recall.chapters.ch2_hashing_scaling.pipelines.scaling_grids import detectable_gap

    return ", ".join(f"{detectable_gap(k, replicates, sd):.2f} at a spread of {sd}" for sd in (0.01, 0.03, 0.1))


# ------------------------------------------------------ §5.1, Fig. 6(d), App. I, Fig. 12: the full Mamba (not run here)
CLAIMS += [
    Claim(
        "002/Fig6d",
        "the trained full Mamba has almost the same near-perfect region as the simplified model",
        "§5.1, Fig. 6 column (d)",
        'no number given ("almost identical")',
        Rule(
            why="almost identical regions: Jaccard overlap of the near-perfect cells ≥ 0.7",
            reproduced=conds(("near_perfect_jaccard", ">=", 0.7)),
            trained=True,
        ),
        not_run=f"the full-model grid: `{runner_command('ch2_scaling')} --preset paper --device cuda "
        "--parts full` (3 regimes × 10 cells × 3 seeds × 10 000 steps, the paper's step count; ≈ 1–1.5 GPU-hours "
        "on one H100 at an estimated 3–5 ms per step, or ≈ 25–40 CPU-hours). The ci bundle's two 300-step "
        "CPU cells are a smoke test of the code path, not a measurement",
        section=SECTION,
    ),
    Claim(
        "002/Fig6-anchor",
        "a 1-layer Mamba perfectly solves MQAR with V_k = V/2 = 512 at N = 32, D = 64",
        "App. I (Fig. 6, row (iii))",
        "perfectly solves MQAR with V_k = V/2 = 512 at N = 32, D = 64",
        Rule(
            why="'can perfectly solve' is an existence claim, read as the paper reads it (App. J.5: the best of 10 "
            "seeds): for each model on its own (the trained simplified and the full model), perfect = accuracy ≥ "
            "0.99 on ≥ 10,000 held-out queries, and the number judged is the best seed's, with the interval [the "
            "largest per-seed lower end, the largest per-seed upper end] of the seeds' 95 % Clopper–Pearson "
            "intervals: it holds when one seed's whole interval is ≥ 0.99, fails only when every seed's interval lies "
            "wholly below 0.99 and at least the paper's 10 seeds ran (with fewer, the upper end is 1: a failure is "
            "never read off fewer seeds than the paper tried), and is undecided otherwise. The seed mean and the "
            "share of seeds reaching 0.99 (with its interval) are shown beside it as descriptions, not judged. "
            "Revised before any run (referee-H, open review: the earlier seed mean ≥ 0.99 tested 'typically "
            "solves', a stricter proposition than the sentence's)",
            reproduced=conds(
                ("simplified_best_seed_accuracy", ">=", PERFECT), ("full_best_seed_accuracy", ">=", PERFECT)
            ),
            trained=True,
        ),
        not_run=f"regime R2 at paper size: `{runner_command('ch2_scaling')} --preset paper --device cuda "
        "--parts grid full` (≈ 2 GPU-hours estimated; the anchor cell alone: 10 seeds × 3000 steps simplified "
        "and 10 seeds × 10 000 steps full, ≈ 6–8 CPU-hours)",
        section=SECTION,
    ),
    Claim(
        "002/Fig12",
        "the full single-layer Mamba always performs at least as well as the simplified model, with "
        "similar scaling trends in D and N",
        "App. H.1, Fig. 12",
        'no number given ("full model always perform better")',
        Rule(
            why="both parts of the sentence, declared before any run (revised four times in the open review). The "
            "estimand is the paper's (App. J.5: the best of 10 seeds per cell, because the paper asks whether a "
            "recall solution exists, not how often optimisation finds it): each of 5 replicates per model and cell "
            "is the best of 3 training seeds, and every number below reads replicates. 'Always performs better' = "
            "every compared cell holds on the paired-by-replicate difference full − simplified with a "
            "non-inferiority margin of 0.02 ('better' read as not worse by more than 0.02, since a saturated cell "
            "cannot score higher; a cell holds when its whole 95 % interval is ≥ −0.02, or when both "
            "models are at ≥ 0.99 there; fails only when its interval at the family-wise level 1 − 0.05/k, "
            "Bonferroni over the k compared cells not saturated, lies wholly below −0.02, so that with full = "
            "simplified noise refutes the clause at most 5 % of the time, as simulated in the tests; is undecided "
            "otherwise; pipelines.scaling_grids.noninferior_cells). The failing side's power at the paper grid's "
            "size (k = 30, pipelines.scaling_grids.detectable_gap: the gap a cell fails at with probability ≥ ½): "
            f"with 5 replicates {_gaps(5)}, with 3 replicates {_gaps(3)}, so 5 are declared; the holding side is "
            "expected to read inconclusive in a noisy cell: the clause is a refutation test with power against a "
            "clear gap, not a proof of superiority; "
            "read as cells_holding_fraction, the fraction of the compared cells that hold, with the interval "
            "[fraction holding, fraction not failing]: ≥ 1 (every cell) holds when every cell holds, fails when one "
            "cell fails, and one undecided cell leaves the clause inconclusive. 'Better' where a cell is not "
            "saturated (referee-O, open review): the pooled gain, the mean paired difference full − simplified over "
            "the k compared unsaturated cells with replicates as units, > 0 over its 95 % interval (with 5 "
            "replicates and k ≈ 30 its half-width is about 0.01 at a replicate spread of 0.03, so a gain of "
            "0.01–0.02 shows; a full model equal to the simplified one fails it); 'similar scaling trends' = the near-perfect (≥ 0.9, on the best-of-3 replicates' "
            "mean) regions of the two models overlap with Jaccard ≥ 0.7 (as 002/Fig6d) and N_90(D) is "
            "non-increasing for both",
            reproduced=conds(
                ("cells_holding_fraction", ">=", 1.0),
                ("pooled_gain", ">", 0.0),
                ("near_perfect_jaccard", ">=", 0.7),
                ("n90_nonincreasing_both", "true"),
            ),
            trained=True,
        ),
        not_run=f"the same full-model run as Fig. 6(d), `{runner_command('ch2_scaling')} --preset paper "
        "--device cuda --parts full`, at the declared 5 replicates × best of 3 seeds per model and cell (15 "
        "trainings where Fig. 6(d) has 3: ≈ 5–7.5 GPU-hours estimated); the runner's seeds are not yet grouped "
        "into best-of replicates",
        section=SECTION,
    ),
]


# ----------------------------------------------------------------------------- §5.2, Fig. 7: depth multiplies the state
@_by_seed
def measure_fig7(bundle) -> Measurement:
    """Fig. 7: spread of accuracy among cells of equal Λ·N, and the largest drop when adding a layer at fixed N,
    both in standard errors of a difference (a run-store bundle: on each seed, then mean and interval)."""
    ml, c = bundle.tables["multilayer"], bundle.config["multilayer"]
    s = se_diff(bundle.config["n_eval"] * c["Nf"])
    groups = ml.groupby("N_eff")["acc"]
    multi = [(k, float(v.max() - v.min())) for k, v in groups if len(v) > 1]
    spread = max((v for _, v in multi), default=0.0)
    piv = ml.pivot(index="N", columns="layers", values="acc")
    lam = sorted(piv.columns)
    drop = max([float((piv[a] - piv[b]).max()) for a, b in zip(lam, lam[1:])] + [0.0])
    span = float(ml["acc"].max() - ml["acc"].min())
    chance = chance_level(c["V"], c["Nf"], c.get("L", 4 * c["Nf"]))
    null = chance_null(
        chance,
        {
            "equal_neff_groups": len(multi),
            "spread_equal_neff": 0.0,
            "spread_equal_neff_se": 0.0,
            "depth_drop_se": 0.0,
            "accuracy_span_se": 0.0,
        },
        f"{chance:.4f} in every cell",
    )
    return Measurement(
        {
            "equal_neff_groups": len(multi),
            "spread_equal_neff": spread,
            "spread_equal_neff_se": spread / s,
            "depth_drop_se": max(drop, 0.0) / s,
            "accuracy_span_se": span / s,
        },
        f"accuracy spans {span:.3f} ({span / s:.1f} s.e.) over the grid; "
        f"largest spread among equal Λ·N {spread:.3f} ({spread / s:.1f} s.e.) over {len(multi)} groups; "
        f"largest loss from adding a layer at fixed N {max(drop, 0.0):.3f}; accuracy by (N, Λ): "
        + "; ".join(f"N={n}: " + "/".join(f"{piv.loc[n, l]:.3f}" for l in lam) for n in piv.index),
        _bundle_ev(
            bundle, f"D = {c['D']}, Λ ∈ {c['layers']}, N ∈ {c['Ns']}, {c['steps']} steps", seeds=int(c["seeds"])
        ),
        control=null,
    )


CLAIMS += [
    Claim(
        "002/Fig7",
        "the recall of a Λ-layer simplified Mamba is determined by N_eff = ΛN alone",
        "§5.2, Fig. 7; App. E.1, Theorem 4 (= App. F.1, Theorem 6)",
        'no number given ("uniquely determined by ΛN")',
        Rule(
            why="uniquely determined by ΛN, as Fig. 7 shows it: cells of equal ΛN agree within 0.05 accuracy "
            "(absolute), a practical-equivalence margin about a seventh of the change between adjacent ΛN levels "
            "that the figure contrasts (ΛN doubling moves accuracy by ≈ 0.3); a bar in standard errors would tighten "
            "without end as the evaluation set grows, stricter than the figure's resolution. No partial level: "
            "'adding layers never loses accuracy' is another proposition (open review, issue 51)",
            reproduced=conds(("spread_equal_neff", "<=", 0.05)),
            testable=conds(("equal_neff_groups", ">=", 1), ("accuracy_span_se", ">", Z)),
            untestable_why="no two cells of the grid share the same ΛN, or the grid's accuracies all sit within "
            "noise of each other (a model at chance passes 'determined by ΛN' too: the null control showed it)",
            trained=True,
        ),
        measure_fig7,
        SECTION,
        reads=_fig_evidence("fig7"),
        revisions=(
            Revision(
                date="2026-12-04",
                reason="Open review (referee-C): the partial level ('adding a layer never lowers accuracy') is "
                "another proposition than 'uniquely determined by ΛN', and the 3-s.e. bar on the equal-ΛN spread "
                "(0.018–0.020 accuracy, 3.0–3.8 s.e.) tightens with the evaluation set beyond the figure's "
                "resolution; the rule now reads the spread against a declared absolute margin.",
                rule_before="testable only if equal_neff_groups ≥ 1 and accuracy_span_se > 3; reproduced if "
                "spread_equal_neff_se ≤ 3 and depth_drop_se ≤ 3; partially if depth_drop_se ≤ 3; otherwise not "
                "reproduced; " + TRAINED_TAIL,
                status_before="partially",
            ),
        ),
    ),
]


# ------------------------------------------------------------------------- App. K, Tab. 10: which components are needed
TAB10 = {
    "Base": (0.99, 0.01),
    "A": (1.00, 0.00),
    "B": (0.98, 0.01),
    "C": (0.99, 0.01),
    "D": (0.96, 0.05),
    "E": (0.00, 0.00),
}


def _ablation(bundle):
    ab = bundle.tables["ablation"]
    return dict(zip(ab["row"], ab["mean"])), bundle.config["ablation"]


@_by_seed
def measure_tab10_rows(bundle) -> Measurement:
    """Rows Base–D: our mean against the printed mean − 2 printed std (std at least 0.01, the printed precision)."""
    acc, c = _ablation(bundle)
    missing = [r for r in ("Base", "A", "B", "C", "D") if r not in acc]
    if missing:
        raise NotRun(
            f"rows {missing} are not in the bundle; run `{runner_command('ch2_scaling')} --preset ci --parts ablation`"
        )
    margins = {r: acc[r] - (TAB10[r][0] - 2 * max(TAB10[r][1], 0.01)) for r in ("Base", "A", "B", "C", "D")}
    chance = chance_level(c["V"], c["Nf"], c.get("L", 4 * c["Nf"]))
    null = chance_null(
        chance,
        {"worst_margin": min(chance - (TAB10[r][0] - 2 * max(TAB10[r][1], 0.01)) for r in margins)},
        f"{chance:.4f} in every row",
        label=f"a model at the generator's chance level, a random context value ({chance:.4f})",
    )
    return Measurement(
        {"worst_margin": min(margins.values())},
        ", ".join(f"{r} {acc[r]:.3f} (floor {TAB10[r][0] - 2 * max(TAB10[r][1], 0.01):.2f})" for r in margins),
        _bundle_ev(
            bundle,
            f"V = {c['V']}, N_f = {c['Nf']}, D = {c['D']}, N = {c['N']}, {c['steps']} "
            "steps (Base, A: twice at half batch)",
            seeds=int(c["seeds"]),
        ),
        control=null,
    )


CLAIMS += [
    Claim(
        "002/Tab10-Base-to-D",
        "removing Mamba's components one at a time keeps near-perfect recall down to an SSM with a width-2 Conv1D",
        "App. K, Tab. 10 rows Base–D",
        "Base 0.99 ± 0.01, A 1.00 ± 0.00, B 0.98 ± 0.01, C 0.99 ± 0.01, D 0.96 ± 0.05",
        Rule(
            why="each row at least its printed mean − 2 printed std (std at least 0.01, the printed precision)",
            reproduced=conds(("worst_margin", ">=", 0.0)),
            trained=True,
        ),
        measure_tab10_rows,
        SECTION,
        reads=_fig_evidence("tab10"),
    ),
]


@_by_seed
def measure_tab10_e(bundle) -> Measurement:
    """Row E (no Conv1D) against the floor 1/N_f of a model that outputs some context value without knowing
    which key it belongs to, in standard errors."""
    acc, c = _ablation(bundle)
    if "E" not in acc:
        raise NotRun(f"row E is not in the bundle; run `{runner_command('ch2_scaling')} --preset ci --parts ablation`")
    floor = 1 / c["Nf"]
    n = bundle.config["n_eval"] * c["Nf"]
    ev = _bundle_ev(
        bundle, f"V = {c['V']}, N_f = {c['Nf']}, D = {c['D']}, N = {c['N']}, {c['steps']} steps", seeds=int(c["seeds"])
    )
    control = None
    if "D" in acc:  # the same rule on row D (the Conv1D kept): a model that recalls must not read as failing
        control = Control(
            "null",
            "row D of the same runs (the Conv1D kept), read by the same rule",
            Measurement({"excess_over_copy_floor_se": (acc["D"] - floor) / se(n)}, f"D {acc['D']:.3f}", ev),
        )
    return Measurement(
        {"excess_over_copy_floor_se": (acc["E"] - floor) / se(n)},
        f"E {acc['E']:.3f}; a model that copies a context value at random scores 1/N_f = {floor:.4f}",
        ev,
        control=control,
    )


CLAIMS += [
    Claim(
        "002/Tab10-E",
        "without Conv1D recall fails completely",
        "App. K, Tab. 10 row E; §3.2",
        "E 0.00 ± 0.00",
        Rule(
            why="fails completely = no better than outputting a context value without knowing its key, which scores "
            "1/N_f, within three standard errors (0.00 itself is below what such a model gets)",
            reproduced=conds(("excess_over_copy_floor_se", "<=", Z)),
            trained=True,
        ),
        measure_tab10_e,
        SECTION,
        reads=_fig_evidence("tab10"),
    ),
]


# ----------------------------------------------------------- App. D: phase transition, independence of L (not run here)
CLAIMS += [
    Claim(
        "002/AppD-phase-transition",
        "accuracy over (D, N) shows a large domain ≈ 1, a large domain ≈ 0 and a "
        "narrow transition between them (a phase transition, sharper for larger V)",
        'App. D, "Phase transitions"',
        "no number given",
        Rule(
            why="every part of the sentence, declared before any run (revised five times in the open review). The "
            "estimand is the paper's (Fig. 6(c) shows the best of 10 seeds, App. J.5): each cell is read on 3 "
            "replicates, each the best of 3 training seeds (pipelines.scaling_grids.best_of_replicates), every "
            "number below is computed per replicate and its interval taken over the replicates (a seed mean reads "
            "optimisation failures near the step as a wider transition: simulated in the tests, a third of the "
            "seeds failing there widens the mean's band to 2 doublings while each best-of-3 replicate reads the "
            "theory's). A large domain ≈ 1 and a large domain ≈ 0 with a relatively small domain of transition "
            "between them = at least a tenth of the grid's cells at ≥ 0.95, at least a tenth at ≤ 0.05 above the "
            "generator's chance level (accuracy − chance ≤ 0.05, chance = claims.chance_level: a reader answering "
            "one of the context's values at random, 1/N_f here), and at most 0.45 of the cells between (on this "
            "linear grid the ideal step leaves 0.15–0.39 of the cells between wherever it falls; revised from a "
            "quarter per domain, which the ideal theory failed with its step a quarter doubling above the grid's "
            "middle, referee-O); and the 10 %→90 % band spans at most 1.5 doublings of N (at "
            "fixed D, of DN) in the median D column among those holding both domains. The grid is the paper's (D ∈ "
            "{2, 4, …, 64}, N ∈ {2, …, 32}, N ≤ D: 0.05 to 0.58 doubling between neighbouring N), and the band is read "
            "by pipelines.scaling_grids.phase_reading: per column an isotonic fit of the replicate's accuracy, rescaled "
            "from chance to 1, and the 10 % and 90 % crossings by linear interpolation in log₂ N. The ideal "
            "theory's own band, from Eq. 78's Φ(x)^{V/2} with x ∝ √(DN), is 1.0 doubling at V = 512 and 0.87 at "
            "V = 1024, so a bar at 1 would sit on it; as a positive control, the same reader on that shape evaluated "
            "on the paper grid passes all five conditions at eight offsets of the step within a doubling (band 1.0 "
            "± 0.12 and 0.87 ± 0.12), and as a negative control a linear rise over four doublings reads 3.2 and "
            "fails (tests/chapters/ch2_hashing_scaling); the control passes every condition with its step "
            "anywhere from 1.75 doublings below the grid's middle D·N to 0.5 above it, and beyond that the ≈ 1 domain "
            "holds under a tenth of the paper's grid, which reads not reproduced: the sentence's domain is then "
            "small on the paper's own grid. The step is read at large V as the premise, not as a "
            "comparison: the band at V = 1024 is no more than 0.5 doubling wider than at V = 512, the median of the "
            "per-column differences over the D columns both hold (the theory's narrowing, 0.13 doubling, is shown, "
            "not judged)",
            reproduced=conds(
                ("share_near_one", ">=", 0.10),
                ("share_near_zero", ">=", 0.10),
                ("share_transition", "<=", 0.45),
                ("median_band_octaves", "<=", 1.5),
                ("band_widening_with_V_octaves", "<=", 0.5),
            ),
            trained=True,
        ),
        not_run="the paper-sized Fig. 6(c) grids, where V = 512 and 1024 make the (Φ)^{V/2} step sharp, at the "
        f"declared 3 replicates × best of 3 seeds per cell: `{runner_command('ch2_scaling')} --preset paper --device "
        "cuda --parts grid` (≈ 45 GPU-minutes on one H100 for 3 seeds, estimated, so ≈ 2.25 GPU-hours for 9; the "
        "runner's seeds are not yet grouped into best-of replicates; the ci grid at V = 64 has no D column with both "
        "a ≈ 0 and a ≈ 1 domain)",
        section=SECTION,
    ),
    Claim(
        "002/AppD-L-independence",
        "with key–value selective embeddings the recall capacity depends on N_f and not on the context length L",
        'App. D, "Key-value selection mechanism"',
        "no number given",
        Rule(
            why="the sentence is conditional ('if a … model is able to perfectly ignore non-key-value pairs'), so it "
            "is testable only where its premise holds: the models learned (accuracy ≥ 0.9 at the smallest L) and "
            "ignore the non-key-value pairs near perfectly at every L of the sweep (the smallest over L of G_kq's "
            "key×key and of G_vv's value×value shares ≥ 0.95, each model read as 002/Fig2-selectivity reads them, so "
            "a less selective model at the longest L cannot refute the conditional; revised three times in the open "
            "review: at 0.8 the trained models of "
            "Fig2-selectivity, 0.825 and 0.888, would pass while about a sixth of their key-state mass goes to "
            "other pairs, and their recall falling with L would refute a conditional whose premise they do not "
            "meet); then independent of L = the paired-by-seed accuracy difference between the largest and the "
            "smallest L within ± 0.02 (absolute, over its whole 95 % interval) as L grows fourfold. Null control, "
            "measured beside it: a model at the generator's chance level, which fails the premise and reads not "
            "testable here. The premise is read over its whole 95 % interval, as the statement is (referee-N, open "
            "review): a verdict in either direction needs all three premise conditions to hold over their intervals; "
            "one the evidence does not decide makes the claim inconclusive, whatever the accuracy change gives. "
            "Declared before any run",
            reproduced=conds(("accuracy_change_over_L", ">=", -0.02), ("accuracy_change_over_L", "<=", 0.02)),
            testable=conds(
                ("accuracy_smallest_L", ">=", 0.9),
                ("min_kk_share_over_L", ">=", 0.95),
                ("min_vv_share_over_L", ">=", 0.95),
            ),
            untestable_why="the premise fails: the models do not recall at the smallest L, or do not ignore the "
            "non-key-value pairs near perfectly at some L of the sweep (key×key or value×value share below 0.95), so the "
            "sentence's "
            "condition is not met",
            trained=True,
            premise_over_interval=True,
        ),
        not_run="an L sweep, not yet a part of the runner: trained simplified models at (V, N_f, D, N) = "
        "(512, 16, 32, 8) for L ∈ {64, 128, 256}, 3 seeds, 2000 steps (≈ 1–2 CPU-hours; the attention form "
        "costs ∝ L²)",
        section=SECTION,
    ),
]
