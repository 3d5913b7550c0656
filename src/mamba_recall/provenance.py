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

The git state describes the checkout's ``src/``; it only describes the code that ran when the imported package *is*
that ``src/mamba_recall`` (an editable install, or ``PYTHONPATH=src``). A package imported from elsewhere (a plain
``pip install .``, another ``PYTHONPATH``) is recorded as such (:func:`code_origin`: its location and the sha256 of
its source files), and its imported files are compared with the checkout's: one that differs makes the record
dirty. Without git (not installed, or a tarball with no ``.git``) the commit is None and :func:`git_state` says why
(``reason``); :func:`unclean_reason` is what ``MAMBA_RECALL_REQUIRE_CLEAN=1`` refuses on.
"""

from __future__ import annotations

import hashlib
import platform
import shutil
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
            ["git", *args],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            encoding="utf-8",  # git's paths and messages, whatever the locale (a C locale decodes ASCII only)
            errors="replace",
            check=True,
            timeout=timeout,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.rstrip("\n")


def git_missing_reason() -> str:
    """Why :func:`git` gives nothing here, in words with the fix: git not on PATH, or the root not a git checkout."""
    if shutil.which("git") is None:
        return "git is not installed (no `git` on PATH); install git and run from a git clone"
    try:
        root = Path(REPO_ROOT)
        is_repo = any((folder / ".git").exists() for folder in (root, *root.parents))
    except OSError:  # no checkout at all (paths.NoCheckoutError)
        return "no checkout of the book was found; run from a git clone (or set MAMBA_RECALL_ROOT to one)"
    if not is_repo:
        return f"{REPO_ROOT} is not a git checkout (a tarball or a copy: no .git); run from a git clone"
    return f"git fails in {REPO_ROOT}; check `git -C {REPO_ROOT} status`"


def git_state() -> dict:
    """``{"commit", "status", "code", "reason", "origin"}``: ``HEAD``, ``git status --porcelain`` of the tracked files,
    and the same for the library's code (:data:`CODE_PATHS`, untracked files included); each None without git, and
    ``reason`` then says why (:func:`git_missing_reason`), else None. ``origin``: where the imported package lies
    (:func:`code_origin`)."""
    commit = git("rev-parse", "HEAD")
    return {
        "commit": commit.strip() if commit else commit,
        "status": git("status", "--porcelain", "--untracked-files=no"),
        "code": git("status", "--porcelain", "--untracked-files=all", "--", *CODE_PATHS),
        "reason": None if commit else git_missing_reason(),
        "origin": code_origin(),
    }


def package_dir() -> Path:
    """The folder of the ``mamba_recall`` package this process imported (``mamba_recall.__file__``'s folder)."""
    return Path(__file__).resolve().parent


def checkout_package_dir() -> Path | None:
    """``<root>/src/mamba_recall``, resolved: where the checkout's library code lies (None: no checkout)."""
    try:
        return (Path(REPO_ROOT) / "src" / "mamba_recall").resolve()
    except OSError:
        return None


def package_sources(folder: Path) -> dict[str, bytes]:
    """``{path relative to folder: bytes}`` of the package's source files (``*.py``, no ``__pycache__``)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*.py"))
        if "__pycache__" not in p.parts and p.is_file()
    }


def sources_sha256(files: dict[str, bytes]) -> str:
    """One sha256 over ``{relative path: bytes}`` (names and contents, in sorted order)."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return h.hexdigest()


def code_origin() -> dict:
    """Where the library code of this process came from: ``{"package": its folder, "in_checkout": whether it is the
    checkout's src/mamba_recall}``, and for a package outside the checkout ``"sha256"``: the hash of its source files
    (:func:`sources_sha256`), which names the code that ran when git cannot."""
    pkg, ours = package_dir(), checkout_package_dir()
    inside = ours is not None and pkg == ours
    out: dict = {"package": str(pkg), "in_checkout": inside}
    if not inside:
        try:
            out["sha256"] = sources_sha256(package_sources(pkg))
        except OSError:
            out["sha256"] = None
    return out


def naming_fields(state: dict, origin: dict) -> dict:
    """What a record adds when git cannot name the code that ran: ``git_reason`` (why no commit was read, with the
    fix) and ``code`` (a package imported from outside the checkout: its folder and the sha256 of its sources).
    Bundles, checkpoints and run records all add these (:func:`unclean_reason` reads them)."""
    out = {}
    if not state["commit"]:
        out["git_reason"] = state.get("reason") or git_missing_reason()
    if not origin.get("in_checkout", True):
        out["code"] = origin
    return out


def outside_differences(origin: dict | None = None) -> list[str]:
    """For a package imported from outside the checkout (:func:`code_origin`): its imported source files that are not
    byte-identical to the checkout's file of the same name (``<package>/<path>``, sorted); [] when it is the
    checkout's own package."""
    origin = code_origin() if origin is None else origin
    if origin.get("in_checkout"):
        return []
    pkg, ours = Path(origin["package"]), checkout_package_dir()
    out = []
    for path in sorted(imported_files()):
        if pkg not in path.parents or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(pkg)
        twin = ours / rel if ours is not None else None
        try:
            same = twin is not None and twin.is_file() and twin.read_bytes() == path.read_bytes()
        except OSError:
            same = False
        if not same:
            out.append(f"{pkg}/{rel.as_posix()}")
    return out


def imported_as_checkout(origin: dict | None = None) -> set[Path]:
    """The imported files of a package outside the checkout, as the checkout's paths of the same names (so that the
    checkout's uncommitted changes to them count, :func:`uncommitted_imported`); empty for the checkout's package."""
    origin = code_origin() if origin is None else origin
    ours = checkout_package_dir()
    if origin.get("in_checkout") or ours is None:
        return set()
    pkg = Path(origin["package"])
    return {(ours / p.relative_to(pkg)).resolve() for p in imported_files() if pkg in p.parents}


def unclean_reason(prov: dict) -> str | None:
    """Why a record's provenance (:func:`mamba_recall.results.provenance`) does not name committed code, in one
    sentence with the fix, or None when it does: no commit (git missing, a tarball), a state git could not read, code
    imported from outside the checkout that differs from it, uncommitted library files."""
    origin = prov.get("code") if isinstance(prov.get("code"), dict) else {}
    if not prov.get("git_commit"):
        why = prov.get("git_reason") or "no git commit could be read"
        return f"no git commit is recorded ({why})"
    dirty = prov.get("dirty_files")
    if dirty is None:
        return "the library's git state could not be read (git status failed); run from a git clone with git installed"
    if dirty and not origin.get("in_checkout", True):
        return (
            f"the library code that ran was imported from {origin.get('package')}, outside the checkout's src/, and "
            f"differs from it or has uncommitted changes ({', '.join(dirty)}); run the checkout's own code "
            "(`pip install -e .` in the checkout, or PYTHONPATH=src) from a clean commit"
        )
    if dirty:
        return f"the library has uncommitted changes ({', '.join(dirty)}); commit them first"
    return None


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
    when it is among them: the uncommitted code that can have made a number, sorted. A package imported from outside
    the checkout counts by its files' names in the checkout (:func:`imported_as_checkout`)."""
    changed = changed_paths(porcelain)
    if not changed:  # a clean tree: nothing to match (resolving every imported module's path costs ~0.5 s)
        return []
    loaded, pyproject = imported_files() | imported_as_checkout(), (REPO_ROOT / "pyproject.toml").resolve()
    return sorted(p for p in changed if p == pyproject or p in loaded)


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
