r"""Mechanistic reading of a (trained or designed) simplified linear Mamba as a hash table (paper 002 §3.2,
App. C, App. D "key-value selection"; Figs. 2–5, 9).

Weights in the paper's layout (``LinearMamba.member_weights``): E (D×V), P_in (D_in×D), W_conv (D_in×K;
column K-2 = previous-token tap W⁰, column K-1 = current tap W¹), S_B, S_C (N×D_in), P_out (D×D_in).

Invariant operators (Eqs. 8–9), unchanged by any orthogonal re-parameterisation P_in → P_in Q, E → Qᵀ E::

    Ê_in   = (diag(W⁰) P_in E | diag(W¹) P_in E)            (D_in, 2V)   acts on ξ_t = (x_{t-1}; x_t)
    Π_v,out = Eᵀ P_out (V, D_in);  Π_k,in = S_B Ê_in, Π_q,in = S_C Ê_in  (N, 2V)
    G_vv   = Π_v,out Ê_in   (V, 2V)        G_kq = Π_k,inᵀ Π_q,in   (2V, 2V)
    y_t    = Σ_{τ≤t} G_vv ξ_τ · (ξ_τᵀ G_kq ξ_t)

Predicted (Eq. 10, semantic reading): G_vv lives in its x_τ half; G_kq in the (row x_{τ-1}, column x_t)
block, ≈ identity on keys × keys. Hash table: H''_t = Π_v,out h_t Π_q,in (V×2V), h_t = Σ_τ x̂_τ B_τᵀ;
its query half ≈ the ideal H_t = Σ_n v_n k_nᵀ. Implicit attention α'_{τt} = B_τᵀ C_t.
Only the d_conv = 2 taps that form ξ are used (wider convs: the two newest taps).
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = [
    "invariant_operators",
    "block_energy",
    "selectivity",
    "hash_tables",
    "attention_maps",
    "conv_maps",
    "check_d1_to_d5",
    "ideal_table",
    "auroc",
    "superposition_guess_accuracy",
    "superposition_guess_exact",
    "context_guess_accuracy",
]


def _w(weights: dict) -> dict:
    return {k: torch.as_tensor(v, dtype=torch.float64) for k, v in weights.items() if k != "layers"}


def invariant_operators(weights: dict) -> dict:
    """G_vv (V, 2V), G_kq (2V, 2V) and the projections (Eqs. 8–9) from paper-layout weights."""
    w = _w(weights)
    E, P_in, W = w["E"], w["P_in"], w["W_conv"]
    if W.shape[1] < 2:
        raise ValueError("the invariant operators need a Conv1D with at least 2 taps (d_conv ≥ 2).")
    PE = P_in @ E  # (D_in, V)
    E_in = torch.cat([W[:, -2:-1] * PE, W[:, -1:] * PE], dim=1)  # (D_in, 2V)
    Pv_out = E.T @ w["P_out"]  # (V, D_in)
    Pk_in, Pq_in = w["S_B"] @ E_in, w["S_C"] @ E_in  # (N, 2V)
    return dict(E_in=E_in, Pv_out=Pv_out, Pk_in=Pk_in, Pq_in=Pq_in, G_vv=Pv_out @ E_in, G_kq=Pk_in.T @ Pq_in)


def block_energy(G_vv: torch.Tensor, G_kq: torch.Tensor) -> dict:
    """D1: share of ‖G_kq‖² in the (x_{τ-1} rows, x_t columns) block and of ‖G_vv‖² in the x_τ half."""
    V = G_vv.shape[0]
    kq = float((G_kq[:V, V:] ** 2).sum() / (G_kq**2).sum())
    vv = float((G_vv[:, V:] ** 2).sum() / (G_vv**2).sum())
    return dict(kq_block_share=kq, vv_half_share=vv)


def selectivity(G_vv: torch.Tensor, G_kq: torch.Tensor, constrained: bool = True) -> dict:
    """Inside the predicted blocks, the share of energy in keys×keys (G_kq) / values×values (G_vv), and the
    fraction of key (value) columns whose argmax hits the diagonal. Keys are [1, V/2), values [V/2, V).

    ``constrained=True`` (default) counts only the columns the MQAR loss trains: in G_kq the query columns of
    key tokens (every query is a key; the query columns of value tokens never meet a loss), in G_vv the
    stored-value columns of value tokens (the pairs whose value is read out). ``False`` counts every column,
    including the untrained ones, which keep their initialisation (the key × key sub-block's share of the whole
    block)."""
    V = G_vv.shape[0]
    h = V // 2
    kq = G_kq[:V, V:]
    vv = G_vv[:, V:]
    keys = torch.arange(1, h)
    vals = torch.arange(h, V)
    if constrained:  # of the trained columns, the share in key rows (G_kq) / value rows (G_vv)
        kk_share = float((kq[1:h][:, keys] ** 2).sum() / (kq[:, keys] ** 2).sum())
        vvs_share = float((vv[h:][:, vals] ** 2).sum() / (vv[:, vals] ** 2).sum())
    else:  # the key × key (value × value) sub-block's share of the whole block
        kk_share = float((kq[1:h, 1:h] ** 2).sum() / (kq**2).sum())
        vvs_share = float((vv[h:, h:] ** 2).sum() / (vv**2).sum())
    k_diag = float((kq[:, keys].argmax(0) == keys).double().mean())
    v_diag = float((vv[:, vals].argmax(0) == vals).double().mean())
    return dict(kk_share=kk_share, vv_share=vvs_share, key_diag_hit=k_diag, value_diag_hit=v_diag)


def _xi_index(x: torch.Tensor, V: int):
    """For token ids x (B, L): indices of the two ones of ξ_t = (x_{t-1}; x_t) (x_{-1} = 0 vector → -1)."""
    prev = torch.cat([torch.full_like(x[:, :1], -1), x[:, :-1]], 1)
    return prev, V + x


def _xi(x: torch.Tensor, V: int) -> torch.Tensor:
    """One-hot ξ (B, L, 2V)."""
    B, L = x.shape
    xi = torch.zeros(B, L, 2 * V, dtype=torch.float64)
    prev, cur = _xi_index(x, V)
    xi.scatter_(2, cur[..., None], 1.0)
    ok = prev >= 0
    xi[ok.nonzero(as_tuple=True) + (prev[ok],)] = 1.0
    return xi


def ideal_table(keys_row: torch.Tensor, values_row: torch.Tensor, V: int) -> torch.Tensor:
    """Ideal H_t = Σ_n v_n k_nᵀ (V × V): ones at (v_n, k_n)."""
    H = torch.zeros(V, V, dtype=torch.float64)
    H[values_row, keys_row] = 1.0
    return H


def hash_tables(model, weights: dict, x: torch.Tensor, t: int) -> dict:
    """Hash tables at time t for token ids x (B, L): ``h`` (B, D_in, N) the raw state, ``H1`` = P_out h
    (B, D, N, the compressed table H'_t) and ``H2`` = query half of Π_v,out h Π_q,in (B, V, V, ≈ H_t)."""
    ops = invariant_operators(weights)
    with torch.no_grad():
        _, internals = model(x, return_internals=True)
    D = weights["E"].shape[0]
    Din = ops["E_in"].shape[0]
    x_hat = internals[0]["x_hat"].double()
    Bm = internals[0]["B"].double()
    if x_hat.dim() == 4:
        raise ValueError("pass a single model (ensemble=None) to hash_tables.")
    # crop the padded ensemble layout to the member's own channels (idx as in member_weights)
    idx = torch.cat([torch.arange(D) + j * model.d_model for j in range(Din // D)])
    N = weights["S_B"].shape[0]
    x_hat, Bm = x_hat[..., idx], Bm[..., :N]
    h = torch.einsum("bti,btn->bin", x_hat[:, : t + 1], Bm[:, : t + 1])
    H1 = torch.einsum("di,bin->bdn", torch.as_tensor(weights["P_out"], dtype=torch.float64), h)
    V = model.vocab_size
    H2 = torch.einsum("vi,bin,nq->bvq", ops["Pv_out"], h, ops["Pq_in"][:, V:])
    return dict(h=h, H1=H1, H2=H2)


def attention_maps(model, x: torch.Tensor) -> dict:
    """Implicit attention α'_{tτ} = B_τᵀ C_t (B, L, L; row t = query side, column τ) and the ideal
    α_{tτ} = [x_{τ-1} = x_t] (lower-triangular)."""
    with torch.no_grad():
        _, internals = model(x, return_internals=True)
    Bm, Cm = internals[0]["B"].double(), internals[0]["C"].double()
    L = x.shape[1]
    tri = torch.tril(torch.ones(L, L, dtype=torch.float64))
    learned = torch.einsum("btn,bsn->bts", Cm, Bm) * tri
    prev = torch.cat([torch.full_like(x[:, :1], -1), x[:, :-1]], 1)
    ideal = (prev[:, None, :] == x[:, :, None]).double() * tri
    return dict(learned=learned, ideal=ideal)


def conv_maps(weights: dict, x: torch.Tensor) -> dict:
    """Fig. 5: M^v_{tτ} = x_tᵀ G_vv ξ_τ (values copied: diagonal) and M^k_{tτ} = ξ_τᵀ G_kq ξ'_t where ξ'_t has
    x_t in its query half (keys shifted: τ = t + 1). Shapes (B, L, L)."""
    ops = invariant_operators(weights)
    V = ops["G_vv"].shape[0]
    xi = _xi(x, V)
    onehot = torch.nn.functional.one_hot(x, V).double()
    Mv = torch.einsum("btv,vw,bsw->bts", onehot, ops["G_vv"], xi)
    q = torch.cat([torch.zeros_like(onehot), onehot], -1)  # x_t as a query
    Mk = torch.einsum("bsw,wu,btu->bts", xi, ops["G_kq"], q)
    return dict(Mv=Mv, Mk=Mk)


def auroc(scores: torch.Tensor, positive: torch.Tensor) -> float:
    """Area under the ROC curve: the probability that a random positive entry scores above a random negative
    one (ties count ½). ``scores`` and the boolean ``positive`` have the same shape."""
    s, pos = scores.flatten().double(), positive.flatten().bool()
    ranks = torch.empty_like(s)
    order = torch.argsort(s)
    ranks[order] = torch.arange(1, s.numel() + 1, dtype=torch.float64)
    for v in torch.unique(s[order][1:][s[order][1:] == s[order][:-1]]):  # average ranks of ties
        tie = s == v
        ranks[tie] = ranks[tie].mean()
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def check_d1_to_d5(model, weights: dict, x: torch.Tensor, y: torch.Tensor, Nf: int) -> dict:
    """The mechanistic numbers of Figs. 2–5 for one model on MQAR sequences (x, y) of shape (B, L):
    block shares (Fig. 2), selectivity on the trained columns (App. D), the hash table at t = 2N_f − 1
    (Fig. 3: per-fact argmax hit rate and the AUROC of the fact entries within the values × keys block that
    the figure draws), the implicit attention (Fig. 4) and the conv copy-and-shift (Fig. 5)."""
    ops = invariant_operators(weights)
    out = {}
    out.update(block_energy(ops["G_vv"], ops["G_kq"]))
    out.update(selectivity(ops["G_vv"], ops["G_kq"]))
    out.update(
        {
            f"{k}_all_columns": v
            for k, v in selectivity(ops["G_vv"], ops["G_kq"], constrained=False).items()
            if k in ("kk_share", "vv_share")
        }
    )
    V = ops["G_vv"].shape[0]
    ctx = 2 * Nf
    # D3: hash table at t = 2N_f - 1
    tabs = hash_tables(model, weights, x, ctx - 1)["H2"]
    keys, vals = x[:, 0:ctx:2], x[:, 1:ctx:2]
    hits, aucs, corrs = [], [], []
    h = V // 2
    for b in range(x.shape[0]):
        col = tabs[b][:, keys[b]]  # (V, Nf)
        hits.append((col[h:].argmax(0) + h == vals[b]).double())
        ideal = ideal_table(keys[b], vals[b], V)
        block, fact = tabs[b][h:, 1:h], ideal[h:, 1:h] > 0  # values × keys (token 0 is never a key)
        aucs.append(auroc(block, fact))
        corrs.append(float(np.corrcoef(tabs[b].flatten().numpy(), ideal.flatten().numpy())[0, 1]))
    out["d3_fact_hit"] = float(torch.cat(hits).mean())
    out["d3_auroc"] = float(np.mean(aucs))
    out["d3_corr_full_table"] = float(np.mean(corrs))
    # D4: argmax of α' over τ at query rows = matching key position + 1
    att = attention_maps(model, x)["learned"]
    qb, qt = (y != -100).nonzero(as_tuple=True)
    key_pos = torch.stack([(x[b, :ctx:2] == x[b, t]).nonzero()[0, 0] * 2 for b, t in zip(qb.tolist(), qt.tolist())])
    out["d4_hit"] = float((att[qb, qt].argmax(-1) == key_pos + 1).double().mean())
    # D5: conv copy (values: argmax_τ M^v = t) and shift (context keys: argmax_τ≤2Nf M^k = t+1)
    cm = conv_maps(weights, x)
    vpos = torch.arange(1, ctx, 2)
    out["d5_value_copy"] = float((cm["Mv"][:, vpos].argmax(-1) == vpos).double().mean())
    kpos = torch.arange(0, ctx, 2)
    out["d5_key_shift"] = float((cm["Mk"][:, kpos, : ctx + 1].argmax(-1) == kpos + 1).double().mean())
    return out


def superposition_guess_accuracy(
    V: int, Nf: int, L: int, *, Nk: int = 2, n: int = 4000, seed: int = 987_654, pad: str = "full"
) -> float:
    """Expected accuracy on :func:`~mamba_recall.tasks.mqar.mqar`'s ``repeated_keys`` sequences of a reader that sees
    only the superposition of the ``N_k`` values stored after the queried key (Remark 3: a one-layer circuit returns
    ≈ v₁ + … + v_{N_k}) and answers its argmax: the most frequent stored value, ties broken uniformly. Computed on
    ``n`` sequences drawn from the generator itself, so it includes what the generator does that 1/N_k ignores
    (the earlier chunks' fresh values can repeat the last one: ≈ 0.508 at N_k = 2 and ≈ 0.349 at N_k = 3 for
    V = 128). Exact in expectation up to the sampling of ``n`` sequences (standard error ≤ 0.5/√(n N_f))."""
    from mamba_recall.tasks.mqar import mqar

    x, y = mqar(V, Nf, L, n, seed, variant="repeated_keys", Nk=Nk, pad=pad)
    x, y = x.numpy(), y.numpy()
    ctx = 2 * Nf * Nk
    keys = x[:, 0:ctx:2].reshape(n, Nk, Nf)  # (sequence, chunk, slot)
    vals = x[:, 1:ctx:2].reshape(n, Nk, Nf)
    rows, cols = np.nonzero(y >= 0)  # every key is queried once: N_f queries per sequence, in row order
    q, label = x[rows, cols].reshape(n, -1), y[rows, cols].reshape(n, -1)  # (sequence, query)
    hit = keys[:, None] == q[:, :, None, None]  # (sequence, query, chunk, slot): the key's slot in each chunk
    stored = (vals[:, None] * hit).sum(-1)  # (sequence, query, chunk): the value written after it in each chunk
    same = stored[..., :, None] == stored[..., None, :]
    cnt = same.sum(-1)  # how often each stored value occurs among the N_k
    top = cnt == cnt.max(-1, keepdims=True)  # the argmax of the superposition (ties: every top value)
    distinct_top = (top / cnt).sum(-1)
    right_top = (top * (stored == label[..., None]) / cnt).sum(-1)
    return float((right_top / distinct_top).mean())


def context_guess_accuracy(V: int, Nf: int, L: int, *, n: int = 2000, seed: int = 987_654) -> float:
    """Expected accuracy on :func:`~mamba_recall.tasks.mqar.mqar`'s standard sequences of a reader that knows which
    tokens are the context's values but not which key each belongs to, and answers one of them uniformly at random
    (the chance level of a model that learned the task's format and nothing of its associations). The generator
    draws a sequence's values without replacement, so this is 1/N_f; it is computed from ``n`` generated sequences
    so that a change of the generator changes it."""
    from mamba_recall.tasks.mqar import mqar

    x, y = mqar(V, Nf, L, n, seed)
    x, y = x.numpy(), y.numpy()
    vals = x[:, 1 : 2 * Nf : 2]  # (sequence, fact)
    rows, cols = np.nonzero(y >= 0)
    label = y[rows, cols]
    stored = vals[rows]
    distinct = np.array([len(set(r)) for r in vals])[rows]
    return float(((stored == label[:, None]).any(1) / distinct).mean())


def superposition_guess_exact(V: int, Nk: int) -> float:
    """:func:`superposition_guess_accuracy` in closed form, from the generator's sampling law: the value written after
    a key in each of the ``N_k`` chunks is uniform over the ``V/2`` value tokens and independent across chunks (each
    chunk draws its values afresh and re-permutes the keys). Sums over the patterns of equal values (the set partitions
    of the N_k chunks, weighted by K(K−1)…(K−b+1)/K^{N_k} for b distinct values, K = V/2) the chance that the most
    frequent value (ties uniform) is the last chunk's: 1/2 + 1/(2K) at N_k = 2 (0.5078 at V = 128), 1429/4096 = 0.3489
    at N_k = 3, V = 128. The tests check it against the generator's own sequences."""
    K = V - V // 2  # the value tokens the generator draws from

    def partitions(n):  # restricted growth strings: block label of each chunk
        if n == 0:
            yield []
            return
        for rest in partitions(n - 1):
            for b in range(max(rest, default=-1) + 2):
                yield rest + [b]

    total = 0.0
    for labels in partitions(Nk):
        blocks = max(labels) + 1
        weight = math.prod(K - i for i in range(blocks)) / K**Nk
        sizes = [labels.count(b) for b in range(blocks)]
        top = [b for b in range(blocks) if sizes[b] == max(sizes)]
        total += weight * (labels[-1] in top) / len(top)
    return total


def untrained_probes(V: int, D: int, N: int, seed: int, x, y, Nf: int, held_out) -> tuple[dict, float]:
    """The null control of the §3.2 mechanism claims: the same linear Mamba (``LinearMamba(V, D, N, seed=seed)``)
    at initialisation, probed as a trained one is (:func:`check_d1_to_d5` on the probe sequences ``x, y``), and its
    held-out accuracy on ``held_out`` = (inputs, labels) → (probes, accuracy)."""
    from mamba_recall.models.linear_mamba import LinearMamba
    from mamba_recall.train import evaluate

    init = LinearMamba(V, D, N, seed=seed).cpu().double()
    acc = float(evaluate(init, *held_out, per_member=True)[0])
    return check_d1_to_d5(init, init.member_weights(0), x, y, Nf), acc
