"""Experiments declared once (issue 54): the one registry (:mod:`mamba_recall.experiment`), what ``plan`` lists and
the one command ``python -m mamba_recall grid``."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import joblib
import pytest

from mamba_recall import experiment as registry
from mamba_recall import plan
from mamba_recall.experiment import Experiment, experiments, grid_command
from mamba_recall.paths import RESULTS_DIR
from mamba_recall.presets import ALL_PRESETS
from mamba_recall.runners import chapter_modules
from mamba_recall.runstore import DemoConfig, JobConfig, job_config, make_job
from demo_cells import DemoCell  # the demo cell with a nested field (tests/runstore/demo_cells.py)


def _grids_at(e: Experiment) -> dict[str, list[dict]]:
    """The experiment's run-store jobs at each preset where it has a grid."""
    out = {}
    for preset in ALL_PRESETS:
        try:
            out[preset] = e.grid_jobs(preset)
        except (KeyError, ValueError):
            continue
    return out


def test_every_declared_experiment_has_a_unique_name_and_comes_from_its_chapter_s_list():
    names = [e.name for e in experiments()]
    assert len(names) == len(set(names)) > 20
    declared = [e.name for m in chapter_modules("experiments").values() for e in m.EXPERIMENTS]
    assert names == declared  # the registry is the chapters' lists, in chapter order, nothing else
    assert {"ch1_mechanism", "ch2_trained_dn", "ch3_keep_nth", "ch4_edge", "ch5_capacity"} <= set(names)
    for e in experiments():
        assert e.bundle("cpu-hours") == f"{e.name}_cpu-hours"
        assert e.command("ci") == f"python -m mamba_recall grid {e.name} --preset ci --allow-long"


def test_every_experiment_s_jobs_are_config_seed_pairs_keyed_as_the_run_store_keys_them():
    with_grids = 0
    for e in experiments():
        grids = _grids_at(e)  # none yet for a grid made from another's committed bundle (ch5_capacity_tuned)
        with_grids += bool(grids)
        assert set(grids) <= set(e.sizes), f"{e.name}: a grid at a preset its sizes do not declare"
        for preset, jobs in grids.items():
            pairs = e.jobs(preset)
            assert len(pairs) == len(jobs) > 0
            for (config, seed), job in zip(pairs, jobs):
                assert isinstance(seed, int) and not isinstance(seed, bool)
                # typed: what the job function receives (make_job refuses a dict)
                assert isinstance(config, JobConfig), f"{e.name}: a config of {type(config).__name__}"
                record = config.to_record()
                json.dumps(record)  # resolved: plain JSON, nothing left to a default object
                joblib.hash(record)
                assert record == job["config"] and make_job(e.name, config, seed)["key"] == job["key"]
            assert len({j["key"] for j in jobs}) == len(jobs), f"{e.name} at {preset} lists a job twice"
    assert with_grids >= 25


def test_every_chapter_s_jobs_are_typed_and_their_job_functions_receive_them_so():
    """Every job of every grid (smoke too) is made from a typed config (its ``config_type``), which reads back from
    the job's record as itself; a dict is refused, naming where a job config is declared."""
    typed = 0
    for e in experiments():
        for preset in ALL_PRESETS:
            for smoke in (False, True):
                try:
                    jobs = e.grid_jobs(preset, smoke=smoke)
                except (KeyError, ValueError):
                    continue
                for job in jobs:
                    config = job_config(job)
                    assert isinstance(config, JobConfig) and config.to_record() == job["config"]
                    typed += 1
    assert typed > 1000
    with pytest.raises(TypeError, match=r"a job's config is a JobConfig .* got dict; .*runners/job_configs\.py"):
        make_job("demo_grid", {"x": 0, "sleep": 0}, 0)


def test_every_job_function_resolves_and_every_metric_is_in_a_committed_run():
    """Each declared metric is a dotted path into a run's result (``row.accuracy``) that some committed run records;
    an experiment declares none only where its runs record no scalar (their results are tables' rows)."""

    def at(result, path):
        for part in path.split("."):
            if not isinstance(result, dict) or part not in result:
                return None
            result = result[part]
        return result

    checked = 0
    for e in experiments():
        for ref in filter(None, (e.run_job, e.members_job)):
            module, _, name = ref.partition(":")
            assert callable(getattr(importlib.import_module(module), name)), ref
        runs = [json.loads(r.read_text())["result"] for r in sorted((RESULTS_DIR / "runs" / e.name).glob("*.json"))]
        if not e.metrics:
            scalars = {k for r in runs for k, v in r.items() if isinstance(v, (int, float, str, bool))}
            assert runs and not scalars, f"{e.name} declares no metrics, but its runs record {sorted(scalars)}"
        if runs:
            missing = [m for m in e.metrics if all(at(r, m) is None for r in runs)]
            assert not missing, f"{e.name}: metrics {missing} are in none of its committed runs"
            checked += 1
    assert checked >= 20


def test_plan_lists_exactly_the_registry():
    grids = plan.grids()
    assert [g.experiment for g in grids] == [e.name for e in experiments()]
    table = plan.plan("cpu-hours", store=RESULTS_DIR / "runs")
    planned = table[table.note == ""]
    assert set(planned.bundle) == {e.bundle("cpu-hours") for e in experiments() if "cpu-hours" in _grids_at(e)}


def _demo_experiment(written: list) -> Experiment:
    def make_jobs(preset: str, smoke: bool = False) -> list[dict]:
        if preset != "ci":
            raise ValueError("the demo grid runs at ci only")
        return [make_job("demo_grid", DemoConfig(x=x, sleep=0), s) for x in range(2) for s in range(2)]

    def write(preset, *, store=None, smoke=False, log=print):
        written.append((preset, store))
        return "bundle"

    return Experiment(
        name="demo_grid",
        sizes={"ci": {}},
        make_jobs=make_jobs,
        run_job="mamba_recall.runstore:demo_job",
        write=write,
        estimate=lambda left: (0.0, "the demo sleeps 0 s"),
        metrics=("value",),
    )


def test_grid_runs_an_experiment_into_a_store_writes_its_bundle_and_resumes(tmp_path, monkeypatch, capsys):
    written: list = []
    demo = _demo_experiment(written)
    monkeypatch.setattr(registry, "experiments", lambda: (demo,))
    store = tmp_path / "runs"
    argv = ["demo_grid", "--preset", "ci", "--store", str(store), "--no-estimate"]
    assert grid_command(argv) == 0
    assert "4 jobs: 0 finished (skipped), 4 left" in capsys.readouterr().out
    files = sorted((store / "demo_grid").glob("*.json"))
    assert [f.stem for f in files] == sorted(j["key"] for j in demo.grid_jobs("ci"))
    assert json.loads(files[0].read_text())["runner"] == "mamba_recall.runstore:demo_job"
    mtimes = [f.stat().st_mtime_ns for f in files]
    assert grid_command(argv) == 0  # the same command again: nothing left to run, the bundle rewritten
    assert "4 jobs: 4 finished (skipped), 0 left" in capsys.readouterr().out
    assert [f.stat().st_mtime_ns for f in files] == mtimes
    assert written == [("ci", store), ("ci", store)]
    with pytest.raises(SystemExit):
        grid_command(["demo_grid", "--preset", "paper", "--store", str(store)])
    assert "demo_grid has no run-store grid at preset paper: the demo grid runs at ci only" in capsys.readouterr().err


def test_grid_runs_a_chapter_s_ci_experiment_smoke_capped_and_resumes(tmp_path, capsys):
    store = tmp_path / "runs"
    argv = ["ch2_trained_dn", "--preset", "ci", "--smoke", "--store", str(store), "--no-estimate"]
    assert grid_command(argv) == 0
    jobs = registry.experiment_named("ch2_trained_dn").grid_jobs("ci", smoke=True)
    assert f"{len(jobs)} jobs: 0 finished (skipped), {len(jobs)} left" in capsys.readouterr().out
    assert sorted(f.stem for f in (store / "ch2_trained_dn").glob("*.json")) == sorted(j["key"] for j in jobs)
    assert (tmp_path / "ch2_trained_dn_ci_smoke.json").is_file()  # the bundle beside the scratch store
    assert grid_command(argv) == 0
    assert f"{len(jobs)} jobs: {len(jobs)} finished (skipped), 0 left" in capsys.readouterr().out


def test_grid_names_the_declared_experiments_for_an_unknown_one(capsys):
    with pytest.raises(SystemExit):
        grid_command(["ch9_nothing", "--preset", "ci"])
    err = capsys.readouterr().err
    assert "no experiment named 'ch9_nothing'" in err and "ch2_trained_dn" in err


def test_grid_runs_several_experiments_in_one_command_each_into_its_own_folder(tmp_path, monkeypatch, capsys):
    written: list = []
    one, two = _demo_experiment(written), _demo_experiment(written)
    two = Experiment(**{**two.__dict__, "name": "demo_other", "make_jobs": lambda preset, smoke=False: [
        make_job("demo_other", DemoConfig(x=9, sleep=0), 0)
    ]})  # fmt: skip
    monkeypatch.setattr(registry, "experiments", lambda: (one, two))
    store = tmp_path / "runs"
    assert grid_command(["demo_grid", "demo_other", "--preset", "ci", "--store", str(store), "--no-estimate"]) == 0
    out = capsys.readouterr().out
    assert "4 jobs: 0 finished (skipped), 4 left" in out and "1 jobs: 0 finished (skipped), 1 left" in out
    assert (
        len(list((store / "demo_grid").glob("*.json"))) == 4 and len(list((store / "demo_other").glob("*.json"))) == 1
    )
    assert written == [("ci", store), ("ci", store)]  # each experiment's bundle, once


def test_an_experiment_without_write_gets_the_one_bundle_layout(tmp_path, monkeypatch):
    """No ``write`` declared: the bundle has a ``runs`` table (one row per seed) and a ``cells`` table (the mean over
    seeds per config, cells keyed by the config's plain fields; a nested field rides along), and records the grid
    command."""
    demo = Experiment(
        name="demo_grid",
        sizes={"ci": {}},
        make_jobs=lambda preset, smoke=False: [
            make_job("demo_grid", DemoCell(x=x, sleep=0, extra={"k": [1, 2]}), s) for x in range(2) for s in range(3)
        ],
        run_job="mamba_recall.runstore:demo_job",
        estimate=lambda left: (0.0, "the demo sleeps 0 s"),
        metrics=("value",),
    )
    monkeypatch.setattr(registry, "experiments", lambda: (demo,))
    store = tmp_path / "runs"
    assert grid_command(["demo_grid", "--preset", "ci", "--store", str(store), "--no-estimate"]) == 0
    bundle = json.loads((tmp_path / "demo_grid_ci.json").read_text())
    assert bundle["command"] == demo.command("ci")
    from mamba_recall.results import load_bundle

    loaded = load_bundle(tmp_path / "demo_grid_ci.json")
    runs, cells = loaded.tables["runs"], loaded.tables["cells"]
    assert len(runs) == 6 and list(runs.seed) == [0, 1, 2, 0, 1, 2] and list(cells.x) == [0, 1]
    for _, cell in cells.iterrows():
        assert cell.value_mean == pytest.approx(runs[runs.x == cell.x].value.mean())


def test_one_command_line_for_every_grid():
    """Every grid command the library prints is :func:`command_line`'s (one or several names, ``--smoke`` or
    ``--allow-long``), the command an experiment's bundles record."""
    from mamba_recall.experiment import command_line

    for e in experiments():
        assert (
            e.command("ci")
            == command_line(e.name, "ci")
            == f"python -m mamba_recall grid {e.name} --preset ci --allow-long"
        )
    assert (
        command_line(["a_x", "b_y"], "paper", smoke=True)
        == "python -m mamba_recall grid a_x b_y --preset paper --smoke"
    )
    src = Path(registry.__file__).parent
    typed = [
        f"{p.relative_to(src)}:{i}"
        for p in src.rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "mamba_recall grid {" in line and p.name != "experiment.py"
    ]
    assert not typed, f"grid commands typed by hand instead of experiment.command_line: {typed}"
