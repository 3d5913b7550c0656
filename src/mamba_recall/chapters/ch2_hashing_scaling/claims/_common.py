"""What the sections of Chapter 2 share (the package's internals; ``ch2/__init__.py`` re-exports the public
names): the book sections, the constants of the rules' conventions (:data:`PERFECT`, :data:`NEAR_PERFECT`, :data:`Z`;
stated in the package docstring), the standard errors, the evidence of a bundle, N_90(D), the generator's chance
level, the strongest committed evidence of Figs. 7, 8, 10–11 and Tab. 10 read seed by seed (:func:`_by_seed`), the
phrases the rules share, and the paper's sentence each claim tests (:data:`QUOTES`).
"""

from __future__ import annotations

import functools
import math

from mamba_recall.claims.core import Control, Evidence, Measurement, across_seeds

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


# --------------------------------------------------- N_90(D): the D–N trade-off (Fig. 6(b) designed, Fig. 6(c) trained)
def _first_at(series, thr):
    hit = series[series >= thr]
    return int(hit.index.min()) if len(hit) else None


def _nonincreasing(ns) -> bool:
    defined = [n for n in ns if n is not None]
    return all(b <= a for a, b in zip(defined, defined[1:]))


def _n_near(piv) -> dict:
    """N_90(D): the smallest N with near-perfect accuracy in each D row of a (D × N) pivot."""
    return {int(D): _first_at(piv.loc[D].dropna(), NEAR_PERFECT) for D in piv.index}


# ------------------------------------------------ the generator's chance level (the null control of the trained claims)
def chance_level(V: int, Nf: int, L: int) -> float:
    """The chance level of standard MQAR on the generator itself: a reader that answers one of the context's values
    at random (:func:`~mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing.context_guess_accuracy`; 1/N_f for this generator)."""
    return _chance_level(int(V), int(Nf), int(L))


@functools.lru_cache(maxsize=None)
def _chance_level(V: int, Nf: int, L: int) -> float:
    from mamba_recall.chapters.ch2_hashing_scaling.pipelines.hashing import context_guess_accuracy

    return context_guess_accuracy(V, Nf, L)


def chance_null(chance: float, values: dict, shown: str, where: str = "in every cell", *, label: str = "") -> Control:
    """The null control of a trained claim: a model at the generator's chance level ``chance`` (:func:`chance_level`)
    ``where`` ("in every cell", "for every M"), with the ``values`` its rule reads there, shown as ``shown``;
    ``label`` replaces the control's default description."""
    return Control(
        "null",
        label or f"a model at the generator's chance level ({chance:.4f}) {where}",
        Measurement(values, shown, Evidence.exact("the generator's chance level")),
    )


# ----------------------------------------------------- Figs. 7, 8, 10-11, Tab. 10: the strongest evidence, seed by seed
#: The run-store part (``ch2_scaling --preset cpu-hours``) of each figure's claims and the ci bundle that stands in for it.
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
    """A bundle of ``ch2_scaling``'s run-store parts (per-run table ``rows``, one row per model and seed) rather than a ci bundle."""
    return "rows" in (getattr(bundle, "tables", None) or {}) and bool(
        (getattr(bundle, "config", None) or {}).get("part")
    )


def strongest_fig_bundle(part: str, *parts: str, log=lambda m: None):
    """The strongest committed evidence for ``part`` (a key of :data:`FIG_PARTS`): the complete ``ch2_<part>_<preset>``
    bundle with the strongest preset (:func:`~mamba_recall.results.evidence`: paper, then cpu-hours), else that of
    each of ``parts`` in turn (Thm 5's falls back to the Fig. 8 grid), else the strongest complete committed bundle of
    the runner :data:`FIG_PARTS` names (``ch2_scaling`` or ``ch2_multihead``, whose layout the parts' readers share:
    the chapter logic this adds to ``evidence``). Only absence falls back (:class:`~mamba_recall.results.
    BundleMissing`): a stronger bundle that exists but is corrupt raises its :class:`~mamba_recall.results.
    BundleError` (file and regenerate command) instead of being replaced by weaker evidence."""
    from mamba_recall.results import BundleMissing, evidence

    for p in (part, *parts):
        if p not in FIG_PARTS:
            raise ValueError(f"unknown part {p!r}; use one of {', '.join(FIG_PARTS)}.")
    for p in (part, *parts):
        try:
            return evidence(f"ch2_{p}", log=log)
        except BundleMissing:
            continue
    return evidence(FIG_PARTS[part], log=log)


def _fig_evidence(part: str, *parts: str):
    """The loader of ``part``'s evidence that a claim declares (``Claim.reads``): :func:`strongest_fig_bundle` of
    ``part`` (and ``parts``), named by what it reads in turn."""

    def load():
        return strongest_fig_bundle(part, *parts)

    load.__name__ = " else ".join(f"ch2_{p}" for p in (part, *parts)) + f" else {FIG_PARTS[part]}"
    return load


def _seed_views(bundle) -> list:
    """``(seed, bundle)`` per seed of a run-store bundle: a :class:`~mamba_recall.results.Bundle` with the bundle's
    name, data, provenance, path and command holding that seed's runs alone, in the layout of the ci bundle (the
    per-run accuracy as ``acc``, or ``mean`` for Tab. 10; MHA heads with full-width values as pattern ``MHA-full``),
    so each seed is read by the same function as the ci grid and the seeds are combined by core's
    ``across_seeds``."""
    from mamba_recall.results import Bundle

    part, runs = bundle.config["part"], bundle.tables["rows"]
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
            Bundle(
                name=bundle.name,
                config=cfg,
                data=bundle.data,
                provenance=bundle.provenance,
                command=getattr(bundle, "command", ""),
                tables={_PART_TABLE[part]: t.drop(columns="seed").reset_index(drop=True)},
                path=bundle.path,
            ),
        )
        for seed, t in table.groupby("seed", sort=True)
    ]


#: The declared range of the chapter's numbers that are accuracies, fractions or shares (in [0, 1]): each one's 95 %
#: interval over seeds is clipped to it where :func:`_by_seed` combines the seeds (core's ``across_seeds``); the
#: others (standard errors, gaps, octaves, counts) are not clipped.
RANGES = {
    m: (0.0, 1.0)
    for m in (
        "one_layer_accuracy",
        "two_layer_accuracy",
        "three_layer_accuracy",
        "full_accuracy",
        "simplified_accuracy",
        "designed_accuracy",
        "best_cell_min_accuracy",
        "trained_ge_designed_fraction",
        "lower_bound_fraction",
        "designed_lower_fraction",
        "eq77_lower_fraction",
        "full_not_below_fraction",
        "correct_significant_fraction",
        "wrong_significant_fraction",
        "either_significant_fraction",
        "share_near_one",
        "share_near_zero",
        "kk_share",
        "vv_share",
        "near_perfect_jaccard",
    )
}


def _by_seed(measure):
    """``measure`` (a reader of one ci-layout bundle) applied to a run-store bundle: one :class:`Measurement` per seed
    (:func:`_seed_views`), combined by :func:`~mamba_recall.claims.core.across_seeds` (each accuracy's and
    fraction's interval clipped to [0, 1]: :data:`RANGES`), the single path by which every claim turns seeds into a
    number with an interval; the combined evidence names the preset and the run store. A ci bundle (one seed) is
    read as it is."""
    import dataclasses
    import functools

    @functools.wraps(measure)
    def read(bundle, *args, **kwargs):
        if not is_run_store_bundle(bundle):
            return measure(bundle, *args, **kwargs)
        views = _seed_views(bundle)
        ms = [measure(v, *args, **kwargs) for _, v in views]
        m = across_seeds(ms, [f"seed {s}" for s, _ in views], bounds=RANGES)
        return dataclasses.replace(
            m,
            evidence=dataclasses.replace(
                m.evidence,
                sample=f"{m.evidence.sample} (preset {bundle.config['preset']}, run store)",
                smoke=m.evidence.smoke or bool(bundle.config.get("smoke")),
            ),
        )

    return read


# ------------------------------------------------------------------ the rules' shared phrases and the paper's sentences
_SE_WHY = "three standard errors of the accuracies compared (sampling noise; worst-case binomial)"
_NEAR = "near-perfect = accuracy ≥ 0.9"


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
    "002/Thm5-algebra": r"which is exactly the output we have for a single-headed model of the same dimensions $D, N$ . … $$\hat{y}_t = \sum_{h=1}^M W_y^h \sum_{\tau=0}^t \hat{x}_\tau (F^h \hat{x}_{\tau-1})^\top (F^h \hat{x}_t), \quad (130)$$ which is, since $W_y^h$ and $F^h$ are all independent, equivalent to: … where $F' \in \mathbb{R}^{(MN) \times D} \equiv \mathbb{R}^{N' \times D}$ . This implies that effectively, MHA patterns utilizes a larger state size $N' = MN$ .",
    "002/Fig8-shared": r"Sharing keys (MQA), values (MKA) or both (MVA) across SSM heads implies similar accuracy as in the single-headed SSM.",
    "002/Fig8-MHA": r"In order to improve recall by splitting into $M$ heads, both key and query dimensions should increase from $N$ to $MN$ (MHA, bottom right).",
    "002/Thm5-MHA-MN": r"with $M$ heads using MHA pattern and dimensions $D, N = O(\log V)$ is **equivalent**, in term of associative recall, to a similar single-headed model of dimensions $D' = D, N' = MN$ .",
    "002/Fig15": r"For the MHA pattern, output entries variance is reduced upon addition of SSM heads. … Now since we have $M$ independent noise terms, each with variance $(\tilde{\sigma}^h)^2 = O(\frac{1}{N})$ , their weighted average have a smaller variance, reduced by a factor of $M$ , namely $\tilde{\sigma}^2 = O(\frac{1}{MN})$ .",
    "002/Remark3": r'with dimensions $D, N = O(\log V)$ and weights designed as specified in Theorem 2 **fails** to solve *MQAR with repeating keys*. … This aligns with our intuition (see Remark 3) of "guessing" one out of $N_k$ options, when the 1-layer model can only access a linear combination of the $N_k$ stored values.',
    "002/Remark5": r"A single-layer simplified Mamba with dimensions $D, N = O(\log V)$ and weights designed as specified in Theorem 2 fails to solve MQAR with repeating queries.",
}
