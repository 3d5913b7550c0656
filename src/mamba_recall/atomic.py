"""Writing a file whole or not at all: the one atomic replacement of the library's files (run records, verdicts,
the results manifest, refreshed notebooks, the review page).

:func:`replace_file` writes to a temporary file beside the target (``.<name>.<random>.<tag>``), flushes and fsyncs
it, moves it over the target with ``os.replace`` (atomic within a folder) and fsyncs the folder, so that a full
disk, a kill or an interrupt leaves the previous file, or none, and never a truncated one; the temporary file goes
on any failure. The error itself is raised as it came (an ``OSError``): each caller says in one line what it was
writing and the fix (:func:`disk_full` tells a full disk or an exhausted quota). Bundles and checkpoints, which
replace several files as one, use the same steps for each file (:mod:`mamba_recall.results`).
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path
from typing import BinaryIO, Callable

#: the errors of a full disk or an exhausted quota
DISK_FULL = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is a full disk or an exhausted quota."""
    return isinstance(exc, OSError) and exc.errno in DISK_FULL


def _write(fh: BinaryIO, data: bytes) -> None:
    """The one low-level write (the fault tests replace it with one that fills the disk)."""
    fh.write(data)


def fsync_dir(directory: Path) -> None:
    """Make the renames in ``directory`` durable (where the platform can open a folder)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes | Callable[[BinaryIO], None], *, tag: str = "tmp") -> None:
    """Write ``data`` (bytes, or a function that writes to the open binary file) to ``path`` whole or not at all
    (see the module docstring). ``tag``: the temporary file's suffix."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.{tag}")
    try:
        with open(tmp, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                _write(fh, data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:  # a failure or an interrupt between the write and the rename: no temporary file stays
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)
