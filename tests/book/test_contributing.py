"""The contributing page's worked example, followed as written: in a temporary copy of the repository (the library,
the two fingerprint scripts and the open review), every block of ``book/contributing.md`` marked
``<!-- contributing: ... -->`` is applied to the file it names (a line replaced, a block put before or after a line),
the copy is committed, and the page's commands run in their order (in one Python process, one after another, each
as ``python`` would run it: ``-m`` a module, ``-c`` a string, or a script, with its own ``sys.argv``; the library is
imported once, which keeps the test within 30 s on 2 cores). Then the registry, ``plan`` and the scorecard see the
new experiment and claim, the claim reads *reproduced* from the bundle the grid wrote, both fingerprints list them,
and the open review names the claim as not yet refereed. The test counts the files the example edits, so the page's
"two files plus the notebook" cannot drift from the code either."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from mamba_recall.paths import REPO_ROOT

PAGE = REPO_ROOT / "book" / "contributing.md"
STEP = re.compile(r"<!-- contributing: (?P<what>.+?) -->\n```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)
EDIT = re.compile(r'(?P<path>\S+), (?:(?P<where>replace|before|after) the line "(?P<line>.+)"|(?P<end>at the end))')
CLAIM, EXPERIMENT = "000/Sec2.2-orthogonality", "ch1_orthogonality"
#: what the example copies besides src/: the scripts its commands run and the data they read or rewrite
COPIED = (
    "_toc.yml",
    "tests/base/test_registry_fingerprint.py",
    "tests/data/registry_fingerprint.json",
    "tests/presets/test_preset_fingerprint.py",
    "tests/presets/preset_fingerprint.json",
    "results/review",
    "book/appendix_review.md",
)


def steps() -> list[tuple[str, str]]:
    """The page's marked blocks, in its order: (what the marker says, the block's text)."""
    return [(m["what"], m["body"]) for m in STEP.finditer(PAGE.read_text())]


def _apply(root: Path, what: str, body: str) -> str:
    """Apply one marked block to the copy at ``root``; the file it edits (relative to the repository)."""
    m = EDIT.fullmatch(what)
    assert m, f"a contributing marker the test does not know: {what!r}"
    path = root / m["path"]
    text = path.read_text()
    if m["end"]:  # two blank lines between the file's last statement and the block
        path.write_text(text.rstrip("\n") + "\n\n\n" + body)
        return m["path"]
    line = m["line"] + "\n"
    assert text.count(line) == 1, f"the page edits at {m['line']!r}, which {m['path']} holds {text.count(line)} times"
    new = {"replace": body, "before": body + line, "after": line + body}[m["where"]]
    path.write_text(text.replace(line, new, 1))
    return m["path"]


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


#: runs the page's commands (JSON list, argv[1]) one after another in this process, as ``python`` would run each,
#: then the check of what the registry, plan and the scorecard see (argv[2]); prints one JSON line per command
_DRIVER = """
import contextlib, io, json, runpy, shlex, sys
for command in json.loads(sys.argv[1]) + [sys.argv[2]]:
    words, out, rc = shlex.split(command)[1:], io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            if words[0] == "-m":
                sys.argv = [words[1], *words[2:]]
                runpy.run_module(words[1], run_name="__main__", alter_sys=True)
            elif words[0] == "-c":
                sys.argv = ["-c", *words[2:]]
                exec(compile(words[1], "<string>", "exec"), {"__name__": "__main__"})
            else:
                sys.argv = words
                runpy.run_path(words[0], run_name="__main__")
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    print(json.dumps({"command": command, "rc": rc, "out": out.getvalue()}), flush=True)
"""


def test_the_example_edits_two_files_and_names_the_notebook():
    edited = {EDIT.fullmatch(what)["path"] for what, _ in steps() if not what.startswith("run")}
    assert edited == {
        "src/mamba_recall/chapters/ch1_gradient_dynamics/experiments.py",
        "src/mamba_recall/chapters/ch1_gradient_dynamics/claims/task_and_model.py",
    }
    page = PAGE.read_text()
    assert f'check("{CLAIM}")' in page and "book/01_gradient_dynamics/01_task_and_model.ipynb" in page
    runs = [what for what, _ in steps() if what.startswith("run")]
    assert runs == ["run", "run", "run, exits 1"]


def test_a_claim_with_its_experiment_as_the_page_says(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for rel in COPIED:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (REPO_ROOT / rel).is_dir() else shutil.copy2)(REPO_ROOT / rel, root / rel)
    (root / "results" / "runs").mkdir(parents=True)
    commands: list[tuple[str, int]] = []
    for what, body in steps():
        if what.startswith("run"):
            rc = 1 if what == "run, exits 1" else 0
            commands += [(line, rc) for line in body.splitlines() if line.strip() and not line.startswith("#")]
        else:
            _apply(root, what, body)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a claim with its experiment")
    env = {
        **os.environ,
        "MAMBA_RECALL_ROOT": str(root),
        "PYTHONPATH": str(root / "src"),
        "MAMBA_RECALL_SCORECARD_DIR": str(tmp_path / "scorecard"),
        "OMP_NUM_THREADS": "1",
    }
    assert all(command.startswith("python ") for command, _ in commands), commands
    seen_command = f"python -c {shlex.quote(_SEEN)}"
    driver = [sys.executable, "-c", _DRIVER, json.dumps([c for c, _ in commands]), seen_command]
    done = subprocess.run(driver, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ran = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"command"')]
    assert [r["command"] for r in ran] == [c for c, _ in commands] + [seen_command], done.stdout
    for r, (command, rc) in zip(ran, commands):
        assert r["rc"] == rc, f"{command} exited {r['rc']}, the page says {rc}:\n{r['out']}"
    out = {r["command"]: r["out"] for r in ran}

    # the grid ran its jobs through the store and wrote the bundle in the one layout, from a clean commit
    keys = sorted(p.stem for p in (root / "results" / "runs" / EXPERIMENT).glob("*.json"))
    assert len(keys) == 6, out
    bundle = json.loads((root / "results" / f"{EXPERIMENT}_ci.json").read_text())
    assert bundle["data"]["complete"] and sorted(bundle["data"]["run_keys"]) == keys
    # the registry, plan, the verdict and the scorecard see them; check recorded the verdict the scorecard shows
    assert ran[-1]["rc"] == 0, ran[-1]["out"]
    assert json.loads(ran[-1]["out"]) == {
        "experiment": True,
        "claim_section": "01_gradient_dynamics/01_task_and_model",
        "plan": [EXPERIMENT, 6, 0, True],
        "status": "reproduced",
        "evidence": ["ci", 3, f"results/{EXPERIMENT}_ci.json"],
        "scorecard": True,
        "reproduce": [["-m", "mamba_recall", "grid", EXPERIMENT, "--preset", "ci", "--allow-long"]],
    }
    # the manifest lists the bundle (and make reproduce would rerun its grid, the seen dict above); the dataset
    # has its runs; both fingerprints were rewritten with the new claim and grid
    entries = {e["name"]: e for e in json.loads((root / "results" / "manifest.json").read_text())["entries"]}
    entry = entries[f"{EXPERIMENT}_ci"]
    assert entry["clean"] is True and entry["runner"] == EXPERIMENT
    assert entry["command"] == f"python -m mamba_recall grid {EXPERIMENT} --preset ci --allow-long"
    assert "ch1_orthogonality" in (root / "results" / "dataset" / "DATACARD.md").read_text()
    assert CLAIM in json.loads((root / "tests/data/registry_fingerprint.json").read_text())
    assert f"{EXPERIMENT}/ci" in json.loads((root / "tests/presets/preset_fingerprint.json").read_text())["jobs"]
    # the page's second command prints the verdict's status, as the page says
    (printed,) = [o for c, o in out.items() if c.startswith("python -c") and "check(" in c and c != seen_command]
    assert printed.strip().splitlines()[-1] == "reproduced", printed
    # the open review lists the claim as not refereed (the page's last step: a referee's entry)
    assert f"{CLAIM}: no review entry (results/review/000.json)" in out["python -m mamba_recall.claims.review"]


#: run in the copy after the page's commands: what the registry, plan, the verdict and the scorecard show
_SEEN = f"""
import json
from mamba_recall import claims, manifest, plan
from mamba_recall.claims import render
from mamba_recall.experiment import experiments

table = plan.plan("ci", log=lambda *a: None).set_index("experiment")
row = table.loc["{EXPERIMENT}"]
verdicts = {{v.claim_id: v for v in render.verdicts_for(1)}}
print(json.dumps({{
    "experiment": "{EXPERIMENT}" in [e.name for e in experiments()],
    "claim_section": claims.get("{CLAIM}").section,
    "plan": [row.bundle.removesuffix("_ci"), int(row.jobs), int(row.left), bool(row.committed)],
    "status": verdicts["{CLAIM}"].status,
    "evidence": [verdicts["{CLAIM}"].evidence[k] for k in ("tier", "seeds", "source")],
    "scorecard": "{CLAIM}" in render.scorecard_page(),
    "reproduce": [manifest.checked_argv(r, c) for c, r in manifest.reproduce_runs(manifest.load(), []) if r],
}}))
"""


def test_every_other_grid_command_on_the_page_names_a_declared_experiment():
    from mamba_recall.experiment import experiments

    named = set(re.findall(r"python -m mamba_recall grid (\w+)", PAGE.read_text())) - {EXPERIMENT}
    assert named and named <= {e.name for e in experiments()}, named


def test_the_example_s_library_calls_refuse_what_they_cannot_do():
    """What the example leans on says so when it is misused: sizes at a preset the experiment lacks, and a
    manifest entry whose grid command names no declared experiment (``make reproduce`` runs nothing of it)."""
    from mamba_recall import manifest
    from mamba_recall.experiment import sizes_at
    from mamba_recall.presets.sizes import COUNT, Sizes, size

    @dataclass(frozen=True, kw_only=True)
    class One(Sizes):
        seeds: int = size(COUNT)

    sizes = {"ci": One(seeds=3)}
    assert sizes_at(sizes, "ci") == {"seeds": 3}
    with pytest.raises(ValueError, match="no sizes at preset 'paper'; this experiment has ci"):
        sizes_at(sizes, "paper")
    run = {"module": "mamba_recall", "args": ["grid", "ch9_nothing", "--preset", "ci"]}
    with pytest.raises(manifest.ManifestError, match=r"grid names no declared experiment \(ch9_nothing\)"):
        manifest.checked_argv(run, "ch9_nothing_ci")
    run["args"][1] = "ch2_trained_dn"
    assert manifest.checked_argv(run) == ["-m", "mamba_recall", "grid", "ch2_trained_dn", "--preset", "ci"]
    assert manifest.parse_command("python -m mamba_recall grid ch2_trained_dn --preset ci") == (
        "ch2_trained_dn",
        {"--preset": ("ci",)},
    )
