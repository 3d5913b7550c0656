"""The results manifest, ``results/manifest.json``: every committed result, what makes it and who reads it.

One entry per result: a bundle (its JSON and its tables), a checkpoint (its weights and its sidecar), a training
log, a record that no command makes (the Chapter 4 pilots) or external data (the paper authors' files, with
their provenance in a README). Each entry names its files, the command that makes it (as the result recorded
it), the runner and preset, its cost (CPU-seconds where the run store summed them, else wall-seconds), the commit
and whether the tree was clean, and the claims that read it (the evidence sources of the scorecard of a book
pass). The run store's job files (``results/runs/``) are the inputs of the bundles, counted per grid.

Three things come from it: ``make reproduce`` (:func:`reproduce_commands`: each command once, in runner order,
a command dropped when a broader one of the same runner and preset makes its result too), the "make it with"
line of every missing or corrupt result, and the integrity check (:func:`problems`, run by
``tests/base/test_manifest.py``; :func:`claim_problems`, run by ``check-outputs`` after the book pass).

What ``reproduce`` runs is stored as data, not as a command line: each entry's ``run`` is the runner module (or the
benchmark script) and its arguments (:func:`invocation`), and ``reproduce`` runs it only once it is checked against
the registry of runners found on disk (:func:`checked_argv`); ``command`` stays for people to read.

``python -m mamba_recall manifest --write [--scorecard DIR] [--drop NAME ...]`` rewrites it after a result changes (the claims
from ``DIR``, by default the book pass's ``_build/scorecard``; without a scorecard the committed claims stay).
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import runners
from .atomic import replace_file
from .paths import REPO_ROOT, RESULTS_DIR

__all__ = [
    "Entry",
    "scan",
    "load",
    "write",
    "problems",
    "claim_problems",
    "claims_from_scorecard",
    "reproduce_commands",
    "needs_gpu",
    "ManifestError",
    "invocation",
    "checked_argv",
    "reproduce_runs",
]

SCHEMA = "mamba_recall.manifest"
MANIFEST_NAME = "manifest.json"
#: Flags that pick a subset of a runner's grid; a command without one (or with a superset) makes the subset too.
RESTRICTING = ("--only", "--parts", "--recipes", "--models")
#: Flags that do not change what a command makes.
NEUTRAL = ("--device", "--allow-long", "--jobs", "--threads")
FIX = "python -m mamba_recall manifest --write"
#: How to get the committed manifest back when it is damaged or gone (its claims cannot be remade without a scorecard).
RESTORE = "git checkout results/manifest.json"
#: The scan benchmark, a script of the repository (not a module of the library), as its bundles record it; runner
#: ``"bench"``.
BENCH_SCRIPT = "benchmarks/scan.py"


class ManifestError(ValueError):
    """The manifest, or a file it is made from, cannot be read or written; the message is one line naming the file and
    the fix."""


@dataclass(frozen=True)
class Entry:
    """One committed result. ``files``: repository-relative paths. ``command``: None for a record or external
    data (``why`` says what it is instead). ``clean``: the recorded tree had no uncommitted change."""

    name: str
    kind: str  # bundle | checkpoint | log | record (the pilots, the open review) | external
    files: tuple[str, ...]
    command: str | None
    runner: str | None
    preset: str | None
    cpu_seconds: float | None
    wall_seconds: float | None
    commit: str | None
    clean: bool | None
    why: str = ""
    created: str | None = None  # when it was made (its provenance), which orders a runner's commands
    claims: tuple[str, ...] = field(default=())
    #: what ``reproduce`` runs, as data (:func:`invocation`): ``{"module": <runner module>, "args": [...]}`` or
    #: ``{"script": "benchmarks/scan.py", "args": [...]}``; None when nothing is run (a record, data, a GPU recipe).
    #: ``command`` stays for people to read; ``reproduce`` runs only this, checked (:func:`checked_argv`).
    run: dict | None = None

    def plain(self) -> dict:
        d = asdict(self)
        d["files"], d["claims"] = list(self.files), list(self.claims)
        return d


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def needs_gpu(command: str | None) -> bool:
    """A command that only a CUDA machine runs: the GPU check (``tools/gpu_check.py``, whose bundles
    ``tools/gpu_collect.py`` writes) and anything run with ``--device cuda``. ``make reproduce`` lists them instead of
    running them."""
    return bool(command) and ("tools/gpu_check.py" in command or "--device cuda" in command)


#: Scripts of the repository that ``reproduce`` may run (by their runner name), besides the registered runner modules.
SCRIPTS = {"bench": BENCH_SCRIPT}
#: Flags whose value names a file or folder: ``reproduce`` never passes them (the runners' defaults write under
#: ``results/``), except the scan benchmark's ``--out results/<name>.json``.
PATH_FLAGS = ("--store", "--out", "--checkpoint", "--log", "--scorecard")
_FLAG = re.compile(r"--[a-z][a-z0-9-]*")
_VALUE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,:=+-]*")
_BENCH_OUT = re.compile(r"results/[A-Za-z0-9_][A-Za-z0-9_.-]*\.json")


def invocation(command: str | None) -> dict | None:
    """What ``reproduce`` runs for a recorded ``command``, as data: ``python -m <module> ARGS`` gives ``{"module": <module>, "args": [ARGS]}``, ``python benchmarks/scan.py ARGS`` gives
    ``{"script": "benchmarks/scan.py", "args": [ARGS]}``; anything else (a GPU recipe in words, None) gives None."""
    if not command or needs_gpu(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) >= 3 and words[0] == "python" and words[1] == "-m":
        return {"module": words[2], "args": words[3:]}
    if len(words) >= 2 and words[0] == "python" and words[1] in SCRIPTS.values():
        return {"script": words[1], "args": words[2:]}
    return None


def _grid_names(args: list[str]) -> list[str]:
    """The experiments ``grid NAME [NAME ...] --flags`` names (the words after ``grid`` up to the first flag)."""
    return list(itertools.takewhile(lambda w: not w.startswith("-"), args[1:]))


def _refuse(name: str, why: str) -> ManifestError:
    return ManifestError(
        f"refusing to run {name}: {why}. reproduce runs only the registered runners (and {BENCH_SCRIPT}) with plain "
        f"arguments; restore the manifest (`{RESTORE}`) or remake it from the results (`{FIX}`)."
    )


def checked_argv(run: dict | None, name: str = "an entry") -> list[str]:
    """The arguments after ``python`` that run ``run`` (an :attr:`Entry.run`), once it is checked: a module must be a
    registered runner (:func:`mamba_recall.runners.experiment_runners`, found on disk, never named by the manifest
    alone) or ``mamba_recall grid`` naming declared experiments (:func:`mamba_recall.experiment.experiments`), a
    script one of :data:`SCRIPTS`; every argument a ``--flag`` or a plain value (no path, no option of
    Python's), ``--preset`` a preset and ``--device`` a device, no flag naming a file (:data:`PATH_FLAGS`) but the
    benchmark's ``--out results/<name>.json``. ManifestError (a one-line refusal) otherwise: a manifest is data, never
    a command line to run as written."""
    from .devices import DEVICES
    from .presets import ALL_PRESETS

    if not isinstance(run, dict) or set(run) not in ({"module", "args"}, {"script", "args"}):
        raise _refuse(name, f"its run is not {{'module' or 'script', 'args'}} ({run!r})")
    args = run["args"]
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise _refuse(name, f"its arguments are not a list of words ({args!r})")
    if "module" in run and run["module"] == "mamba_recall" and args[:1] == ["grid"]:
        # the one command of the declared experiments: python -m mamba_recall grid NAME [NAME ...] --preset P ...
        from .experiment import experiments

        names = _grid_names(args)
        unknown = sorted(set(names) - {e.name for e in experiments()})
        if not names or unknown:
            raise _refuse(name, f"grid names no declared experiment ({', '.join(unknown) or 'none given'})")
        head, script, args = ["-m", "mamba_recall", "grid", *names], None, args[1 + len(names) :]
    elif "module" in run:
        registered = {runners.runner_module(n) for n in runners.experiment_runners()}
        if run["module"] not in registered:
            raise _refuse(name, f"module {run['module']!r} is not a registered runner")
        head, script = ["-m", run["module"]], None
    else:
        if run["script"] not in SCRIPTS.values():
            raise _refuse(name, f"script {run['script']!r} is not one of {sorted(SCRIPTS.values())}")
        head, script = [run["script"]], run["script"]
    flag = None
    for word in args:
        if word.startswith("-"):
            if not _FLAG.fullmatch(word):
                raise _refuse(name, f"argument {word!r} is not a --flag")
            if word in PATH_FLAGS and not (script == BENCH_SCRIPT and word == "--out"):
                raise _refuse(name, f"flag {word} names a file or folder")
            flag = word
            continue
        if flag is None:
            raise _refuse(name, f"argument {word!r} comes before any --flag")
        if flag == "--out":
            if not _BENCH_OUT.fullmatch(word):
                raise _refuse(name, f"--out {word!r} is not results/<name>.json")
        elif not _VALUE.fullmatch(word):
            raise _refuse(name, f"value {word!r} of {flag} is not a plain word")
        elif flag == "--preset" and word not in ALL_PRESETS:
            raise _refuse(name, f"--preset {word!r} is not one of {list(ALL_PRESETS)}")
        elif flag == "--device" and word not in DEVICES:
            raise _refuse(name, f"--device {word!r} is not one of {list(DEVICES)}")
    return [*head, *args]


def reproduce_runs(entries: list[Entry], order: list[str]) -> list[tuple[str, dict | None]]:
    """``(command to show, run)`` for each command of :func:`reproduce_commands`, in its order: the run (the data
    ``reproduce`` executes, checked by :func:`checked_argv`) of the entries that record that command, else the command
    read as one (:func:`invocation`; None for a GPU recipe in words)."""
    out = []
    for command in reproduce_commands(entries, order):
        runs = [e.run for e in entries if e.command == command and e.run is not None]
        out.append((command, runs[0] if runs else invocation(command)))
    return out


def parse_command(command: str | None) -> tuple[str | None, dict[str, tuple[str, ...]]]:
    """``(runner, flags)`` of a recorded command: ``python -m mamba_recall.chapters.ch2_hashing_scaling.runners.scaling
    --preset ci`` gives ``("ch2_scaling", {"--preset": ("ci",)})``; ``python -m mamba_recall grid ch2_thm5 --preset
    ci`` gives ``("ch2_thm5", ...)`` (the experiments it names: every declared experiment runs by its own name); the
    scan benchmark, ``python benchmarks/scan.py ...``, gives ``"bench"``. The runner is a command's family: its
    manifest entry's ``runner``, what ``reproduce --only`` selects and its order follows."""
    if not command:
        return None, {}
    words = shlex.split(command)
    module = words[words.index("-m") + 1] if "-m" in words else ""
    rest = words[words.index("-m") + 2 :] if "-m" in words else words
    if len(words) > 1 and words[1] == BENCH_SCRIPT:
        runner, rest = "bench", words[2:]
    elif module == "mamba_recall" and rest[:1] == ["grid"] and _grid_names(rest):
        names = _grid_names(rest)  # the declared experiments it runs name it, as a runner names its command
        runner, rest = " ".join(names), rest[1 + len(names) :]
    elif module == "mamba_recall" and rest:
        runner, rest = rest[0], rest[1:]
    else:
        runner = runners.runner_name(module) or module.rsplit(".", 1)[-1] or None
    flags: dict[str, list[str]] = {}
    current = None
    for word in rest:
        if word.startswith("--"):
            current = word
            flags[current] = []
        elif current is not None:
            flags[current].append(word)
    return runner, {k: tuple(v) for k, v in flags.items()}


def _cost(record: dict) -> tuple[float | None, float | None]:
    runs = (record.get("data") or {}).get("runs") if isinstance(record.get("data"), dict) else None
    cpu = runs.get("cpu_seconds") if isinstance(runs, dict) else None
    wall = (record.get("provenance") or {}).get("wall_seconds")
    return (round(float(cpu), 1) if cpu is not None else None), (round(float(wall), 1) if wall is not None else None)


def _entry(name: str, kind: str, files: list[str], record: dict) -> Entry:
    command = record.get("command") if isinstance(record.get("command"), str) else None
    runner, flags = parse_command(command)
    config = record.get("config") if isinstance(record.get("config"), dict) else {}
    preset = config.get("preset") or record.get("preset") or (flags.get("--preset") or (None,))[0]
    prov = record.get("provenance") if isinstance(record.get("provenance"), dict) else {}
    cpu, wall = _cost(record)
    dirty = prov.get("git_dirty")
    return Entry(
        name=name,
        kind=kind,
        files=tuple(sorted(files)),
        command=command,
        runner=runner,
        preset=preset,
        cpu_seconds=cpu,
        wall_seconds=wall,
        commit=prov.get("git_commit"),
        clean=None if dirty is None else not dirty,
        created=prov.get("created"),
        run=invocation(command),
    )


def _record(path: Path, what: str, errors: list[str] | None) -> dict | None:
    """The JSON object in ``path`` (a bundle, a sidecar, a pilot record); when it is not one (truncated, not JSON):
    a ManifestError naming the file and the command that regenerates it, or, with ``errors``, that message appended
    there and None."""
    try:
        record = json.loads(path.read_bytes())
        if not isinstance(record, dict):
            raise ValueError("the top level is not a JSON object")
        return record
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        from .results import regenerate_command

        known = _committed_commands(path.parents[2] if what == "checkpoint sidecar" else path.parents[1])
        command = known.get(path.stem) or regenerate_command(path)
        regen = f"regenerate it with: {command}" if what != "record" else "no command makes it"
        message = (
            f"{path}: a corrupt {what} (not valid JSON: {exc}; truncated?); restore it (`git checkout {path.name}` in "
            f"its folder) or {regen}"
        )
        if errors is None:
            raise ManifestError(message) from None
        errors.append(message)
        return None


def _committed_commands(root: Path) -> dict[str, str]:
    """``{entry name: its recorded command}`` of the committed manifest under ``root`` ({} when it cannot be read):
    the command that remakes a file too damaged to say it itself."""
    try:
        return {e.name: e.command for e in _entries(_read(root / "results" / MANIFEST_NAME)) if e.command}
    except ManifestError:
        return {}


def scan(root: Path | None = None, errors: list[str] | None = None) -> list[Entry]:
    """The entries the committed files under ``<root>/results`` make today (claims empty), sorted by name. A file
    that is not valid JSON raises ManifestError naming it and its regenerate command, or, with ``errors``, is
    listed there and left out."""
    root = Path(REPO_ROOT if root is None else root)
    results = root / "results"
    entries: list[Entry] = []
    for path in sorted(results.glob("*.json")):
        if path.name == MANIFEST_NAME:
            continue
        record = _record(path, "result bundle", errors)
        if record is None:
            continue
        tables = [
            results / t["file"] for t in (record.get("tables") or {}).values() if isinstance(t, dict) and t.get("file")
        ]
        entries.append(_entry(path.stem, "bundle", [_rel(p, root) for p in [path, *tables]], record))
    for path in sorted((results / "checkpoints").glob("*.json")):
        record = _record(path, "checkpoint sidecar", errors)
        if record is None:
            continue
        files = [path] + ([path.parent / record["file"]] if record.get("file") else [])
        entries.append(_entry(path.stem, "checkpoint", [_rel(p, root) for p in files], record))
    # a training log next to the checkpoint it made: <runner>_<model>.log (ch4_train_s_mix.log)
    log_owner = {f"{e.runner}_{m}": e for e in entries for m in parse_command(e.command)[1].get("--model", ())}
    for path in sorted(results.glob("*.log")):
        owner = log_owner.get(path.stem)
        base = owner.plain() if owner else {}
        entries.append(
            Entry(
                name=path.stem,
                kind="log",
                files=(_rel(path, root),),
                command=base.get("command"),
                runner=base.get("runner"),
                preset=base.get("preset"),
                cpu_seconds=None,
                wall_seconds=None,
                commit=base.get("commit"),
                clean=base.get("clean"),
                run=base.get("run"),
                why=f"the training log of checkpoint {owner.name}" if owner else "a log no checkpoint claims",
            )
        )
    for path in sorted((results / "pilots").glob("*.json")):
        record = _record(path, "record", errors)
        if record is None:
            continue
        entries.append(
            Entry(path.stem, "record", (_rel(path, root),), None, None, None, None, None, None, None, record["what"])
        )
    external = results / "external"
    for folder in sorted(p for p in (external.iterdir() if external.is_dir() else ()) if p.is_dir()):
        files = tuple(sorted(_rel(p, root) for p in folder.rglob("*") if p.is_file()))
        why = f"data from the papers' authors; provenance in {_rel(folder / 'README.md', root)}"
        entries.append(Entry(folder.name, "external", files, None, None, None, None, None, None, None, why))
    review = results / "review"
    if review.is_dir():  # the open review: referees' readings and the book's answers, not computed by a command
        files = tuple(sorted(_rel(p, root) for p in review.rglob("*") if p.is_file()))
        why = (
            "the open review: per claim the referee's signature or objection and the book's answer "
            "(mamba_recall.claims.review; made by tools/review_assemble.py from the referees' files kept in raw/)"
        )
        entries.append(Entry("open_review", "record", files, None, None, None, None, None, None, None, why))
    return sorted(entries, key=lambda e: (e.kind, e.name))


def stores(root: Path | None = None) -> dict[str, int]:
    """Finished job files per run-store grid under ``results/runs/``."""
    runs = Path(REPO_ROOT if root is None else root) / "results" / "runs"
    return {p.name: len(list(p.glob("*.json"))) for p in sorted(runs.iterdir()) if p.is_dir()} if runs.is_dir() else {}


def _read(path: Path | None = None) -> dict:
    """The committed manifest as written; a clear error (ManifestError, one line naming the file and the fix) when it
    is missing, not JSON (truncated) or not a manifest."""
    path = Path(path) if path else RESULTS_DIR / MANIFEST_NAME
    fix = f"restore it with `{RESTORE}` (then `{FIX}` if results changed since)"
    if not path.exists():
        raise ManifestError(f"no results manifest at {path}; {fix}.")
    try:
        record = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestError(f"the results manifest {path} is not valid JSON ({exc}; truncated?); {fix}.") from None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        got = record.get("schema") if isinstance(record, dict) else type(record).__name__
        raise ManifestError(f"{path} is not a results manifest (schema {got!r}); {fix}.")
    if not isinstance(record.get("entries"), list):
        raise ManifestError(f"the results manifest {path} has no list of entries; {fix}.")
    record["_path"] = str(path)
    return record


def _entries(record: dict) -> list[Entry]:
    try:
        return [Entry(**{**e, "files": tuple(e["files"]), "claims": tuple(e["claims"])}) for e in record["entries"]]
    except (TypeError, KeyError) as exc:
        path = record.get("_path", RESULTS_DIR / MANIFEST_NAME)
        raise ManifestError(
            f"the results manifest {path} has a malformed entry ({exc!r}); restore it with `{RESTORE}`."
        ) from None


def load(path: Path | None = None) -> list[Entry]:
    """The committed manifest's entries; a clear error when it is missing or not a manifest."""
    return _entries(_read(path))


def write(
    claims: dict[str, tuple[str, ...]] | None = None, root: Path | None = None, *, drop: tuple[str, ...] = ()
) -> Path:
    """Rewrite ``results/manifest.json`` from the committed files; ``claims`` (entry → claim ids) from a
    scorecard, else each entry keeps the claims the committed manifest gives it (a renamed checkpoint those of the
    name its sidecar's ``renamed_from`` records).

    Nothing is dropped silently: without ``claims`` the committed manifest must be readable (its claims cannot be
    remade otherwise: ManifestError naming ``git checkout`` and ``--scorecard``), unless git says none was ever
    committed (a new repository: a new manifest with no claims, said on stdout); an entry whose files are gone stays,
    as it was, and :func:`problems` reports it as missing with its command, unless its name is in ``drop`` (a result
    removed on purpose). A file under ``results/`` that is not valid JSON stops the write (ManifestError naming it).
    The new manifest replaces the old one only once wholly written (a full disk: ManifestError, the old one intact,
    no temporary file left)."""
    root = Path(REPO_ROOT if root is None else root)
    path = root / "results" / MANIFEST_NAME
    scanned = scan(root)
    try:
        old = _entries(_read(path))
    except ManifestError as exc:
        if claims is None and not path.exists() and _committed(root, path) is False:
            print(f"note: no results manifest yet at {path} (none committed): writing a new one, with no claims.")
            claims = {}
        if claims is None:
            raise ManifestError(
                f"{exc} Without it the manifest cannot be rewritten: the claims each result serves come from it (or "
                f"from a book pass's scorecard: `{FIX} --scorecard _build/scorecard` after `make book`)."
            ) from None
        old = []
    if claims is None:
        claims = {e.name: e.claims for e in old}
        for e in scanned:  # a checkpoint renamed since (results.rename_checkpoint) keeps the claims of its old name
            if e.kind == "checkpoint" and e.name not in claims:
                was = (_record(root / e.files[0], "checkpoint sidecar", None) or {}).get("renamed_from", [])
                claims[e.name] = next((claims[Path(w).stem] for w in reversed(was) if Path(w).stem in claims), ())
    entries = [Entry(**{**e.plain(), "files": e.files, "claims": tuple(claims.get(e.name, ()))}) for e in scanned]
    found = {e.name for e in scanned}
    renamed = {Path(w).stem for e in scanned if e.kind == "checkpoint" for w in _renamed_from(root, e)}
    kept = [e for e in old if e.name not in found and e.name not in renamed and e.name not in drop]
    entries = sorted([*entries, *kept], key=lambda e: (e.kind, e.name))
    record = {
        "schema": SCHEMA,
        "regenerate": FIX,
        "entries": [e.plain() for e in entries],
        "stores": stores(root),
    }
    _replace(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    return path


def _committed(root: Path, path: Path) -> bool | None:
    """Whether git's HEAD under ``root`` holds ``path`` (a manifest deleted since, not one never made); None without
    git (then a missing manifest is treated as deleted: its claims may exist)."""
    import subprocess

    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
        done = subprocess.run(
            ["git", "-C", str(root), "cat-file", "-e", f"HEAD:{rel}"], capture_output=True, timeout=20, check=False
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    if done.returncode == 0:
        return True
    inside = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, check=False)
    return False if inside.returncode == 0 else None


def _renamed_from(root: Path, entry: Entry) -> list[str]:
    """The names a checkpoint's sidecar says it had (``renamed_from``): its old entries are not missing results."""
    record = _record(root / entry.files[0], "checkpoint sidecar", None) if entry.files else None
    was = (record or {}).get("renamed_from", [])
    return [w for w in was if isinstance(w, str)] if isinstance(was, list) else []


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` over ``path`` whole or not at all (:func:`mamba_recall.atomic.replace_file`); on any OSError
    (a full disk) ``path`` stays as it was and ManifestError says so (one line)."""
    try:
        replace_file(path, data)
    except OSError as exc:
        raise ManifestError(
            f"could not write {path} ({exc.strerror or exc}); it is unchanged. Free the space (or fix the folder's "
            f"permissions) and run `{FIX}` again."
        ) from None


def claims_from_scorecard(scorecard: Path, entries: list[Entry]) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """``({entry name: claim ids}, [sources no entry holds])`` from the evidence sources of a scorecard; a folder that
    is missing or holds no claim record is refused (ManifestError naming ``make book``), never read as a scorecard with
    no claims (which would strip every entry of its claims)."""
    owner = {f: e.name for e in entries for f in e.files}
    found: dict[str, set[str]] = {}
    unknown = []
    records = sorted(Path(scorecard).glob("*.json"))
    if not records:
        why = "does not exist" if not Path(scorecard).is_dir() else "holds no claim record (*.json)"
        raise ManifestError(
            f"scorecard {scorecard} {why}: the claims each result serves cannot be read from it. Run `make book` "
            f"(it writes _build/scorecard) and pass that folder, or leave out --scorecard to keep the committed "
            "manifest's claims."
        )
    for path in records:
        record = json.loads(path.read_text())
        source = ((record.get("evidence") or {}).get("source")) or ""
        for src in (s.strip() for s in source.split(";")):
            if not src.startswith("results/"):
                continue  # live, trained in the notebook, or a smoke run's own output
            if src in owner:
                found.setdefault(owner[src], set()).add(record["claim_id"])
            else:
                unknown.append(f"{record['claim_id']} reads {src}, which no manifest entry holds")
    return {k: tuple(sorted(v)) for k, v in found.items()}, unknown


def problems(root: Path | None = None) -> list[str]:
    """What is wrong with the committed results, one line each with its fix: a result missing from the
    manifest or an entry whose file is gone, a recorded field that differs from the file, a file no entry
    holds, a bundle or checkpoint that does not load, a result made from a dirty tree."""
    from . import results as res

    root = Path(REPO_ROOT if root is None else root)
    try:
        record = _read(root / "results" / MANIFEST_NAME)
        committed = {e.name: e for e in _entries(record)}
    except ManifestError as exc:
        return [str(exc)]
    corrupt: list[str] = []
    found = {e.name: e for e in scan(root, errors=corrupt)}
    unreadable = {Path(line.split(":", 1)[0]).stem for line in corrupt}
    out = list(corrupt)
    out += [
        f"{n}: committed under results/ but not in the manifest; run `{FIX}`."
        for n in sorted(set(found) - set(committed))
    ]
    out += [
        f"{n}: in the manifest but its files ({', '.join(committed[n].files)}) are missing; "
        + (
            f"make it with `{committed[n].command}`"
            if committed[n].command
            else f"restore them with `git checkout {' '.join(committed[n].files)}`"
        )
        + f" (or, if it was removed on purpose, `{FIX} --drop {n}`)."
        for n in sorted(set(committed) - set(found) - unreadable)
    ]
    for name in sorted(set(found) & set(committed)):
        now, then = found[name].plain(), committed[name].plain()
        changed = [k for k in now if k != "claims" and now[k] != then[k]]
        if changed:
            out.append(f"{name}: the manifest's {', '.join(changed)} differ from the files; run `{FIX}`.")
    recorded, held_runs = record.get("stores", {}), stores(root)
    if recorded != held_runs:
        out.append(f"results/runs/: the manifest counts {recorded}, the store holds {held_runs}; run `{FIX}`.")
    held = {f for e in found.values() for f in e.files}
    held |= {f for n in unreadable if n in committed for f in committed[n].files}  # reported above
    for path in sorted((root / "results").rglob("*")):
        rel = _rel(path, root)
        # the run store, and the dataset made from it (checked by `python -m mamba_recall dataset`), hold no bundle
        derived = rel.startswith(("results/runs/", "results/dataset/"))
        if path.is_file() and rel not in held and not derived and path.name != MANIFEST_NAME:
            out.append(f"{rel}: a file under results/ that no bundle, checkpoint, log or record holds.")
    for e in found.values():
        missing = [f for f in e.files if not (root / f).is_file()]
        if missing:
            out.append(f"{e.name}: its files {', '.join(missing)} are missing; make it with `{e.command}`.")
            continue
        try:
            if e.kind == "bundle":
                res.load_bundle(root / "results" / f"{e.name}.json")
            elif e.kind == "checkpoint":
                pt = next(f for f in e.files if not f.endswith(".json"))
                res.read_checkpoint(root / pt, regenerate=e.command or FIX)
        except Exception as exc:  # noqa: BLE001 - every failure is reported with the entry's command
            out.append(f"{e.name}: does not load ({str(exc).splitlines()[0][:300]})")
        if e.kind in ("bundle", "checkpoint") and not e.command:
            out.append(f"{e.name}: records no command that makes it.")
        if e.kind in ("bundle", "checkpoint") and e.clean is not True:
            out.append(
                f"{e.name}: made from a tree with uncommitted changes ({e.commit}); remake it from a clean "
                f"checkout with `{e.command}`."
            )
    return out


def claim_problems(scorecard: Path, root: Path | None = None) -> list[str]:
    """Where a book pass's scorecard and the manifest disagree on which claims read which result."""
    root = Path(REPO_ROOT if root is None else root)
    entries = load(root / "results" / MANIFEST_NAME)
    found, unknown = claims_from_scorecard(scorecard, entries)
    out = list(unknown)
    for e in entries:
        if tuple(found.get(e.name, ())) != tuple(e.claims):
            out.append(
                f"{e.name}: the manifest says claims {list(e.claims)}, the scorecard {list(found.get(e.name, ()))}; "
                f"run `{FIX} --scorecard {scorecard}`."
            )
    return out


def _covers(a: tuple[str | None, dict], b: tuple[str | None, dict]) -> bool:
    """Command ``a`` makes what command ``b`` makes: same runner, same flags apart from the neutral ones, and
    every restricting flag of ``a`` a superset of ``b``'s (absent in ``a``: the whole grid)."""
    (ra, fa), (rb, fb) = a, b
    if ra != rb:
        return False
    for flag in set(fa) | set(fb):
        if flag in NEUTRAL:
            continue
        if flag in RESTRICTING:
            if flag in fa and not (flag in fb and set(fb[flag]) <= set(fa[flag])):
                return False
        elif fa.get(flag) != fb.get(flag):
            return False
    return True


def reproduce_commands(entries: list[Entry], order: list[str]) -> list[str]:
    """The commands that remake every entry, as they record them: each once, a command
    dropped when another of the list covers it (:func:`_covers`), grouped by runner in ``order`` (the runners'
    ``DEPENDS_ON`` order; a declared experiment's ``python -m mamba_recall grid`` command at its runner's place, or
    just before its chapter's first runner where no runner runs it, :func:`_rank`; others first), and within a runner in the order their results were first made."""
    commands = sorted({e.command for e in entries if e.command})
    parsed = {c: parse_command(c) for c in commands}
    kept = [
        c
        for c in commands
        if not any(
            o != c and _covers(parsed[o], parsed[c]) and not (_covers(parsed[c], parsed[o]) and o > c) for o in commands
        )
    ]
    rank = {r: float(i) for i, r in enumerate(order)}
    # within a runner, in the order the results were first made (ch4_train's s_mix starts from s_small's weights)
    first = {c: min((e.created for e in entries if e.command == c and e.created), default="") for c in kept}
    family = {c: parse_command(c)[0] for c in kept}
    return sorted(kept, key=lambda c: (_rank(family[c], rank), first[c], c))


def _rank(family: str | None, rank: dict[str, float]) -> float:
    """The place of a command's runner family in ``rank``; a declared experiment that no runner runs (``grid
    ch1_mechanism``) comes just before its chapter's first runner; anything else first (-1)."""
    if family in rank:
        return rank[family]
    chapter = (family or "").split()[0].split("_", 1)[0] + "_" if (family or "").startswith("ch") else None
    at = [i for r, i in rank.items() if chapter and r.startswith(chapter)]
    return min(at) - 0.5 if at else -1.0
