"""Fault injected into a notebook's parameters: a seed outside what the seeding accepts (``-p seed 4294967296``)
stops the notebook at ``setup`` with one line naming the parameter, the value and the range, not with NumPy's
ValueError and a traceback. The notebooks are temporary ones (never the committed ``book/``)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from mamba_recall import cli
from mamba_recall.notebook import SEED_LIMIT, ParameterError, check_seed, setup


@pytest.mark.parametrize("seed", [2**32, 2**32 + 7, 2**64, 10**30])
def test_out_of_range_seed_stops_setup_with_one_line(seed):
    """Before: setup accepted any non-negative int, and ``np.random.seed`` then raised "Seed must be between 0 and
    2**32 - 1" from inside ``seed_everything`` (a ValueError with a traceback, after the run context was set)."""
    with pytest.raises(ParameterError) as info:
        setup("ci", seed=seed, device="cpu", quiet=True)
    message = str(info.value)
    assert message.startswith(f"seed must be in [0, 2**32) = [0, {SEED_LIMIT - 1}]")
    assert f"got seed={seed}" in message and f"-p seed {seed % 2**32}" in message and "\n" not in message


def test_seed_range_edges():
    check_seed(0)
    check_seed(SEED_LIMIT - 1)
    with pytest.raises(ParameterError, match="got seed=4294967296"):
        check_seed(SEED_LIMIT)
    with pytest.raises(ParameterError, match="seed must be a non-negative integer, got -1"):
        check_seed(-1)


def _seeded_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('preset = "ci"\nseed = 0\ndevice = "cpu"\nbackend = "auto"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        nbformat.v4.new_code_cell(
            "from mamba_recall.notebook import setup\nctx = setup(preset, seed, device, backend)"
        ),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "book" / "99_seed" / "01_seed.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    return path


def test_papermill_seed_parameter_out_of_range_gives_one_line(tmp_path, monkeypatch):
    """``-p seed 4294967296`` through the notebooks' own runner: the error is setup's one line (ParameterError,
    shown without a traceback), naming seed, the value and the range."""
    _seeded_notebook(tmp_path)
    monkeypatch.setattr(cli._run, "REPO_ROOT", tmp_path)
    monkeypatch.setenv("MAMBA_RECALL_SCORECARD_DIR", str(tmp_path / "scorecard"))
    with pytest.raises(cli.NotebookFailed) as info:
        cli.execute([Path("book/99_seed/01_seed.ipynb")], tmp_path / "out", {"seed": 4294967296}, timeout=120)
    first = str(info.value.code).splitlines()[0]
    assert "ParameterError: seed must be in [0, 2**32)" in first and "got seed=4294967296" in first, first
    executed = nbformat.read(tmp_path / "out" / "book" / "99_seed" / "01_seed.ipynb", as_version=4)
    errors = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1 and len(errors[0].traceback) == 1, errors
