"""The repository's benchmarks (``benchmarks/scan.py``, ``ch2_ensemble.py``, ``ch3_members.py``): scripts, not library code.
Their pieces are checked here without asserting any timing (a speed claim is a benchmark that prints figures, never
a timed test); the timing the library keeps, :mod:`mamba_recall.scan.timing`, is tested in ``tests/scan/``."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import ch2_ensemble  # benchmarks/ (on the path through this folder's conftest)
import pytest
import scan as scan_bench  # benchmarks/scan.py, not mamba_recall.scan
import torch

from mamba_recall import cli, manifest
from mamba_recall.paths import REPO_ROOT
from mamba_recall.results import load_bundle
from mamba_recall.scan.timing import BenchSize, run_benchmark
from mamba_recall.train import masked_cross_entropy


def test_the_benchmark_is_not_library_code(capsys):
    assert Path(scan_bench.__file__).resolve() == (REPO_ROOT / "benchmarks" / "scan.py").resolve()
    for name in ("mamba_recall.bench", "mamba_recall.bench_ch2"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(name)
    assert cli.main(["bench", "--device", "cpu"]) == 2  # the old subcommand names the script instead
    assert "python benchmarks/scan.py" in capsys.readouterr().err


def test_bench_bound_crossover_and_ratios():
    size = BenchSize("t", 2, 4, 2, 8)
    bound = scan_bench.estimate_exp_fma_bound([size], {"exp": 1e9, "fma": 1e10}, cores=2)
    E = 2 * 4 * 2 * 8
    expected = E * (scan_bench.FUSED_EXPS_PER_ELEMENT / 1e9 + scan_bench.FUSED_FMAS_PER_ELEMENT / 1e10) / 2
    assert abs(bound["bound_seconds"].iloc[0] - expected) <= 1e-15
    cross = scan_bench.run_crossover(widths=((1, 2, 2),), lengths=(1, 8), verbose=False)
    assert len(cross) == 2 and (cross["chunked/fused fwd+bwd"] > 0).all()
    df = run_benchmark("cpu", sizes=[size], repeats=1, include_reference=False, include_mambapy=False, verbose=False)
    assert set(df["backend"]) == {"chunked", "fused"} and df["agrees"].all()
    ratios = scan_bench.ratio_table(df)
    assert {"fused/chunked", "chunked/fused"} <= set(ratios.columns)


def test_bench_training_case_steps():
    """The training-throughput cases build and take a step with the fused backend (in this process)."""
    for name in scan_bench.TRAINING_MODELS:
        model, make_batch = scan_bench._training_case(name, "fused")
        inputs, labels = make_batch(0)
        loss = masked_cross_entropy(model(torch.as_tensor(inputs)), torch.as_tensor(labels))
        loss.backward()
        assert torch.isfinite(loss)


def test_a_training_worker_runs_as_the_script_in_a_fresh_process():
    df = scan_bench.run_training_throughput(models=("ch3 s6 KEEP n-TH",), backends=("chunked",), steps=1, verbose=False)
    assert list(df["backend"]) == ["chunked"] and (df["steps_per_s"] > 0).all()
    assert df["speedup_vs_chunked"].iloc[0] == 1.0


def test_the_bundle_records_the_script_command(tmp_path, capsys):
    out = tmp_path / "scan_bench_quick.json"
    argv = ["--quick", "--no-reference", "--no-mambapy", "--no-bound", "--no-crossover", "--no-training"]
    argv += ["--no-scaling", "--out", str(out)]
    assert scan_bench.main(argv) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    bundle = load_bundle(out)
    command = json.loads(out.read_text())["command"]
    assert command == "python benchmarks/scan.py " + " ".join(argv)
    assert manifest.parse_command(command)[0] == "bench"
    assert set(bundle.tables) == {"timings", "ratios"}
    assert set(bundle.tables["timings"]["backend"]) == {"chunked", "fused"}


def test_reproduce_runs_the_benchmark_script_from_the_repository(monkeypatch):
    """``make reproduce --only bench`` runs the script, as the committed benchmark bundle records it, from the
    repository."""
    recorded = "python benchmarks/scan.py --device cpu --repeats 5 --out results/scan_bench_cpu.json"
    entry = manifest.Entry("scan_bench_cpu", "bundle", (), recorded, "bench", None, None, None, None, True)
    monkeypatch.setattr(manifest, "load", lambda path=None: [entry])
    calls = []
    monkeypatch.setattr(cli._main.subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw.get("cwd"))))
    cli.reproduce(None, "auto", ["bench"])
    args = ["benchmarks/scan.py", "--device", "cpu", "--repeats", "5", "--out", "results/scan_bench_cpu.json"]
    assert calls == [([sys.executable, *args], REPO_ROOT)]


def test_ch2_ensemble_prints_both_ways(capsys):
    argv = ["--steps", "2", "--members", "2", "--processes", "1", "--V", "64", "--Nf", "4", "--L", "16"]
    assert ch2_ensemble.main([*argv, "--D", "8", "--N", "4", "--batch", "8"]) == 0
    out = capsys.readouterr().out
    assert "one ensemble of 2" in out and "separate models" in out and "model_steps_per_s" in out
    assert "faster here:" in out


def test_ch3_members_prints_both_ways(capsys):
    import ch3_members  # benchmarks/

    argv = ["--steps", "2", "--members", "2", "--T", "12", "--V", "8", "--d", "8", "--N", "4", "--batch", "4"]
    assert ch3_members.main(argv) == 0
    out = capsys.readouterr().out
    assert "one model at a time" in out and "one ensemble of 2" in out and "model_steps_per_s" in out
    assert "the ensemble trains" in out
