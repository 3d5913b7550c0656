"""Where the book's files live: the checkout (``_toc.yml``, ``book/``, ``results/``) and its ``_build/``.

The root is found once, at import, in this order:

1. ``MAMBA_RECALL_ROOT``, when set: that folder, as given (a checkout, or any folder a researcher wants
   ``results/`` and ``_build/`` written under);
2. the checkout this package was imported from (``pip install -e .``, as ``make`` installs it: ``src/`` layout,
   so two folders above this file);
3. the working directory or the nearest folder above it that is a checkout (so a kernel started in
   ``book/<chapter>/`` finds the book too).

A checkout is a folder with ``_toc.yml`` and ``results/``. When none is found (a plain ``pip install .`` used
from anywhere else), the library still imports and everything that needs no file of the book works (scans,
models, tasks, training, claims checked with ``record=False`` or a ``directory``); :data:`REPO_ROOT`,
:data:`RESULTS_DIR` and :data:`BUILD_DIR` are then placeholders that raise :class:`NoCheckoutError`, one line
naming the fix, as soon as a file under them is read, written or listed. Nothing is ever written next to the
installed package: a placeholder's string form lies under this very file (``.../paths.py/...``), where no
folder can be created, so even code that turns it back into a plain path cannot write there.

Caches that are no file of the book (the fused scan's compiled kernels) go to :func:`user_cache_dir` when the
package is installed (not in a checkout): the user's cache folder, never ``site-packages``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: The environment variable that names the root explicitly (the fix every :class:`NoCheckoutError` names).
ENV_ROOT = "MAMBA_RECALL_ROOT"
#: Overrides where chapters record their claims (:func:`scorecard_dir`).
ENV_SCORECARD = "MAMBA_RECALL_SCORECARD_DIR"


class NoCheckoutError(OSError):
    """A file of the book (``results/``, ``_build/``, ``_toc.yml``, ...) was needed but no checkout was found;
    the message is one line that names the fix (:data:`ENV_ROOT`). An ``OSError`` (with no errno), so code that
    tolerates an unusable folder (the bundles' git provenance) goes on without it; it is not a
    ``FileNotFoundError``, so a missing checkout is never reported as a missing bundle."""


def is_checkout(folder: Path) -> bool:
    """True if ``folder`` holds the book: ``_toc.yml`` and ``results/``."""
    return (folder / "_toc.yml").is_file() and (folder / "results").is_dir()


def find_root(
    env: dict | None = None, cwd: Path | None = None, package_file: str | Path = __file__
) -> tuple[Path | None, str]:
    """``(root, how)``: the book's root and how it was found (``"MAMBA_RECALL_ROOT"``, ``"package checkout"``,
    ``"working directory"``), or ``(None, "no checkout")``; see the module docstring for the order."""
    env = os.environ if env is None else env
    explicit = env.get(ENV_ROOT, "").strip()
    if explicit:
        return Path(explicit).expanduser().absolute(), ENV_ROOT
    source = Path(package_file).resolve().parents[2]
    if is_checkout(source):
        return source, "package checkout"
    try:
        here = (Path.cwd() if cwd is None else Path(cwd)).absolute()
    except OSError:  # the working directory was deleted
        return None, "no checkout"
    for folder in (here, *here.parents):
        if is_checkout(folder):
            return folder, "working directory"
    return None, "no checkout"


def no_checkout_message(needed: str = "") -> str:
    """The one line of :class:`NoCheckoutError` (``needed``: the file or folder that was asked for)."""
    what = f" for {needed}" if needed else ""
    return (
        f"no checkout of the Mamba recall book found{what} ({ENV_ROOT} is unset, and neither the working "
        f"directory nor the installed package lies in a checkout); set {ENV_ROOT}=/path/to/mamba-recall (the "
        "folder with _toc.yml and results/), or run from inside a checkout."
    )


_PLACEHOLDER = Path(__file__).resolve() / f"no-checkout-set-{ENV_ROOT}"


class _NoCheckoutPath(type(Path())):
    """A path under the missing root: joins, ``parent``, ``name``, ``str`` and comparisons work (modules build
    their folders at import); reading, writing, listing or handing it to ``open``/``os``/``subprocess``
    (``os.fspath``) raises :class:`NoCheckoutError`. Derived paths keep the class (``RESULTS_DIR / "runs"``);
    ``Path(placeholder)`` and ``str(placeholder)`` give a plain path under :data:`_PLACEHOLDER`, which cannot
    be created."""

    def _refuse(self, *args, **kwargs):
        try:
            needed = self.relative_to(_PLACEHOLDER).as_posix()
        except ValueError:
            needed = self.name
        needed = "the book's root" if needed in ("", ".") else needed
        raise NoCheckoutError(no_checkout_message(needed))

    # every method that touches the file system (pure ones -- /, parent, name, relative_to -- are inherited)
    open = stat = lstat = exists = is_dir = is_file = is_symlink = iterdir = glob = rglob = walk = _refuse
    read_text = read_bytes = write_text = write_bytes = touch = mkdir = unlink = rmdir = _refuse
    rename = replace = chmod = symlink_to = hardlink_to = samefile = owner = group = readlink = _refuse

    def __fspath__(self):
        self._refuse()

    def resolve(self, strict: bool = False):
        """Itself: the placeholder is absolute and no link under it can exist."""
        if strict:
            self._refuse()
        return self

    def absolute(self):
        return self


_ROOT, ROOT_FOUND_BY = find_root()
#: True when a checkout (or an explicit ``MAMBA_RECALL_ROOT``) was found at import.
CHECKOUT_FOUND = _ROOT is not None
REPO_ROOT = _ROOT if _ROOT is not None else _NoCheckoutPath(_PLACEHOLDER)
RESULTS_DIR = REPO_ROOT / "results"
BUILD_DIR = REPO_ROOT / "_build"


#: True when this package's own files lie in a checkout (``pip install -e .``, as ``make`` installs it), whatever
#: ``MAMBA_RECALL_ROOT`` says; False for a plain ``pip install .`` (the package under ``site-packages``).
PACKAGE_IN_CHECKOUT = is_checkout(Path(__file__).resolve().parents[2])


def user_cache_dir(*parts: str, env: dict | None = None, platform: str = sys.platform) -> Path:
    """The user's cache folder for this library, joined with ``parts`` (created by whoever writes there):
    ``$XDG_CACHE_HOME/mamba_recall`` (default ``~/.cache/mamba_recall``) on Linux and other POSIX systems,
    ``~/Library/Caches/mamba_recall`` on macOS, ``%LOCALAPPDATA%\\mamba_recall`` on Windows (the folders the
    ``platformdirs`` package names, found with the standard library only)."""
    env = os.environ if env is None else env
    if platform.startswith("win"):
        base = Path(env.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        xdg = env.get("XDG_CACHE_HOME", "").strip()
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base.joinpath("mamba_recall", *parts)


def require_checkout(needed: str = "") -> Path:
    """:data:`REPO_ROOT`, or :class:`NoCheckoutError` naming ``needed`` and the fix when there is no checkout."""
    if not CHECKOUT_FOUND:
        raise NoCheckoutError(no_checkout_message(needed))
    return REPO_ROOT


def scorecard_dir() -> Path:
    """Folder where chapters record their claims (``MAMBA_RECALL_SCORECARD_DIR`` overrides); without a checkout
    and without the override, :class:`NoCheckoutError` (``claims.check(..., record=False)`` records nothing)."""
    override = os.environ.get(ENV_SCORECARD)
    if override:
        return Path(override)
    return require_checkout("_build/scorecard (or set MAMBA_RECALL_SCORECARD_DIR)") / "_build" / "scorecard"
