"""Claims of paper 002 ("On the Recall Scaling Laws in Mamba: A Theoretical and Mechanistic Study via
Hashing"), Chapter 2: the hashing circuit (§3.1, Thms 1–2), its mechanistic reading (§3.2, Figs. 2–5, 9,
App. C–D, Tab. 10), the scaling laws (§4, Lemma 1, Thm 3, Remarks 1–2), their tests (§5, Figs. 6–8, 12–15)
and the repetition variants (App. G, Figs. 10–11).

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

import functools
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from .core import MIN_SEEDS, Claim, Control, Evidence, Measurement, NotRun, Rule, across_seeds, conds, register

CH = "02_hashing_scaling/"
S_CIRCUIT, S_THEORY, S_MECH, S_SCALING, S_HEADS = (
    CH + s for s in ("01_circuit", "02_theory", "03_mechanism", "04_scaling", "05_multihead")
)
PERFECT = 0.99  # δ = 0.01
NEAR_PERFECT = 0.9
Z = 3.0  # three standard errors


def se(n: int) -> float:
    """Worst-case binomial standard error of an accuracy measured on ``n`` queries."""
    return 0.5 / math.sqrt(n)


def se_diff(n1: int, n2: int | None = None) -> float:
    """Standard error of the difference of two independent accuracies (worst case)."""
    return math.hypot(se(n1), se(n2 if n2 is not None else n1))


def _bundle_ev(bundle, sample: str, seeds: int | None = None, tier: str | None = None) -> Evidence:
    if seeds is None:
        seeds = int(bundle.config.get("seeds", 1))
    return Evidence.from_bundle(bundle, sample, seeds=seeds, tier=tier)


# ------------------------------------------------------------------------------ §3.1: the designed circuit
def measure_thm1(acc: dict, V: int, Nf: int, n_seq: int) -> Measurement:
    """Thm 1's one-hot circuit (D = N = V): accuracy with the two readouts where each queried key occurs once
    (``acc[(readout, pad)]`` from :func:`~mamba_recall.theory.hashing_circuit.designed_accuracy`)."""
    vals, zero, full = acc[("values", "full")], acc[("full", "zero")], acc[("full", "full")]
    return Measurement(
        {"values_readout_accuracy": vals, "zero_padding_accuracy": zero},
        f"values-only readout {vals:.4f}, zero padding {zero:.4f}; random padding with a "
        f"full-vocabulary argmax {full:.4f} (a pad can repeat the queried key, which the proof excludes)",
        Evidence.exact(f"V = {V}, N_f = {Nf}: {n_seq} sequences ({n_seq * Nf} queries) per readout"),
    )


def _first_at(series, thr):
    hit = series[series >= thr]
    return int(hit.index.min()) if len(hit) else None


def _nonincreasing(ns) -> bool:
    defined = [n for n in ns if n is not None]
    return all(b <= a for a, b in zip(defined, defined[1:]))


def _n_near(piv) -> dict:
    """N_90(D): the smallest N with near-perfect accuracy in each D row of a (D × N) pivot."""
    return {int(D): _first_at(piv.loc[D].dropna(), NEAR_PERFECT) for D in piv.index}


def measure_fig6b(designed, V: int, Nf: int, n_seq: int) -> Measurement:
    """Fig. 6(b): the designed Thm 2 circuit (values-only readout) over (D, N) cells with N ≤ D (the authors'
    construction): the largest dip along D or N in standard errors, and N_90(D)."""
    piv = designed.pivot(index="D", columns="N", values="values")
    piv = piv.where(piv.index.values[:, None] >= piv.columns.values[None, :])
    dips = np.concatenate([(-piv.diff(axis=0)).to_numpy().ravel(), (-piv.diff(axis=1)).to_numpy().ravel()])
    largest = max(0.0, float(np.nanmax(dips)))
    n90 = _n_near(piv)
    defined = sum(v is not None for v in n90.values())
    return Measurement(
        {
            "largest_dip_se": largest / se_diff(n_seq * Nf),
            "defined_n90": defined,
            "n90_nonincreasing": _nonincreasing(list(n90.values())),
        },
        f"largest decrease along D or N {largest:.3f} ({largest / se_diff(n_seq * Nf):.1f} standard "
        f"errors); N_90(D) = {n90}",
        Evidence.exact(
            f"V = {V}, N_f = {Nf}: {int(piv.notna().sum().sum())} cells, one JL draw and {n_seq * Nf} queries each"
        ),
    )


def measure_thm2(sweep, Nf: int, n_seq: int) -> Measurement:
    """Thm 2 (D, N = O(log V)): at fixed (D, N), does the designed circuit keep perfect recall while V grows
    far beyond D? ``sweep``: columns D, N, V, designed (values-only readout)."""
    best, best_min, rows = None, -1.0, []
    for (D, N), g in sweep.groupby(["D", "N"], sort=False):
        lo = float(g["designed"].min())
        rows.append(f"({D}, {N}): min over V {lo:.3f}")
        if lo > best_min:
            best, best_min = (D, N, int(g["V"].max())), lo
    D, N, Vmax = best
    return Measurement(
        {"best_cell_min_accuracy": best_min, "largest_V_over_D": Vmax / D},
        f"{'; '.join(rows)} for V = {int(sweep['V'].min())} … {int(sweep['V'].max())}; best cell "
        f"({D}, {N}) reaches V/D = {Vmax / D:.0f}",
        Evidence.exact(f"N_f = {Nf}: {len(sweep)} (D, N, V) points, {n_seq * Nf} queries each"),
    )


def measure_lemma1(V: int, Nf: int, L: int, D: int, N: int, n_seq: int, seed: int = 0, device=None) -> Measurement:
    """Lemma 1 at a point inside its own domain N < D < V where its condition holds: the designed circuit (the
    authors' construction) must then recall perfectly (values-only readout, the entries the proof compares)."""
    from ..theory.capacity import lemma1_condition
    from ..theory.hashing_circuit import designed_accuracy

    cond = lemma1_condition(V, Nf, D, N)
    in_domain = N < D < V
    acc = (
        designed_accuracy(V, D, N, Nf, L, n_seq=n_seq, seed=seed, readout="values", device=device)
        if in_domain and cond["holds"]
        else float("nan")
    )  # outside the lemma's premises there is nothing to test
    return Measurement(
        {"in_domain": in_domain, "condition_holds": cond["holds"], "accuracy": acc},
        f"V = {V}, N_f = {Nf}, D = {D}, N = {N}: ε_v = {cond['eps_v']:.3f}, ε_k = {cond['eps_k']:.3f}, "
        f"ε_v + ε_k + N_f ε_v ε_k = {cond['lhs']:.3f} < ½: {cond['holds']}; accuracy {acc:.4f}",
        Evidence.exact(f"{n_seq} sequences ({n_seq * Nf} queries), one JL draw"),
    )


# --------------------------------------------------------------------------------- §4: the scaling laws
def measure_limit(V: int, Nf: int, D: int, N: int, layers: int = 1) -> Measurement:
    """Eq. 15 / Remark 2: the N_f ≫ N, D limit of Eq. 77 (with N → ΛN for Λ layers) against the printed
    Φ(√(2ΛND/N_f))^{V/2} and the limit the derivation gives, Φ(√(ΛND/(2N_f)))^{V/2}: ratios of log p."""
    from ..theory.capacity import log_p_success

    Ne = N * layers
    l77 = log_p_success(V, Nf, D, Ne, "eq77")
    printed, consistent = log_p_success(V, Nf, D, Ne, "eq15"), log_p_success(V, Nf, D, Ne, "eq15_consistent")
    return Measurement(
        {"printed_log_ratio": l77 / printed, "consistent_log_ratio": l77 / consistent},
        f"at V = {V}, N_f = {Nf}, D = {D}, N = {N}, Λ = {layers}: log p(Eq. 77) / log p(printed) = "
        f"{l77 / printed:.3f}; / log p(Φ(√(ΛND/(2N_f)))^(V/2)) = {l77 / consistent:.4f}",
        Evidence.exact("one point deep in the N_f ≫ N, D regime, float64"),
    )


def _bracket(Vs, accs, thr=PERFECT):
    """The measured largest V with perfect recall lies in [lo, hi): hi = the first swept V that fails."""
    fail = [i for i, a in enumerate(accs) if a < thr]
    if not fail:
        return Vs[-1], math.inf
    i = fail[0]
    return (Vs[i - 1] if i > 0 else 0), Vs[i]


def measure_vmax(sweep, Nf: int, n_seq: int, law: str = "eq77") -> Measurement:
    """Thm 3 as a capacity statement: the largest vocabulary predicted by ``law`` (δ = 0.01) against the largest
    V with perfect recall of the designed circuit, per (D, N) cell of a V sweep. A cell is informative when the
    prediction is positive and the sweep decides whether it lies below the measured value; tightness asks the
    measured value to lie within one sweep step (×2) of the prediction."""
    from ..theory.capacity import predicted_capacity

    informative, lower_ok, tight_ok, parts = 0, 0, True, []
    for (D, N), g in sweep.groupby(["D", "N"], sort=False):
        g = g.sort_values("V")
        lo, hi = _bracket(list(g["V"]), list(g["designed"]))
        P = predicted_capacity(int(D), int(N), Nf=Nf, law=law)["V_max"]
        meas = f"[{lo}, {hi})" if hi != math.inf else f"≥ {lo}"
        if P <= 0:
            parts.append(
                f"({D}, {N}): predicted 0 (the law never reaches p ≥ 0.99), measured {meas}: no prediction to test"
            )
            continue
        if P <= lo:
            below = True
        elif P >= hi:
            below = False
        else:
            parts.append(f"({D}, {N}): predicted {P}, measured {meas}: undecided at this resolution")
            continue
        informative += 1
        lower_ok += below
        tight = hi != math.inf and hi <= 2 * P
        tight_ok &= tight
        parts.append(
            f"({D}, {N}): predicted {P}, measured {meas}: lower bound {'holds' if below else 'fails'}, "
            f"{'within' if tight else 'not within'} ×2"
        )
    return Measurement(
        {
            "informative_cells": informative,
            "lower_bound_fraction": lower_ok / informative if informative else 0.0,
            "tight_within_2x": bool(informative) and tight_ok,
        },
        "; ".join(parts),
        Evidence.exact(
            f"N_f = {Nf}: V = {int(sweep['V'].min())} … "
            f"{int(sweep['V'].max())} (×2 steps), {n_seq * Nf} queries per point"
        ),
    )


def measure_remark1(bundle) -> Measurement:
    """Remark 1 on the designed circuit: the log-log slope of the facts recalled (largest N_f with accuracy ≥ 50 %
    and ≥ 90 %, at fixed V) against D·N, with its 95 % t-interval, from the ``ch2_designed_capacity`` bundle."""
    ex = bundle.data["exponents"]
    e50, e90 = ex["0.5/values"], ex["0.9/values"]
    cfg = bundle.config
    return Measurement(
        {"slope_50": e50["exponent"], "slope_90": e90["exponent"], "fit_points": min(e50["n"], e90["n"])},
        f"facts recalled ∝ (DN)^α: α = {e50['exponent']:.3f} [{e50['ci_low']:.3f}, {e50['ci_high']:.3f}] "
        f"at 50 % accuracy ({e50['n']} cells), {e90['exponent']:.3f} [{e90['ci_low']:.3f}, "
        f"{e90['ci_high']:.3f}] at 90 % ({e90['n']} cells; 95 % t-intervals of the slope); V = {cfg['V']}, L = 4 N_f",
        _bundle_ev(
            bundle,
            f"designed circuit, V = {cfg['V']}, {len(cfg['cells'])} (D, N) cells, "
            f"{cfg['n_queries']} queries per evaluation",
            seeds=0,
            tier="exact",
        ),
        intervals={
            "slope_50 (95 % t-interval of the fit)": (e50["ci_low"], e50["ci_high"]),
            "slope_90 (95 % t-interval of the fit)": (e90["ci_low"], e90["ci_high"]),
        },
    )


# ------------------------------------------------------------------------------ §3.2: mechanistic reading
def _mech_ev(ctx, acc: float, steps: int, n_probe: int) -> Evidence:
    return Evidence.live(
        ctx,
        f"one model trained {steps} steps (held-out accuracy {acc:.3f}), {n_probe} probe sequences",
        seeds=1,
        source="trained in the notebook",
    )


MECH_NULL = "the same linear Mamba at initialisation (the same seed), probed on the same sequences"


def _with_mech_null(fn):
    """A §3.2 mechanism measurement ``fn(d, ctx, acc, steps, n_probe)`` with its null control: given ``null=(d0,
    acc0)``, the probes ``d0`` and held-out accuracy ``acc0`` of the same model at initialisation
    (:func:`mamba_recall.analysis.hashing.untrained_probes`), measured the same way and judged beside it."""

    @functools.wraps(fn)
    def measured(d: dict, ctx, acc: float, steps: int, n_probe: int, null: tuple | None = None) -> Measurement:
        m = fn(d, ctx, acc, steps, n_probe)
        if null is None:
            return m
        d0, acc0 = null
        return replace(m, control=Control("null", MECH_NULL, fn(d0, ctx, acc0, 0, n_probe)))

    del measured.__wrapped__  # its signature (with ``null``) is the one check() binds the notebook's inputs to
    return measured


@_with_mech_null
def measure_fig2(d: dict, ctx, acc: float, steps: int, n_probe: int) -> Measurement:
    return Measurement(
        {**{"kq_block_share": d["kq_block_share"], "vv_half_share": d["vv_half_share"]}, "accuracy": acc},
        f"‖G_kq‖² in the (x_(τ−1), x_t) block {d['kq_block_share']:.3f}; ‖G_vv‖² in the x_τ half "
        f"{d['vv_half_share']:.3f}",
        _mech_ev(ctx, acc, steps, n_probe),
    )


@_with_mech_null
def measure_selectivity(d: dict, ctx, acc: float, steps: int, n_probe: int) -> Measurement:
    return Measurement(
        {**{k: d[k] for k in ("kk_share", "vv_share", "key_diag_hit", "value_diag_hit")}, "accuracy": acc},
        f"on the trained columns: key×key share {d['kk_share']:.3f}, value×value share "
        f"{d['vv_share']:.3f} (all columns, untrained ones included: {d['kk_share_all_columns']:.3f} / "
        f"{d['vv_share_all_columns']:.3f}); diagonal argmax hits keys {d['key_diag_hit']:.2f}, values "
        f"{d['value_diag_hit']:.2f}",
        _mech_ev(ctx, acc, steps, n_probe),
    )


@_with_mech_null
def measure_fig3(d: dict, ctx, acc: float, steps: int, n_probe: int) -> Measurement:
    return Measurement(
        {**{"fact_hit": d["d3_fact_hit"], "auroc": d["d3_auroc"]}, "accuracy": acc},
        f"per-fact argmax over values at the fact's value {d['d3_fact_hit']:.3f}; AUROC of the fact "
        f"entries in the values × keys block {d['d3_auroc']:.3f} (Pearson r over the whole V × V table, "
        f"mostly its zero background: {d['d3_corr_full_table']:.3f})",
        _mech_ev(ctx, acc, steps, n_probe),
    )


@_with_mech_null
def measure_fig4(d: dict, ctx, acc: float, steps: int, n_probe: int) -> Measurement:
    return Measurement(
        {**{"peak_hit": d["d4_hit"]}, "accuracy": acc},
        f"{d['d4_hit']:.3f} of query rows peak at the matching key + 1",
        _mech_ev(ctx, acc, steps, n_probe),
    )


@_with_mech_null
def measure_fig5(d: dict, ctx, acc: float, steps: int, n_probe: int) -> Measurement:
    return Measurement(
        {**{"value_copy": d["d5_value_copy"], "key_shift": d["d5_key_shift"]}, "accuracy": acc},
        f"values copied (main diagonal) {d['d5_value_copy']:.3f}; keys shifted (τ = t + 1) {d['d5_key_shift']:.3f}",
        _mech_ev(ctx, acc, steps, n_probe),
    )


def measure_eq10(V: int = 32, D: int = 16, N: int = 8, seed: int = 0) -> Measurement:
    """Eq. 10 on the designed Thm 2 weights: the share of ‖G_kq‖² in the block the printed matrix marks
    (rows x_τ, columns x_(t−1)) and in its transpose (rows x_(τ−1), columns x_t)."""
    from ..analysis.hashing import invariant_operators
    from ..theory.hashing_circuit import thm2_weights

    G = invariant_operators(thm2_weights(V, D, N, seed))["G_kq"]
    tot = float((G**2).sum())
    printed, corrected = float((G[V:, :V] ** 2).sum()) / tot, float((G[:V, V:] ** 2).sum()) / tot
    return Measurement(
        {"printed_layout_share": printed, "corrected_layout_share": corrected},
        f"‖G_kq‖² share in the printed block (x_τ, x_(t−1)) {printed:.3f}; in (x_(τ−1), x_t) {corrected:.3f}",
        Evidence.exact(f"designed Thm 2 weights, V = {V}, D = {D}, N = {N}"),
    )


# --------------------------------------------------------------------------------- §5.1: Fig. 6
def _grid_n(bundle, which: str) -> int:
    cfg = bundle.config
    return cfg["designed_n_seq"] if which == "designed" else cfg["n_eval"]


def _fig6ab_values(pairs: list) -> dict:
    """``pairs``: (measured N_f*, Eq. 77's N_f) for every (cell, level) where Eq. 77 predicts at least one fact."""
    held = [m >= p for m, p in pairs]
    return {"informative_pairs": len(pairs), "lower_bound_fraction": sum(held) / len(held) if held else 0.0}


def measure_fig6ab(bundle=None) -> Measurement:
    """§5.1's reading of the theory as a lower bound, on the strongest committed designed-capacity bundle
    (``ch2_designed_capacity``; cpu-hours: V = 8192, 15 (D, N) cells, two accuracy levels): at each (cell, level) the
    largest number of facts the designed Thm 2 circuit recalls at that accuracy (N_f*, bisection) against the number
    Eq. 77 (Thm 3) promises at the same accuracy. A (cell, level) where Eq. 77 promises no fact at all (its accuracy
    is below the level, down to below chance, at every N_f) bounds nothing and is left out. A ``ch2_scaling`` bundle
    (the V = 64 grid) is not read: there Eq. 77 predicts below chance in most cells, so any model meets it. Null
    control: a model that is always wrong (N_f* = 0 everywhere)."""
    from ..results import load_strongest_bundle

    if bundle is None or "capacity" not in bundle.tables:
        bundle = load_strongest_bundle("ch2_designed_capacity", log=lambda m: None)
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
    values = _fig6ab_values(pairs)
    return Measurement(
        values,
        f"V = {V}: facts recalled by the designed circuit vs Eq. 77's promise, per (D, N) and accuracy level: "
        + "; ".join(parts)
        + f" — measured ≥ Eq. 77 in {sum(m >= p for m, p in pairs)} of {len(pairs)}, measured / Eq. 77 from "
        + (f"{min(m / p for m, p in pairs):.2f} to {max(m / p for m, p in pairs):.2f}" if pairs else "—")
        + f"; {excluded} (cell, level) pairs where Eq. 77 promises no fact left out",
        _bundle_ev(
            bundle,
            f"designed Thm 2 circuit, V = {V}, {len(set(zip(cap['D'], cap['N'])))} (D, N) cells × levels "
            f"{sorted(set(cap['level']))}, {bundle.config['n_queries']} queries per evaluation",
            seeds=0,
            tier="exact",
        ),
        control=Control(
            "null",
            "a model that is always wrong (recalls no fact at any accuracy level)",
            Measurement(
                _fig6ab_values([(0, p) for _, p in pairs]),
                "N_f* = 0 in every (cell, level)",
                Evidence.exact("the same (cell, level) pairs"),
            ),
        ),
    )


def measure_fig6bc(bundle) -> Measurement:
    """Trained simplified (max over seeds) against the designed circuit (full readout, as for trained models)."""
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


def _reference_cells(bundle=None):
    """The authors' reference grid (``ch2_reference_grid``): the given bundle, else the strongest committed one
    (cpu-hours over ci, :func:`~mamba_recall.results.load_strongest_bundle`)."""
    if bundle is None:
        from ..results import load_strongest_bundle

        bundle = load_strongest_bundle("ch2_reference_grid", log=lambda m: None)
    return bundle, bundle.tables["cells"]


def measure_fig6c_reference(bundle=None) -> Measurement:
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
                control=Control(
                    "null",
                    f"a model at the generator's chance level ({chance:.4f}) in every cell",
                    Measurement(
                        {"defined_n90": 0, "n90_nonincreasing": True},
                        "no cell reaches 0.9",
                        Evidence.exact("the generator's chance level"),
                    ),
                ),
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


def measure_fig6c_strongest(bundle=None) -> Measurement:
    """Fig. 6(c) from the strongest committed evidence: the authors' reference grid (cpu-hours, else ci) when no
    bundle or a reference-grid bundle is given; a ``ch2_scaling`` bundle (a ``grid`` table) reads as before."""
    if bundle is not None and "grid" in bundle.tables:
        return measure_fig6c(bundle)
    return measure_fig6c_reference(bundle)


# ------------------------------------------- Figs. 7, 8, 10-11, Tab. 10: the strongest evidence, seed by seed
#: The run-store part (``experiments.ch2_figs_cpu``) of each figure's claims and the ci bundle that stands in for it.
FIG_PARTS = {
    "fig7": "ch2_scaling",
    "fig10_11": "ch2_scaling",
    "tab10": "ch2_scaling",
    "fig8": "ch2_multihead",
    "thm5": "ch2_multihead",
}
#: What each part's per-run table is called in the layout of the ci bundles, whose readers the parts reuse.
_PART_TABLE = {"fig7": "multilayer", "fig10_11": "repetition", "tab10": "ablation", "fig8": "grid", "thm5": "grid"}


def is_run_store_bundle(bundle) -> bool:
    """A bundle of ``ch2_figs_cpu`` (per-run table ``runs``, one row per model and seed) rather than a ci bundle."""
    return "runs" in (getattr(bundle, "tables", None) or {}) and bool(
        (getattr(bundle, "config", None) or {}).get("part")
    )


def strongest_fig_bundle(part: str, fallback=None, log=lambda m: None):
    """The strongest committed evidence for ``part`` (a key of :data:`FIG_PARTS`): the complete ``ch2_<part>_<preset>``
    bundle with the strongest preset (``results.load_strongest_bundle``: paper, then cpu-hours), else ``fallback``
    (default: the committed ci bundle of :data:`FIG_PARTS`, which says ci in its config). Only absence falls
    back (:class:`~mamba_recall.results.BundleMissing`): a stronger bundle that exists but is corrupt raises its
    :class:`~mamba_recall.results.BundleError` (file and regenerate command) instead of being replaced by weaker
    evidence."""
    from ..results import BundleMissing, load_bundle, load_strongest_bundle

    if part not in FIG_PARTS:
        raise ValueError(f"unknown part {part!r}; use one of {', '.join(FIG_PARTS)}.")
    try:
        return load_strongest_bundle(f"ch2_{part}", log=log)
    except BundleMissing:
        return fallback if fallback is not None else load_bundle(f"{FIG_PARTS[part]}_ci")


def _seed_views(bundle) -> list:
    """One view of a run-store bundle per seed, in the layout of the ci bundle (the per-run accuracy as ``acc``, or
    ``mean`` for Tab. 10; MHA heads with full-width values as pattern ``MHA-full``), so each seed is read by the
    same function as the ci grid."""
    from types import SimpleNamespace

    part, runs = bundle.config["part"], bundle.tables["runs"]
    table = runs.rename(columns={"best_accuracy": "mean" if part == "tab10" else "acc"})
    if part in ("fig8", "thm5"):
        table = table.assign(
            pattern=[p if v == "code" else f"{p}-{v}" for p, v in zip(table["pattern"], table["values"])]
        )
    sizes = {**bundle.config["sizes"], "seeds": 1}
    cfg = {"preset": bundle.config["preset"], "n_eval": bundle.config["n_eval"]}
    cfg.update(sizes if part in ("fig8", "thm5") else {_PART_TABLE[part]: sizes})
    return [
        (
            int(seed),
            SimpleNamespace(
                name=bundle.name,
                config=cfg,
                tables={_PART_TABLE[part]: t.drop(columns="seed").reset_index(drop=True)},
                provenance=bundle.provenance,
                path=bundle.path,
                data=bundle.data,
            ),
        )
        for seed, t in table.groupby("seed", sort=True)
    ]


def _by_seed(measure):
    """``measure`` (a reader of one ci-layout bundle) applied to a run-store bundle: one :class:`Measurement` per seed
    (:func:`_seed_views`), combined by :func:`~mamba_recall.claims.core.across_seeds`, the single path by which every
    claim turns seeds into a number with an interval; the combined evidence names the preset and the run store. A ci
    bundle (one seed) is read as it is."""
    import dataclasses
    import functools

    @functools.wraps(measure)
    def read(bundle, *args, **kwargs):
        if not is_run_store_bundle(bundle):
            return measure(bundle, *args, **kwargs)
        views = _seed_views(bundle)
        m = across_seeds([measure(v, *args, **kwargs) for _, v in views], [f"seed {s}" for s, _ in views])
        return dataclasses.replace(
            m,
            evidence=dataclasses.replace(
                m.evidence,
                sample=f"{m.evidence.sample} (preset {bundle.config['preset']}, run store)",
                smoke=m.evidence.smoke or bool(bundle.config.get("smoke")),
            ),
        )

    return read


# ---------------------------------------------------------------------------- §5.2, App. G: depth, repetition
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
    null = Measurement(
        {"equal_neff_groups": len(multi), "spread_equal_neff_se": 0.0, "depth_drop_se": 0.0, "accuracy_span_se": 0.0},
        f"{chance:.4f} in every cell",
        Evidence.exact("the generator's chance level"),
    )
    return Measurement(
        {
            "equal_neff_groups": len(multi),
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
        control=Control("null", f"a model at the generator's chance level ({chance:.4f}) in every cell", null),
    )


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
            "`python -m mamba_recall.experiments.ch2_scaling --preset paper --parts repetition`"
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


def chance_level(V: int, Nf: int, L: int) -> float:
    """The chance level of standard MQAR on the generator itself: a reader that answers one of the context's values
    at random (:func:`~mamba_recall.analysis.hashing.context_guess_accuracy`; 1/N_f for this generator)."""
    return _chance_level(int(V), int(Nf), int(L))


@functools.lru_cache(maxsize=None)
def _chance_level(V: int, Nf: int, L: int) -> float:
    from ..analysis.hashing import context_guess_accuracy

    return context_guess_accuracy(V, Nf, L)


def guess_level(V: int, Nf: int, Nk: int) -> float:
    """The accuracy of "guessing one out of N_k options" (App. G.2, Remark 3) on the generator the models are trained
    on: a reader of the superposition of the N_k stored values answers the most frequent one
    (:func:`~mamba_recall.analysis.hashing.superposition_guess_exact`, the closed form of the generator's sampling law,
    checked against its sequences by :func:`~mamba_recall.analysis.hashing.superposition_guess_accuracy`). Above 1/N_k
    because the earlier chunks' fresh values can repeat the last one (0.508 and 0.349 for N_k = 2, 3 at V = 128).
    ``Nf`` does not enter: each key's values are drawn alike whatever the number of facts."""
    from ..analysis.hashing import superposition_guess_exact

    return superposition_guess_exact(int(V), int(Nk))


def _fig10_values(one: float, two: float, three: float | None, guess: float, n: int) -> dict:
    values = {
        "one_layer_excess_se": (one - guess) / se(n),
        "two_layer_accuracy": two,
        "two_layer_gain_se": (two - one) / se_diff(n),
    }
    if three is not None:
        values["three_layer_accuracy"] = three
    return values


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
    null = Measurement(
        {"one_layer_gap_se": 0.0, "two_layer_accuracy": pred, "two_layer_gain_se": 0.0},
        f"{pred:.3f} at every depth",
        Evidence.exact("Remark 5's superposition prediction for these sequences"),
    )
    return Measurement(
        {
            "one_layer_gap_se": abs(one - pred) / se(n),
            "two_layer_accuracy": two,
            "two_layer_gain_se": (two - one) / se_diff(n),
        },
        shown,
        _bundle_ev(
            bundle,
            f"V = {c['V']}, N_f = {c['Nf']}, D = {c['D']}, N = {c['N']}, {c['steps']} steps",
            seeds=int(c["seeds"]),
        ),
        control=Control("null", f"a one-layer superposition reader (Remark 5: {pred:.3f}) at every depth", null),
    )


_NK3_NOT_RUN = (
    "`python -m mamba_recall.experiments.ch2_scaling --preset paper --parts repetition` (N_k, N_q ∈ {2, 3}, "
    "1–3 layers, 5 state sizes, 3 seeds, 3000 steps: ≈ 3–5 CPU-hours or ≈ 10 GPU-minutes, estimated)"
)
_NQ3_NOT_RUN = (
    "`python -m mamba_recall.experiments.ch2_scaling --preset paper --parts repetition` (≈ 3–5 CPU-hours "
    "or ≈ 10 GPU-minutes, estimated)"
)


def measure_fig10_nk3(bundle=None) -> Measurement:
    """Fig. 10 at N_k = 3 from the strongest committed bundle with 3 repeats and 1–3 layers (:func:`measure_fig10`);
    not run while only the ci bundle (2 repeats, 1–2 layers) is committed."""
    bundle = bundle if bundle is not None else strongest_fig_bundle("fig10_11")
    if not all(_has_rep(_seed_views(bundle)[0][1] if is_run_store_bundle(bundle) else bundle,
                        "repeated_keys", 3, k) for k in (1, 2, 3)):  # fmt: skip
        raise NotRun(_NK3_NOT_RUN)
    return measure_fig10(bundle, 3)


def measure_fig11_nq3(bundle=None) -> Measurement:
    """Fig. 11 at N_q = 3 (:func:`measure_fig11`) from the strongest committed bundle with 3 repeats."""
    bundle = bundle if bundle is not None else strongest_fig_bundle("fig10_11")
    if not all(_has_rep(_seed_views(bundle)[0][1] if is_run_store_bundle(bundle) else bundle,
                        "repeated_queries", 3, k) for k in (1, 2)):  # fmt: skip
        raise NotRun(_NQ3_NOT_RUN)
    return measure_fig11(bundle, 3)


# ------------------------------------------------------------------------------------ App. K: Tab. 10
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
            f"rows {missing} are not in the bundle; run `python -m mamba_recall.experiments.ch2_scaling "
            "--preset ci --parts ablation --merge`"
        )
    margins = {r: acc[r] - (TAB10[r][0] - 2 * max(TAB10[r][1], 0.01)) for r in ("Base", "A", "B", "C", "D")}
    chance = chance_level(c["V"], c["Nf"], c.get("L", 4 * c["Nf"]))
    null = Measurement(
        {"worst_margin": min(chance - (TAB10[r][0] - 2 * max(TAB10[r][1], 0.01)) for r in margins)},
        f"{chance:.4f} in every row",
        Evidence.exact("the generator's chance level"),
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
        control=Control(
            "null", f"a model at the generator's chance level, a random context value ({chance:.4f})", null
        ),
    )


@_by_seed
def measure_tab10_e(bundle) -> Measurement:
    """Row E (no Conv1D) against the floor 1/N_f of a model that outputs some context value without knowing
    which key it belongs to, in standard errors."""
    acc, c = _ablation(bundle)
    if "E" not in acc:
        raise NotRun(
            "row E is not in the bundle; run `python -m mamba_recall.experiments.ch2_scaling --preset ci "
            "--parts ablation --merge`"
        )
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


# ------------------------------------------------------------------------------- §5.2, App. F.2: heads
def measure_thm5_algebra(diff_mva: float, diff_mha: float, scale: float, M: int, N: int) -> Measurement:
    return Measurement(
        {"mva_rel_diff": diff_mva / scale, "mha_rel_diff": diff_mha / scale},
        f"max |difference| / logit scale: MVA {diff_mva / scale:.1e}, MHA (full-value heads) {diff_mha / scale:.1e}",
        Evidence.exact(f"random weights, M = {M}, N = {N}, float32"),
    )


def _heads(bundle):
    grid, c = bundle.tables["grid"], bundle.config
    A = grid.set_index(["pattern", "M", "N"])["acc"]
    return A, sorted(c["Ms"]), sorted(c["Ns"]), se_diff(c["n_eval"] * c["Nf"]), c


def _heads_ev(bundle, c) -> Evidence:
    return _bundle_ev(
        bundle,
        f"V = {c['V']}, N_f = {c['Nf']}, D = {c['D']}, N ∈ {c['Ns']}, M ∈ {c['Ms']}, {c['steps']} steps",
        seeds=int(c["seeds"]),
    )


@_by_seed
def measure_fig8_shared(bundle) -> Measurement:
    """MQA, MKA, MVA: the largest |acc(M, N) − acc(1, N)| per pattern over the (M, N) the grid has, and the largest
    gain from heads."""
    A, Ms, Ns, s, c = _heads(bundle)
    dev, gain = {}, -math.inf
    for p in ("MQA", "MKA", "MVA"):
        diffs = [A[(p, M, N)] - A[(p, 1, N)] for M in Ms[1:] for N in Ns if (p, M, N) in A and (p, 1, N) in A]
        if not diffs:
            raise NotRun(f"the bundle has no {p} cell with M > 1 beside its M = 1 cell at the same N.")
        dev[p] = max(abs(d) for d in diffs)
        gain = max(gain, max(diffs))
    flat = sum(v <= Z * s for v in dev.values())
    span = _span_se(A, ("MQA", "MKA", "MVA"), s)
    null = Measurement(
        {"flat_patterns": 3, "largest_gain_se": 0.0, "accuracy_span_se": 0.0},
        f"{_chance_of(c):.4f} at every (M, N): no gain, no loss",
        Evidence.exact("the generator's chance level"),
    )
    return Measurement(
        {"flat_patterns": flat, "largest_gain_se": gain / s, "accuracy_span_se": span},
        "largest |acc(M, N) − acc(1, N)|: "
        + ", ".join(f"{p} {v:.3f}" for p, v in dev.items())
        + f" (3 s.e. = {Z * s:.3f}); largest gain from heads {gain:+.3f}; accuracies span {span:.1f} s.e. over N",
        _heads_ev(bundle, c),
        control=Control("null", f"a model at the generator's chance level ({_chance_of(c):.4f}) for every M", null),
    )


def _chance_of(c: dict) -> float:
    return chance_level(c["V"], c["Nf"], c.get("L", 4 * c["Nf"]))


def _span_se(A, patterns, s: float) -> float:
    """How far the accuracies of ``patterns`` spread over the grid, in standard errors: a grid whose cells all sit
    within noise of each other (a model at chance, or at the ceiling everywhere) cannot show a difference, nor its
    absence."""
    acc = [float(v) for (p, _, _), v in A.items() if p in patterns]
    return (max(acc) - min(acc)) / s if acc else 0.0


@_by_seed
def measure_fig8_mha(bundle) -> Measurement:
    """MHA: gain acc(M_max, N) − acc(1, N) wherever one head is below near-perfect (room to gain) and the grid has
    both cells."""
    A, Ms, Ns, s, c = _heads(bundle)
    room = [N for N in Ns if ("MHA", 1, N) in A and ("MHA", Ms[-1], N) in A and A[("MHA", 1, N)] < NEAR_PERFECT]
    gains = {N: float(A[("MHA", Ms[-1], N)] - A[("MHA", 1, N)]) for N in room}
    chance = chance_level(c["V"], c["Nf"], c["L"])
    null = Measurement(
        {"room_cells": len([N for N in Ns if ("MHA", 1, N) in A]), "smallest_gain_se": 0.0},
        f"{chance:.4f} at every (M, N): no gain",
        Evidence.exact("the generator's chance level"),
    )
    return Measurement(
        {"room_cells": len(room), "smallest_gain_se": min(gains.values()) / s if gains else 0.0},
        f"acc(M = {Ms[-1]}, N) − acc(1, N): "
        + ", ".join(f"N = {N}: {g:+.3f}" for N, g in gains.items())
        + f" (3 s.e. = {Z * s:.3f})",
        _heads_ev(bundle, c),
        control=Control("null", f"a model at the generator's chance level ({chance:.4f}) for every M", null),
    )


def _mn_gaps(A, Ms, Ns, pattern: str) -> dict:
    """acc_pattern(M, N) − acc_MHA(1, M·N) at every (M, N) of the grid with M·N on it (both cells present)."""
    return {
        (M, N): float(A[(pattern, M, N)] - A[("MHA", 1, M * N)])
        for M in Ms[1:]
        for N in Ns
        if M * N in Ns and (pattern, M, N) in A and ("MHA", 1, M * N) in A
    }


@_by_seed
def measure_thm5_mn(bundle) -> Measurement:
    """Thm 5's strong form over the whole grid: |acc_MHA(M, N) − acc(1, M·N)| wherever M·N is on the grid. Where the
    bundle also has the full-width value ablation (``MHA-full``: every head reads the whole value vector, as Lemma
    5's proof), its gaps are shown and reported as ``worst_gap_full_se`` beside the rule's metric."""
    A, Ms, Ns, s, c = _heads(bundle)
    gaps = _mn_gaps(A, Ms, Ns, "MHA")
    worst = max((abs(v) for v in gaps.values()), default=0.0)
    values = {"pairs": len(gaps), "worst_gap_se": worst / s}
    shown = (
        "acc(M, N) − acc(1, MN): "
        + ", ".join(f"M={M}, N={N}: {v:+.3f}" for (M, N), v in gaps.items())
        + f" (3 s.e. = {Z * s:.3f})"
    )
    values["accuracy_span_se"] = _span_se(A, ("MHA",), s)
    full = _mn_gaps(A, Ms, Ns, "MHA-full")
    if full:
        values.update(pairs_full=len(full), worst_gap_full_se=max(abs(v) for v in full.values()) / s)
        shown += "; full-width value heads: " + ", ".join(f"M={M}, N={N}: {v:+.3f}" for (M, N), v in full.items())
    null = Measurement(
        {"pairs": len(gaps), "worst_gap_se": 0.0, "accuracy_span_se": 0.0},
        f"{_chance_of(c):.4f} at every (M, N)",
        Evidence.exact("the generator's chance level"),
    )
    return Measurement(
        values,
        shown,
        _heads_ev(bundle, c),
        control=Control("null", f"a model at the generator's chance level ({_chance_of(c):.4f}) for every M", null),
        note="Lemma 5's proof lets every head read the full value vector; these heads (the authors' "
        f"code, values={c.get('values', 'code')!r}) read learned projections of D_in/M channels",
    )


def spearman_p(x, y) -> tuple[float, float]:
    """Spearman ρ (:func:`scipy.stats.spearmanr`) and its exact one-sided permutation p-value for a decrease,
    P(ρ_perm ≤ ρ) over every pairing (:func:`scipy.stats.permutation_test`, exhaustive for the few head counts M).
    A constant series has no ranking: ρ is NaN and p is 1 (no evidence of a decrease; scipy would give p = 0)."""
    from scipy import stats

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:  # no ranking at all: ρ undefined, and no evidence of a decrease
        return float("nan"), 1.0
    rho = float(stats.spearmanr(x, y).statistic)
    test = stats.permutation_test(
        (x, y),
        lambda a, b: stats.spearmanr(a, b).statistic,
        permutation_type="pairings",
        alternative="less",
        n_resamples=math.inf,
    )
    return rho, float(test.pvalue)


#: The command that writes a Fig. 8 grid with each run's correct-entry variance (``var_correct``) in its run store.
FIG15_COMMAND = "python -m mamba_recall.experiments.ch2_figs_cpu --preset cpu-hours --parts fig8 --allow-long"


def _with_entry_variances(bundle):
    """The Fig. 8 bundle with Lemma 5's wrong- and correct-entry variances relative to the squared margin
    (``rel_var_wrong``, ``rel_var_correct``) on its per-run table. A run-store bundle aggregates ``rel_var_wrong`` but
    not ``var_correct``: that is read from the committed run records its ``run_keys`` name (``results/runs/...``). A
    bundle or store without them raises :class:`NotRun` with the command that writes them."""
    import pandas as pd

    if not is_run_store_bundle(bundle):
        name = "noise" if "noise" in bundle.tables else "grid"
        t = bundle.tables[name]
        if not {"var_correct", "margin", "rel_var_wrong"} <= set(t.columns):
            raise NotRun(
                "the bundle has no wrong- and correct-entry variances (Lemma 5, Eq. 132): "
                "`python -m mamba_recall.experiments.ch2_multihead --preset ci` writes them (its noise table)"
            )
        t = t.assign(rel_var_correct=t["var_correct"] / t["margin"] ** 2)
        return _replace_tables(bundle, {name: t})
    runs = bundle.tables["runs"]
    if "var_correct" not in runs:
        from ..paths import REPO_ROOT
        from ..runstore import read_run

        store = Path(REPO_ROOT) / str(bundle.data.get("store", ""))
        rows = []
        for key in bundle.data.get("run_keys", []):
            path = store / f"{key}.json"
            rec = read_run(path, key) if path.is_file() else {}
            if "var_correct" not in rec.get("result", {}):
                raise NotRun(
                    f"the correct-entry variance of run {key} is not in {store} (the bundle aggregates the wrong and "
                    f"empty entries only): `{FIG15_COMMAND}` keeps it in every run record"
                )
            c = rec["config"]
            rows.append(
                dict(
                    pattern=c["pattern"],
                    values=c["values"],
                    M=c["M"],
                    N=c["N"],
                    seed=rec["seed"],
                    var_correct=rec["result"]["var_correct"],
                )
            )
        runs = runs.merge(pd.DataFrame(rows), on=["pattern", "values", "M", "N", "seed"], how="left")
        if runs["var_correct"].isna().any():
            raise NotRun(f"some runs of the bundle have no record in {store}: `{FIG15_COMMAND}`")
    runs = runs.assign(rel_var_correct=runs["var_correct"] / runs["margin"] ** 2)
    return _replace_tables(bundle, {"runs": runs})


def _replace_tables(bundle, tables: dict):
    from types import SimpleNamespace

    return SimpleNamespace(
        **{k: getattr(bundle, k, None) for k in ("name", "config", "data", "provenance", "path")},
        tables={**bundle.tables, **tables},
    )


#: Lemma 5's named entries (Eq. 132): the wrong entries (the other context values) and the correct entry.
_ENTRIES = {"wrong": "rel_var_wrong", "correct": "rel_var_correct"}


@_by_seed
def _fig15_one(bundle) -> Measurement:
    A, Ms, Ns, s, c = _heads(bundle)
    noise = bundle.tables.get("noise", bundle.tables["grid"]).set_index(["pattern", "M", "N"])
    live = [N for N in Ns if ("MHA", 1, N) in A and A[("MHA", 1, N)] < PERFECT]

    def heads(p, N):
        return [M for M in Ms if (p, M, N) in noise.index]

    res = {
        (p, e): {
            N: spearman_p(heads(p, N), [noise.loc[(p, M, N), col] for M in heads(p, N)])
            for N in live
            if len(heads(p, N)) >= 4
        }
        for p in ("MHA", "MQA", "MKA", "MVA")
        for e, col in _ENTRIES.items()
    }

    def fractions(p):
        return {
            e: sum(pv <= 0.05 for _, pv in res[(p, e)].values()) / len(res[(p, e)]) if res[(p, e)] else 0.0
            for e in _ENTRIES
        }

    frac, null = fractions("MHA"), fractions("MVA")
    shown = "; ".join(
        f"{p} {e} entries " + ", ".join(f"N={N}: {r:+.2f} ({pv:.3f})" for N, (r, pv) in v.items())
        for (p, e), v in res.items()
        if v
    )
    return Measurement(
        {
            "n_M": max((len(heads("MHA", N)) for N in live), default=0),
            "live_cells": len(res[("MHA", "wrong")]),
            "wrong_significant_fraction": frac["wrong"],
            "correct_significant_fraction": frac["correct"],
            "either_significant_fraction": max(frac.values()),
        },
        "Spearman ρ (exact one-sided p) of the entry variance / margin² against M: "
        + (shown or "no (pattern, N) with four head counts")
        + " (the shared patterns are shown; MVA is the null control)",
        _heads_ev(bundle, c),
        control=Control(
            "null",
            "the MVA heads of the same grid (Lemma 2: exactly one head with N' = N, so heads must not shrink its "
            "variance), read by the same rule",
            Measurement(
                {
                    "n_M": max((len(heads("MVA", N)) for N in live), default=0),
                    "live_cells": len(res[("MVA", "wrong")]),
                    "wrong_significant_fraction": null["wrong"],
                    "correct_significant_fraction": null["correct"],
                    "either_significant_fraction": max(null.values()),
                },
                "MVA: " + ("; ".join(f"{e} {v:.2f}" for e, v in null.items())),
                _heads_ev(bundle, c),
            ),
        ),
    )


def measure_fig15(bundle) -> Measurement:
    """Figs. 14–15 and Lemma 5 (Eq. 132): for MHA at each N where one head is not yet perfect, the rank correlation
    with M of the variance of the *wrong* entries (the other context values) and of the *correct* entry, each relative
    to the squared margin, with its exact one-sided p-value, over the head counts the bundle has (p ≤ 0.05 needs four).
    These are the entries whose variance carries the SSM noise σ̃² that heads average away; the empty entries, which
    Lemma 5 says heads barely affect, are not read. A run-store bundle is read seed by seed (:func:`_by_seed`), its
    correct-entry variance from the committed run records."""
    return _fig15_one(_with_entry_variances(bundle))


# ------------------------------------------------------------------------------------------ the claims
#: The paper's sentence each claim tests, verbatim from its text (pieces joined with " … ").
QUOTES = {
    "002/Thm1": r"a single-layer simplified Mamba with dimensions $D = V$ , $N = V$ , $\text{expand} = 2$ , $D_{\text{conv}} = 2$ can perfectly solve an MQAR task, i.e. with recall probability = 1.",
    "002/Fig6b": r"As predicted by our theory, a clear tradeoff is observed: for larger $D$ , the minimal $N$ required for perfect recall is lower, and vice versa.",
    "002/Thm2": r"a single-layer simplified Mamba with dimensions $D, N = O(\log V)$ , $\text{expand} = 2$ , $D_{\text{conv}} = 2$ can solve an MQAR task with high probability.",
    "002/Lemma1": r"a single-layer simplified Mamba with dimensions $N < D < V$ , expand = 2, $D_{\text{conv}} = 2$ can perfectly solve an MQAR task if model dimensions satisfy $\varepsilon_v < 1$ , $\varepsilon_k < 1$ and $\varepsilon_v + \varepsilon_k + N_f \varepsilon_v \varepsilon_k < \frac{1}{2}$ , where",
    "002/Eq15": r"$$p_{\text{success}} \approx \left( \Phi \left( \sqrt{\frac{2ND}{N_f}} \right) \right)^{\frac{V}{2}} \quad (15)$$ … in the limit of $N_f \gg N, D$ , where $\Phi$ is the standard Normal CDF.",
    "002/Remark2": r"a multi-layer linear Mamba with $\Lambda$ layers can solve an MQAR task with a probability … approximated by $p_{\text{success}} \approx \left( \Phi \left( \sqrt{\frac{2\Lambda ND}{N_f}} \right) \right)^{\frac{V}{2}}$ .",
    "002/Thm3-Vmax": r"For example, given the model embedding dimension and state dimension, our theory predicts an upper bound on the vocabulary size and the number of facts that it can perfectly recall. Empirical results show that this bound is tight and predictive, offering insights into how AR capacity scales with vocabulary, state, embedding size, and architecture.",
    "002/Remark1": r"a single-layer simplified Mamba model can solve an MQAR task with probability $> 1 - \delta$ if model dimensions satisfy $D, N \gtrsim \log V$ (JL condition), and $DN \gtrsim 2 N_f n_\sigma^2$ , with $n_\sigma = \Phi^{-1}(1 - \frac{2\delta}{V})$ . … In this regime, approximating $\Phi$ , the dimension requirement becomes $DN \gtrsim 4 N_f \log(\frac{V}{2\delta})$ , hence overall:",
    "002/AppD-phase-transition": r"The resulting prediction is that, plotting MQAR accuracy in dimension space $D, N$ , we expect to see a large domain with accuracy $\approx 1$ and a large domain with accuracy $\approx 0$ , with a relatively small domain of transition between them.",
    "002/AppD-L-independence": r"If a realistic, compressive model is able to perfectly ignore non-key-value $(x_{\tau-1}, x_\tau)$ pairs, then its recall abilities depends only on $N_f$ and not on context length $L$ .",
    "002/Eq10": r"Therefore, if the solutions learned in practice are equivalent to the one presented in Theorem 2, we predict that the model weights will satisfy: … $$G_{vv} \approx \begin{pmatrix} 0 \\ I_V \end{pmatrix}, \quad G_{kq} \approx \begin{pmatrix} 0 & 0 \\ I_V & 0 \end{pmatrix} \quad (10)$$",
    "002/Fig2": r"In Fig. 2 we can see that indeed, for a linear Mamba trained on MQAR (see App. J for implementation details), the solution weights satisfy this structure almost precisely. Specifically, we see that indeed $G_{kq}$ attends only to the query $x_t$ and the stored key $x_{\tau-1}$ , while $G_{vv}$ attends only to the stored values $x_\tau$ ; all other matrix entries are $\approx 0$ .",
    "002/Fig2-selectivity": r"However, we note that the nonzero blocks $G_{vv}^{t,\tau}$ and $G_{kq}^{\tau-1,t}$ do present more complex patterns than $\approx I_V$ . As we discuss in App. D, these patterns are responsible for key and value selectivity.",
    "002/Fig3": r"The actual SSM hidden state $H_t'$ is a random-looking efficiently compressed storage, which, when projected back to vocabulary space, seem to preserve the information stored in the context, as $H_t'' \approx H_t$ .",
    "002/Fig4": r"The ideal attention map of a theoretical non-compressive model (left) is well approximated by a trained real-world model (right).",
    "002/Fig5": r"Values are copied (left), as indicated by the dominant main diagonal. Keys are shifted (right), as indicated by the dominant second diagonal.",
    "002/Fig6ab": r"(i) our theory is based on a specific model construction with fixed weight assignments (column 2). As such, the proposed solution is not necessarily optimal compared to the trained variant and should be considered a lower bound rather than a direct predictor",
    "002/Fig6bc": r"As such, the proposed solution is not necessarily optimal compared to the trained variant",
    "002/Fig6c": r"for larger $D$ , the minimal $N$ required for perfect recall is lower, and vice versa. … Most importantly, this trend also matches our empirical results in columns 3 and 4, thus bridging between the theory-based simulations and both empirical models.",
    "002/Fig6d": r"In particular, the regions in the $N, D$ space that achieve near-perfect recall are almost identical for both models.",
    "002/Fig6-anchor": r"empirically show that a 1-layer Mamba can perfectly solve an MQAR task of $V_k = \frac{V}{2} = 512$ given … relatively small dimensions $N = 32 \ll V_k$ and $D = 64 \ll V_k$ .",
    "002/Fig12": r"It can be seen that full model always perform better, but the scaling trends are similar to these of the simplified model.",
    "002/Fig7": r"the MQAR performance of a simplified multi-layer Mamba model of a state size $N$ and $\Lambda$ layers is uniquely determined by its effective state size $N_{\text{eff}} = \Lambda N$ , rather than by each factor separately.",
    "002/Fig10-Nk2": r"Strikingly, for $N_k = 2$ , the 1-layer models fail the task, while the 2-layer models perfectly succeeds it. … Interestingly, for $N_k = 2$ the single-layer model accuracy is approximately bounded by $\frac{1}{2}$ ;",
    "002/Fig10-Nk3": r"(For $N_k = 3$ , the 2-layer model does not achieve perfect performance. … for $N_k = 3$ , the bound is roughly $\frac{1}{3}$ . … Right: for $N_k = 3$ repeating keys, a 3-layers model is required for perfect recall.",
    "002/Fig11-Nq2": r"case, the 1-layer cannot solve it perfectly, while the 2-layer models achieves perfect recall. … Note that for $N_q = 2$ , the single-layer … model achieves an accuracy quite similar to our $\frac{3}{4}$ prediction from Remark 6.",
    "002/Fig11-Nq3": r"While 1-layer model fails to achieve perfect recall in repeating queries task of $N_q = 2$ , $N_q = 3$ , the 2-layer and 3-models models solve it perfectly, almost independently of state dimension $N$ .",
    "002/Tab10-Base-to-D": r"We find that a simplified Mamba block containing only a SSM and a Conv1d of length 2 achieves nearly perfect recall",
    "002/Tab10-E": r"but fails completely once the Conv1d is removed.",
    "002/Thm5-algebra": r"a single-layer simplified Mamba-2 model with $M$ heads, using MVA, MKA or MQA head patterns, is equivalent, in term of recall capacity, to a single-head model of same dimensions $D' = D$ , $N' = N$ . If MHA pattern is used, then the model is equivalent to a single-head model with $D' = D$ , $N' = MN$ , thus achieving an improved recall capacity.",
    "002/Fig8-shared": r"Sharing keys (MQA), values (MKA) or both (MVA) across SSM heads implies similar accuracy as in the single-headed SSM.",
    "002/Fig8-MHA": r"In order to improve recall by splitting into $M$ heads, both key and query dimensions should increase from $N$ to $MN$ (MHA, bottom right).",
    "002/Thm5-MHA-MN": r"with $M$ heads using MHA pattern and dimensions $D, N = O(\log V)$ is **equivalent**, in term of associative recall, to a similar single-headed model of dimensions $D' = D, N' = MN$ .",
    "002/Fig15": r"For the MHA pattern, output entries variance is reduced upon addition of SSM heads. … Now since we have $M$ independent noise terms, each with variance $(\tilde{\sigma}^h)^2 = O(\frac{1}{N})$ , their weighted average have a smaller variance, reduced by a factor of $M$ , namely $\tilde{\sigma}^2 = O(\frac{1}{MN})$ .",
    "002/Remark3": r'with dimensions $D, N = O(\log V)$ and weights designed as specified in Theorem 2 **fails** to solve *MQAR with repeating keys*. … This aligns with our intuition (see Remark 3) of "guessing" one out of $N_k$ options, when the 1-layer model can only access a linear combination of the $N_k$ stored values.',
    "002/Remark5": r"A single-layer simplified Mamba with dimensions $D, N = O(\log V)$ and weights designed as specified in Theorem 2 fails to solve MQAR with repeating queries.",
}


def _quoted(*claims: Claim) -> tuple:
    """The claims with their :data:`QUOTES` sentence."""
    import dataclasses

    return tuple(dataclasses.replace(c, quote=QUOTES[c.id]) for c in claims)


_MECH_WHY = (
    "; testable only on a model that recalls (held-out accuracy ≥ 0.9), added in the claims audit: without "
    "it a model that never learned would read 'not reproduced'"
)
_MECH_TESTABLE = conds(("accuracy", ">=", NEAR_PERFECT))
_MECH_UNTESTABLE = (
    "the probed model does not recall (held-out accuracy below 0.9, the near-perfect level): the paper "
    "reads these structures off trained models that solve the task, so an untrained one can show nothing"
)
_SE_WHY = "three standard errors of the accuracies compared (sampling noise; worst-case binomial)"
_NEAR = "near-perfect = accuracy ≥ 0.9"

register(
    *_quoted(
        # §3.1, Thm 1 and Thm 2
        Claim(
            "002/Thm1",
            "the one-hot designed single-layer linear Mamba (D = N = V, expand 2, d_conv 2) solves MQAR "
            "with recall probability 1",
            "§3.1, Theorem 1; App. B, Eqs. 22–37",
            "recall probability = 1",
            Rule(
                why="probability 1 is exact, so a single miss is a counterexample; the proof assumes the queried key "
                "occurs once, which the values-only readout and zero padding both guarantee",
                reproduced=conds(("values_readout_accuracy", ">=", 1.0), ("zero_padding_accuracy", ">=", 1.0)),
            ),
            measure_thm1,
            S_CIRCUIT,
        ),
        Claim(
            "002/Fig6b",
            "the designed Thm 2 circuit's accuracy grows with D and N, and the minimal N for near-perfect "
            "recall falls as D grows (the D–N trade-off)",
            "§5.1, Fig. 6 column (b)",
            'no number given ("a clear tradeoff … for larger D, the minimal N required for perfect recall is lower")',
            Rule(
                why=f"monotone up to sampling noise ({_SE_WHY}); the trade-off needs N_90(D) in at least two D rows "
                f"and non-increasing ({_NEAR})",
                reproduced=conds(("largest_dip_se", "<=", Z), ("n90_nonincreasing", "true")),
                testable=conds(("defined_n90", ">=", 2)),
                untestable_why="fewer than two D rows reach near-perfect recall on this grid, so no trade-off can show",
            ),
            measure_fig6b,
            S_CIRCUIT,
        ),
        Claim(
            "002/Thm2",
            "with JL embeddings the designed circuit solves MQAR with high probability at D, N = O(log V): "
            "fixed (D, N) keep recall while V grows far beyond D",
            "§3.1, Theorem 2; App. B, Eqs. 38–58",
            'no number given ("D, N = O(log V) … with high probability")',
            Rule(
                why="high probability read as perfect recall (≥ 0.99, δ = 0.01) at every V of the sweep, for V at least "
                "ten times D so that D ≪ V (a circuit needing D ∝ V would fail)",
                reproduced=conds(("best_cell_min_accuracy", ">=", PERFECT)),
                testable=conds(("largest_V_over_D", ">=", 10)),
                untestable_why="the sweep never reaches V ≥ 10 D, so it cannot separate O(log V) from O(V)",
            ),
            measure_thm2,
            S_THEORY,
        ),
        Claim(
            "002/Lemma1",
            "where N < D < V and ε_v + ε_k + N_f ε_v ε_k < ½ (ε = √(c log V / dim), c = 4), the "
            "designed single-layer circuit recalls perfectly",
            "§4, Lemma 1, Eq. 14; App. D, Eqs. 65–76",
            "no number given (a sufficient condition; App. D's statement, Eq. 65, prints ε_v + 2ε_k + 2N_f ε_v ε_k < 1)",
            Rule(
                why="a sufficient condition promises perfect recall, so one miss where it holds refutes it; it is "
                "tested only inside the lemma's own domain N < D < V",
                reproduced=conds(("accuracy", ">=", 1.0)),
                testable=conds(("in_domain", "true"), ("condition_holds", "true")),
                untestable_why="the tested point lies outside N < D < V or does not satisfy the condition",
            ),
            measure_lemma1,
            S_CIRCUIT,
        ),
        # §4: laws
        Claim(
            "002/Eq15",
            "for N_f ≫ N, D, Eq. 77 reduces to p ≈ Φ(√(2ND/N_f))^{V/2}",
            "§4, Theorem 3, Eq. 15; App. D, Eq. 78",
            "Φ(√(2ND/N_f))^{V/2} (Eqs. 15, 78)",
            Rule(
                why="deep in the limit (N_f = 10⁴ ≫ N = D = 32) the dropped terms (3D + 3N)/(2N_f) are ≈ 1 % of the "
                "variance, so the true limit's log p agrees with Eq. 77 within 5 %; a wrong constant under the root "
                "gives an order-one disagreement",
                reproduced=conds(("printed_log_ratio", ">=", 0.95), ("printed_log_ratio", "<=", 1.05)),
                erratum=conds(("consistent_log_ratio", ">=", 0.95), ("consistent_log_ratio", "<=", 1.05)),
            ),
            lambda: measure_limit(1024, 10**4, 32, 32),
            S_THEORY,
        ),
        Claim(
            "002/Remark2",
            "a Λ-layer simplified Mamba solves MQAR with p ≈ Φ(√(2ΛND/N_f))^{V/2}",
            "App. E.1, Remark 2",
            "Φ(√(2ΛND/N_f))^{V/2}",
            Rule(
                why="Remark 2 is Eq. 77 with N → ΛN (Theorem 4) taken to the N_f ≫ N, D limit; the same 5 % tolerance "
                "as Eq. 15",
                reproduced=conds(("printed_log_ratio", ">=", 0.95), ("printed_log_ratio", "<=", 1.05)),
                erratum=conds(("consistent_log_ratio", ">=", 0.95), ("consistent_log_ratio", "<=", 1.05)),
            ),
            lambda: measure_limit(1024, 10**4, 32, 16, layers=2),
            S_THEORY,
        ),
        Claim(
            "002/Thm3-Vmax",
            "the scaling law bounds the largest perfectly recallable vocabulary, and the bound is tight and predictive",
            'Abstract; §4, Theorem 3 (Eq. 77); §5.1 ("a lower bound rather than a direct predictor")',
            'no number given ("an upper bound on the vocabulary size … this bound is tight and predictive")',
            Rule(
                why="Eq. 77's V_max (δ = 0.01) must not exceed the designed circuit's measured largest V with perfect "
                "recall (the lower-bound reading of §5.1), and tight means within one sweep step (×2); cells where "
                "the law predicts nothing, or the sweep cannot decide, cannot test it",
                reproduced=conds(("lower_bound_fraction", ">=", 1.0), ("tight_within_2x", "true")),
                partially=conds(("lower_bound_fraction", ">=", 1.0)),
                testable=conds(("informative_cells", ">=", 1)),
                untestable_why="no cell of the sweep has a positive prediction that the swept V range can bracket",
            ),
            measure_vmax,
            S_THEORY,
        ),
        Claim(
            "002/Remark1",
            "the number of facts the single-layer circuit recalls grows linearly in D·N (DN ≳ 2N_f n_σ², "
            "Eq. 17: DN = Ω(N_f log(V/δ)))",
            "§4, Remark 1, Eq. 17",
            "DN ≳ 2 N_f n_σ², n_σ = Φ⁻¹(1 − 2δ/V); DN ≳ 4 N_f log(V/2δ)",
            Rule(
                why="linear in DN: the log-log slope of the facts recalled against DN lies within 0.8–1.25 (the band "
                "declared before the data: it excludes a square root, 0.5, and a quadratic, 2, with room), at both the "
                "50 % and the 90 % accuracy level, for the designed Thm 2 circuit the remark is derived for; the fit's "
                "95 % t-intervals are shown, not judged. (An earlier version applied the band to the interval bounds, "
                "a stricter form chosen after seeing the data; reverted to the declared point-estimate form.)",
                reproduced=conds(
                    ("slope_50", ">=", 0.8), ("slope_50", "<=", 1.25), ("slope_90", ">=", 0.8), ("slope_90", "<=", 1.25)
                ),
                testable=conds(("fit_points", ">=", 4)),
                untestable_why="fewer than four (D, N) cells with an uncensored facts count: no slope with an interval",
            ),
            measure_remark1,
            S_THEORY,
        ),
        Claim(
            "002/AppD-phase-transition",
            "accuracy over (D, N) shows a large domain ≈ 1, a large domain ≈ 0 and a "
            "narrow transition between them (a phase transition, sharper for larger V)",
            'App. D, "Phase transitions"',
            "no number given",
            Rule(
                why="narrow = the 10 %→90 % accuracy band spans at most one doubling of DN in each D column where both "
                "domains appear",
                reproduced=conds(("widest_band_octaves", "<=", 1.0)),
                trained=True,
            ),
            not_run="the paper-sized Fig. 6(c) grids, where V = 512 and 1024 make the (Φ)^{V/2} step sharp: "
            "`python -m mamba_recall.experiments.ch2_scaling --preset paper --device cuda --parts grid` (≈ 45 GPU-"
            "minutes on one H100, estimated; the ci grid at V = 64 has no D column with both a ≈ 0 and a ≈ 1 domain)",
            section=S_SCALING,
        ),
        Claim(
            "002/AppD-L-independence",
            "with key–value selective embeddings the recall capacity depends on N_f and not on the context length L",
            'App. D, "Key-value selection mechanism"',
            "no number given",
            Rule(
                why="independent of L = accuracy at fixed (V, N_f, D, N) equal within three standard errors as L grows "
                "fourfold",
                reproduced=conds(("largest_gap_se", "<=", Z)),
                trained=True,
            ),
            not_run="an L sweep, not yet a part of the runner: trained simplified models at (V, N_f, D, N) = "
            "(512, 16, 32, 8) for L ∈ {64, 128, 256}, 3 seeds, 2000 steps (≈ 1–2 CPU-hours; the attention form "
            "costs ∝ L²)",
            section=S_SCALING,
        ),
        # §3.2: mechanism
        Claim(
            "002/Eq10",
            "the designed circuit's G_kq is I_V in the block (x_τ rows, x_(t−1) columns): G_kq ≈ (0 0; I 0)",
            "§3.2, Eq. 10",
            "G_kq ≈ (0 0; I_V 0) with ξ = (x_(t−1); x_t)",
            Rule(
                why="for designed weights the block structure is exact, so all of ‖G_kq‖² must sit in the printed block; "
                "the query-key matching of Eq. 7 puts it in the transposed block (stored key x_(τ−1), query x_t)",
                reproduced=conds(("printed_layout_share", ">=", 0.999)),
                erratum=conds(("corrected_layout_share", ">=", 0.999)),
            ),
            measure_eq10,
            S_MECH,
        ),
        Claim(
            "002/Fig2",
            "in a trained linear Mamba G_kq is non-zero only on the (stored key x_(τ−1), query x_t) block "
            "and G_vv only on the stored value x_τ; all other entries ≈ 0",
            "§3.2, Eq. 10, Fig. 2; App. C.1, Fig. 9",
            'no number given ("satisfy this structure almost precisely … all other matrix entries are ≈ 0")',
            Rule(
                why="≈ 0 elsewhere read as at least 90 % of the Frobenius energy in the predicted block" + _MECH_WHY,
                reproduced=conds(("kq_block_share", ">=", 0.9), ("vv_half_share", ">=", 0.9)),
                testable=_MECH_TESTABLE,
                untestable_why=_MECH_UNTESTABLE,
                trained=True,
            ),
            measure_fig2,
            S_MECH,
        ),
        Claim(
            "002/Fig2-selectivity",
            "the trained embeddings are key–value selective: inside the predicted blocks the "
            "key × key (value × value) part dominates, with a diagonal (E_k ⊥ E_v)",
            '§3.2 ("more complex patterns than ≈ I_V … responsible for key and value selectivity"); App. D, Fig. 2',
            "no number given",
            Rule(
                why="dominates = at least 80 % of the energy of the columns the loss trains, and a diagonal: the column "
                "argmax on the diagonal for 90 % of keys and values" + _MECH_WHY,
                reproduced=conds(
                    ("kk_share", ">=", 0.8),
                    ("vv_share", ">=", 0.8),
                    ("key_diag_hit", ">=", 0.9),
                    ("value_diag_hit", ">=", 0.9),
                ),
                testable=_MECH_TESTABLE,
                untestable_why=_MECH_UNTESTABLE,
                trained=True,
            ),
            measure_selectivity,
            S_MECH,
        ),
        Claim(
            "002/Fig3",
            "projected back to vocabulary space the trained state is the ideal key → value table, H''_t ≈ H_t",
            "§3.2, Eq. 13, Fig. 3; App. C.3",
            "no number given (visual)",
            Rule(
                why="H''_t ≈ H_t on the values × keys block the figure draws: each fact's column peaks at its value "
                "(95 % of facts) and the fact entries outrank the rest of the block (AUROC ≥ 0.95)" + _MECH_WHY,
                reproduced=conds(("fact_hit", ">=", 0.95), ("auroc", ">=", 0.95)),
                testable=_MECH_TESTABLE,
                untestable_why=_MECH_UNTESTABLE,
                trained=True,
            ),
            measure_fig3,
            S_MECH,
        ),
        Claim(
            "002/Fig4",
            "the implicit attention B_τ·C_t of a trained model approximates the ideal map: each query "
            "attends to the position after its key",
            "§3.2, Fig. 4",
            "no number given (visual)",
            Rule(
                why="approximates the ideal map = the row maximum sits where the ideal map's single 1 is, for 95 % of "
                "query rows" + _MECH_WHY,
                reproduced=conds(("peak_hit", ">=", 0.95)),
                testable=_MECH_TESTABLE,
                untestable_why=_MECH_UNTESTABLE,
                trained=True,
            ),
            measure_fig4,
            S_MECH,
        ),
        Claim(
            "002/Fig5",
            "Conv1D copies values (main diagonal) and shifts keys (second diagonal)",
            "§3.2, Fig. 5",
            'no number given ("dominant main diagonal … dominant second diagonal")',
            Rule(
                why="dominant diagonal = the argmax on that diagonal in 90 % of value (key) positions" + _MECH_WHY,
                reproduced=conds(("value_copy", ">=", 0.9), ("key_shift", ">=", 0.9)),
                testable=_MECH_TESTABLE,
                untestable_why=_MECH_UNTESTABLE,
                trained=True,
            ),
            measure_fig5,
            S_MECH,
        ),
        # §5.1: Fig. 6, Fig. 12
        Claim(
            "002/Fig6ab",
            "the theory (Thm 3's Eq. 77, the analysis of the designed construction) is a lower bound on what the "
            "construction recalls rather than a direct predictor: wherever it promises facts, the circuit recalls at least "
            "as many",
            "§5.1, Fig. 6 columns (a), (b)",
            'no number given ("should be considered a lower bound rather than a direct predictor")',
            Rule(
                why="a lower bound holds wherever it promises something: at every (D, N) cell and accuracy level (50 %, 90 "
                "%) where Eq. 77 promises at least one fact, the designed circuit recalls at least that many (N_f* by "
                "bisection); 90 % of those is a partial bound. Changed in the verdict audit (issue 27), for the paper's "
                "reason, not for our numbers: the earlier rule read the V = 64 ci grid, where Eq. 77 predicts below "
                "chance in most cells, so a model that is always wrong met the 'bound' in 75 % of them; a cell where Eq. "
                "77 promises nothing bounds nothing and is left out, the strongest committed evidence (the V = 8192 "
                "designed-capacity bundle) is read, and an always-wrong model is the null control. The sentence gives the "
                "construction as the theory's reason for being a lower bound (a construction 'not necessarily optimal "
                "compared to the trained variant'): its trained half is 002/Fig6bc. Eq. 77 is Thm 3 itself; column (a) "
                "plots its limit Eq. 15, whose printed constant is a separate claim (002/Eq15)",
                reproduced=conds(("lower_bound_fraction", ">=", 1.0)),
                partially=conds(("lower_bound_fraction", ">=", 0.9)),
                testable=conds(("informative_pairs", ">=", 1)),
                untestable_why="Eq. 77 promises no fact at any cell and level of the bundle: there is no bound to test",
            ),
            measure_fig6ab,
            S_SCALING,
        ),
        Claim(
            "002/Fig6bc",
            "trained models recall at least as well as the designed construction",
            '§5.1 ("not necessarily optimal compared to the trained variant"), Fig. 6 columns (b), (c)',
            "no number given",
            Rule(
                why=f"at least as well in every cell, up to {_SE_WHY}; a majority of cells is partial",
                reproduced=conds(("trained_ge_designed_fraction", ">=", 1.0)),
                partially=conds(("trained_ge_designed_fraction", ">=", 0.5)),
                trained=True,
            ),
            measure_fig6bc,
            S_SCALING,
        ),
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
            S_SCALING,
        ),
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
            not_run="the full-model grid: `python -m mamba_recall.experiments.ch2_scaling --preset paper --device cuda "
            "--parts full` (3 regimes × 10 cells × 3 seeds × 10 000 steps, the paper's step count; ≈ 1–1.5 GPU-hours "
            "on one H100 at an estimated 3–5 ms per step, or ≈ 25–40 CPU-hours). The ci bundle's two 300-step "
            "CPU cells are a smoke test of the code path, not a measurement",
            section=S_SCALING,
        ),
        Claim(
            "002/Fig6-anchor",
            "a 1-layer Mamba perfectly solves MQAR with V_k = V/2 = 512 at N = 32, D = 64",
            "App. I (Fig. 6, row (iii))",
            "perfectly solves MQAR with V_k = V/2 = 512 at N = 32, D = 64",
            Rule(
                why="perfect = accuracy ≥ 0.99 for both the trained simplified and the full model",
                reproduced=conds(("min_accuracy", ">=", PERFECT)),
                trained=True,
            ),
            not_run="regime R2 at paper size: `python -m mamba_recall.experiments.ch2_scaling --preset paper --device cuda "
            "--parts grid full` (≈ 2 GPU-hours estimated; the anchor cell alone: 10 seeds × 3000 steps simplified "
            "and 3 seeds × 10 000 steps full, ≈ 3–4 CPU-hours)",
            section=S_SCALING,
        ),
        Claim(
            "002/Fig12",
            "the full single-layer Mamba always performs at least as well as the simplified model, with "
            "similar scaling trends in D and N",
            "App. H.1, Fig. 12",
            'no number given ("full model always perform better")',
            Rule(
                why=f"at least as well in every compared cell, up to {_SE_WHY}",
                reproduced=conds(("full_ge_simplified_fraction", ">=", 1.0)),
                trained=True,
            ),
            not_run="the same full-model run as Fig. 6(d): `python -m mamba_recall.experiments.ch2_scaling --preset paper "
            "--device cuda --parts full` (≈ 1–1.5 GPU-hours estimated)",
            section=S_SCALING,
        ),
        # §5.2, App. G: depth and repetition
        Claim(
            "002/Fig7",
            "the recall of a Λ-layer simplified Mamba is determined by N_eff = ΛN alone",
            "§5.2, Fig. 7; App. E.1, Theorem 4 (= App. F.1, Theorem 6)",
            'no number given ("uniquely determined by ΛN")',
            Rule(
                why=f"cells of equal ΛN agree within {_SE_WHY}; partially: adding layers never loses accuracy beyond "
                "that noise",
                reproduced=conds(("spread_equal_neff_se", "<=", Z), ("depth_drop_se", "<=", Z)),
                partially=conds(("depth_drop_se", "<=", Z)),
                testable=conds(("equal_neff_groups", ">=", 1), ("accuracy_span_se", ">", Z)),
                untestable_why="no two cells of the grid share the same ΛN, or the grid's accuracies all sit within "
                "noise of each other (a model at chance passes 'determined by ΛN' too: the null control showed it)",
                trained=True,
            ),
            measure_fig7,
            S_SCALING,
        ),
        Claim(
            "002/Fig10-Nk2",
            "with keys repeated twice one layer fails (accuracy ≈ bounded by the level of guessing one of the two stored "
            "values) and two layers solve the task perfectly",
            "App. G.2, Fig. 10; Remarks 3, 4",
            "1 layer ≈ ≤ 1/2; 2 layers perfect",
            Rule(
                why=f"bounded by the guessing level within {_SE_WHY}; perfect = ≥ 0.99; partially: one layer at its ceiling "
                "and two layers clearly better. The ceiling is the paper's own reason for ½ ('guessing one out of N_k "
                "options'), computed on the generator the models are trained on (the earlier chunks' values can repeat "
                "the last one: ≈ 0.508 at V = 128, not 0.5), changed in the verdict audit (issue 27); a reader at that "
                "level at every depth is the null control",
                reproduced=conds(("one_layer_excess_se", "<=", Z), ("two_layer_accuracy", ">=", PERFECT)),
                partially=conds(("one_layer_excess_se", "<=", Z), ("two_layer_gain_se", ">=", Z)),
                trained=True,
            ),
            lambda bundle: measure_fig10(bundle, 2),
            S_SCALING,
        ),
        Claim(
            "002/Fig10-Nk3",
            "with keys repeated three times one layer is bounded by the level of guessing one of the three stored values "
            "(≈ 1/3), two layers do not reach perfect recall and three layers do",
            "App. G.2, Fig. 10",
            "1 layer ≈ 1/3; 2 layers not perfect; 3 layers perfect",
            Rule(
                why=f"bounded by the guessing level within {_SE_WHY}; perfect = ≥ 0.99, so 'does not achieve perfect "
                "performance' = below 0.99. Changed in the verdict audit (issue 27), for the paper's reasons: the ceiling "
                "is 'guessing one out of N_k options' computed on the generator the models are trained on (≈ 0.349 at "
                "N_k = 3, V = 128, where a repeated value makes the guess right more often than 1/3), not 1/3; and the "
                "sentence's 'the 2-layer model does not achieve perfect performance' was not tested before. A reader at "
                "the guessing level at every depth is the null control",
                reproduced=conds(
                    ("one_layer_excess_se", "<=", Z),
                    ("two_layer_accuracy", "<", PERFECT),
                    ("three_layer_accuracy", ">=", PERFECT),
                ),
                trained=True,
            ),
            measure_fig10_nk3,
            S_SCALING,
            not_run=_NK3_NOT_RUN,
        ),
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
            S_SCALING,
        ),
        Claim(
            "002/Fig11-Nq3",
            "with queries repeated three times one layer is not perfect and two or three layers recall perfectly",
            "App. G.3, Fig. 11",
            "1 layer < 1; 2 and 3 layers perfect",
            Rule(why="perfect = ≥ 0.99", reproduced=conds(("two_layer_accuracy", ">=", PERFECT)), trained=True),
            measure_fig11_nq3,
            S_SCALING,
            not_run=_NQ3_NOT_RUN,
        ),
        # App. K: Tab. 10
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
            S_SCALING,
        ),
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
            S_SCALING,
        ),
        # §5.2, App. E.2, F.2: heads
        Claim(
            "002/Thm5-algebra",
            "with shared B, C (MVA) M heads are exactly one head with N' = N; MHA heads that each "
            "read the full value vector are exactly one head with N' = MN",
            "App. F.2, Lemma 2 (Eq. 127), Lemma 5 (Eqs. 129–131)",
            "exact equivalence",
            Rule(
                why="float32 rounding stays below 1e-5 of the logit scale; a different function differs at order 1",
                reproduced=conds(("mva_rel_diff", "<=", 1e-5), ("mha_rel_diff", "<=", 1e-5)),
            ),
            measure_thm5_algebra,
            S_HEADS,
        ),
        Claim(
            "002/Fig8-shared",
            "with MQA, MKA or MVA heads accuracy is the same as with one head (N' = N)",
            "§5.2, Fig. 8 (= Fig. 13); App. E.2, Theorem 5; Lemmas 2–4",
            'no number given ("similar accuracy as in the single-headed SSM")',
            Rule(
                why=f"the same = |acc(M, N) − acc(1, N)| within {_SE_WHY} for all three patterns; partially: none of "
                "them gains from heads beyond that noise",
                reproduced=conds(("flat_patterns", ">=", 3)),
                partially=conds(("largest_gain_se", "<=", Z)),
                testable=conds(("accuracy_span_se", ">", Z)),
                untestable_why="the grid's accuracies all sit within noise of each other, so no change with M could "
                "show (a model at chance passes 'the same accuracy' too: the null control showed it)",
                trained=True,
            ),
            measure_fig8_shared,
            S_HEADS,
        ),
        Claim(
            "002/Fig8-MHA",
            "MHA accuracy increases with the number of heads at fixed (D, N)",
            "§5.2, Fig. 8 (= Fig. 13); Theorem 5; Lemma 5",
            'no number given ("improve recall by splitting into M heads")',
            Rule(
                why=f"increases = acc(M_max, N) above acc(1, N) by more than {_SE_WHY}, at every N where one head is "
                "below near-perfect",
                reproduced=conds(("smallest_gain_se", ">=", Z)),
                testable=conds(("room_cells", ">=", 1)),
                untestable_why="one head is already near-perfect at every N of the grid: no room to gain",
                trained=True,
            ),
            measure_fig8_mha,
            S_HEADS,
        ),
        Claim(
            "002/Thm5-MHA-MN",
            "an M-head MHA model with state N matches a single head with state MN, over the grid",
            "App. E.2, Theorem 5; App. F.2, Lemma 5",
            "N' = MN",
            Rule(
                why=f"matches = |acc_MHA(M, N) − acc(1, MN)| within {_SE_WHY} at every (M, N) with MN on the grid",
                reproduced=conds(("worst_gap_se", "<=", Z)),
                testable=conds(("pairs", ">=", 1), ("accuracy_span_se", ">", Z)),
                untestable_why="no (M, N) of the grid has M·N on the grid, or its MHA accuracies all sit within noise of "
                "each other (a model at chance 'matches' too: the null control showed it)",
                trained=True,
            ),
            measure_thm5_mn,
            S_HEADS,
        ),
        Claim(
            "002/Fig15",
            "for MHA, more heads shrink the variance of the output entries that carry the SSM noise (Lemma 5, Eq. 132: "
            "the wrong and the correct entries)",
            "App. H.2, Figs. 14–15; App. F.2, Lemma 5 (Eq. 132)",
            "no number given",
            Rule(
                why="shrinks = a rank correlation with M significant at one-sided p ≤ 0.05 (exact permutation test) at "
                "every N where one head is not yet perfect, for both entries Lemma 5 names; partially: for one of them at "
                "some N; a rank test over n values of M reaches p ≤ 0.05 only if n ≥ 4. Changed in the verdict audit "
                "(issue 27), for the paper's reasons: the earlier rule read the empty entries, whose variance σ_o² + N_f "
                "σ_o² σ̃_o² heads barely change (Eq. 132), and asked for no effect in the shared patterns, which the "
                "quoted sentence does not state (they are shown, not judged)",
                reproduced=conds(
                    ("wrong_significant_fraction", ">=", 1.0), ("correct_significant_fraction", ">=", 1.0)
                ),
                partially=conds(("either_significant_fraction", ">", 0.0)),
                testable=conds(("n_M", ">=", 4), ("live_cells", ">=", 1)),
                untestable_why="fewer than 4 head counts M (or no N where one head is not yet perfect): no rank test can "
                "reach p ≤ 0.05",
                trained=True,
            ),
            measure_fig15,
            S_HEADS,
        ),
    )
)


# ------------------------------------------------------------- App. G: the designed circuit on repetition
def measure_remark(
    kind: str, V: int, D: int, N: int, Nf: int, n_seq: int, reps: int = 2, seed: int = 0, device=None
) -> Measurement:
    """Remarks 3 and 5: the designed single-layer Thm 2 circuit (values-only readout) on repeating keys
    (prediction :func:`guess_level`: the argmax of the N_k superposed stored values, ≈ 1/N_k) or repeating queries
    with value tokens after every query (prediction (1/N_q) Σ_i 1/i: the i-th occurrence ties among i values; 3/4 for N_q = 2)."""
    from ..theory.hashing_circuit import designed_accuracy

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


register(
    *_quoted(
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
            S_SCALING,
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
            S_SCALING,
        ),
    )
)
