r"""The S4D mixer of paper 003 (Eq. 6; "Mamba-S4D" of Thm. 4 / Fig. 2): an LTI diagonal SSM.

Per channel :math:`c` (``d`` channels) and state :math:`n` (``N`` states), with *input-independent*
:math:`\Delta_c=e^{\log\Delta_c}`, :math:`A_{cn}=-e^{A\_log_{cn}}`, :math:`B_{cn}`, :math:`C_{cn}`:

.. math::

    h_t = e^{\Delta A}\odot h_{t-1} + \Delta B\,x_t,\qquad y_t = \langle C, h_t\rangle + D x_t ,

i.e. the library's :func:`~mamba_recall.scan.selective_scan` with a constant Δ and time-invariant
B, C of shape (d, N) (Euler input term, as mamba-ssm). Input/output ``(batch, T, d)``.
Parameters: ``log_dt (d)``, ``A_log (d, N)`` (S4D-real init, log 1..N), ``B, C (d, N)``, ``D (d)``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..scan import selective_scan

__all__ = ["S4DMixer"]


class S4DMixer(nn.Module):
    """LTI diagonal SSM mixer, x (b, T, d) → y (b, T, d). ``backend``: a scan backend name."""

    def __init__(self, d: int, N: int, dt_min: float = 1e-3, dt_max: float = 1e-1, backend: str = "auto"):
        super().__init__()
        if d < 1 or N < 1:
            raise ValueError(f"S4DMixer needs d >= 1 and N >= 1, got d={d}, N={N}.")
        self.d, self.N, self.backend = d, N, backend
        log_dt = torch.rand(d) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        self.log_dt = nn.Parameter(log_dt)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, N + 1, dtype=torch.float32)).repeat(d, 1))
        self.B = nn.Parameter(torch.randn(d, N) / math.sqrt(N))
        self.C = nn.Parameter(torch.randn(d, N) / math.sqrt(N))
        self.D = nn.Parameter(torch.ones(d))
        for p in (self.log_dt, self.A_log, self.D):
            p._no_weight_decay = True

    def decay(self, length: int) -> torch.Tensor:
        """The discretised decay exp(Δ A), (d, N) — the same at every step (input-independent)."""
        return torch.exp(-torch.exp(self.log_dt)[:, None] * torch.exp(self.A_log))

    def forward(self, x: torch.Tensor, return_internals: bool = False):
        if x.dim() != 3 or x.shape[-1] != self.d:
            raise ValueError(f"S4DMixer input must be (batch, T, d={self.d}), got {tuple(x.shape)}.")
        u = x.transpose(1, 2).contiguous()
        delta = torch.exp(self.log_dt)[None, :, None].expand_as(u).contiguous()
        y = selective_scan(u, delta, -torch.exp(self.A_log), self.B, self.C, self.D, backend=self.backend)
        y = y.transpose(1, 2)
        if return_internals:
            return y, {"delta": delta, "A": -torch.exp(self.A_log)}
        return y
