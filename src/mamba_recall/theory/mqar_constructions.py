r"""Explicit MQAR solutions of paper 003 (§5.1, App. C.1, Thms. 2–4, Lemma 4), as printed and corrected.

Data (App. D.3): :func:`gen_mqar` — κ *distinct* keys (ids ``0..κ-1``, a permutation; App. D.3 says iid, which
would make a repeated key ambiguous), values iid in ``κ..κ+|V|-1``, noise tokens from the value vocabulary, each key queried
exactly once at a uniform position after the context; labels are value indices ``0..|V|-1`` at the
query positions and −100 elsewhere. Shapes: ``ids, labels`` (n, T) int64.

Every construction is a function ``ids (n, T) → logits (n, T, |V|)`` with hand-set weights, run in
float64 on the library's scans (:func:`selective_scan` for Mamba and the S4D mixer,
:func:`ssd_scan` for Mamba-2):

* **Thm. 2, Mamba, no gate** (:func:`thm2_logits`): embedding :math:`k_i\mapsto k\,e_i`,
  :math:`v_j\mapsto v\,e_{\kappa+j}` (53); size-2 conv + ReLU
  :math:`\hat x_t=\mathrm{ReLU}(c_0x_{t-1}+c_1x_t-b)` (54) keeps (key, value) pairs; S6 with Λ = 0, Δ = 1,
  :math:`B_t=C_t=W_k\hat x_t` (58) writes value :math:`j(i)` into state column :math:`i` (:math:`N=\kappa`);
  readout :math:`W_o=[v_1^\top;\dots]` (59). Step 2 replaces the one-hot values by JL codes
  :math:`M_ve_j+\beta\mathbf 1` (67, β = 2, k = 10, c₀ = 1, c₁ = 10, b = 3). Output bias:
  ``"printed"`` :math:`-(c_0kb)W_os`, ``"typo"`` :math:`-(c_0k-b)W_os`, ``"corrected"``
  :math:`-(c_0k-b)(c_1k-b)W_os` (the printed bias misses the factor :math:`c_1k-b`), or ``"centered"`` readout (:math:`b_o=0`).
  With ``N < κ`` keys share columns (``i mod N``): the construction's capacity limit.
* **Thm. 3, Mamba-2, no gate** (:func:`thm3_logits`): three independent size-2 convs,
  :math:`\mathrm{conv}_B` = shift by one, :math:`\mathrm{conv}_u=\mathrm{conv}_C` = identity, σ = id (a ReLU would delete the negative JL entries),
  λ = 0, Δ = 1, so :math:`y_t=\sum_s x_s\langle W_kx_{s-1},W_kx_t\rangle` (77). Keys one-hot (:math:`N=\kappa`)
  or JL :math:`p_k` (:math:`N=p_k`), values one-hot or JL :math:`p_v`.
* **Thm. 4, S4D mixer with gate** (:func:`thm4_logits`): state split into κ blocks along the channels,
  key :math:`k\mathbf 1` on block i, values tiled over blocks; conv :math:`c_0=10,c_1=1,b=100`; S4D with
  Λ = 0, Δ = B = C = 1, N = 1 (a cumulative sum, 88–89); gate :math:`\tilde y_t=\mathrm{ReLU}(x_t)\odot y_t`
  picks the queried block (90). Step 2: JL codes of dimension p rotated so that
  :math:`Me_{|V|+1}\parallel\mathbf 1` (Householder), β = 1; readout ``"printed"`` :math:`Me_l` tiled or
  ``"centered"`` :math:`(I-\frac1p\mathbf 1\mathbf 1^\top)Me_l` tiled (Eqs. 93–99 are off by √p).

JL matrices (Lemma 4): :func:`jl_matrix` with iid entries :math:`\pm1/\sqrt p`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..scan import selective_scan, ssd_scan
from ..tasks.mqar import IGNORE_INDEX, check_int, mqar

THM2_BIASES = ("printed", "typo", "corrected", "centered")

__all__ = [
    "IGNORE_INDEX",
    "TIE_RTOL",
    "argmax_credit",
    "THM2_BIASES",
    "VARIANTS",
    "gen_mqar",
    "jl_matrix",
    "thm2_logits",
    "thm3_logits",
    "thm4_logits",
    "construction_accuracy",
    "best_of_draws",
    "theory_dims",
    "hashing_circuit_accuracy",
    "thm3_key_growth",
    "state_needed",
    "jl_inner_products",
    "remark7_sweep",
    "remark7_worst_case",
    "equal_overlap_codes",
    "RECALL_TARGET",
    "pk_grid",
    "thm3_state_for_recall",
    "state_for_recall",
]


def gen_mqar(n: int, T: int, kappa: int, V: int, seed: int):
    r"""Paper-003 MQAR batch (App. D.3, with distinct keys): returns ``ids, labels`` (n, T) int64.

    Context :math:`k_1v_1\dots k_\kappa v_\kappa` at positions 0..2κ−1 (keys a random permutation of
    0..κ−1, values ``κ + randint(|V|)``), then noise values; κ query positions drawn uniformly without
    replacement from 2κ..T−1, each key queried once in random order; ``labels`` = value index there.
    Needs T ≥ 3κ. Seeded by ``seed`` (numpy ``default_rng``). The generator is
    :func:`mamba_recall.tasks.mqar.mqar` with ``variant="paper003"``; this is its argument order in paper 003."""
    return mqar(V, kappa, T, n, seed, variant="paper003")


def jl_matrix(p: int, n: int, seed: int) -> np.ndarray:
    r"""Lemma 4: :math:`M\in\{\pm1/\sqrt p\}^{p\times n}` iid (numpy ``default_rng(seed)``)."""
    p, n = check_int("p", p), check_int("n", n)
    return np.random.default_rng(seed).choice([-1.0, 1.0], size=(p, n)) / math.sqrt(p)


def _conv2(x, c0, c1, b, relu=True):
    """Size-2 causal conv with left zero padding: c0·x_{t−1} + c1·x_t − b (then ReLU). x (n, T, d)."""
    prev = torch.nn.functional.pad(x, (0, 0, 1, 0))[:, :-1]
    out = c0 * prev + c1 * x - b
    return out.clamp_min(0) if relu else out


def _s6_cumsum(xhat, Bt, Ct, backend):
    r"""S6 with Λ = 0, Δ = 1: :math:`y_t=\sum_{s\le t}\hat x_s\langle B_s,C_t\rangle`. x̂ (n, T, d), B, C (n, T, N).

    ``backend="dual"`` (default of the constructions) evaluates the quadratic dual form
    :math:`y=(\mathrm{tril}(CB^\top))\hat x`, exact because every decay is 1 and much lighter than a
    (n, d, N, T) scan; any scan backend name runs the library's :func:`selective_scan` instead (the tests
    check that both agree)."""
    if backend == "dual":
        G = torch.tril(Ct @ Bt.transpose(1, 2))
        return G @ xhat
    u = xhat.transpose(1, 2).contiguous()
    n, d, T = u.shape
    N = Bt.shape[-1]
    A = torch.zeros(d, N, dtype=u.dtype)
    delta = torch.ones_like(u)
    y = selective_scan(u, delta, A, Bt.transpose(1, 2).contiguous(), Ct.transpose(1, 2).contiguous(), backend=backend)
    return y.transpose(1, 2)


def thm2_logits(
    ids,
    kappa: int,
    V: int,
    *,
    p: int | None = None,
    N: int | None = None,
    bias: str = "corrected",
    jl_seed: int = 0,
    backend: str = "dual",
):
    r"""Theorem 2 (Mamba without gate). ``p=None``: step 1 (one-hot values, d = κ+|V|, k=2, v=1, c₀=1, c₁=2,
    b=1); ``p``: step 2 (JL values, d = κ+p, β=2, k=10, c₀=1, c₁=10, b=3) with output ``bias`` in
    :data:`THM2_BIASES`. ``N`` (default κ) state columns; keys share column ``i mod N`` when N < κ."""
    if bias not in THM2_BIASES:
        raise ValueError(f"unknown bias {bias!r}; use one of {THM2_BIASES}.")
    N = kappa if N is None else check_int("N", N)
    if p is None:
        k, v, c0, c1, b = 2.0, 1.0, 1.0, 2.0, 1.0
        dv = V
        codes = np.eye(V)  # value code j: column j (dv × V)
        shift = np.zeros(dv)
    else:
        k, c0, c1, b, beta = 10.0, 1.0, 10.0, 3.0, 2.0
        dv = check_int("p", p)
        codes = jl_matrix(dv, V, jl_seed)
        shift = beta * np.ones(dv)
    d = kappa + dv
    E = np.zeros((kappa + V, d))
    E[np.arange(kappa), np.arange(kappa)] = k
    E[kappa:, kappa:] = (codes + shift[:, None]).T * (1.0 if p is not None else 1.0)
    if p is None:
        E[kappa:, kappa:] *= v
    Wk = np.zeros((N, d))
    Wk[np.arange(kappa) % N, np.arange(kappa)] = 1.0
    Wo = np.zeros((V, d))
    bo = np.zeros(V)
    if p is None:
        Wo[:, kappa:] = E[kappa:, kappa:]
    else:
        M = codes
        if bias == "centered":
            M = M - M.mean(axis=0, keepdims=True)  # (I − 11ᵀ/p) M_v
        Wo[:, kappa:] = M.T
        s = np.zeros(d)
        s[kappa:] = c1 * beta - b
        factor = {"printed": c0 * k * b, "typo": c0 * k - b, "corrected": (c0 * k - b) * (c1 * k - b), "centered": 0.0}[
            bias
        ]
        bo = -factor * (Wo @ s)
    x = torch.as_tensor(E)[ids]
    xhat = _conv2(x, c0, c1, b)
    Bt = xhat @ torch.as_tensor(Wk).T
    y = _s6_cumsum(xhat, Bt, Bt, backend)
    return y @ torch.as_tensor(Wo).T + torch.as_tensor(bo)


def thm3_logits(
    ids,
    kappa: int,
    V: int,
    *,
    pk: int | None = None,
    pv: int | None = None,
    jl_seed: int = 0,
    backend: str = "dual",
    key_codes: np.ndarray | None = None,
):
    r"""Theorem 3 (Mamba-2, single head, no gate): keys one-hot (N = κ) or JL ``pk`` (N = pk), values one-hot
    or JL ``pv``; conv_B = shift-1, conv_u = conv_C = id, σ = id, λ = 0, Δ = 1; readout = value codes.
    ``key_codes``: a given (N × κ) matrix of key codes instead (e.g. :func:`equal_overlap_codes`)."""
    rng_seed = jl_seed
    if key_codes is not None:
        Mk = np.asarray(key_codes, dtype=np.float64)
        if Mk.ndim != 2 or Mk.shape[1] != kappa:
            raise ValueError(f"key_codes must be (N, κ) = (N, {kappa}); got shape {Mk.shape}.")
    else:
        Mk = np.eye(kappa) if pk is None else jl_matrix(pk, kappa, rng_seed)
    Mv = np.eye(V) if pv is None else jl_matrix(pv, V, rng_seed + 10_007)
    dk, dv = Mk.shape[0], Mv.shape[0]
    d = dk + dv
    E = np.zeros((kappa + V, d))
    E[:kappa, :dk] = Mk.T
    E[kappa:, dk:] = Mv.T
    x = torch.as_tensor(E)[ids]  # (n, T, d)
    xB = torch.nn.functional.pad(x, (0, 0, 1, 0))[:, :-1]  # conv_B: shift by one
    Bt = xB[..., :dk]  # W_k x_{t−1}, (n, T, N)
    Ct = x[..., :dk]  # W_k x_t
    n, T, _ = x.shape
    if backend == "dual":
        return _s6_cumsum(x, Bt, Ct, "dual") @ torch.as_tensor(E[kappa:]).T
    y = ssd_scan(
        x[:, :, None, :].contiguous(),
        torch.ones(n, T, 1, dtype=x.dtype),
        torch.zeros(1, dtype=x.dtype),
        Bt[:, :, None, :].contiguous(),
        Ct[:, :, None, :].contiguous(),
        backend=backend,
    )[:, :, 0, :]  # (n, T, d)
    Wo = E[kappa:]  # rows v_l
    return y @ torch.as_tensor(Wo).T


def _householder_to_ones(M: np.ndarray) -> np.ndarray:
    """Reflect the columns of M so that its last column becomes parallel to 1_p."""
    p = M.shape[0]
    a = M[:, -1] / np.linalg.norm(M[:, -1])
    u = np.ones(p) / math.sqrt(p)
    w = a - u
    if np.linalg.norm(w) < 1e-14:
        return M
    H = np.eye(p) - 2.0 * np.outer(w, w) / (w @ w)
    return H @ M


def thm4_logits(
    ids,
    kappa: int,
    V: int,
    *,
    p: int | None = None,
    readout: str = "centered",
    beta: float = 1.0,
    jl_seed: int = 0,
    backend: str = "dual",
    gate: str = "y",
):
    r"""Theorem 4 (S4D mixer with gate, N = 1). ``p=None``: step 1, d = κ|V| (one-hot value blocks);
    ``p``: step 2, d = κp, JL codes rotated so :math:`Me_{|V|+1}\parallel\mathbf 1`, values :math:`Me_j+\beta\mathbf 1`;
    ``readout`` ``"printed"`` (:math:`Me_l` tiled) or ``"centered"`` (the paper's Eqs. 93–99 miss a factor √p).
    k=10, v=1, c₀=10, c₁=1, b=100. ``gate="y"``: :math:`\tilde y_t=\mathrm{ReLU}(x_t)\odot y_t` (Eq. 90);
    ``gate="x"``: Table 2's (14g) as printed, :math:`\tilde y_t=g(x_t)\odot x_t` (the SSM output unused)."""
    if readout not in ("printed", "centered"):
        raise ValueError(f"unknown readout {readout!r}; use 'printed' or 'centered'.")
    if gate not in ("y", "x"):
        raise ValueError(f"unknown gate {gate!r}; use 'y' (Eq. 90) or 'x' (Tab. 2, (14g) as printed).")
    k, c0, c1, b = 10.0, 10.0, 1.0, 100.0
    if p is None:
        codes, shift, read = np.eye(V), np.zeros(V), np.eye(V)
    else:
        M = _householder_to_ones(jl_matrix(check_int("p", p), V + 1, jl_seed))[:, :V]
        codes, shift = M, beta * np.ones(p)
        read = M - M.mean(axis=0, keepdims=True) if readout == "centered" else M
    blk = codes.shape[0]
    d = kappa * blk
    E = np.zeros((kappa + V, d))
    for i in range(kappa):
        E[i, i * blk : (i + 1) * blk] = k
    E[kappa:] = np.tile((codes + shift[:, None]).T, (1, kappa))
    Wo = np.tile(read.T, (1, kappa))  # (V, d)
    x = torch.as_tensor(E)[ids]
    xhat = _conv2(x, c0, c1, b)
    n, T, _ = x.shape
    if backend == "dual":
        y = torch.cumsum(xhat, dim=1)  # S4D: Λ=0, Δ=B=C=1 → cumsum
    else:
        one = torch.ones(d, 1, dtype=x.dtype)
        u = xhat.transpose(1, 2).contiguous()
        y = selective_scan(
            u, torch.ones_like(u), torch.zeros(d, 1, dtype=x.dtype), one, one, backend=backend
        ).transpose(1, 2)
    y = x.clamp_min(0) * (y if gate == "y" else x)  # gate: ReLU(identity·x_t) ⊙ y_t (or ⊙ x_t)
    return y @ torch.as_tensor(Wo).T


#: Logits within this distance of the largest (relative to its size, at least 1) tie with it. The constructions
#: read out in float64 and tie *exactly* where two JL key codes collide; computed, such a tie lands a few units in
#: the last place apart, on a side that depends on the CPU's arithmetic (its vector width, fused multiply-adds),
#: so a plain ``argmax`` gives different accuracies on different machines.
TIE_RTOL = 1e-9


def argmax_credit(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per query, the expected correctness of the argmax with ties broken uniformly at random: 1/k when the label
    is one of the k logits tied for the largest (within :data:`TIE_RTOL`), else 0. logits (…, C), labels (…) →
    float64 (…); the same on every CPU, where ``argmax`` takes whichever tied entry the rounding favours."""
    top = logits.max(-1, keepdim=True).values
    tied = logits >= top - TIE_RTOL * top.abs().clamp(min=1.0)
    hit = tied.gather(-1, labels.clamp(min=0)[..., None]).squeeze(-1)
    return hit.double() / tied.sum(-1).double()


def construction_accuracy(
    name: str, kappa: int, V: int, *, n: int = 1000, T: int = 100, seed: int = 0, **kwargs
) -> float:
    """Accuracy of construction ``name`` ∈ {thm2, thm3, thm4} on ``n`` fresh sequences from :func:`gen_mqar` (ties
    of the readout broken at random, in expectation: :func:`argmax_credit`)."""
    fns = {"thm2": thm2_logits, "thm3": thm3_logits, "thm4": thm4_logits}
    if name not in fns:
        raise ValueError(f"unknown construction {name!r}; use one of {sorted(fns)}.")
    ids, labels = gen_mqar(n, T, kappa, V, seed)
    correct, total = 0.0, 0
    chunk = max(1, 200_000 // (T * 64))  # keep (chunk, T, d) tensors small even for d = κ|V|
    for i in range(0, n, chunk):
        logits = fns[name](ids[i : i + chunk], kappa, V, **kwargs)
        mask = labels[i : i + chunk] != IGNORE_INDEX
        correct += float(argmax_credit(logits[mask], labels[i : i + chunk][mask]).sum())
        total += int(mask.sum())
    return correct / total


# The variants swept against the JL code size p (Chapter 3's runner and its charts):
# name -> (construction for construction_accuracy, builder p -> its keyword arguments)
VARIANTS = {
    "Thm 2, bias as printed": ("thm2", lambda p: dict(p=p, bias="printed")),
    "Thm 2, corrected bias": ("thm2", lambda p: dict(p=p, bias="corrected")),
    "Thm 2, centered readout": ("thm2", lambda p: dict(p=p, bias="centered")),
    "Thm 3, JL values (keys one-hot)": ("thm3", lambda p: dict(pv=p)),
    "Thm 4, readout as printed": ("thm4", lambda p: dict(p=p, readout="printed")),
    "Thm 4, centered readout": ("thm4", lambda p: dict(p=p, readout="centered")),
}


def best_of_draws(name: str, kappa: int, V: int, draws: int = 3, **kwargs) -> tuple[float, float]:
    """(max, mean) accuracy over ``draws`` JL draws (``jl_seed = 0..draws−1``)."""
    accs = [construction_accuracy(name, kappa, V, jl_seed=s, **kwargs) for s in range(draws)]
    return max(accs), float(np.mean(accs))


def construction_kappa(N: int, layers: int = 1) -> float:
    """Thm 2's capacity: one key per state column (N = κ), so N columns hold κ* = N pairs whatever D is beyond what
    the construction needs; Λ layers, each with its own N columns, κ* = Λ·N (Chapter 5's reading for 2 layers)."""
    return float(layers * N)


def theory_dims(name: str, kappa: int, V: int, p: int | None = None, pk: int | None = None) -> dict:
    """(d, N) of a construction: thm2 d = κ + (|V| or p), N = κ; thm3 d = (κ or pk) + (|V| or p), N = κ or pk;
    thm4 d = κ·(|V| or p), N = 1."""
    if name == "thm2":
        return {"d": kappa + (V if p is None else p), "N": kappa}
    if name == "thm3":
        return {"d": (kappa if pk is None else pk) + (V if p is None else p), "N": kappa if pk is None else pk}
    if name == "thm4":
        return {"d": kappa * (V if p is None else p), "N": 1}
    raise ValueError(f"unknown construction {name!r}; use thm2, thm3 or thm4.")


def hashing_circuit_accuracy(
    kappa: int,
    V: int,
    D: int | None,
    N: int | None,
    *,
    theorem: int = 2,
    n: int = 200,
    T: int = 100,
    seed: int = 0,
    jl_seed: int = 0,
) -> float:
    """Paper 002's designed hashing circuit (``theory.hashing_circuit``, its Thm 1 or Thm 2) run on *this*
    paper's MQAR data (:func:`gen_mqar`): the circuit is token-agnostic, so its vocabulary is the κ + |V|
    token ids and the readout is restricted to the value ids κ..κ+|V|−1 (paper 002's "values" readout).
    Used for paper 002's Appendix I comparison. Raises ImportError if the module is absent."""
    from .hashing_circuit import designed_model

    model = designed_model(kappa + V, D, N, theorem=theorem, seed=jl_seed)
    ids, labels = gen_mqar(n, T, kappa, V, seed)
    correct = total = 0
    with torch.no_grad():
        for i in range(0, n, 50):
            logits = model(ids[i : i + 50])[..., kappa : kappa + V]
            mask = labels[i : i + 50] != IGNORE_INDEX
            correct += int((logits.argmax(-1)[mask] == labels[i : i + 50][mask]).sum())
            total += int(mask.sum())
    return correct / total


def thm3_key_growth(kappas, pks, *, V: int = 128, pv: int = 32, draws: int = 3, n: int = 100, seed: int = 1):
    r"""How the state size Thm. 3 needs grows with κ: for each κ, the best (over ``draws`` JL draws) and mean
    accuracy of the construction with JL keys at :math:`N=p_k=\lceil\log_2\kappa\rceil` (row ``at_log2``), then
    up the grid ``pks`` until the first exact point (best = 1.0). T = max(100, 4κ): the construction stores
    ~2κ pairs whatever T is. Returns a DataFrame (kappa, pk, max, mean, at_log2, T, V, pv, draws, sequences)."""
    import pandas as pd

    rows = []
    for kappa in kappas:
        T = max(100, 4 * kappa)
        grid = [(max(1, math.ceil(math.log2(kappa))), True)] + [(pk, False) for pk in sorted(pks)]
        for pk, at_log in grid:
            mx, mean = best_of_draws("thm3", kappa, V, draws=draws, n=n, T=T, seed=seed, pk=pk, pv=pv)
            rows.append(
                dict(kappa=kappa, pk=pk, max=mx, mean=mean, at_log2=at_log, T=T, V=V, pv=pv, draws=draws, sequences=n)
            )
            if not at_log and mx >= 1.0:
                break
    return pd.DataFrame(rows)


def state_needed(growth) -> dict:
    """κ → the smallest p_k of the grid (= N) at which :func:`thm3_key_growth` found the construction exact
    (``inf`` if none)."""
    out = {}
    for kappa, g in growth[~growth.at_log2].groupby("kappa"):
        exact = g[g["max"] >= 1.0]
        out[int(kappa)] = float(exact.pk.min()) if len(exact) else math.inf
    return out


def jl_inner_products(ds, ps, seed: int = 0):
    r"""Lemma 4 measured: for each (d, p), one draw of :func:`jl_matrix` (p × d); the largest
    :math:`|\langle Me_i,Me_j\rangle|` over i ≠ j (ε), the ratio :math:`\varepsilon\sqrt{p/\ln d}` (≈ 2 for
    sub-Gaussian entries) and the largest :math:`|\lVert Me_i\rVert-1|`. Returns a DataFrame."""
    import pandas as pd

    rows = []
    for d in ds:
        for p in ps:
            M = jl_matrix(p, d, seed)
            G = M.T @ M
            eps = float(np.abs(G - np.diag(np.diag(G))).max())
            rows.append(
                dict(
                    d=d,
                    p=p,
                    eps=eps,
                    ratio=eps * math.sqrt(p / math.log(d)),
                    norm_error=float(np.abs(np.sqrt(np.diag(G)) - 1).max()),
                )
            )
    return pd.DataFrame(rows)


def remark7_sweep(
    kappa: int, pks, *, V: int = 128, pv: int = 32, draws: int = 3, n: int = 100, T: int = 100, seed: int = 1
):
    r"""Remark 7: Thm. 3 with JL keys (N = p_k) on the adversarial input :math:`[k_1,v_1,k_2,v,\dots,k_\kappa,v]` (every
    value but the first is one token v ≠ v₁) against the random values of :func:`gen_mqar`, scored at the query of
    :math:`k_1` only (the query the coherent interference of the κ − 1 copies of v targets). For each p_k: the best over
    ``draws`` JL draws of the accuracy at that query, random and adversarial. Returns a DataFrame."""
    import pandas as pd

    ids, labels = gen_mqar(n, T, kappa, V, seed)
    first_key = ids[:, 0]
    q_first = (ids == first_key[:, None]) & (labels != IGNORE_INDEX)  # the query of k₁
    adv = ids.clone()
    rng = np.random.default_rng(seed + 7)
    v1 = ids[:, 1] - kappa
    other = torch.as_tensor((v1.numpy() + 1 + rng.integers(0, V - 1, size=n)) % V)  # v ≠ v₁
    adv[:, 3 : 2 * kappa : 2] = (kappa + other)[:, None]
    rows = []
    for pk in pks:
        acc = {"random": [], "adversarial": []}
        for s in range(draws):
            for name, x in (("random", ids), ("adversarial", adv)):
                logits = thm3_logits(x, kappa, V, pk=pk, pv=pv, jl_seed=s)
                acc[name].append(float(argmax_credit(logits[q_first], labels[q_first]).mean()))
        rows.append(
            dict(
                kappa=kappa,
                pk=pk,
                random=max(acc["random"]),
                adversarial=max(acc["adversarial"]),
                draws=draws,
                sequences=n,
            )
        )
    return pd.DataFrame(rows)


def equal_overlap_codes(kappa: int, eps: float) -> np.ndarray:
    r"""κ unit key codes with every pairwise inner product :math:`\langle k_i,k_j\rangle=\varepsilon` (the same
    sign): the columns of the Cholesky factor of the Gram matrix :math:`(1-\varepsilon)I+\varepsilon\mathbf 1
    \mathbf 1^\top`, positive definite for :math:`-1/(\kappa-1)<\varepsilon<1`, so the codes need N = κ. The worst
    case of Remark 7's argument: JL codes have overlaps of at most ε in size but random signs. Returns (κ × κ)."""
    kappa = check_int("kappa", kappa, minimum=2)
    if not -1.0 / (kappa - 1) < eps < 1.0:
        raise ValueError(f"eps must lie in (−1/(κ−1), 1) = ({-1 / (kappa - 1):.4f}, 1) for κ = {kappa}; got {eps}.")
    gram = (1.0 - eps) * np.eye(kappa) + eps * np.ones((kappa, kappa))
    return np.linalg.cholesky(gram).T


def remark7_worst_case(kappas, products, *, V: int = 128, n: int = 100, T: int = 100, seed: int = 1):
    r"""Remark 7 at its worst case: Thm. 3 with the key codes of :func:`equal_overlap_codes` (every overlap
    :math:`\varepsilon=` ``product``/(κ − 1), one-hot values) on the adversarial input
    :math:`[k_1,v_1,k_2,v,\dots,k_\kappa,v]` and on the random values of :func:`gen_mqar`, scored at the query of
    :math:`k_1`. There the readout is :math:`v_1+\varepsilon(\kappa-1)\,v`: the remark's argument predicts failure
    exactly when ε(κ − 1) > 1. Each κ runs at length max(``T``, 4κ), as :func:`thm3_key_growth`. Returns a DataFrame
    (kappa, eps, eps_kappa (= ε(κ − 1)), random, adversarial, sequences)."""
    import pandas as pd

    rows = []
    for kappa in kappas:
        ids, labels = gen_mqar(n, max(T, 4 * kappa), kappa, V, seed)  # as thm3_key_growth: room for 2κ + κ
        q_first = (ids == ids[:, :1]) & (labels != IGNORE_INDEX)
        adv = ids.clone()
        rng = np.random.default_rng(seed + 7)
        v1 = ids[:, 1] - kappa
        other = torch.as_tensor((v1.numpy() + 1 + rng.integers(0, V - 1, size=n)) % V)  # v ≠ v₁
        adv[:, 3 : 2 * kappa : 2] = (kappa + other)[:, None]
        for product in products:
            eps = product / (kappa - 1)
            codes = equal_overlap_codes(kappa, eps)
            acc = {}
            for name, x in (("random", ids), ("adversarial", adv)):
                logits = thm3_logits(x, kappa, V, key_codes=codes)
                acc[name] = float(argmax_credit(logits[q_first], labels[q_first]).mean())
            rows.append(dict(kappa=kappa, eps=eps, eps_kappa=product, **acc, sequences=n))
    return pd.DataFrame(rows)


RECALL_TARGET = 0.99  # "recall" for the state-size sweep: at least 99 % of the queries right


def pk_grid(lo: int = 4, hi: int = 4096, ratio: float = math.sqrt(2.0)) -> list[int]:
    """Geometric grid of key-code sizes p_k (= N) from ``lo`` to ``hi`` with step ``ratio`` (rounded, distinct)."""
    lo, hi = check_int("lo", lo), check_int("hi", hi)
    if hi < lo or not ratio > 1.0:
        raise ValueError(f"need hi >= lo and ratio > 1 (got lo={lo}, hi={hi}, ratio={ratio}).")
    out, x = [], float(lo)
    while round(x) <= hi:
        if not out or round(x) != out[-1]:
            out.append(int(round(x)))
        x *= ratio
    return out


def thm3_state_for_recall(
    kappas,
    *,
    target: float = RECALL_TARGET,
    V: int = 128,
    pv: int = 32,
    draws: int = 3,
    queries: int = 6400,
    grid=None,
    seed: int = 1,
):
    r"""Thm. 3's state size for ``target`` recall, measured: for each κ, the smallest :math:`N=p_k` on the geometric
    ``grid`` (default :func:`pk_grid`, step √2) at which the construction with JL keys (:func:`thm3_logits`,
    :math:`p_v` = ``pv``) answers at least ``target`` of the queries right, best of ``draws`` JL draws (the
    theorem states existence). Every κ is run on ⌈``queries``/κ⌉ sequences of :func:`gen_mqar` (about
    ``queries`` queries whatever κ) of length T = max(100, 4κ).

    Search: κ ascending; start at the previous κ's answer (the needed size does not shrink as κ grows), walk up
    the grid until the target is met, and if the start already meets it walk down until it fails, so each
    answer is a grid point that meets the target with the one below it failing (or the grid's first point).
    Why the size should grow like κ and not like log κ: a query's output is its own value plus the ~2κ other
    stored values, each weighted by an inner product of two random ±1/√p_k codes (size ~1/√p_k), so the
    interference is ~√(2κ/p_k) and holding it below the gap to the next value needs p_k ∝ κ.

    Returns a DataFrame, one row per evaluated (κ, p_k): kappa, pk, max, mean (over draws), meets (max ≥ target),
    T, sequences, queries, draws, V, pv, target. :func:`state_for_recall` reads the answer per κ."""
    import pandas as pd

    if not 0.0 < target <= 1.0:
        raise ValueError(f"target must be a fraction of queries in (0, 1], got {target}.")
    grid = sorted(pk_grid() if grid is None else {check_int("p_k", p) for p in grid})
    rows, start = [], 0
    for kappa in sorted(check_int("kappa", k) for k in kappas):
        T, n = max(100, 4 * kappa), max(1, math.ceil(queries / kappa))
        seen = {}

        def meets(i):
            if i not in seen:
                mx, mean = best_of_draws("thm3", kappa, V, draws=draws, n=n, T=T, seed=seed, pk=grid[i], pv=pv)
                seen[i] = mx >= target
                rows.append(
                    dict(
                        kappa=kappa,
                        pk=grid[i],
                        max=mx,
                        mean=mean,
                        meets=seen[i],
                        T=T,
                        sequences=n,
                        queries=n * kappa,
                        draws=draws,
                        V=V,
                        pv=pv,
                        target=target,
                    )
                )
            return seen[i]

        i = start
        if meets(i):
            while i > 0 and meets(i - 1):
                i -= 1
        else:
            while i + 1 < len(grid) and not meets(i + 1):
                i += 1
            i = i + 1 if i + 1 < len(grid) else len(grid)
        start = min(i, len(grid) - 1)
    return pd.DataFrame(rows)


def state_for_recall(sweep) -> "pd.DataFrame":  # noqa: F821 (pandas is imported lazily)
    r"""Per κ of :func:`thm3_state_for_recall`: ``N`` = the smallest evaluated p_k that meets the target
    (``inf`` if none on the grid), with the theorem's :math:`\log_2\kappa` and Thm. 2's :math:`N=\kappa` beside it,
    and their ratios. Columns: kappa, N, log2_kappa, N_over_log2_kappa, N_over_kappa, accuracy (best of draws at N)."""
    import pandas as pd

    rows = []
    for kappa, g in sweep.groupby("kappa"):
        ok = g[g.meets]
        N = float(ok.pk.min()) if len(ok) else math.inf
        acc = float(ok.loc[ok.pk.idxmin(), "max"]) if len(ok) else math.nan
        lg = math.log2(kappa)
        rows.append(
            dict(kappa=int(kappa), N=N, log2_kappa=lg, N_over_log2_kappa=N / lg, N_over_kappa=N / kappa, accuracy=acc)
        )
    return pd.DataFrame(rows)
