r"""The authors' own recall-by-position curves of paper 004, read as external reference data.

Paper 004 (Airlangga et al., §4.1 and Fig. 2) plots recall of the $k$-th of $L$ facts for its pretrained
Falcon Mamba 7B. ``results/external/paper-004-authors/`` holds those numbers as aggregated from the authors'
public per-prompt result files (``README.md`` there gives the repository, the commit, the model and the
aggregation; the sidecar ``recall_by_position.json`` gives the licence, Apache-2.0, and the file's sha256).
They are **not** this project's results: nothing in them was run here.

This module reads that file and puts it on the axis the book uses for its own S-model curves:

* per position, $\mathrm{acc}_L(k) = \mathrm{correct}_k / n_k$ with the 95 % Wilson interval of
  :func:`~mamba_recall.analysis.interventions.wilson` (the bands of the book's own curves);
* the relative position $x = (k-1)/(L-1) \in [0, 1]$ ($x=0$ the first fact, $x=1$ the last), so that
  curves of different $L$ share one axis;
* the summary of :func:`~mamba_recall.analysis.interventions.summary`: $\mathrm{acc}(1)$, the middle third
  $\mathcal K_{mid}=\{k : L/3 < k \le 2L/3\}$ with $\overline{\mathrm{acc}}_{mid}$ the mean of
  $\mathrm{acc}(k)$ over it (and the Wilson interval of its pooled counts), $\mathrm{acc}(L)$,
  primacy $=\mathrm{acc}(1)-\overline{\mathrm{acc}}_{mid}$, recency $=\mathrm{acc}(L)-\overline{\mathrm{acc}}_{mid}$,
  U-depth $=\tfrac12(\mathrm{acc}(1)+\mathrm{acc}(L))-\overline{\mathrm{acc}}_{mid}$.

The authors' relation labels map to the chapter's variants: ``same_relation`` (one verb for all facts) is the
paper's *repeated relation*, ``varied`` (a different verb per fact) its *random relation* (§4.1).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from mamba_recall.paths import RESULTS_DIR
from mamba_recall.results import read_bundle_record
from mamba_recall.analysis.interventions import wilson

__all__ = [
    "AUTHORS_DIR",
    "AUTHORS_CSV",
    "AUTHORS_LABEL",
    "COLUMNS",
    "OURS_LABEL",
    "RELATION_TO_VARIANT",
    "ReferenceDataError",
    "load_authors_curves",
    "middle_third",
    "on_relative_axis",
    "relative_position",
    "summarise",
]

AUTHORS_DIR = RESULTS_DIR / "external" / "paper-004-authors"
#: The committed file: one row per (L, relation, queried position).
AUTHORS_CSV = AUTHORS_DIR / "recall_by_position.csv"
#: How charts and tables name the two sources.
AUTHORS_LABEL = "authors' Falcon Mamba 7B (their result files)"
OURS_LABEL = "ours"
#: The file's columns, in order.
COLUMNS = ("source_file", "source_commit", "L", "relation", "position", "n", "correct", "accuracy")
#: The authors' relation labels → the chapter's variants (paper 004, §4.1 and Fig. 1).
RELATION_TO_VARIANT = {"same_relation": "repeated", "varied": "random"}

_RESTORE = "restore the committed file with `git checkout -- results/external/paper-004-authors`"


class ReferenceDataError(ValueError):
    """The external reference file is missing, altered or malformed."""


def relative_position(k, L) -> np.ndarray:
    """$x = (k-1)/(L-1) \\in [0, 1]$ for queried positions ``k`` (1-based) of ``L`` facts (arrays broadcast)."""
    k, L = np.asarray(k, dtype=float), np.asarray(L, dtype=float)
    if np.any(L < 2):
        raise ValueError("relative_position needs L >= 2 facts (with one fact there is no first-to-last axis).")
    if np.any(k < 1) or np.any(k > L) or np.any(k != np.round(k)):
        raise ValueError("relative_position needs integer positions 1 <= k <= L (k is 1-based: 1 = first fact).")
    return (k - 1) / (L - 1)


def middle_third(L: int) -> np.ndarray:
    """The positions of $\\mathcal K_{mid} = \\{k : L/3 < k \\le 2L/3\\}$ (1-based), as in
    :func:`~mamba_recall.analysis.interventions.summary`."""
    k = np.arange(1, int(L) + 1)
    mid = k[(k > L / 3) & (k <= 2 * L / 3)]
    if not len(mid):
        raise ValueError(f"L = {L} has an empty middle third; it needs L >= 2.")
    return mid


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_hash(path: Path) -> None:
    """ReferenceDataError unless ``path`` is the table its sidecar ``<path>.json`` (a result bundle) names, with the
    sha256 recorded there; the sidecar is read by the results layer's reader of a bundle's record
    (:func:`~mamba_recall.results.read_bundle_record`: strict JSON, its content hash checked, else its
    :class:`~mamba_recall.results.BundleError` naming the restore command it records)."""
    side = path.with_suffix(".json")
    if not side.is_file():
        raise ReferenceDataError(
            f"{path} has no sidecar {side.name} recording its sha256; {_RESTORE}, or pass "
            "check_hash=False to read a file of your own."
        )
    entry = (read_bundle_record(side).get("tables") or {}).get("recall_by_position")
    if not isinstance(entry, dict):
        raise ReferenceDataError(f"sidecar {side} lacks tables.recall_by_position; {_RESTORE}.")
    if entry.get("file") != path.name or entry.get("sha256") != _sha256(path):
        raise ReferenceDataError(
            f"{path} does not match the sha256 recorded in {side.name} (edited or truncated); {_RESTORE}."
        )


def load_authors_curves(path: str | Path | None = None, *, check_hash: bool = True) -> pd.DataFrame:
    """The authors' per-position recall as a tidy table, one row per (L, relation, k).

    Columns: ``L``, ``relation`` (the authors' label), ``variant`` (repeated / random), ``k`` (1-based queried
    position), ``x`` = (k−1)/(L−1), ``n`` (prompts at that position), ``correct``, ``acc`` = correct/n,
    ``lo``/``hi`` (95 % Wilson), ``source_file``, ``source_commit``. ``path`` defaults to the committed file,
    whose sha256 is checked against its sidecar unless ``check_hash`` is False.

    Raises :class:`ReferenceDataError` naming what is wrong and the fix: a missing or altered file (a sidecar
    that is not strict JSON or fails its own content hash: :class:`~mamba_recall.results.BundleError`), missing or
    unexpected columns, non-integer counts, positions outside 1..L or not each present once, ``correct``
    outside 0..n, an ``accuracy`` that is not correct/n to four decimals, an unknown relation.
    """
    path = Path(path) if path is not None else AUTHORS_CSV
    if not path.is_file():
        raise ReferenceDataError(f"no reference file at {path}; {_RESTORE}.")
    if check_hash:
        _check_hash(path)
    raw = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in raw.columns]
    extra = [c for c in raw.columns if c not in COLUMNS]
    if missing or extra:
        raise ReferenceDataError(
            f"{path.name}: expected the columns {list(COLUMNS)}; missing {missing}, "
            f"unexpected {extra}. The file must be the aggregation described in README.md."
        )
    if raw.empty:
        raise ReferenceDataError(f"{path.name} has no rows.")
    for col in ("L", "position", "n", "correct"):
        if not pd.api.types.is_integer_dtype(raw[col]):
            raise ReferenceDataError(
                f"{path.name}: column {col!r} must hold whole numbers (counts), "
                f"got {raw[col].dtype}; check the row(s) with blanks or decimals."
            )
    bad = raw[
        (raw["L"] < 2)
        | (raw["position"] < 1)
        | (raw["position"] > raw["L"])
        | (raw["n"] < 1)
        | (raw["correct"] < 0)
        | (raw["correct"] > raw["n"])
    ]
    if len(bad):
        raise ReferenceDataError(
            f"{path.name}: rows {list(bad.index)} break 2 <= L, 1 <= position <= L, n >= 1 or 0 <= correct <= n."
        )
    unknown = sorted(set(raw["relation"]) - set(RELATION_TO_VARIANT))
    if unknown:
        raise ReferenceDataError(
            f"{path.name}: unknown relation label(s) {unknown}; expected one of {sorted(RELATION_TO_VARIANT)}."
        )
    off = raw[(raw["accuracy"] - raw["correct"] / raw["n"]).abs() > 5e-5]
    if len(off):
        raise ReferenceDataError(
            f"{path.name}: rows {list(off.index)} have accuracy != correct / n (four decimals); "
            "the counts and the rate disagree."
        )
    for (L, rel), grp in raw.groupby(["L", "relation"]):
        if sorted(grp["position"]) != list(range(1, L + 1)):
            raise ReferenceDataError(
                f"{path.name}: L = {L}, {rel}: positions {sorted(grp['position'])} are not 1..{L}, each once."
            )
    lo, hi = wilson(raw["correct"].to_numpy(), raw["n"].to_numpy())
    out = pd.DataFrame(
        {
            "L": raw["L"],
            "relation": raw["relation"],
            "variant": raw["relation"].map(RELATION_TO_VARIANT),
            "k": raw["position"],
            "x": relative_position(raw["position"], raw["L"]),
            "n": raw["n"],
            "correct": raw["correct"],
            "acc": raw["correct"] / raw["n"],
            "lo": lo,
            "hi": hi,
            "source_file": raw["source_file"],
            "source_commit": raw["source_commit"],
        }
    )
    return out.sort_values(["relation", "L", "k"], kind="stable").reset_index(drop=True)


def summarise(curves: pd.DataFrame) -> pd.DataFrame:
    """Per (L, relation) of :func:`load_authors_curves`: acc(1), the middle third (its positions, mean and the
    Wilson interval of its pooled counts), acc(L), primacy, recency and U-depth — the definitions of
    :func:`~mamba_recall.analysis.interventions.summary`, so the numbers compare with the book's own table."""
    need = {"L", "relation", "k", "n", "correct"}
    if not need <= set(curves.columns):
        raise ValueError(
            f"summarise needs the columns {sorted(need)} (the table of load_authors_curves); "
            f"missing {sorted(need - set(curves.columns))}."
        )
    rows = []
    for (L, rel), grp in curves.groupby(["L", "relation"], sort=True):
        grp = grp.set_index("k").sort_index()
        if list(grp.index) != list(range(1, L + 1)):
            raise ValueError(f"L = {L}, {rel}: positions {list(grp.index)} are not 1..{L}.")
        acc = grp["correct"] / grp["n"]
        mid = middle_third(L)
        mid_acc = float(acc.loc[mid].mean())
        mlo, mhi = wilson(grp.loc[mid, "correct"].sum(), grp.loc[mid, "n"].sum())
        first, last = float(acc.loc[1]), float(acc.loc[L])
        rows.append(
            {
                "L": int(L),
                "relation": rel,
                "variant": RELATION_TO_VARIANT.get(rel, rel),
                "n per position": int(grp["n"].min()) if grp["n"].nunique() == 1 else "varies",
                "middle third": f"{mid[0]}–{mid[-1]}",
                "acc(1)": first,
                "mid": mid_acc,
                "mid lo": float(mlo),
                "mid hi": float(mhi),
                "acc(L)": last,
                "primacy": first - mid_acc,
                "recency": last - mid_acc,
                "U-depth": 0.5 * (first + last) - mid_acc,
            }
        )
    return pd.DataFrame(rows)


def on_relative_axis(frame: pd.DataFrame) -> pd.DataFrame:
    """Our curves (a tidy table with columns ``model``, ``L``, ``k``, ``acc``; ``lo``/``hi``/``variant``
    optional, e.g. ``views.primacy.curve_frame`` output with a ``model`` column) with ``x`` = (k−1)/(L−1)
    added, the axis :func:`load_authors_curves` puts the authors' curves on."""
    need = ["model", "L", "k", "acc"]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValueError(
            f"our curves need the columns {need}; missing {missing} (add the model's name with "
            "frame.assign(model=...))."
        )
    if not frame["acc"].between(0, 1).all():
        raise ValueError("our curves' acc must lie in [0, 1] (a recall rate, not a percentage).")
    return frame.assign(x=relative_position(frame["k"], frame["L"]))
