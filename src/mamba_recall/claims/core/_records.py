"""Records: a measurement as plain JSON and back (stored in bundles, re-judged later), the verdict of a claim
that was not run, and the scorecard's files (:func:`record_verdict`, :func:`load_verdicts`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ...atomic import disk_full, replace_file
from ...results import smoke_active
from ._types import Claim, ClaimError, Control, Evidence, Measurement, Verdict


def not_run_verdict(claim: Claim, reason: str | None = None) -> Verdict:
    return Verdict(
        claim.id,
        claim.statement,
        claim.where,
        claim.printed,
        "not run",
        "",
        claim.rule.text(),
        [],
        None,
        reason or claim.not_run,
        "",
        claim.section,
        quote=claim.quote,
        setting=claim.setting,
        analogue=claim.analogue,
        revisions=[asdict(r) for r in claim.revisions],
        cause=claim.cause,
    )


def measurement_record(m: Measurement) -> dict:
    """``m`` as plain JSON data (numpy numbers → Python), to be stored in a bundle and re-judged later
    (:func:`measurement_from_record`)."""
    return json.loads(json.dumps(asdict(m), default=lambda o: o.item() if hasattr(o, "item") else str(o)))


def measurement_from_record(d: dict) -> Measurement:
    return Measurement(
        d["values"],
        d["shown"],
        Evidence(**d["evidence"]),
        {k: tuple(v) for k, v in d.get("intervals", {}).items()},
        d.get("per_seed", {}),
        d.get("note", ""),
        _control_from_record(d.get("control")),
    )


def _control_from_record(d: dict | None) -> Control | None:
    if not d:
        return None
    return Control(d["kind"], d["what"], measurement_from_record(d["measurement"]))


# ------------------------------------------------------------------------------------------ records
def _dir(directory: Path | None) -> Path:
    from ...paths import scorecard_dir

    return Path(directory or scorecard_dir())


def record_verdict(v: Verdict, directory: Path | None = None) -> Path:
    """Write ``v`` where the build collects verdicts; a smoke run's go to ``<that folder>/smoke/``, which the
    scorecard never reads."""
    folder = _dir(directory) / ("smoke" if smoke_active() or (v.evidence or {}).get("smoke") else "")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (v.claim_id.replace("/", "__") + ".json")
    _replace_atomically(path, (json.dumps(asdict(v), indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    return path


def _replace_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` over ``path`` whole or not at all (:func:`mamba_recall.atomic.replace_file`): ``path`` is the
    previous record or the complete new one, never a truncated file. A full disk (``ENOSPC``, or a quota:
    ``EDQUOT``) raises an :class:`OSError` with one line naming the file and the fix."""
    try:
        replace_file(path, data)
    except OSError as exc:
        if disk_full(exc):
            kept = f"the previous record {path} is unchanged" if path.exists() else f"nothing was written to {path}"
            raise OSError(
                exc.errno,
                f"no space left to record the verdict in {path.parent} ({exc.strerror or exc}); {kept}. Free some "
                "disk space (or point MAMBA_RECALL_SCORECARD_DIR at a disk with room) and re-run the notebook.",
            ) from exc
        raise


def load_verdicts(directory: Path | None = None) -> dict[str, Verdict]:
    """Recorded verdicts by claim id (a corrupt record raises, naming the file and the fix)."""
    out = {}
    folder = _dir(directory)
    for path in sorted(folder.glob("*__*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            data["checks"] = [tuple(c) for c in data["checks"]]
            data["intervals"] = {k: tuple(v) for k, v in data.get("intervals", {}).items()}
            v = Verdict(**data)
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError, KeyError) as exc:
            raise ClaimError(f"recorded verdict {path} is corrupt ({exc}); delete it and re-run its notebook.") from exc
        out[v.claim_id] = v
    return out
