r"""The D·N scaling law measured on the designed hashing circuit (Thm 2 of paper 002), over a wide range of D·N.

*Facts recalled* at accuracy level ``q``: the largest number of facts N_f (key–value pairs in the context) at
which the designed circuit's per-query MQAR accuracy is still ≥ q, at fixed V (bisection on N_f; L = 4 N_f,
Zoology MQAR with random padding, as the authors' regimes). Remark 1 (and Eq. 15, printed and corrected)
predict N_f* ∝ D·N; :func:`fit_power_law` fits ``log N_f* = α log(D·N) + β`` with a 95 % t-interval on α.

The circuit is evaluated exactly but only at the query positions, so that N_f reaches thousands: with the
Thm 2 weights (:func:`mamba_recall.theory.hashing_circuit.thm2_weights`) the layer computes, for the query at t,

    y_t = Σ_{τ ≤ t} (F E x_{τ-1} · F E x_t) E x_τ,        logits_t = E^T y_t

(the conv's previous-token tap is the key, the current token the value), which :func:`circuit_predictions`
evaluates as chunked causal linear attention (a D×N state carried across chunks). It equals
:func:`~mamba_recall.theory.hashing_circuit.designed_model`'s forward at those positions (checked in the tests).
"""

from __future__ import annotations

import math

import torch

from .capacity import predicted_capacity
from .hashing_circuit import thm2_weights

__all__ = [
    "circuit_predictions",
    "circuit_accuracy",
    "facts_capacity",
    "fit_power_law",
    "law_capacities",
    "LAWS_COMPARED",
]

#: The laws compared with the measurements: (column, law of theory.capacity, a, label).
LAWS_COMPARED = (
    ("remark1", "remark1", 3.0, "Remark 1 (DN ≥ 2 N_f n_σ², δ = 1 − level)"),
    ("eq15_printed", "eq15", 3.0, "Eq. 15 as printed, Φ(√(2ND/N_f))^{V/2}"),
    ("eq15_corrected", "eq15_consistent", 3.0, "Eq. 15 corrected, Φ(√(ND/(2N_f)))^{V/2}"),
    ("eq77", "eq77", 3.0, "Eq. 77 (Thm 3)"),
    ("rev_a3", "rev_mV", 3.0, "authors' later law, designed (a = 3)"),
)


@torch.no_grad()
def circuit_predictions(
    weights: dict, x: torch.Tensor, y: torch.Tensor, *, readout: str = "values", chunk: int = 256, dtype=torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """The designed circuit's argmax predictions at the labelled positions of ``x`` (n, L) → (pred, labels)."""
    E = weights["E"].to(dtype)  # (D, V)
    Fm = weights["F"].to(dtype)  # (N, D)
    V = E.shape[1]
    n, L = x.shape
    emb = E.T[x]  # (n, L, D): E x_t (value written at t)
    FE = (Fm @ E).T  # (V, N): F E x
    key = torch.zeros(n, L, Fm.shape[0], dtype=dtype)
    key[:, 1:] = FE[x[:, :-1]]  # B_t = F E x_{t-1}; x_{-1} = 0 (causal conv padding)
    H = torch.zeros(n, E.shape[0], Fm.shape[0], dtype=dtype)  # Σ_τ E x_τ (F E x_{τ-1})^T
    outs, labels, where = [], [], []
    for s in range(0, L, chunk):
        e = min(L, s + chunk)
        lab = y[:, s:e]
        mask = lab != -100
        Kc, Vc = key[:, s:e], emb[:, s:e]
        if mask.any():
            Qc = FE[x[:, s:e]]  # C_t = F E x_t
            scores = torch.einsum("btn,bsn->bts", Qc, Kc).tril()  # within the chunk, τ ≤ t
            yc = torch.einsum("bts,bsd->btd", scores, Vc) + torch.einsum("bdn,btn->btd", H, Qc)
            outs.append(yc[mask])
            labels.append(lab[mask])
            where.append(mask.nonzero()[:, 0] * L + s + mask.nonzero()[:, 1])
        H += torch.einsum("bsd,bsn->bdn", Vc, Kc)
    order = torch.cat(where).argsort()  # row-major (sequence, position), as logits[mask]
    yq = torch.cat(outs)[order]
    lab = torch.cat(labels)[order]
    if readout not in ("values", "full"):
        raise ValueError(f"unknown readout {readout!r}; use 'values' or 'full'.")
    first = V // 2 if readout == "values" else 0  # values: argmax over [V/2, V) only
    preds = [(yq[i : i + 1024] @ E[:, first:]).argmax(-1) + first for i in range(0, yq.shape[0], 1024)]
    return torch.cat(preds), lab


def circuit_accuracy(
    V: int,
    D: int,
    N: int,
    Nf: int,
    *,
    n_queries: int = 2000,
    seed: int = 0,
    data_seed: int = 12345,
    readout: str = "values",
    construction: str = "code",
    weights: dict | None = None,
) -> float:
    """Per-query accuracy of the Thm 2 circuit on Zoology MQAR (V, N_f, L = 4 N_f), ≈ ``n_queries`` queries."""
    from ..tasks.mqar import mqar

    w = weights if weights is not None else thm2_weights(V, D, N, seed, construction)
    n_seq = max(1, math.ceil(n_queries / Nf))
    x, y = mqar(V, Nf, 4 * Nf, n_seq, data_seed + Nf)
    pred, lab = circuit_predictions(w, x, y, readout=readout)
    return float((pred == lab).double().mean())


def facts_capacity(
    V: int,
    D: int,
    N: int,
    levels=(0.5, 0.9),
    *,
    n_queries: int = 2000,
    seed: int = 0,
    readout: str = "values",
    construction: str = "code",
) -> dict:
    """For each accuracy level, the largest N_f with accuracy ≥ level (bisection over 1 ≤ N_f ≤ N_f,max, the
    largest a V allows with L = 4 N_f < V); returns ``{level: {"Nf": .., "acc_at": .., "acc_above": ..,
    "censored": bool}}`` (``censored``: even N_f,max passes, the capacity is at least that) and the evaluations."""
    w = thm2_weights(V, D, N, seed, construction)
    nf_max = min(V // 2 - 1, (V - 1) // 4)
    cache: dict[int, float] = {}

    def acc(nf):
        if nf not in cache:
            cache[nf] = circuit_accuracy(V, D, N, nf, n_queries=n_queries, seed=seed, readout=readout, weights=w)
        return cache[nf]

    out = {}
    for level in levels:
        if acc(1) < level:
            out[level] = dict(Nf=0, acc_at=None, acc_above=acc(1), censored=False)
            continue
        if acc(nf_max) >= level:
            out[level] = dict(Nf=nf_max, acc_at=acc(nf_max), acc_above=None, censored=True)
            continue
        lo, hi = 1, nf_max  # acc(lo) ≥ level > acc(hi)
        while hi - lo > 1:
            mid = int(round(math.sqrt(lo * hi))) if hi > 4 * lo else (lo + hi) // 2
            mid = min(max(mid, lo + 1), hi - 1)
            lo, hi = (mid, hi) if acc(mid) >= level else (lo, mid)
        out[level] = dict(Nf=lo, acc_at=acc(lo), acc_above=acc(hi), censored=False)
    return {"capacity": out, "evaluations": sorted(cache.items())}


def law_capacities(V: int, D: int, N: int, level: float) -> dict:
    """Each compared law's N_f* at (V, D, N) for per-query accuracy ``level`` (δ = 1 − level)."""
    return {
        col: predicted_capacity(D, N, V=V, law=law, delta=1 - level, a=a)["Nf_max"] for col, law, a, _ in LAWS_COMPARED
    }


def fit_power_law(x, y) -> dict:
    """OLS of log y on log x (:func:`mamba_recall.runstore.regression_interval`, the library's one regression with
    t-intervals) over the points with x, y > 0: ``{"exponent", "ci_low", "ci_high", "prefactor", "n", "r2"}`` (95 %
    t-interval on the slope, n − 2 degrees of freedom; natural logs; prefactor = exp(intercept)); NaN with fewer
    than 3 points."""
    from ..runstore import regression_interval

    pts = [(math.log(a), math.log(b)) for a, b in zip(x, y) if a > 0 and b > 0]
    fit = regression_interval([p[0] for p in pts], [p[1] for p in pts])
    return dict(
        exponent=fit["slope"],
        ci_low=fit["slope_ci"][0],
        ci_high=fit["slope_ci"][1],
        prefactor=math.exp(fit["intercept"]),
        n=fit["n"],
        r2=fit["r2"],
    )
