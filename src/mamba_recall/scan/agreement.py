"""Backend agreement and the stability demonstration of Chapter 0."""

from __future__ import annotations

import pandas as pd
import torch

from . import selective_scan


def random_scan_inputs(batch, channels, d_state, length, dtype=torch.float64, seed=0, device="cpu", delta_scale=1.0):
    """Seeded random inputs in mamba-ssm shapes, selective B and C, with D, z and delta_bias."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype).to(device)  # noqa: E731
    return dict(
        u=r(batch, channels, length),
        delta=delta_scale * r(batch, channels, length),
        A=-torch.exp(r(channels, d_state) * 0.5),
        B=r(batch, d_state, length),
        C=r(batch, d_state, length),
        D=r(channels),
        z=r(batch, channels, length),
        delta_bias=r(channels) * 0.1,
    )


def backend_agreement(
    batch, channels, d_state, lengths, backends, dtype=torch.float64, seed=0, device="cpu"
) -> pd.DataFrame:
    """Max relative error of each backend against ``reference``: output and every input gradient.

    Relative error = ‖x − x_ref‖∞ / max(‖x_ref‖∞, 1e-30), over the output and the gradients of
    u, delta, A, B, C, D, z, delta_bias for the loss Σ out · w (w a fixed random weight).
    """
    rows = []
    for length in lengths:
        inputs = random_scan_inputs(batch, channels, d_state, length, dtype, seed, device)
        weight = torch.randn(
            batch, channels, length, generator=torch.Generator().manual_seed(seed + 1), dtype=dtype
        ).to(device)
        results = {}
        for name in ("reference", *backends):
            leaves = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
            out = selective_scan(**leaves, delta_softplus=True, backend=name)
            grads = torch.autograd.grad((out * weight).sum(), list(leaves.values()))
            results[name] = (out.detach(), grads)
        ref_out, ref_grads = results["reference"]
        for name in backends:
            out, grads = results[name]
            rel = lambda a, b: ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()  # noqa: E731
            rows.append(
                {
                    "backend": name,
                    "dtype": str(dtype).replace("torch.", ""),
                    "length": length,
                    "output rel. error": rel(out, ref_out),
                    "max gradient rel. error": max(rel(a, b) for a, b in zip(grads, ref_grads)),
                }
            )
    return pd.DataFrame(rows)


def cumsum_trick_recurrence(log_decay: torch.Tensor, input_term: torch.Tensor) -> torch.Tensor:
    """The fragile closed form h_t = P_t Σ_{s≤t} b_s / P_s with P_t = exp(Σ_{i≤t} log a_i), along dim −2.

    Exact in real arithmetic, but 1/P_s overflows once Σ Δ|A| passes ~88 (float32): shown in
    Chapter 0 as the reason the chunked scan never divides by a decay. Not used by any backend.
    """
    P = torch.exp(torch.cumsum(log_decay, dim=-2))
    return P * torch.cumsum(input_term / P, dim=-2)


# Acceptance bounds on the relative error against the reference: float64 rounding over thousands of
# steps stays far below 1e-10; float32 accumulates ~1e-7 per operation, so 1e-5 leaves room for L = 8192.
AGREEMENT_BOUNDS = {"float64": 1e-10, "float32": 1e-5}


def within_bounds(agreement) -> "pd.Series":
    """Per row of a :func:`backend_agreement` table: is the worst of the output and gradient errors
    within :data:`AGREEMENT_BOUNDS` for its dtype?"""
    worst = agreement[["output rel. error", "max gradient rel. error"]].max(axis=1)
    return worst <= agreement["dtype"].map(AGREEMENT_BOUNDS)
