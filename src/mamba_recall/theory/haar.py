r"""Haar wavelets from Mamba basis functions (paper 003, §4.1, Thm. 1, Prop. 1, Cor. 1, App. A.2).

The simplified S6 of Eq. (8) has one input channel, a fixed :math:`B` and input dependence only
through the step :math:`\Delta(x)`. Its state component :math:`n` at time :math:`t` is an inner product
with a *data-dependent* basis function

.. math::

    h^M_n(t)=\int_0^t g^M_n(s;t,x)\,x(s)\,ds,\qquad
    g^M_n(s;t,x)=e^{-\lambda_n\int_s^t\Delta(x_r)\,dr}B_n .                       \tag{8}

With a time positional encoding :math:`\tilde x_s=[x_s;s]` and
:math:`\Delta(s)=\mathrm{softplus}(w_\Delta(s-\hat t))`, :math:`w_\Delta\to-\infty`, the basis tends to the
Heaviside :math:`B\,H(s-\hat t)` (Eqs. 20–22), and three of them with weights :math:`(1,-2,1)` at the
breakpoints :math:`a=2^{-j}k`, :math:`m=a+2^{-(j+1)}`, :math:`b=2^{-j}(k+1)` give the Haar wavelet
:math:`\psi_{j,k}` (Eq. 18, Thm. 1).

This module has

* the continuous basis (quadrature) and its :math:`L^2` error against :math:`\psi_{j,k}`
  (:func:`continuous_basis`, :func:`continuous_haar_error`) — it falls like :math:`|w|^{-1/4}`, not
  :math:`|w|^{-1}`, and is never uniformly small near a jump (Thm. 1's "for all s" holds only away from the jumps);
* three *discrete* constructions run on the library's scans, exact to machine precision:
  ``aonly`` (Δ only in the decay, faithful to Eq. 8: 3 channels),
  ``euler`` / ``zoh`` (the real S6 with :math:`\bar B_t=\Delta_tB`; a step in Δ there *selects one
  sample* instead of making a Heaviside, so each Heaviside is built from two ramp channels, 6 channels
  in all — our adaptation);
* Prop. 1 (absolute time from an all-ones input) and Cor. 1's error curves (best-:math:`N` Haar, i.e.
  :math:`N=1+3N_w` Mamba bases, against :math:`N` Fourier bases, the best S4D can do), for squared
  :math:`L^2` errors (the proof, Eqs. 28–31, sums squared coefficients).

Shapes: sequences ``x`` are ``(batch, T)`` float64; 1-based time ``t = 1..T`` as in the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..scan import linear_recurrence_chunked, selective_scan, ssd_scan

DISCRETIZATIONS = ("aonly", "euler", "zoh")

__all__ = [
    "attention_sensitivity",
    "haar_ssd_output",
    "DISCRETIZATIONS",
    "HaarS6",
    "continuous_basis",
    "continuous_haar_error",
    "continuous_sup_error",
    "fourier_sq_error",
    "haar_best_sq_error",
    "haar_coefficients_piecewise",
    "haar_projection",
    "haar_psi",
    "haar_s6",
    "haar_s6_output",
    "prop1_time_counter",
    "random_piecewise_constant",
    "softplus",
    "cor1_curves",
    "cor1_slopes",
    "haar_sq_floor",
    "MAX_SCALE",
    "FLOOR_FACTOR",
    "keep_nth_real",
    "keep_nth_token_model",
    "lemma2_demo",
    "s6_1d_states",
    "sensitivity_autograd",
    "sensitivity_closed_form",
]


def softplus(z):
    """Numerically stable softplus for numpy arrays or floats: log(1 + e^z)."""
    z = np.asarray(z, dtype=np.float64)
    return np.logaddexp(0.0, z)


def _check_jk(j: int, k: int) -> None:
    if not (isinstance(j, (int, np.integer)) and j >= 0):
        raise ValueError(f"j must be an integer >= 0, got {j!r}.")
    if not (isinstance(k, (int, np.integer)) and 0 <= k < 2**j):
        raise ValueError(f"k must be an integer in [0, 2**j) = [0, {2**j}), got {k!r}.")


def haar_psi(j: int, k: int, s) -> np.ndarray:
    r"""Haar wavelet :math:`\psi_{j,k}(s)=2^{j/2}\psi(2^js-k)` on [0, 1) (Eqs. 10, 16–17)."""
    _check_jk(j, k)
    s = np.asarray(s, dtype=np.float64)
    u = 2.0**j * s - k
    return 2.0 ** (j / 2) * (((u >= 0) & (u < 0.5)).astype(float) - ((u >= 0.5) & (u < 1)).astype(float))


def haar_projection(x, j: int, k: int) -> np.ndarray:
    r""":math:`P_{j,k}(x)=\frac1T\sum_t\psi_{j,k}(\frac{t-1}T)x_t` = the exact :math:`\langle\psi_{j,k},x\rangle`
    of the piecewise-constant signal of ``x`` (batch, T); needs :math:`2^{j+1}\mid T`."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be (batch, T), got shape {x.shape}.")
    T = x.shape[1]
    _check_jk(j, k)
    if T % (2 ** (j + 1)):
        raise ValueError(f"T={T} must be a multiple of 2**(j+1)={2 ** (j + 1)} so that ψ_{j},{k} is constant on cells.")
    psi = haar_psi(j, k, (np.arange(1, T + 1) - 1) / T)
    return x @ psi / T


# --------------------------------------------------------------------------- continuous (Eq. 8, 19–23)


def continuous_basis(s: np.ndarray, t_hat: float, w: float, lam: float = 1.0, B: float = 1.0) -> np.ndarray:
    r""":math:`g^M(s;1)=B\exp(-\lambda\int_s^1\mathrm{softplus}(w(r-\hat t))dr)` on the grid ``s`` (increasing,
    ending at 1), by a reverse cumulative trapezoid. ``w < 0`` (the paper's :math:`w_\Delta\to-\infty`)."""
    if w >= 0:
        raise ValueError(f"w must be negative (w_Δ → −∞ makes Δ large before t̂ and ≈0 after), got {w}.")
    s = np.asarray(s, dtype=np.float64)
    delta = softplus(w * (s - t_hat))
    seg = 0.5 * (delta[1:] + delta[:-1]) * np.diff(s)
    integral = np.concatenate([np.cumsum(seg[::-1])[::-1], [0.0]])  # ∫_s^1
    return B * np.exp(-lam * integral)


def wavelet_from_bases(j: int, k: int, w: float, s: np.ndarray) -> tuple[np.ndarray, tuple[float, float, float]]:
    r"""Thm. 1's S6 approximation of the Haar wavelet :math:`\psi_{j,k}` on the grid ``s`` (increasing, ending at
    1): :math:`g^{M_1}-2g^{M_2}+g^{M_3}` with the three :func:`continuous_basis` functions switched on at the
    wavelet's breakpoints :math:`a=2^{-j}k`, :math:`m=a+2^{-(j+1)}`, :math:`b=2^{-j}(k+1)` and scaled by
    :math:`B=2^{j/2}` (Eqs. 19–23). Returns ``(approximation (len(s),), (a, m, b))``; ``w < 0``."""
    a = 2.0**-j * k
    m = a + 2.0 ** -(j + 1)
    b = 2.0**-j * (k + 1)
    B = 2.0 ** (j / 2)
    return (continuous_basis(s, a, w, B=B) - 2 * continuous_basis(s, m, w, B=B) + continuous_basis(s, b, w, B=B)), (
        a,
        m,
        b,
    )


def continuous_haar_error(j: int, k: int, w: float, points: int = 400_001) -> float:
    r""":math:`L^2` error of :math:`g^{M_1}-2g^{M_2}+g^{M_3}` against :math:`\psi_{j,k}` on [0,1] (Thm. 1, Eq. 23),
    quadrature on ``points`` nodes. Decays like :math:`|w|^{-1/4}` (Chapter 3 overview, erratum 1)."""
    _check_jk(j, k)
    s = np.linspace(0.0, 1.0, points)
    approx, _ = wavelet_from_bases(j, k, w, s)
    psi = haar_psi(j, k, s)
    psi[-1] = psi[-2]  # ψ at s = 1 is the closing value of the last cell
    err2 = (approx - psi) ** 2
    return float(math.sqrt(np.sum(0.5 * (err2[1:] + err2[:-1]) * np.diff(s))))


def continuous_sup_error(j: int, k: int, w: float, c: float, points: int = 400_001) -> float:
    r"""sup error outside :math:`c/\sqrt{|w|}`-neighbourhoods of the three breakpoints (``c = 0``: over all s)."""
    s = np.linspace(0.0, 1.0, points)
    approx, breaks = wavelet_from_bases(j, k, w, s)
    psi = haar_psi(j, k, s)
    psi[-1] = psi[-2]
    radius = c / math.sqrt(abs(w))
    keep = np.ones_like(s, dtype=bool)
    for p in breaks:
        keep &= np.abs(s - p) > radius
    return float(np.max(np.abs(approx - psi)[keep])) if keep.any() else float("nan")


# --------------------------------------------------------------------------- discrete constructions


@dataclass(frozen=True)
class HaarS6:
    r"""Hand-set S6 channels whose weighted output at ``t = T`` is :math:`P_{j,k}(x)`.

    delta: (c, T) the step of every channel at every time (it reads only the PE :math:`p_t=t`:
        :math:`\Delta_t=\mathrm{softplus}(w_pp_t+b)`); lam: decay rate λ (A = −λ);
    B: the constant input weight (aonly: :math:`\bar B`; euler/zoh: the B that Δ multiplies);
    readout: (c,) weights of the channels; discretization: aonly | euler | zoh.
    """

    j: int
    k: int
    T: int
    discretization: str
    delta: np.ndarray
    lam: float
    B: float
    readout: np.ndarray
    W: float

    @property
    def channels(self) -> int:
        return int(self.readout.shape[0])


def haar_s6(j: int, k: int, T: int, discretization: str = "aonly", W: float | None = None) -> HaarS6:
    r"""The discrete Thm. 1 construction.

    ``aonly`` (H-A): 3 channels :math:`c\in\{a,m,b\}`, λ = 1, :math:`\bar B=2^{j/2}/T`, readout (1, −2, 1),
    :math:`\Delta^{(c)}_t=\mathrm{softplus}(-W(t-n_0(c)-\frac12))` with :math:`n_0=cT+1` (first kept index):
    the erase happens *at* :math:`n_0`, the freeze from :math:`n_0+1`. W = 60 by default.

    ``euler`` / ``zoh`` (H-E): λ ≈ 0 (``A_log = −30``), each Heaviside :math:`\mathbb 1[t\ge n_0]` is the difference of
    two ramp channels :math:`(\mathrm{softplus}(u_t)-\mathrm{softplus}(u_t-c_W))/c_W`, :math:`u_t=W(t-n_0+\frac12)`,
    :math:`c_W=W/4`, so Δ·B sums the inputs from :math:`n_0` on; 6 channels, W = 80 by default.
    The channel of :math:`b=1` (:math:`n_0=T+1`) is dropped since :math:`H(s-1)\equiv0` on [0, 1).
    """
    if discretization not in DISCRETIZATIONS:
        raise ValueError(f"unknown discretization {discretization!r}; use one of {DISCRETIZATIONS}.")
    _check_jk(j, k)
    if not isinstance(T, (int, np.integer)) or T < 2 or T % (2 ** (j + 1)):
        raise ValueError(f"T must be a positive multiple of 2**(j+1)={2 ** (j + 1)}, got T={T!r}.")
    a = 2.0**-j * k
    breaks = [(a, 1.0), (a + 2.0 ** -(j + 1), -2.0), (2.0**-j * (k + 1), 1.0)]
    t = np.arange(1, T + 1, dtype=np.float64)
    deltas, readout = [], []
    if discretization == "aonly":
        W = 60.0 if W is None else float(W)
        for c, weight in breaks:
            n0 = round(c * T) + 1
            if n0 > T:
                continue
            deltas.append(softplus(-W * (t - n0 - 0.5)))
            readout.append(weight)
        return HaarS6(j, k, T, discretization, np.stack(deltas), 1.0, 2.0 ** (j / 2) / T, np.array(readout), W)
    W = 80.0 if W is None else float(W)
    cW = W / 4
    for c, weight in breaks:
        n0 = round(c * T) + 1
        if n0 > T:
            continue
        u = W * (t - n0 + 0.5)
        deltas += [softplus(u), softplus(u - cW)]
        readout += [weight / cW, -weight / cW]
    return HaarS6(j, k, T, discretization, np.stack(deltas), math.exp(-30.0), 2.0 ** (j / 2) / T, np.array(readout), W)


def haar_s6_output(c: HaarS6, x, backend: str = "chunked") -> np.ndarray:
    r"""Run the construction on ``x`` (batch, T) and return :math:`y_T=\sum_c w_c h^{(c)}_T` (batch,).

    ``aonly``: :math:`h_t=e^{-\lambda\Delta_t}h_{t-1}+\bar Bx_t` via :func:`linear_recurrence_chunked`;
    ``euler``/``zoh``: the library's :func:`selective_scan` with Δ precomputed (``delta_softplus=False``),
    A = −λ, constant B, C = 1 — the same code path as every trained S6 in the book.
    """
    x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    if x.ndim != 2 or x.shape[1] != c.T:
        raise ValueError(f"x must be (batch, T={c.T}), got shape {tuple(x.shape)}.")
    bsz, ch = x.shape[0], c.channels
    delta = torch.as_tensor(c.delta)  # (c, T)
    if c.discretization == "aonly":
        log_decay = (-c.lam * delta).T[None].expand(bsz, c.T, ch)  # (b, T, c)
        inp = (c.B * x)[:, :, None].expand(bsz, c.T, ch)
        h = linear_recurrence_chunked(log_decay.contiguous(), inp.contiguous())  # (b, T, c)
        hT = h[:, -1]
    else:
        u = x[:, None, :].expand(bsz, ch, c.T).contiguous()
        A = torch.full((ch, 1), -c.lam, dtype=torch.float64)
        B = torch.full((ch, 1), c.B, dtype=torch.float64)
        C = torch.ones((ch, 1), dtype=torch.float64)
        out = selective_scan(
            u, delta[None].expand(bsz, ch, c.T).contiguous(), A, B, C, backend=backend, discretization=c.discretization
        )
        hT = out[:, :, -1]
    return (hT @ torch.as_tensor(c.readout)).numpy()


def haar_ssd_output(c: HaarS6, x, backend: str = "chunked") -> np.ndarray:
    r"""Remark 1: the ``euler`` construction run through **Mamba-2**'s scan (:func:`ssd_scan`): one head per
    channel (head dim 1, N = 1), each head's scalar Δ_t the channel's profile, and one scalar λ, A = −λ, shared by
    every head (Mamba-2's :math:`\Lambda=\lambda I`), B constant, C = 1. Returns :math:`y_T` (batch,)."""
    if c.discretization != "euler":
        raise ValueError(
            "Mamba-2's scan is the euler discretisation (Δ·B on the input): build with discretization='euler'."
        )
    x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    if x.ndim != 2 or x.shape[1] != c.T:
        raise ValueError(f"x must be (batch, T={c.T}), got shape {tuple(x.shape)}.")
    bsz, H = x.shape[0], c.channels
    xs = x[:, :, None, None].expand(bsz, c.T, H, 1).contiguous()
    dt = torch.as_tensor(c.delta).T[None].expand(bsz, c.T, H).contiguous()
    A = torch.full((H,), -c.lam, dtype=torch.float64)
    B = torch.full((bsz, c.T, 1, 1), c.B, dtype=torch.float64)
    C = torch.ones((bsz, c.T, 1, 1), dtype=torch.float64)
    y = ssd_scan(xs, dt, A, B, C, backend=backend)  # (b, T, H, 1)
    return (y[:, -1, :, 0] @ torch.as_tensor(c.readout)).numpy()


def attention_sensitivity(T: int = 4096, d: int = 4, j: int = 1, seed: int = 0, scale: float = 0.5) -> np.ndarray:
    r"""Eq. (44): :math:`\lVert\partial y_t/\partial x_j\rVert_F` for t = j+1..T of one causal softmax-attention
    layer :math:`y_t=\sum_{s\le t}a_{ts}W_Vx_s`, :math:`a_{ts}=\mathrm{softmax}_s(x_t^\top W_Q^\top W_Kx_s)`, with
    Gaussian inputs and weights (entries of std ``scale``/√d), float64. For j < t,
    :math:`\partial y_t/\partial x_j=a_{tj}\,[W_V+(W_Vx_j-y_t)\,(W_K^\top W_Qx_t)^\top]` (the closed form behind
    Eq. 44; the tests check it against autograd); ``j`` is 1-based. Returns an array of length T − j."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, d))
    WQ, WK, WV = (rng.standard_normal((d, d)) * scale / math.sqrt(d) for _ in range(3))
    q, k, v = x @ WQ.T, x @ WK.T, x @ WV.T
    out = np.empty(T - j)
    for t in range(j + 1, T + 1):  # query at position t (1-based)
        scores = k[:t] @ q[t - 1]
        a = np.exp(scores - scores.max())
        a /= a.sum()
        y = a @ v[:t]
        J = a[j - 1] * (WV + np.outer(v[j - 1] - y, WK.T @ q[t - 1]))
        out[t - j - 1] = np.linalg.norm(J)
    return out


def prop1_time_counter(T: int, backend: str = "chunked") -> np.ndarray:
    r"""Prop. 1: all-ones input, B = 1, λ = 0, Δ ≡ 1 (Δ-bias ln(e−1), zero weight) → :math:`h_t=t` (Eq. 24).

    Runs the library's selective scan (euler) with ``delta_softplus=True``; returns h (T,)."""
    u = torch.ones(1, 1, T, dtype=torch.float64)
    delta = torch.zeros(1, 1, T, dtype=torch.float64)
    bias = torch.tensor([math.log(math.e - 1)], dtype=torch.float64)
    A = torch.zeros(1, 1, dtype=torch.float64)
    one = torch.ones(1, 1, dtype=torch.float64)
    out = selective_scan(u, delta, A, one, one, delta_bias=bias, delta_softplus=True, backend=backend)
    return out[0, 0].numpy()


# --------------------------------------------------------------------------- Corollary 1

MAX_SCALE = 48  # scales j = 0..47 of :func:`haar_coefficients_piecewise` (finer ones are not computed)
FLOOR_FACTOR = 10.0  # Cor. 1 fit: a point enters only if its squared error exceeds 10 × its float64 floor


def random_piecewise_constant(m: int, rng: np.random.Generator):
    """m jump locations ~ U(0.05, 0.95) (sorted) and m+1 levels ~ N(0, 1) (our choice of random targets)."""
    if m < 1:
        raise ValueError(f"m (number of discontinuities) must be >= 1, got {m}.")
    jumps = np.sort(rng.uniform(0.05, 0.95, size=m))
    levels = rng.standard_normal(m + 1)
    return jumps, levels


def _primitive(jumps, levels, t):
    """R(t) = ∫_0^t ρ for the piecewise-constant ρ."""
    edges = np.concatenate([[0.0], jumps, [1.0]])
    t = np.asarray(t, dtype=np.float64)
    out = np.zeros_like(t)
    for i, lev in enumerate(levels):
        out += lev * np.clip(t - edges[i], 0.0, edges[i + 1] - edges[i])
    return out


def haar_coefficients_piecewise(jumps, levels, full_scales: int = 12, max_scale: int = MAX_SCALE) -> np.ndarray:
    r"""All nonzero :math:`\langle\rho,\psi_{j,k}\rangle=2^{j/2}[(R(m)-R(a))-(R(b)-R(m))]`: every k for
    j < ``full_scales``, and for larger j only the cells containing a jump (the others vanish)."""
    coefs = []
    for j in range(max_scale):
        if j < full_scales:
            ks = np.arange(2**j)
        else:
            ks = np.unique(np.floor(np.asarray(jumps) * 2**j).astype(np.int64))
        a = ks / 2.0**j
        mid = a + 2.0 ** -(j + 1)
        b = (ks + 1) / 2.0**j
        Ra, Rm, Rb = (_primitive(jumps, levels, v) for v in (a, mid, b))
        coefs.append(2.0 ** (j / 2) * ((Rm - Ra) - (Rb - Rm)))
    return np.concatenate(coefs)


def _norms(jumps, levels):
    edges = np.concatenate([[0.0], jumps, [1.0]])
    widths = np.diff(edges)
    return float(np.sum(levels**2 * widths)), float(np.sum(levels * widths))


def haar_best_sq_error(jumps, levels, n_wavelets) -> np.ndarray:
    r"""Squared :math:`L^2` error of the best :math:`N_w`-term Haar approximation (plus the mean):
    :math:`\|\rho\|^2-\bar\rho^2-\sum_{\text{top }N_w}c^2`, for every :math:`N_w` in ``n_wavelets``.
    It costs :math:`N=1+3N_w` Mamba bases (Thm. 1)."""
    norm2, mean = _norms(jumps, levels)
    c2 = np.sort(haar_coefficients_piecewise(jumps, levels) ** 2)[::-1]
    csum = np.concatenate([[0.0], np.cumsum(c2)])
    n_wavelets = np.asarray(n_wavelets, dtype=np.int64)
    return np.maximum(norm2 - mean**2 - csum[n_wavelets], 0.0)


def fourier_sq_error(jumps, levels, n_bases) -> np.ndarray:
    r"""Squared :math:`L^2` error of the Fourier partial sum with :math:`N` real trigonometric bases
    (:math:`K=(N-1)/2` frequencies): :math:`\|\rho\|^2-c_0^2-2\sum_{n\le K}|c_n|^2`,
    :math:`c_n=\sum_i\ell_i\frac{e^{-2\pi ina_i}-e^{-2\pi inb_i}}{2\pi in}` (the best S4D bases, §4.1)."""
    norm2, mean = _norms(jumps, levels)
    edges = np.concatenate([[0.0], jumps, [1.0]])
    n_bases = np.asarray(n_bases, dtype=np.int64)
    K = int(np.max((n_bases - 1) // 2))
    n = np.arange(1, K + 1)
    cn = np.zeros(K, dtype=np.complex128)
    for i, lev in enumerate(levels):
        cn += lev * (np.exp(-2j * np.pi * n * edges[i]) - np.exp(-2j * np.pi * n * edges[i + 1])) / (2j * np.pi * n)
    csum = np.concatenate([[0.0], np.cumsum(2 * np.abs(cn) ** 2)])
    return np.maximum(norm2 - mean**2 - csum[(n_bases - 1) // 2], 0.0)


def haar_sq_floor(jumps, levels, max_scale: int = MAX_SCALE) -> float:
    r"""The smallest squared error :func:`haar_best_sq_error` can resolve for this ρ (float64).

    Two parts, both upper bounds:

    * cancellation: the error is computed as :math:`\|\rho\|^2-\bar\rho^2-\sum c^2`, a difference of O(1) numbers,
      so it carries an absolute rounding error of about :math:`\varepsilon_{64}\|\rho\|^2`
      (:math:`\varepsilon_{64}=2^{-52}`);
    * truncation: scales :math:`j\ge J` = ``max_scale`` are not computed. A jump of height :math:`\Delta_i` at
      :math:`\tau` inside the cell :math:`[a,b)` of width :math:`h=2^{-j}` gives
      :math:`c_{j,k}=2^{j/2}\Delta_i\,\mathrm{dist}(\tau,\{a,b\})` with :math:`\mathrm{dist}\le h/2`, so
      :math:`c^2\le\Delta_i^2\,2^{-j}/4` and :math:`\sum_{j\ge J}c^2\le\Delta_i^2\,2^{-J}/2`.

    floor :math:`=\varepsilon_{64}\|\rho\|^2+2^{-J-1}\sum_i\Delta_i^2` (for m = 1 and J = 48 about 1e-15; the
    computed error plateaus at about 0.4 × this floor once every coefficient is used)."""
    norm2, _ = _norms(jumps, levels)
    jumps_sq = float(np.sum(np.diff(np.asarray(levels, dtype=np.float64)) ** 2))
    return float(np.finfo(np.float64).eps * norm2 + jumps_sq * 2.0 ** (-max_scale - 1))


def cor1_curves(ms=(1, 2, 4), n_wavelets=tuple(range(1, 25)), draws: int = 10, seed: int = 0):
    """Rows (m, draw, n_wavelets, N, haar, fourier, haar_floor) for N = 1 + 3·N_w Mamba bases vs N Fourier
    bases: ``haar``/``fourier`` squared L² errors, ``haar_floor`` the draw's :func:`haar_sq_floor`."""
    rng = np.random.default_rng(seed)
    rows = []
    nw = np.asarray(n_wavelets)
    N = 1 + 3 * nw
    for m in ms:
        for d in range(draws):
            jumps, levels = random_piecewise_constant(m, rng)
            h = haar_best_sq_error(jumps, levels, nw)
            f = fourier_sq_error(jumps, levels, N)
            floor = haar_sq_floor(jumps, levels)
            rows += [
                dict(m=m, draw=d, n_wavelets=int(a), N=int(b), haar=float(x), fourier=float(y), haar_floor=floor)
                for a, b, x, y in zip(nw, N, h, f)
            ]
    return rows


def cor1_slopes(rows, fit_from: int = 4, floor_factor: float = FLOOR_FACTOR):
    r"""Per m: mean slope of :math:`\log_2`(Haar sq. err.) per wavelet (theory −1/m) and the log–log slope of
    the Fourier sq. err. in N (theory −1).

    The Haar fit uses :math:`N_w\ge` ``fit_from`` and only points above ``floor_factor`` × the draw's float64
    floor (row key ``haar_floor``, :func:`haar_sq_floor`; rows without it use a floor of 0): near the floor the
    computed error stops falling (m = 1 reaches it near 45 wavelets) and a fit through it flattens the slope
    (−0.83 instead of −1 at 64 wavelets). A draw with fewer than 3 points above the floor is left out."""
    if floor_factor < 0:
        raise ValueError(f"floor_factor must be >= 0 (a multiple of the float64 floor), got {floor_factor}.")
    out = {}
    ms = sorted({r["m"] for r in rows})
    for m in ms:
        hs, fs = [], []
        for d in sorted({r["draw"] for r in rows if r["m"] == m}):
            sub = [r for r in rows if r["m"] == m and r["draw"] == d and r["n_wavelets"] >= fit_from]
            x = np.array([r["n_wavelets"] for r in sub], dtype=float)
            h = np.array([r["haar"] for r in sub])
            floor = np.array([r.get("haar_floor", 0.0) for r in sub])
            ok = (h > 1e-30) & (h > floor_factor * floor)
            if ok.sum() >= 3:
                hs.append(np.polyfit(x[ok], np.log2(h[ok]), 1)[0])
            N = np.array([r["N"] for r in sub], dtype=float)
            f = np.array([r["fourier"] for r in sub])
            fs.append(np.polyfit(np.log(N), np.log(f), 1)[0])
        out[m] = {"haar_slope_per_wavelet": float(np.mean(hs)), "fourier_loglog_slope": float(np.mean(fs))}
    return out


# --------------------------------------------------------------------------- Corollary 2 (KEEP n-TH)


def keep_nth_real(x, nth: int, discretization: str = "euler", W: float = 60.0, backend: str = "chunked"):
    r"""Cor. 2 on real-valued sequences ``x`` (batch, T): the output y (batch, T) should equal :math:`x_n` for t ≥ n.

    ``euler``/``zoh``: **one** channel, λ = 1, B = 1, :math:`\Delta_t=\mathrm{softplus}(-W(t-n-\frac12))`
    (large up to n: erase and write; ≈ 0 after: freeze, input injection off too),
    C = 1/softplus(W/2) (euler) or 1/(1−e^{−softplus(W/2)}) (zoh); run on :func:`selective_scan`.
    ``aonly``: **two** channels (the H-A Heavisides at n₀ = n and n₀ = n+1, :math:`\bar B=1`): exact for t > n,
    :math:`y_n=0` (the last-sample edge effect). Cor. 2's proof writes :math:`h_1-h_2` for the indicator
    of [n−1, n); it is :math:`h_2-h_1`."""
    if discretization not in DISCRETIZATIONS:
        raise ValueError(f"unknown discretization {discretization!r}; use one of {DISCRETIZATIONS}.")
    x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    bsz, T = x.shape
    if not 1 <= nth <= T:
        raise ValueError(f"nth must be in [1, T={T}], got {nth}.")
    t = np.arange(1, T + 1, dtype=np.float64)
    if discretization == "aonly":
        deltas = torch.as_tensor(np.stack([softplus(-W * (t - n0 - 0.5)) for n0 in (nth, nth + 1)]))
        log_decay = (-deltas).T[None].expand(bsz, T, 2).contiguous()
        h = linear_recurrence_chunked(log_decay, x[:, :, None].expand(bsz, T, 2).contiguous())
        return (h[..., 0] - h[..., 1]).numpy()
    delta = torch.as_tensor(softplus(-W * (t - nth - 0.5)))[None, None].expand(bsz, 1, T).contiguous()
    dW = float(softplus(W / 2))
    scale = 1.0 / dW if discretization == "euler" else 1.0 / (-math.expm1(-dW))
    one = torch.ones(1, 1, dtype=torch.float64)
    out = selective_scan(
        x[:, None, :].contiguous(), delta, -one, one, scale * one, backend=backend, discretization=discretization
    )
    return out[:, 0].numpy()


def keep_nth_token_model(V: int = 128, nth: int = 5, W: float = 60.0, N: int = 8, backend: str = "auto"):
    r"""Cor. 2, token version: a :class:`~mamba_recall.models.s6.MixerLM` (S6 + PE, no conv, no gate) with
    hand-set weights: one-hot embedding (d = |V|+1, the PE :math:`p_t=t` last), Δ reads only the PE,
    :math:`\Delta_t=\mathrm{softplus}(-W(p_t-n-\frac12))` on every channel, λ = 1, :math:`B_t=C_t=p_t` on state 0,
    D = 0, head = :math:`E^\top`. The output at t ≥ n is :math:`e(x_n)\,\mathrm{softplus}(W/2)\,p_np_t` + O(e^{−W/2}),
    so the argmax is :math:`x_n` (float64)."""
    from ..models.s6 import MixerLM

    d = V + 1
    model = MixerLM(V, d, N, mixer="s6", pe=True, backend=backend).double()
    mix = model.mixer
    with torch.no_grad():
        model.embedding.weight.copy_(torch.eye(V, dtype=torch.float64))
        xw = torch.zeros_like(mix.x_proj.weight)
        xw[0, d - 1] = 1.0  # dt row 0 reads the PE
        xw[mix.dt_rank + 0, d - 1] = 1.0  # B state 0 = p_t
        xw[mix.dt_rank + N + 0, d - 1] = 1.0  # C state 0 = p_t
        mix.x_proj.weight.copy_(xw)
        mix.dt_proj.weight.zero_()
        mix.dt_proj.weight[:, 0] = -W
        mix.dt_proj.bias.fill_(W * (nth + 0.5))
        mix.A_log.zero_()  # λ = 1
        mix.D.zero_()
        head = torch.zeros(V, d, dtype=torch.float64)
        head[:, :V] = torch.eye(V, dtype=torch.float64)
        model.head.weight.copy_(head)
        model.head.bias.zero_()
    return model.eval()


# --------------------------------------------------------------------------- Lemmas 1–2 (sensitivity)


def s6_1d_states(x: torch.Tensor, w_delta=1.3, b_delta=-0.2, w_B=0.8, b_B=0.5, lam=0.7, selective=True):
    r"""1-D S6 (§4.2): :math:`h_t=e^{-\lambda\Delta_t}h_{t-1}+B(x_t)\Delta(x_t)x_t`, :math:`\Delta=\mathrm{softplus}(w_\Delta x+b_\Delta)`,
    :math:`B(x)=w_Bx+b_B`; ``selective=False`` is S4D (Δ = 1, B = b_B). x (T,) float64 → h (T,)."""
    if selective:
        delta = torch.nn.functional.softplus(w_delta * x + b_delta)
        inp = (w_B * x + b_B) * delta * x
    else:
        delta = torch.ones_like(x)
        inp = b_B * x
    return linear_recurrence_chunked((-lam * delta)[None, :, None], inp[None, :, None])[0, :, 0]


def sensitivity_autograd(x, j: int, **kw) -> np.ndarray:
    """|∂h_t/∂x_j| for t = 1..T by autograd (float64); ``j`` is 1-based."""
    x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    jac = torch.autograd.functional.jacobian(lambda v: s6_1d_states(v, **kw), x)
    return jac[:, j - 1].abs().numpy()


def sensitivity_closed_form(x, j: int, w_delta=1.3, b_delta=-0.2, w_B=0.8, b_B=0.5, lam=0.7, selective=True):
    r"""|∂h_t/∂x_j| from Eq. (35) with (36)–(38): :math:`e^{-\lambda\sum_{r=j+1}^t\Delta_r}\,\tilde c_j` for t ≥ j, 0 before,
    :math:`\tilde c_j=\partial_{x_j}(B_j\Delta_jx_j)-\lambda e^{-\lambda\Delta_j}\Delta'_j\sum_{s<j}e^{-\lambda\sum_{r=s+1}^{j-1}\Delta_r}B_s\Delta_sx_s`.
    S4D (``selective=False``): :math:`b_Be^{-\lambda(t-j)}` (Lemma 1; the paper's exponent :math:`t-(j+1)` folds a constant into :math:`\tilde c`)."""
    x = np.asarray(x, dtype=np.float64)
    T = x.shape[0]
    out = np.zeros(T)
    if not selective:
        out[j - 1 :] = abs(b_B) * np.exp(-lam * np.arange(T - j + 1))
        return out
    z = w_delta * x + b_delta
    delta = softplus(z)
    ddelta = w_delta / (1 + np.exp(-z))
    Bx = w_B * x + b_B
    i = j - 1
    d_in = w_B * delta[i] * x[i] + Bx[i] * ddelta[i] * x[i] + Bx[i] * delta[i]
    h_prev = 0.0
    for s in range(i):
        h_prev = math.exp(-lam * delta[s]) * h_prev + Bx[s] * delta[s] * x[s]
    c = d_in - lam * math.exp(-lam * delta[i]) * ddelta[i] * h_prev
    cum = np.concatenate([[0.0], np.cumsum(delta[i + 1 :])])
    out[i:] = abs(c) * np.exp(-lam * cum)
    return out


def lemma2_demo(T: int = 10_000, x1: float = 3.0, lam: float = 0.7):
    r"""Lemma 2: x₁ = ``x1``, fillers 0, Δ = softplus(12x − 30) (≈ 9e−14 on fillers), B(x) = 0.8x + 0.5.
    Returns (|∂h_T/∂x₁| by autograd, the bound :math:`e^{-c}|\partial_{x_1}(B\Delta x)|` with
    :math:`c=\lambda\sum_{r\le T}\Delta_r`, c, the S4D factor :math:`e^{-(T-1)}` (λ = 1))."""
    x = torch.zeros(T, dtype=torch.float64)
    x[0] = x1
    x.requires_grad_(True)
    h = s6_1d_states(x, w_delta=12.0, b_delta=-30.0, lam=lam)
    (g,) = torch.autograd.grad(h[-1], x)
    z = 12.0 * x1 - 30.0
    delta1 = float(softplus(z))
    d_in = 0.8 * delta1 * x1 + (0.8 * x1 + 0.5) * 12.0 / (1 + math.exp(-z)) * x1 + (0.8 * x1 + 0.5) * delta1
    c = lam * (delta1 + (T - 1) * float(softplus(-30.0)))
    return abs(float(g[0])), math.exp(-c) * abs(d_in), c, math.exp(-(T - 1.0))
