"""``run`` and ``book``: the notebooks of ``_toc.yml`` and of one chapter, their execution with papermill (one at a
time or several at once, a time limit per cell, one-line errors) and the HTML book built from the executed copies."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import yaml
from tqdm.auto import tqdm

from ..paths import BUILD_DIR, REPO_ROOT, scorecard_dir


def toc_notebooks(root: Path = REPO_ROOT) -> list[Path]:
    """Every notebook listed in ``_toc.yml``, in reading order (paths relative to the repository)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for key in ("root", "parts", "chapters", "sections"):
                if key == "root":
                    if isinstance(node.get("root"), str):
                        files.append(node["root"])
                elif key in node:
                    walk(node[key])
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return [Path(f).with_suffix(".ipynb") for f in files if (root / Path(f).with_suffix(".ipynb")).exists()]


def chapter_notebooks(chapter: str) -> list[Path]:
    """Notebooks of one chapter: ``all``, a number (``0``, ``00``) or a folder name (``00_selective_scan``)."""
    notebooks = toc_notebooks()
    if chapter == "all":
        return notebooks
    chapters = sorted({nb.parts[1] for nb in notebooks if len(nb.parts) > 2})
    wanted = [
        c
        for c in chapters
        if c == chapter or c.split("_", 1)[0].lstrip("0") == chapter.lstrip("0") or c.split("_", 1)[-1] == chapter
    ]
    if not wanted:
        raise SystemExit(f"error: unknown chapter {chapter!r}; choose 'all' or one of {', '.join(chapters)}.")
    return [nb for nb in notebooks if nb.parts[1] in wanted]


#: Seconds any one cell may run in ``run`` / ``book`` at the ``ci`` preset or with ``smoke`` (a hang
#: stops there with an error instead of waiting for ever); full ``paper`` runs have no limit unless
#: ``--timeout`` gives one (their long-run guard asks for ``allow_long`` instead).
DEFAULT_TIMEOUT_S = 1200


class NotebookFailed(SystemExit):
    """A notebook stopped with an error: carries the one-line message that ``main`` prints."""


class Interrupted(NotebookFailed):
    """Ctrl-C stopped a run: once ``main`` has printed its line (the committed notebooks are untouched, the partial
    execution is on disk), the process exits at once, without waiting on the interrupted kernel's cleanup."""


#: the kernel managers :func:`tracked_kernel_manager` made in this process (their kernels are killed on Ctrl-C)
_KERNEL_MANAGERS: list = []


def tracked_kernel_manager():
    """nbclient's kernel manager class (``AsyncKernelManager``), each instance recorded, so that Ctrl-C can kill the
    kernel it starts (:func:`kill_started_kernels`) instead of waiting on nbclient's graceful shutdown. Passed to
    papermill as ``kernel_manager_class``; it changes nothing else."""
    from jupyter_client.manager import AsyncKernelManager

    class TrackedKernelManager(AsyncKernelManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            _KERNEL_MANAGERS.append(self)

    return TrackedKernelManager


def kill_started_kernels() -> None:
    """Kill (SIGKILL, the kernel's whole process group: jupyter_client starts each kernel in its own session) every
    kernel started through :func:`tracked_kernel_manager` that still runs; safe from any thread, it waits on
    nothing. A kernel whose process is not yet spawned exits by itself once it finds its parent gone (ipykernel's
    parent poller)."""
    while _KERNEL_MANAGERS:
        km = _KERNEL_MANAGERS.pop()
        pid = getattr(getattr(km, "provisioner", None), "pid", None)
        if not pid:
            continue
        for kill, target in ((os.killpg, pid), (os.kill, pid)):
            try:
                kill(target, signal.SIGKILL)
                break
            except (ProcessLookupError, PermissionError, OSError):
                continue


def call_interruptibly(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a worker thread, its result returned (its exception raised) here. The main thread
    only waits, in short joins, so Ctrl-C is acted on within a fraction of a second whatever ``fn`` is doing:
    papermill's nbclient replaces the SIGINT handler while it starts a kernel and, on Ctrl-C, only queues a graceful
    shutdown of the kernel (5 s, or never while the kernel is still starting) instead of raising. On Ctrl-C the
    kernels ``fn`` started are killed (:func:`kill_started_kernels`) and KeyboardInterrupt is raised here; the worker
    is a daemon thread, left to end with the process."""
    outcome: dict = {}

    def work():
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name=f"{getattr(fn, '__name__', 'call')}-worker", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        kill_started_kernels()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def cell_timeout(parameters: dict, timeout: float | None) -> float | None:
    if timeout is not None:
        return timeout if timeout > 0 else None
    return DEFAULT_TIMEOUT_S if parameters.get("preset", "ci") == "ci" or parameters.get("smoke") else None


def execute(
    notebooks: list[Path], out_dir: Path, parameters: dict, timeout: float | None = None, jobs: int = 1
) -> list[Path]:
    """Execute notebooks with papermill into ``out_dir`` (mirroring their paths), with a progress bar.
    Plain papermill, as the README tells users: no environment variable changes what a notebook does.
    ``timeout``: seconds any one cell may run (default :data:`DEFAULT_TIMEOUT_S` for ``ci`` and
    ``smoke`` runs, none for full ``paper`` runs; 0 = none). ``jobs``: notebooks run at once, each from its own
    process (papermill changes the process's working directory while it runs a notebook, so two must not share
    one) with its own kernel, which gets the machine's cores divided by ``jobs`` as its threads; their outputs do
    not depend on it. A failing notebook raises :class:`NotebookFailed`
    with its one-line error (with ``jobs`` > 1, the first failing one in reading order; no new one starts)."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    os.environ.setdefault("MAMBA_RECALL_SCORECARD_DIR", str(scorecard_dir()))
    limit = cell_timeout(parameters, timeout)
    if jobs < 1:
        raise NotebookFailed(f"error: --jobs must be at least 1, got {jobs}.")
    out_dir = Path(out_dir).absolute()
    bar = tqdm(total=len(notebooks), desc="chapters", unit="notebook")
    failed: dict[Path, NotebookFailed] = {}
    done: dict[Path, Path] = {}
    if jobs == 1:
        for nb in notebooks:
            try:
                done[nb] = _execute_one(nb, out_dir, parameters, limit)
            except NotebookFailed as exc:
                failed[nb] = exc
                break
            finally:
                bar.update(1)
    else:
        # the cores shared out: two kernels of two threads each on two cores run no faster than one after the other
        # (measured: the 25 ci notebooks in 8 min two at a time with 2 threads each, 4.5 min with 1 thread each, 7 min
        # one at a time; their checked outputs identical in all three)
        threads = max(1, (os.cpu_count() or 1) // jobs)
        pool = ProcessPoolExecutor(max_workers=jobs)
        todo, running = list(notebooks), {}
        try:
            while todo or running:
                while todo and len(running) < jobs and not failed:
                    nb = todo.pop(0)
                    running[pool.submit(_execute_one, nb, out_dir, parameters, limit, threads)] = nb
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    nb = running.pop(future)
                    bar.update(1)
                    try:
                        done[nb] = future.result()
                    except NotebookFailed as exc:
                        failed[nb] = exc
        except KeyboardInterrupt:  # the kernels got the same Ctrl-C; main exits at once on Interrupted
            pool.shutdown(wait=False, cancel_futures=True)
            bar.close()
            raise Interrupted(f"interrupted: the executed notebooks so far are in {out_dir}") from None
        pool.shutdown()
    bar.close()
    if failed:
        raise failed[min(failed, key=notebooks.index)]
    return [done[nb] for nb in notebooks if nb in done]


#: how jupyter_client says a kernel never answered at its start (``KernelClient.wait_for_ready``)
KERNEL_NOT_STARTED = ("Kernel didn't respond", "Kernel died before replying to kernel_info")


def _execute_one(nb: Path, out_dir: Path, parameters: dict, limit: float | None, threads: int | None = None) -> Path:
    """One notebook under papermill into ``out_dir / nb``; :class:`NotebookFailed` with its one-line error.
    ``threads``: the kernel's CPU threads (``OMP_NUM_THREADS``, read by torch and numba at start), set in this
    process only when notebooks share the machine (``execute`` with ``jobs`` > 1)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    if threads is not None:
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)

    target = out_dir / nb
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        for attempt in (1, 2):
            try:
                papermill.execute_notebook(
                    str(REPO_ROOT / nb),
                    str(target),
                    parameters=parameters,
                    cwd=str((REPO_ROOT / nb).parent),
                    kernel_name="python3",
                    progress_bar=False,
                    execution_timeout=limit,
                )
                break
            except RuntimeError as exc:
                if not str(exc).startswith(KERNEL_NOT_STARTED) or attempt == 2:
                    raise
                # no cell ran: the kernel died at its start (two kernels started at once can draw the same free
                # port: zmq "Address already in use"), so the notebook is started once more, and says so
                tqdm.write(f"  {nb}: its kernel did not start ({exc}); starting the notebook once more")
    except RuntimeError as exc:
        if not str(exc).startswith(KERNEL_NOT_STARTED):
            raise
        raise NotebookFailed(
            f"error: {nb}: its kernel did not start, twice ({exc}); no cell ran. Is another Jupyter using the "
            "ports, or is the machine out of memory?"
        ) from None
    except PapermillExecutionError as exc:
        evalue = str(exc.evalue).strip().splitlines()
        raise NotebookFailed(
            f"error: {nb} stopped at cell {exc.exec_count}: {exc.ename}: "
            f"{evalue[0] if evalue else ''}\n(the executed notebook, with the full "
            f"traceback: {target})"
        ) from None
    except TimeoutError as exc:  # nbclient's CellTimeoutError is a TimeoutError
        raise NotebookFailed(
            f"error: {nb}: a cell ran past {limit:g} s ({exc}); the executed notebook "
            f"so far: {target}. Raise the limit with --timeout SECONDS (0 = none)."
        ) from None
    tqdm.write(f"  {nb}: {time.perf_counter() - start:.1f} s")
    return target


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def clean_for_book(path: Path) -> None:
    """Drop widget state and the explorers' widget views (MyST-NB would load require.js and widget JS from
    a CDN for them; the static book shows each explorer's default view, drawn as plain output) and hide
    papermill's injected-parameters cell (``setup`` prints the parameters in use)."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})]
            for out in cell.outputs:
                html = out.get("data", {}).get("text/html")
                if html and 'class="dataframe' in ("".join(html) if isinstance(html, list) else html):
                    out["data"]["text/html"] = breakable_headers("".join(html) if isinstance(html, list) else html)
    nbformat.write(nb, path)


_TH = re.compile(r"(<th\b[^>]*>)(.*?)(</th>)", re.S)


def breakable_headers(html: str) -> str:
    """A DataFrame's HTML with a line-break opportunity (``<wbr>``) after each ``_`` of its header cells, so a
    long column name (``best_accuracy_ci_high``) wraps at its words, never between letters, and the table fits
    the page. Only the HTML book's copy changes; the notebook keeps pandas' output."""
    return _TH.sub(lambda m: m.group(1) + m.group(2).replace("_", "_<wbr>") + m.group(3), html)


def build_book(parameters: dict, timeout: float | None = None, jobs: int = 1) -> Path:
    """Execute every chapter, stage book sources with the executed notebooks, build ``_build/html``."""
    executed, stage = BUILD_DIR / "executed", BUILD_DIR / "stage"
    for folder in (executed, stage, scorecard_dir()):
        shutil.rmtree(folder, ignore_errors=True)
    os.environ["MAMBA_RECALL_SCORECARD_DIR"] = str(scorecard_dir())
    notebooks = execute(toc_notebooks(), executed, parameters, timeout=timeout, jobs=jobs)
    return build_html(executed, notebooks)


def fill_chapter_blocks(book_dir: Path) -> None:
    """Replace, in the staged ``book_dir``, each chapter's generated blocks: a chapter whose package has an
    ``overview`` module declares ``BLOCKS`` (marker → a function returning Markdown, computed from the committed
    bundles, e.g. :mod:`mamba_recall.chapters.ch5_synthesis.overview`), each marker a line of its
    ``NN_*/overview.md``. SystemExit naming the page and the marker when one is missing (every page is checked
    before any is written)."""
    from ..runners import chapter_modules

    pages = {}
    for chapter, module in chapter_modules("overview").items():
        number = int(chapter.removeprefix("ch").split("_", 1)[0])
        (page,) = book_dir.glob(f"{number:02d}_*/overview.md")
        text = page.read_text(encoding="utf-8")
        for marker, make in module.BLOCKS.items():
            if marker not in text:
                raise SystemExit(
                    f"error: {page} lost its {marker} line; put it back where {module.__name__} writes its block."
                )
        pages[page] = (text, module.BLOCKS)
    for page, (text, blocks) in pages.items():
        for marker, make in blocks.items():
            text = text.replace(marker, make())
        page.write_text(text, encoding="utf-8")


def build_html(executed: Path, notebooks: list[Path]) -> Path:
    """Stage the book's sources with the executed ``notebooks`` (under ``executed``) and build ``_build/html``."""
    stage = BUILD_DIR / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(REPO_ROOT / name, stage / name)
    for name in ("book", "_ext"):
        shutil.copytree(REPO_ROOT / name, stage / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for nb in notebooks:
        target = stage / nb.relative_to(executed)
        shutil.copy2(nb, target)
        clean_for_book(target)
    from ..claims.render import fill_pages

    fill_pages(stage / "book")  # the scorecard page, the intro's status table, each overview's verdicts
    fill_chapter_blocks(stage / "book")  # what a chapter's overview computes from its committed bundles
    html = BUILD_DIR / "html"
    shutil.rmtree(html, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "jupyter_book",
        "build",
        str(stage),
        "--path-output",
        str(REPO_ROOT),
        "-W",
        "-n",
        "--keep-going",
    ]
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    if jb:
        cmd[:3] = [jb]
    subprocess.run(cmd, check=True)
    if not (html / "index.html").exists():
        raise SystemExit(f"error: the build produced no {html / 'index.html'}; see {html / 'reports'}.")
    print(f"book built: {html / 'index.html'}")
    return html
