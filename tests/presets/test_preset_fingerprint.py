"""Every preset resolved, as a fingerprint that a rewrite of the chapters' configs must leave as it is (issue 54,
"presets state only what differs"): a preset written as ``dataclasses.replace(base, <what differs>)`` must resolve
to the values it had when it restated every field.

Four sections, one sha256 each entry (``tests/presets/preset_fingerprint.json``):

* ``values``: every experiment at every preset (``presets.EXPERIMENTS``): its class, its dict and its smoke dict
  (``Sizes.as_dict`` / ``Sizes.smoke``), keys sorted, so that only a changed value, field or smoke cap counts;
* ``order``: the key order of those dicts, nested dicts included (a notebook that prints a preset shows it; the run
  store's keys do not depend on it, ``joblib.hash`` sorts a dict's keys);
* ``constants``: every public value of the chapters' configs modules and of ``presets.sizes`` / ``presets.seeds``
  (``RECIPES``, ``LADDER``, ``SCALING``, the seeds' table, the smoke limits ...), keys sorted;
* ``jobs``: the run-store keys (``runstore.make_job``: the hash of experiment, resolved config and seed) of every
  run-store grid (``plan.grids()``) at every preset it runs, by experiment and preset: a key that changes leaves a
  finished run unfinished.

The one fingerprint of the presets (it replaced an older per-dict one in ``tests/data``). A preset changed on purpose: rewrite the file in the same commit, with
the reason in its message::

    python tests/presets/test_preset_fingerprint.py --write
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import sys
import types
from pathlib import Path

FINGERPRINT = Path(__file__).resolve().parent / "preset_fingerprint.json"

#: the modules whose public values are fingerprinted (``constants``)
MODULES = (
    "mamba_recall.chapters.ch0_selective_scan.configs",
    "mamba_recall.chapters.ch1_gradient_dynamics.configs",
    "mamba_recall.chapters.ch2_hashing_scaling.configs",
    "mamba_recall.chapters.ch2_hashing_scaling.configs_scaling",
    "mamba_recall.chapters.ch3_selectivity.configs",
    "mamba_recall.chapters.ch4_primacy_recency.configs",
    "mamba_recall.chapters.ch5_synthesis.configs",
    "mamba_recall.presets.sizes",
    "mamba_recall.presets.seeds",
)


def _sha(obj, *, sort_keys: bool = True) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=sort_keys).encode()).hexdigest()


def _plain(value):
    """``value`` as JSON values: a :class:`~mamba_recall.presets.sizes.Sizes` as its class, dict and smoke dict;
    another dataclass as its class and fields; None for what JSON cannot hold (a function in a smoke cap)."""
    from mamba_recall.presets.sizes import Sizes

    if isinstance(value, Sizes):
        return {"class": type(value).__name__, "dict": value.as_dict(), "smoke": value.smoke()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "class": type(value).__name__,
            **{f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return None


def _order(value):
    """The key order of a JSON value: a dict as ``[[key, order of its value], ...]``, a list as its items' orders."""
    if isinstance(value, dict):
        return [[k, _order(v)] for k, v in value.items()]
    if isinstance(value, list):
        return [_order(v) for v in value]
    return None


def _public_values(module) -> dict:
    """A module's public names bound to data (not a class, function, module or ``__future__`` feature, nor a smoke
    cap imported from ``presets.sizes``, fingerprinted there)."""
    import __future__

    from mamba_recall.presets import sizes

    out = {}
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, (type, types.ModuleType, __future__._Feature)) or callable(value):
            continue
        if module is not sizes and getattr(sizes, name, None) is value:
            continue
        out[name] = value
    return out


def _job_keys() -> dict[str, list[str]]:
    """Run-store keys of every grid at every preset it runs, by ``experiment/preset`` (sorted, one each)."""
    from mamba_recall import plan
    from mamba_recall.presets import ALL_PRESETS

    keys: dict[str, set[str]] = {}
    for grid in plan.grids():
        for preset in ALL_PRESETS:
            try:
                jobs = grid.jobs(preset)
            except ValueError:  # the grid does not run at this preset (its message says where it does)
                continue
            for job in jobs:
                keys.setdefault(f"{job['experiment']}/{preset}", set()).add(job["key"])
    return {name: sorted(keys[name]) for name in sorted(keys)}


def fingerprint() -> dict[str, dict[str, str]]:
    from mamba_recall.presets import ALL_PRESETS, EXPERIMENTS

    values, order = {}, {}
    for name in sorted(EXPERIMENTS):
        for preset in ALL_PRESETS:
            if preset in EXPERIMENTS[name]:
                plain = _plain(EXPERIMENTS[name][preset])
                values[f"{name}/{preset}"] = _sha(plain)
                order[f"{name}/{preset}"] = _sha(_order(plain), sort_keys=False)
    constants = {}
    for module_name in MODULES:
        for name, value in _public_values(importlib.import_module(module_name)).items():
            constants[f"{module_name.removeprefix('mamba_recall.')}.{name}"] = _sha(_plain(value))
    jobs = {name: _sha(keys) for name, keys in _job_keys().items()}
    return {"values": values, "order": order, "constants": constants, "jobs": jobs}


def _diff(section: str) -> str:
    want = json.loads(FINGERPRINT.read_text())[section]
    got = fingerprint()[section]
    added, gone = sorted(got.keys() - want.keys()), sorted(want.keys() - got.keys())
    changed = sorted(k for k in got.keys() & want.keys() if got[k] != want[k])
    if added or gone or changed:
        return (
            f"{section}: changed {changed}, added {added}, gone {gone}; on purpose? "
            "python tests/presets/test_preset_fingerprint.py --write (and say why in the commit)"
        )
    return ""


def test_every_preset_resolves_to_the_values_fingerprinted():
    assert not _diff("values"), _diff("values")


def test_every_preset_keeps_its_key_order():
    assert not _diff("order"), _diff("order")


def test_the_configs_public_values_are_as_fingerprinted():
    assert not _diff("constants"), _diff("constants")


def test_every_run_store_job_keeps_its_key():
    assert not _diff("jobs"), _diff("jobs")


def test_the_fingerprint_covers_every_experiment_and_the_grids():
    """Not an empty or partial file: every experiment of the registry at each of its presets, and jobs of the
    run-store grids of every chapter that has one."""
    from mamba_recall.presets import EXPERIMENTS

    want = json.loads(FINGERPRINT.read_text())
    assert {k.split("/")[0] for k in want["values"]} == set(EXPERIMENTS)
    assert {k.split("_")[0] for k in want["jobs"]} == {"ch1", "ch2", "ch3", "ch4", "ch5"}
    assert len(want["jobs"]) > 50 and len(want["constants"]) > 20


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    FINGERPRINT.write_text(json.dumps(fingerprint(), indent=1) + "\n")
    print(f"wrote {FINGERPRINT}")
