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

``python -m mamba_recall manifest --write [--scorecard DIR]`` rewrites it after a result changes (the claims
from ``DIR``, by default the book pass's ``_build/scorecard``; without a scorecard the committed claims stay).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import runners
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
    "current_command",
    "needs_gpu",
]

SCHEMA = "mamba_recall.manifest"
MANIFEST_NAME = "manifest.json"
#: Flags that pick a subset of a runner's grid; a command without one (or with a superset) makes the subset too.
RESTRICTING = ("--only", "--parts", "--recipes", "--models")
#: Flags that do not change what a command makes.
NEUTRAL = ("--device", "--allow-long", "--jobs", "--threads")
FIX = "python -m mamba_recall manifest --write"
#: The scan benchmark, a script of the repository (not a module of the library), as its bundles record it; runner
#: ``"bench"``. Bundles made before it left the library record ``python -m mamba_recall bench ...`` instead.
BENCH_SCRIPT = "benchmarks/scan.py"
_OLD_BENCH = ("python", "-m", "mamba_recall", "bench")


@dataclass(frozen=True)
class Entry:
    """One committed result. ``files``: repository-relative paths. ``command``: None for a record or external
    data (``why`` says what it is instead). ``clean``: the recorded tree had no uncommitted change."""

    name: str
    kind: str  # bundle | checkpoint | log | record | external
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

    def plain(self) -> dict:
        d = asdict(self)
        d["files"], d["claims"] = list(self.files), list(self.claims)
        return d


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def current_command(command: str | None) -> str | None:
    """``command`` as it is run today: the scan benchmark's old recorded form (``python -m mamba_recall bench
    ARGS``, from when it was a module of the library) becomes ``python benchmarks/scan.py ARGS``; a runner's old
    module path (``python -m mamba_recall.experiments.ch3_keep_nth ...``, from before each chapter had its folder)
    becomes its chapter's runner module, and a runner merged into another its new runner's
    (:func:`mamba_recall.runners.current_command`); any other command (or None) is returned as it is."""
    if not command:
        return command
    words = shlex.split(command)
    if tuple(words[: len(_OLD_BENCH)]) == _OLD_BENCH:
        return shlex.join(["python", BENCH_SCRIPT, *words[len(_OLD_BENCH) :]])
    return runners.current_command(command)


def needs_gpu(command: str | None) -> bool:
    """A command that only a CUDA machine runs: the GPU check (``tools/gpu_check.py``, whose bundles
    ``tools/gpu_collect.py`` writes) and anything run with ``--device cuda``. ``make reproduce`` lists them instead of
    running them."""
    return bool(command) and ("tools/gpu_check.py" in command or "--device cuda" in command)


def parse_command(command: str | None) -> tuple[str | None, dict[str, tuple[str, ...]]]:
    """``(runner, flags)`` of a recorded command: ``python -m mamba_recall.chapters.ch2_hashing_scaling.runners.scaling
    --preset ci`` (or its old recorded form ``python -m mamba_recall.experiments.ch2_scaling --preset ci``) gives
    ``("ch2_scaling", {"--preset": ("ci",)})``, a merged runner's command its new runner (``ch2_figs_cpu`` gives
    ``ch2_scaling``, :data:`mamba_recall.runners.MERGED`); the scan benchmark, ``python benchmarks/scan.py ...`` (or
    its old recorded form ``python -m mamba_recall bench ...``), gives ``"bench"``."""
    if not command:
        return None, {}
    words = shlex.split(command)
    module = words[words.index("-m") + 1] if "-m" in words else ""
    rest = words[words.index("-m") + 2 :] if "-m" in words else words
    if len(words) > 1 and words[1] == BENCH_SCRIPT:
        runner, rest = "bench", words[2:]
    elif module == "mamba_recall" and rest:
        runner, rest = rest[0], rest[1:]
    else:
        runner = runners.runner_name(runners.current_module(module)) or module.rsplit(".", 1)[-1] or None
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
    )


def scan(root: Path | None = None) -> list[Entry]:
    """The entries the committed files under ``<root>/results`` make today (claims empty), sorted by name."""
    root = Path(REPO_ROOT if root is None else root)
    results = root / "results"
    entries: list[Entry] = []
    for path in sorted(results.glob("*.json")):
        if path.name == MANIFEST_NAME:
            continue
        record = json.loads(path.read_text())
        tables = [results / t["file"] for t in (record.get("tables") or {}).values()]
        entries.append(_entry(path.stem, "bundle", [_rel(p, root) for p in [path, *tables]], record))
    for path in sorted((results / "checkpoints").glob("*.json")):
        record = json.loads(path.read_text())
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
                why=f"the training log of checkpoint {owner.name}" if owner else "a log no checkpoint claims",
            )
        )
    for path in sorted((results / "pilots").glob("*.json")):
        record = json.loads(path.read_text())
        entries.append(
            Entry(path.stem, "record", (_rel(path, root),), None, None, None, None, None, None, None, record["what"])
        )
    external = results / "external"
    for folder in sorted(p for p in (external.iterdir() if external.is_dir() else ()) if p.is_dir()):
        files = tuple(sorted(_rel(p, root) for p in folder.rglob("*") if p.is_file()))
        why = f"data from the papers' authors; provenance in {_rel(folder / 'README.md', root)}"
        entries.append(Entry(folder.name, "external", files, None, None, None, None, None, None, None, why))
    return sorted(entries, key=lambda e: (e.kind, e.name))


def stores(root: Path | None = None) -> dict[str, int]:
    """Finished job files per run-store grid under ``results/runs/``."""
    runs = Path(REPO_ROOT if root is None else root) / "results" / "runs"
    return {p.name: len(list(p.glob("*.json"))) for p in sorted(runs.iterdir()) if p.is_dir()} if runs.is_dir() else {}


def _read(path: Path | None = None) -> dict:
    """The committed manifest as written; a clear error when it is missing or not a manifest."""
    path = Path(path) if path else RESULTS_DIR / MANIFEST_NAME
    if not path.exists():
        raise FileNotFoundError(f"no results manifest at {path}; make it with `{FIX}`.")
    record = json.loads(path.read_text())
    if record.get("schema") != SCHEMA:
        raise ValueError(f"{path} is not a results manifest (schema {record.get('schema')!r}); remake it: `{FIX}`.")
    return record


def _entries(record: dict) -> list[Entry]:
    return [Entry(**{**e, "files": tuple(e["files"]), "claims": tuple(e["claims"])}) for e in record["entries"]]


def load(path: Path | None = None) -> list[Entry]:
    """The committed manifest's entries; a clear error when it is missing or not a manifest."""
    return _entries(_read(path))


def write(claims: dict[str, tuple[str, ...]] | None = None, root: Path | None = None) -> Path:
    """Rewrite ``results/manifest.json`` from the committed files; ``claims`` (entry → claim ids) from a
    scorecard, else each entry keeps the claims the committed manifest gives it (a renamed checkpoint those of the
    name its sidecar's ``renamed_from`` records)."""
    root = Path(REPO_ROOT if root is None else root)
    path = root / "results" / MANIFEST_NAME
    scanned = scan(root)
    if claims is None:
        claims = {e.name: e.claims for e in load(path)} if path.exists() else {}
        for e in scanned:  # a checkpoint renamed since (results.rename_checkpoint) keeps the claims of its old name
            if e.kind == "checkpoint" and e.name not in claims:
                was = json.loads((root / e.files[0]).read_text()).get("renamed_from", [])
                claims[e.name] = next((claims[Path(w).stem] for w in reversed(was) if Path(w).stem in claims), ())
    entries = [Entry(**{**e.plain(), "files": e.files, "claims": tuple(claims.get(e.name, ()))}) for e in scanned]
    record = {
        "schema": SCHEMA,
        "regenerate": FIX,
        "entries": [e.plain() for e in entries],
        "stores": stores(root),
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def claims_from_scorecard(scorecard: Path, entries: list[Entry]) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """``({entry name: claim ids}, [sources no entry holds])`` from the evidence sources of a scorecard."""
    owner = {f: e.name for e in entries for f in e.files}
    found: dict[str, set[str]] = {}
    unknown = []
    for path in sorted(Path(scorecard).glob("*.json")):
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
    except (FileNotFoundError, ValueError) as exc:
        return [str(exc)]
    committed = {e.name: e for e in _entries(record)}
    found = {e.name: e for e in scan(root)}
    out = [
        f"{n}: committed under results/ but not in the manifest; run `{FIX}`."
        for n in sorted(set(found) - set(committed))
    ]
    out += [
        f"{n}: in the manifest but no longer under results/; run `{FIX}`." for n in sorted(set(committed) - set(found))
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
    for path in sorted((root / "results").rglob("*")):
        rel = _rel(path, root)
        if path.is_file() and rel not in held and not rel.startswith("results/runs/") and path.name != MANIFEST_NAME:
            out.append(f"{rel}: a file under results/ that no bundle, checkpoint, log or record holds.")
    for e in found.values():
        missing = [f for f in e.files if not (root / f).is_file()]
        if missing:
            out.append(
                f"{e.name}: its files {', '.join(missing)} are missing; make it with `{current_command(e.command)}`."
            )
            continue
        try:
            if e.kind == "bundle":
                res.load_bundle(root / "results" / f"{e.name}.json")
            elif e.kind == "checkpoint":
                pt = next(f for f in e.files if not f.endswith(".json"))
                res.read_checkpoint(root / pt, regenerate=current_command(e.command) or FIX)
        except Exception as exc:  # noqa: BLE001 - every failure is reported with the entry's command
            out.append(f"{e.name}: does not load ({str(exc).splitlines()[0][:300]})")
        if e.kind in ("bundle", "checkpoint") and not e.command:
            out.append(f"{e.name}: records no command that makes it.")
        if e.kind in ("bundle", "checkpoint") and e.clean is not True:
            out.append(
                f"{e.name}: made from a tree with uncommitted changes ({e.commit}); remake it from a clean "
                f"checkout with `{current_command(e.command)}`."
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
    """The commands that remake every entry, as they are run today (:func:`current_command`): each once, a command
    dropped when another of the list covers it (:func:`_covers`), grouped by runner in ``order`` (the runners'
    ``DEPENDS_ON`` order; others first), and within a runner in the order their results were first made."""
    commands = sorted({current_command(e.command) for e in entries if e.command})
    parsed = {c: parse_command(c) for c in commands}
    kept = [
        c
        for c in commands
        if not any(
            o != c and _covers(parsed[o], parsed[c]) and not (_covers(parsed[c], parsed[o]) and o > c) for o in commands
        )
    ]
    rank = {r: i for i, r in enumerate(order)}
    # within a runner, in the order the results were first made (ch4_train's s_mix starts from s_small's weights)
    first = {
        c: min((e.created for e in entries if current_command(e.command) == c and e.created), default="") for c in kept
    }
    return sorted(kept, key=lambda c: (rank.get(parsed[c][0], -1), first[c], c))
