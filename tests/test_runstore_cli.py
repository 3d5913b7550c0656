"""The run-store command line shared by the runners (:func:`mamba_recall.runstore.add_grid_args`,
:func:`~mamba_recall.runstore.grid_main`): the options, their order and help, and the run / aggregate-only flow."""

from __future__ import annotations

import argparse

import pytest

from mamba_recall import longrun
from mamba_recall.runstore import GRID_OPTIONS, add_grid_args, grid_main, make_job, pending

RUNNER = "mamba_recall.runstore:demo_job"


def _parser(**kw):
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="ci")
    add_grid_args(ap, **kw)
    return ap


def test_options_defaults_order_and_help():
    ap = _parser(order=("jobs", "allow_long", "aggregate_only", "no_estimate", "smoke", "store"), store="folder")
    args = ap.parse_args([])
    assert (args.jobs, args.smoke, args.allow_long, args.aggregate_only, args.no_estimate, args.store) == (
        1, False, False, False, False, None,
    )  # fmt: skip
    flags = [a.option_strings[0] for a in ap._actions][2:]
    assert flags == ["--jobs", "--allow-long", "--aggregate-only", "--no-estimate", "--smoke", "--store"]
    helps = {a.dest: a.help for a in ap._actions}
    assert helps["jobs"] == "parallel processes, one torch thread each"
    assert helps["store"] == "folder" and helps["smoke"] is None
    assert ap.parse_args(["--jobs", "3", "--store", "x"]).jobs == 3


@pytest.mark.parametrize(
    "kw", [dict(order=GRID_OPTIONS[:-1]), dict(order=GRID_OPTIONS + ("jobs",)), dict(verbose="a typo")]
)
def test_bad_options_are_refused(kw):
    with pytest.raises(ValueError, match="add_grid_args"):
        _parser(**kw)


def test_grid_main_runs_then_counts(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(longrun, "_allowed", False)  # restored after the test (--allow-long sets it)
    jobs = [make_job("demo.sleep", {"x": x, "sleep": 0.0}, s) for x in range(2) for s in range(2)]
    written = []

    def write(preset, *, store, smoke, log):
        written.append((preset, store, smoke))
        return len(pending(jobs, store)[0])

    ap = _parser()
    args = ap.parse_args(["--aggregate-only", "--store", str(tmp_path)])
    assert grid_main(args, RUNNER, jobs, write, estimate=None, what="demo") == 0
    assert "4 jobs: 0 finished, 4 left" in capsys.readouterr().out
    assert not longrun.long_runs_allowed()
    args = ap.parse_args(["--no-estimate", "--allow-long", "--store", str(tmp_path)])
    assert grid_main(args, RUNNER, jobs, write, estimate=None, what="demo") == 4
    assert longrun.long_runs_allowed()
    assert written == [("ci", tmp_path, False)] * 2


def test_estimate_over_an_hour_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(longrun, "_allowed", False)
    jobs = [make_job("demo.sleep", {"x": 0, "sleep": 0.0}, 0)]
    args = _parser().parse_args(["--store", str(tmp_path)])
    with pytest.raises(longrun.LongRunError, match="demo grid"):
        grid_main(args, RUNNER, jobs, lambda *a, **k: None, estimate=lambda left: (7200.0, "said"), what="demo grid")
    assert pending(jobs, tmp_path)[0] == []


def test_finished_status_and_save_grid_bundle(tmp_path):
    from mamba_recall.runstore import finished_status, run_grid, save_grid_bundle

    jobs = [make_job("demo.sleep", {"x": 0, "sleep": 0.0}, s) for s in range(3)]
    said = []
    assert finished_status(jobs, tmp_path / "runs", preset="ci", log=said.append) == ([], {})
    assert said == ["no finished jobs of demo.sleep at preset ci; nothing to aggregate."]
    run_grid(RUNNER, jobs[:2], store=tmp_path / "runs", progress=False, log=lambda m: None)
    runs, data = finished_status(jobs, tmp_path / "runs", preset="ci")
    assert [r["seed"] for r in sorted(runs, key=lambda r: r["seed"])] == [0, 1]
    assert (data["complete"], data["jobs_finished"], data["jobs_total"]) == (False, 2, 3)
    assert data["run_keys"] == sorted(j["key"] for j in jobs[:2]) and data["runs"]["wall_seconds"] >= 0
    path = save_grid_bundle(
        "demo_grid", data, {"preset": "ci"}, command="demo", tables={}, directory=tmp_path, log=said.append
    )
    assert path == tmp_path / "demo_grid.json" and said[-1] == f"wrote {path} (2 of 3 jobs)"
