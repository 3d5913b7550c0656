r"""The hashing recall circuit of paper 002 (Thm 1, Thm 2, Lemma 1) as designed weights.

API (used by Chapter 2 and by Chapter 3's comparison with paper 002's Appendix I)
-------------------------------------------------------------------------
* :func:`thm1_weights(V)` — Thm 1 (Eq. 4, 22–28), non-compressive, D = N = V, expand 2, d_conv 2.
* :func:`thm2_weights(V, D, N, seed, construction)` — Thm 2 (Eq. 6, 38–44), JL-compressed,
  ``construction="code"`` (authors' code: unit-norm Gaussian token columns of E, F = √(D/N) Q[:, :N]^T
  with Q orthogonal, so F F^T = (D/N) I_N; needs V ≥ D ≥ N ≥ 1) or ``"iid"`` (E ~ N(0, 1/D),
  F ~ N(0, 1/N)).
* :func:`designed_model(V, D, N, ...)` — a :class:`~mamba_recall.models.linear_mamba.LinearMamba` with
  those weights loaded (float64 by default).
* :func:`designed_accuracy(V, D, N, Nf, L, ...)` — MQAR accuracy of the designed circuit, with the
  ``readout`` ``"full"`` (argmax over all V, as for trained models) or ``"values"`` (argmax over [V/2, V),
  the theory-faithful readout) and ``pad`` ``"full"`` (random padding, Zoology), ``"zero"`` (token 0 in the
  padding slots; its embedding is stored like any token) or ``"empty"`` (padding slots carry the zero vector:
  token 0 with its embedding column zeroed — token 0 is never a key or a value: the zero vector).
* :func:`lemma1_condition` — re-exported from :mod:`mamba_recall.theory.capacity`.

Weights are returned in the paper's layout as a dict of float64 tensors::

    E      (D, V)        embedding; the unembedding is E^T (tied)
    P_in   (D_in, D)     = (I_D; I_D)                      duplicate
    W_conv (D_in, 2)     = (1_D 0_D; 0_D 1_D)              column 0 = previous-token tap, 1 = current
    S_B    (N, D_in)     = (F | 0)   → B_t = F E x_{t-1} = Ẽ x_{t-1}   (key of the previous token)
    S_C    (N, D_in)     = (0 | F)   → C_t = F E x_t     = Ẽ x_t       (query = current token)
    P_out  (D, D_in)     = (0 | I_D)                       select the value half
    F      (N, D)        the key compression (Thm 1: F = I_V, E = I_V)

so that ``x̂_t = (E x_{t-1}; E x_t)`` and ``y_t = Σ_τ E^T E x_τ (Ẽ x_{τ-1})^T (Ẽ x_t)`` (Eq. 7).
Thm 1's "probability 1" needs the queried key to occur once before the query: Zoology's random padding can
repeat it (a pad equal to the queried key writes a second "fact"), so the exact check uses zero padding or the
values-only readout.
"""

from __future__ import annotations

import torch

from ..tasks.mqar import IGNORE_INDEX
from .capacity import lemma1_condition

__all__ = [
    "thm1_weights",
    "thm2_weights",
    "designed_model",
    "designed_accuracy",
    "lemma1_condition",
    "CONSTRUCTIONS",
    "READOUTS",
]

CONSTRUCTIONS = ("code", "iid")
READOUTS = ("full", "values")


def _block_weights(E: torch.Tensor, Fm: torch.Tensor) -> dict:
    D = E.shape[0]
    N = Fm.shape[0]
    I, Z = torch.eye(D, dtype=E.dtype), torch.zeros(D, D, dtype=E.dtype)
    W_conv = torch.zeros(2 * D, 2, dtype=E.dtype)
    W_conv[:D, 0] = 1.0  # first copy: previous-token tap → E x_{t-1}
    W_conv[D:, 1] = 1.0  # second copy: current-token tap → E x_t
    zN = torch.zeros(N, D, dtype=E.dtype)
    return dict(
        E=E,
        F=Fm,
        P_in=torch.cat([I, I], 0),
        W_conv=W_conv,
        S_B=torch.cat([Fm, zN], 1),
        S_C=torch.cat([zN, Fm], 1),
        P_out=torch.cat([Z, I], 1),
    )


def thm1_weights(V: int) -> dict:
    """Thm 1 (Eq. 4): E = I_V, D = N = V; exact recall when each queried key occurs once."""
    if isinstance(V, bool) or not isinstance(V, int) or V < 2:
        raise ValueError(f"V must be an integer >= 2, got {V!r}.")
    I = torch.eye(V, dtype=torch.float64)
    return _block_weights(I, I.clone())


def thm2_weights(V: int, D: int, N: int, seed: int = 0, construction: str = "code") -> dict:
    """Thm 2 (Eq. 6) with JL embeddings E (D×V) and key compression F (N×D); see the module docstring."""
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"unknown construction {construction!r}; use one of {CONSTRUCTIONS}.")
    for name, v in (("V", V), ("D", D), ("N", N)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}.")
    g = torch.Generator().manual_seed(int(seed))
    if construction == "iid":
        E = torch.randn(D, V, generator=g, dtype=torch.float64) / D**0.5
        Fm = torch.randn(N, D, generator=g, dtype=torch.float64) / N**0.5
    else:
        if not V >= D >= N:
            raise ValueError(
                f"construction='code' needs V ≥ D ≥ N, got V={V}, D={D}, N={N}; use N ≤ D ≤ V or construction='iid'."
            )
        rows = torch.randn(V, D, generator=g, dtype=torch.float64)
        E = (rows / rows.norm(dim=1, keepdim=True)).T.contiguous()
        Q, _ = torch.linalg.qr(torch.randn(D, D, generator=g, dtype=torch.float64))
        Fm = (D / N) ** 0.5 * Q[:, :N].T.contiguous()
    return _block_weights(E, Fm)


def designed_model(
    V: int,
    D: int | None = None,
    N: int | None = None,
    *,
    theorem: int = 2,
    seed: int = 0,
    construction: str = "code",
    dtype=torch.float64,
    device=None,
):
    """A single-layer :class:`LinearMamba` carrying the Thm 1 (``theorem=1``, D = N = V) or Thm 2 weights."""
    from ..models.linear_mamba import LinearMamba

    if theorem == 1:
        w, D, N = thm1_weights(V), V, V
    elif theorem == 2:
        if D is None or N is None:
            raise ValueError("theorem=2 needs D and N.")
        w = thm2_weights(V, D, N, seed, construction)
    else:
        raise ValueError(f"theorem must be 1 or 2, got {theorem!r}.")
    model = LinearMamba(V, D, N, 1, expand=2, d_conv=2, dtype=dtype, device=device)
    model.load_member(0, w)
    return model.eval()


@torch.no_grad()
def designed_accuracy(
    V: int,
    D: int | None,
    N: int | None,
    Nf: int,
    L: int,
    *,
    n_seq: int = 64,
    theorem: int = 2,
    seed: int = 0,
    data_seed: int = 12345,
    construction: str = "code",
    readout: str = "full",
    pad: str = "full",
    batch_size: int = 256,
    device=None,
    task: str = "mqar",
    **task_kw,
) -> float:
    """MQAR accuracy of the designed circuit on ``n_seq`` fresh sequences (``power_a=1``, as the authors' code).
    ``task`` ``"repeated_keys"`` (``Nk=…``) or ``"repeated_queries"`` (``Nq=…``, ``post_query=…``) evaluates the
    same single-layer circuit on the variants of App. G (Remarks 3 and 5)."""
    from ..tasks.mqar import mqar

    if readout not in READOUTS:
        raise ValueError(f"unknown readout {readout!r}; use one of {READOUTS}.")
    if pad not in ("full", "zero", "empty"):
        raise ValueError(f"unknown pad {pad!r}; use 'full', 'zero' or 'empty'.")
    model = designed_model(V, D, N, theorem=theorem, seed=seed, construction=construction, device=device)
    if pad == "empty":
        model.embedding.data[:, 0].zero_()
    pad_kw = {"pad": "full" if pad == "full" else "zero"}
    if task == "mqar":
        x, y = mqar(V, Nf, L, n_seq, data_seed, **pad_kw, **task_kw)
    elif task == "repeated_keys":
        x, y = mqar(V, Nf, L, n_seq, data_seed, variant="repeated_keys", **pad_kw, **task_kw)
    elif task == "repeated_queries":
        x, y = mqar(V, Nf, L, n_seq, data_seed, variant="repeated_queries", **task_kw)
    else:
        raise ValueError(f"unknown task {task!r}; use 'mqar', 'repeated_keys' or 'repeated_queries'.")
    correct = total = 0
    for i in range(0, n_seq, batch_size):
        logits = model(x[i : i + batch_size].to(device))
        if readout == "values":
            logits[..., : V // 2] = -float("inf")
        yy = y[i : i + batch_size].to(logits.device)
        m = yy != IGNORE_INDEX
        correct += int((logits.argmax(-1)[m] == yy[m]).sum())
        total += int(m.sum())
    return correct / total
