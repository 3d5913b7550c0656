"""Selective scans (Mamba-1 and Mamba-2) with explicit, checked backends.

Backends
--------
``reference``  sequential loop, float64-capable: the truth (``reference.py``).
``chunked``    parallel over time in pure PyTorch, stable for long L and large Δ (``chunked.py``);
               CPU and CUDA, every option (also ``discretization="zoh"``).
``fused``      one compiled (numba) loop per (batch, channel) with the N states kept local, forward
               and backward, CPU only, Euler rule only (``fused.py``); the default on the CPU.
``mamba_ssm``  the CUDA kernels of the mamba-ssm package (``mamba_ssm_backend.py``).
``auto``       the fastest backend that runs the call (:func:`resolve_backend`): ``mamba_ssm`` for CUDA
               inputs when it imports, else ``chunked``; on the CPU ``fused`` (``chunked`` for
               ``discretization="zoh"``, which fused does not implement, or where numba cannot be
               imported). The choice is a rule, not a fallback: an explicit request for an
               unavailable backend raises :class:`BackendUnavailableError`.

Why ``auto`` takes ``fused`` on the CPU at every shape: the repository's scan benchmark
(``python benchmarks/scan.py``, a script outside the library) times forward + backward of both (its
``run_crossover``) over batch 1–32, channels 1–512, N 1–16, L = 1 … 4096, including the chapters' L ≤ 64
where per-call overhead dominates. No crossover was found (committed run, ``results/scan_bench_cpu.json``,
table ``crossover``: chunked/fused 1.6× to 10.6×, median 3.2×, ≥ 2.1× at L ≤ 64): fused's fixed cost is about
0.30 ms per forward + backward, chunked's about 1.0 ms (its ~3√L Python-level steps), and at large sizes chunked
is memory-bound (README, "Speed of the scans (CPU)"). The rule therefore depends on the device and the options
only, and :func:`resolve_backend` can name the backend before a call is made. The timing the book runs live
(Chapter 0) is :mod:`.timing`.

Shared steps: :func:`prepare_scan` (checks the arguments, adds the bias and softplus to Δ, upcasts),
:func:`discretize` (log Ā_t = Δ_t A and B̄_t u_t, (b, d, l, n)) and :func:`finish_output` (+ D u, silu(z) gate)
are every backend's common code (``_common.py``, this package's internals); they are exported here for the
Mamba block's step-by-step path (``models.mamba``).
"""

from __future__ import annotations

import torch

from ._common import PreparedScan, ScanInputError, check_tensor_arg, discretize, finish_output, prepare_scan
from .chunked import linear_recurrence_chunked, selective_scan_chunked
from .fused import fused_available, require_fused, selective_scan_fused
from .mamba2 import ssd_scan_chunked, ssd_scan_reference
from .mamba_ssm_backend import (
    BackendUnavailableError,
    mamba_ssm_available,
    mamba_ssm_unsupported,
    refuse_unsupported,
    require_mamba_ssm,
    selective_scan_mamba_ssm,
    ssd_scan_mamba_ssm,
)
from .reference import ScanTrace, selective_scan_reference, selective_scan_trace

BACKENDS = ("auto", "reference", "chunked", "mamba_ssm", "fused")

__all__ = [
    "BACKENDS",
    "BackendUnavailableError",
    "PreparedScan",
    "ScanInputError",
    "ScanTrace",
    "discretize",
    "finish_output",
    "fused_available",
    "linear_recurrence_chunked",
    "mamba_ssm_available",
    "mamba_ssm_unsupported",
    "prepare_scan",
    "resolve_backend",
    "selective_scan",
    "selective_scan_chunked",
    "selective_scan_fused",
    "selective_scan_reference",
    "selective_scan_trace",
    "ssd_scan",
    "ssd_scan_chunked",
    "ssd_scan_reference",
]


def resolve_backend(backend: str, device: torch.device | str = "cpu", *, discretization: str = "euler") -> str:
    """The concrete backend that ``backend`` means for tensors on ``device``; raises if it cannot run there.

    ``auto``: ``mamba_ssm`` on CUDA when it imports, else ``chunked``; on the CPU ``fused`` when numba
    imports and ``discretization`` is ``"euler"``, else ``chunked`` (see the module docstring for the
    measurement behind it: fused is faster than chunked at every CPU shape measured, so the choice
    does not depend on the shapes). An explicit backend is returned as is, or raises
    BackendUnavailableError when it cannot run on ``device``.
    """
    device = torch.device(device)
    if backend not in BACKENDS:
        raise ValueError(f"unknown scan backend {backend!r}; choose one of {', '.join(BACKENDS)}.")
    if backend == "auto":
        if device.type == "cuda":
            return "mamba_ssm" if mamba_ssm_available() else "chunked"
        if device.type == "cpu" and discretization == "euler" and fused_available():
            return "fused"
        return "chunked"
    if backend == "mamba_ssm":
        require_mamba_ssm(device)
    if backend == "fused":
        require_fused(device)
    return backend


def selective_scan(
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
    backend="auto",
    *,
    discretization="euler",
    initial_state=None,
):
    """Mamba-1 selective scan with ``mamba_ssm``'s ``selective_scan_fn`` signature and shapes.

    u, delta, z: (b, d, l); A: (d, n); B, C: (d, n) | (b, n, l) | (b, g, n, l); D, delta_bias: (d,).
    Returns out (b, d, l), plus the last state (b, d, n) if ``return_last_state``.
    ``discretization="zoh"`` uses the exact zero-order hold for B̄ (PyTorch backends only);
    ``initial_state`` (b, d, n) starts the recurrence from a given state (PyTorch backends only).
    On CUDA, ``auto`` takes ``chunked`` for a call mamba-ssm's kernel does not run as asked (``zoh``, an initial
    state, or a last state with a time-invariant B: :func:`mamba_ssm_unsupported`); ``backend="mamba_ssm"`` refuses it.
    """
    check_tensor_arg("u", u)  # before u.device is read: a list gets the message, not an AttributeError
    name = resolve_backend(backend, u.device, discretization=discretization)
    args = (u, delta, A, B, C, D, z, delta_bias, delta_softplus, return_last_state)
    if name == "mamba_ssm":
        unsupported = mamba_ssm_unsupported(B, return_last_state, discretization, initial_state)
        if unsupported and backend == "auto":  # auto: the fastest backend that runs the call, here chunked
            name = "chunked"
        else:
            refuse_unsupported(unsupported)
            return selective_scan_mamba_ssm(*args)
    if name == "reference":
        return selective_scan_reference(*args, discretization=discretization, initial_state=initial_state)
    if name == "fused":
        return selective_scan_fused(*args, discretization=discretization, initial_state=initial_state)
    return selective_scan_chunked(*args, discretization=discretization, initial_state=initial_state)


def ssd_scan(
    x,
    dt,
    A,
    B,
    C,
    D=None,
    z=None,
    dt_bias=None,
    dt_softplus=False,
    initial_states=None,
    return_final_states=False,
    backend="auto",
    chunk_size=64,
):
    """Mamba-2 scan with ``mamba_chunk_scan_combined``'s layout (see ``mamba2.py``).

    There is no fused SSD kernel: ``backend="fused"`` (what ``auto`` means on the CPU for the Mamba-1
    scan, so what models built with a notebook's backend carry) runs the chunked SSD, whose chunks
    are matrix products already; this is the documented meaning of the name here, not a fallback.
    """
    name = resolve_backend(backend, x.device)
    if name == "fused":
        name = "chunked"
    kwargs = dict(
        D=D,
        z=z,
        dt_bias=dt_bias,
        dt_softplus=dt_softplus,
        initial_states=initial_states,
        return_final_states=return_final_states,
    )
    if name == "mamba_ssm":
        return ssd_scan_mamba_ssm(x, dt, A, B, C, chunk_size, **kwargs)
    if name == "reference":
        return ssd_scan_reference(x, dt, A, B, C, **kwargs)
    return ssd_scan_chunked(x, dt, A, B, C, chunk_size=chunk_size, **kwargs)
