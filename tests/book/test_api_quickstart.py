"""The API page's quickstart (``book/api.md``, "Quickstart": scan, model, MQAR batch, training, a claim) runs as
written, from a folder that is not a checkout, and writes nothing there; the page names the fields of
``MQARBatch`` and ``TrainResult`` as the dataclasses declare them."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

from mamba_recall.tasks.mqar import MQARBatch
from mamba_recall.train import TrainResult

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "api.md"


def _quickstart() -> str:
    section = PAGE.read_text().split("## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the quickstart is one runnable python block"
    return blocks[0]


def test_the_quickstart_runs_as_written(tmp_path):
    code = _quickstart()
    for step in ("selective_scan(", "MambaLMHeadModel(", "multiquery_ar(", "train(", "claims.check("):
        assert step in code, step
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAMBA_RECALL_")}
    env["OMP_NUM_THREADS"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^20 steps, held-out accuracy \d\.\d{3}$", done.stdout, re.M), done.stdout
    assert "001/Delta1 reproduced" in done.stdout
    assert list(tmp_path.iterdir()) == []  # record=False: nothing written


def test_the_page_lists_every_field_of_mqarbatch_and_trainresult():
    page = PAGE.read_text()
    for cls, anchor in ((MQARBatch, "return an `MQARBatch`"), (TrainResult, "returns a `TrainResult`")):
        table = page.split(anchor, 1)[1].split("```{eval-rst}", 1)[0]
        rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
        listed = set(re.findall(r"`(\w+)`", " ".join(rows)))
        assert listed == {f.name for f in dataclasses.fields(cls)}, (cls.__name__, listed)
    assert "record=False" in page and 'directory="my-verdicts"' in page and "MAMBA_RECALL_SCORECARD_DIR" in page
