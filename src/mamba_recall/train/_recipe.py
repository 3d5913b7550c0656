"""The optimiser and the learning-rate schedule of a :func:`~mamba_recall.train.train` run (:class:`Recipe`,
:func:`lr_at`) and when it evaluates and stops (:class:`Stopping`); the formulas are in the docstring of
:mod:`mamba_recall.train`."""

from __future__ import annotations

import math
from dataclasses import dataclass

SCHEDULES = ("constant", "cosine", "linear_warmup_cosine", "code", "tab9")
TAB9_DECAY_STEPS = 15000  # paper 002, App. J, Tab. 9: the linear decay to lr/10 spans 15000 steps


def lr_at(step: int, *, lr: float, steps: int, schedule: str, warmup_steps: int = 0, hold_steps: int = 0) -> float:
    """Learning rate used at 0-based ``step`` (the formulas are in the module docstring)."""
    if schedule == "tab9":
        return lr * min(1.0, (step + 1) / max(warmup_steps, 1)) * max(0.1, 1 - 0.9 * step / TAB9_DECAY_STEPS)
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}.")
    if step < warmup_steps:
        return lr * (step + 1) / warmup_steps
    if schedule == "constant" or step < warmup_steps + hold_steps:
        return lr
    progress = (step - warmup_steps - hold_steps) / max(1, steps - warmup_steps - hold_steps)
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def _is_int(v, lo: int) -> bool:
    return not isinstance(v, bool) and isinstance(v, int) and v >= lo


def _is_number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float))


#: a preset recipe's key (``presets.ch2.RECIPES``, the ch5 presets' ``recipe``) -> the :class:`Recipe` field
_PRESET_KEYS = {
    "lr": "lr",
    "betas": "betas",
    "weight_decay": "weight_decay",
    "warmup": "warmup_steps",
    "hold": "hold_steps",
    "schedule": "schedule",
    "grad_clip": "grad_clip",
    "label_smoothing": "label_smoothing",
}
_PRESET_INFO_KEYS = ("batch_size",)  # recorded in a preset for the reader; ``make_batch`` sets the batch


@dataclass(frozen=True)
class Recipe:
    """The optimiser and the learning-rate schedule of a :func:`train` run: AdamW(``lr``, ``betas``,
    ``weight_decay``), the schedule ``schedule`` with ``warmup_steps`` and ``hold_steps`` (:func:`lr_at`; the
    formulas are in the module docstring), gradient clipping at ``grad_clip`` (None: none) and ``label_smoothing``
    of the default loss. The defaults are zoology's (lr 1e-3, weight decay 0.1, cosine to 0, no warmup).

    ``Recipe.from_preset(cfg)`` reads a preset's recipe dict (``presets.ch2.RECIPES``, ``recipe`` of the ch5
    presets); ``dataclasses.replace(recipe, lr=3e-2)`` makes a variant. Every field is checked when the recipe is
    built; what also depends on the run's length (``warmup_steps < steps``) is checked by :func:`train`.

    A frozen dataclass, not a pydantic model: the training loop is the library's core and takes no new dependency
    for it; a frozen recipe is hashable and cannot be changed behind a run's back; ``dataclasses.replace`` gives
    the variants; the checks live in ``__post_init__``, next to the fields they guard.
    """

    lr: float = 1e-3
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.999)
    schedule: str = "cosine"
    warmup_steps: int = 0
    hold_steps: int = 0
    grad_clip: float | None = None
    label_smoothing: float = 0.0

    def __post_init__(self):
        schedule, warmup_steps, hold_steps = self.schedule, self.warmup_steps, self.hold_steps
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}.")
        if not _is_int(warmup_steps, 0):
            raise ValueError(f"warmup_steps must be an integer >= 0, got {warmup_steps!r}.")
        if schedule == "linear_warmup_cosine" and warmup_steps < 1:
            raise ValueError(
                "schedule='linear_warmup_cosine' needs warmup_steps >= 1; use schedule='cosine' for no warmup."
            )
        if not _is_int(hold_steps, 0):
            raise ValueError(f"hold_steps must be an integer >= 0, got {hold_steps!r}.")
        if hold_steps and schedule in ("constant", "tab9"):
            raise ValueError(f"schedule={schedule!r} has no hold phase; use hold_steps=0 or schedule='code'.")
        if not (_is_number(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a number > 0, got lr={self.lr!r}.")
        if not (_is_number(self.weight_decay) and self.weight_decay >= 0):
            raise ValueError(f"weight_decay must be a number >= 0, got {self.weight_decay!r}.")
        betas = tuple(self.betas) if isinstance(self.betas, (tuple, list)) else self.betas
        if not (isinstance(betas, tuple) and len(betas) == 2 and all(_is_number(b) and 0 <= b < 1 for b in betas)):
            raise ValueError(f"betas must be a pair of numbers in [0, 1), got betas={self.betas!r}.")
        object.__setattr__(self, "betas", betas)  # a preset's list (JSON) becomes a tuple: the recipe stays hashable
        if self.grad_clip is not None and not (_is_number(self.grad_clip) and self.grad_clip > 0):
            raise ValueError(f"grad_clip must be None or > 0, got {self.grad_clip!r}.")
        if not (_is_number(self.label_smoothing) and 0 <= self.label_smoothing < 1):
            raise ValueError(f"label_smoothing must be a number in [0, 1), got {self.label_smoothing!r}.")

    @classmethod
    def from_preset(cls, cfg: dict) -> Recipe:
        """The recipe of a preset's dict with keys ``lr, betas, weight_decay, warmup, hold, schedule, grad_clip,
        label_smoothing`` (each optional: a missing one keeps the default) and an informational ``batch_size``
        (ignored: ``make_batch`` sets the batch). A ``grad_clip`` of 0 means no clipping."""
        unknown = set(cfg) - set(_PRESET_KEYS) - set(_PRESET_INFO_KEYS)
        if unknown:
            raise ValueError(
                f"unknown recipe entries {sorted(unknown)}; use keys of {sorted([*_PRESET_KEYS, *_PRESET_INFO_KEYS])}."
            )
        fields = {_PRESET_KEYS[k]: v for k, v in cfg.items() if k in _PRESET_KEYS}
        if "grad_clip" in fields:
            fields["grad_clip"] = fields["grad_clip"] or None
        return cls(**fields)


@dataclass(frozen=True)
class Stopping:
    """When :func:`train` evaluates and stops: the held-out accuracy is measured every ``eval_every`` steps and
    after the last; training stops once it (every member's) reaches ``target_accuracy``, or (``patience`` set, one
    model) once the best accuracy has not grown by more than ``min_delta`` over ``patience`` consecutive
    evaluations (a plateau). ``steps_past_target = n`` (one model, a constant schedule): once the target is reached,
    train exactly ``n`` more steps instead of stopping ("trained past 100 %"; the step cap then no longer applies).
    ``freeze_reached`` (an ensemble, with ``target_accuracy``): a member stops where it would have stopped alone, at
    the first evaluation at which it reaches the target; its parameters are frozen from then on (restored after
    every later step) while the others train, and the loop ends when every member has stopped.
    A frozen dataclass like :class:`Recipe`; what also depends on the run (an ``eval_batch``, one model, the
    schedule) is checked by :func:`train`."""

    eval_every: int = 100
    target_accuracy: float | None = None
    patience: int | None = None
    min_delta: float = 0.0
    steps_past_target: int = 0
    freeze_reached: bool = False

    def __post_init__(self):
        if not _is_int(self.eval_every, 1):
            raise ValueError(f"eval_every must be an integer >= 1, got {self.eval_every!r}.")
        if self.target_accuracy is not None and not (
            _is_number(self.target_accuracy) and 0 < self.target_accuracy <= 1
        ):
            raise ValueError(f"target_accuracy must be in (0, 1], got {self.target_accuracy!r}.")
        if self.patience is not None and not _is_int(self.patience, 1):
            raise ValueError(
                f"patience must be None or an integer >= 1, got patience={self.patience!r}; it stops when the "
                f"evaluated accuracy plateaus."
            )
        if not (_is_number(self.min_delta) and self.min_delta >= 0):
            raise ValueError(f"min_delta must be a number >= 0, got min_delta={self.min_delta!r}.")
        if self.steps_past_target and (not _is_int(self.steps_past_target, 0) or self.target_accuracy is None):
            raise _past_target_error(self)
        if self.freeze_reached not in (True, False) or (self.freeze_reached and self.target_accuracy is None):
            raise ValueError(
                f"freeze_reached must be True or False, and True needs a target_accuracy (the accuracy at which a "
                f"member stops), got freeze_reached={self.freeze_reached!r}, target_accuracy={self.target_accuracy!r}."
            )


def _past_target_error(stop: Stopping, schedule: str | None = None) -> ValueError:
    got = f"steps_past_target={stop.steps_past_target!r}, target_accuracy={stop.target_accuracy!r}"
    return ValueError(
        f"steps_past_target must be an integer >= 0, with target_accuracy, one model and schedule='constant' "
        f"(the steps after the target keep the same lr), got {got}" + (f", schedule={schedule!r}." if schedule else ".")
    )
