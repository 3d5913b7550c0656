"""How a number was made: the one place that reads the git state, the versions, the device and the uncommitted
library files a process imported.

Two records are built from these pieces, each where its files are written:

* a bundle's or checkpoint's ``provenance`` (:func:`mamba_recall.results.provenance`): ``git_commit``,
  ``git_dirty`` (any tracked file differs from the commit), ``dirty_files`` (a list: the uncommitted library files
  this process imported), device, platform, versions, time;
* a run-store job's ``provenance`` (:func:`mamba_recall.runstore.process_provenance`): ``git_commit``,
  ``git_clean`` and ``dirty_files`` as a mapping path → sha256 (so that a later aggregation can tell whether each
  file as run is the file committed since), versions, platform, CPU count.

Their field names differ because committed files of both kinds are read by the manifest and the bundles'
aggregation; the way each field is measured is this module's, once. Standard library only (torch, numpy and
joblib are read from ``sys.modules`` when the process has imported them), so every layer may use it.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
from pathlib import Path

from . import __version__
from .paths import REPO_ROOT

#: What counts as the library's code: a change here can change a number (edits elsewhere in the tree cannot).
CODE_PATHS = ("src", "pyproject.toml")


def git(*args: str, timeout: float = 20) -> str | None:
    """``git <args>`` in the repository, its stdout stripped of the trailing newline; None when git is missing,
    fails or this is not a checkout (an installed package)."""
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=timeout
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.rstrip("\n")


def git_state() -> dict:
    """``{"commit", "status", "code"}``: ``HEAD``, ``git status --porcelain`` of the tracked files, and the same
    for the library's code (:data:`CODE_PATHS`, untracked files included). Each is None without git."""
    commit = git("rev-parse", "HEAD")
    return {
        "commit": commit.strip() if commit else commit,
        "status": git("status", "--porcelain", "--untracked-files=no"),
        "code": git("status", "--porcelain", "--untracked-files=all", "--", *CODE_PATHS),
    }


def changed_paths(porcelain: str) -> list[Path]:
    """The files named by ``git status --porcelain`` output ("XY path", or "XY old -> new" for a rename: the new
    name), resolved under the repository."""
    out = []
    for line in porcelain.splitlines():
        if line.strip():
            out.append((REPO_ROOT / line[3:].split(" -> ")[-1].strip().strip('"')).resolve())
    return out


def imported_files() -> set[Path]:
    """The resolved files of every module this process has imported."""
    return {Path(m.__file__).resolve() for m in list(sys.modules.values()) if getattr(m, "__file__", None)}


def uncommitted_imported(porcelain: str) -> list[Path]:
    """The files of ``porcelain`` (:func:`git_state`'s ``code``) that this process imported, plus pyproject.toml
    when it is among them: the uncommitted code that can have made a number, sorted."""
    loaded, pyproject = imported_files(), (REPO_ROOT / "pyproject.toml").resolve()
    return sorted(p for p in changed_paths(porcelain) if p == pyproject or p in loaded)


def relative(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT.resolve()))


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def versions(*, extra: tuple[str, ...] = ()) -> dict:
    """Python's version and those of torch, numpy and this library (and ``extra`` packages) as loaded in this
    process; a package the process has not imported is left out rather than imported here."""
    out = {"python": platform.python_version(), "mamba_recall": __version__}
    for name in ("torch", "numpy", *extra):
        mod = sys.modules.get(name)
        if mod is not None:
            out[name] = getattr(mod, "__version__", "?")
    return out


def device_description(device="cpu") -> str:
    """A human-readable name of the device the numbers were made on: the GPU's name, or the CPU with the number of
    torch threads (torch is only read if loaded, or imported for a CUDA device). A description already (``"cuda:
    NVIDIA H100 80GB HBM3"``, what a run record holds) is returned as it is."""
    if isinstance(device, str) and ": " in device:
        return device
    kind = str(device).split(":")[0]
    torch = sys.modules.get("torch")
    if kind == "cuda":
        import torch

        return f"cuda: {torch.cuda.get_device_name(torch.device(device))}"
    cpu = platform.processor() or platform.machine()
    if torch is None:
        return f"cpu: {cpu} (no torch)"
    return f"cpu: {cpu}, {torch.get_num_threads()} threads"
