"""The CUDA kernels of the ``mamba-ssm`` package, imported lazily and only when asked for.

``import mamba_ssm`` fails on every released version without its compiled extension (it imports
``selective_scan_cuda`` unconditionally from ``mamba_ssm/__init__.py`` through
``ops/selective_scan_interface.py``, up to v2.3.2.post1), so it is never imported at module import
time here, and a missing package or a CPU tensor raises :class:`BackendUnavailableError` with the
fix instead of falling back to a slower scan (state-spaces/mamba#265).
"""

from __future__ import annotations

import functools

import torch

from ._common import check_decay_rates, validate_scan_args

INSTALL_HINT = (
    "mamba-ssm runs only on a CUDA machine, compiled there against its torch: pip install mamba-ssm "
    "causal-conv1d --no-build-isolation (the packages of mamba_recall[gpu]; from a checkout pip install -e "
    "'.[gpu]' --no-build-isolation; offline: scripts/gpu_offline_build.sh; the book's appendix 'Engineering "
    "notes', 'The GPU build'). Without it pick backend='fused' (the CPU default), 'chunked' (CPU and CUDA) or "
    "'reference'."
)


class BackendUnavailableError(RuntimeError):
    """The requested scan backend cannot run here (missing package or no CUDA device). In Jupyter (and under
    papermill) the error shows as its one line, not a traceback: the message names the problem and the fix."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for an exception's shown traceback
        return [f"{type(self).__name__}: {self}"]


@functools.lru_cache(maxsize=1)
def _import_error() -> str | None:
    try:
        import mamba_ssm.ops.selective_scan_interface  # noqa: F401
    except Exception as exc:  # ImportError, or OSError/RuntimeError from a broken extension build
        return f"{type(exc).__name__}: {exc}"
    return None


def mamba_ssm_available() -> bool:
    """True when ``mamba_ssm`` and its CUDA extension import and a CUDA device exists."""
    return torch.cuda.is_available() and _import_error() is None


def require_mamba_ssm(device: torch.device | None = None) -> None:
    """Raise BackendUnavailableError naming the problem and the fix if mamba-ssm cannot run on ``device``."""
    if device is not None and device.type != "cuda":
        raise BackendUnavailableError(
            f"backend='mamba_ssm' runs only on CUDA tensors, but the inputs are on {device}. " + INSTALL_HINT
        )
    if not torch.cuda.is_available():
        raise BackendUnavailableError("backend='mamba_ssm' needs a CUDA device and none is available. " + INSTALL_HINT)
    err = _import_error()
    if err is not None:
        raise BackendUnavailableError(f"backend='mamba_ssm' could not import mamba_ssm ({err}). " + INSTALL_HINT)


INVARIANT_B_LAST_STATE = (
    "return_last_state with a time-invariant B (shape (d, n)): mamba-ssm's kernel then scans Δ·u without B and "
    "multiplies B in at the output (csrc/selective_scan/selective_scan_fwd_kernel.cuh, kIsVariableB), so the state it "
    "returns is h/B, not h (on an H100, 2026-11-28: the outputs within tolerance, the last state off by up to 5.7)"
)


def mamba_ssm_unsupported(B, return_last_state=False, discretization="euler", initial_state=None) -> list[str]:
    """What a selective-scan call asks that mamba-ssm's kernel does not give (empty: it runs the call)."""
    unsupported = [name for name, v in (("discretization", discretization), ("initial_state", initial_state))
                   if v is not None and v != "euler"]  # fmt: skip
    if return_last_state and isinstance(B, torch.Tensor) and B.dim() == 2:
        unsupported.append(INVARIANT_B_LAST_STATE)
    return unsupported


def refuse_unsupported(unsupported: list[str]) -> None:
    """Raise :class:`BackendUnavailableError` naming what of a call (:func:`mamba_ssm_unsupported`) mamba-ssm's kernel
    does not give, and the backends that do; nothing when ``unsupported`` is empty."""
    if not unsupported:
        return
    if "discretization" in unsupported:  # fused takes an initial state but implements the Euler rule only
        others = "'chunked' or 'reference'"
    elif "initial_state" in unsupported:
        others = "'fused', 'chunked' or 'reference'"
    else:  # the invariant-B last state, on CUDA tensors
        others = "'chunked' (CUDA) or ask for no last state"
    raise BackendUnavailableError(
        f"backend='mamba_ssm' does not support {', '.join(unsupported)}; use backend={others}."
    )


def selective_scan_mamba_ssm(
    u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False, return_last_state=False
):
    """``mamba_ssm.ops.selective_scan_interface.selective_scan_fn`` (the CUDA kernel). Refuses, with
    :class:`BackendUnavailableError`, a last state with a time-invariant B (:data:`INVARIANT_B_LAST_STATE`)."""
    validate_scan_args(u, delta, A, B, C, D, z, delta_bias)
    check_decay_rates(A)
    refuse_unsupported(mamba_ssm_unsupported(B, return_last_state))
    require_mamba_ssm(u.device)
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    return selective_scan_fn(u, delta, A, B, C, D, z, delta_bias, delta_softplus, return_last_state)


def ssd_scan_mamba_ssm(
    x,
    dt,
    A,
    B,
    C,
    chunk_size=64,
    D=None,
    z=None,
    dt_bias=None,
    dt_softplus=False,
    initial_states=None,
    return_final_states=False,
):
    """``mamba_ssm.ops.triton.ssd_combined.mamba_chunk_scan_combined`` (Triton)."""
    if isinstance(A, torch.Tensor):
        check_decay_rates(A)
    require_mamba_ssm(x.device)
    from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined

    return mamba_chunk_scan_combined(
        x,
        dt,
        A,
        B,
        C,
        chunk_size,
        D=D,
        z=z,
        dt_bias=dt_bias,
        initial_states=initial_states,
        dt_softplus=dt_softplus,
        return_final_states=return_final_states,
    )
