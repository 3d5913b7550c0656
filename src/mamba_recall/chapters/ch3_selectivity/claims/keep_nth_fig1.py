"""Chapter 3, §4.2 of paper 003, checked in ``book/03_selectivity/02_keep_nth.ipynb``: Fig. 1's forgetting and
retaining of a trained Mamba (its e^{−λΔ} histograms, :func:`decay_summary`, :func:`fig1_stats`, :func:`fig1_tables`)
and its claims (:data:`FIG1_RIGHT`, :data:`FIG1_LEFT`). Part of :mod:`.keep_nth`, which registers them after the
KEEP n-TH claims.

The trained claims read the committed runner bundles per seed and carry null controls, as the package docstring
(:mod:`mamba_recall.chapters.ch3_selectivity.claims`, the "module docstring" the rules and docstrings below cite) says.
"""

from __future__ import annotations

import numpy as np

from dataclasses import replace

from mamba_recall.claims.core import Claim, Control, Evidence, Measurement, NotRun, Rule, across_seeds, conds
from ._common import RANGES, RUN_KEEP, _summary

#: this module's book section (its claims are judged on that page)
SECTION = "03_selectivity/02_keep_nth"


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
    m = across_seeds([one(tr, un) for tr, un in stats], names, bounds=RANGES)
    null = across_seeds([one(un, un) for _, un in stats], names, bounds=RANGES)
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
    SECTION,
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
    ``pipelines.keep_nth.untrained_decay_table``)."""
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
            "(T, d, N, model, seed); make it with chapters.ch3_selectivity.pipelines.keep_nth.untrained_decay_table(bundle)."
        )
    return stats.sort_values([*FIG1_COLUMNS, "weights"]).reset_index(drop=True)


def fig1_tables(bundle, backend: str = "auto") -> dict:
    """Fig. 1's three tables for ``bundle`` (a KEEP n-TH bundle of any preset): ``decay`` (trained, with a ``seed``
    column), ``decay_untrained`` (the bundle's own when it has one, else
    :func:`~mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth.untrained_decay_table`, computed here in seconds) and ``fig1``
    (:func:`fig1_stats` of the two)."""
    from mamba_recall.chapters.ch3_selectivity.pipelines.keep_nth import untrained_decay_table

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
    the same format: ``pipelines.keep_nth.untrained_decay_table(bundle)``). The untrained model is also the null
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
            "check('003/Fig1-left', untrained_decay_table(claim_evidence('003/Fig1-left'))) "
            "(untrained_decay_table: chapters.ch3_selectivity.pipelines.keep_nth)"
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
    combined = across_seeds([one(s, "trained") for s in seeds], names, bounds=RANGES)
    null = across_seeds([one(s, "untrained") for s in seeds], names, bounds=RANGES)
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
    SECTION,
    reads="ch3_keep_nth",
    not_run=RUN_KEEP,
)
