"""The scan benchmark: the selective-scan backends timed side by side, and what the CPU rule rests on.

    python benchmarks/scan.py [--device cpu|cuda] [--quick] [--repeats N] [--out results/scan_bench_cpu.json]

A script of the repository, not a module of the library (``make bench`` runs it; ``make reproduce`` remakes the
committed ``results/scan_bench_cpu.json`` with the command that bundle records). The timing itself, what one step
is and how memory is measured, is the library's :mod:`mamba_recall.scan.timing` (:func:`run_benchmark`,
:func:`run_memory_scaling`), which the Chapter 0 notebook also runs live. This driver prints those tables (timings,
ratios to ``chunked``, memory scaling), writes them as a result bundle with ``--out``, and adds:

What it adds (printed and kept in the bundle)
---------------------------------------------
``bound``      an exponential-and-FMA lower bound for the fused forward + backward at each size
               (:func:`estimate_exp_fma_bound`: op counts of the kernels × per-core rates measured here);
``crossover``  fused vs chunked over a grid of shapes down to L = 1 (:func:`run_crossover`), the
               measurement behind ``auto``'s CPU rule (``scan/__init__.py``);
``training``   model-steps per second and peak memory of the Chapter 4 S-model and a Chapter 3 model
               trained with chunked and with fused (:func:`run_training_throughput`, one fresh
               process per run so that its peak RSS is its own).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch

from mamba_recall.presets import seeds
from mamba_recall.results import device_description, save_bundle
from mamba_recall.scan import fused_available, selective_scan_chunked, selective_scan_fused
from mamba_recall.scan.timing import (
    AGREEMENT_TOL,
    DEFAULT_SIZES,
    SCALING_LENGTHS,
    SEED,
    BenchSize,
    make_inputs,
    run_benchmark,
    run_memory_scaling,
    to_records,
)

#: The command this script records in its bundle (relative to the repository root, where ``make`` runs it).
COMMAND = "python benchmarks/scan.py"

QUICK_SIZES = (BenchSize("quick", batch=2, channels=8, N=4, L=64),)
# The GPU size of the mamba-ssm comparison (``--large``): batch 16, 1536 channels (a 768-wide model, expand 2), N = 16,
# L = 2048. Too large for the sequential reference on a CPU; on a GPU every backend runs it in seconds.
LARGE_SIZE = BenchSize("large", batch=16, channels=1536, N=16, L=2048)
SCALING_WIDTH = dict(batch=4, channels=64, N=16)
QUICK_SCALING_LENGTHS = (64, 128, 256, 512)
QUICK_SCALING_WIDTH = dict(batch=1, channels=8, N=4)


# ----------------------------------------------------------------------------- the exp-and-FMA bound

# Per element (b, d, t, n) of the fused kernels (scan/_fused_kernels.py): 2 exponentials (the forward
# pass, and the backward pass recomputing Ā_t) and 15 multiplies / multiply-adds (forward: Δa, Āh + ΔuB,
# ⟨C, h⟩ → 3 + 1 folded into the FMA; backward recomputation: 3; state gradient: 2; gradients: 7).
FUSED_EXPS_PER_ELEMENT = 2
FUSED_FMAS_PER_ELEMENT = 15


def measure_exp_fma_rates(n: int = 4096, repeats: int = 2000) -> dict:
    """Single-core rates on this machine (per second of the thread's CPU time), float32, data in L1 cache:
    ``exp``: the fused kernels' vectorised exp (y_i = exp(x_i)); ``fma``: y_i = a_i · y_i + b_i.
    Each loop is the best case for its operation (no dependency chain, all SIMD lanes busy)."""
    import numba
    import numpy as np

    from mamba_recall.scan.fused import kernel_exp_and_fastmath

    kernel_exp, fastmath = kernel_exp_and_fastmath()

    @numba.njit(fastmath=fastmath)
    def exp_loop(x, y, reps):
        for _ in range(reps):
            for i in range(x.shape[0]):
                y[i] = kernel_exp(x[i])
            x[0] = y[1] * np.float32(-1e-3)  # keep the loop from being hoisted
        return y

    @numba.njit(fastmath=fastmath)
    def fma_loop(a, b, y, reps):
        for _ in range(reps):
            for i in range(y.shape[0]):
                y[i] = a[i] * y[i] + b[i]
        return y

    rng = np.random.default_rng(0)
    x = -rng.random(n, dtype=np.float32) * 10
    a = rng.random(n, dtype=np.float32) * np.float32(0.5)
    b = rng.random(n, dtype=np.float32)
    y = np.zeros(n, dtype=np.float32)
    threads = numba.get_num_threads()
    exp_loop(x, y, 1), fma_loop(a, b, y, 1)  # compile
    rates = {}
    for name, call in (("exp", lambda: exp_loop(x, y, repeats)), ("fma", lambda: fma_loop(a, b, y, repeats))):
        best = math.inf
        for _ in range(5):  # CPU time of this thread: a busy machine slows the wall clock, not the core
            t0 = time.thread_time()
            call()
            best = min(best, time.thread_time() - t0)
        rates[name] = n * repeats / best
    numba.set_num_threads(threads)
    return rates


def estimate_exp_fma_bound(sizes, rates: dict, cores: int) -> pd.DataFrame:
    """Lower bound of the fused forward + backward at each size: E = b·d·L·N elements,
    seconds = E · (2 / exp_rate + 15 / fma_rate) / cores (see FUSED_*_PER_ELEMENT)."""
    rows = []
    for size in sizes:
        E = size.batch * size.channels * size.L * size.N
        exp_s = E * FUSED_EXPS_PER_ELEMENT / rates["exp"] / cores
        fma_s = E * FUSED_FMAS_PER_ELEMENT / rates["fma"] / cores
        rows.append(
            dict(
                size=size.name,
                elements=E,
                exps=E * FUSED_EXPS_PER_ELEMENT,
                fmas=E * FUSED_FMAS_PER_ELEMENT,
                exp_rate_per_core=rates["exp"],
                fma_rate_per_core=rates["fma"],
                cores=cores,
                exp_seconds=exp_s,
                fma_seconds=fma_s,
                bound_seconds=exp_s + fma_s,
            )
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- fused vs chunked by shape

CROSSOVER_WIDTHS = ((1, 1, 1), (1, 4, 4), (2, 16, 2), (8, 32, 8), (32, 64, 16), (16, 256, 16), (4, 512, 16))
CROSSOVER_LENGTHS = (1, 4, 16, 64, 256, 1024, 4096)
CROSSOVER_MAX_ELEMENTS = 2**24  # b·d·L·N above this is left out (seconds per point)


def _time_min(fn, budget=0.5, min_runs=5, max_runs=100):
    """Min wall time of ``fn()`` over runs that fit in ``budget`` seconds (at least ``min_runs``)."""
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - start < budget and len(times) < max_runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run_crossover(
    widths=CROSSOVER_WIDTHS, lengths=CROSSOVER_LENGTHS, max_elements=CROSSOVER_MAX_ELEMENTS, verbose=True
) -> pd.DataFrame:
    """Forward + backward (and forward only, no grad) seconds of fused and chunked over (batch, channels, N) × L;
    ``chunked/fused`` > 1 means fused is faster. The measurement behind ``auto``'s CPU rule."""
    rows = []
    for b, d, n in widths:
        for L in lengths:
            if b * d * n * L > max_elements:
                continue
            size = BenchSize(f"b{b} d{d} N{n} L{L}", b, d, n, L)
            inputs = make_inputs(size)
            row = dict(batch=b, channels=d, N=n, L=L)
            for name, scan in (("chunked", selective_scan_chunked), ("fused", selective_scan_fused)):

                def fwd_bwd():
                    leaves = [t.detach().requires_grad_(True) for t in inputs]
                    scan(*leaves, delta_softplus=True).sum().backward()

                def fwd():
                    with torch.no_grad():
                        scan(*inputs, delta_softplus=True)

                row[f"{name}_fwd_bwd_s"] = _time_min(fwd_bwd)
                row[f"{name}_fwd_s"] = _time_min(fwd)
            row["chunked/fused fwd+bwd"] = row["chunked_fwd_bwd_s"] / row["fused_fwd_bwd_s"]
            row["chunked/fused fwd"] = row["chunked_fwd_s"] / row["fused_fwd_s"]
            if verbose:
                print(
                    f"  crossover {size.name}: chunked/fused = {row['chunked/fused fwd+bwd']:.2f} (fwd+bwd), "
                    f"{row['chunked/fused fwd']:.2f} (fwd)",
                    flush=True,
                )
            rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- training throughput

TRAINING_MODELS = {
    "ch4 S-model s_small": "the Chapter 4 S-model (Mamba-1 LM, d_model 64, 2 layers, N 16; recall batches of 32)",
    "ch3 s6 KEEP n-TH": "the Chapter 3 S6 model of the KEEP n-TH task (d 32, N 8, T 20; batches of 64)",
}


def _training_case(name: str, backend: str):
    """(model, make_batch) of a training-throughput case, as the chapters build them (``ci`` preset)."""
    if name == "ch4 S-model s_small":
        from mamba_recall.chapters.ch4_primacy_recency.runners.train import build_model, make_batch_fn
        from mamba_recall.presets import experiment
        from mamba_recall.tasks.serial_recall import RecallVocab

        cfg = experiment("ch4_train_s_small", "ci")
        vocab = RecallVocab(**cfg["vocab"])
        torch.manual_seed(cfg["seed"])
        model = build_model(cfg["model"], vocab, backend=backend)
        batch_fn = make_batch_fn(cfg, vocab)
        late = cfg["steps"] - 1000  # past the curriculum ramp: L ~ U{2 .. 16} items
        return model, lambda s: batch_fn(late + s)
    if name == "ch3 s6 KEEP n-TH":
        from mamba_recall.chapters.ch3_selectivity.training.selectivity import build_model
        from mamba_recall.presets import experiment
        from mamba_recall.tasks.keep_nth import keep_nth

        cfg = experiment("ch3_keep_nth", "ci")
        (d, N), T = cfg["dN"][0], cfg["Ts"][0]
        torch.manual_seed(0)
        model = build_model("s6", V=cfg["V"], d=d, N=N, T=T, backend=backend)
        return model, lambda s: keep_nth(cfg["batch"], T, cfg["V"], cfg["nth"], seed=seeds.CH3_TRAIN_BASE + s)
    raise ValueError(f"unknown training case {name!r}; choose one of {', '.join(TRAINING_MODELS)}.")


def _proc_status_MB(field: str) -> float | None:
    """VmRSS (resident now) or VmHWM (its high-water mark) of this process in MB, from /proc (Linux);
    unlike ru_maxrss, VmHWM starts afresh at exec, so a child process reports its own peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def training_worker(name: str, backend: str, steps: int, warmup: int = 5) -> dict:
    """Train ``name`` for ``warmup`` + ``steps`` AdamW steps on one thread; return steps/s and memory:
    ``peak_rss_MB`` (VmHWM, the process's peak resident memory) and ``peak_over_start_MB`` (that peak
    minus the resident memory after building the model, i.e. what training added).
    Run it in a fresh process (``--train-worker``) so that the peak is this run's own."""
    from mamba_recall.train import masked_cross_entropy

    torch.set_num_threads(1)
    model, make_batch = _training_case(name, backend)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(s):
        inputs, labels = make_batch(s)
        loss = masked_cross_entropy(model(torch.as_tensor(inputs)), torch.as_tensor(labels))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    rss_start = _proc_status_MB("VmRSS")
    for s in range(warmup):
        step(s)
    t0 = time.perf_counter()
    for s in range(warmup, warmup + steps):
        step(s)
    seconds = time.perf_counter() - t0
    peak = _proc_status_MB("VmHWM")
    return dict(
        model=name,
        backend=backend,
        steps=steps,
        seconds=seconds,
        steps_per_s=steps / seconds,
        peak_rss_MB=peak,
        peak_over_start_MB=None if peak is None or rss_start is None else peak - rss_start,
    )


def run_training_throughput(
    models=tuple(TRAINING_MODELS), backends=("chunked", "fused"), steps=60, verbose=True
) -> pd.DataFrame:
    """:func:`training_worker` for each (model, backend), each in a fresh Python process."""
    import subprocess

    rows = []
    for name in models:
        for backend in backends:
            if verbose:
                print(f"  training {name} with {backend} ({steps} steps) ...", flush=True)
            proc = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--train-worker", name, backend, str(steps)],
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"training worker {name}/{backend} failed:\n{proc.stderr[-2000:]}")
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    df = pd.DataFrame(rows)
    base = df[df["backend"] == "chunked"].set_index("model")["steps_per_s"]
    df["speedup_vs_chunked"] = [r.steps_per_s / base.get(r.model, math.nan) for r in df.itertuples()]
    return df


# ----------------------------------------------------------------------------- reporting


def format_table(df: pd.DataFrame) -> str:
    cols = [
        c
        for c in (
            "size",
            "backend",
            "seconds",
            "cpu_seconds",
            "runs",
            "ratio_vs_chunked",
            "max_abs_diff",
            "rel_diff",
            "agrees",
            "grad_rel_diff",
            "saved_MB",
            "peak_cuda_MB",
        )
        if c in df
    ]
    if "peak_cuda_MB" in cols and df["peak_cuda_MB"].isna().all():
        cols.remove("peak_cuda_MB")
    fmt = {
        "seconds": "{:.4f}".format,
        "cpu_seconds": "{:.4f}".format,
        "ratio_vs_chunked": "{:.2f}".format,
        "max_abs_diff": "{:.2e}".format,
        "rel_diff": "{:.2e}".format,
        "grad_rel_diff": "{:.2e}".format,
        "saved_MB": "{:.3g}".format,
        "peak_cuda_MB": "{:.1f}".format,
    }
    return df[cols].to_string(index=False, formatters={k: v for k, v in fmt.items() if k in cols})


def format_scaling(df: pd.DataFrame) -> str:
    cols = ["L", "seconds", "saved_MB", "bytes_per_token", "L_ratio_to_first", "saved_MB_ratio_to_first"]
    if df["peak_cuda_MB"].notna().any():
        cols.append("peak_cuda_MB")
    fmt = {
        "seconds": "{:.4f}".format,
        "saved_MB": "{:.3g}".format,
        "bytes_per_token": "{:.0f}".format,
        "L_ratio_to_first": "{:.1f}".format,
        "saved_MB_ratio_to_first": "{:.2f}".format,
        "peak_cuda_MB": "{:.1f}".format,
    }
    return df[cols].to_string(index=False, formatters={k: v for k, v in fmt.items() if k in cols})


def format_crossover(df: pd.DataFrame) -> str:
    cols = [
        "batch",
        "channels",
        "N",
        "L",
        "chunked_fwd_bwd_s",
        "fused_fwd_bwd_s",
        "chunked/fused fwd+bwd",
        "chunked/fused fwd",
    ]
    fmt = {c: "{:.5f}".format for c in cols if c.endswith("_s")}
    fmt.update({c: "{:.2f}".format for c in cols if "/" in c})
    return df[cols].to_string(index=False, formatters=fmt)


def format_training(df: pd.DataFrame) -> str:
    cols = ["model", "backend", "steps", "steps_per_s", "speedup_vs_chunked", "peak_rss_MB", "peak_over_start_MB"]
    fmt = {
        "steps_per_s": "{:.2f}".format,
        "speedup_vs_chunked": "{:.2f}".format,
        "peak_rss_MB": "{:.0f}".format,
        "peak_over_start_MB": "{:.1f}".format,
    }
    return df[cols].to_string(index=False, formatters=fmt)


def _load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # not on every platform
        return None


def _numba_threads():
    try:
        import numba
    except ImportError:
        return None
    return numba.config.NUMBA_NUM_THREADS


def ratio_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per size: seconds of each other backend divided by chunked's."""
    rows = []
    for size, part in df.groupby("size", sort=False):
        s = part.set_index("backend")["seconds"]
        row = {
            "size": size,
            **{f"{o}/chunked": s[o] / s["chunked"] for o in ("reference", "mambapy", "fused", "mamba_ssm") if o in s},
        }
        if "fused" in s:  # speed-ups of fused over the others
            row.update({f"{o}/fused": s[o] / s["fused"] for o in ("reference", "mambapy", "chunked") if o in s})
        rows.append(row)
    return pd.DataFrame(rows)


def save_benchmark_bundle(
    out: Path, df: pd.DataFrame, scaling, config: dict, wall: float, command: str, extra_tables: dict | None = None
) -> Path:
    """Write the run as a result bundle (``results.save_bundle``): timings, ratios, memory scaling,
    and ``extra_tables`` (bound, crossover, training, memory_scaling_fused)."""
    tables = {"timings": df, "ratios": ratio_table(df)}
    if scaling is not None:
        tables["memory_scaling"] = scaling
    tables.update({k: v for k, v in (extra_tables or {}).items() if v is not None})
    try:
        from importlib.metadata import version

        config = {**config, "mambapy_version": version("mambapy")}
    except Exception:  # the bench extra is optional
        pass
    ratios = tables["ratios"].set_index("size")
    acceptance = to_records(ratios.iloc[:1])[0] if len(ratios) else {}
    return save_bundle(
        Path(out).stem,
        {
            "acceptance": {"size": ratios.index[0] if len(ratios) else None, **acceptance},
            "notes": list(df.attrs.get("notes", [])),
        },
        config,
        command=command,
        device=config["device"],
        wall_seconds=wall,
        tables=tables,
        directory=Path(out).parent,
    )


def ratio_lines(df: pd.DataFrame) -> list[str]:
    lines = []
    for size, part in df.groupby("size", sort=False):
        s = part.set_index("backend")["seconds"]
        bits = [
            f"{other}/chunked = {s[other] / s['chunked']:.2f}x"
            for other in ("reference", "mambapy", "fused", "mamba_ssm")
            if other in s
        ]
        lines.append(f"{size}: " + (", ".join(bits) if bits else "chunked only"))
        if "fused" in s:
            lines.append(
                f"{size}: fused is "
                + ", ".join(
                    f"{s[o] / s['fused']:.2f}x faster than {o}" for o in ("reference", "mambapy", "chunked") if o in s
                )
            )
    return lines


def main(argv=None) -> int:
    """``python benchmarks/scan.py [...]``; returns an exit code. (The Chapter 2 training-throughput comparison,
    one ensemble against separate models, is its own script: ``python benchmarks/ch2_ensemble.py``.)"""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog=COMMAND.removeprefix("python "),
        description="Time the selective-scan backends (forward + backward).",
    )
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a CI smoke run (seconds)")
    parser.add_argument("--large", action="store_true", help="add the large size (16 × 1536 × 16 × 2048; for a GPU)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON to this path")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per backend (default 3, quick 1)")
    parser.add_argument("--reference-repeats", type=int, default=1, help="timed runs of the slow reference")
    parser.add_argument("--no-reference", action="store_true", help="leave out the sequential reference")
    parser.add_argument("--no-mambapy", action="store_true", help="leave out the mambapy comparison column")
    parser.add_argument("--no-scaling", action="store_true", help="skip the memory-scaling table")
    parser.add_argument("--no-bound", action="store_true", help="skip the exp-and-FMA bound estimate")
    parser.add_argument("--no-crossover", action="store_true", help="skip the fused-vs-chunked shape grid")
    parser.add_argument("--no-training", action="store_true", help="skip the training-throughput runs")
    parser.add_argument("--training-steps", type=int, default=None, help="timed steps per training run (default 60)")
    parser.add_argument("--train-worker", nargs=3, metavar=("MODEL", "BACKEND", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.train_worker is not None:  # one training-throughput run in this fresh process
        name, backend, steps = args.train_worker
        print(json.dumps(training_worker(name, backend, int(steps))))
        return 0

    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda was asked for but no CUDA device is available.", file=sys.stderr)
        return 2
    sizes = (QUICK_SIZES if args.quick else DEFAULT_SIZES) + ((LARGE_SIZE,) if args.large else ())
    repeats = args.repeats or (1 if args.quick else 3)
    lengths, width = (QUICK_SCALING_LENGTHS, QUICK_SCALING_WIDTH) if args.quick else (SCALING_LENGTHS, SCALING_WIDTH)
    config = dict(
        device=args.device,
        quick=args.quick,
        sizes=[asdict(s) for s in sizes],
        repeats=repeats,
        reference_repeats=args.reference_repeats,
        include_reference=not args.no_reference,
        include_mambapy=not args.no_mambapy,
        dtype="float32",
        seed=SEED,
        delta_softplus=True,
        step="out = scan(u, delta, A, B, C, delta_softplus=True); out.sum().backward()",
        timing="min over runs after one warm-up run (reference: warm-up on a 16-token slice)",
        memory_metric="saved_MB: bytes saved for backward (distinct storages, saved_tensors_hooks); "
        "peak_cuda_MB: torch.cuda.max_memory_allocated over one step minus the inputs",
        scaling=dict(lengths=list(lengths), **width),
        torch_threads=torch.get_num_threads(),
        numba_threads=_numba_threads(),
    )
    fused_here = args.device == "cpu" and fused_available()
    extra: dict = {}
    load_before = _load_average()

    t0 = time.perf_counter()
    print(f"scan benchmark on {device_description(args.device)} (torch {torch.__version__})")
    df = run_benchmark(
        args.device,
        sizes,
        repeats,
        not args.no_reference,
        not args.no_mambapy,
        reference_repeats=args.reference_repeats,
    )
    print()
    print("forward + backward, float32, seconds = min over runs; diffs are against chunked")
    print(format_table(df))
    print()
    for line in ratio_lines(df):
        print(line)
    bad = df[~df["agrees"]]
    if len(bad):
        print(
            f"WARNING: outputs differ from chunked by more than {AGREEMENT_TOL:g} (relative): "
            + ", ".join(f"{r.backend}@{r.size} ({r.rel_diff:.2e})" for r in bad.itertuples())
        )
    scaling = None
    if not args.no_scaling:
        print()
        scaling = run_memory_scaling(args.device, lengths, repeats=repeats, **width)
        print(
            f"\nmemory scaling of chunked (batch {width['batch']}, channels {width['channels']}, N {width['N']}); "
            "saved_MB = bytes saved for backward, bytes_per_token = saved bytes / (batch · L)"
        )
        print(format_scaling(scaling))
        if fused_here:
            extra["memory_scaling_fused"] = run_memory_scaling(
                args.device, lengths, repeats=repeats, backend="fused", verbose=False, **width
            )
            print("\nthe same for fused (it saves only its inputs: no state, no discretised (b, d, L, N) tensor)")
            print(format_scaling(extra["memory_scaling_fused"]))
    if fused_here and not args.no_bound:
        cores = torch.get_num_threads()
        rates = measure_exp_fma_rates()
        bound = estimate_exp_fma_bound(sizes, rates, cores)
        fused = df[df["backend"] == "fused"].set_index("size")
        bound["fused_seconds"] = [fused["seconds"].get(r.size, math.nan) for r in bound.itertuples()]
        bound["fused/bound"] = bound["fused_seconds"] / bound["bound_seconds"]
        # CPU time spread over the cores: what the wall time would be with the cores to itself
        bound["fused_cpu_seconds_per_core"] = [
            fused["cpu_seconds"].get(r.size, math.nan) / cores for r in bound.itertuples()
        ]
        bound["fused_cpu_per_core/bound"] = bound["fused_cpu_seconds_per_core"] / bound["bound_seconds"]
        extra["bound"] = bound
        print(
            f"\nexp-and-FMA bound of the fused forward + backward: E = b·d·L·N elements, each "
            f"{FUSED_EXPS_PER_ELEMENT} exp + {FUSED_FMAS_PER_ELEMENT} multiply(-add)s (the fused kernels' op "
            f"count); rates measured on one core here, float32, L1-resident, all SIMD lanes busy: "
            f"exp {rates['exp'] / 1e9:.2f} G/s, FMA {rates['fma'] / 1e9:.2f} G/s; {cores} cores"
        )
        for r in bound.itertuples():
            print(
                f"  {r.size}: bound = {r.elements:,} × ({FUSED_EXPS_PER_ELEMENT}/{r.exp_rate_per_core / 1e9:.2f}G + "
                f"{FUSED_FMAS_PER_ELEMENT}/{r.fma_rate_per_core / 1e9:.2f}G) / {cores} = {r.bound_seconds:.4f} s; "
                f"fused {r.fused_seconds:.4f} s wall = {r.fused_seconds / r.bound_seconds:.2f}x the bound, "
                f"CPU time / {cores} cores {r.fused_cpu_seconds_per_core:.4f} s = "
                f"{r.fused_cpu_seconds_per_core / r.bound_seconds:.2f}x the bound"
            )
    if fused_here and not args.no_crossover:
        print("\nfused vs chunked by shape (chunked/fused > 1: fused is faster)")
        widths, lens = ((QUICK_SIZES[0].batch, QUICK_SIZES[0].channels, QUICK_SIZES[0].N),), (1, 16, 64)
        cross = run_crossover(widths, lens, verbose=False) if args.quick else run_crossover(verbose=False)
        extra["crossover"] = cross
        print(format_crossover(cross))
    if fused_here and not args.no_training:
        print("\ntraining throughput, one thread, model-steps per second (fresh process per run)")
        training = run_training_throughput(steps=args.training_steps or (3 if args.quick else 60))
        extra["training"] = training
        print(format_training(training))
    wall = time.perf_counter() - t0
    config["load_average_1_5_15_min"] = dict(before=load_before, after=_load_average())  # a shared machine shows here
    print(
        f"\ntotal wall time {wall:.1f} s; load average (1, 5, 15 min) before {load_before}, after "
        f"{config['load_average_1_5_15_min']['after']} on {os.cpu_count()} CPUs"
    )

    if args.out is not None:
        path = save_benchmark_bundle(
            args.out,
            df,
            scaling,
            config,
            wall,
            " ".join([COMMAND, *argv]),
            extra_tables=extra,
        )
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
