"""``python -m mamba_recall plan``: every run-store grid at a preset, its jobs finished and left (from the store),
the command that runs it, and why a runner has no grid at a preset."""

from __future__ import annotations

from mamba_recall import plan
from mamba_recall.experiments import ch2_figs_cpu


def test_plan_lists_every_grid_with_the_committed_store(tmp_path):
    table = plan.plan("cpu-hours")
    runners = set(table.runner)
    assert {"ch1_cpu_hours", "ch2_figs_cpu", "ch2_reference_grid", "ch2_trained_dn", "ch4_edge"} <= runners
    assert {"ch3_keep_nth", "ch3_mqar_train", "ch3_induction"} <= runners
    fig8 = table[(table.runner == "ch2_figs_cpu") & (table.part == "fig8")].iloc[0]
    assert fig8.jobs == len(ch2_figs_cpu.jobs_for("fig8", "cpu-hours")) == fig8.finished + fig8.left
    assert fig8.finished == fig8.jobs  # the committed grid
    assert (
        fig8.command == "python -m mamba_recall.experiments.ch2_figs_cpu --preset cpu-hours --parts fig8 --allow-long"
    )
    empty = plan.plan("cpu-hours", store=tmp_path)  # another store: nothing finished there
    assert (empty.finished == 0).all() and (empty.left == empty.jobs).all()


def test_a_runner_without_a_grid_at_the_preset_says_why(capsys):
    table = plan.plan("paper")
    ch3 = table[table.runner == "ch3_induction"].iloc[0]
    assert ch3.jobs == 0 and "runs the run store at cpu-hours only" in ch3.note
    ch1 = table[table.runner == "ch1_cpu_hours"].iloc[0]
    assert "this runner runs the cpu-hours preset" in ch1.note
    assert plan.main(["--preset", "paper"]) == 0
    out = capsys.readouterr().out
    assert "no run-store grid at preset 'paper'" in out and "jobs at preset 'paper'" in out
    assert "--estimate measures the CPU-hours left" in out
