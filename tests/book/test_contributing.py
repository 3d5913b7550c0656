"""The contributing page's worked example, followed as written: in a temporary copy of the repository, every block
of ``book/contributing.md`` marked ``<!-- contributing: ... -->`` is applied to the file it names (a new file, an
insertion after a line, an addition at the end), the copy is committed, the page's commands run, and the toy
claim reads *reproduced* from the bundle the toy runner wrote, which the results manifest then lists."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from mamba_recall.paths import REPO_ROOT

PAGE = REPO_ROOT / "book" / "contributing.md"
STEP = re.compile(r"<!-- contributing: (?P<what>.+?) -->\n```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)


def steps() -> list[tuple[str, str]]:
    return [(m["what"], m["body"]) for m in STEP.finditer(PAGE.read_text())]


def _apply(root: Path, what: str, body: str) -> None:
    if what.startswith("new file "):
        path = root / what.removeprefix("new file ")
        assert not path.exists(), f"the page's new file {path} exists already"
        path.write_text(body)
    elif what.startswith("append to "):
        path = root / what.removeprefix("append to ")
        path.write_text(path.read_text() + body)
    elif what.startswith("insert into "):
        target, after = re.fullmatch(r'insert into (\S+) after "(.+)"', what).groups()
        path = root / target
        text = path.read_text()
        line = after + "\n"
        assert text.count(line) == 1, f"the page inserts after {after!r}, which {target} holds {text.count(line)} times"
        path.write_text(text.replace(line, line + body, 1))
    else:
        raise AssertionError(f"unknown step on the contributing page: {what!r}")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_the_page_has_the_four_steps():
    kinds = [what.split(" ")[0] for what, _ in steps()]
    assert kinds == ["append", "new", "new", "append", "run"]


def test_a_toy_claim_with_its_preset_and_runner_as_the_page_says(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy2(REPO_ROOT / "_toc.yml", root / "_toc.yml")
    (root / "results").mkdir()
    commands = []
    for what, body in steps():
        if what == "run":
            commands += [line for line in body.splitlines() if line.strip()]
        else:
            _apply(root, what, body)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the toy claim")
    env = {
        **os.environ,
        "MAMBA_RECALL_ROOT": str(root),
        "PYTHONPATH": str(root / "src"),
        "MAMBA_RECALL_SCORECARD_DIR": str(tmp_path / "scorecard"),
        "OMP_NUM_THREADS": "1",
    }
    outputs = []
    for command in commands:
        assert command.startswith("python "), command
        done = subprocess.run(
            [sys.executable, *shlex.split(command.removeprefix("python "))],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
    assert len(list((root / "results" / "runs" / "ch2_toy").glob("*.json"))) == 3
    assert outputs[1].strip() == "reproduced"
    assert "results manifest: 1 entries" in outputs[2]
    (entry,) = json.loads((root / "results" / "manifest.json").read_text())["entries"]
    assert entry["name"] == "ch2_toy_ci" and entry["runner"] == "ch2_toy" and entry["clean"] is True
