"""The one loader of an experiment's evidence: :func:`evidence` (the strongest complete committed bundle of an
experiment, or a clear error naming what is missing and the command that makes it). Every chapter reads its bundles
through it; :func:`~mamba_recall.results.load_bundle` stays the reader of one file it calls."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

from . import _bundles
from ._records import Bundle, BundleMissing

#: The presets in order of the strength of their evidence (the papers' whole grids, their settings on part of the
#: grid with 3 seeds, the small CI version).
EVIDENCE_ORDER = ("paper", "cpu-hours", "ci")


class BundleIncomplete(BundleMissing):
    """The bundle exists but says it is incomplete (``data.complete`` false: a grid still running): not evidence for a
    verdict yet. A :class:`BundleMissing`, so a reader that may answer a missing bundle with weaker evidence (saying
    so) answers this one the same way."""


def _recorded_command(path: Path) -> str | None:
    """The command recorded in the bundle at ``path`` as it is run today, or None (no file, or none readable)."""
    if not path.is_file():
        return None
    return _bundles.regenerate_command(path)


def _with_preset(command: str, preset: str) -> str:
    """``command`` with its ``--preset X`` replaced by ``--preset <preset>``; a command without one is kept."""
    return re.sub(r"--preset(\s+|=)\S+", lambda m: f"--preset{m.group(1)}{preset}", command)


def _manifest_command(directory: Path, bundle: str) -> str | None:
    """The command the committed manifest (``<directory>/manifest.json``) records for ``bundle``, or None."""
    try:
        entries = json.loads((directory / "manifest.json").read_text())["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, dict) and e.get("name") == bundle and isinstance(e.get("command"), str):
            return e["command"]
    return None


def make_command(name: str, preset: str, directory: Path | None = None) -> str:
    """The command that makes the bundle ``<name>_<preset>``: the one it records (or the manifest records) when it is
    there, else the command a sibling bundle of the same experiment records with its preset swapped, else
    ``python -m mamba_recall reproduce`` for the runner whose name starts the experiment's
    (:func:`~mamba_recall.results.regenerate_command`)."""
    directory = Path(directory) if directory else Path(_bundles.RESULTS_DIR)
    target = directory / f"{name}_{preset}.json"
    found = _recorded_command(target) or _manifest_command(directory, target.stem)
    if found:
        return found
    for other in EVIDENCE_ORDER:
        sibling = _recorded_command(directory / f"{name}_{other}.json") or _manifest_command(
            directory, f"{name}_{other}"
        )
        if sibling and "--preset" in sibling:
            return _with_preset(sibling, preset)
    return _bundles.regenerate_command(target)


def _incomplete(bundle: Bundle) -> str | None:
    """Why ``bundle`` is not complete evidence (``data.complete`` false), or None."""
    if bundle.data.get("complete") is False:
        return f"incomplete: {bundle.data.get('jobs_finished')} of {bundle.data.get('jobs_total')} jobs"
    return None


def evidence(
    name: str,
    *,
    preset: str | None = None,
    data_keys: tuple[str, ...] = (),
    directory: Path | None = None,
    lacks: Callable[[Bundle], str | None] | None = None,
    complete: bool = True,
    weaker: bool = False,
    log: Callable[[str], object] | None = None,
) -> Bundle:
    """The evidence of experiment ``name``: its committed bundle ``<name>_<preset>`` (``results/``, or
    ``directory``).

    ``preset`` None: the strongest complete one (:data:`EVIDENCE_ORDER`: paper, then cpu-hours, then ci), skipping a
    bundle that says it is incomplete (``data.complete`` false: a grid still running) or that ``lacks(bundle)`` says
    lacks what the caller's check needs (a string: what; None: nothing); ``log`` (default: quiet) is told which
    bundle is used and which were skipped. ``preset`` given: that preset's bundle and no other; with ``weaker``, where
    that preset's bundle was never made (absent: a paper-size run needs a GPU), the next weaker preset's that was
    (:data:`EVIDENCE_ORDER` after ``preset``), **saying so** through ``log`` (``print`` where none is given): what a
    page shows for the run's own preset (``evidence(name, preset=ctx.preset, weaker=True)``); an incomplete or corrupt
    bundle still raises, never replaced by a weaker one.

    Errors name the problem and the command that makes the bundle (:func:`make_command`: the command the bundle's
    siblings or the manifest record): :class:`~mamba_recall.results.BundleMissing` when there is none (for
    ``preset`` None: no complete one for any preset), :class:`BundleIncomplete` (a ``BundleMissing``) when the
    asked preset's bundle is incomplete (``complete=False`` takes it anyway: a page that shows a running grid beside
    the evidence, labelled partial), and the loader's :class:`~mamba_recall.results.BundleError` when a bundle is
    corrupt (never replaced by weaker evidence). ``data_keys``: keys the bundle's ``data`` must have."""
    directory = Path(directory) if directory else Path(_bundles.RESULTS_DIR)
    if preset is not None:
        path = directory / f"{name}_{preset}.json"
        if weaker and not path.exists():
            path = _weaker(name, preset, directory, log if log is not None else print)
        if not path.exists():
            raise BundleMissing(
                f"no result bundle {path.stem} in {directory}; make it with: {make_command(name, preset, directory)}"
            )
        bundle = _bundles.load_bundle(path, data_keys=data_keys)
        why = _incomplete(bundle) if complete else None
        if why:
            raise BundleIncomplete(
                f"result bundle {path.stem} is {why}: not evidence yet; finish it with: {bundle.command}"
            )
        return bundle
    skipped, resume = [], None
    for candidate in EVIDENCE_ORDER:
        path = directory / f"{name}_{candidate}.json"
        if not path.exists():
            continue
        bundle = _bundles.load_bundle(path, data_keys=data_keys)
        why = (_incomplete(bundle) if complete else None) or (lacks(bundle) if lacks is not None else None)
        if why:
            skipped.append(f"{path.stem} ({why})")
            resume = resume or bundle.command
            continue
        if log is not None:
            log(f"using {path.stem}" + (f"; skipped {', '.join(skipped)}" if skipped else ""))
        return bundle
    raise BundleMissing(
        f"no complete bundle {name}_<preset> for any of {EVIDENCE_ORDER} in {directory}"
        + (f" (skipped: {', '.join(skipped)})" if skipped else "")
        + f"; make one with: {resume or make_command(name, 'ci', directory)}"
    )


def _weaker(name: str, preset: str, directory: Path, log: Callable[[str], object]) -> Path:
    """The path of the strongest bundle of ``name`` weaker than ``preset`` that exists (told to ``log``), else the
    absent ``<name>_<preset>`` (the caller names the command that makes it)."""
    if preset not in EVIDENCE_ORDER:
        raise ValueError(
            f"evidence({name!r}, preset={preset!r}, weaker=True): weaker than what? name one of {EVIDENCE_ORDER}."
        )
    asked = directory / f"{name}_{preset}.json"
    for other in EVIDENCE_ORDER[EVIDENCE_ORDER.index(preset) + 1 :]:
        path = directory / f"{name}_{other}.json"
        if path.exists():
            log(
                f"no {asked.stem} bundle in {directory} (make it with `{make_command(name, preset, directory)}`); "
                f"using the committed {other} bundle {path.stem}"
            )
            return path
    return asked
