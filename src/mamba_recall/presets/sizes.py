"""Typed sizes: an experiment's sizes as a frozen dataclass whose every field declares its type and its smoke cap.

A chapter declares one class per kind of sizes (a subclass of :class:`Sizes` decorated
``@dataclass(frozen=True, kw_only=True)``, each field a :func:`size`; a field that only some presets have is
``size(optional=True)``) and gives each preset an instance; :func:`mamba_recall.presets.experiment` returns the instance's
:meth:`~Sizes.as_dict` (the plain dict every runner and notebook reads) or, with ``smoke=True``, its
:meth:`~Sizes.smoke` (each field capped as it declares). Building an instance checks every field against its
annotation, so a typo or a wrong type in a preset fails at import with the field named.

Why frozen dataclasses and not pydantic models: a preset is a handful of numbers and lists whose checks are a few
lines (:func:`check_fields`), the training recipe (:class:`mamba_recall.train.Recipe`) is a frozen dataclass
already, and the library takes no dependency for what the standard library does. A preset states only what differs
from another: ``dataclasses.replace(base, <the fields that differ>)`` (checked like a new preset), and a kind of sizes
that adds fields to another extends its class (Chapter 4's ``EdgeRecipe`` is an ``SModelRecipe`` with filler gaps).

The smoke caps (the rule of the module docstring of :mod:`mamba_recall.presets`, declared per field instead of
guessed from the key's name):

* :data:`KEEP`: unchanged (model sizes, lengths, names, learning rates);
* :data:`AXIS`: a grid axis keeps its first and last values (a list of more than 2 entries; in a dict, each value);
* :data:`STEPS` / :data:`EVERY` (``SMOKE_STEPS``), :data:`SCHEDULE` (1), :data:`BATCH` (``SMOKE_BATCH``),
  :data:`COUNT` (``SMOKE_COUNT``), :data:`SAMPLES` (``SMOKE_SAMPLES``): an integer at most that;
* :func:`fixed` ``(value)``: this value in every preset's smoke run (an experiment's own exception);
* :func:`derived` ``(fn)``: ``fn(value)``, for a cap that depends on the preset's value (e.g. keep the first cell
  and the first 2-layer cell);
* a nested :class:`Sizes` is capped field by field; a dict of them, each.
"""

from __future__ import annotations

import copy
import types
import typing
from dataclasses import dataclass, field, fields

__all__ = [
    "AXIS",
    "BATCH",
    "COUNT",
    "EVERY",
    "KEEP",
    "SAMPLES",
    "SCHEDULE",
    "STEPS",
    "Sizes",
    "check_fields",
    "derived",
    "fixed",
    "matches",
    "size",
]

# the caps' limits: the generic rule's numbers (presets/__init__.py), so both ways cap alike
SMOKE_STEPS, SMOKE_SAMPLES, SMOKE_BATCH, SMOKE_COUNT = 4, 16, 8, 2


@dataclass(frozen=True)
class _Cap:
    kind: str
    limit: int | None = None
    value: object = None


KEEP = _Cap("keep")
AXIS = _Cap("axis")
STEPS = _Cap("at most", SMOKE_STEPS)
EVERY = _Cap("at most", SMOKE_STEPS)
SCHEDULE = _Cap("at most", 1)
BATCH = _Cap("at most", SMOKE_BATCH)
COUNT = _Cap("at most", SMOKE_COUNT)
SAMPLES = _Cap("at most", SMOKE_SAMPLES)


def fixed(value) -> _Cap:
    """The smoke cap that sets a field to ``value`` in every preset's smoke run."""
    return _Cap("fixed", value=value)


def derived(fn) -> _Cap:
    """The smoke cap ``fn(value)``: computed from the preset's own value."""
    return _Cap("derived", value=fn)


def size(smoke: _Cap = KEEP, *, optional: bool = False):
    """A field of a :class:`Sizes` class with its smoke cap. ``optional``: the field may be left out (None), and is
    then absent from the dict (a preset shape with an entry more, e.g. the run store's)."""
    if optional:
        return field(default=None, metadata={"smoke": smoke, "optional": True})
    return field(metadata={"smoke": smoke})


def _axis(value):
    if isinstance(value, dict):
        return {k: _axis(v) for k, v in value.items()}
    if isinstance(value, list) and len(value) > 2:
        return [copy.deepcopy(value[0]), copy.deepcopy(value[-1])]
    return copy.deepcopy(value)


def _cap(cap: _Cap, value):
    if isinstance(value, Sizes):
        return value.smoke()
    if isinstance(value, dict) and any(isinstance(v, Sizes) for v in value.values()):
        return {k: _cap(cap, v) for k, v in value.items()}
    if cap.kind == "axis":
        return _axis(value)
    if cap.kind == "at most":
        return min(value, cap.limit)
    if cap.kind == "fixed":
        return copy.deepcopy(cap.value)
    if cap.kind == "derived":
        return cap.value(copy.deepcopy(value))
    return copy.deepcopy(value)


def _plain(value):
    if isinstance(value, Sizes):
        return value.as_dict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def matches(value, hint) -> bool:
    """Whether ``value`` fits the annotation ``hint``: ``int``, ``float``, ``str``, ``bool``, ``None``, ``list[T]``,
    ``tuple[T, ...]`` and ``tuple[A, B]`` (its length too), ``dict[K, V]``, unions, ``Any``, a class (a nested
    :class:`Sizes` or :class:`mamba_recall.runstore.JobConfig`: an instance of it). A float field takes an int
    (``1e-2`` and ``100`` alike); a bool is not an int."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(matches(value, h) for h in typing.get_args(hint))
    if origin in (list, tuple):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis] or [typing.Any]
        if not isinstance(value, origin):
            return False
        if origin is tuple and len(args) > 1 and Ellipsis not in typing.get_args(hint):
            return len(value) == len(args) and all(matches(v, a) for v, a in zip(value, args))
        return all(matches(v, args[0]) for v in value)
    if origin is dict:
        key, item = typing.get_args(hint) or (typing.Any, typing.Any)
        return isinstance(value, dict) and all(matches(k, key) and matches(v, item) for k, v in value.items())
    if hint is typing.Any:
        return True
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def check_fields(instance, *, optional: str, fix: str) -> None:
    """Check every field of the dataclass ``instance`` against its annotation (:func:`matches`), where it is built
    (its ``__post_init__``): the typed sizes' (:class:`Sizes`) and the typed job configs'
    (:class:`mamba_recall.runstore.JobConfig`) one checker. A field whose metadata sets ``optional`` may be None.
    TypeError naming the class, the field, its annotation, the value and its type, and ``fix`` (where to give the
    field that type; ``{module}`` in it: the class's module)."""
    cls = type(instance)
    hints = typing.get_type_hints(cls)
    for f in fields(instance):
        value = getattr(instance, f.name)
        if value is None and f.metadata.get(optional):
            continue
        if not matches(value, hints[f.name]):
            raise TypeError(
                f"{cls.__name__}.{f.name} must be {hints[f.name]}, got {value!r} ({type(value).__name__}); "
                + fix.format(module=cls.__module__)
            )


@dataclass(frozen=True, kw_only=True)
class Sizes:
    """Base of the typed sizes (see the module docstring): checked when built (:func:`check_fields`), read as a
    dict."""

    def __post_init__(self):
        check_fields(self, optional="optional", fix="fix the preset in {module}.")

    def _given(self):
        return [f for f in fields(self) if not (f.metadata.get("optional") and getattr(self, f.name) is None)]

    def as_dict(self) -> dict:
        """The sizes as the plain dict of JSON values the runners and notebooks read (a deep copy; an optional field
        left out is absent)."""
        return {f.name: _plain(copy.deepcopy(getattr(self, f.name))) for f in self._given()}

    def smoke(self) -> dict:
        """:meth:`as_dict` with every field capped as it declares (``size(smoke=...)``)."""
        return {f.name: _plain(_cap(f.metadata.get("smoke", KEEP), getattr(self, f.name))) for f in self._given()}
