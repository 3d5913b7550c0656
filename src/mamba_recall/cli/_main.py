"""The command line itself: ``reproduce`` (the results' recorded commands, or every runner at a preset), the parser
of every subcommand and the dispatch to them, with the one-line errors it prints."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from ..devices import DEVICES
from ..paths import BUILD_DIR, REPO_ROOT, NoCheckoutError, scorecard_dir
from ..presets import PRESETS
from ..runners import MERGED, experiment_runners, runner_module
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
    merged = [f"{n} is part of {MERGED[n]} now" for n in unknown if n in MERGED]
    if unknown:
        raise SystemExit(
            f"error: unknown runner(s) {', '.join(unknown)}"
            + (f" ({'; '.join(merged)})" if merged else "")
            + f"; known: {', '.join(known)}."
        )
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


def _parser() -> argparse.ArgumentParser:
    """The parser of every subcommand (``plan`` parses its own options; its entry here is for ``--help``), described
    by the first paragraph of the package's docstring."""
    description = sys.modules[__package__].__doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m mamba_recall", description=description)
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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["plan"]:  # parses its own options
        from .. import plan

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


def _dispatch(args) -> int:
    if args.command in ("run", "book"):
        from ..devices import ParameterError, resolve_device

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
        trained = sum(1 for cid, v in verdicts.items() if cid in core.REGISTRY and core.REGISTRY[cid].rule.trained)
        print(f"controls of the scorecard's {trained} trained claims checked (claims.core.audit_controls)")
        from .. import manifest

        wrong = manifest.claim_problems(scorecard_dir())
        _fail_on(wrong, f"error: the results manifest and the scorecard disagree on {len(wrong)} result(s).")
        print("the results manifest names every claim that reads each committed result")
    return 0
