"""The run-store command line shared by the runners (:func:`mamba_recall.runstore.add_grid_args`,
:func:`~mamba_recall.runstore.grid_main`): the options, their order and help, and the run / aggregate-only flow."""

from __future__ import annotations

import argparse

import pytest

from mamba_recall import context, longrun, runstore
from mamba_recall.runstore import (
    GRID_OPTIONS,
    DemoConfig,
    GridExit,
    add_grid_args,
    grid_main,
    make_job,
    pending,
    run_grid,
)
from demo_cells import DemoCell  # the demo cell with the fields these tests add

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
    engine = ["--engine", "--ray-address", "--gpus-per-job", "--members"]  # the engine options follow the ordered ones
    order = ["--jobs", "--allow-long", "--aggregate-only", "--no-estimate", "--smoke", "--store"]
    assert flags == [*order, *engine, "--only"]  # then the subset of the jobs
    assert (args.engine, args.ray_address, args.gpus_per_job, args.members, args.only) == ("local", None, 0.0, 1, None)
    assert ap.parse_args(["--only", "a", "x=1", "--only", "b"]).only == ["a", "x=1", "b"]  # the words add up
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
    monkeypatch.delenv(context.ENV_ALLOW_LONG, raising=False)  # a process that inherited no permission
    jobs = [make_job("demo.sleep", DemoConfig(x=x, sleep=0.0), s) for x in range(2) for s in range(2)]
    written = []

    def write(preset, *, store, smoke, log):
        written.append((preset, store, smoke, longrun.long_runs_allowed()))
        return len(pending(jobs, store)[0])

    ap = _parser()
    args = ap.parse_args(["--aggregate-only", "--store", str(tmp_path)])
    assert grid_main(args, RUNNER, jobs, write, estimate=None, what="demo") == 0
    assert "4 jobs: 0 finished, 4 left" in capsys.readouterr().out
    assert not longrun.long_runs_allowed()
    args = ap.parse_args(["--no-estimate", "--allow-long", "--store", str(tmp_path)])
    assert grid_main(args, RUNNER, jobs, write, estimate=None, what="demo") == 4
    assert not longrun.long_runs_allowed()  # --allow-long held for that command only
    assert written == [("ci", tmp_path, False, False), ("ci", tmp_path, False, True)]


def test_estimate_over_an_hour_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv(context.ENV_ALLOW_LONG, raising=False)
    jobs = [make_job("demo.sleep", DemoConfig(x=0, sleep=0.0), 0)]
    args = _parser().parse_args(["--store", str(tmp_path)])
    with pytest.raises(longrun.LongRunError, match="demo grid"):
        grid_main(args, RUNNER, jobs, lambda *a, **k: None, estimate=lambda left: (7200.0, "said"), what="demo grid")
    assert pending(jobs, tmp_path)[0] == []


def test_finished_status_and_save_grid_bundle(tmp_path):
    from mamba_recall.runstore import finished_status, run_grid, run_tables, save_grid_bundle

    jobs = [make_job("demo.sleep", DemoConfig(x=0, sleep=0.0), s) for s in range(3)]
    said = []
    assert finished_status(jobs, tmp_path / "runs", preset="ci", log=said.append) == ([], {})
    assert said == ["no finished jobs of demo.sleep at preset ci; nothing to aggregate."]
    run_grid(RUNNER, jobs[:2], store=tmp_path / "runs", progress=False, log=lambda m: None)
    runs, data = finished_status(jobs, tmp_path / "runs", preset="ci")
    assert [r["seed"] for r in sorted(runs, key=lambda r: r["seed"])] == [0, 1]
    assert (data["complete"], data["jobs_finished"], data["jobs_total"]) == (False, 2, 3)
    assert data["run_keys"] == sorted(j["key"] for j in jobs[:2]) and data["runs"]["wall_seconds"] >= 0
    layout = run_tables(runs, ["value"])
    path = save_grid_bundle(
        "demo_grid", data, {"preset": "ci"}, command="demo", tables=layout, directory=tmp_path, log=said.append
    )
    assert path == tmp_path / "demo_grid.json" and said[-1] == f"wrote {path} (2 of 3 jobs)"
    from mamba_recall import results

    assert results.load_bundle(path).provenance["device"] == data["runs"]["devices"][0]  # the runs' device
    data["runs"]["devices"] = ["cuda: NVIDIA H100 80GB HBM3"]  # a grid run on a GPU, aggregated on a CPU
    path = save_grid_bundle("demo_gpu", data, {"preset": "paper"}, command="demo", tables=layout, directory=tmp_path)
    assert results.load_bundle(path).provenance["device"] == "cuda: NVIDIA H100 80GB HBM3"


def _git_repo(root):
    """A small git repository at ``root`` with one committed (tracked) bundle file, ``results/first.json``."""
    import subprocess

    (root / "results").mkdir(parents=True)
    (root / "results" / "first.json").write_text("{}\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(git + ["init", "-q"], cwd=root, check=True)
    subprocess.run(git + ["add", "results/first.json"], cwd=root, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], cwd=root, check=True)


def test_one_provenance_per_command(tmp_path, monkeypatch):
    """A command that writes two bundles records one provenance, taken before it writes anything: the first
    bundle rewrites a tracked file, yet the second one is not marked ``git_dirty`` (written alone, outside a
    command, it would be). The second stage's jobs are made from the store, after the first stage."""
    import json

    from mamba_recall import provenance, results

    repo = tmp_path / "repo"
    _git_repo(repo)
    monkeypatch.setattr(provenance, "REPO_ROOT", repo)  # provenance.git runs git there
    # the code that runs counts as that checkout's own (else, imported from outside it, it would read as dirty)
    monkeypatch.setattr(provenance, "checkout_package_dir", provenance.package_dir)
    monkeypatch.delenv(context.ENV_ALLOW_LONG, raising=False)
    out = repo / "results"

    def writer(name):
        def write(preset, *, store, smoke, log):
            return results.save_bundle(name, {"preset": preset}, {}, command="c", directory=out)

        return write

    first = [make_job("demo.sleep", DemoConfig(x=0, sleep=0.0), 0)]
    seen_store = []

    def second_jobs(store):  # made from the first stage's finished runs
        seen_store.append(store)
        return [make_job("demo.second", DemoCell(of=j["key"], x=1, sleep=0.0), 0) for j in pending(first, store)[0]]

    from mamba_recall.runstore import GridStage

    args = _parser().parse_args(["--no-estimate", "--store", str(tmp_path / "runs")])
    then = [GridStage(RUNNER, second_jobs, writer("second"))]
    assert grid_main(args, RUNNER, first, writer("first"), estimate=None, what="demo", then=then) == out / "first.json"
    assert seen_store == [tmp_path / "runs"] and len(pending(second_jobs(tmp_path / "runs"), tmp_path / "runs")[0]) == 1
    provs = [json.loads((out / f"{n}.json").read_text())["provenance"] for n in ("first", "second")]
    keys = ("git_commit", "git_dirty", "dirty_files", "versions", "device", "platform")
    assert provs[0]["git_commit"] and provs[0]["git_dirty"] is False
    assert [{k: p[k] for k in keys} for p in provs] == [{k: provs[0][k] for k in keys}] * 2
    # the defect this prevents: a bundle written after the tracked first.json was rewritten reads a dirty tree
    assert json.loads(writer("alone")("ci", store=None, smoke=False, log=None).read_text())["provenance"]["git_dirty"]
    # and nested commands keep the outer one's state
    with results.command_provenance() as outer, results.command_provenance() as inner:
        assert inner is outer and outer["status"]


def test_aggregate_only_counts_every_stage(tmp_path, capsys, monkeypatch):
    from mamba_recall.runstore import GridStage

    monkeypatch.delenv(context.ENV_ALLOW_LONG, raising=False)
    first = [make_job("demo.sleep", DemoConfig(x=x, sleep=0.0), 0) for x in range(2)]
    second = [make_job("demo.second", DemoConfig(x=0, sleep=0.0), s) for s in range(3)]
    written = []

    def write(preset, *, store, smoke, log):
        written.append(preset)

    args = _parser().parse_args(["--aggregate-only", "--store", str(tmp_path)])
    grid_main(args, RUNNER, first, write, estimate=None, what="demo", then=[GridStage(RUNNER, second, write)])
    assert capsys.readouterr().out.splitlines() == ["2 jobs: 0 finished, 2 left", "3 jobs: 0 finished, 3 left"]
    assert written == ["ci", "ci"] and pending(first + second, tmp_path)[0] == []  # counted, nothing run


@pytest.mark.parametrize("allowed", [True, False])
def test_worker_processes_inherit_allow_long(tmp_path, monkeypatch, allowed):
    """``--allow-long --jobs 2``: the worker processes carry the parent's permission (a job that checks its own
    estimate, as Chapter 4's training does, must not be refused in a worker when the parent allowed it)."""
    jobs = [make_job("demo.sleep", DemoConfig(x=x, sleep=0.0), 0) for x in range(2)]
    with context.run_context(allow_long=allowed):
        recs = run_grid(RUNNER, jobs, n_jobs=2, store=tmp_path, progress=False, log=lambda m: None)
    assert [r["result"]["long_allowed"] for r in recs] == [allowed, allowed]


def test_checkpoints_written_inside_a_command_keep_its_git_state(tmp_path, monkeypatch):
    """The second checkpoint of a command is not recorded dirty because the first one rewrote a tracked file."""
    import json

    from mamba_recall import results

    states = iter(
        [{"commit": "abc", "status": "", "code": ""}, {"commit": "abc", "status": " M results/x.pt", "code": ""}]
    )
    monkeypatch.setattr(results._records, "_git_state", lambda: next(states))
    with results.command_provenance():
        results.save_checkpoint(tmp_path / "a.pt", {"w": 1}, {}, command="c")
        results.save_checkpoint(tmp_path / "b.pt", {"w": 2}, {}, command="c")
    provs = [json.loads((tmp_path / f"{n}.json").read_text())["provenance"] for n in "ab"]
    assert [p["git_dirty"] for p in provs] == [False, False] and provs[1]["git_commit"] == "abc"
    results.save_checkpoint(tmp_path / "c.pt", {"w": 3}, {}, command="c")  # outside a command: its own state, now
    assert json.loads((tmp_path / "c.json").read_text())["provenance"]["git_dirty"] is True


def test_members_on_a_runner_that_trains_one_model_per_job_is_refused(tmp_path, capsys):
    """``--members 2`` on the demo grid (no ensemble runner): the command ends with a message, no traceback, no job."""
    ap = argparse.ArgumentParser()
    add_grid_args(ap)
    args = ap.parse_args(["--members", "2", "--store", str(tmp_path)])
    jobs = runstore.demo_jobs(seeds=2, cells=1, sleep=0)
    with pytest.raises(GridExit, match="--members 2: .*mamba_recall.runstore trains one model per job: drop --members"):
        grid_main(args, "mamba_recall.runstore:demo_job", jobs, lambda *a, **k: None, estimate=None, what="demo")
    assert not list(tmp_path.rglob("*.json"))


def _stages():
    """Two stages of demo jobs: cells x in {0, 1, 2} with seeds 0, 1, then a stage of the cells ``x = 10, 11``."""
    first = [make_job("demo.sleep", DemoCell(x=x, sleep=0.0, name=f"c{x}"), s) for x in range(3) for s in range(2)]
    second = [make_job("demo.second", DemoCell(x=x, sleep=0.0, name=f"c{x}"), 0) for x in (10, 11)]
    return first, second


def test_only_picks_jobs_by_their_config_values_in_every_stage(tmp_path, capsys, monkeypatch):
    """``--only``: a bare value of one plain config field, or FIELD=VALUE; values of one field: any of them, of
    several fields: all of them; resolved over every stage's jobs, so a value of the second stage only picks nothing of
    the first. Only the picked jobs run or are counted; the bundle writer is called as without it (it reads every
    finished job of its grid: with jobs left, the bundle is unfinished as any grid's)."""
    from mamba_recall.runstore import GridStage, only_selection, select_jobs

    monkeypatch.delenv(context.ENV_ALLOW_LONG, raising=False)
    first, second = _stages()
    both = first + second
    assert only_selection(None, both, "demo") is None and select_jobs(both, None) is both
    picked = select_jobs(first, only_selection(["c1", "c2"], both, "demo"))
    assert [(j["config"]["x"], j["seed"]) for j in picked] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    picked = select_jobs(first, only_selection(["x=2", "name=c2", "name=c0"], both, "demo"))  # x = 2 and a name
    assert [(j["config"]["x"], j["seed"]) for j in picked] == [(2, 0), (2, 1)]
    assert select_jobs(first, only_selection(["c10"], both, "demo")) == []
    written = []

    def write(preset, *, store, smoke, log):
        written.append(len(pending(first, store)[1]))  # the writer's own jobs: the whole first grid

    args = _parser().parse_args(["--no-estimate", "--store", str(tmp_path), "--only", "c1", "c11"])
    grid_main(args, RUNNER, first, write, estimate=None, what="demo", then=[GridStage(RUNNER, second, write)])
    done = {(r["config"]["x"], r["seed"]) for r in pending(both, tmp_path)[0]}
    assert done == {(1, 0), (1, 1), (11, 0)}  # only the picked jobs ran, in both stages
    assert written == [4, 4]  # each bundle writer called as without --only (4 of the 6 first-stage jobs left)
    args = _parser().parse_args(["--aggregate-only", "--store", str(tmp_path), "--only", "x=0", "x=1"])
    capsys.readouterr()
    grid_main(args, RUNNER, first, write, estimate=None, what="demo", then=[GridStage(RUNNER, second, write)])
    assert capsys.readouterr().out.splitlines() == ["4 jobs: 2 finished, 2 left", "0 jobs: 0 finished, 0 left"]


@pytest.mark.parametrize(
    "words, message",
    [
        (
            ["c7"],
            r"--only c7: no job of demo grid has the value 'c7'; the fields that tell its jobs apart: .*"
            r"name \(c0, c1, c2, c10, c11\)",
        ),
        (
            ["x=7"],
            r"--only x=7: no job of demo grid has x = '7'; the fields that tell its jobs apart: .*x \(0, 1, 2, 10, 11\)",
        ),
        (["nope=1"], r"--only nope=1: no job of demo grid has nope = '1'"),
        (["c1", "c8"], r"--only c8: no job of demo grid"),  # every word must pick something
        (["x=1", "name=c2"], r"--only x=1 name=c2: no job of demo grid has all of these values"),  # nor all together
    ],
)
def test_only_that_picks_nothing_stops_before_any_job_naming_the_values(tmp_path, words, message):
    """A word that no job's config has stops the command before any job runs, naming the fields that tell the jobs
    apart and their values; a bare value of several fields asks for FIELD=VALUE."""
    first, second = _stages()
    from mamba_recall.runstore import GridStage

    args = _parser().parse_args(["--no-estimate", "--store", str(tmp_path), "--only", *words])
    with pytest.raises(GridExit, match=message):
        grid_main(args, RUNNER, first, lambda *a, **k: None, estimate=None, what="demo grid",
                  then=[GridStage(RUNNER, second, lambda *a, **k: None)])  # fmt: skip
    assert not list(tmp_path.rglob("*.json"))  # nothing ran


def test_only_a_value_of_several_fields_asks_for_the_field(tmp_path):
    jobs = [make_job("demo.sleep", DemoCell(x=x, y=1 - x, sleep=0.0), 0) for x in range(2)]
    args = _parser().parse_args(["--no-estimate", "--store", str(tmp_path), "--only", "1"])
    with pytest.raises(
        GridExit, match=r"--only 1: '1' is a value of the fields x, y of demo's jobs; write one of x=1, y=1"
    ):
        grid_main(args, RUNNER, jobs, lambda *a, **k: None, estimate=None, what="demo")
    args = _parser().parse_args(["--aggregate-only", "--store", str(tmp_path), "--only", "y=1"])
    grid_main(args, RUNNER, jobs, lambda *a, **k: None, estimate=None, what="demo")  # counts x = 0's job
    assert not list(tmp_path.rglob("*.json"))


def test_only_on_jobs_made_from_the_store_is_resolved_once_they_are_made(tmp_path):
    """A stage whose jobs are made from the store when it starts (Chapter 4's claim checks) has its ``--only``
    resolved against those jobs."""
    jobs = [make_job("demo.sleep", DemoConfig(x=x, sleep=0.0), 0) for x in range(3)]
    args = _parser().parse_args(["--no-estimate", "--store", str(tmp_path), "--only", "x=2"])
    grid_main(args, RUNNER, lambda store: jobs, lambda *a, **k: None, estimate=None, what="demo")
    assert [r["config"]["x"] for r in pending(jobs, tmp_path)[0]] == [2]
    args = _parser().parse_args(["--no-estimate", "--store", str(tmp_path), "--only", "x=5"])
    with pytest.raises(GridExit, match="--only x=5: no job of demo has x = '5'"):
        grid_main(args, RUNNER, lambda store: jobs, lambda *a, **k: None, estimate=None, what="demo")
