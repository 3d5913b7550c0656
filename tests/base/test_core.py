"""Results bundles, presets, notebook parameters, scorecard and CLI: behaviour and error messages."""

import json

import nbformat
import pandas as pd
import pytest
import torch

from mamba_recall import cli
from mamba_recall.notebook import ParameterError, setup
from mamba_recall.presets import PresetError, experiment
from mamba_recall.results import BundleError, load_bundle, rewritten_bytes, save_bundle


def test_bundle_roundtrip_with_provenance(tmp_path):
    table = pd.DataFrame({"backend": ["reference", "chunked"], "seconds": [1.5, 0.02]})
    path = save_bundle(
        "demo", {"ratio": 75.0}, {"L": 512}, command="make reproduce", tables={"timings": table}, directory=tmp_path
    )
    bundle = load_bundle(path, data_keys=("ratio",))
    assert bundle.data == {"ratio": 75.0} and bundle.config == {"L": 512}
    assert set(bundle.provenance) >= {"git_commit", "device", "versions", "created"}
    assert bundle.provenance["versions"]["torch"] == torch.__version__
    pd.testing.assert_frame_equal(bundle.tables["timings"], table)


@pytest.mark.parametrize(
    "corrupt, message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"schema": "mamba_recall.bundle"}), "carries no content hash"),
        # hashed as the library writes, but no schema version: the field is named
        (rewritten_bytes({"schema": "mamba_recall.bundle"}).decode(), "field 'schema_version' is missing"),
    ],
)
def test_corrupt_bundle_says_what_and_how_to_fix(tmp_path, corrupt, message):
    (tmp_path / "bad.json").write_text(corrupt)
    with pytest.raises(BundleError, match=message) as err:
        load_bundle(tmp_path / "bad.json")
    assert "regenerate" in str(err.value) or "make reproduce" in str(err.value)


def test_bundle_missing_data_table_and_file(tmp_path):
    path = save_bundle(
        "demo", {"a": 1}, {}, command="python -m x", tables={"t": pd.DataFrame({"x": [1]})}, directory=tmp_path
    )
    with pytest.raises(BundleError, match=r"lacks data \['b'\].*python -m x"):
        load_bundle(path, data_keys=("b",))
    (tmp_path / "demo.t.csv").write_text("x\n2\n")
    with pytest.raises(BundleError, match="does not match its recorded sha256"):
        load_bundle(path)
    with pytest.raises(BundleError, match="no result bundle"):
        load_bundle("nothing_here", directory=tmp_path)


def test_committed_bundles_load():
    bundle = load_bundle("scan_bench_cpu", data_keys=("acceptance",))
    assert {"timings", "ratios"} <= set(bundle.tables)
    from mamba_recall import manifest
    from mamba_recall.results import RESULTS_DIR

    # every committed bundle of the results manifest: hashes match, name = file stem
    for path in [RESULTS_DIR / f"{e.name}.json" for e in manifest.load() if e.kind == "bundle"]:
        loaded = load_bundle(path)
        assert loaded.name == path.stem
        for preset in ("ci", "paper"):  # a preset-named bundle holds that preset's run
            if path.stem.endswith(f"_{preset}"):
                assert loaded.config.get("preset", preset) == preset, path.name


def test_presets_and_notebook_parameters():
    assert experiment("ch0_agreement", "ci")["lengths"]
    with pytest.raises(PresetError, match="unknown preset 'full'.*'ci'.*'paper'"):
        experiment("ch0_agreement", "full")
    with pytest.raises(PresetError, match="unknown experiment"):
        experiment("nope", "ci")
    with pytest.raises(ParameterError, match="unknown preset"):
        setup("tiny", quiet=True)
    with pytest.raises(ParameterError, match="unknown backend 'fast'"):
        setup("ci", backend="fast", quiet=True)
    with pytest.raises(ParameterError, match="unknown device"):
        setup("ci", device="tpu", quiet=True)
    with pytest.raises(ParameterError, match="seed must be a non-negative integer"):
        setup("ci", seed=-1, quiet=True)
    if not torch.cuda.is_available():
        with pytest.raises(ParameterError, match="no CUDA device"):
            setup("ci", device="cuda", quiet=True)
    ctx = setup("ci", seed=3, device="cpu", backend="auto", quiet=True)
    assert ctx.backend == "fused" and ctx.device.type == "cpu"  # scan.resolve_backend's CPU rule
    a = torch.rand(3)
    setup("ci", seed=3, device="cpu", quiet=True)
    assert torch.equal(a, torch.rand(3))


def test_cli_chapters_and_errors():
    notebooks = cli.toc_notebooks()
    assert notebooks and all(nb.suffix == ".ipynb" for nb in notebooks)
    assert (
        cli.chapter_notebooks("0")
        == cli.chapter_notebooks("00_selective_scan")
        == cli.chapter_notebooks("selective_scan")
    )
    with pytest.raises(SystemExit, match="unknown chapter '9'"):
        cli.chapter_notebooks("9")
    with pytest.raises(SystemExit):
        cli.main(["run", "0", "--preset", "huge"])


def test_refresh_merges_split_stream_outputs():
    from mamba_recall.cli import coalesce_streams

    outs = [
        {"output_type": "stream", "name": "stdout", "text": "G1: "},
        {"output_type": "stream", "name": "stdout", "text": "True\n"},
        {"output_type": "stream", "name": "stderr", "text": "warn\n"},
        {"output_type": "execute_result", "data": {}, "metadata": {}, "execution_count": 1},
        {"output_type": "stream", "name": "stdout", "text": "x\n"},
    ]
    merged = coalesce_streams(outs)
    assert [o.get("text") for o in merged] == ["G1: True\n", "warn\n", None, "x\n"]


def test_reproduce_runs_dependent_runners_after_their_inputs():
    from mamba_recall.cli import experiment_runners

    runners = experiment_runners()
    assert runners.index("ch4_train") < runners.index("ch4_model_checks")


def test_book_copy_of_a_dataframe_breaks_long_headers_at_underscores(tmp_path):
    """The HTML book's copy of a DataFrame output gets a break opportunity after each ``_`` of its header cells
    (long column names wrap at their words and the table fits the page); body cells are left alone."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("df")
    html = '<table class="dataframe"><thead><tr><th>best_accuracy_ci_high</th></tr></thead><tbody><tr><td>a_b</td></tr></tbody></table>'
    cell.outputs = [
        nbformat.v4.new_output("execute_result", data={"text/html": html, "text/plain": "x"}, execution_count=1)
    ]
    nb.cells = [cell]
    nbformat.write(nb, tmp_path / "nb.ipynb")
    cli.clean_for_book(tmp_path / "nb.ipynb")
    out = nbformat.read(tmp_path / "nb.ipynb", as_version=4).cells[0].outputs[0]["data"]["text/html"]
    assert "<th>best_<wbr>accuracy_<wbr>ci_<wbr>high</th>" in out and "<td>a_b</td>" in out
