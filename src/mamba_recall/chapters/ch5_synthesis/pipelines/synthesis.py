r"""Chapter 5: the four papers' theories of Mamba's recall, each turned into a prediction for the same measurements
(the ``searches`` and ``probes`` tables of :mod:`mamba_recall.chapters.ch5_synthesis.runners.capacity`).

* **Paper 002** (hashing, scaling laws): capacity grows with the product D·N. :func:`mamba_recall.theory.capacity.kappa_at` inverts each
  law's per-query success probability for the largest κ with p ≥ θ; :func:`power_fit` fits :math:`\log\kappa^* = \alpha\log(DN) + c` (prediction α = 1, Remark 1 /
  Eq. 17: D·N ≥ 2 N_f n_σ²), :func:`two_factor_fit` fits :math:`\log\kappa^* = a\log D + b\log N + c`
  (D·N: a = b = 1). Λ layers act as N_eff = Λ N (Thms 4/6): :func:`layer_ratios`.
* **Paper 003** (constructions): Thm 2 writes one key per state column, so a model with N = κ columns and width
  d = O(κ + log|V|) recalls κ pairs: a sufficient size, read for trained models as κ*₉₀ ≥ N in the cells wide enough
  for the construction (:func:`thm2_cells`, :func:`kappa_with_bounds`).
* **The training budget**: :func:`probe_at_cap` (a probe that ran every step short of the target),
  :func:`probe_unconverged` (at the cap, or stopped on the ≈ 1/κ plateau before the transition) and
  :func:`budget_by_cell`; the order of the queries in a run's own data (:func:`query_slot_by_pair`, from the
  generator its config names).
* **Paper 004** (primacy and recency): near capacity the serial-position profile is a U: :func:`u_shape` reads
  primacy (first quarter minus middle) and recency (last quarter minus middle) from a probe's recall by pair order.
* **Paper 000** (gradient dynamics): Δ opens at key tokens: the probes' ``delta0_key_ratio`` (Δ at keys over Δ
  elsewhere, layer 0) against the untrained twin's.

Intervals are 95 % t-intervals, over seeds (:func:`mamba_recall.runstore.mean_interval`) or regression residuals
(:func:`mamba_recall.runstore.regression_interval`, :func:`mamba_recall.runstore.least_squares`) as each function says.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from mamba_recall.runstore import least_squares, mean_interval, regression_interval

__all__ = [
    "cell_capacity",
    "edge_probes",
    "evidence_bundles",
    "layer_ratios",
    "power_fit",
    "two_factor_fit",
    "u_shape",
]


def _uncensored(searches: pd.DataFrame, threshold: float) -> tuple[pd.DataFrame, int]:
    col = f"kappa{round(threshold * 100)}"
    ok = searches[col].notna()
    return searches[ok].assign(kappa=searches.loc[ok, col].astype(float)), int((~ok).sum())


def power_fit(searches: pd.DataFrame, threshold: float = 0.5, layers: int = 1) -> dict:
    """Least squares :math:`\\log\\kappa^*_\\theta = \\alpha\\log(DN) + c` over every uncensored search of
    ``layers`` (each seed a point): α, its standard error and 95 % t-interval (n − 2 dof), the intercept, n, and
    how many searches were censored (left out: their κ* is outside the ladder)."""
    sub, censored = _uncensored(searches[searches.layers == layers], threshold)
    n = len(sub)
    if n < 3 or sub.eval("D * N").nunique() < 2:
        return {"alpha": float("nan"), "alpha_ci": (float("nan"),) * 2, "n": n, "censored": censored}
    r = regression_interval(np.log(sub.D * sub.N), np.log(sub.kappa))
    return {
        "alpha": r["slope"],
        "alpha_se": r["slope_se"],
        "alpha_ci": r["slope_ci"],
        "intercept": r["intercept"],
        "r2": r["r2"],
        "n": n,
        "censored": censored,
    }


def two_factor_fit(searches: pd.DataFrame, threshold: float = 0.5, layers: int = 1) -> dict:
    """Least squares :math:`\\log\\kappa^* = a\\log D + b\\log N + c` (each uncensored search a point): a and b
    with standard errors and 95 % t-intervals (n − 3 dof; :func:`mamba_recall.runstore.least_squares`)."""
    sub, censored = _uncensored(searches[searches.layers == layers], threshold)
    n = len(sub)
    nan2 = (float("nan"), float("nan"))
    if n < 4 or sub.D.nunique() < 2 or sub.N.nunique() < 2:
        return {"a": float("nan"), "b": float("nan"), "a_ci": nan2, "b_ci": nan2, "n": n, "censored": censored}
    fit = least_squares({"a": np.log(sub.D), "b": np.log(sub.N)}, np.log(sub.kappa))
    return {
        "a": fit["coef"]["a"],
        "b": fit["coef"]["b"],
        "a_se": fit["se"]["a"],
        "b_se": fit["se"]["b"],
        "a_ci": fit["ci"]["a"],
        "b_ci": fit["ci"]["b"],
        "n": n,
        "censored": censored,
    }


def cell_capacity(searches: pd.DataFrame, threshold: float = 0.5) -> pd.DataFrame:
    """Per (layers, D, N): the geometric mean κ*_θ over uncensored seeds with a 95 % t-interval on log κ, the seeds
    and the censored count."""
    col = f"kappa{round(threshold * 100)}"
    rows = []
    for (layers, D, N), g in searches.groupby(["layers", "D", "N"]):
        k = g[col].dropna().astype(float)
        st = mean_interval(np.log(k.to_numpy()).tolist())  # the book's one mean and t-interval, on log κ
        rows.append(
            {
                "layers": layers,
                "D": D,
                "N": N,
                "DN": D * N,
                "kappa": math.exp(st["mean"]),
                "kappa_ci_low": math.exp(st["ci_low"]),
                "kappa_ci_high": math.exp(st["ci_high"]),
                "per_seed": " ".join(f"{x:.2f}" for x in k),
                "n_seeds": st["n"],
                "censored": int(g[col].isna().sum()),
            }
        )
    return pd.DataFrame(rows)


def layer_ratios(searches: pd.DataFrame, threshold: float = 0.5) -> pd.DataFrame:
    """For each 2-layer cell (D, N) with a 1-layer cell (D, 2N) in the grid (Thms 4/6: N_eff = Λ N), per seed
    log₂ of κ*(2 layers, D, N) over κ*(1 layer, D, 2N)."""
    col = f"kappa{round(threshold * 100)}"
    s = searches.set_index(["layers", "D", "N", "seed"])[col]
    rows = []
    for (layers, D, N, seed), k2 in s.items():
        if layers != 2 or (1, D, 2 * N, seed) not in s.index:
            continue
        k1 = s[(1, D, 2 * N, seed)]
        ok = pd.notna(k2) and pd.notna(k1)
        rows.append(
            {
                "D": D,
                "N": N,
                "seed": seed,
                "kappa_2layers": k2,
                "kappa_1layer_2N": k1,
                "log2_ratio": math.log2(float(k2) / float(k1)) if ok else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def pair_profile(by_pair: str) -> np.ndarray:
    """A probe's recall by the pair's order in the context, as the probes table stores it (κ numbers separated by
    spaces, the first pair first), as an array of length κ."""
    return np.array([float(x) for x in by_pair.split()])


def profile_bins(acc, bins: int = 8) -> np.ndarray:
    """A recall profile of κ pairs on ``bins`` equal bins of relative position: pair i covers [i/κ, (i+1)/κ), bin j
    covers [j/bins, (j+1)/bins), and bin j is the mean of the pairs weighted by their overlap with it. Every profile
    fills every bin, whatever κ, so profiles of different κ pool without a bin holding only the larger κ's
    (plain bins of i/κ leave some bins empty when κ < bins). Shape (bins,)."""
    acc = np.asarray(acc, dtype=float)
    k = len(acc)
    edges_p, edges_b = np.arange(k + 1) / k, np.arange(bins + 1) / bins
    overlap = np.clip(
        np.minimum(edges_p[1:, None], edges_b[None, 1:]) - np.maximum(edges_p[:-1, None], edges_b[None, :-1]), 0, None
    )  # (κ, bins)
    return (overlap * acc[:, None]).sum(0) / overlap.sum(0)


#: The recall bands of :func:`u_by_recall`: beyond capacity (< 10 %, 10–30 %), at the edge (30–70 %), short of it
#: (70–90 %), below capacity (90–99 %), at the ceiling (≥ 99 %).
RECALL_BANDS = (0.0, 0.1, 0.3, 0.7, 0.9, 0.99, 1.0001)


def u_by_recall(probes: pd.DataFrame, searches: pd.DataFrame, bands=RECALL_BANDS, min_kappa: int = 4) -> pd.DataFrame:
    """Where a U would sit relative to capacity: every probe with κ ≥ ``min_kappa``, put in its recall band, with
    its :func:`u_shape` and its κ over its search's κ*₅₀. Per band: how many probes and searches, the median
    κ/κ*₅₀, and primacy and recency as a mean over **searches** (each search's probes in the band averaged first,
    so that a search with several probes in a band counts once) with the 95 % t-interval
    (:func:`mamba_recall.runstore.mean_interval`). Descriptive: the verdict on the U is H4's, at the edge probe."""
    keys = ["layers", "D", "N", "seed"]
    p = probes[probes.kappa >= min_kappa].merge(searches[[*keys, "kappa50"]], on=keys, how="left")
    shapes = [u_shape(pair_profile(s)) for s in p.by_pair]
    p = p.assign(
        primacy=[x["primacy"] for x in shapes],
        recency=[x["recency"] for x in shapes],
        over_capacity=p.kappa / p.kappa50,
        band=pd.cut(p.accuracy, list(bands), right=False),
    )
    rows = []
    for band, g in p.groupby("band", observed=True):
        per_search = g.groupby(keys)[["primacy", "recency"]].mean()
        row = {
            "recall": f"{band.left:.0%}–{min(band.right, 1):.0%}",
            "probes": len(g),
            "searches": len(per_search),
            "κ / κ*₅₀ (median)": float(g.over_capacity.median()),
        }
        for col in ("primacy", "recency"):
            st = mean_interval(per_search[col].tolist())
            row[col] = st["mean"]
            row[f"{col} 95 % CI"] = (st["ci_low"], st["ci_high"])
        rows.append(row)
    return pd.DataFrame(rows)


def budget_bound(probes: pd.DataFrame, max_steps: int) -> pd.DataFrame:
    """How much the step budget binds, per number of layers: the probes that ran all ``max_steps`` steps (stopped
    neither at the target recall nor on a plateau, so still learning when the budget ran out), as a count
    (``at_cap``) and a ``share``, and the median recall at κ = 4 (``recall_k4`` (a size every cell can hold by paper 003's construction once N ≥ 4)."""
    rows = []
    for layers, g in probes.groupby("layers"):
        at_cap = int((g.steps_run >= max_steps).sum())
        k4 = g[g.kappa == 4].accuracy
        rows.append(
            {
                "layers": int(layers),
                "probes": len(g),
                "at_cap": at_cap,
                "share": at_cap / len(g),
                "recall_k4": float(k4.median()) if len(k4) else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def query_slots(job_config: dict, kappa: int, n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The order of the queries against the order of the pairs, in the data a run trained and was evaluated on:
    ``n`` sequences drawn at ``kappa`` pairs from the generator ``job_config`` names (its variant, ``power_a`` and
    pad: :func:`~mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search.data_options`), with its V and
    L = L_per_kappa·κ. One row per query: ``sequence``, ``pair`` (the queried pair's place in the
    context, 0 = first written) and ``slot`` (its place among the κ queries, 0 = first asked)."""
    from mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search import data_options, pair_index
    from mamba_recall.tasks.mqar import IGNORE_INDEX, mqar

    inputs, labels = mqar(
        job_config["V"], kappa, job_config["L_per_kappa"] * kappa, n, seed, **data_options(job_config["data"]["task"])
    )
    rows, pos, pair = pair_index(inputs, labels, kappa)
    queried = (labels != IGNORE_INDEX).long()
    slot = (queried.cumsum(dim=1) - 1)[rows, pos]  # the query's rank among its sequence's queries
    return pd.DataFrame({"sequence": rows.numpy(), "pair": pair.numpy(), "slot": slot.numpy()})


def query_slot_by_pair(job_config: dict, kappa: int, n: int = 2000, seed: int = 0) -> dict:
    """Whether the queries' order depends on the pairs' order in a run's own data (:func:`query_slots`): the mean
    query slot of the pair at each place of the context (``mean_slot``, shape (κ,)), the generator's options, and
    the rank correlation of pair place and query slot within each sequence (both are orderings of the κ pairs),
    as its mean over the ``n`` sequences with the 95 % t-interval (``rho``, ``rho_ci``; 0 when the queries come in
    an order independent of the pairs'). Paper 004's U is drawn over the order in which pairs are written; where the
    query order follows it, the two orders are confounded."""
    from mamba_recall.chapters.ch5_synthesis.pipelines.capacity_search import data_options

    q = query_slots(job_config, kappa, n, seed)
    rho = q.groupby("sequence")[["pair", "slot"]].apply(lambda g: stats.spearmanr(g.pair, g.slot).statistic)
    st = mean_interval(rho.to_numpy(dtype=float).tolist(), bounds=(-1.0, 1.0))  # a rank correlation's range
    return {
        **data_options(job_config["data"]["task"]),
        "kappa": kappa,
        "L": job_config["L_per_kappa"] * kappa,
        "n": n,
        "mean_slot": q.groupby("pair").slot.mean().reindex(range(kappa)).to_numpy(),
        "rho": st["mean"],
        "rho_ci": (st["ci_low"], st["ci_high"]),
    }


#: the query order counts as independent of the pairs' where the rank correlation's whole 95 % interval lies
#: within ±this (a descriptive threshold of the page, declared with it; no verdict reads it)
INDEPENDENT_RHO = 0.05


def query_order_statement(job_config: dict, kappa: int = 16, n: int = 2000, seed: int = 0) -> str:
    """The page's sentence on the order of the queries in a run's data, every number computed from the run's own
    config (:func:`query_slot_by_pair`)."""
    r = query_slot_by_pair(job_config, kappa, n, seed)
    m, (lo, hi) = r["mean_slot"], r["rho_ci"]
    said = (
        f"the runs' generator (mqar variant '{r['variant']}', power_a {r['power_a']:g}, pad '{r['pad']}'; V = "
        f"{job_config['V']}, κ = {kappa}, L = {r['L']}, {n} sequences): mean query slot (0–{kappa - 1}) of each pair "
        f"from {m.min():.1f} to {m.max():.1f} (first pair {m[0]:.1f}, last {m[-1]:.1f}); rank correlation of pair "
        f"place and query slot {r['rho']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
    )
    independent = -INDEPENDENT_RHO <= lo and hi <= INDEPENDENT_RHO
    return said + (
        ": the queries' order does not depend on the pairs' order"
        if independent
        else ": later pairs are queried later, so the pairs' order is confounded with the queries' order"
    )


def probe_at_cap(probes: pd.DataFrame, steps: int, target: float) -> pd.Series:
    """Per probe, whether it stopped at the step cap: ran all ``steps`` steps without reaching ``target`` recall."""
    return (probes.steps_run >= steps) & (probes.accuracy < target)


#: a probe stopped by the plateau rule with recall at most this many times 1/κ sits on the pre-transition plateau
#: (the model guesses among the κ values in its context and has not yet learned which one): not converged
#: (declared 2026-12-04 on the open review, before any run at the long budget)
CHANCE_PLATEAU = 1.5


def probe_on_chance_plateau(probes: pd.DataFrame, steps: int, target: float) -> pd.Series:
    """Per probe, whether the plateau rule stopped it before the step cap short of ``target`` with recall at most
    :data:`CHANCE_PLATEAU`/κ: the ≈ 1/κ plateau that comes before the transition, not a converged capacity."""
    early = (probes.steps_run < steps) & (probes.accuracy < target)
    return early & (probes.accuracy <= CHANCE_PLATEAU / probes.kappa)


def probe_unconverged(probes: pd.DataFrame, steps: int, target: float) -> pd.Series:
    """Per probe, whether its training did not converge: at the step cap (:func:`probe_at_cap`) or stopped on the
    ≈ 1/κ plateau (:func:`probe_on_chance_plateau`). Every other probe converged: it reached ``target``, or the
    plateau rule stopped it above that plateau before the cap."""
    return probe_at_cap(probes, steps, target) | probe_on_chance_plateau(probes, steps, target)


KEYS = ["layers", "D", "N", "seed"]


def budget_by_cell(probes: pd.DataFrame, steps: int, target: float) -> pd.DataFrame:
    """Per (layers, D, N): the probes over every seed, how many stopped at the step cap (:func:`probe_at_cap`), how
    many did not converge (:func:`probe_unconverged`: at the cap or on the ≈ 1/κ plateau, the verdicts' count) and
    the share that converged."""
    p = probes.assign(at_cap=probe_at_cap(probes, steps, target), unconverged=probe_unconverged(probes, steps, target))
    g = p.groupby(["layers", "D", "N"]).agg(
        probes=("at_cap", "size"), at_cap=("at_cap", "sum"), unconverged=("unconverged", "sum")
    )
    g = g.reset_index().astype({"at_cap": int, "unconverged": int})
    return g.assign(converged_share=1 - g.unconverged / g.probes)


def jl_cells(searches: pd.DataFrame, V: int) -> pd.DataFrame:
    """The 1-layer searches inside paper 002's stated regime for Remark 1's law: D ≥ ln V and N ≥ ln V (the JL
    condition, "D, N ≳ log V")."""
    one = searches[searches.layers == 1]
    return one[(one.D >= np.log(V)) & (one.N >= np.log(V))]


def key_set_size(job_config: dict, kappa: int) -> int:
    """How many keys the runs' generator draws a sequence's κ keys from: ``kappa`` for paper 003's MQAR (keys from
    a key set of size κ, ``data.key_set`` ``"kappa"``), else zoology's [1, V/2), V/2 − 1 keys."""
    if (job_config.get("data") or {}).get("key_set") == "kappa":
        return int(kappa)
    return int(job_config["V"]) // 2 - 1


def thm2_cells(searches: pd.DataFrame, V: int, d_factor: float) -> pd.DataFrame:
    """The 1-layer searches whose width is enough for paper 003's Thm 2 construction at κ = N pairs:
    D ≥ ``d_factor`` · (N + log₂ V) (Thm 2's d = O(κ + log|V|), its constant taken as ``d_factor``)."""
    one = searches[searches.layers == 1]
    return one[one.D >= d_factor * (one.N + np.log2(V))]


def kappa_with_bounds(searches: pd.DataFrame, ladder, threshold: float) -> pd.Series:
    """κ*_θ of each search with a censored one read at its bound: below the ladder, one √2 step below its first
    rung; above it, its last rung (a lower bound)."""
    tag = round(threshold * 100)
    k = searches[f"kappa{tag}"].astype(float)
    cens = searches.get(f"censored{tag}", pd.Series([None] * len(searches), index=searches.index))
    low, high = ladder[0] / math.sqrt(2), float(ladder[-1])
    return k.where(k.notna(), np.where(cens == "above", high, low))


def probes_of_searches(probes: pd.DataFrame, searches: pd.DataFrame) -> pd.DataFrame:
    """The probes of the given searches (matched on layers, D, N, seed)."""
    return probes.merge(searches[KEYS].drop_duplicates(), on=KEYS, how="inner")


def layer_pair_searches(searches: pd.DataFrame) -> pd.DataFrame:
    """The searches :func:`layer_ratios` reads: each 2-layer search (D, N) with a 1-layer search (D, 2N) of the same
    seed, and that match."""
    have = set(map(tuple, searches[KEYS].to_numpy().tolist()))
    keep = set()
    for layers, D, N, seed in have:
        if layers == 2 and (1, D, 2 * N, seed) in have:
            keep |= {(2, D, N, seed), (1, D, 2 * N, seed)}
    mask = [tuple(r) in keep for r in searches[KEYS].to_numpy().tolist()]
    return searches[mask]


def delta_probes(probes: pd.DataFrame) -> pd.DataFrame:
    """The probes H5 reads: each search's edge probe (recall nearest 50 %, any κ) and its best probe with recall
    ≥ 90 %."""
    edge = edge_probes(probes, 0.5, min_kappa=2)
    best = probes[probes.accuracy >= 0.9].sort_values("accuracy").groupby(KEYS).tail(1)
    return pd.concat([edge, best]).drop_duplicates(subset=[*KEYS, "kappa"])


def u_shape(by_pair) -> dict:
    """Primacy and recency of a recall profile by pair order (κ ≥ 4): the mean recall of the first quarter of the
    pairs (at least one) minus that of the middle, and of the last quarter minus the middle."""
    acc = np.asarray(by_pair, dtype=float)
    k = len(acc)
    if k < 4:
        raise ValueError(f"a U needs a first quarter, a middle and a last quarter: κ ≥ 4 pairs, got {k}.")
    q = max(1, k // 4)
    mid = acc[q : k - q].mean()
    return {"primacy": float(acc[:q].mean() - mid), "recency": float(acc[k - q :].mean() - mid)}


def below_capacity_probes(probes: pd.DataFrame, min_kappa: int = 4) -> pd.DataFrame:
    """The probes below capacity but short of the ceiling: recall in [0.9, 0.99) at κ ≥ ``min_kappa`` (the
    comparison :func:`edge_probes` is set against)."""
    return probes[(probes.accuracy >= 0.9) & (probes.accuracy < 0.99) & (probes.kappa >= min_kappa)]


def edge_probes(probes: pd.DataFrame, target: float = 0.5, min_kappa: int = 4) -> pd.DataFrame:
    """Per search (layers, D, N, seed): its probe with κ ≥ ``min_kappa`` whose recall is nearest ``target`` (ties:
    the smaller κ)."""
    p = probes[probes.kappa >= min_kappa].assign(gap=lambda d: (d.accuracy - target).abs())
    p = p.sort_values(["layers", "D", "N", "seed", "gap", "kappa"])
    return p.groupby(["layers", "D", "N", "seed"], as_index=False).head(1).drop(columns="gap").reset_index(drop=True)


def evidence_bundles(log=print):
    """(the strongest complete committed bundle, the running grid's partial bundle or None): verdicts read the
    first; the page shows the second beside it, labelled partial (both through :func:`~mamba_recall.results.evidence`,
    the second with ``complete=False``)."""
    from mamba_recall.results import BundleMissing, evidence

    strongest = evidence("ch5_capacity", log=log)
    partial = None
    for preset in ("paper", "cpu-hours"):
        try:
            b = evidence("ch5_capacity", preset=preset, complete=False)
        except BundleMissing:
            continue
        if not b.data.get("complete"):
            partial = b
            break
    return strongest, partial
