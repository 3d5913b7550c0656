"""The committed outputs of ``book/``: ``refresh`` rewrites them from complete executions (atomically, one notebook
at a time) and ``check-outputs`` compares the executed notebooks' ``# NBVAL_CHECK_OUTPUT`` cells with them by nbval's
own comparison."""

from __future__ import annotations

import contextlib
import copy
import os
import sys
import types
from pathlib import Path

import nbformat
from tqdm.auto import tqdm

from ..atomic import DISK_FULL, replace_file
from ..paths import BUILD_DIR, REPO_ROOT
from ._run import (
    DEFAULT_TIMEOUT_S,
    WIDGET_VIEW,
    Interrupted,
    NotebookFailed,
    call_interruptibly,
    chapter_notebooks,
    toc_notebooks,
    tracked_kernel_manager,
)


def refresh_targets(targets: list[str]) -> list[Path]:
    """Notebooks named by ``targets``: chapters (as for ``run``) or notebook paths; none means all."""
    if not targets:
        return toc_notebooks()
    notebooks: list[Path] = []
    for target in targets:
        if target.endswith(".ipynb"):
            path = Path(target).resolve()
            if not path.exists():
                raise SystemExit(f"error: no notebook {target!r}.")
            notebooks.append(path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path)
        else:
            notebooks.extend(chapter_notebooks(target))
    return notebooks


def refresh_committed_outputs(targets: list[str] | None = None) -> None:
    """Re-execute notebooks in ``book/`` with their default (ci) parameters and replace each committed
    notebook only by a complete, successful execution.

    Each notebook is executed into ``_build/refresh/`` (papermill writes its output as it goes, so an
    interrupt or a failing cell leaves a partial notebook there, never in ``book/``); the cleaned result
    is written to a temporary file beside the committed notebook and moved over it with ``os.replace``
    (atomic on one file system). An interrupt (at any point, the kernel's start included: papermill runs in a
    worker thread, :func:`~._run.call_interruptibly`, and the kernel is killed), a failure or a full disk stops at
    once with one line saying which notebooks were refreshed, which was not and what it left."""
    try:
        import papermill  # noqa: F401  (loaded here, where Ctrl-C gets its one line)
        from papermill.exceptions import PapermillExecutionError

        notebooks = refresh_targets(targets or [])
    except KeyboardInterrupt:
        raise Interrupted("error: refresh interrupted before any notebook ran; nothing was changed.") from None
    scratch = BUILD_DIR / "refresh"
    done: list[Path] = []
    for nb in tqdm(notebooks, desc="refresh", unit="notebook"):
        path = REPO_ROOT / nb  # nb itself where it lies outside the repository
        executed = scratch / (nb.relative_to(nb.anchor) if nb.is_absolute() else nb)
        kernel_log = executed.with_suffix(".kernel.log")

        def stop(why: str, exc_type=NotebookFailed, fix: str = ""):
            left = (
                f"its partial execution: {executed}; the kernel's log: {kernel_log}"
                if executed.exists()
                else f"no execution of it was written yet; the kernel's log: {kernel_log}"
            )
            return exc_type(
                f"error: refresh {why} at {nb}; {nb} is unchanged ({left}); {len(done)} of {len(notebooks)} "
                f"notebook(s) refreshed before it.{fix}"
            )

        writing_to = executed.parent  # where a full disk stops it: the scratch copy, then beside the notebook
        try:
            executed.parent.mkdir(parents=True, exist_ok=True)
            executed.unlink(missing_ok=True)  # an earlier run's partial execution is not this one's
            book_nb = _execute_for_refresh(path, executed, kernel_log)
            writing_to = path.parent
            write_atomic_notebook(book_nb, path)
        except KeyboardInterrupt:
            raise stop("interrupted", Interrupted) from None
        except (PapermillExecutionError, TimeoutError) as exc:
            raise stop(f"failed ({type(exc).__name__})") from None
        except OSError as exc:
            if exc.errno not in DISK_FULL:
                raise
            raise stop(
                f"stopped, no space left on the device (writing to {writing_to})",
                fix=" Free some disk space and run refresh again.",
            ) from None
        done.append(nb)


def _execute_for_refresh(path: Path, executed: Path, kernel_log: Path):
    """Execute ``path`` into ``executed`` with papermill (the kernel's stderr to ``kernel_log``), in a worker thread
    that Ctrl-C does not wait on; return the executed notebook cleaned for ``book/``."""
    import papermill

    with _stderr_to(kernel_log):  # the kernel's own messages (and its teardown on Ctrl-C) go to its log
        call_interruptibly(
            papermill.execute_notebook,
            str(path),
            str(executed),
            cwd=str(path.parent),
            kernel_name="python3",
            progress_bar=False,
            execution_timeout=DEFAULT_TIMEOUT_S,
            kernel_manager_class=tracked_kernel_manager(),
        )
    book_nb = nbformat.read(executed, as_version=4)
    book_nb.metadata.pop("papermill", None)
    book_nb.metadata.pop("widgets", None)
    for cell in book_nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":  # widget views without their (dropped) state would show as errors
            cell.outputs = coalesce_streams([o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})])
    return book_nb


@contextlib.contextmanager
def _stderr_to(log: Path):
    """File descriptor 2 of this process points at ``log`` (appended) while the block runs, so that a kernel started
    inside writes its stderr there and not under the command's one line: on Ctrl-C, a kernel torn down while it
    replies logs a ZMQ traceback (seen in CI, 2026-11-27). Restored on the way out, whatever happened."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(log, "ab") as fh:
            os.dup2(fh.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def write_atomic_notebook(nb, path: Path) -> None:
    """Write ``nb`` over ``path`` whole or not at all (:func:`mamba_recall.atomic.replace_file`, its temporary file
    ``.<name>.<random>.refresh-tmp``): the notebook at ``path`` is the old one or the complete new one."""
    text = nbformat.writes(nb)
    replace_file(path, (text if text.endswith("\n") else text + "\n").encode("utf-8"), tag="refresh-tmp")


def coalesce_streams(outputs: list) -> list:
    """Merge consecutive stream outputs of the same stream (the kernel may split one print over several
    messages), so that committed outputs do not depend on message timing."""
    merged: list = []
    for out in outputs:
        if (
            out.get("output_type") == "stream"
            and merged
            and merged[-1].get("output_type") == "stream"
            and merged[-1].get("name") == out.get("name")
        ):
            merged[-1]["text"] = merged[-1]["text"] + out["text"]
        else:
            merged.append(out)
    return merged


CHECK_MARKER = "NBVAL_CHECK_OUTPUT"
#: The output fields nbval never compares (``IPyNbFile.skip_compare`` as nbval sets it without ``--nbdime``: random
#: ids, counters, images); nbval builds the tuple inside a pytest collector, so it is spelled out here.
SKIP_COMPARE = (
    "metadata",
    "traceback",
    "prompt_number",
    "output_type",
    "name",
    "execution_count",
    WIDGET_VIEW,
    "image/png",
    "image/jpeg",
)


class _NbvalComparison:
    """What nbval's own comparison (``nbval.plugin.IPyNbCell.compare_outputs``, the code ``pytest --nbval-lax``
    runs on a cell marked ``# NBVAL_CHECK_OUTPUT``) reads of its cell: the fields it skips (nbval's defaults:
    metadata, tracebacks, counters, widget model ids, images), no sanitising pattern, plain colours. It is called
    on the outputs of the book pass instead of inside a pytest item, so that each notebook is executed once."""

    def __init__(self):
        from nbval import plugin

        self._plugin = plugin
        self.colors = plugin.nocolors
        self.parent = types.SimpleNamespace(skip_compare=SKIP_COMPARE, sanitize_patterns={})
        self.comparison_traceback: list[str] = []
        self.mismatch: str | None = None

    def sanitize(self, s):
        return s

    def format_output_compare(self, key, left, right):  # nbval's own formats through pytest's assert hook
        self.mismatch = f"{key}: committed {str(left)[:200]!r} vs now {str(right)[:200]!r}"

    def same(self, committed: list, executed: list) -> bool:
        """nbval's reading: both sides' streams merged (as nbval merges what a kernel sends), then compared."""
        coalesce = self._plugin.coalesce_streams
        ref, test = coalesce(copy.deepcopy(list(committed))), coalesce(copy.deepcopy(list(executed)))
        self.comparison_traceback, self.mismatch = [], None
        return self._plugin.IPyNbCell.compare_outputs(self, test, ref)

    def detail(self) -> str:
        return self.mismatch or " ".join(line.strip() for line in self.comparison_traceback if line.strip())[:400]


def check_outputs(executed: Path, notebooks: list[Path]) -> list[str]:
    """Compare the cells marked ``# NBVAL_CHECK_OUTPUT`` of executed notebooks (``executed / nb``) with the
    committed outputs in ``book/``, by nbval's own comparison (:class:`_NbvalComparison`): what
    ``pytest --nbval-lax`` checks, without executing the notebooks a second time (``make test`` runs this on the
    book pass). Returns one line per difference."""
    compare = _NbvalComparison()
    problems = []
    for nb in notebooks:
        committed = nbformat.read(REPO_ROOT / nb, as_version=4)
        run = nbformat.read(executed / nb, as_version=4)
        by_source = {c.source: c for c in run.cells if c.cell_type == "code"}
        for index, ref in enumerate(committed.cells):
            if ref.cell_type != "code" or CHECK_MARKER not in ref.source:
                continue
            new = by_source.get(ref.source)
            if new is None:
                problems.append(f"{nb}, cell {index}: not in the executed notebook (book/ changed since it ran?)")
                continue
            if not compare.same(ref.outputs, new.outputs):
                problems.append(f"{nb}, cell {index}: output differs from the committed one ({compare.detail()})")
    return problems
