"""What the first cell of every chapter notebook calls: check the papermill parameters, seed, set up.

Every notebook starts with a cell tagged ``parameters``::

    preset = "ci"; seed = 0; device = "auto"; backend = "auto"

and then ``ctx = setup(preset, seed, device, backend)``, which stops the notebook with one clear
message on a wrong value, seeds Python, NumPy and torch, enables the offline chart renderer and
prints the preset, device and scan backend that will be used (backends are never chosen silently).
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass

import numpy as np
import torch

from .devices import DEVICES, ParameterError, resolve_device  # noqa: F401  (part of this module's interface)
from .context import enter
from .plots import enable_offline_renderer
from .presets import PRESETS, check_preset, experiment
from .results import smoke_results_dir
from .scan import BACKENDS, resolve_backend


@dataclass(frozen=True)
class NotebookContext:
    preset: str
    seed: int
    device: torch.device
    backend: str  # the concrete backend: reference | chunked | mamba_ssm
    smoke: bool = False  # the preset's whole structure with a handful of steps and cells
    allow_long: bool = False  # may start runs estimated at over an hour on this device

    def sizes(self, name: str) -> dict:
        """The sizes of experiment ``name`` in this preset, capped when ``smoke`` (see ``presets``)."""
        return experiment(name, self.preset, smoke=self.smoke)


#: Seeds a notebook accepts: [0, SEED_LIMIT), the range that ``np.random.seed`` takes (torch's is wider, [0, 2**64)).
SEED_LIMIT = 2**32


def check_seed(seed, name: str = "seed") -> None:
    """A notebook's seed is an integer in [0, 2**32) (:func:`seed_everything` hands it to NumPy's legacy seeding,
    whose range that is); anything else raises a one-line :class:`ParameterError` naming the parameter, the value
    and the range (``-p seed 4294967296`` gave NumPy's ValueError and a traceback)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ParameterError(f"{name} must be a non-negative integer, got {seed!r}.")
    if seed >= SEED_LIMIT:
        raise ParameterError(
            f"{name} must be in [0, 2**32) = [0, {SEED_LIMIT - 1}] (np.random.seed's range, the narrowest of the "
            f"seeds setup sets), "
            f"got {name}={seed}; pass e.g. -p {name} {seed % SEED_LIMIT} ({name} % 2**32)."
        )


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


#: The papermill parameters every chapter notebook accepts (its cell tagged ``parameters``).
PARAMETERS = ("preset", "seed", "device", "backend", "smoke", "allow_long")


def injected_parameters() -> list[str]:
    """Names papermill injected into this kernel (the assignments of its ``# Parameters`` cell), in order;
    empty outside IPython or when the notebook runs without injected parameters. Papermill accepts any
    ``-p NAME VALUE`` and only logs "Passed unknown parameter", so :func:`setup` checks the names."""
    try:
        from IPython import get_ipython
    except ImportError:
        return []
    shell = get_ipython()
    if shell is None:
        return []
    names: list[str] = []
    for source in shell.user_ns.get("In", []):
        if not source.lstrip().startswith("# Parameters"):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign):
                names += [t.id for t in node.targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def _short_parameter_errors() -> None:
    """Show a :class:`ParameterError` raised in a cell as its one clear line (no 40-line traceback): the
    error output's traceback is that line, so papermill's message and Jupyter show it first and only."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return

    def one_line(self, etype, value, tb, tb_offset=None):
        line = f"{etype.__name__}: {value}"
        self._showtraceback(etype, value, [line])
        return [line]

    shell.set_custom_exc((ParameterError,), one_line)


def setup(
    preset: str = "ci",
    seed: int = 0,
    device: str = "auto",
    backend: str = "auto",
    quiet: bool = False,
    smoke: bool = False,
    allow_long: bool = False,
) -> NotebookContext:
    _short_parameter_errors()
    unknown = [name for name in injected_parameters() if name not in PARAMETERS]
    if unknown:
        raise ParameterError(
            f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"this notebook accepts {', '.join(PARAMETERS)} (e.g. -p preset ci)."
        )
    try:
        check_preset(preset)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    if preset not in PRESETS:  # one set of presets for notebooks and `python -m mamba_recall run`
        raise ParameterError(
            f"preset {preset!r} is a runners' preset, not a notebook's: run it with "
            f"`python -m mamba_recall.chapters.<chapter>.runners.<runner> --preset {preset}` (e.g. "
            f"ch1_gradient_dynamics.runners.grid); the "
            f"notebooks read its committed bundles at -p preset ci. "
            f"Notebooks accept {' or '.join(map(repr, PRESETS))}."
        )
    check_seed(seed)
    if backend not in BACKENDS:
        raise ParameterError(f"unknown backend {backend!r}; use one of {BACKENDS}.")
    for name, value in (("smoke", smoke), ("allow_long", allow_long)):
        if not isinstance(value, bool):
            raise ParameterError(f"{name} must be True or False, got {value!r}.")
    dev = resolve_device(device)
    concrete = resolve_backend(backend, dev)
    # the kernel's run context from now on (mamba_recall.context): a notebook has no block to scope it to
    enter(allow_long=allow_long, smoke_dir=smoke_results_dir() if smoke else None)
    seed_everything(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    enable_offline_renderer()
    if not quiet:
        print(
            f"preset={preset} seed={seed} device={dev} scan backend={concrete} (asked: {backend}) "
            f"torch={torch.__version__}"
            + (" smoke=True (capped sizes, see mamba_recall.presets)" if smoke else "")
            + (" allow_long=True" if allow_long else "")
        )
    return NotebookContext(preset, seed, dev, concrete, smoke, allow_long)
