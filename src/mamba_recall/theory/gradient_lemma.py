r"""Lemma 1 of paper 000 (Sec. 4, App. D): the population gradient of W_Δ at W_Δ = 0.

Setting (M-th): |K| = 1 (key 0), B = C = 1, no softplus (Δ_t = W_Δ x̂_t), no forgetting (Λ = 0, the
paper's "Λ = 1 (no forgetting)"), fixed W_o = [−I I]. Sequences x_0..x_T with x_0 = x_T = 0 and
x_1..x_{T−1} i.i.d. uniform on {1..V−1}; loss ℓ = CE(z, x_1) at position T only, with

    h_T = Σ_{t=0}^{T} Δ_t ⊙ x̂_t   (Eq. 8, the paper's typo x̂_t → x̂_i fixed),   z_a = h_T[V+a] − h_T[a].

Since x̂_t = [e_{x_{t−1}}; e_{x_t}] has two ones, (W x̂_t)[r] = W[r, x_{t−1}] + W[r, V+x_t] and only
channels r = x_{t−1} and r = V + x_t receive input. So h_T[r] = Σ_c W[r, c] M[r, c] with the
co-occurrence matrix M = Σ_t x̂_t x̂_tᵀ: z is *linear* in W. At W = 0, ∂ℓ/∂z_a = 1/V − 1[a = x_1]
(Eq. 20, softmax over all V logits), hence per sequence (PyTorch (out, in) indexing)

    ∂ℓ/∂W[r, c] = s(r) · (1/V − 1[r mod V = x_1]) · M[r, c],   s(r) = −1 (r < V), +1 (r ≥ V).

The population gradient G = E[∂ℓ/∂W] has a closed form (:func:`exact_population_gradient`, our
derivation, checked against exact enumeration), which we compare with the paper's Eq. (5)::

    ∂L/∂W_{i,j} = −1/T (i = 0),  2/T (i = V),  ≈ T/V² − 1/V (0 < i < V),  ≈ −T/V² + 1/V (i > V).

Findings (see the chapter): the paper's "rows 0 and V" are our *columns* 0 and V (the transposed
reading); there the signs and the −1 : 2 ratio agree, but the scale is 1/V, not 1/T; the other
entries have the opposite sign of Eq. (5) and are of the same order 1/V; one step solves the task
only when no value token repeats, |V| ≫ T² (a birthday condition), not |V| ≫ T.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ..tasks.latest_value import all_theory_sequences, theory_batch


def _check_vt(V, T):
    if isinstance(V, bool) or not isinstance(V, (int, np.integer)) or V < 3:
        raise ValueError(f"V (vocabulary size) must be an integer >= 3, got {V!r}.")
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 3:
        raise ValueError(f"T must be an integer >= 3 (the closed form assumes T >= 3), got {T!r}.")
    return int(V), int(T)


# ----------------------------------------------------------------------------------- the model, fast
def theory_logits(W: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """z (n, V) = W_o h_T with W_o = [−I I]."""
    d = W.shape[0]
    V = d // 2
    if W.shape != (d, d) or d % 2:
        raise ValueError(f"W must be square (2V, 2V), got {tuple(W.shape)}.")
    n = x.shape[0]
    rows = torch.arange(n)[:, None]
    prev, cur = x[:, :-1], x[:, 1:]
    z = W.new_zeros(n, V)  # z_a = h[V+a] − h[a], accumulated without the (n, 2V) state
    z = z.index_put((rows.expand_as(prev), prev), -(W[prev, prev] + W[prev, V + cur]), accumulate=True)
    z = z.index_put((rows.expand_as(cur), cur), W[V + cur, prev] + W[V + cur, V + cur], accumulate=True)
    c0 = x[:, 0]
    return z.index_put((torch.arange(n), c0), W[V + c0, V + c0], accumulate=True)


def theory_loss(W: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the final logits against x_1 (Eq. 10)."""
    return F.cross_entropy(theory_logits(W, x), x[:, 1])


# ----------------------------------------------------------------------------------- gradients
def sequence_gradients(x: torch.Tensor, V: int) -> torch.Tensor:
    """Analytic ∂ℓ/∂W at W = 0 for each sequence (n, 2V, 2V) (float64): s(r)(1/V − 1[r mod V = x_1]) M[r, c]."""
    x = torch.as_tensor(x)
    n = x.shape[0]
    prev = F.one_hot(x[:, :-1], V).double()
    cur = F.one_hot(x, V).double()
    xhat = torch.cat([torch.cat([prev.new_zeros(n, 1, V), prev], 1), cur], -1)  # (n, T+1, 2V)
    M = xhat.transpose(1, 2) @ xhat
    g = 1.0 / V - F.one_hot(x[:, 1], V).double()  # (n, V)
    s = torch.cat([-torch.ones(V), torch.ones(V)]).double()
    row = s * torch.cat([g, g], -1)  # (n, 2V)
    return row[:, :, None] * M


def autograd_gradient(x: torch.Tensor, V: int, model=None) -> torch.Tensor:
    """∂(mean ℓ)/∂W_Δ at W_Δ = 0 by autograd through the Eq. 6–7 model (the SimplifiedMamba
    theory variant on the library's scan, float64). x (n, T+1)."""
    from ..models.simplified_recall import theory_model

    model = model or theory_model(V)
    model = model.double()
    with torch.no_grad():
        model.W_delta.zero_()
    model.zero_grad()
    logits = model(x)[:, -1]
    F.cross_entropy(logits, x[:, 1]).backward()
    return model.W_delta.grad.detach().clone()


def population_gradient(
    V: int, T: int, *, n: int | None = None, seed: int = 0, chunks: int = 20, max_enumerate: int = 200_000
):
    """E[∂ℓ/∂W] at W = 0: exact by enumerating all (V−1)^(T−1) sequences when that is at most
    ``max_enumerate`` (returns stderr = 0), else Monte Carlo over ``n`` sequences (autograd on
    :func:`theory_loss`, in ``chunks`` chunks for an entrywise standard error).
    Returns ``(G (2V, 2V) float64, stderr (2V, 2V), method)``."""
    V, T = _check_vt(V, T)
    if n is None and (V - 1) ** (T - 1) <= max_enumerate:
        x = all_theory_sequences(V, T, max_count=max_enumerate)
        G = torch.zeros(2 * V, 2 * V, dtype=torch.float64)
        for part in torch.split(x, 20_000):
            G += sequence_gradients(part, V).sum(0)
        return G / x.shape[0], torch.zeros_like(G), "enumeration"
    n = n or 200_000
    x, _ = theory_batch(n, V, T, seed=seed)
    grads = []
    for part in torch.chunk(x, chunks):
        W = torch.zeros(2 * V, 2 * V, dtype=torch.float64, requires_grad=True)
        theory_loss(W, part).backward()
        grads.append(W.grad)
    grads = torch.stack(grads)
    return grads.mean(0), grads.std(0) / np.sqrt(len(grads)), f"Monte Carlo n={n}"


def exact_population_gradient(V: int, T: int) -> torch.Tensor:
    """Closed form of G = E[∂ℓ/∂W_Δ] at W_Δ = 0, (2V, 2V) float64, (out, in) indexing; m = V − 1.

    G[0,0] = G[V+a,0] = −1/V;  G[V,V] = 2/V;  G[0,V+b] = −1/(Vm);  G[V,b] = 1/(Vm);
    G[a,a] = −G[V+a,V+a] = 1/m + (T−V−1)/(V m²);  G[a,V] = −1/(Vm) + 1/m²;
    G[a,V+b] = −G[V+a,a] = −(T−2)/(V m²) + (1/m)(1/m + (T−3)/m²);  G[V+a,b] = (T−2)/(V m²) − (T−3)/m³ (a ≠ b);
    every other entry 0 (a, b ≥ 1).
    """
    V, T = _check_vt(V, T)
    m = V - 1
    G = torch.zeros(2 * V, 2 * V, dtype=torch.float64)
    vals = torch.arange(1, V)
    G[0, 0] = -1 / V
    G[V + vals, 0] = -1 / V
    G[V, V] = 2 / V
    G[0, V + vals] = -1 / (V * m)
    G[V, vals] = 1 / (V * m)
    diag = 1 / m + (T - V - 1) / (V * m**2)
    G[vals, vals] = diag
    G[V + vals, V + vals] = -diag
    G[vals, V] = -1 / (V * m) + 1 / m**2
    cross = -(T - 2) / (V * m**2) + (1 / m) * (1 / m + (T - 3) / m**2)
    G[vals[:, None], V + vals[None, :]] = cross
    off = (T - 2) / (V * m**2) - (T - 3) / m**3
    block = torch.full((m, m), off, dtype=torch.float64)
    block.fill_diagonal_(0.0)
    G[V + vals[:, None], vals[None, :]] = block
    G[V + vals, vals] = -cross
    return G


def paper_eq5(V: int, T: int, reading: str = "transposed") -> torch.Tensor:
    """The paper's Eq. (5) as a (2V, 2V) matrix in (out, in) indexing.

    Eq. (5) gives ∂L/∂W_{i,j} as a function of i only. ``reading="literal"``: i is our row (output
    channel); ``"transposed"``: i is our column (input coordinate) — the reading under which the
    paper's "rows 0 and V" drive the write / read, as Fig. 8 and App. C describe.
    """
    V, T = _check_vt(V, T)
    f = torch.empty(2 * V, dtype=torch.float64)
    f[0], f[V] = -1 / T, 2 / T
    f[1:V] = T / V**2 - 1 / V
    f[V + 1 :] = -T / V**2 + 1 / V
    if reading == "literal":
        return f[:, None].expand(2 * V, 2 * V).clone()
    if reading == "transposed":
        return f[None, :].expand(2 * V, 2 * V).clone()
    raise ValueError(f"unknown reading {reading!r}; use 'transposed' or 'literal'.")


ENTRY_GROUPS = (
    # name, (row, col) of a representative entry as a function of V (a = 1, b = 2)
    ("G[0,0] (prev key → chan 0)", lambda V: (0, 0)),
    ("G[V+a,0] (write: prev key → value chan)", lambda V: (V + 1, 0)),
    ("G[V,V] (cur key → chan V)", lambda V: (V, V)),
    ("G[0,V+b]", lambda V: (0, V + 2)),
    ("G[V,b]", lambda V: (V, 2)),
    ("G[a,a] (frequency diag, 1st half)", lambda V: (1, 1)),
    ("G[V+a,V+a] (frequency diag, 2nd half)", lambda V: (V + 1, V + 1)),
    ("G[a,V]", lambda V: (1, V)),
    ("G[a,V+b]", lambda V: (1, V + 2)),
    ("G[V+a,a]", lambda V: (V + 1, 1)),
    ("G[V+a,b], a≠b", lambda V: (V + 1, 2)),
)


def compare_with_eq5(V: int, T: int, G: torch.Tensor | None = None) -> pd.DataFrame:
    """Entry-group table: our exact value (or ``G``'s), Eq. (5) under both readings, sign agreement
    and the ratio ours / Eq. 5 (transposed reading)."""
    V, T = _check_vt(V, T)
    G = exact_population_gradient(V, T) if G is None else G
    tr, lit = paper_eq5(V, T, "transposed"), paper_eq5(V, T, "literal")
    rows = []
    for name, where in ENTRY_GROUPS:
        r, c = where(V)
        ours, p_tr, p_lit = float(G[r, c]), float(tr[r, c]), float(lit[r, c])
        rows.append(
            {
                "entry": name,
                "ours": ours,
                "eq5_transposed": p_tr,
                "eq5_literal": p_lit,
                "sign_agrees_transposed": bool(np.sign(ours) == np.sign(p_tr)),
                "ratio_ours_over_eq5": ours / p_tr if p_tr != 0 else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def eq5_agreement(V: int, T: int) -> dict:
    """Scalar summaries of how Eq. (5) matches the exact G: cosine similarity (both readings),
    share of sign agreement on the nonzero exact entries, the share of ‖G‖² in the key columns 0, V."""
    G = exact_population_gradient(V, T)
    out = {"V": V, "T": T}
    nz = G != 0
    for reading in ("transposed", "literal"):
        P = paper_eq5(V, T, reading)
        out[f"cosine_{reading}"] = float((G * P).sum() / (G.norm() * P.norm()))
        out[f"sign_agree_{reading}"] = float((torch.sign(G[nz]) == torch.sign(P[nz])).double().mean())
    out["key_column_share"] = float((G[:, [0, V]] ** 2).sum() / (G**2).sum())
    out["key_entry_ratio_ours_over_eq5"] = float(G[V + 1, 0] / (-1 / T))
    return out


def write_component(V: int) -> torch.Tensor:
    """The key / write part of −G: W[V+a, 0] = W[0, 0] = 1/V, W[V, V] = −2/V (and −G[0, V+b], −G[V, b])."""
    G = exact_population_gradient(V, 3)  # the key columns do not depend on T
    W = torch.zeros_like(G)
    W[:, 0] = -G[:, 0]
    W[:, V] = -G[:, V]
    W[1:V, V] = 0.0  # G[a, V] belongs to the frequency part (it depends on the repeats)
    return W


@torch.no_grad()
def one_step_accuracy(W: torch.Tensor, V: int, T: int, *, n: int = 20_000, seed: int = 1) -> float:
    """Accuracy (argmax z = x_1; ties count as errors) of W on n fresh theory sequences.
    For W = −ηG the result does not depend on η > 0 (z is linear in W)."""
    x, y = theory_batch(n, V, T, seed=seed)
    z = theory_logits(W.double(), x)
    top = z.max(-1).values
    correct = (z.gather(1, y[:, None]).squeeze(1) == top) & ((z == top[:, None]).sum(-1) == 1)
    return float(correct.double().mean())


def one_step_table(Vs, Ts, *, n: int = 20_000, seed: int = 1) -> pd.DataFrame:
    """One-step accuracy of W = −G (full gradient) and of its write component, over a (V, T) grid."""
    rows = []
    for V in Vs:
        for T in Ts:
            G = exact_population_gradient(V, T)
            rows.append(
                {
                    "V": V,
                    "T": T,
                    "full_step": one_step_accuracy(-G, V, T, n=n, seed=seed),
                    "write_only": one_step_accuracy(write_component(V), V, T, n=n, seed=seed),
                    "chance": 1 / (V - 1),
                    "V_over_T2": V / T**2,
                }
            )
    return pd.DataFrame(rows)


def gd_dynamics(
    V: int,
    T: int,
    *,
    lr: float = 1.0,
    steps: int = 100,
    batch: int = 4096,
    seed: int = 0,
    eval_n: int = 4096,
    record_every: int = 1,
) -> pd.DataFrame:
    """Plain gradient descent on M-th from W = 0 with fresh batches (discrete gradient flow).
    Records the key-column mean W[V+a, 0], the frequency-diagonal mean W[V+a, V+a], W[V, V], W[0, 0],
    the loss and the held-out accuracy. Stable for lr ≲ 2 (V/T)²."""
    V, T = _check_vt(V, T)
    W = torch.zeros(2 * V, 2 * V, dtype=torch.float64, requires_grad=True)
    xe, ye = theory_batch(eval_n, V, T, seed=10_000 + seed)
    rows = []
    for s in range(steps + 1):
        if s % record_every == 0 or s == steps:
            with torch.no_grad():
                z = theory_logits(W, xe)
                rows.append(
                    {
                        "step": s,
                        "key_column": float(W[V + 1 :, 0].mean()),
                        "frequency_diag": float(torch.diagonal(W)[V + 1 :].mean()),
                        "W[V,V]": float(W[V, V]),
                        "W[0,0]": float(W[0, 0]),
                        "loss": float(F.cross_entropy(z, ye)),
                        "accuracy": float((z.argmax(-1) == ye).double().mean()),
                    }
                )
        if s == steps:
            break
        x, _ = theory_batch(batch, V, T, seed=seed * 100_003 + s)
        loss = theory_loss(W, x)
        (g,) = torch.autograd.grad(loss, W)
        with torch.no_grad():
            W -= lr * g
    return pd.DataFrame(rows)


def train_softplus_theory(
    V: int, T: int, *, steps: int = 400, lr: float = 3e-2, batch: int = 64, seed: int = 0, eval_n: int = 1024
) -> dict:
    """The paper's remark "in practice the simplified Mamba model also succeeds for |V| ≤ T with
    Δ_t = Softplus(W_Δ x̂_t)": train M1 (softplus, learnable Λ, N(0, 0.02²) init) with Adam on the theory
    distribution, loss at position T only. Returns accuracy, steps and the W_Δ block numbers."""
    from ..models.simplified_recall import m1, wdelta_block_mass
    from ..train import Recipe, Stopping, evaluate, train

    V, T = _check_vt(V, T)

    def batch_of(n, s):
        x, y = theory_batch(n, V, T, seed=s)
        labels = torch.full_like(x, -100)
        labels[:, -1] = y
        return x, labels

    torch.manual_seed(seed)
    model = m1(V, seed=seed)
    xe, ye = batch_of(eval_n, 10_000_019 + seed)
    res = train(
        model,
        lambda s: batch_of(batch, seed * 1_000_003 + s),
        steps=steps,
        recipe=Recipe(lr=lr, weight_decay=0.0, schedule="constant"),
        stop=Stopping(eval_every=50, target_accuracy=1.0),
        eval_batch=(xe, ye),
        progress=False,
        seed=seed,
        num_threads=1,
    )
    return {
        "V": V,
        "T": T,
        "accuracy": evaluate(model, xe, ye),
        "steps_run": res.steps_run,
        **{
            k: v
            for k, v in wdelta_block_mass(model.W_delta, V).items()
            if k in ("argmax_column_of_second_half_means", "column0_over_mean_abs", "columnV_mean")
        },
    }
