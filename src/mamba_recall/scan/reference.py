"""The sequential selective scan: the ground truth every other backend is tested against.

A line-by-line restatement of mamba-ssm's ``selective_scan_ref``
(``mamba_ssm/ops/selective_scan_interface.py``, Apache-2.0, state-spaces/mamba), extended with
float64 compute and an exact zero-order-hold option. One step of the loop is Eq. (2a)–(2b) of the
Mamba paper with the discretisation of Eq. (4)::

    h_t = exp(Δ_t A) ⊙ h_{t−1} + B̄_t u_t,       y_t = Σ_n C_t[n] h_t[n]

It is slow (one Python step per token) and meant to be obviously right.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._common import check_decay_rates, discretize, finish_output, prepare_scan


@dataclass
class ScanTrace:
    """Every intermediate of a reference scan (for teaching and probes).

    delta: (b, d, l) Δ_t after bias/softplus.   decay: (b, d, l, n) Ā_t = exp(Δ_t A).
    input_term: (b, d, l, n) B̄_t u_t.          states: (b, d, l, n) h_t.
    y: (b, d, l) the scan output before D, z.  out: (b, d, l) the final output.
    """

    delta: torch.Tensor
    decay: torch.Tensor
    input_term: torch.Tensor
    states: torch.Tensor
    y: torch.Tensor
    out: torch.Tensor


def _run(p, initial_state=None):
    log_decay, input_term = discretize(p)
    decay = torch.exp(log_decay)
    b, d, l, n = input_term.shape
    h = input_term.new_zeros(b, d, n) if initial_state is None else initial_state.to(input_term.dtype)
    C_t = p.C.transpose(-1, -2).expand(-1, -1, l, -1)  # (b|1, d|1, l, n)
    states, ys = [], []
    for t in range(l):
        h = decay[:, :, t] * h + input_term[:, :, t]
        states.append(h)
        ys.append((h * C_t[:, :, t]).sum(-1))
    return decay, input_term, torch.stack(states, dim=2), torch.stack(ys, dim=2)


def selective_scan_reference(
    u,
    delta,
    A,
    B,
    C,
    D=None,
    z=None,
    delta_bias=None,
    delta_softplus=False,
    return_last_state=False,
    *,
    discretization="euler",
    initial_state=None,
):
    """Sequential selective scan with ``selective_scan_fn``'s signature; returns out (b, d, l)
    and, if asked, the last state (b, d, n). ``initial_state`` (b, d, n) replaces h_0 = 0."""
    p = prepare_scan(u, delta, A, B, C, D, z, delta_bias, delta_softplus, discretization, initial_state)
    check_decay_rates(A)
    _, _, states, y = _run(p, initial_state)
    out = finish_output(p, y)
    return (out, states[:, :, -1]) if return_last_state else out


def selective_scan_trace(
    u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False, *, discretization="euler"
) -> ScanTrace:
    """Run the reference scan and keep Δ, Ā, B̄u, every state h_t and the outputs."""
    p = prepare_scan(u, delta, A, B, C, D, z, delta_bias, delta_softplus, discretization)
    check_decay_rates(A)
    decay, input_term, states, y = _run(p)
    return ScanTrace(p.delta, decay, input_term, states, y, finish_output(p, y))
