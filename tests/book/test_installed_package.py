"""The library after a plain ``pip install .`` (not editable), used outside a checkout, as a researcher
reusing the scans, models, tasks and claims in their own code would.

A fresh virtual environment in ``tmp_path`` gets a non-editable install of a copy of this checkout (``pip
install --no-deps --no-build-isolation``: the build writes ``build/`` into the folder it builds, so it builds
the copy and the checkout stays clean). Its dependencies (torch, numpy, ...) come from this environment: the
new venv is made with ``--system-site-packages`` and a ``.pth`` line that appends this environment's
site-packages (when this environment is itself a venv, ``--system-site-packages`` reaches only the base
Python's). A folder named by a ``.pth`` line has its own ``.pth`` files ignored, so this environment's editable
install of the checkout is not active there; each run still asserts that ``mamba_recall`` is the installed copy.

Everything then runs in subprocesses whose working directory is not a checkout, with no ``MAMBA_RECALL_*``
variable: a scan, a few training steps on MQAR, a claim checked without a committed bundle, nothing written under
site-packages, the library core importing no notebook package, and ``mamba-recall run 0`` stopping with one line
that names ``MAMBA_RECALL_ROOT``. The resolution rules themselves (``paths.find_root``) are tested in-process.
The command line as installed: every command that needs the book's files is one line without a checkout,
``--version`` works, ``run`` without the ``book`` extra names it in one line, and the fused scan caches its
compiled kernels in the user's cache folder, never under ``site-packages``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mamba_recall import paths

REPO = Path(__file__).resolve().parents[2]

#: what the book's extra brings; none of it may be imported by the library core
NOTEBOOK_PACKAGES = ("papermill", "nbformat", "nbclient", "ipywidgets", "IPython", "jupyterlab", "jupyter_client")


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAMBA_RECALL_") and k != "PYTHONPATH"}
    env.update(PYTHONNOUSERSITE="1", **extra)
    return env


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python, bin folder, site-packages, a working directory that is not a checkout) of the fresh install."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("pip is not available in this environment")
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"))
    checkout_before = sorted(p.name for p in REPO.iterdir())

    venv = root / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    outer = subprocess.run(
        [sys.executable, "-c", "import site; print('\\n'.join(site.getsitepackages()))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (site_packages / "_outer_environment.pth").write_text(outer)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-build-isolation"]
        + ["--no-input", "--disable-pip-version-check", "--quiet", str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_clean_env(),
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert sorted(p.name for p in REPO.iterdir()) == checkout_before, "the install wrote into the checkout"
    assert (site_packages / "mamba_recall" / "paths.py").is_file()
    assert not (site_packages / "mamba_recall" / "paths.py").is_symlink()

    work = root / "work"  # an ordinary folder: no _toc.yml, no results/ here or above
    work.mkdir()
    assert not any(paths.is_checkout(p) for p in (work, *work.parents))
    return python, python.parent, site_packages, work


def _run(installed, code: str, timeout: float = 240, **env) -> subprocess.CompletedProcess:
    python, _, site_packages, work = installed
    prelude = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        for name in {NOTEBOOK_PACKAGES!r}:  # the base install has none of these: any import of one fails
            sys.modules[name] = None
        import mamba_recall
        assert Path(mamba_recall.__file__).resolve().is_relative_to(Path({str(site_packages)!r}).resolve()), (
            mamba_recall.__file__
        )
        """
    )
    return subprocess.run(
        [str(python), "-c", prelude + textwrap.dedent(code)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_clean_env(**env),
    )


def test_library_works_outside_a_checkout_and_writes_nothing_beside_the_package(installed):
    _, _, site_packages, work = installed
    before = _listing(site_packages.parent)  # lib/python3.X: site-packages and where _build/ used to land
    done = _run(
        installed,
        """
        import json
        import torch
        import mamba_recall.analysis, mamba_recall.runstore, mamba_recall.results, mamba_recall.theory
        from mamba_recall import claims, paths, selective_scan, MambaLMHeadModel, multiquery_ar
        from mamba_recall.train import Stopping, train
        from mamba_recall.theory import worked_example as wx

        out = {"found": paths.CHECKOUT_FOUND, "how": paths.ROOT_FOUND_BY}
        g = torch.Generator().manual_seed(0)
        b, d, l, n = 2, 4, 8, 3
        u, delta = torch.randn(b, d, l, generator=g), torch.rand(b, d, l, generator=g)
        A = -torch.rand(d, n, generator=g)
        B, C = torch.randn(b, n, l, generator=g), torch.randn(b, n, l, generator=g)
        y = selective_scan(u, delta, A, B, C, backend="reference")
        out["scan"] = list(y.shape)
        assert torch.allclose(y, selective_scan(u, delta, A, B, C, backend="chunked"), atol=1e-5)

        torch.manual_seed(0)
        torch.set_num_threads(1)
        model = MambaLMHeadModel(16, 1, 32, d_state=4, backend="chunked")

        def make_batch(step):
            batch = multiquery_ar(32, 8, 16, seed=step, num_kv_pairs=2)
            return batch.inputs, batch.labels

        result = train(model, make_batch, steps=3, stop=Stopping(eval_every=3), eval_batch=make_batch(10**6), progress=False)
        out["steps"] = result.steps_run

        bundle = mamba_recall.results.save_bundle(
            "demo", {"steps": result.steps_run}, {"preset": "ci"}, command="demo", directory="my-bundles"
        )  # a bundle in the researcher's own folder: provenance without git
        out["bundle"] = mamba_recall.results.load_bundle("demo", directory="my-bundles").data

        verdict = claims.check("001/Delta1", wx.worked_example(), record=False)
        out["claim"] = verdict.status
        try:
            claims.check("001/Delta1", wx.worked_example())  # records: needs _build/scorecard
        except paths.NoCheckoutError as exc:
            out["record"] = str(exc)
        try:
            paths.RESULTS_DIR.exists()
        except paths.NoCheckoutError as exc:
            out["results"] = str(exc)
        print("RESULT " + json.dumps(out))
        """,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert (out["found"], out["how"]) == (False, "no checkout")
    assert out["scan"] == [2, 4, 8] and out["steps"] == 3 and out["bundle"] == {"steps": 3}
    # the same verdict as in the checkout: 001/Delta1's 0.743 for 0.7444 is a last-digit slip (Chapter 0's rule)
    from mamba_recall import claims
    from mamba_recall.theory import worked_example as wx

    assert out["claim"] == claims.check("001/Delta1", wx.worked_example(), record=False).status == "reproduced"
    for key, needed in (("record", "_build/scorecard"), ("results", "results")):
        assert needed in out[key] and "MAMBA_RECALL_ROOT=" in out[key] and "\n" not in out[key]
    assert _listing(site_packages.parent) == before, "something was written under the environment's lib folder"
    assert [p.name for p in work.iterdir()] == ["my-bundles"]


def test_explicit_root_is_used(installed, tmp_path):
    root = tmp_path / "my-results"
    done = _run(
        installed,
        """
        from mamba_recall import claims, paths
        from mamba_recall.theory import worked_example as wx

        print("ROOT", paths.REPO_ROOT, paths.ROOT_FOUND_BY, paths.RESULTS_DIR)
        claims.check("001/Delta1", wx.worked_example())
        """,
        MAMBA_RECALL_ROOT=str(root),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ROOT {root} MAMBA_RECALL_ROOT {root / 'results'}" in done.stdout
    assert (root / "_build" / "scorecard" / "001__Delta1.json").is_file()


def test_widgets_name_the_book_extra(installed):
    done = _run(installed, "import mamba_recall.widgets")
    assert done.returncode != 0
    assert "ImportError: mamba_recall.widgets needs IPython and ipywidgets" in done.stderr
    assert "pip install 'mamba_recall[book]'" in done.stderr


def test_cli_outside_a_checkout_stops_with_one_line(installed):
    _, bin_dir, _, work = installed
    script = bin_dir / ("mamba-recall.exe" if os.name == "nt" else "mamba-recall")
    before = sorted(work.iterdir())
    done = subprocess.run(
        [str(script), "run", "0"], cwd=work, capture_output=True, text=True, timeout=240, env=_clean_env()
    )
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 1
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert lines[0].startswith("error: no checkout of the Mamba recall book found for _toc.yml")
    assert "set MAMBA_RECALL_ROOT=" in lines[0]
    assert sorted(work.iterdir()) == before


# ------------------------------------------------------------------------------ the rules, in this process


def _checkout(folder: Path) -> Path:
    (folder / "results").mkdir(parents=True)
    (folder / "_toc.yml").write_text("format: jb-book\n")
    return folder


def test_find_root_order(tmp_path):
    book = _checkout(tmp_path / "book")
    (book / "book" / "ch1").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    installed_file = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "mamba_recall" / "paths.py"
    this_checkout = Path(paths.__file__)

    assert paths.find_root({"MAMBA_RECALL_ROOT": str(elsewhere)}, book, this_checkout) == (
        elsewhere,
        "MAMBA_RECALL_ROOT",
    )
    assert paths.find_root({}, elsewhere, this_checkout) == (REPO, "package checkout")
    assert paths.find_root({"MAMBA_RECALL_ROOT": ""}, book / "book" / "ch1", installed_file) == (
        book,
        "working directory",
    )
    assert paths.find_root({}, elsewhere, installed_file) == (None, "no checkout")


def test_in_the_checkout_nothing_changes():
    if os.environ.get("MAMBA_RECALL_ROOT"):
        pytest.skip("MAMBA_RECALL_ROOT is set in this environment")
    assert paths.CHECKOUT_FOUND and paths.ROOT_FOUND_BY == "package checkout"
    assert paths.REPO_ROOT == REPO and type(paths.REPO_ROOT) is type(Path())
    assert paths.RESULTS_DIR == REPO / "results" and paths.BUILD_DIR == REPO / "_build"


def test_placeholder_paths_refuse_every_file_operation(tmp_path):
    root = paths._NoCheckoutPath(paths._PLACEHOLDER)
    results = root / "results" / "runs"
    assert results.parent.name == "results" and results.resolve() == results and results.name == "runs"
    assert {results: 1}[root / "results" / "runs"] == 1
    for use in (
        results.exists,
        results.is_dir,
        lambda: results.mkdir(parents=True),
        lambda: list(results.glob("*.json")),
        lambda: (root / "_toc.yml").read_text(),
        lambda: (results / "x.json").write_text("{}"),
        lambda: open(results / "x.json", "w"),  # os.fspath: open, os, shutil, subprocess(cwd=...)
        lambda: subprocess.run([sys.executable, "-c", "pass"], cwd=root),
    ):
        with pytest.raises(paths.NoCheckoutError, match=r"set MAMBA_RECALL_ROOT=") as info:
            use()
        assert "\n" not in str(info.value) and isinstance(info.value, OSError)
        assert not isinstance(info.value, FileNotFoundError)
    # turned back into a plain path it lies under paths.py, a file: nothing can be created there
    with pytest.raises(OSError):
        Path(results).mkdir(parents=True)
    assert not Path(results).exists()


# ------------------------------------------------------------------------------ the command line, installed


def test_every_command_outside_a_checkout_is_one_line_and_version_works(installed):
    """``plan`` printed a NoCheckoutError traceback and ``manifest`` a path under ``.../paths.py/`` with a
    ``--write`` that crashed: every command that needs the book's files stops with one line naming
    MAMBA_RECALL_ROOT; ``--version`` needs none."""
    python, bin_dir, site_packages, work = installed
    script = bin_dir / ("mamba-recall.exe" if os.name == "nt" else "mamba-recall")
    before = _listing(site_packages.parent)
    for argv, needed in (
        (["plan"], "results/runs"),
        (["manifest"], "results/manifest.json"),
        (["manifest", "--write"], "results/manifest.json"),
        (["reproduce"], "results/manifest.json"),
        (["book"], "_toc.yml"),
        (["lab"], "book/"),
    ):
        done = subprocess.run(
            [str(script), *argv], cwd=work, capture_output=True, text=True, timeout=240, env=_clean_env()
        )
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        assert done.returncode == 1, (argv, lines)
        assert len(lines) == 1 and "Traceback" not in lines[0], (argv, lines)
        assert lines[0].startswith(f"error: no checkout of the Mamba recall book found for {needed} "), lines
        assert "set MAMBA_RECALL_ROOT=" in lines[0] and "paths.py" not in lines[0]
    version = subprocess.run(
        [str(python), "-m", "mamba_recall", "--version"], cwd=work, capture_output=True, text=True, env=_clean_env()
    )
    from mamba_recall import __version__

    assert version.returncode == 0 and version.stdout.strip() == f"mamba_recall {__version__}"
    assert sorted(work.iterdir()) == [] or [p.name for p in work.iterdir()] == ["my-bundles"]
    assert _listing(site_packages.parent) == before


def test_run_without_the_book_extra_names_it_in_one_line(installed):
    """``run 0`` without papermill (the ``book`` extra) gave a raw ModuleNotFoundError and a progress bar at
    33 %: the extra's modules are checked first, one line with the install command, nothing started."""
    done = _run(  # the prelude makes the notebook packages unimportable, as in a base install
        installed,
        """
        import sys
        del sys.modules["nbformat"]  # a base dependency (the command line reads notebooks with it)
        from mamba_recall.cli import main
        sys.exit(main(["run", "0"]))
        """,
        MAMBA_RECALL_ROOT=str(REPO),
    )
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 1, lines
    assert len(lines) == 1 and lines[0].startswith("error: `mamba-recall run` needs the book extra, and papermill, ")
    assert lines[0].endswith(
        "not installed here: pip install 'mamba_recall[book]' (in a checkout: pip install -e '.[book]')."
    )


def test_fused_scan_caches_its_kernels_in_the_user_cache_not_site_packages(installed, tmp_path):
    """The fused scan's numba cache wrote its files into ``site-packages/mamba_recall/scan/__pycache__``; an
    installed package now caches them under the user's cache folder (``$XDG_CACHE_HOME/mamba_recall/numba``), and
    NUMBA_CACHE_DIR, when set, wins."""
    _, _, site_packages, _ = installed
    before = _listing(site_packages.parent)
    code = """
        import torch
        from mamba_recall import selective_scan
        g = torch.Generator().manual_seed(0)
        u, delta = torch.randn(1, 2, 8, generator=g), torch.rand(1, 2, 8, generator=g)
        A, B, C = -torch.rand(2, 3, generator=g), torch.randn(1, 3, 8, generator=g), torch.randn(1, 3, 8, generator=g)
        print(selective_scan(u, delta, A, B, C, backend="fused").shape)
        """
    cache_home = tmp_path / "xdg"
    done = _run(installed, code, XDG_CACHE_HOME=str(cache_home), OMP_NUM_THREADS="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert any((cache_home / "mamba_recall" / "numba").rglob("*.nbi")), "no kernel was cached in the user cache"
    assert _listing(site_packages.parent) == before, "the numba cache wrote under site-packages"
    numba_dir = tmp_path / "numba-dir"
    done = _run(installed, code, XDG_CACHE_HOME=str(tmp_path / "other"), NUMBA_CACHE_DIR=str(numba_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    assert any(numba_dir.rglob("*.nbi")) and not (tmp_path / "other").exists()
