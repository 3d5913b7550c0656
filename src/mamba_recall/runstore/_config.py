"""Typed job configs: a job's config as a frozen dataclass (:class:`JobConfig`), turned into the record its key hashes.

Every job is typed: its config is an instance of a :class:`JobConfig` subclass (``@dataclass(frozen=True,
kw_only=True)``, one per kind of job, declared beside the job function that reads it: a chapter's runners' in
``chapters/<chapter>/runners/job_configs.py``, the run store's demo grid's in :mod:`._demo`), and a declared
experiment's jobs are ``(config, seed)`` pairs of them; a dict is refused (:func:`config_record`).
:func:`mamba_recall.runstore.make_job` turns a config into its record, :meth:`JobConfig.to_record` (the plain dict of
JSON values that the job's key hashes and its run file keeps, in field order; a field declared :func:`omitted_if_none`
and left None is absent, so a record keeps the keys its dict had before the job was typed), and keeps the class's name
beside it (the job's ``config_type``); the job function receives the config read back from the record, typed:
``run_job(config, seed)`` with ``config.D``, not ``config["D"]``. The key is that of the record, so a config written as
a dataclass keeps the key its dict had, and a job stays plain JSON. A run read back from its file has that record as its
``config``, a dict, as it was written.

Building an instance checks every field against its annotation (``int``, ``float`` (an ``int`` too), ``str``,
``bool``, ``list[...]``, ``tuple[...]``, ``dict[str, ...]``, unions, ``Any``, a nested :class:`JobConfig`) by the
typed sizes' checker (:func:`mamba_recall.presets.sizes.check_fields`), so a wrong type fails where the config is
made, naming the field; :meth:`JobConfig.from_record` builds one from a
record (a run file's ``config``) and names an unknown or a missing field.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from ..presets.sizes import check_fields

__all__ = ["JobConfig", "omitted_if_none", "config_record", "config_type", "config_class"]


def omitted_if_none(default: Any = None):
    """A :class:`JobConfig` field that only some jobs have: default None, and absent from the record when None (the
    key of a job whose dict had no such entry)."""
    return field(default=default, metadata={"omitted_if_none": True})


def _record(value):
    """``value`` as a record's value: a nested :class:`JobConfig` as its record, a tuple as a list, dicts and lists
    item by item."""
    if isinstance(value, JobConfig):
        return value.to_record()
    if isinstance(value, dict):
        return {k: _record(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_record(v) for v in value]
    return value


def _nested_class(hint) -> type[JobConfig] | None:
    """The :class:`JobConfig` class an annotation names (alone or in a union with None), else None."""
    for h in typing.get_args(hint) or (hint,):
        if isinstance(h, type) and issubclass(h, JobConfig):
            return h
    return None


def _is_tuple(hint) -> bool:
    """Whether an annotation is a ``tuple[...]``, alone or in a union with None (a field declared
    :func:`omitted_if_none`)."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    return any(typing.get_origin(h) is tuple for h in (typing.get_args(hint) if union else (hint,)))


@dataclass(frozen=True, kw_only=True)
class JobConfig:
    """Base of the typed job configs (module docstring): checked when built, recorded by :meth:`to_record`."""

    def __post_init__(self):
        check_fields(self, optional="omitted_if_none", fix="give it that type where the config is made ({module}).")

    def to_record(self) -> dict:
        """The record of this config: the plain dict the job's key hashes and its run file keeps (fields in
        declaration order; a field declared :func:`omitted_if_none` and None is absent)."""
        return {
            f.name: _record(getattr(self, f.name))
            for f in fields(self)
            if not (f.metadata.get("omitted_if_none") and getattr(self, f.name) is None)
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]):
        """The config whose :meth:`to_record` is ``record`` (a run file's ``config``); lists stay lists (a field
        declared a tuple, or a tuple or None, takes the tuple of the list). TypeError naming the fields not declared,
        or missing, and the class's fields."""
        if not isinstance(record, Mapping):
            raise TypeError(f"{cls.__name__}.from_record: a dict of its fields, got {type(record).__name__}.")
        declared = {f.name: f for f in fields(cls)}
        unknown = sorted(set(record) - set(declared))
        required = {
            n
            for n, f in declared.items()
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        missing = sorted(required - set(record))
        if unknown or missing:
            raise TypeError(
                f"{cls.__name__}.from_record: unknown fields {unknown}, missing fields {missing}; its fields are "
                f"{', '.join(declared)} (a field a job needs is declared on {cls.__name__} in {cls.__module__})."
            )
        hints = typing.get_type_hints(cls)
        kw = {}
        for name, value in record.items():
            nested = _nested_class(hints[name])
            if nested is not None and isinstance(value, Mapping):
                value = nested.from_record(value)
            elif isinstance(value, list) and _is_tuple(hints[name]):
                value = tuple(value)
            kw[name] = value
        return cls(**kw)


def config_record(config: JobConfig) -> dict:
    """The record of a job's ``config``, a :class:`JobConfig`: its :meth:`~JobConfig.to_record`. TypeError naming the
    fix for anything else: a dict (every job is typed: declare its config as a :class:`JobConfig` subclass in its
    chapter's ``runners/job_configs.py``; a run read back from its file has its record, ``config``, already), another
    dataclass (make it a :class:`JobConfig`)."""
    if isinstance(config, JobConfig):
        return config.to_record()
    raise TypeError(
        f"a job's config is a JobConfig (mamba_recall.runstore.JobConfig, a frozen dataclass), got "
        f"{type(config).__name__}; declare its fields as a JobConfig subclass (@dataclass(frozen=True, "
        "kw_only=True)) beside the job function that reads it (a chapter's runners declare theirs in "
        "chapters/<chapter>/runners/job_configs.py) and make the job from an instance of it."
    )


def config_type(config: JobConfig) -> str:
    """``"module:Class"`` of a typed config: what a job records to read its config back (:func:`config_class`)."""
    cls = type(config)
    if "<locals>" in cls.__qualname__:
        raise TypeError(f"{cls.__qualname__}: declare a JobConfig class at module level (a job's worker imports it).")
    return f"{cls.__module__}:{cls.__qualname__}"


def config_class(ref: str) -> type[JobConfig]:
    """The :class:`JobConfig` class ``"module:Class"`` names (:func:`config_type`); TypeError when it is not one."""
    module, _, name = ref.partition(":")
    cls = importlib.import_module(module)
    for part in name.split("."):
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and issubclass(cls, JobConfig)):
        raise TypeError(f"config_type {ref!r} names {cls!r}, not a JobConfig class.")
    return cls
