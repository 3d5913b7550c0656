"""Turn what a GPU check run brought back into committed bundles.

    python tools/gpu_collect.py RUN_DIR [RUN_DIR ...] --tree COMMIT [--name gpu_check_h100] [--command TEXT]

``RUN_DIR``: a folder of files from ``tools/gpu_check.py OUT`` (``gpu_results.json``, ``scan_bench_cuda.tar``) or
of single stages (``stage_<name>.json``, ``scan_bench_cuda.tar``, from ``gpu_check.py OUT --stage NAME``); a later
folder's stage replaces an earlier one's where the earlier did not run it. Writes

* ``results/<name>.json``: the build, the ``gpu`` tests, mamba-ssm's scan grid against the reference (a row per
  case and the maxima per dtype and tensor), our Mamba block against ``mamba_ssm.Mamba``, the Mamba-2 scan against
  ``mamba_chunk_scan_combined``, the dispatch overhead and bandwidth, and Chapter 3's training throughput one model
  at a time against an ensemble; and
* ``results/scan_bench_cuda.json``: ``benchmarks/scan.py --device cuda --large``'s bundle, as the run wrote it, its
  tables unchanged.

Both are written here, so their ``provenance`` is this machine's (the collection); ``config.measured_on`` is the GPU
machine's (device, driver, CUDA, torch, Python) and ``config.tree`` the commit whose tree the GPU ran (``--tree``):
the device tool sends the working tree with the git metadata of the session's first checkout, so the run's own
``git`` fields name that older commit and call the tree dirty. Run this from a clean tree of that commit or a later
one that changes nothing the GPU ran.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pandas as pd

from gpu_parity import g_rounding_artifact, ssd_tf32_sensitivity  # tools/, beside this file

from mamba_recall.paths import REPO_ROOT
from mamba_recall.results import command_provenance, load_bundle, save_bundle

COMMAND = "python tools/gpu_check.py OUT --deadline-s 500 (on a GPU machine), then python tools/gpu_collect.py OUT"


def run_record(d: Path) -> dict | None:
    """A run folder's ``gpu_results.json``, or None where it has none (a run cut off before writing it)."""
    path = d / "gpu_results.json"
    return json.loads(path.read_text()) if path.exists() else None


def stages(run_dirs: list[Path]) -> dict:
    """Every stage's result, a later folder's replacing an earlier one's only where that did not run."""
    out: dict = {}
    for d in run_dirs:
        found = {}
        run = run_record(d)
        if run is not None:
            found.update({k: v["result"] for k, v in run["stages"].items()})
            if "install" in run:  # the wheels installed, built by this run or reused from an earlier one (--wheels)
                found["install"] = {"result": {**run["install"], "reused": run.get("reused_wheels")}}
        for f in sorted(d.glob("stage_*.json")):
            found[f.stem[len("stage_") :]] = json.loads(f.read_text())
        for name, res in found.items():
            if name not in out or "not_run" in out[name] or "no_result" in out[name]:
                out[name] = res
    return {k: (v.get("result", v) if isinstance(v, dict) else v) for k, v in out.items()}


def _rows(res) -> list:
    return res if isinstance(res, list) else res.get("rows", [])


def ran_commands(run_dirs: list[Path], name: str) -> str:
    """What made the bundle: the commands the runs recorded (``gpu_results.json``'s ``command``), then this
    collection; :data:`COMMAND` for runs that recorded none."""
    ran = [run.get("command") for run in map(run_record, run_dirs) if run is not None]
    if not ran or None in ran:
        return COMMAND
    dirs = " ".join(f"OUT{i + 1}" for i in range(len(run_dirs)))
    return "; ".join(ran) + f" (on a GPU machine, OUT1 …); then python tools/gpu_collect.py {dirs} --name {name}"


def parity_stages(st: dict) -> list[str]:
    """The stages that ran mamba-ssm's scan grid (``parity_quick``, ``parity_rest``, ``parity_L<n>``), by length."""
    first = {"parity_quick": 128, "parity_rest": 256}
    ran = [k for k in st if k.startswith("parity") and isinstance(st[k], dict) and "cases" in st[k]]
    return sorted(ran, key=lambda k: (first.get(k) or int(k[len("parity_L") :]), k))


def tables(st: dict) -> dict[str, pd.DataFrame]:
    t = {}
    names = parity_stages(st)
    parity = [r for name in names for r in _rows(st[name])]
    if parity:
        t["parity"] = pd.DataFrame(parity)
        maxima = []
        for name in names:
            for itype, per in (st[name].get("max_abs_and_ratio_per_dtype") or {}).items():
                for tensor, (diff, ratio) in per.items():
                    maxima.append(dict(stage=name, itype=itype, tensor=tensor, max_abs=diff, max_ratio=ratio))
        t["parity_maxima"] = pd.DataFrame(maxima).groupby(["itype", "tensor"], as_index=False).max(numeric_only=True)
        old_g = [r for name in names if "output_grad" not in st[name] for r in _rows(st[name])]
        failed = pd.DataFrame(old_g)
        failed = failed[~failed["ok"]] if len(failed) else failed
        if len(failed):  # the first run's g in float32 (see gpu_parity.g_rounding_artifact), replayed on this CPU
            keys = ["L", "itype", "groups", "has_D", "has_z", "has_delta_bias", "delta_softplus"]
            replay = [g_rounding_artifact(**{k: r[k] for k in keys}) for r in failed[keys].to_dict(orient="records")]
            t["g_rounding_replay"] = failed[[*keys, "worst"]].assign(
                replay_ratio=[r[0] for r in replay], replay_tensor=[r[1] for r in replay]
            )
    if "block" in st and "rows" in st["block"]:
        t["block"] = pd.DataFrame(st["block"]["rows"])
    for name in ("ssd", "ssd_ieee"):
        if name in st and "rows" in st[name]:
            t[name] = pd.DataFrame([{k: v for k, v in r.items() if k != "errors"} for r in st[name]["rows"]])
    if "ssd" in t:  # how far TF32 operands alone move our own Mamba-2 scan, on this CPU
        t["ssd_tf32_sensitivity"] = pd.DataFrame(ssd_tf32_sensitivity())
    ens = []
    for name in ("ensemble_chunked", "ensemble_mamba_ssm"):
        for row in _rows(st.get(name, {})):
            for way in row["table"]:
                ens.append({**{k: row[k] for k in ("d", "kappa", "N", "T", "V", "batch", "steps", "scan")}, **way})
    if ens:
        t["ensemble"] = pd.DataFrame(ens)
    return t


def measured_on(st: dict, bench_config: dict | None) -> dict:
    env = st.get("env", {})
    built = st.get("install", {}).get("wheels") or st.get("build", {}).get("wheels", [])
    return {
        "device": env.get("device"),
        "nvidia_smi": env.get("nvidia_smi"),
        "cuda": env.get("torch_cuda"),
        "nvcc": env.get("nvcc"),
        "torch": env.get("torch"),
        "python": env.get("python"),
        "cpus": env.get("cpus"),
        "numpy": ((bench_config or {}).get("versions") or {}).get("numpy"),
        "wheels": built,
    }


@command_provenance()  # one git state for both bundles, taken before the first is written
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dirs", type=Path, nargs="+")
    ap.add_argument("--tree", required=True, help="the commit whose tree the GPU ran (committed before the run)")
    ap.add_argument("--name", default="gpu_check_h100")
    ap.add_argument(
        "--command",
        help="the commands the GPU ran, as recorded in the bundle (default: the ones the runs recorded, each followed "
        "by this collection; runs from before 2026-11-28 recorded none, and then COMMAND stands)",
    )
    args = ap.parse_args(argv)
    st = stages(args.run_dirs)
    if st.get("env", {}).get("dry") is not False:  # a dry run's numbers are CPU stand-ins; committed bundles stay
        raise SystemExit(
            f"error: {', '.join(map(str, args.run_dirs))} holds no GPU run (its env stage says dry or is missing); "
            "collect the OUT of `python tools/gpu_check.py OUT` run on a GPU machine."
        )
    tree = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", args.tree], capture_output=True, text=True)
    if tree.returncode:
        raise SystemExit(f"error: --tree {args.tree!r} is not a commit of this repository.")
    tree = tree.stdout.strip()
    bench_tar = next(
        (d / "scan_bench_cuda.tar" for d in reversed(args.run_dirs) if (d / "scan_bench_cuda.tar").exists()), None
    )
    bench = None
    if bench_tar is not None:
        tmp = Path(tempfile.mkdtemp())
        with tarfile.open(bench_tar) as tar:
            tar.extractall(tmp, filter="data")
        bench = load_bundle(tmp / "scan_bench_cuda.json")
    on = measured_on(st, bench.provenance if bench else None)
    note = (
        "the GPU ran the tree of commit `tree`; the device tool sends the working tree with the git metadata of the "
        "session's first checkout, so the run's own git fields name an older commit and a dirty tree"
    )
    if bench is not None:
        cfg = {**bench.config, "measured_on": on, "tree": tree, "tree_note": note, "bench_command": bench.command}
        save_bundle("scan_bench_cuda", bench.data, cfg, command=COMMAND, device="cpu", tables=bench.tables)
    pytest_ = {k: {kk: st[k].get(kk) for kk in ("rc", "counts")} for k in ("pytest_nobuild", "pytest_built") if k in st}
    failed = [
        ln for ln in (st.get("pytest_built", {}).get("tail") or []) if ln.startswith(("FAILED", "_ test", "E   "))
    ]
    data = {
        "build": {k: v for k, v in st.get("build", {}).items() if k != "wall_to_here"},
        "pytest": pytest_,
        "pytest_failure_lines": failed,
        "dispatch": st.get("dispatch"),
        "block_ok": st.get("block", {}).get("ok"),
        "block_their_conv": st.get("block", {}).get("their_conv"),
        "ssd_ok": st.get("ssd", {}).get("ok"),
        "ssd_ieee_ok": st.get("ssd_ieee", {}).get("ok"),
        "parity": {
            name: {k: st[name][k] for k in ("cases", "passed", "not_run_deadline", "output_grad") if k in st[name]}
            for name in parity_stages(st)
        },
        "not_run": sorted(k for k, v in st.items() if isinstance(v, dict) and ("not_run" in v or "no_result" in v)),
    }
    tbl = tables(st)
    if "g_rounding_replay" in tbl:
        r = tbl["g_rounding_replay"]
        close = (r["replay_ratio"] - r["worst"]).abs() <= 0.05 * r["worst"]
        data["g_rounding_replay"] = {
            "failed_cases": len(r),
            "replay_within_5_percent": int(close.sum()),
            "max_rel_gap": float(((r["replay_ratio"] - r["worst"]).abs() / r["worst"]).max()),
            "float32_cases_failed": int((r["itype"] == "float32").sum()),
        }
    if "ssd_tf32_sensitivity" in tbl:
        sens = tbl["ssd_tf32_sensitivity"]
        data["ssd_tf32_sensitivity"] = {
            "max_ratio": float(sens["ratio"].max()),
            "max_ratio_tensor": str(sens.loc[sens["ratio"].idxmax(), "tensor"]),
            "max_ratio_dt_bias": float(sens.loc[sens["tensor"] == "dt_bias", "ratio"].max()),
            "max_ratio_A": float(sens.loc[sens["tensor"] == "A", "ratio"].max()),
        }
    config = {"measured_on": on, "tree": tree, "tree_note": note, "tolerances": "mamba-ssm's test_selective_scan"}
    path = save_bundle(args.name, data, config, command=args.command or ran_commands(args.run_dirs, args.name),
                       device="cpu", tables=tbl)  # fmt: skip
    print(f"wrote {path} and results/scan_bench_cuda.json" if bench else f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
