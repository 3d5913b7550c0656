"""The ways people use the book, tried as a user would (issue 18): bad parameters, the CLI, broken bundles,
a bad ``MAMBA_RECALL_CH4_CHECKPOINT``, the long-run guard, the smoke cap, explorers that never block a
batch run. Every bad input must stop with one clear line naming the problem and the fix."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
import torch

from mamba_recall import cli, context, longrun, results
from mamba_recall.notebook import ParameterError, setup
from mamba_recall.paths import REPO_ROOT, RESULTS_DIR
from mamba_recall.presets import EXPERIMENTS, PRESETS, SMOKE_STEPS, experiment


# --------------------------------------------------------------------------- notebook parameters


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(preset="huge"), r"unknown preset 'huge'; use 'ci'.*'paper'"),
        (dict(preset="ci", seed=-1), "seed must be a non-negative integer, got -1"),
        (dict(preset="ci", seed=1.5), "seed must be a non-negative integer, got 1.5"),
        (dict(preset="ci", seed=True), "seed must be a non-negative integer, got True"),
        (dict(preset="ci", device="tpu"), r"unknown device 'tpu'; use one of \('auto', 'cpu', 'cuda'\)"),
        (dict(preset="ci", backend="fast"), "unknown backend 'fast'; use one of"),
        (dict(preset="ci", smoke="yes"), "smoke must be True or False, got 'yes'"),
        (dict(preset="ci", smoke=1), "smoke must be True or False, got 1"),
        (dict(preset="ci", allow_long="True"), "allow_long must be True or False, got 'True'"),
        (dict(preset="cpu-hours"), r"preset 'cpu-hours' is a runners' preset.*Notebooks accept 'ci' or 'paper'"),
    ],
)
def test_bad_notebook_parameters_give_one_line(kwargs, message):
    with pytest.raises(ParameterError, match=message) as info:
        setup(quiet=True, **kwargs)
    assert "\n" not in str(info.value)


def test_unknown_papermill_parameter_stops_at_setup_with_one_line(tmp_path):
    """Papermill runs a misspelled ``-p presett ci`` with the defaults and only logs "Passed unknown parameter":
    setup names it and the accepted parameters, and the cell's error is that one line (no traceback)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('preset = "ci"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("from mamba_recall.notebook import setup\nctx = setup(preset)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    with pytest.raises(PapermillExecutionError) as info:
        papermill.execute_notebook(
            str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"), parameters={"presett": "ci"}, progress_bar=False
        )
    err = info.value
    assert err.ename == "ParameterError"
    assert "unknown parameter 'presett'; this notebook accepts preset, seed, device, backend, smoke" in err.evalue
    assert len(err.traceback) == 1 and err.traceback[0].startswith("ParameterError: unknown parameter")
    # without the misspelling the same notebook runs
    papermill.execute_notebook(
        str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"), parameters={"preset": "ci"}, progress_bar=False
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_gpu_in_setup():
    with pytest.raises(ParameterError, match="no CUDA device; use device='cpu' or 'auto'"):
        setup("ci", device="cuda", quiet=True)


# --------------------------------------------------------------------------- the CLI


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cli_run_on_cuda_without_gpu_prints_one_line(capsys):
    assert cli.main(["run", "0", "--device", "cuda"]) == 1
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert lines == [
        "error: device='cuda' was asked for but torch sees no CUDA device; use device='cpu' or "
        "'auto', or run on a GPU machine."
    ]
    assert "Traceback" not in captured.out + captured.err


def test_cli_wrong_preset_is_refused_by_argparse(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "0", "--preset", "huge"])
    assert "invalid choice: 'huge'" in capsys.readouterr().err


def _tiny_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(
        'preset = "ci"\nseed = 0\ndevice = "auto"\nbackend = "auto"\nsmoke = False\nallow_long = False'
    )
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        nbformat.v4.new_code_cell(
            "from mamba_recall.notebook import setup\n"
            "ctx = setup(preset, seed, device, backend, smoke=smoke, allow_long=allow_long)"
        ),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "book" / "99_tiny" / "01_tiny.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    return path


def test_a_failing_notebook_stops_the_cli_with_its_one_line_error(tmp_path, monkeypatch):
    _tiny_notebook(tmp_path)
    monkeypatch.setattr(cli._run, "REPO_ROOT", tmp_path)  # read by execute's workers there
    with pytest.raises(cli.NotebookFailed) as info:
        cli.execute([Path("book/99_tiny/01_tiny.ipynb")], tmp_path / "out", {"preset": "ci", "seed": -3}, timeout=120)
    first, second = str(info.value.code).splitlines()
    assert first.startswith("error: book/99_tiny/01_tiny.ipynb stopped at cell")
    assert first.endswith("ParameterError: seed must be a non-negative integer, got -3.")
    assert "full traceback" in second and "Traceback" not in first


def test_a_kernel_that_does_not_start_is_started_once_more_and_then_named(tmp_path, monkeypatch, capsys):
    """Two kernels started at once can draw the same free port (zmq "Address already in use"; once in a fresh-clone
    CI of 2026-11-28): the kernel dies before any cell runs and jupyter_client says "Kernel didn't respond". The
    notebook is started once more, saying so; a second failure stops with one line."""
    import papermill

    calls = []

    def flaky(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 1:
            raise RuntimeError("Kernel didn't respond in 60 seconds")
        Path(args[1]).write_text("{}")

    monkeypatch.setattr(papermill, "execute_notebook", flaky)
    nb = Path("book/99_tiny/01_tiny.ipynb")
    assert cli._run._execute_one(nb, tmp_path, {}, None) == tmp_path / nb and len(calls) == 2
    said = capsys.readouterr().out  # tqdm.write: stdout
    assert "its kernel did not start (Kernel didn't respond in 60 seconds); starting the notebook once more" in said

    def never(*args, **kwargs):
        raise RuntimeError("Kernel died before replying to kernel_info")

    monkeypatch.setattr(papermill, "execute_notebook", never)
    with pytest.raises(
        cli.NotebookFailed, match=r"^error: book/99_tiny/01_tiny.ipynb: its kernel did not start, twice"
    ):
        cli._run._execute_one(nb, tmp_path, {}, None)

    def other(*args, **kwargs):  # any other error is the notebook's own: not retried
        calls.append("other")
        raise RuntimeError("boom")

    monkeypatch.setattr(papermill, "execute_notebook", other)
    with pytest.raises(RuntimeError, match="boom"):
        cli._run._execute_one(nb, tmp_path, {}, None)
    assert calls.count("other") == 1


def test_notebooks_run_two_at_a_time_into_a_relative_folder_and_fail_in_reading_order(tmp_path, monkeypatch):
    """``--jobs 2`` (what ``make test`` uses): each notebook from its own process (papermill changes the working
    directory while it runs one), so a relative output folder holds every executed notebook; a failure names the
    first failing notebook in reading order."""
    first = _tiny_notebook(tmp_path)
    names = [first.name, "02_tiny.ipynb", "03_tiny.ipynb"]
    for name in names[1:]:
        shutil.copy2(first, first.parent / name)
    notebooks = [Path("book/99_tiny") / n for n in names]
    monkeypatch.setattr(cli._run, "REPO_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    done = cli.execute(notebooks, Path("out"), {"preset": "ci"}, timeout=120, jobs=2)
    assert done == [(tmp_path / "out" / nb) for nb in notebooks] and all(p.is_file() for p in done)
    with pytest.raises(cli.NotebookFailed, match=r"^error: book/99_tiny/01_tiny.ipynb stopped at cell"):
        cli.execute(notebooks, Path("out2"), {"preset": "ci", "seed": -3}, timeout=120, jobs=2)


def test_book_and_batch_set_no_environment_variable():
    """No notebook depends on an environment variable to finish (the old MAMBA_RECALL_BATCH)."""
    offenders = []
    for path in [*(REPO_ROOT / "src").rglob("*.py"), REPO_ROOT / "Makefile", REPO_ROOT / ".ci" / "run"]:
        if "MAMBA_RECALL_BATCH" in path.read_text():
            offenders.append(str(path.relative_to(REPO_ROOT)))
    assert offenders == []


# --------------------------------------------------------------------------- broken bundles


def _copy_bundle(stem: str, target: Path) -> Path:
    record = json.loads((RESULTS_DIR / f"{stem}.json").read_text())
    for entry in record["tables"].values():
        shutil.copy2(RESULTS_DIR / entry["file"], target / entry["file"])
    shutil.copy2(RESULTS_DIR / f"{stem}.json", target / f"{stem}.json")
    return target / f"{stem}.json"


def test_truncated_bundle_names_its_command(tmp_path):
    path = _copy_bundle("ch1_table1_ci", tmp_path)
    text = path.read_text()
    path.write_text(text[: len(text) // 3])
    with pytest.raises(results.BundleError) as info:
        results.load_bundle("ch1_table1_ci", directory=tmp_path)
    message = str(info.value)
    assert "not valid JSON" in message and "truncated" in message
    assert message.endswith("regenerate it with: python -m mamba_recall grid ch1_table1 --preset ci --allow-long")
    assert "make reproduce" not in message


def test_bundle_truncated_before_its_command_names_the_runner(tmp_path):
    (tmp_path / "ch2_multihead_ci.json").write_text('{"sche')
    with pytest.raises(results.BundleError, match=r"python -m mamba_recall reproduce --only ch2_multihead$"):
        results.load_bundle("ch2_multihead_ci", directory=tmp_path)


def test_changed_table_names_its_command(tmp_path):
    path = _copy_bundle("ch1_table1_ci", tmp_path)
    csv = tmp_path / json.loads(path.read_text())["tables"]["accuracy"]["file"]
    csv.write_text(csv.read_text()[:-20])
    with pytest.raises(
        results.BundleError,
        match="does not match its recorded sha256; regenerate it with: python -m mamba_recall grid ch1_table1 --preset ci",
    ):
        results.load_bundle("ch1_table1_ci", directory=tmp_path)


def test_missing_bundle_says_how_to_make_it(tmp_path):
    with pytest.raises(results.BundleError, match="no result bundle at .*; make it with: `make reproduce`"):
        results.load_bundle("nothing_here_ci", directory=tmp_path)


# --------------------------------------------------------------------------- MAMBA_RECALL_CH4_CHECKPOINT


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda d: d / "missing.pt", "no such file or directory"),
        (lambda d: (d / "notes.txt").write_text("hello") and d / "notes.txt", "not a .pt checkpoint"),
        (lambda d: (d / "text.pt").write_text("hello") and d / "text.pt", "its sidecar text.json is not beside it"),
        (
            lambda d: (
                (
                    (d / "text.pt").write_text("hello"),
                    (d / "text.json").write_bytes(results.rewritten_bytes({"sha256": "0"}, sort_keys=False)),
                )
                and d / "text.pt"
            ),
            r"cannot be loaded \(checkpoint .* does not match the sha256 hash",
        ),
        (
            lambda d: (
                ((d / "text.pt").write_text("hello"), (d / "text.json").write_text('{"sha256": "0"}')) and d / "text.pt"
            ),
            r"cannot be loaded \(checkpoint sidecar .* carries no content hash",
        ),
    ],
)
def test_bad_ch4_checkpoint_variable_names_variable_path_and_what_is_valid(tmp_path, monkeypatch, make, problem):
    from mamba_recall.chapters.ch4_primacy_recency.pipelines import primacy as A

    path = make(tmp_path)
    monkeypatch.setenv(A.ENV_CHECKPOINT, str(path))
    with pytest.raises(A.CheckpointEnvError, match=problem) as info:
        A.load_model("s_small")
    message = str(info.value)
    assert message.startswith(f"MAMBA_RECALL_CH4_CHECKPOINT={path}: ")
    assert "a .pt written by `python -m mamba_recall.chapters.ch4_primacy_recency.runners.train`" in message
    assert "save_pretrained directory" in message and "unset MAMBA_RECALL_CH4_CHECKPOINT" in message
    assert "--model s_small" not in message and "\n" not in message


# --------------------------------------------------------------------------- the long-run guard


def test_grid_over_an_hour_stops_before_any_cell_with_the_estimate():
    started = []
    with pytest.raises(longrun.LongRunError) as info:
        grid = longrun.guard_grid("toy grid", list(range(24)), probe=lambda cell: 2.0, steps=lambda cell: 4000)
        for cell in grid:
            started.append(cell)
    message = str(info.value)
    assert started == []
    assert message.startswith("toy grid: estimated at least ")
    assert "allow_long=True" in message and "-p allow_long True" in message and "--allow-long" in message


def test_allowed_grid_runs_with_a_progress_bar(capsys):
    with context.run_context(allow_long=True):
        grid = longrun.guard_grid("toy grid", [1, 2, 3], probe=lambda cell: 2.0, steps=lambda cell: 4000)
        assert list(grid) == [1, 2, 3]
    assert "toy grid: estimated 6.7 h on cpu (3 cells)" in capsys.readouterr().out


def test_short_grid_runs_silently():
    assert longrun.guard_grid("toy", [1, 2], probe=lambda c: 0.01, steps=lambda c: 10) == [1, 2]


def test_setup_enters_the_kernels_run_context():
    setup("ci", device="cpu", quiet=True, allow_long=True)
    assert longrun.long_runs_allowed() and os.environ[context.ENV_ALLOW_LONG] == "1"  # its processes inherit it
    setup("ci", device="cpu", quiet=True, smoke=True)
    assert not longrun.long_runs_allowed() and results.smoke_active()
    setup("ci", device="cpu", quiet=True)
    assert context.current() == context.RunContext() and context.ENV_ALLOW_LONG not in os.environ


def test_training_loop_stops_a_long_budget_after_its_probe_steps(monkeypatch):
    from mamba_recall.train import train

    monkeypatch.setattr(longrun, "LONG_RUN_S", 1e-6)
    model = torch.nn.Sequential(torch.nn.Embedding(5, 4), torch.nn.Linear(4, 5))
    batch = (torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(longrun.LongRunError, match=r"train \(1000000 steps\): estimated .* over an hour"):
        train(model, lambda step: batch, steps=1_000_000, progress=False)
    with context.run_context(allow_long=True):
        assert train(model, lambda step: batch, steps=5, progress=False).steps_run == 5


def test_table1_paper_grid_on_cpu_is_refused(monkeypatch):
    """Chapter 1's Table 1 at the paper preset on a CPU (about 4.6 h live) stops with its estimate."""
    from mamba_recall.chapters.ch1_gradient_dynamics.training import table1

    monkeypatch.setattr(table1, "probe_cell", lambda *a, **k: 1.0)  # 1 s per step, measured on a real CPU
    with pytest.raises(
        longrun.LongRunError,
        match=r"Table 1 grid \(24 cells, up to 4000 steps each\): estimated "
        r"at least .* on cpu, over an hour; not started",
    ):
        table1.run_table(experiment("ch1_table1", "paper"), device="cpu")


# --------------------------------------------------------------------------- the smoke cap


def _leaves(value, path=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    else:
        yield path, value


@pytest.mark.parametrize("preset", PRESETS)
def test_smoke_keeps_the_structure_and_caps_the_work(preset):
    for name in EXPERIMENTS:
        full, smoke = experiment(name, preset), experiment(name, preset, smoke=True)
        full_leaves, smoke_leaves = dict(_leaves(full)), dict(_leaves(smoke))
        assert full_leaves.keys() == smoke_leaves.keys(), name
        for path, value in smoke_leaves.items():
            key, original = path[-1], full_leaves[path]
            if key in ("steps", "epochs"):
                assert value <= SMOKE_STEPS, (name, path)
            if isinstance(original, list) and original and all(isinstance(v, str) for v in original):
                assert value == original, (name, path)  # names (models, patterns, tasks) are kept whole
            if isinstance(original, list) and len(original) > 2 and isinstance(value, list):
                assert value[0] == original[0] and len(value) <= len(original), (name, path)


def test_smoke_examples():
    table1 = experiment("ch1_table1", "paper", smoke=True)
    assert table1["seq_lens"] == [128, 512] and table1["num_keys"] == [1, 4] and table1["steps"] == 4
    assert table1["train_size"] == 16 and table1["batch_size"] == 8
    scaling = experiment("ch2_scaling", "paper", smoke=True)
    assert scaling["regimes"] == experiment("ch2_scaling", "paper")["regimes"]  # (V, N_f, L) triples: not axes
    assert experiment("ch1_table1", "paper")["steps"] == 4000  # the uncapped sizes are untouched


def test_smoke_runs_never_write_into_results(tmp_path):
    setup("paper", device="cpu", smoke=True, quiet=True)
    path = results.save_bundle("zz_smoke_probe", {}, {}, command="x")
    try:
        assert RESULTS_DIR.resolve() not in path.resolve().parents
        assert "_build" in path.parts and not (RESULTS_DIR / "zz_smoke_probe.json").exists()
    finally:
        path.unlink()
    setup("ci", device="cpu", quiet=True)
    assert results.save_bundle("zz_probe", {}, {}, command="x", directory=tmp_path).parent == tmp_path


# --------------------------------------------------------------------------- explorers never block a batch run


def test_explorer_draws_its_default_view_and_nothing_else_until_a_person_acts():
    import ipywidgets as w

    from mamba_recall.widgets import explorer

    calls = []
    ex = explorer(lambda a, b: calls.append((a, b)), {"a": w.IntSlider(value=1), "b": w.Dropdown(options=["x", "y"])})
    assert calls == [(1, "x")] and ex.output.outputs == ()
    ex.controls["a"].value = 2
    assert calls[-1] == (2, "x")

    calls.clear()
    ex = explorer(lambda a: calls.append(a), {"a": w.IntSlider(value=1)}, default_view=False, button="train")
    ex.controls["a"].value = 3
    assert calls == []  # waits for the button
    ex.button.click()
    assert calls == [3]


def test_explorer_notebook_finishes_under_plain_papermill(tmp_path):
    """The regime explorer of Chapter 1 used to deadlock papermill (it wrote into an ipywidgets.Output while its
    cell ran). Every explorer now draws its default view and returns; nothing writes into an Output until a
    person acts, so a notebook of explorers finishes under plain papermill."""
    import papermill

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from mamba_recall.notebook import setup\nctx = setup('ci', device='cpu')\n"
            "from mamba_recall.widgets import scan_explorer\nscan_explorer()\n"
            "from mamba_recall.presets import experiment\n"
            "from mamba_recall.chapters.ch1_gradient_dynamics.views import regime_explorer\n"
            "regime_explorer(experiment('ch1_k1', 'ci'), steps=50)"
        )
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    papermill.execute_notebook(
        str(tmp_path / "in.ipynb"),
        str(tmp_path / "out.ipynb"),
        kernel_name="python3",
        progress_bar=False,
        execution_timeout=120,
    )
    outputs = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs
    assert sum(cli.WIDGET_VIEW in o.get("data", {}) for o in outputs) == 2


# --------------------------------------------------------------------------- checked outputs (the book pass)


def test_check_outputs_compares_marked_cells_like_nbval_lax(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    checked = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint('a')")
    checked.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a\n")]
    free = nbformat.v4.new_code_cell("print(1)")
    free.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    nb.cells = [checked, free]
    (tmp_path / "book").mkdir()
    nbformat.write(nb, tmp_path / "book" / "x.ipynb")
    monkeypatch.setattr(cli._outputs, "REPO_ROOT", tmp_path)  # read by check_outputs there
    run = tmp_path / "run"
    (run / "book").mkdir(parents=True)
    free.outputs[0]["text"] = "2\n"  # unchecked cell: may differ
    checked.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="a"),
        nbformat.v4.new_output("stream", name="stdout", text="\n"),
    ]  # split stream: same output
    nbformat.write(nb, run / "book" / "x.ipynb")
    assert cli.check_outputs(run, [Path("book/x.ipynb")]) == []
    checked.outputs = [nbformat.v4.new_output("stream", name="stdout", text="b\n")]
    nbformat.write(nb, run / "book" / "x.ipynb")
    [problem] = cli.check_outputs(run, [Path("book/x.ipynb")])
    assert problem.startswith("book/x.ipynb, cell 0: output differs from the committed one (stdout:")


def test_missing_paper_bundle_names_the_paper_run(tmp_path):
    with pytest.raises(
        results.BundleError,
        match=r"make it with: python -m mamba_recall reproduce --preset paper "
        r"--only ch1_table1$",
    ):
        results.load_bundle("ch1_table1_paper", directory=tmp_path)
