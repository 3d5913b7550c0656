"""The GPU check: mamba-ssm built offline for the local GPU and verified, and the GPU path measured, in one command.

    python tools/gpu_check.py OUT [--deadline-s 540] [--jobs 12] [--dry]
    python tools/gpu_check.py OUT --wheels BACK [--stages a,b,...] [--parallel]   # a second run

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
3. when the build is done, installs the wheels into a temporary target and runs, cheapest and most telling first:
   the dispatch overhead and achieved bandwidth at the large size (:func:`dispatch_overhead`), our Mamba block
   against ``mamba_ssm.Mamba`` from one state_dict (:func:`block_parity`), the Mamba-2 scan against
   ``mamba_chunk_scan_combined`` (:func:`ssd_parity`; again with ``TRITON_F32_DEFAULT=ieee``, stage ``ssd_ieee``),
   ``benchmarks/scan.py --device cuda --large``, the throughput again with the mamba-ssm scan, the ``gpu`` tests
   (now with mamba-ssm), and mamba-ssm's own ``test_selective_scan`` grid against the reference
   (:func:`scan_parity`: three dtypes × six lengths × groups × D, z, delta_bias, delta_softplus, at mamba-ssm's
   tolerances; L = 128 and 4096 first);
4. writes everything to ``OUT/gpu_results.json`` as each stage finishes (what finished is kept when a later stage
   runs out of time: every stage has the run's deadline), the build's log to ``OUT/build.log``, the scan
   benchmark's bundle and tables to ``OUT/scan_bench_cuda.tar``, and the built wheels, as one tar split into pieces
   under 16 MiB (``OUT/wheels.tar.NN``), so that a second run can skip the build (``--wheels DIR``; the device tool
   brings back at most 8 files, so the last pieces of a large build may stay behind).

A second run: ``--wheels BACK`` (the folder of files an earlier run brought back) installs the complete wheels found
there (``*.whl``, or inside the ``wheels.tar.NN`` pieces: :func:`reusable_wheels` keeps a wheel only if its zip reads
whole) and builds only the packages without one, with every core when no stage runs beside the build. ``--stages``
picks the stages (``parity_L<n>``: one length of the grid), and ``--parallel`` runs those after the build at once: the
comparisons are not timings, and a stage that is one (``TIMED``) is refused with it.

``tools/gpu_collect.py OUT --tree COMMIT`` turns what came back into the committed bundles. A single stage runs
alone with ``--stage NAME --deadline-at EPOCH`` (its JSON goes to ``$GPU_CHECK_WORK/stage_NAME.json``), which is how
the first run's second call finished the stages the first call's deadline had cut.

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
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpu_parity import MS_LENGTHS, block_parity, dispatch_overhead, scan_parity, ssd_parity  # tools/, beside this file

REPO = Path(__file__).resolve().parents[1]
WORK = Path(os.environ.get("GPU_CHECK_WORK", "/tmp/gpu_check"))
PACKAGES = ("causal_conv1d", "mamba_ssm")
FORCE_BUILD = {"causal_conv1d": "CAUSAL_CONV1D_FORCE_BUILD", "mamba_ssm": "MAMBA_FORCE_BUILD"}
PIECE_BYTES = 15 * 2**20
# The stages, in the order a whole run takes them: before the build (on the cores it leaves), then after it.
PRE_STAGES = ("pytest_nobuild", "ensemble_chunked")
POST_STAGES = ("dispatch", "block", "ssd", "ssd_ieee", "bench", "ensemble_mamba_ssm", "pytest_built", "parity_quick")
PARITY_STAGES = ("parity_quick", "parity_rest", *(f"parity_L{n}" for n in MS_LENGTHS))  # parity_L<n>: one length
TIMED = frozenset({"dispatch", "bench", "ensemble_chunked", "ensemble_mamba_ssm"})  # they must have the GPU alone


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


def unpack_and_patch(src: Path, work: Path, packages=PACKAGES) -> dict[str, Path]:
    """Unpack each package's source archive from ``src`` into ``work/src`` and patch its setup.py."""
    dirs = {}
    for pkg in packages:
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


def build_all(work: Path, src: Path, jobs: int, arch: str, dry: bool, packages=PACKAGES) -> dict:
    """Build the wheels of ``packages`` into ``work/wheels`` at once (with both, causal-conv1d gets a quarter of
    ``jobs`` and mamba-ssm the rest; alone, a package gets them all); returns ``{pkg: {"seconds", "rc"}}``. The
    ninja/nvcc output goes to stdout."""
    dirs = unpack_and_patch(src, work, packages)
    (work / "wheels").mkdir(parents=True, exist_ok=True)
    split = {"causal_conv1d": max(1, jobs // 4), "mamba_ssm": max(1, jobs - jobs // 4)}
    if len(packages) == 1:
        split = {packages[0]: jobs}
    procs, out = {}, {}
    for pkg in packages:
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


def reusable_wheels(folder: Path, work: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """The complete wheels an earlier run brought back in ``folder``: ``*.whl`` files, and the wheels inside its
    ``wheels.tar.NN`` pieces (joined in order). The device tool brings back at most 8 files, so the last pieces of a
    large build can stay behind and the last wheel in the tar is then cut short: each wheel is kept only if its zip
    reads whole (every member's CRC). Returns ({package: wheel}, {what was not used: why})."""
    found, skipped = {}, {}
    candidates = sorted(folder.glob("*.whl"))
    pieces = sorted(folder.glob("wheels.tar.[0-9][0-9]"))
    if pieces:
        (work / "reuse").mkdir(parents=True, exist_ok=True)
        joined = work / "reuse" / "wheels.tar"
        with open(joined, "wb") as f:
            for piece in pieces:
                f.write(piece.read_bytes())
        with tarfile.open(joined, "r|") as tar:  # a stream: the members before a cut are read, the cut one is short
            try:
                for member in tar:
                    tar.extract(member, work / "reuse", filter="data")
            except (tarfile.ReadError, EOFError, OSError) as exc:
                skipped["wheels.tar"] = f"{len(pieces)} pieces end inside a member ({exc})"
        candidates += sorted((work / "reuse").glob("*.whl"))
    for whl in candidates:
        pkg = whl.name.split("-")[0]
        try:
            with zipfile.ZipFile(whl) as z:
                bad = z.testzip()
        except (zipfile.BadZipFile, OSError) as exc:
            skipped[whl.name] = f"not a whole wheel ({exc})"
            continue
        if bad is not None:
            skipped[whl.name] = f"member {bad} fails its CRC"
        elif pkg in PACKAGES:
            found[pkg] = whl
    return found, skipped


def parse_stages(text: str | None, parallel: bool) -> tuple[list[str], list[str]]:
    """``--stages a,b``: (the chosen stages before the build, after it), each list in the run's order; every stage
    when ``text`` is None. Refuses an unknown name, and a timed stage with ``--parallel``."""
    known = tuple(dict.fromkeys((*PRE_STAGES, *POST_STAGES, *PARITY_STAGES)))
    if text is None:
        chosen = [*PRE_STAGES, *POST_STAGES, "parity_rest"]
    else:
        chosen = [x.strip() for x in text.split(",") if x.strip()]
        unknown = [x for x in chosen if x not in known]
        if unknown:
            raise SystemExit(f"error: unknown stage(s) {', '.join(unknown)}; --stages takes {', '.join(known)}.")
    if parallel and TIMED & set(chosen):
        raise SystemExit(
            f"error: --parallel runs the stages after the build at once, which would share the GPU among the timed "
            f"stage(s) {', '.join(sorted(TIMED & set(chosen)))}; leave them out of --stages or drop --parallel."
        )
    order = {name: i for i, name in enumerate(known)}
    pre = sorted((x for x in chosen if x in PRE_STAGES), key=order.get)
    return pre, sorted(dict.fromkeys(x for x in chosen if x not in PRE_STAGES), key=order.get)


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
        self.path, self.data, self.lock = out / "gpu_results.json", {"stages": {}}, threading.Lock()

    def stage(self, name, value, seconds):
        with self.lock:  # stages may finish at once (--parallel)
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
    return {"exit": rc, "log_tail": log[-4000:], **res}


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
    elif name.startswith("parity_L"):  # one length of the grid (dry: an eighth of it, on the CPU)
        L = int(name[len("parity_L") :])
        res = scan_parity(mono_deadline, device, stand_in, lengths=(L if not dry else max(16, L // 8),))
    elif name == "block":
        res = block_parity(device, dry)
    elif name in ("ssd", "ssd_ieee"):  # ssd_ieee: TRITON_F32_DEFAULT=ieee (run_stage sets it), no TF32 in tl.dot
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
    where = torch.cuda.get_device_name() if device == "cuda" else "cpu (dry)"
    record = {"result": res, "device": where, "torch": torch.__version__}
    (WORK / f"stage_{name}.json").write_text(json.dumps(record, default=str))


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
    ap.add_argument(
        "--wheels", type=Path, default=None,
        help="what an earlier run brought back (*.whl, wheels.tar.NN): its complete wheels are installed, and only "
        "the packages without one are built",
    )  # fmt: skip
    ap.add_argument("--stages", help="comma-separated stages to run (default: all); parity_L<n> is one length")
    ap.add_argument(
        "--parallel", action="store_true",
        help="run the stages after the build at once (comparisons only: refused with a timed stage)",
    )  # fmt: skip
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--deadline-at", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--build", help=argparse.SUPPRESS)  # the packages to build, comma-separated
    args = ap.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    if args.stage:
        return one_stage(args.stage, args.out, args.deadline_at, args.dry)
    cpus = os.cpu_count() or 4
    if args.build:
        packages = tuple(args.build.split(","))
        res = build_all(WORK, REPO / ".gpu" / "src", args.jobs or max(1, cpus - 3), args.arch, args.dry, packages)
        (WORK / "build.json").write_text(json.dumps(res))
        return 0 if all(res[p]["rc"] == 0 for p in packages) else 1
    pre, post = parse_stages(args.stages, args.parallel)

    t_start = time.time()
    deadline = t_start + args.deadline_s
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    results = Results(out)
    results.data.update(started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), deadline_s=args.deadline_s)
    results.data["command"] = " ".join(["python tools/gpu_check.py", *(argv if argv is not None else sys.argv[1:])])
    results.data.update(stages_chosen={"before_build": pre, "after_build": post, "parallel": args.parallel})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    env["PYTHONUNBUFFERED"] = "1"
    reused, not_reused = reusable_wheels(args.wheels, WORK) if args.wheels else ({}, {})
    to_build = tuple(p for p in PACKAGES if p not in reused)
    results.data["reused_wheels"] = {"used": sorted(w.name for w in reused.values()), "not_used": not_reused}
    # the build's cores: all but 3 while stages run beside it; every core when none does
    jobs = args.jobs or (max(1, cpus - 3) if pre else cpus)
    build_cpus, other_cpus = set(range(jobs)), set(range(jobs, cpus)) or {cpus - 1}

    def stage(name, cpus_=None, env_=env):
        t0 = time.perf_counter()
        results.stage(name, run_stage(name, out, deadline, args.dry, env_, cpus_), time.perf_counter() - t0)

    stage("env")
    build = None
    wheels = WORK / "wheels"
    if to_build:
        log = open(out / "build.log", "w")  # noqa: SIM115 - open for the child's lifetime
        build = subprocess.Popen(
            [sys.executable, __file__, str(out), "--build", ",".join(to_build), "--jobs", str(jobs), "--arch", args.arch]
            + (["--dry"] if args.dry else []),
            stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env,
            preexec_fn=lambda: os.sched_setaffinity(0, build_cpus),
        )  # fmt: skip
    t_build = time.perf_counter()
    for name in pre:
        stage(name, other_cpus)
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
    whls = sorted(wheels.glob("*.whl")) + sorted(reused.values())
    site = WORK / "site"
    if whls and not args.dry:
        p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                            "--target", str(site), *map(str, whls)], capture_output=True, text=True)  # fmt: skip
        results.data["install"] = {"rc": p.returncode, "stderr": p.stderr[-2000:], "wheels": [w.name for w in whls]}
    env2 = dict(env, PYTHONPATH=os.pathsep.join([str(site), env["PYTHONPATH"]]))
    all_cpus = build_cpus | other_cpus
    _trim(out / "build.log")

    def env_of(name):
        e = dict(env2, TRITON_F32_DEFAULT="ieee") if name == "ssd_ieee" else dict(env2)
        if args.parallel:  # the stages share the cores: one thread each for torch's CPU work
            e["OMP_NUM_THREADS"] = "1"
        return e

    # cheapest and most telling first: each stage has the run's deadline, and the pytest pass repeats a corner of the
    # parity grid that the 2026-11-27 run found slow (134 s)
    if args.parallel:
        with ThreadPoolExecutor(max_workers=max(1, len(post))) as pool:
            list(pool.map(lambda name: stage(name, all_cpus, env_of(name)), post))
    else:
        for name in post:
            stage(name, all_cpus, env_of(name))
    if to_build:  # only what this run built: reused wheels are already where they came from
        results.data["wheel_pieces"] = save_wheels(wheels, out)
    results.data["wall_s"] = round(time.time() - t_start, 1)
    results.save()
    print(json.dumps({k: v for k, v in results.data.items() if k != "stages"}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
