"""What several sections of Chapter 3 share: the book sections the claims name, the thresholds, the declared ranges of
the numbers combined over seeds (:data:`RANGES`, for core's :func:`~mamba_recall.claims.core.over_seeds`, the one path
from trained models to a verdict), :func:`_chance_null`, :func:`_summary`, and the paper's sentence
each claim tests (:data:`QUOTES`, one table, attached to every claim when :mod:`mamba_recall.chapters.ch3_selectivity.claims` registers
them). Private to the package: its modules import these names; code outside imports the package's public names.
"""

from __future__ import annotations

from dataclasses import replace

from mamba_recall.claims.core import Control, Measurement, over_seeds
from mamba_recall.runners import runner_command

SOLVED = 0.99  # a trained model solves a task (paper: 1.00)
EXACT = 1.0  # a construction is exact: every test query right

#: the run that makes the paper preset's KEEP n-TH bundles
#: (Tabs. A.1–A.4, Fig. 1: :mod:`.keep_nth`, :mod:`.keep_nth_fig1`)
RUN_KEEP = (
    f"`{runner_command('ch3_keep_nth')} --preset paper --allow-long` (Tabs. A.1–A.4 grid, "
    "3 seeds; about 10 GPU-hours on one H100 with the reduced protocol)"
)


#: The declared range of the chapter's numbers that are accuracies, fractions or shares of cells (in [0, 1]): each
#: one's 95 % interval over seeds is clipped to it wherever the chapter combines seeds (core's
#: :func:`~mamba_recall.claims.core.over_seeds` and ``across_seeds``, ``bounds=RANGES``; a bound past the range is a
#: value the quantity cannot take); the others (differences, rises, distances) are not clipped.
RANGES = {
    m: (0.0, 1.0)
    for m in (
        # KEEP n-TH (Tab. 1, Tabs. A.1-A.4): accuracies and the grid's shares
        "solved_min",
        "failing_max",
        "min_accuracy",
        "max_accuracy",
        "max_accuracy_T40_50",
        "s4dpe_accuracy_T10",
        "recipe_solves_with_pe",
        "T_coverage",
        "N_coverage_mamba_pe",
        # Fig. 1: fractions of the e^{-λΔ} mass
        "frac_below_0.1_before_n",
        "frac_above_0.9_from_n",
        # MQAR (Figs. 2, A.3): shares of cells and best accuracies
        "fraction_cells_tracking_bound",
        "mamba_best_below_kappa",
        "mamba_best_above_kappa_min",
        "mamba2_best_below_4lnk",
        # INDUCTION HEADS (Figs. 3, A.4): shares and best accuracies
        "fraction_V_threshold_as_bound",
        "dT_best_accuracy",
        "gap_cells_equal_or_better",
    )
}


#: The range of a difference of two accuracies (Fig. 3's Mamba-Δ⊤ − Mamba paired per seed).
GAP_RANGE = (-1.0, 1.0)


def _chance_null(runs, chance, measure_one, what: str) -> Control:
    """A null control: the same per-seed measurement with every run's accuracy replaced by ``chance`` (a number, or
    one per row), the accuracy of a model that learned nothing about the task (a uniform guess over the generator's
    targets)."""
    return Control("null", what, over_seeds(runs.assign(accuracy=chance), measure_one, bounds=RANGES))


def _vocab(bundle, default: int = 128) -> int:
    """The bundle's |V| (a ci bundle's config, a run-store bundle's sizes), else the paper's 128."""
    cfg = bundle.config or {}
    return int(cfg.get("V") or (cfg.get("sizes") or {}).get("V") or default)


def _summary(m: Measurement, shown: str, note: str = "") -> Measurement:
    """``m`` with the reader's one line ``shown`` (means over seeds) instead of every seed's line."""
    return replace(m, shown=shown, note="; ".join(filter(None, (m.note, note))))


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
        r"The above construction with $N = \log \kappa$ works for generic inputs where the values are drawn "
        "randomly from the vocabulary with sufficient size. Such construction may fail in the adversarial case where "
        r"most values are the same and the number of keys $\kappa$ is large. … This can be counteracted by "
        r"decreasing $\epsilon$ ; … without however impacting its logarithmic behavior"
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
