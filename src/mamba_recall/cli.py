"""``python -m mamba_recall``: run chapters with papermill, build the book, regenerate the results.

    python -m mamba_recall run <chapter|all> --preset ci|paper --device cpu|cuda|auto [--out DIR]
    python -m mamba_recall book [--preset ci] [--device auto]     # execute every chapter, build _build/html
    python -m mamba_recall refresh [chapter|notebook.ipynb ...]   # re-execute book/ notebooks in place (ci)
    python -m mamba_recall reproduce [--only NAME ...] [--preset paper --device cuda]  # regenerate results/

Executed notebooks of ``run`` and ``book`` go to ``_build/`` (never into ``book/``); ``refresh`` is
the one command that rewrites the committed outputs that nbval compares against. The scan benchmark is a script
of the repository, not of the library: ``python benchmarks/scan.py`` (``make bench``; ``reproduce`` runs it too).
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import nbformat
import yaml
from tqdm.auto import tqdm

from .devices import DEVICES
from .paths import BUILD_DIR, REPO_ROOT, NoCheckoutError, scorecard_dir
from .presets import PRESETS
from .runners import experiment_runners
from .scan import BACKENDS


def toc_notebooks(root: Path = REPO_ROOT) -> list[Path]:
    """Every notebook listed in ``_toc.yml``, in reading order (paths relative to the repository)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
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
        papermill.execute_notebook(
            str(REPO_ROOT / nb),
            str(target),
            parameters=parameters,
            cwd=str((REPO_ROOT / nb).parent),
            kernel_name="python3",
            progress_bar=False,
            execution_timeout=limit,
        )
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
    from .claims.render import fill_pages

    fill_pages(stage / "book")  # the scorecard page, the intro's status table, each overview's verdicts
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
    (atomic on one file system). An interrupt or a failure stops at once with one line saying which
    notebooks were refreshed, which was not and where its partial execution is."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebooks = refresh_targets(targets or [])
    scratch = BUILD_DIR / "refresh"
    done: list[Path] = []
    for nb in tqdm(notebooks, desc="refresh", unit="notebook"):
        path = REPO_ROOT / nb  # nb itself where it lies outside the repository
        executed = scratch / (nb.relative_to(nb.anchor) if nb.is_absolute() else nb)
        executed.parent.mkdir(parents=True, exist_ok=True)
        try:
            papermill.execute_notebook(
                str(path),
                str(executed),
                cwd=str(path.parent),
                kernel_name="python3",
                progress_bar=False,
                execution_timeout=DEFAULT_TIMEOUT_S,
            )
        except (KeyboardInterrupt, PapermillExecutionError, TimeoutError) as exc:
            interrupted = isinstance(exc, KeyboardInterrupt)
            why = "interrupted" if interrupted else f"failed ({type(exc).__name__})"
            raise (Interrupted if interrupted else NotebookFailed)(
                f"error: refresh {why} at {nb}; {nb} is unchanged (its partial execution: {executed}); "
                f"{len(done)} of {len(notebooks)} notebook(s) refreshed before it."
            ) from None
        book_nb = nbformat.read(executed, as_version=4)
        book_nb.metadata.pop("papermill", None)
        book_nb.metadata.pop("widgets", None)
        for cell in book_nb.cells:
            cell.metadata.pop("papermill", None)
            cell.metadata.pop("execution", None)
            if cell.cell_type == "code":  # widget views without their (dropped) state would show as errors
                cell.outputs = coalesce_streams([o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})])
        write_atomic_notebook(book_nb, path)
        done.append(nb)


def write_atomic_notebook(nb, path: Path) -> None:
    """Write ``nb`` to ``path`` through a temporary file in the same folder and ``os.replace``: the
    notebook at ``path`` is either the old one or the complete new one, never a partial write."""
    tmp = path.with_name(f".{path.name}.refresh-tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            nbformat.write(nb, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


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


def reproduce(preset: str | None, device: str, only: list[str], allow_long: bool = False) -> None:
    """Regenerate results: the commands of the results manifest (``results/manifest.json``: each committed
    result's recorded command, each once, a command dropped when a broader one makes its result too), or, with
    ``preset``, every runner at that preset on ``device`` (e.g. the papers' sizes on a GPU). ``allow_long``: the
    runner processes may start runs estimated at over an hour (``longrun``)."""
    from . import manifest
    from .longrun import ENV_ALLOW_LONG

    env = (
        {**os.environ, ENV_ALLOW_LONG: "1"}
        if allow_long
        else {k: v for k, v in os.environ.items() if k != ENV_ALLOW_LONG}
    )

    runners = experiment_runners()
    known = [*runners, "bench"]
    unknown = sorted(set(only) - set(known))
    if unknown:
        raise SystemExit(f"error: unknown runner(s) {', '.join(unknown)}; known: {', '.join(known)}.")
    if preset is None:
        commands = manifest.reproduce_commands(manifest.load(), ["bench", *runners])
        runs = [shlex.split(c)[1:] for c in commands if not only or manifest.parse_command(c)[0] in only]
    else:
        runs = [
            ["-m", f"mamba_recall.experiments.{n}", "--preset", preset, "--device", device]
            for n in runners
            if not only or n in only
        ]
    for args in runs:
        print("+ python", " ".join(args), flush=True)
        if args[0] == manifest.BENCH_SCRIPT:  # a script of the repository: its --out is relative to the root
            subprocess.run([sys.executable, *args], check=True, env=env, cwd=REPO_ROOT)
        else:
            subprocess.run([sys.executable, *args], check=True, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mamba_recall", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("--preset", default="ci", choices=PRESETS)
        p.add_argument("--device", default="auto", choices=DEVICES)
        p.add_argument("--backend", default="auto", choices=BACKENDS)
        p.add_argument(
            "--smoke",
            action="store_true",
            help="the preset's whole structure with a handful of steps and cells (-p smoke True)",
        )
        p.add_argument(
            "--allow-long",
            action="store_true",
            help="start runs estimated at over an hour on this device (-p allow_long True)",
        )
        p.add_argument(
            "--timeout",
            type=float,
            default=None,
            help=f"seconds any one cell may run (default {DEFAULT_TIMEOUT_S} for ci and --smoke, "
            "none for full paper runs; 0 = none)",
        )
        p.add_argument(
            "--jobs",
            type=int,
            default=1,
            help="notebooks executed at once, each in its own kernel (default 1; outputs do not depend on it)",
        )

    p_run = sub.add_parser("run", help="execute one chapter or all with papermill")
    p_run.add_argument("chapter", help="'all', a chapter number (0) or folder name (00_selective_scan)")
    common(p_run)
    p_run.add_argument("--out", type=Path, default=None, help="output folder (default _build/runs/<preset>)")
    p_book = sub.add_parser("book", help="execute every chapter and build the HTML book into _build/html")
    common(p_book)
    p_refresh = sub.add_parser("refresh", help="re-execute the committed notebooks in book/ in place (ci preset)")
    p_refresh.add_argument("targets", nargs="*", help="chapters or notebook paths (default: every notebook)")
    p_repro = sub.add_parser("reproduce", help="regenerate the committed result bundles with the experiment runners")
    p_repro.add_argument(
        "--preset", default=None, choices=PRESETS, help="run every runner at this preset instead of the committed runs"
    )
    p_repro.add_argument("--device", default="auto", choices=DEVICES)
    p_repro.add_argument("--only", nargs="*", default=[], help="runner module names (default: all)")
    p_repro.add_argument(
        "--allow-long", action="store_true", help="let the runners start runs estimated at over an hour on the device"
    )
    p_check = sub.add_parser(
        "check-outputs",
        help="compare the NBVAL_CHECK_OUTPUT cells of executed notebooks with book/'s committed outputs",
    )
    p_check.add_argument(
        "executed",
        type=Path,
        nargs="?",
        default=BUILD_DIR / "executed",
        help="folder of executed notebooks mirroring book/ (default _build/executed, the book pass)",
    )
    p_manifest = sub.add_parser("manifest", help="check the results manifest (results/manifest.json) or rewrite it")
    p_manifest.add_argument("--write", action="store_true", help="rewrite it from the committed results")
    p_manifest.add_argument(
        "--scorecard",
        type=Path,
        default=None,
        help="with --write: take the claims each result serves from this scorecard (a book pass's _build/scorecard)",
    )
    sub.add_parser("plan", help="every run-store grid at a preset: jobs finished and left, CPU-hours, command")

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["plan"]:  # parses its own options
        from . import plan

        return plan.main(argv[1:])
    if argv[:1] == ["bench"]:  # a script of the repository now, not of the library
        print(
            "error: the scan benchmark moved out of the library: run `python benchmarks/scan.py --device cpu --out "
            "results/scan_bench_cpu.json` from the repository (or `make bench`); the Chapter 2 comparison is "
            "`python benchmarks/ch2_ensemble.py`.",
            file=sys.stderr,
        )
        return 2
    if argv[:1] == ["check-browser"]:  # a tool of the repository now, not of the library
        print(
            "error: the browser check moved out of the library: run `python tools/browser_check.py _build/html "
            "--toc _toc.yml` from the repository (or `make browser`).",
            file=sys.stderr,
        )
        return 2
    args = parser.parse_args(argv)
    try:
        return _dispatch(args)
    except NotebookFailed as exc:
        print(exc.code, file=sys.stderr)
        if isinstance(exc, Interrupted):  # the interrupted kernel's cleanup can block the interpreter's exit (its
            sys.stdout.flush()  # executor thread still runs the cell); the kernel exits with its parent
            sys.stderr.flush()
            os._exit(1)
        return 1
    except NoCheckoutError as exc:  # a plain `pip install .` used outside a checkout: the fix, on one line
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _fail_on(problems: list[str], message: str) -> None:
    """Print each of ``problems`` on stderr and stop with the one-line ``message`` if there is any."""
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        raise NotebookFailed(message)


def notebook_parameters(args) -> dict:
    """The papermill parameters of ``run`` / ``book`` (smoke and allow_long only when asked for)."""
    params = {"preset": args.preset, "device": args.device, "backend": args.backend}
    if args.smoke:
        params["smoke"] = True
    if args.allow_long:
        params["allow_long"] = True
    return params


def _dispatch(args) -> int:
    if args.command in ("run", "book"):
        from .devices import ParameterError, resolve_device

        try:  # the notebooks' own check, before any kernel starts
            resolve_device(args.device)
        except ParameterError as exc:
            raise NotebookFailed(f"error: {exc}") from None
    if args.command == "run":
        out = args.out or BUILD_DIR / "runs" / (args.preset + ("-smoke" if args.smoke else ""))
        if args.smoke:  # a smoke run's claims stay beside its notebooks, never in the book's scorecard
            os.environ["MAMBA_RECALL_SCORECARD_DIR"] = str(Path(out).resolve() / "scorecard")
        done = execute(
            chapter_notebooks(args.chapter), out, notebook_parameters(args), timeout=args.timeout, jobs=args.jobs
        )
        print(f"{len(done)} notebook(s) executed into {out}")
    elif args.command == "book":
        build_book(notebook_parameters(args), timeout=args.timeout, jobs=args.jobs)
    elif args.command == "reproduce":
        reproduce(args.preset, args.device, args.only, allow_long=args.allow_long)
    elif args.command == "refresh":
        refresh_committed_outputs(args.targets)
    elif args.command == "manifest":
        from . import manifest

        if args.write:
            claims = None
            if args.scorecard is not None:
                claims, unknown = manifest.claims_from_scorecard(args.scorecard, manifest.scan())
                _fail_on(unknown, f"error: the scorecard reads {len(unknown)} result(s) no entry holds.")
            print(f"results manifest written: {manifest.write(claims)}")
        problems = manifest.problems()
        _fail_on(problems, f"error: {len(problems)} problem(s) with the committed results (results/manifest.json).")
        print(f"results manifest: {len(manifest.load())} entries, every one complete and made from a clean tree")
    elif args.command == "check-outputs":
        notebooks = toc_notebooks()
        missing = [str(nb) for nb in notebooks if not (args.executed / nb).exists()]
        if missing:
            raise NotebookFailed(
                f"error: {args.executed} lacks executed notebooks ({', '.join(missing[:3])} …); "
                "run `make book` (or python -m mamba_recall book) first."
            )
        problems = check_outputs(args.executed, notebooks)
        _fail_on(
            problems,
            f"error: {len(problems)} checked output(s) differ from book/'s; if the change is "
            "intended, `make refresh` rewrites the committed outputs.",
        )
        print(f"checked outputs of {len(notebooks)} notebooks match book/'s")
        from .claims import core

        verdicts = core.load_verdicts()
        bad = core.audit_controls(verdicts)
        _fail_on(
            bad,
            f"error: {len(bad)} trained claim(s) of the scorecard lack a control or are passed by their null "
            "(claims.core.audit_controls); give each measurement its Control, or fix the rule.",
        )
        trained = sum(1 for cid, v in verdicts.items() if cid in core.REGISTRY and core.REGISTRY[cid].rule.trained)
        print(f"controls of the scorecard's {trained} trained claims checked (claims.core.audit_controls)")
        from . import manifest

        wrong = manifest.claim_problems(scorecard_dir())
        _fail_on(wrong, f"error: the results manifest and the scorecard disagree on {len(wrong)} result(s).")
        print("the results manifest names every claim that reads each committed result")
    return 0
