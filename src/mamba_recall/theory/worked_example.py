"""The hand-worked Mamba forward pass of the seed document, through the library.

The seed document is "Worked Example: Complete Mamba Forward Pass" (Section 05 of an explainer of
Gu & Dao, *Mamba: Linear-Time Sequence Modeling with Selective State Spaces*, 2023).

Setup (verbatim): three scalar tokens u = (0.5, 1.0, 0.2) ("The cat sat"), N = 2,
A = diag(−1, −0.5), W_Δ = [0.5, −0.3], W_B = [0.8, 0.6]ᵀ, W_C = [0.7, 0.4]ᵀ, h₀ = 0, and

    Δ_t = softplus(W_Δ·u_t)  (= softplus(0.2 u_t): the two weights collapse to one gain, one Δ per channel)
    B_t = W_B u_t,  C_t = W_C u_t,  Ā_t = exp(Δ_t A),  B̄_t = Δ_t B_t  (Euler, as mamba-ssm)
    h_t = Ā_t h_{t−1} + B̄_t u_t,    y_t = C_t · h_t

In mamba-ssm's layout this is one channel (d = 1) with a selective B, C of shape (1, N, L).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..scan import selective_scan, selective_scan_trace

U = (0.5, 1.0, 0.2)
A_DIAG = (-1.0, -0.5)
W_DELTA = (0.5, -0.3)
W_B = (0.8, 0.6)
W_C = (0.7, 0.4)

#: The numbers the document prints (token-major: one row per token).
PRINTED = {
    "delta": [0.743, 0.803, 0.693],
    "decay": [[0.475, 0.690], [0.448, 0.668], [0.500, 0.706]],
    "B_bar": [[0.297, 0.223], [0.642, 0.482], [0.111, 0.083]],
    "state": [[0.149, 0.112], [0.709, 0.557], [0.377, 0.410]],
    "y": [0.074, 0.719, 0.086],
}


def scan_inputs(dtype=torch.float64):
    """(u, delta pre-activation, A, B, C) in mamba-ssm shapes: (1,1,3), (1,1,3), (1,2), (1,2,3), (1,2,3)."""
    u = torch.tensor(U, dtype=dtype).view(1, 1, 3)
    pre = sum(W_DELTA) * u
    A = torch.tensor([A_DIAG], dtype=dtype)
    B = torch.tensor(W_B, dtype=dtype).view(1, 2, 1) * u
    C = torch.tensor(W_C, dtype=dtype).view(1, 2, 1) * u
    return u, pre, A, B, C


def worked_example(deltas=None, discretization="euler", dtype=torch.float64) -> dict[str, np.ndarray]:
    """Every intermediate of the three tokens (token-major arrays).

    ``deltas``: feed these Δ values directly (no softplus) instead of softplus(W_Δ·u), e.g. the
    document's own rounded (0.743, 0.803, 0.693).
    """
    u, pre, A, B, C = scan_inputs(dtype)
    if deltas is None:
        trace = selective_scan_trace(u, pre, A, B, C, delta_softplus=True, discretization=discretization)
    else:
        trace = selective_scan_trace(
            u,
            torch.tensor(deltas, dtype=dtype).view(1, 1, 3),
            A,
            B,
            C,
            delta_softplus=False,
            discretization=discretization,
        )
    to_np = lambda t: t.detach().cpu().numpy()  # noqa: E731
    return {
        "delta": to_np(trace.delta[0, 0]),
        "decay": to_np(trace.decay[0, 0]),
        "B_bar": to_np(trace.input_term[0, 0] / u[0, 0, :, None]),
        "state": to_np(trace.states[0, 0]),
        "y": to_np(trace.y[0, 0]),
    }


def comparison_table(ours: dict, printed: dict = PRINTED, tolerance: float = 1e-3) -> pd.DataFrame:
    """One row per printed number: the document's value, ours, the difference, and whether it holds."""
    rows = []
    for quantity, values in printed.items():
        mine = np.asarray(ours[quantity])
        for t, value in enumerate(values):
            for n, v in enumerate(np.atleast_1d(value)):
                o = float(np.atleast_1d(mine[t])[n])
                label = f"{quantity}[{n}]" if np.ndim(value) else quantity
                rows.append(
                    {
                        "token": t + 1,
                        "quantity": label,
                        "printed": float(v),
                        "ours": round(o, 6),
                        "difference": round(o - float(v), 6),
                        "within": "yes" if abs(o - float(v)) <= tolerance else "NO",
                    }
                )
    return pd.DataFrame(rows)


def backend_outputs(backends=("reference", "chunked"), dtype=torch.float64) -> pd.DataFrame:
    """The worked example's outputs y and last state through every backend asked for."""
    u, pre, A, B, C = scan_inputs(dtype)
    rows = []
    for name in backends:
        out, last = selective_scan(u, pre, A, B, C, delta_softplus=True, return_last_state=True, backend=name)
        rows.append(
            {
                "backend": name,
                **{f"y{t + 1}": float(out[0, 0, t]) for t in range(3)},
                "h3[0]": float(last[0, 0, 0]),
                "h3[1]": float(last[0, 0, 1]),
            }
        )
    return pd.DataFrame(rows)
