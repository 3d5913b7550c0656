"""The GPU check: mamba-ssm built offline for the local GPU and verified, and the GPU path measured, in one command.

    python tools/gpu_check.py OUT [--deadline-s 540] [--jobs 12] [--dry]

For a lent GPU machine (torch with CUDA, nvcc, ninja, no package index) with the two source archives carried in
``.gpu/src`` (``scripts/gpu_offline_build.sh fetch`` downloads them where PyPI is reachable). One run:

1. starts building ``causal-conv1d`` and ``mamba-ssm`` wheels in the background, on cores ``0 … jobs-1``
   (:func:`build_all`): the archives are unpacked, their ``setup.py`` patched to drop the hard-coded ``-gencode``
   list (nine architectures with CUDA 13; :func:`patch_gencode`) so that torch's ``TORCH_CUDA_ARCH_LIST`` (the local
   card's, 9.0 on an H100/H200) is the only target, and built with ``MAMBA_FORCE_BUILD=TRUE`` /
   ``CAUSAL_CONV1D_FORCE_BUILD=TRUE`` (the names both ``setup.py`` read) so that nothing is downloaded;
2. meanwhile, on the other cores, runs what needs no build: the ``gpu`` tests (``chunked`` and ``reference`` on
   CUDA; the mamba-ssm ones skip) and Chapter 3's training throughput at the paper preset's sizes, one model at a
   time against one ensemble of 7 (``benchmarks/ch3_members.py``);
3. when the build is done, installs the wheels into a temporary target and runs, most valuable first: the ``gpu``
   tests again (now with mamba-ssm), mamba-ssm's own ``test_selective_scan`` grid against the reference
   (:func:`scan_parity`: three dtypes × six lengths × groups × D, z, delta_bias, delta_softplus, at mamba-ssm's
   tolerances), our Mamba block against ``mamba_ssm.Mamba`` from one state_dict (:func:`block_parity`), the
   Mamba-2 scan against ``mamba_chunk_scan_combined`` (:func:`ssd_parity`), the dispatch overhead and achieved
   bandwidth at the large size (:func:`dispatch_overhead`), ``benchmarks/scan.py --device cuda`` and the
   throughput again with the mamba-ssm scan;
4. writes everything to ``OUT/gpu_results.json`` as each stage finishes (what finished is kept when a later stage
   runs out of time: every stage has the run's deadline), the build's log to ``OUT/build.log``, the scan
   benchmark's bundle to ``OUT/scan_bench_cuda.json``, and the built wheels, as one tar split into pieces under
   16 MiB (``OUT/wheels.tar.NN``), so that a second run can skip the build (``--wheels DIR``).

``--dry`` runs every step on the CPU but the compilation and the CUDA calls: the archives are unpacked and patched,
the stages run on CPU tensors with ``chunked`` standing in for mamba-ssm, and the same files are written.
A script of the repository (tooling), not a module of the library; the tests import its comparisons.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = Path(os.environ.get("GPU_CHECK_WORK", "/tmp/gpu_check"))
PACKAGES = ("causal_conv1d", "mamba_ssm")
FORCE_BUILD = {"causal_conv1d": "CAUSAL_CONV1D_FORCE_BUILD", "mamba_ssm": "MAMBA_FORCE_BUILD"}
PIECE_BYTES = 15 * 2**20

# mamba-ssm's tests/ops/test_selective_scan.py: (rtol, atol) of outputs per input dtype; gradients scaled below.
MS_TOLS = {"float32": (6e-4, 2e-3), "float16": (3e-3, 5e-3), "bfloat16": (3e-2, 5e-2)}
MS_LENGTHS = (128, 256, 512, 1024, 2048, 4096)


# ------------------------------------------------------------------------------------------------ the build


_GENCODE_PAIR = re.compile(
    r'^(?P<indent>[ \t]*)cc_flag\.append\("-gencode"\)\n[ \t]*cc_flag\.append\("arch=compute_(?P<arch>\w+),code=\w+"\)$',
    re.MULTILINE,
)


def patch_gencode(setup_py: str) -> tuple[str, list[str]]:
    """``setup.py`` of mamba-ssm or causal-conv1d with its hard-coded ``-gencode`` pairs removed (each becomes
    ``pass``, so the ``if`` blocks around them stay valid); torch's ``TORCH_CUDA_ARCH_LIST`` is then the only target.
    Returns (text, the architectures dropped). Raises ``ValueError`` when the file's layout is not the one this
    patch knows (a later release): the build would otherwise compile for every architecture, an hour instead of
    minutes."""
    dropped = [m["arch"] for m in _GENCODE_PAIR.finditer(setup_py)]
    text = _GENCODE_PAIR.sub(
        lambda m: f"{m['indent']}pass  # -gencode compute_{m['arch']} dropped (gpu_check)", setup_py
    )
    if not dropped or "arch=compute_" in text:
        raise ValueError(
            "setup.py's -gencode list is not in the layout gpu_check patches (cc_flag.append pairs); read the "
            "release's setup.py and update tools/gpu_check.py:patch_gencode."
        )
    compile(text, "setup.py", "exec")
    return text, dropped


def unpack_and_patch(src: Path, work: Path) -> dict[str, Path]:
    """Unpack each package's source archive from ``src`` into ``work/src`` and patch its setup.py."""
    dirs = {}
    for pkg in PACKAGES:
        archives = sorted(src.glob(f"{pkg}-*.tar.gz"))
        if not archives:
            raise SystemExit(
                f"error: no {pkg} source archive in {src}; run `scripts/gpu_offline_build.sh fetch` where PyPI is "
                "reachable and carry .gpu with the working tree."
            )
        with tarfile.open(archives[-1]) as tar:
            top = tar.getnames()[0].split("/")[0]
            tar.extractall(work / "src", filter="data")
        d = work / "src" / top
        setup = d / "setup.py"
        text, dropped = patch_gencode(setup.read_text())
        setup.write_text(text)
        print(f"{archives[-1].name}: -gencode dropped for {', '.join(dropped)}", flush=True)
        dirs[pkg] = d
    return dirs


def build_all(work: Path, src: Path, jobs: int, arch: str, dry: bool) -> dict:
    """Build both wheels into ``work/wheels`` at once (causal-conv1d with a quarter of ``jobs``, mamba-ssm with the
    rest); returns ``{pkg: {"seconds", "rc"}}``. The ninja/nvcc output goes to stdout."""
    dirs = unpack_and_patch(src, work)
    (work / "wheels").mkdir(parents=True, exist_ok=True)
    split = {"causal_conv1d": max(1, jobs // 4), "mamba_ssm": max(1, jobs - jobs // 4)}
    procs, out = {}, {}
    for pkg in PACKAGES:
        env = dict(os.environ, TORCH_CUDA_ARCH_LIST=arch, MAX_JOBS=str(split[pkg]), **{FORCE_BUILD[pkg]: "TRUE"})
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # ninja, not distutils
        cmd = [sys.executable, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps", "--no-index"]
        cmd += ["-w", str(work / "wheels"), str(dirs[pkg])]
        if dry:
            cmd = [sys.executable, "-c", f"print('dry: would run', {' '.join(cmd)!r})"]
        procs[pkg] = (subprocess.Popen(cmd, env=env, cwd=dirs[pkg]), time.perf_counter())
    for pkg, (p, t0) in procs.items():
        rc = p.wait()
        out[pkg] = {"rc": rc, "seconds": round(time.perf_counter() - t0, 1), "max_jobs": split[pkg]}
        print(f"built {pkg}: rc {rc} in {out[pkg]['seconds']} s", flush=True)
    out["wheels"] = sorted(p.name for p in (work / "wheels").glob("*.whl"))
    return out


# ------------------------------------------------------------------------------------------------ the comparisons


def _dtype(name):
    import torch

    return getattr(torch, name)


def ms_case_inputs(L, itype, groups, has_D, has_z, has_delta_bias, device, seed=0):
    """The inputs of mamba-ssm's ``test_selective_scan`` (batch 2, dim 4, dstate 8; A = −0.5·U(0,1), Δ = 0.5·U(0,1),
    selective B and C in the input dtype, D and delta_bias in float32)."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    it, f32 = _dtype(itype), torch.float32
    b, d, n = 2, 4, 8
    bshape = (b, n, L) if groups == 1 else (b, groups, n, L)

    def mk(x, dtype):
        return x.to(dtype).to(device)

    kw = dict(
        u=mk(torch.randn(b, d, L, generator=g), it),
        delta=mk(0.5 * torch.rand(b, d, L, generator=g), it),
        A=mk(-0.5 * torch.rand(d, n, generator=g), f32),
        B=mk(torch.randn(*bshape, generator=g), it),
        C=mk(torch.randn(*bshape, generator=g), it),
    )
    if has_D:
        kw["D"] = mk(torch.randn(d, generator=g), f32)
    if has_z:
        kw["z"] = mk(torch.randn(b, d, L, generator=g), it)
    if has_delta_bias:
        kw["delta_bias"] = mk(0.5 * torch.rand(d, generator=g), f32)
    return kw


def grad_tols(name, itype, has_z):
    """mamba-ssm's test: u at 2×(rtol, atol), delta at (5 rtol, 10 atol), the weights A, D, delta_bias at
    rtolw = atolw = 1e-3 (raised to rtol, atol with z; A's atol ×5), selective B, C at (rtol, atol), z at the
    weights' tolerance."""
    rtol, atol = MS_TOLS[itype]
    rtolw, atolw = (max(1e-3, rtol), max(1e-3, atol)) if has_z else (1e-3, 1e-3)
    return {
        "out": (rtol, atol),
        "last_state": (rtol, atol),
        "u": (2 * rtol, 2 * atol),
        "delta": (5 * rtol, 10 * atol),
        "A": (rtolw, 5 * atolw),
        "B": (rtol, atol),
        "C": (rtol, atol),
        "D": (rtolw, atolw),
        "z": (rtolw, atolw),
        "delta_bias": (rtolw, atolw),
    }[name]


def _excess(x, ref, rtol, atol):
    """max |x − ref| and max |x − ref| / (atol + rtol·|ref|) (≤ 1: inside ``torch.allclose``'s tolerance)."""
    x, ref = x.detach().double(), ref.detach().double()
    diff = (x - ref).abs()
    return float(diff.max()), float((diff / (atol + rtol * ref.abs())).max())


def compare_scan_case(
    L, itype, groups, has_D, has_z, has_delta_bias, delta_softplus, *, device="cuda", backend="mamba_ssm"
):
    """One case of mamba-ssm's grid: ``backend`` (mamba-ssm's kernel) against our ``reference`` computed in float32
    from the same inputs (as mamba-ssm's ``selective_scan_ref`` does: it upcasts, and its output is cast back to the
    input dtype), the loss Σ out·g with one random g. Returns ``{tensor: [max |Δ|, ratio]}`` for the output, the last
    state and every gradient, ``worst`` (the largest ratio) and ``ok`` (every ratio ≤ 1)."""
    import torch

    from mamba_recall.scan import selective_scan

    base = ms_case_inputs(L, itype, groups, has_D, has_z, has_delta_bias, device)
    names = list(base)
    runs = {}
    for which in ("reference", backend):
        kw = {
            k: (v.float() if which == "reference" else v).detach().clone().requires_grad_(True) for k, v in base.items()
        }
        out, last = selective_scan(**kw, delta_softplus=delta_softplus, return_last_state=True, backend=which)
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(device)
        grads = torch.autograd.grad((out.float() * g).sum(), [kw[k] for k in names])
        runs[which] = {"out": out.to(base["u"].dtype), "last_state": last, **dict(zip(names, grads))}
    res = {}
    for name, ref in runs["reference"].items():
        got = runs[backend][name]
        if name in base:
            ref = ref.to(base[name].dtype)  # the reference's gradient in the leaf's dtype, as mamba-ssm compares
        res[name] = list(_excess(got, ref, *grad_tols(name, itype, has_z)))
    worst = max(v[1] for v in res.values())
    return {"errors": res, "worst": worst, "ok": worst <= 1.0}


def scan_cases(lengths=MS_LENGTHS):
    """mamba-ssm's grid, shortest and longest lengths first (so that a run cut short has both ends)."""
    order = [lengths[0], lengths[-1], *lengths[1:-1]]
    for L in order:
        for itype in MS_TOLS:
            for groups in (1, 2):
                for flags in range(16):
                    yield dict(
                        L=L,
                        itype=itype,
                        groups=groups,
                        has_D=bool(flags & 1),
                        has_z=bool(flags & 2),
                        has_delta_bias=bool(flags & 4),
                        delta_softplus=bool(flags & 8),
                    )


def scan_parity(deadline, device, backend, lengths=MS_LENGTHS):
    rows, skipped = [], 0
    for case in scan_cases(lengths):
        if time.monotonic() > deadline:
            skipped += 1
            continue
        r = compare_scan_case(**case, device=device, backend=backend)
        rows.append({**case, "worst": r["worst"], "ok": r["ok"], "errors": r["errors"]})
    maxima = {}
    for r in rows:
        per = maxima.setdefault(r["itype"], {})
        for name, (diff, ratio) in r["errors"].items():
            a, b = per.get(name, (0.0, 0.0))
            per[name] = (max(a, diff), max(b, ratio))
    failed = [
        {k: r[k] for k in ("L", "itype", "groups", "has_D", "has_z", "has_delta_bias", "delta_softplus", "worst")}
        for r in rows
        if not r["ok"]
    ]
    return {
        "cases": len(rows),
        "not_run_deadline": skipped,
        "passed": sum(r["ok"] for r in rows),
        "failed": failed,
        "max_abs_and_ratio_per_dtype": maxima,
        "rows": [{k: v for k, v in r.items() if k != "errors"} for r in rows],
    }


def block_parity(device, dry, seed=0, d_model=64, L=256, batch=2):
    """Our Mamba block (:class:`mamba_recall.models.mamba.Mamba`) against ``mamba_ssm.Mamba`` built with the same
    sizes, its state_dict loaded into ours: outputs and every parameter's gradient, with mamba-ssm's fast path (fused
    ``mamba_inner_fn``, causal-conv1d's kernel when importable) and its slow path, and ours on ``mamba_ssm``,
    ``chunked`` and ``reference``. ``ratio`` ≤ 1: within fp32 rtol 6e-4, atol 2e-3."""
    import torch

    from mamba_recall.models.mamba import Mamba as Ours

    torch.manual_seed(seed)
    sizes = dict(d_model=d_model, d_state=16, d_conv=4, expand=2)
    if dry:  # stand-in for mamba_ssm.Mamba: our block on the reference scan
        theirs = {"slow path": Ours(**sizes, backend="reference", device=device)}
    else:
        from mamba_ssm import Mamba as Theirs

        theirs = {
            "fast path": Theirs(**sizes, use_fast_path=True, device=device),
            "slow path": Theirs(**sizes, use_fast_path=False, device=device),
        }
        theirs["slow path"].load_state_dict(theirs["fast path"].state_dict())
    state = next(iter(theirs.values())).state_dict()
    x = torch.randn(batch, L, d_model, generator=torch.Generator().manual_seed(seed + 1)).to(device)
    g = torch.randn(batch, L, d_model, generator=torch.Generator().manual_seed(seed + 2)).to(device)

    def run(module):
        xi = x.clone().requires_grad_(True)
        y = module(xi)
        names = [n for n, _ in module.named_parameters()]
        grads = torch.autograd.grad((y * g).sum(), [xi, *(p for _, p in module.named_parameters())])
        return {"out": y.detach(), "x": grads[0], **dict(zip(names, grads[1:]))}

    ref = {k: run(m) for k, m in theirs.items()}
    rows = []
    backends = ("chunked", "reference") if dry else ("mamba_ssm", "chunked", "reference")
    for backend in backends:
        ours = Ours(**sizes, backend=backend, device=device)
        missing = ours.load_state_dict(state, strict=True)
        assert not missing.missing_keys and not missing.unexpected_keys
        got = run(ours)
        for path, r in ref.items():
            errs = {k: _excess(got[k], r[k], 6e-4, 2e-3) for k in r}
            worst = max(e[1] for e in errs.values())
            rows.append(
                {"ours": backend, "theirs": path, "worst": worst, "ok": worst <= 1.0,
                 "max_abs": max(e[0] for e in errs.values()), "worst_tensor": max(errs, key=lambda k: errs[k][1])}
            )  # fmt: skip
    try:
        import causal_conv1d  # noqa: F401

        conv = "causal-conv1d kernel"
    except ImportError:
        conv = "nn.Conv1d (causal-conv1d not importable)"
    return {
        "sizes": {**sizes, "L": L, "batch": batch},
        "their_conv": conv,
        "rows": rows,
        "ok": all(r["ok"] for r in rows),
    }


def ssd_parity(device, backend, seed=0):
    """The Mamba-2 scan: our :func:`mamba_recall.scan.ssd_scan` (``reference`` and ``chunked``) against ``backend``
    (``mamba_chunk_scan_combined``), with D, z, dt_bias, softplus, 2 groups, outputs and every gradient, fp32
    (rtol 6e-4, atol 2e-3)."""
    import torch

    from mamba_recall.scan import ssd_scan

    rows = []
    for L, chunk in ((256, 64), (1024, 256)):
        gen = torch.Generator().manual_seed(seed)
        b, h, p, gr, n = 2, 4, 16, 2, 32
        r = lambda *s: torch.randn(*s, generator=gen).to(device)  # noqa: E731
        base = dict(
            x=r(b, L, h, p), dt=r(b, L, h) * 0.5, A=-torch.rand(h, generator=gen).to(device) - 0.5,
            B=r(b, L, gr, n), C=r(b, L, gr, n), D=r(h), z=r(b, L, h, p), dt_bias=r(h) * 0.1,
        )  # fmt: skip
        g = r(b, L, h, p)
        runs = {}
        for which in ("reference", "chunked", backend):
            kw = {k: v.clone().requires_grad_(True) for k, v in base.items()}
            y = ssd_scan(**kw, dt_softplus=True, backend=which, chunk_size=chunk)
            grads = torch.autograd.grad((y * g).sum(), list(kw.values()))
            runs[which] = {"out": y.detach(), **dict(zip(kw, grads))}
        for ours in ("reference", "chunked"):
            errs = {k: _excess(runs[backend][k], runs[ours][k], 6e-4, 2e-3) for k in runs[ours]}
            worst = max(e[1] for e in errs.values())
            rows.append({"L": L, "chunk": chunk, "ours": ours, "worst": worst, "ok": worst <= 1.0,
                         "max_abs": max(e[0] for e in errs.values()), "worst_tensor": max(errs, key=lambda k: errs[k][1])})  # fmt: skip
    return {"rows": rows, "ok": all(r["ok"] for r in rows)}


def dispatch_overhead(device, dry, batch=16, channels=1536, N=16, L=2048, repeats=50):
    """Forward + backward at the large size through our dispatch (``selective_scan(..., backend="mamba_ssm")``)
    against ``selective_scan_fn`` called directly, CUDA events, median of ``repeats`` after warm-up; and the achieved
    bandwidth of the kernel against the card's peak (bytes = the inputs, read by the forward and again by the
    backward, plus the output, the output's gradient and the inputs' gradients; a lower bound on the traffic)."""
    import torch

    from mamba_recall.scan import selective_scan
    from mamba_recall.scan.agreement import random_scan_inputs

    if dry:
        batch, channels, L, repeats = 2, 16, 64, 3
    kw = random_scan_inputs(batch, channels, N, L, dtype=torch.float32, device=device)
    kw = {k: kw[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")}
    if dry:
        direct = lambda **k: selective_scan(**k, backend="reference")  # noqa: E731
    else:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn as direct
    ways = {
        "ours (backend='mamba_ssm')": lambda **k: selective_scan(**k, backend="chunked" if dry else "mamba_ssm"),
        "selective_scan_fn directly": direct,
    }
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in kw.items()}
    g = torch.randn(batch, channels, L, device=device)

    def step(fn):
        out = fn(**leaves, delta_softplus=True)
        out.backward(g)

    times = {}
    for name, fn in list(ways.items()) * 2:  # interleaved twice: each way's second pass is the one kept
        for _ in range(3):
            step(fn)
        ts = []
        for _ in range(repeats):
            if device == "cuda":
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                step(fn)
                e.record()
                torch.cuda.synchronize()
                ts.append(s.elapsed_time(e) / 1e3)
            else:
                t0 = time.perf_counter()
                step(fn)
                ts.append(time.perf_counter() - t0)
        times[name] = sorted(ts)[len(ts) // 2]
    in_bytes = sum(v.numel() * v.element_size() for v in kw.values())
    out_bytes = batch * channels * L * 4
    traffic = 2 * in_bytes + 2 * out_bytes + in_bytes
    peak = None
    if device == "cuda":
        name = torch.cuda.get_device_name()
        peak = 4.8e12 if "H200" in name else 3.35e12 if "H100" in name else None
    ours, direct_s = times["ours (backend='mamba_ssm')"], times["selective_scan_fn directly"]
    return {
        "size": dict(batch=batch, channels=channels, N=N, L=L),
        "seconds_median": times,
        "overhead": ours / direct_s - 1,
        "traffic_bytes_lower_bound": traffic,
        "achieved_GBps": traffic / direct_s / 1e9,
        "peak_GBps": None if peak is None else peak / 1e9,
        "fraction_of_peak": None if peak is None else traffic / direct_s / peak,
    }


def ensemble_throughput(device, dry, backend_note):
    """Chapter 3's MQAR training at the paper preset's sizes (T = 100, |V| = 512, batch 128, κ = 8, N = 16; d = 64
    and d = 256, mixer s6), 7 seeds one model at a time against one ensemble of 7 (``benchmarks/ch3_members.py``)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from ch3_members import ch3_throughput

    rows = []
    for d in (64,) if dry else (64, 256):
        sizes = dict(members=7, steps=2 if dry else 30, kappa=8, N=16, d=d, T=100, V=512, batch=128)
        if dry:
            sizes.update(members=2, T=24, V=32, kappa=4, N=2, batch=8, d=16)
        t = ch3_throughput(**sizes, device=device)
        a, b = t["model_steps_per_s"]
        rows.append(
            {**sizes, "scan": backend_note, "table": t.to_dict(orient="records"), "ensemble_over_one_at_a_time": b / a}
        )
    return rows


# ------------------------------------------------------------------------------------------------ the driver


class Results:
    """``OUT/gpu_results.json``, rewritten whole (temp file, then rename) after every stage."""

    def __init__(self, out: Path):
        self.path, self.data = out / "gpu_results.json", {"stages": {}}

    def stage(self, name, value, seconds):
        self.data["stages"][name] = {"seconds": round(seconds, 1), "result": value}
        self.save()

    def save(self):
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        tmp.replace(self.path)


def _stage_cmd(out, name, deadline, dry):
    cmd = [sys.executable, __file__, str(out), "--stage", name, "--deadline-at", str(deadline)]
    return cmd + (["--dry"] if dry else [])


def run_stage(name, out, deadline, dry, env, cpus) -> dict:
    """One stage in a child process on ``cpus`` (its own import of mamba_ssm, after the install), killed at the
    deadline; returns its result or why it has none."""
    left = deadline - time.time()
    if left < 5:
        return {"not_run": "deadline reached"}
    part = WORK / f"stage_{name}.json"
    part.unlink(missing_ok=True)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(_stage_cmd(out, name, deadline, dry), env=env, timeout=left, cwd=REPO, capture_output=True,
                           text=True, preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)  # fmt: skip
        rc, log = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as exc:
        rc, log = (
            "killed at the deadline",
            (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace"),
        )
    res = json.loads(part.read_text()) if part.exists() else {"no_result": f"exit {rc}"}
    print(log[-2500:], flush=True)
    print(f"[{time.strftime('%H:%M:%S')}] stage {name}: exit {rc}, {time.perf_counter() - t0:.0f} s", flush=True)
    return {"exit": rc, "log_tail": log[-4000:], **(res if isinstance(res, dict) else {"rows": res})}


def pytest_stage(dry, deadline):
    left = max(10, int(deadline - time.time()))
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "-rs", "-o", "addopts=",
           "tests/scan/test_scan.py", "tests/scan/test_scan_gpu.py"]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=left, cwd=REPO)
    tail = p.stdout.strip().splitlines()[-40:]
    print("\n".join(tail), flush=True)
    counts = {
        k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|deselected|error)", tail[-1] if tail else "")
    }
    return {"rc": p.returncode, "counts": counts, "tail": tail}


def one_stage(name, out, deadline, dry):
    """Run one named stage in this process and write its JSON (the child side of :func:`run_stage`)."""
    import torch

    device = "cpu" if dry else "cuda"
    stand_in = "chunked" if dry else "mamba_ssm"
    from mamba_recall.scan import mamba_ssm_available

    mono_deadline = time.monotonic() + (deadline - time.time())
    if name.startswith("pytest"):
        res = pytest_stage(dry, deadline)
    elif name == "parity_quick":
        res = scan_parity(mono_deadline, device, stand_in, lengths=(128, 4096) if not dry else (16, 64))
    elif name == "parity_rest":
        res = scan_parity(mono_deadline, device, stand_in, lengths=(256, 512, 1024, 2048) if not dry else (32,))
    elif name == "block":
        res = block_parity(device, dry)
    elif name == "ssd":
        res = ssd_parity(device, "chunked" if dry else "mamba_ssm")
    elif name == "dispatch":
        res = dispatch_overhead(device, dry)
    elif name.startswith("ensemble"):
        res = ensemble_throughput(
            device, dry, "mamba_ssm" if mamba_ssm_available() else "chunked" if not dry else "cpu"
        )
    elif name == "bench":
        shutil.rmtree(WORK / "bench", ignore_errors=True)
        (WORK / "bench").mkdir()
        cmd = [sys.executable, "benchmarks/scan.py", "--device", device, "--out", str(WORK / "bench" / "scan_bench_cuda.json"),
               "--no-mambapy", "--no-training", "--no-bound", "--no-crossover"] + (["--quick"] if dry else ["--large"])  # fmt: skip
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(10, deadline - time.time()), cwd=REPO)
        print(p.stdout[-6000:], p.stderr[-3000:], flush=True)
        with tarfile.open(out / "scan_bench_cuda.tar", "w") as tar:  # the bundle and its tables, one file back
            for f in sorted((WORK / "bench").iterdir()):
                tar.add(f, arcname=f.name)
        res = {"rc": p.returncode, "stdout_tail": p.stdout.strip().splitlines()[-30:]}
    elif name == "env":
        res = env_facts(dry)
    else:
        raise SystemExit(f"error: unknown stage {name!r}")
    if device == "cuda":
        res = {"result": res, "device": torch.cuda.get_device_name(), "torch": torch.__version__}
    (WORK / f"stage_{name}.json").write_text(json.dumps(res, default=str))


def env_facts(dry):
    import torch

    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()[-2000:]
        except Exception as exc:  # noqa: BLE001 - a fact that cannot be read is recorded as such
            return f"unavailable: {exc}"

    return {
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu (dry)",
        "nvidia_smi": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"),
        "nvcc": sh("nvcc --version | tail -2"),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "git_commit": sh(f"git -C {REPO} rev-parse HEAD"),
        "git_status": sh(f"git -C {REPO} status --short | head -20"),
        "dry": dry,
    }


def _trim(log: Path, keep=6 * 2**20):
    """Keep a build log under the size that comes back: its first MiB and its last ``keep`` bytes."""
    if log.exists() and log.stat().st_size > keep + 2**20:
        data = log.read_bytes()
        log.write_bytes(data[: 2**20] + b"\n[... cut by gpu_check ...]\n" + data[-keep:])


def save_wheels(wheels: Path, out: Path) -> list[str]:
    """The built wheels as one tar in pieces of under 16 MiB (``cat wheels.tar.* > wheels.tar`` joins them)."""
    files = sorted(wheels.glob("*.whl"))
    if not files:
        return []
    tar_path = WORK / "wheels.tar"
    with tarfile.open(tar_path, "w") as tar:
        for f in files:
            tar.add(f, arcname=f.name)
    data, names = tar_path.read_bytes(), []
    for i in range(0, len(data), PIECE_BYTES):
        name = f"wheels.tar.{i // PIECE_BYTES:02d}"
        (out / name).write_bytes(data[i : i + PIECE_BYTES])
        names.append(name)
    return names


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--dry", action="store_true", help="everything but the compilation and the CUDA calls, on the CPU")
    ap.add_argument("--deadline-s", type=float, default=540, help="seconds from start after which nothing new starts")
    ap.add_argument("--jobs", type=int, default=None, help="cores for the build (default: all but 3)")
    ap.add_argument("--arch", default="9.0", help="TORCH_CUDA_ARCH_LIST for the build (9.0: H100, H200)")
    ap.add_argument("--wheels", type=Path, default=None, help="wheels of an earlier run: skip the build")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--deadline-at", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    if args.stage:
        return one_stage(args.stage, args.out, args.deadline_at, args.dry)
    cpus = os.cpu_count() or 4
    jobs = args.jobs or max(1, cpus - 3)
    if args.build:
        res = build_all(WORK, REPO / ".gpu" / "src", jobs, args.arch, args.dry)
        (WORK / "build.json").write_text(json.dumps(res))
        return 0 if all(res[p]["rc"] == 0 for p in PACKAGES) else 1

    t_start = time.time()
    deadline = t_start + args.deadline_s
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    results = Results(out)
    results.data.update(started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), deadline_s=args.deadline_s)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    build_cpus, other_cpus = set(range(jobs)), set(range(jobs, cpus)) or {cpus - 1}

    def stage(name, cpus_=None, env_=env):
        t0 = time.perf_counter()
        results.stage(name, run_stage(name, out, deadline, args.dry, env_, cpus_), time.perf_counter() - t0)

    stage("env")
    build = None
    wheels = WORK / "wheels"
    if args.wheels:
        wheels = args.wheels
    else:
        log = open(out / "build.log", "w")  # noqa: SIM115 - open for the child's lifetime
        build = subprocess.Popen(
            [sys.executable, __file__, str(out), "--build", "--jobs", str(jobs), "--arch", args.arch]
            + (["--dry"] if args.dry else []),
            stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env,
            preexec_fn=lambda: os.sched_setaffinity(0, build_cpus),
        )  # fmt: skip
    t_build = time.perf_counter()
    stage("pytest_nobuild", other_cpus)
    stage("ensemble_chunked", other_cpus)
    if build is not None:
        try:
            rc = build.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            build.kill()
            rc = "killed at the deadline"
        info = json.loads((WORK / "build.json").read_text()) if (WORK / "build.json").exists() else {}
        results.stage(
            "build", {"rc": rc, **info, "wall_to_here": time.perf_counter() - t_build}, time.perf_counter() - t_build
        )
    whls = sorted(wheels.glob("*.whl"))
    site = WORK / "site"
    if whls and not args.dry:
        p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                            "--target", str(site), *map(str, whls)], capture_output=True, text=True)  # fmt: skip
        results.data["install"] = {"rc": p.returncode, "stderr": p.stderr[-2000:], "wheels": [w.name for w in whls]}
    env2 = dict(env, PYTHONPATH=os.pathsep.join([str(site), env["PYTHONPATH"]]))
    all_cpus = build_cpus | other_cpus
    _trim(out / "build.log")
    for name in (
        "pytest_built",
        "dispatch",
        "block",
        "ssd",
        "bench",
        "ensemble_mamba_ssm",
        "parity_quick",
        "parity_rest",
    ):
        stage(name, all_cpus, env2)
    if not args.wheels:
        results.data["wheel_pieces"] = save_wheels(wheels, out)
    results.data["wall_s"] = round(time.time() - t_start, 1)
    results.save()
    print(json.dumps({k: v for k, v in results.data.items() if k != "stages"}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
