"""Benchmark of the selective-scan backends: forward + backward, side by side, on the same inputs.

    python -m mamba_recall bench [--device cpu|cuda] [--quick] [--out results/bench_cpu.json]
    python -m mamba_recall.bench [same options]

What is timed
-------------
One step is ``out = scan(u, Δ, A, B, C, delta_softplus=True)`` followed by ``out.sum().backward()``
(fresh leaf tensors every step, float32, selective B and C of shape (batch, N, L), seeded inputs
shared by every backend). Backends:

``reference``  ``selective_scan_reference``, the sequential loop (the truth; slow, one step per token);
``chunked``    ``selective_scan_chunked``, the default CPU backend (the baseline of every ratio);
``mambapy``    mambapy's Blelloch ``pscan`` on the same math (:func:`mambapy_selective_scan`), an
               optional comparison column from the ``bench`` extra (``pip install 'mamba_recall[bench]'``);
               it is never a fallback of the scans;
``mamba_ssm``  the CUDA kernel ``selective_scan_fn`` (only with ``--device cuda`` and mamba-ssm installed).

Reported per backend and size: seconds (minimum over ``repeats`` runs after one warm-up run; the
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
token means memory linear in L.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

from .results import device_description, save_bundle
from .scan import selective_scan_chunked, selective_scan_reference
from .scan.mamba_ssm_backend import mamba_ssm_available, selective_scan_mamba_ssm

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
QUICK_SIZES = (BenchSize("quick", batch=2, channels=8, N=4, L=64),)
SCALING_LENGTHS = (512, 1024, 2048, 4096)
SCALING_WIDTH = dict(batch=4, channels=64, N=16)
QUICK_SCALING_LENGTHS = (64, 128, 256, 512)
QUICK_SCALING_WIDTH = dict(batch=1, channels=8, N=4)


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
            notes.append("mamba_ssm is not importable: the mamba_ssm column is skipped "
                         "(pip install 'mamba_recall[gpu]' --no-build-isolation).")
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
    # the first timed run also records memory (the hook only notes storage sizes: negligible cost)
    first, out, grads, saved, peak = _step(fn, inputs, device, measure_memory=True)
    times = [first] + [_step(fn, inputs, device)[0] for _ in range(n_runs - 1)]
    return min(times), n_runs, out, grads, saved, peak


def run_benchmark(device="cpu", sizes=None, repeats=3, include_reference=True, include_mambapy=True, *,
                  reference_repeats=1, verbose=True) -> pd.DataFrame:
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
                print(f"  timing {name:>9} at {size.name} "
                      f"(b={size.batch}, d={size.channels}, N={size.N}, L={size.L}) ...", flush=True)
            results[name] = _time_backend(name, fn, inputs, size, device, repeats, reference_repeats)
        base_s, _, base_out, base_grads, _, _ = results["chunked"]
        for name, (secs, runs, out, grads, saved, peak) in results.items():
            rel = _rel(out, base_out)
            rows.append(dict(
                size=size.name, batch=size.batch, channels=size.channels, N=size.N, L=size.L, backend=name,
                seconds=secs, runs=runs, ratio_vs_chunked=secs / base_s,
                max_abs_diff=(out.double() - base_out.double()).abs().max().item(), rel_diff=rel,
                agrees=rel <= AGREEMENT_TOL,
                grad_rel_diff=max(_rel(g, gb) for g, gb in zip(grads, base_grads)),
                saved_MB=None if saved is None else saved / 2**20,
                peak_cuda_MB=None if peak is None else peak / 2**20,
            ))
    df = pd.DataFrame(rows)
    df.attrs["notes"] = notes
    return df


def run_memory_scaling(device="cpu", lengths=SCALING_LENGTHS, batch=4, channels=64, N=16, repeats=1,
                       verbose=True) -> pd.DataFrame:
    """``chunked`` forward + backward at several L: saved_MB, bytes per token (batch · L) and seconds.

    Linear memory in L shows as a constant ``bytes_per_token`` (see the module docstring for the metric).
    """
    device = torch.device(device)
    fn = lambda *a: selective_scan_chunked(*a, delta_softplus=True)  # noqa: E731
    rows = []
    for L in lengths:
        size = BenchSize(f"L={L}", batch, channels, N, L)
        if verbose:
            print(f"  memory scaling: chunked at L={L} ...", flush=True)
        inputs = make_inputs(size, device)
        secs, _, _, _, saved, peak = _time_backend("chunked", fn, inputs, size, device, repeats, repeats)
        rows.append(dict(L=L, batch=batch, channels=channels, N=N, seconds=secs, saved_MB=saved / 2**20,
                         bytes_per_token=saved / (batch * L),
                         peak_cuda_MB=None if peak is None else peak / 2**20))
    df = pd.DataFrame(rows)
    df["saved_MB_ratio_to_first"] = df["saved_MB"] / df["saved_MB"].iloc[0]
    df["L_ratio_to_first"] = df["L"] / df["L"].iloc[0]
    return df


# ----------------------------------------------------------------------------- reporting


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):  # numpy scalars
        return _clean(v.item())
    return v


def to_records(df: pd.DataFrame) -> list[dict]:
    """Rows of a benchmark table as JSON-ready dicts (numpy scalars → Python, NaN → None)."""
    return [{k: _clean(v) for k, v in row.items()} for row in df.astype(object).to_dict(orient="records")]


def format_table(df: pd.DataFrame) -> str:
    cols = [c for c in ("size", "backend", "seconds", "runs", "ratio_vs_chunked", "max_abs_diff", "rel_diff",
                        "agrees", "grad_rel_diff", "saved_MB", "peak_cuda_MB") if c in df]
    if "peak_cuda_MB" in cols and df["peak_cuda_MB"].isna().all():
        cols.remove("peak_cuda_MB")
    fmt = {"seconds": "{:.4f}".format, "ratio_vs_chunked": "{:.2f}".format, "max_abs_diff": "{:.2e}".format,
           "rel_diff": "{:.2e}".format, "grad_rel_diff": "{:.2e}".format, "saved_MB": "{:.3g}".format,
           "peak_cuda_MB": "{:.1f}".format}
    return df[cols].to_string(index=False, formatters={k: v for k, v in fmt.items() if k in cols})


def format_scaling(df: pd.DataFrame) -> str:
    cols = ["L", "seconds", "saved_MB", "bytes_per_token", "L_ratio_to_first", "saved_MB_ratio_to_first"]
    if df["peak_cuda_MB"].notna().any():
        cols.append("peak_cuda_MB")
    fmt = {"seconds": "{:.4f}".format, "saved_MB": "{:.3g}".format, "bytes_per_token": "{:.0f}".format,
           "L_ratio_to_first": "{:.1f}".format, "saved_MB_ratio_to_first": "{:.2f}".format,
           "peak_cuda_MB": "{:.1f}".format}
    return df[cols].to_string(index=False, formatters={k: v for k, v in fmt.items() if k in cols})


def ratio_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per size: seconds of each other backend divided by chunked's."""
    rows = []
    for size, part in df.groupby("size", sort=False):
        s = part.set_index("backend")["seconds"]
        rows.append({"size": size, **{f"{o}/chunked": s[o] / s["chunked"] for o in ("reference", "mambapy", "mamba_ssm")
                                      if o in s}})
    return pd.DataFrame(rows)


def save_benchmark_bundle(out: Path, df: pd.DataFrame, scaling, config: dict, wall: float, command: str) -> Path:
    """Write the run as a result bundle (``results.save_bundle``): timings, ratios, memory scaling."""
    tables = {"timings": df, "ratios": ratio_table(df)}
    if scaling is not None:
        tables["memory_scaling"] = scaling
    try:
        from importlib.metadata import version
        config = {**config, "mambapy_version": version("mambapy")}
    except Exception:  # the bench extra is optional
        pass
    ratios = tables["ratios"].set_index("size")
    acceptance = {k: _clean(v) for k, v in ratios.iloc[0].items()} if len(ratios) else {}
    return save_bundle(Path(out).stem, {"acceptance": {"size": ratios.index[0] if len(ratios) else None, **acceptance},
                                         "notes": list(df.attrs.get("notes", []))},
                       config, command=command, device=config["device"], wall_seconds=wall, tables=tables,
                       directory=Path(out).parent)


def ratio_lines(df: pd.DataFrame) -> list[str]:
    lines = []
    for size, part in df.groupby("size", sort=False):
        s = part.set_index("backend")["seconds"]
        bits = [f"{other}/chunked = {s[other] / s['chunked']:.2f}x"
                for other in ("reference", "mambapy", "mamba_ssm") if other in s]
        lines.append(f"{size}: " + (", ".join(bits) if bits else "chunked only"))
    return lines


def main(argv=None) -> int:
    """``python -m mamba_recall bench`` / ``python -m mamba_recall.bench``; returns an exit code."""
    parser = argparse.ArgumentParser(prog="python -m mamba_recall bench",
                                     description="Time the selective-scan backends (forward + backward).")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a CI smoke run (seconds)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON to this path")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per backend (default 3, quick 1)")
    parser.add_argument("--reference-repeats", type=int, default=1, help="timed runs of the slow reference")
    parser.add_argument("--no-reference", action="store_true", help="leave out the sequential reference")
    parser.add_argument("--no-mambapy", action="store_true", help="leave out the mambapy comparison column")
    parser.add_argument("--no-scaling", action="store_true", help="skip the memory-scaling table")
    args = parser.parse_args(argv)

    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda was asked for but no CUDA device is available.", file=sys.stderr)
        return 2
    sizes = QUICK_SIZES if args.quick else DEFAULT_SIZES
    repeats = args.repeats or (1 if args.quick else 3)
    lengths, width = (QUICK_SCALING_LENGTHS, QUICK_SCALING_WIDTH) if args.quick else (SCALING_LENGTHS, SCALING_WIDTH)
    config = dict(device=args.device, quick=args.quick, sizes=[asdict(s) for s in sizes], repeats=repeats,
                  reference_repeats=args.reference_repeats, include_reference=not args.no_reference,
                  include_mambapy=not args.no_mambapy, dtype="float32", seed=SEED, delta_softplus=True,
                  step="out = scan(u, delta, A, B, C, delta_softplus=True); out.sum().backward()",
                  timing="min over runs after one warm-up run (reference: warm-up on a 16-token slice)",
                  memory_metric="saved_MB: bytes saved for backward (distinct storages, saved_tensors_hooks); "
                                "peak_cuda_MB: torch.cuda.max_memory_allocated over one step minus the inputs",
                  scaling=dict(lengths=list(lengths), **width), torch_threads=torch.get_num_threads())

    t0 = time.perf_counter()
    print(f"scan benchmark on {device_description(args.device)} (torch {torch.__version__})")
    df = run_benchmark(args.device, sizes, repeats, not args.no_reference, not args.no_mambapy,
                       reference_repeats=args.reference_repeats)
    print()
    print("forward + backward, float32, seconds = min over runs; diffs are against chunked")
    print(format_table(df))
    print()
    for line in ratio_lines(df):
        print(line)
    bad = df[~df["agrees"]]
    if len(bad):
        print(f"WARNING: outputs differ from chunked by more than {AGREEMENT_TOL:g} (relative): "
              + ", ".join(f"{r.backend}@{r.size} ({r.rel_diff:.2e})" for r in bad.itertuples()))
    scaling = None
    if not args.no_scaling:
        print()
        scaling = run_memory_scaling(args.device, lengths, repeats=repeats, **width)
        print(f"\nmemory scaling of chunked (batch {width['batch']}, channels {width['channels']}, N {width['N']}); "
              "saved_MB = bytes saved for backward, bytes_per_token = saved bytes / (batch · L)")
        print(format_scaling(scaling))
    wall = time.perf_counter() - t0
    print(f"\ntotal wall time {wall:.1f} s")

    if args.out is not None:
        path = save_benchmark_bundle(args.out, df, scaling, config, wall,
                                     "python -m mamba_recall bench " + " ".join(argv if argv is not None else sys.argv[1:]))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
