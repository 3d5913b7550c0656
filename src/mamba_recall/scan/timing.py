"""Timing of the selective-scan backends: forward + backward, side by side, on the same inputs.

What the book times live (the Chapter 0 notebook ``02_parallel_scan``: :func:`run_benchmark` at a few sizes) and
what the repository's scan benchmark builds on (``python benchmarks/scan.py``, which adds the exp-and-FMA bound,
the fused-vs-chunked crossover and training throughput, and writes the bundle ``results/scan_bench_cpu.json``).

What is timed
-------------
One step is ``out = scan(u, Δ, A, B, C, delta_softplus=True)`` followed by ``out.sum().backward()``
(fresh leaf tensors every step, float32, selective B and C of shape (batch, N, L), seeded inputs
shared by every backend). Backends:

``reference``  ``selective_scan_reference``, the sequential loop (the truth; slow, one step per token);
``chunked``    ``selective_scan_chunked``, the pure-PyTorch parallel scan (the baseline of every ratio);
``fused``      ``selective_scan_fused``, the compiled (numba) CPU kernel, the CPU default of ``auto``;
``mambapy``    mambapy's Blelloch ``pscan`` on the same math (:func:`mambapy_selective_scan`), an
               optional comparison column from the ``bench`` extra (``pip install 'mamba_recall[bench]'``);
               it is never a fallback of the scans;
``mamba_ssm``  the CUDA kernel ``selective_scan_fn`` (only with ``--device cuda`` and mamba-ssm installed).

Reported per backend and size: seconds (minimum over ``repeats`` runs after one warm-up run; also
``cpu_seconds``, the process CPU time of the fastest-CPU run, which a busy machine does not inflate; the
reference runs ``reference_repeats`` times and is warmed up on a 16-token slice, because one run of
it at the acceptance size takes over a minute), the ratio to ``chunked``, the largest absolute and
relative (‖a − b‖∞ / ‖b‖∞) difference of the output from ``chunked``'s (they must agree within
1e-5 relative), the largest relative difference over the gradients of u, Δ, A, B, C, and memory.

Memory metric
-------------
``saved_MB``: the bytes autograd keeps for the backward pass, measured with
``torch.autograd.graph.saved_tensors_hooks`` during the forward pass and counted once per distinct
storage (views of one tensor count once). This is the activation memory that grows with L; it is
measured, not estimated, but it is *not* the process peak: temporaries freed during the forward or
backward pass are not in it (torch's CPU allocations are invisible to ``tracemalloc``, and the
CPU ``torch.profiler`` memory view reports per-op allocation totals, not a peak). On CUDA,
``peak_cuda_MB`` adds the true peak: ``torch.cuda.max_memory_allocated`` during one step, minus the
memory held before it (the inputs).

The memory-scaling table (:func:`run_memory_scaling`) runs ``chunked`` forward + backward at
L = 512 … 4096 at a smaller width and shows ``saved_MB`` and bytes per token: constant bytes per
token means memory linear in L (the same table for ``fused`` is ``memory_scaling_fused``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F

from .chunked import selective_scan_chunked
from .fused import fused_available, selective_scan_fused
from .mamba_ssm_backend import mamba_ssm_available, selective_scan_mamba_ssm
from .reference import selective_scan_reference

BENCH_INSTALL_HINT = "pip install 'mamba_recall[bench]'"
AGREEMENT_TOL = 1e-5
SEED = 0


@dataclass(frozen=True)
class BenchSize:
    """One benchmark shape: u, Δ are (batch, channels, L); A is (channels, N); B, C are (batch, N, L)."""

    name: str
    batch: int
    channels: int
    N: int
    L: int


ACCEPTANCE_SIZE = BenchSize("acceptance", batch=16, channels=256, N=16, L=512)
CHAPTER_SIZE = BenchSize("chapter", batch=8, channels=64, N=16, L=256)
DEFAULT_SIZES = (ACCEPTANCE_SIZE, CHAPTER_SIZE)
SCALING_LENGTHS = (512, 1024, 2048, 4096)


# ----------------------------------------------------------------------------- the mambapy column


def _import_mambapy_pscan():
    """mambapy's ``pscan`` or None (the ``bench`` extra is optional)."""
    try:
        from mambapy.pscan import pscan
    except ImportError:
        return None
    return pscan


def mambapy_selective_scan(u, delta, A, B, C, delta_softplus=False):
    """The selective scan computed with mambapy's parallel scan (``mambapy.pscan.pscan``).

    Takes ``selective_scan_fn``'s layout: u, delta (batch, channels, L); A (channels, N);
    B, C (batch, N, L) (selective maps only); returns y (batch, channels, L) without D or z.
    The math is the one of mambapy's ``MambaBlock.selective_scan`` (Euler rule for B, as mamba-ssm)::

        Δ   = softplus(delta)                  (if delta_softplus)
        ΔA  = exp(Δ A)                         (B, L, D, N), mambapy's layout
        BX  = Δ B u                            (B, L, D, N)
        hs  = pscan(ΔA, BX)                    h_t = ΔA_t ⊙ h_{t−1} + BX_t, Blelloch scan over L
        y   = hs @ C                           (B, L, D)

    pscan pads L to the next power of two internally and multiplies decays across up to L/2 steps
    (no division, so no overflow at large Δ, but no float64 cumsum either).
    Raises ImportError with the install command if mambapy is missing.
    """
    pscan = _import_mambapy_pscan()
    if pscan is None:
        raise ImportError(f"mambapy is not installed; {BENCH_INSTALL_HINT}")
    if B.dim() != 3 or C.dim() != 3:
        raise ValueError("mambapy_selective_scan takes selective B, C of shape (batch, N, L) only.")
    x = u.transpose(1, 2)  # (B, L, D)
    dt = delta.transpose(1, 2)
    if delta_softplus:
        dt = F.softplus(dt)
    Bt, Ct = B.transpose(1, 2), C.transpose(1, 2)  # (B, L, N)
    deltaA = torch.exp(dt.unsqueeze(-1) * A)  # (B, L, D, N)
    BX = dt.unsqueeze(-1) * Bt.unsqueeze(2) * x.unsqueeze(-1)  # (B, L, D, N)
    hs = pscan(deltaA, BX)
    y = (hs @ Ct.unsqueeze(-1)).squeeze(-1)  # (B, L, D, N) @ (B, L, N, 1) -> (B, L, D)
    return y.transpose(1, 2)


# ----------------------------------------------------------------------------- inputs and one step


def make_inputs(size: BenchSize, device="cpu", dtype=torch.float32, seed=SEED):
    """Seeded inputs (u, delta, A, B, C); A is the S4D-real init −(1, …, N) per channel."""
    g = torch.Generator().manual_seed(seed)
    b, d, n, L = size.batch, size.channels, size.N, size.L
    u = torch.randn(b, d, L, generator=g, dtype=dtype)
    delta = torch.randn(b, d, L, generator=g, dtype=dtype) * 0.5 - 1.0  # softplus → Δ ≈ 0.1 … 1
    A = -torch.arange(1, n + 1, dtype=dtype).repeat(d, 1)
    B = torch.randn(b, n, L, generator=g, dtype=dtype)
    C = torch.randn(b, n, L, generator=g, dtype=dtype)
    return tuple(t.to(device) for t in (u, delta, A, B, C))


def _backends(device: torch.device, include_reference: bool, include_mambapy: bool, notes: list[str]):
    fns = {"chunked": lambda *a: selective_scan_chunked(*a, delta_softplus=True)}
    if device.type == "cpu":
        if fused_available():
            fns["fused"] = lambda *a: selective_scan_fused(*a, delta_softplus=True)
        else:
            notes.append("numba is not importable: the fused column is skipped (pip install numba).")
    if include_reference:
        fns["reference"] = lambda *a: selective_scan_reference(*a, delta_softplus=True)
    if include_mambapy:
        if _import_mambapy_pscan() is None:
            notes.append(f"mambapy is not installed: the mambapy column is skipped ({BENCH_INSTALL_HINT}).")
        else:
            fns["mambapy"] = lambda *a: mambapy_selective_scan(*a, delta_softplus=True)
    if device.type == "cuda":
        if mamba_ssm_available():
            fns["mamba_ssm"] = lambda *a: selective_scan_mamba_ssm(*a, delta_softplus=True)
        else:
            notes.append(
                "mamba_ssm is not importable: the mamba_ssm column is skipped "
                "(pip install 'mamba_recall[gpu]' --no-build-isolation)."
            )
    return fns


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _step(fn, inputs, device, measure_memory=False):
    """One forward + backward on fresh leaves; returns (seconds, out, grads, saved_bytes, peak_cuda_bytes)."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    storages: dict[int, int] = {}

    def pack(t):
        if measure_memory:
            s = t.untyped_storage()
            storages[s.data_ptr()] = s.nbytes()
        return t

    peak = None
    if device.type == "cuda" and measure_memory:
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
    _sync(device)
    t0 = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*leaves)
    out.sum().backward()
    _sync(device)
    seconds = time.perf_counter() - t0
    if device.type == "cuda" and measure_memory:
        peak = torch.cuda.max_memory_allocated(device) - base
    grads = [t.grad for t in leaves]
    return seconds, out.detach(), grads, (sum(storages.values()) if measure_memory else None), peak


def _rel(a, b):
    scale = b.abs().max().item()
    diff = (a.double() - b.double()).abs().max().item()
    return diff / scale if scale > 0 else diff


def _time_backend(name, fn, inputs, size, device, repeats, reference_repeats):
    if name == "reference":  # one full run takes >1 min at the acceptance size: warm up on a slice
        _step(fn, tuple(t[..., :16] if t.dim() == 3 else t for t in inputs), device)
        n_runs = reference_repeats
    else:
        _step(fn, inputs, device)
        n_runs = repeats
    # the first timed run also records memory (the hook only notes storage sizes: negligible cost);
    # CPU time (all threads of the process) is kept beside the wall time: on a machine shared with other
    # jobs the wall time includes waiting for a core, the CPU time does not
    c0 = time.process_time()
    first, out, grads, saved, peak = _step(fn, inputs, device, measure_memory=True)
    cpu = [time.process_time() - c0]
    times = [first]
    for _ in range(n_runs - 1):
        c0 = time.process_time()
        times.append(_step(fn, inputs, device)[0])
        cpu.append(time.process_time() - c0)
    return min(times), n_runs, out, grads, saved, peak, min(cpu)


def run_benchmark(
    device="cpu",
    sizes=None,
    repeats=3,
    include_reference=True,
    include_mambapy=True,
    *,
    reference_repeats=1,
    verbose=True,
) -> pd.DataFrame:
    """Time forward + backward of every available backend on each size; one row per (size, backend).

    Columns: size, batch, channels, N, L, backend, seconds (min over runs), runs, ratio_vs_chunked
    (seconds / chunked seconds), max_abs_diff and rel_diff of the output vs chunked, agrees
    (rel_diff ≤ 1e-5), grad_rel_diff (max over u, Δ, A, B, C of ‖g − g_chunked‖∞/‖g_chunked‖∞),
    saved_MB (bytes saved for backward, see the module docstring) and peak_cuda_MB (CUDA only).
    Notes about skipped columns are printed (if ``verbose``) and kept in ``df.attrs["notes"]``.
    """
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for but no CUDA device is available.")
    sizes = list(DEFAULT_SIZES if sizes is None else sizes)
    notes: list[str] = []
    fns = _backends(device, include_reference, include_mambapy, notes)
    if verbose:
        for note in notes:
            print(f"note: {note}")
    rows = []
    for size in sizes:
        inputs = make_inputs(size, device)
        results = {}
        for name, fn in fns.items():
            if verbose:
                print(
                    f"  timing {name:>9} at {size.name} "
                    f"(b={size.batch}, d={size.channels}, N={size.N}, L={size.L}) ...",
                    flush=True,
                )
            results[name] = _time_backend(name, fn, inputs, size, device, repeats, reference_repeats)
        base_s, _, base_out, base_grads, _, _, _ = results["chunked"]
        for name, (secs, runs, out, grads, saved, peak, cpu) in results.items():
            rel = _rel(out, base_out)
            rows.append(
                dict(
                    size=size.name,
                    batch=size.batch,
                    channels=size.channels,
                    N=size.N,
                    L=size.L,
                    backend=name,
                    seconds=secs,
                    runs=runs,
                    ratio_vs_chunked=secs / base_s,
                    cpu_seconds=cpu,
                    max_abs_diff=(out.double() - base_out.double()).abs().max().item(),
                    rel_diff=rel,
                    agrees=rel <= AGREEMENT_TOL,
                    grad_rel_diff=max(_rel(g, gb) for g, gb in zip(grads, base_grads)),
                    saved_MB=None if saved is None else saved / 2**20,
                    peak_cuda_MB=None if peak is None else peak / 2**20,
                )
            )
    df = pd.DataFrame(rows)
    df.attrs["notes"] = notes
    return df


def run_memory_scaling(
    device="cpu", lengths=SCALING_LENGTHS, batch=4, channels=64, N=16, repeats=1, verbose=True, backend="chunked"
) -> pd.DataFrame:
    """``backend`` (chunked or fused) forward + backward at several L: saved_MB, bytes per token
    (batch · L) and seconds.

    Linear memory in L shows as a constant ``bytes_per_token`` (see the module docstring for the metric).
    """
    device = torch.device(device)
    scan = {"chunked": selective_scan_chunked, "fused": selective_scan_fused}[backend]
    fn = lambda *a: scan(*a, delta_softplus=True)  # noqa: E731
    rows = []
    for L in lengths:
        size = BenchSize(f"L={L}", batch, channels, N, L)
        if verbose:
            print(f"  memory scaling: {backend} at L={L} ...", flush=True)
        inputs = make_inputs(size, device)
        secs, _, _, _, saved, peak, _ = _time_backend(backend, fn, inputs, size, device, repeats, repeats)
        rows.append(
            dict(
                L=L,
                batch=batch,
                channels=channels,
                N=N,
                seconds=secs,
                saved_MB=saved / 2**20,
                bytes_per_token=saved / (batch * L),
                peak_cuda_MB=None if peak is None else peak / 2**20,
            )
        )
    df = pd.DataFrame(rows)
    df["saved_MB_ratio_to_first"] = df["saved_MB"] / df["saved_MB"].iloc[0]
    df["L_ratio_to_first"] = df["L"] / df["L"].iloc[0]
    return df


# ----------------------------------------------------------------------------- records


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):  # numpy scalars
        return _clean(v.item())
    return v


def to_records(df: pd.DataFrame) -> list[dict]:
    """Rows of a benchmark table as JSON-ready dicts (numpy scalars → Python, NaN → None)."""
    return [{k: _clean(v) for k, v in row.items()} for row in df.astype(object).to_dict(orient="records")]
