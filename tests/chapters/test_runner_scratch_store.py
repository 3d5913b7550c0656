"""Every runner, run on a scratch run store (``--store X``), leaves the committed results alone: its bundles go
beside that store, and no committed bundle, table or checkpoint is rewritten (issue 50: Chapter 3's runners dropped
the store their jobs were counted in and rewrote ``results/ch3_keep_nth_ci.*`` and the committed KEEP n-TH
checkpoint). One test over every runner of every chapter, not one per chapter: a runner added later is covered."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mamba_recall.paths import REPO_ROOT
from mamba_recall.runners import experiment_runners
from mamba_recall.runstore import GridStatus, save_grid_bundle

#: The driver runs in one interpreter (one import of torch for all runners): ``--preset ci --aggregate-only --store
#: <scratch>`` for each runner; a runner without run-store options says so (argparse exit 2) and is listed as such.
_DRIVER = textwrap.dedent(
    """
    import contextlib, io, json, runpy, sys
    from mamba_recall.runners import experiment_runners, runner_module
    out, store = {}, sys.argv[1]
    for name in experiment_runners():
        for preset in ("ci", "cpu-hours"):  # each preset a runner has (some have no ci grid, some no store)
            err = io.StringIO()
            sys.argv = [name, "--preset", preset, "--aggregate-only", "--store", store]
            try:
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    runpy.run_module(runner_module(name), run_name="__main__")
                said = "ran"
            except SystemExit as e:
                text = err.getvalue() + str(e.code)
                if e.code in (0, None):  # a runner whose main ends in raise SystemExit(main()) and succeeded
                    said = "ran"
                elif "unrecognized arguments" in text:
                    said = "no store option"
                elif "invalid choice" in text or "trains nothing at --preset" in text:
                    said = "no such preset"
                elif "has no run-store grid at preset" in text:  # a grid command under a runner's name
                    said = "no such preset"
                elif "by name: python -m mamba_recall grid " in text:  # a declared experiment's own command
                    said = "declared experiment"
                else:
                    said = f"exit: {text[-300:]}"
            out[f"{name} {preset}"] = said
    print(json.dumps(out))
    """
)


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


def test_no_runner_on_a_scratch_store_rewrites_committed_results(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "results", root / "results")
    shutil.copy2(REPO_ROOT / "_toc.yml", root / "_toc.yml")
    scratch = tmp_path / "scratch" / "runs"
    shutil.copytree(REPO_ROOT / "results" / "runs", scratch)
    before = _tree(root / "results")
    env = {**os.environ, "MAMBA_RECALL_ROOT": str(root), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(scratch)], env=env, capture_output=True, text=True, check=True, timeout=600
    )
    said = json.loads(done.stdout.strip().splitlines()[-1])
    failed = {
        n: s for n, s in said.items() if s not in ("ran", "no store option", "no such preset", "declared experiment")
    }
    assert not failed, failed
    ran = {n.split()[0] for n, s in said.items() if s == "ran"}
    # every runner ran on the scratch store at one preset at least, or has no run-store options at all
    storeless = {n.split()[0] for n, s in said.items() if s == "no store option"}
    assert ran | storeless == set(experiment_runners()) and not ran & storeless, said
    # every chapter with run-store runners is exercised (Chapter 3's three among them)
    assert {"ch3_induction", "ch3_keep_nth", "ch3_mqar_train"} <= set(ran), said
    assert {n.split("_")[0] for n in ran} >= {"ch1", "ch2", "ch3", "ch4", "ch5"}, said
    after = _tree(root / "results")
    changed = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    added = sorted(after.keys() - before.keys())
    assert not changed and not added, f"committed results rewritten: {changed}; added: {added}"
    assert list((tmp_path / "scratch").glob("ch3_keep_nth_ci.json")), "the scratch store's bundle goes beside it"


def test_a_status_copied_into_a_plain_dict_is_refused_not_written_to_results(tmp_path):
    """The cause, closed for every caller: a plain-dict copy of the status has forgotten its store, so
    ``save_grid_bundle`` refuses it rather than default to the committed results folder."""
    status = GridStatus(jobs_finished=1, jobs_total=1, runs={"wall_seconds": 1.0})
    status.store = tmp_path / "runs"
    with pytest.raises(TypeError, match="GridStatus.with_fields"):
        save_grid_bundle("x_ci", {"n_runs": 1, **status}, {}, command="c", tables={})
    kept = status.with_fields(n_runs=1)
    assert list(kept) == ["n_runs", "jobs_finished", "jobs_total", "runs"] and kept.store == status.store
