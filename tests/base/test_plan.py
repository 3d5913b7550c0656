"""``python -m mamba_recall plan``: every run-store grid at a preset, its jobs finished and left (from the store),
the command that runs it, and why an experiment has no grid at a preset: one row per declared experiment, by its
name."""

from __future__ import annotations

import pytest

from mamba_recall import plan
from mamba_recall.chapters.ch2_hashing_scaling.runners import figure_grids as ch2_figure_grids


def test_plan_lists_every_grid_with_the_committed_store(tmp_path):
    table = plan.plan("cpu-hours")
    from mamba_recall.experiment import experiments

    assert list(table.columns[:2]) == ["experiment", "jobs"]  # one column names the grid: the experiment
    assert list(table.experiment) == [e.name for e in experiments()]  # each once, by its name, in chapter order
    assert {"ch1_mechanism", "ch1_table1", "ch2_fig8", "ch2_reference_grid", "ch4_edge", "ch3_keep_nth"} <= set(
        table.experiment
    )
    fig8 = table.set_index("experiment").loc["ch2_fig8"]
    assert fig8.jobs == len(ch2_figure_grids.jobs_for("fig8", "cpu-hours")) == fig8.finished + fig8.left
    assert fig8.finished == fig8.jobs  # the committed grid
    assert fig8.command == "python -m mamba_recall grid ch2_fig8 --preset cpu-hours --allow-long"
    empty = plan.plan("cpu-hours", store=tmp_path)  # another store: nothing finished there
    assert (empty.finished == 0).all() and (empty.left == empty.jobs).all()


def test_a_runner_without_a_grid_at_the_preset_says_why(capsys):
    ci = plan.plan("ci")
    ci = ci.set_index("experiment")
    ch3 = ci.loc["ch3_mqar_figa3"]  # at ci it trains nothing (the page reads cpu-hours)
    assert ch3.jobs == 0 and "runs the run store at cpu-hours, paper only" in ch3.note
    induction = ci.loc["ch3_induction"]  # every preset of the other Chapter 3 runners is a grid
    assert induction.jobs == 2 and not induction.note
    fig8 = plan.plan("paper").set_index("experiment").loc["ch2_fig8"]
    assert fig8.jobs == 0 and "trains as ensembles" in fig8.note
    assert "python -m mamba_recall grid ch2_multihead --preset paper" in fig8.note
    assert ci.loc["ch1_checkpoints"].jobs == 5 and not ci.loc["ch1_checkpoints"].note  # one model of each name at ci
    mechanism = ci.loc["ch1_mechanism"]
    assert mechanism.jobs == 0 and "this part runs the entries that declare seeds" in mechanism.note
    assert plan.main(["--preset", "paper"]) == 0
    out = capsys.readouterr().out
    assert "no run-store grid at preset 'paper'" in out and "jobs at preset 'paper'" in out
    assert "--estimate measures the CPU-hours left" in out


def test_chapter_3_paper_grids_are_planned_and_their_jobs_use_a_gpu_where_there_is_one():
    """Chapter 3's paper grids (the largest: Tabs. A.1–A.4, Figs. 2, A.3, 3, A.4) are run-store grids too, so the plan
    lists them (Chapter 1's too); each paper job's config asks for ``device: auto``, resolved where the job runs, while the cpu-hours
    jobs (committed, CPU) keep their configs and keys."""
    from mamba_recall.chapters.ch3_selectivity.runners import (
        induction as ch3_induction,
        keep_nth as ch3_keep_nth,
        mqar_figa3 as ch3_mqar_figa3,
        mqar_train as ch3_mqar_train,
    )
    from mamba_recall.runners import runner_name
    from mamba_recall.runstore import job_device

    table = plan.plan("paper").set_index("experiment")
    for mod in (ch3_keep_nth, ch3_mqar_train, ch3_mqar_figa3, ch3_induction):
        row = table.loc[runner_name(mod.__name__)]
        jobs = mod.jobs_for("paper")
        assert row.jobs == len(jobs) > 0 and row.note == "" and "--preset paper --allow-long" in row.command
        assert {j["config"]["device"] for j in jobs} == {"auto"}
        assert all("device" not in j["config"] for j in mod.jobs_for("cpu-hours"))
    ch1 = table.loc[["ch1_table1", "ch1_table1_matched", "ch1_full_mamba", "ch1_full_onehot"]]
    assert (ch1.jobs > 0).all()
    assert all(ch1.command.str.startswith("python -m mamba_recall grid ch1_"))
    assert table.loc["ch1_mechanism"].jobs == 0 and "declare seeds" in table.loc["ch1_mechanism"].note  # cpu-hours
    assert job_device({"device": "auto"}) in ("cpu", "cuda") and job_device({}) == "cpu"
    fig_a3 = ch3_mqar_figa3.jobs_for("paper")
    assert {(j["config"]["mixer"], j["config"]["V"]) for j in fig_a3} == {("s6", 512), ("mamba2", 512), ("s4d", 256)}


def test_ensembles_per_job_are_planned_at_the_gpu_preset():
    """Chapter 3's MQAR grids train a config's 7 seeds as one ensemble per job at ``paper`` (``--members 7``: 7× fewer
    units of work), and one model per job at ``cpu-hours`` (on a CPU an ensemble does not pay); the estimate times
    what the command runs."""
    from mamba_recall.chapters.ch3_selectivity.runners import mqar_figa3 as ch3_mqar_figa3

    paper, cpu = plan.plan("paper"), plan.plan("cpu-hours")
    for name in ("ch3_mqar_train", "ch3_mqar_figa3"):
        row = paper[paper.experiment == name].iloc[0]
        assert row.members == 7 and row.units * 7 == row.left and row.command.endswith("--allow-long --members 7")
        assert cpu[cpu.experiment == name].iloc[0].members == 1
    assert set(paper[~paper.experiment.isin(["ch3_mqar_train", "ch3_mqar_figa3"])].members) == {1}
    grid = next(g for g in plan.grids() if g.experiment == "ch3_mqar_figa3")
    left = ch3_mqar_figa3.jobs_for("cpu-hours", smoke=True)
    seconds, basis = grid.estimate(left, 2)
    assert seconds > 0 and "an ensemble of 2 per unit" in basis


def test_plan_names_each_grid_s_bundle_and_says_which_left_jobs_belong_to_no_committed_bundle(capsys):
    """One name per experiment: a grid's bundle is ``<experiment>_<preset>``. At ``ci`` every job left belongs to a
    grid whose bundle is not committed (Chapter 2's Thm 5 grid, Chapter 4's edge family), and the summary
    says so; every grid with a committed bundle there is finished."""
    from mamba_recall.paths import RESULTS_DIR

    ci = plan.plan("ci")
    have = ci[ci.note == ""]
    assert (have.bundle != "").all()
    assert set(have[have.committed].bundle) >= {"ch3_keep_nth_ci", "ch2_scaling_ci", "ch4_train_ci", "ch1_table1_ci"}
    for row in have.itertuples():
        assert row.committed == all((RESULTS_DIR / f"{b}.json").is_file() for b in row.bundle.split())
    assert (have[have.committed].left == 0).all()
    left = have[have.left > 0]
    assert len(left) and not left.committed.any()
    assert {"ch2_thm5_ci", "ch4_edge_ci"} <= set(left.bundle)
    assert plan.main(["--preset", "ci"]) == 0
    out = capsys.readouterr().out
    assert f"{int(left.left.sum())} of them in grids whose bundle is not committed at ci" in out
    cpu = plan.plan("cpu-hours")
    fig7 = cpu.set_index("experiment").loc["ch2_fig7"]
    assert fig7.bundle == "ch2_fig7_cpu-hours" and fig7.committed and fig7.left == 0


def test_each_chapter_2_figure_has_one_route_at_each_preset():
    """Figs. 7, 8, 10-11 and Tab. 10 are made at ``ci`` and ``paper`` by the ensembles of ``ch2_scaling`` (its parts
    ``multilayer``, ``repetition``, ``ablation``) and ``ch2_multihead`` (its grid) and at ``cpu-hours`` by the one-model
    grids ``ch2_<part>``: at each preset the plan gives each figure one grid with jobs, and the refused one's note names
    the exact command of the other."""
    routes = {
        "ch2_fig7": ("ch2_scaling", " --only multilayer"),
        "ch2_fig10_11": ("ch2_scaling", " --only repetition"),
        "ch2_tab10": ("ch2_scaling", " --only ablation"),
        "ch2_fig8": ("ch2_multihead", ""),
    }
    for preset in ("ci", "paper"):
        table = plan.plan(preset).set_index("experiment")
        for figure, (ensemble, only) in routes.items():
            row = table.loc[figure]
            assert row.jobs == 0 and row.bundle == "", (figure, preset)
            command = f"python -m mamba_recall grid {ensemble} --preset {preset} --allow-long{only}"
            want = f"at preset {preset!r} the figure trains as ensembles, made only by `{command}`"
            assert row.note == want, (figure, preset, row.note)
            assert table.loc[ensemble].jobs > 0 and not table.loc[ensemble].note
        assert table.loc["ch2_thm5"].jobs > 0  # Thm 5 at 4000 steps has sizes of its own: a grid at every preset
    cpu = plan.plan("cpu-hours").set_index("experiment")
    assert (cpu.loc[list(routes)].jobs > 0).all() and (cpu.loc[["ch2_scaling", "ch2_multihead"]].jobs == 0).all()
    for figure in routes:  # the job function refuses too, not only the plan
        with pytest.raises(ValueError, match="at preset 'paper' the figure trains as ensembles, made only by `python"):
            ch2_figure_grids.jobs_for(figure.removeprefix("ch2_"), "paper")
