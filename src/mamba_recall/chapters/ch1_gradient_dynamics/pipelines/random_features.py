r"""§2.2's last remark: the fixed embedding and convolution of the simplified model "correspond (up to rotation) to
using embedding and convolution weights fixed at random initialization with infinite width, leading to the desired
orthogonality".

The fixed layers give the pair feature x̂(a, b) = [e_a; e_b] ∈ R^{2|V|} (Eq. 1: the kernel-2 depthwise convolution of
the doubled one-hot embedding), whose Gram matrix over all |V|² pairs is

    ⟨[e_a; e_b], [e_a'; e_b']⟩ = δ_aa' + δ_bb',   cosine (δ_aa' + δ_bb') / 2.

Frozen random layers of width w: an embedding E ∈ R^{w×|V|} and depthwise kernel taps c₀, c₁ ∈ R^w, all entries
i.i.d. N(0, 1), give x̂_w(a, b) = c₀ ⊙ E e_a + c₁ ⊙ E e_b ∈ R^w, and

    ⟨x̂_w(a, b), x̂_w(a', b')⟩ = Σ_i c₀ᵢ² E_ia E_ia' + c₀ᵢ c₁ᵢ (E_ia E_ib' + E_ib E_ia') + c₁ᵢ² E_ib E_ib',

whose expectation is w (δ_aa' + δ_bb') because E[c₀ᵢ c₁ᵢ] = 0. Each entry of the cosine matrix is a mean of w
independent terms, so it converges to the fixed layers' (δ_aa' + δ_bb') / 2 with an error of order w^{-1/2}; two sets
of vectors with the same Gram matrix differ by an orthogonal map ("up to rotation"). With correlated taps (c₁ = c₀,
the null) the cross term survives: x̂_w(a, b) = x̂_w(b, a), cosine 1 where the fixed layers give 0, at every width.

Only the features' geometry is at stake: the SSM acts channel by channel (Δ_t ⊙ x̂_t, exp(Λ ⊙ Δ_t)), so it is not
rotation-equivariant, and equal Gram matrices do not make the two models equivalent.
"""

from __future__ import annotations

import numpy as np

#: the widths at which the random features are drawn (the limit is read from how the error falls with w)
WIDTHS = (16, 64, 256, 1024, 4096)


def pair_cosines_fixed(V: int) -> np.ndarray:
    """The cosine matrix of the fixed layers' pair features [e_a; e_b] over the |V|² pairs (a, b) in row-major order
    (pair index a·|V| + b): (δ_aa' + δ_bb') / 2, shape (|V|², |V|²)."""
    eye = np.eye(V)
    return (np.kron(eye, np.ones((V, V))) + np.kron(np.ones((V, V)), eye)) / 2


def pair_cosines_random(V: int, width: int, rng: np.random.Generator, correlated: bool = False) -> np.ndarray:
    """The cosine matrix of x̂_w(a, b) = c₀ ⊙ E e_a + c₁ ⊙ E e_b over the |V|² pairs (row-major, as
    :func:`pair_cosines_fixed`) for one draw of E (w × |V|), c₀, c₁ (w), i.i.d. N(0, 1); ``correlated``: c₁ = c₀."""
    E = rng.standard_normal((width, V))
    c0 = rng.standard_normal(width)
    c1 = c0 if correlated else rng.standard_normal(width)
    X = (c0[:, None, None] * E[:, :, None] + c1[:, None, None] * E[:, None, :]).reshape(width, V * V)  # (w, |V|²)
    X = X / np.linalg.norm(X, axis=0, keepdims=True)
    return X.T @ X


def gram_errors(V: int, seed: int, widths=WIDTHS, correlated: bool = False) -> dict:
    """For one draw per width (``seed``): the root-mean-square and the largest |cos_w − cos_fixed| over the distinct
    pairs of pairs, per width, and the least-squares slope of log rms error on log w (−1/2 where the random layers
    approach the fixed ones as the law of large numbers says)."""
    rng = np.random.default_rng(seed)
    target = pair_cosines_fixed(V)
    off = ~np.eye(V * V, dtype=bool)
    rms, worst = [], []
    for w in widths:
        err = np.abs(pair_cosines_random(V, w, rng, correlated) - target)[off]
        rms.append(float(np.sqrt(np.mean(err**2))))
        worst.append(float(err.max()))
    slope = float(np.polyfit(np.log(widths), np.log(rms), 1)[0])
    return {"widths": list(widths), "rms": rms, "max": worst, "slope": slope}
