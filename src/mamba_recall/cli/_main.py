"""The command line itself: ``reproduce`` (the results' recorded commands, or every runner at a preset), ``lab``
(JupyterLab on copies of the book's pages under ``_build/lab``), the parser of every subcommand and the dispatch to
them, with the one-line errors it prints: a command that needs the book's files stops with one line when there is no
checkout, and one that runs notebooks when the ``book`` extra is missing, before anything starts."""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ..devices import DEVICES
from .. import __version__
from ..paths import BUILD_DIR, REPO_ROOT, NoCheckoutError, require_checkout, scorecard_dir
from ..presets import PRESETS
from ..runners import experiment_runners, runner_module
from ..scan import BACKENDS
from ._outputs import check_outputs, refresh_committed_outputs
from ._run import (
    DEFAULT_TIMEOUT_S,
    Interrupted,
    NotebookFailed,
    build_book,
    chapter_notebooks,
    execute,
    toc_notebooks,
)


def reproduce(preset: str | None, device: str, only: list[str], allow_long: bool = False) -> None:
    """Regenerate results: the commands of the results manifest (``results/manifest.json``: each committed
    result's recorded command, each once, a command dropped when a broader one makes its result too), or, with
    ``preset``, every runner at that preset on ``device`` (e.g. the papers' sizes on a GPU). ``allow_long``: the
    runner processes may start runs estimated at over an hour (``longrun``)."""
    from .. import manifest
    from ..context import RunContext, child_environment

    # the runners run as processes: they get this command's long-run permission (and no smoke folder) through the
    # environment (mamba_recall.context)
    handed = child_environment(RunContext(allow_long=allow_long))
    env = {k: v for k, v in os.environ.items() if k not in handed}
    env.update({k: v for k, v in handed.items() if v is not None})

    runners = experiment_runners()
    known = [*runners, "bench"]
    unknown = sorted(set(only) - set(known))
    if unknown:
        raise SystemExit(f"error: unknown runner(s) {', '.join(unknown)}; known: {', '.join(known)}.")
    if device != "auto":  # a device this machine lacks (cuda on a CPU machine): one line, before any runner starts
        from ..devices import ParameterError, resolve_device

        try:
            resolve_device(device)
        except ParameterError as exc:
            raise NotebookFailed(f"error: {exc}") from None
    if preset is None:
        try:
            planned = manifest.reproduce_runs(manifest.load(), ["bench", *runners])
            planned = [(c, r) for c, r in planned if not only or manifest.parse_command(c)[0] in only]
            for c, _ in planned:
                if manifest.needs_gpu(c):
                    print(f"not run here (a GPU machine remakes it, by hand): {c}", flush=True)
            # the manifest is data: each run is checked against the registered runners before anything starts
            runs = [manifest.checked_argv(r, c) for c, r in planned if not manifest.needs_gpu(c)]
        except manifest.ManifestError as exc:
            raise NotebookFailed(f"error: {exc}") from None
    else:
        runs = [
            ["-m", runner_module(n), "--preset", preset, "--device", device] for n in runners if not only or n in only
        ]
    for args in runs:
        print("+ python", shlex.join(args), flush=True)
        if args[0] == manifest.BENCH_SCRIPT:  # a script of the repository: its --out is relative to the root
            subprocess.run([sys.executable, *args], check=True, env=env, cwd=REPO_ROOT)
        else:
            subprocess.run([sys.executable, *args], check=True, env=env)


#: what each command needs of a checkout (the file named in its one-line error when there is none)
NEEDS_CHECKOUT = {
    "run": "_toc.yml",
    "book": "_toc.yml",
    "refresh": "_toc.yml",
    "check-outputs": "_toc.yml",
    "lab": "book/",
    "reproduce": "results/manifest.json",
    "manifest": "results/manifest.json",
    "plan": "results/runs",
    "grid": "results/runs",
    "dataset": "results/runs",
}
#: the modules of the ``book`` extra each notebook command imports (papermill starts ipykernel's kernels)
NEEDS_BOOK_EXTRA = {
    "run": ("papermill", "nbclient", "jupyter_client", "ipykernel"),
    "refresh": ("papermill", "nbclient", "jupyter_client", "ipykernel"),
    "book": ("papermill", "nbclient", "jupyter_client", "ipykernel", "jupyter_book"),
    "lab": ("jupyterlab", "ipykernel", "ipywidgets"),
}
BOOK_EXTRA_HINT = "pip install 'mamba_recall[book]' (in a checkout: pip install -e '.[book]')"


def missing_modules(names) -> list[str]:
    """The names among ``names`` that cannot be imported here (found without importing them)."""
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package missing, or a module set to None in sys.modules
            found = False
        if not found:
            missing.append(name)
    return missing


def check_ready(command: str) -> None:
    """Stop ``command`` with one line (:class:`NoCheckoutError`, :class:`NotebookFailed`) before it starts when it
    needs a checkout and none was found, or needs the ``book`` extra and a module of it is missing."""
    if command in NEEDS_CHECKOUT:
        require_checkout(NEEDS_CHECKOUT[command])
    missing = missing_modules(NEEDS_BOOK_EXTRA.get(command, ()))
    if missing:
        raise NotebookFailed(
            f"error: `mamba-recall {command}` needs the book extra, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed here: {BOOK_EXTRA_HINT}."
        )


#: the lab folder's record of the committed file each copy was made from (its sha256)
LAB_RECORD = ".mamba_recall_lab.json"
#: names never copied into the lab folder
LAB_SKIP = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prepare_lab(source: Path, lab_dir: Path, fresh: bool = False) -> dict[str, list[str]]:
    """Copy the book's pages (``source``: ``book/``, notebooks, Markdown, ``_static``) into ``lab_dir``, where
    JupyterLab opens them: its autosave and a reader's Run All then change the copies, never the committed
    notebooks (whose outputs ``check-outputs`` compares against). A copy is made where none is; a copy whose
    committed file changed since it was made (a ``git pull``) is replaced; the others stay as the reader left
    them, unless ``fresh``. Returns the relative paths ``{"new": [...], "updated": [...], "kept": [...]}``."""
    source, lab_dir = Path(source), Path(lab_dir)
    record_path = lab_dir / LAB_RECORD
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        record = {}
    done: dict[str, list[str]] = {"new": [], "updated": [], "kept": []}
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if not path.is_file() or LAB_SKIP(str(path.parent), list(rel.parts)):
            continue
        key, target = rel.as_posix(), lab_dir / rel
        digest = _sha256(path)
        if target.exists() and not fresh and record.get(key) == digest:
            done["kept"].append(key)
            continue
        done["updated" if target.exists() else "new"].append(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        record[key] = digest
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return done


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def lab_command(lab_dir: Path, extra: list[str], as_root: bool | None = None) -> list[str]:
    """JupyterLab's command line on ``lab_dir``, with ``--allow-root`` when this process runs as root (common in
    containers: JupyterLab otherwise exits with "Running as root is not recommended") and ``extra`` passed on."""
    as_root = running_as_root() if as_root is None else as_root
    root_flag = ["--allow-root"] if as_root and "--allow-root" not in extra else []
    return [sys.executable, "-m", "jupyterlab", f"--notebook-dir={lab_dir}", *root_flag, *extra]


def lab(argv: list[str]) -> int:
    """``mamba-recall lab [--fresh] [JupyterLab options]``: :func:`prepare_lab` of ``book/`` into ``_build/lab``,
    then JupyterLab there (:func:`lab_command`)."""
    if argv[:1] in (["-h"], ["--help"]):
        print(
            "usage: python -m mamba_recall lab [--fresh] [JupyterLab options]\n\nJupyterLab on copies of book/ "
            "under _build/lab (Run All and autosave change the copies,\nnever book/); --fresh replaces every copy "
            "by the committed page."
        )
        return 0
    fresh = "--fresh" in argv
    extra = [a for a in argv if a != "--fresh"]
    lab_dir = BUILD_DIR / "lab"
    done = prepare_lab(REPO_ROOT / "book", lab_dir, fresh=fresh)
    print(
        f"JupyterLab on {lab_dir}: copies of book/ ({len(done['new'])} new, {len(done['updated'])} replaced by "
        f"the committed page, {len(done['kept'])} kept as you left them; --fresh replaces them all); book/ "
        "itself is never written.",
        flush=True,
    )
    try:
        return subprocess.run(lab_command(lab_dir, extra)).returncode
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    """The parser of every subcommand (``plan`` and ``grid`` parse their own options; their entries here are for
    ``--help``), described by the first paragraph of the package's docstring."""
    description = sys.modules[__package__].__doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m mamba_recall", description=description)
    parser.add_argument("--version", action="version", version=f"mamba_recall {__version__}")
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
    p_manifest.add_argument(
        "--drop",
        nargs="+",
        default=[],
        metavar="NAME",
        help="with --write: remove these entries whose results were deleted on purpose (others stay, reported missing)",
    )
    sub.add_parser("plan", help="every run-store grid at a preset: jobs finished and left, CPU-hours, command")
    sub.add_parser(
        "grid", help="run one declared experiment through the run store and write its bundle (grid NAME --preset P)"
    )
    p_dataset = sub.add_parser(
        "dataset", help="check that results/dataset (every committed run as one Parquet table) matches results/runs"
    )
    p_dataset.add_argument("--write", action="store_true", help="rewrite it and its data card from the committed runs")
    sub.add_parser(
        "lab", help="JupyterLab on copies of book/ under _build/lab ([--fresh] [JupyterLab options]; book/ unchanged)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["plan"], ["lab"], ["grid"]):  # parse their own options
        try:
            if "-h" not in argv and "--help" not in argv:
                check_ready(argv[0])
            if argv[0] == "lab":
                return lab(argv[1:])
            if argv[0] == "grid":
                from ..experiment import grid_command

                return grid_command(argv[1:])
            from .. import plan

            return plan.main(argv[1:])
        except NotebookFailed as exc:
            print(exc.code, file=sys.stderr)
            return 1
        except NoCheckoutError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
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
        check_ready(args.command)  # no checkout, or no book extra: one line, before anything starts
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


def _claim_ids() -> set[str]:
    """The claim ids the committed manifest names (empty when it cannot be read)."""
    from .. import manifest

    try:
        return {c for e in manifest.load() for c in e.claims}
    except manifest.ManifestError:
        return set()


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


def dataset(write: bool) -> None:
    """``dataset --write``: every committed run into ``results/dataset`` (its size and time printed); ``dataset``: stop
    with one line per difference when the committed dataset does not match the committed runs."""
    from .. import runstore

    if write:
        done = runstore.write_dataset()
        print(
            f"{runstore.repo_relative(done['path'])}: {done['rows']} runs x {done['columns']} columns, "
            f"{done['bytes'] / 1024:.0f} KiB, written in {done['seconds']:.1f} s (with its DATACARD.md)"
        )
        return
    _fail_on(runstore.check_dataset(), "error: the committed dataset (results/dataset) is not current.")
    print(f"results/dataset matches the committed runs ({runstore.DATASET_COMMAND} rewrites it)")


def _dispatch(args) -> int:
    if args.command in ("run", "book"):
        from ..devices import ParameterError, resolve_device

        from ..scan import BackendUnavailableError, resolve_backend

        try:  # the notebooks' own checks, before any kernel starts
            device = resolve_device(args.device)
            if args.backend != "auto":  # mamba_ssm on a CPU, fused without numba: the error's one line
                resolve_backend(args.backend, device)
        except (ParameterError, BackendUnavailableError) as exc:
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
        from .. import manifest

        try:
            if args.write:
                claims = None
                if args.scorecard is not None:
                    claims, unknown = manifest.claims_from_scorecard(args.scorecard, manifest.scan())
                    _fail_on(unknown, f"error: the scorecard reads {len(unknown)} result(s) no entry holds.")
                before = _claim_ids()
                print(f"results manifest written: {manifest.write(claims, drop=tuple(args.drop))}")
                lost = sorted(before - _claim_ids())
                if lost:  # said, never silent (a scorecard that no longer reads a result, or a dropped entry)
                    print(f"note: {len(lost)} claim id(s) no longer read from a committed result: {', '.join(lost)}")
            manifest.load()  # a manifest that cannot be read: its one line, before the problems of the results
            problems = manifest.problems()
            _fail_on(problems, f"error: {len(problems)} problem(s) with the committed results (results/manifest.json).")
            print(f"results manifest: {len(manifest.load())} entries, every one complete and made from a clean tree")
        except manifest.ManifestError as exc:
            raise NotebookFailed(f"error: {exc}") from None
    elif args.command == "dataset":
        dataset(args.write)
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
        from ..claims import core

        verdicts = core.load_verdicts()
        bad = core.audit_controls(verdicts)
        _fail_on(
            bad,
            f"error: {len(bad)} trained claim(s) of the scorecard lack a control or are passed by their null "
            "(claims.core.audit_controls); give each measurement its Control, or fix the rule.",
        )
        outside = core.audit_ranges(verdicts)
        _fail_on(
            outside,
            f"error: {len(outside)} recorded interval(s) outside the quantity's range (claims.core.audit_ranges); "
            "clip the chapter's combination of seeds (bounds=) and re-run its notebook.",
        )
        trained = sum(1 for cid, v in verdicts.items() if cid in core.REGISTRY and core.REGISTRY[cid].rule.trained)
        print(
            f"controls of the scorecard's {trained} trained claims checked (claims.core.audit_controls); every "
            "interval within its quantity's range (claims.core.audit_ranges)"
        )
        from ..claims import review

        kinds = review.unpublished_offences(verdicts)
        _fail_on(
            kinds,
            f"error: {len(kinds)} verdict(s) of a kind the open review forbids (claims.review.audit_kinds), not "
            "published as an answered objection; fix the rule, or publish and answer it in results/review/.",
        )
        published = len(review.audit_kinds(verdicts))
        moved = review.stale_reviews() + review.audit_reviews(verdicts)
        _fail_on(
            moved,
            f"error: {len(moved)} claim(s) not reviewed under their current rule and verdict (book appendix 'Open "
            "review', results/review/): referee them again.",
        )
        print(
            f"open review: every one of the {len(verdicts)} verdicts is refereed under its current rule and reading; "
            f"{published} offence(s) of the review's kinds, each published with its answer"
        )
        from .. import manifest

        wrong = manifest.claim_problems(scorecard_dir())
        _fail_on(wrong, f"error: the results manifest and the scorecard disagree on {len(wrong)} result(s).")
        print("the results manifest names every claim that reads each committed result")
    return 0
