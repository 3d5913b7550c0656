"""ipywidgets explorers for Jupyter, built on one helper, :func:`explorer`.

An explorer behaves the same everywhere (Jupyter, papermill, nbval, the book build; no environment
variable): while its cell runs it draws its default view as ordinary cell output (or nothing, when
that view is heavy and the notebook shows it elsewhere), shows its controls and returns. Nothing is
computed and nothing is written into its ``ipywidgets.Output`` until a person moves a control or
presses its button. (A kernel that writes into an ``Output`` widget while the cell is still running
makes nbclient -- papermill, nbval -- copy the widget's state back to the kernel over the shell
socket while it waits on that socket for the cell's reply; the two wait for each other for ever.)
"""

from __future__ import annotations

import importlib.util
from typing import Callable

import pandas as pd
import torch

# IPython and ipywidgets come with the book's extra, not with the base install (the explorers import
# ipywidgets where they build controls; checked here, without importing it, so the fix is named at once).
_missing = [m for m in ("IPython", "ipywidgets") if importlib.util.find_spec(m) is None]
if _missing:
    raise ImportError(
        f"mamba_recall.widgets needs {' and '.join(_missing)} (the live explorers run in Jupyter): "
        "pip install 'mamba_recall[book]'",
        name=_missing[0],
    )

from IPython.display import display  # noqa: E402

from .scan import selective_scan_trace  # noqa: E402

#: Printed between an explorer's default view and its controls: what a reader can do where they read it (the
#: HTML book and saved notebooks show the default view only; controls exist in a running Jupyter kernel).
LIVE_NOTE = (
    "Above: this explorer's default view. Its controls show here when the notebook runs in Jupyter "
    "(make lab, then Run All): {what}. The HTML book shows the default view only."
)


class Explorer:
    """What :func:`explorer` returns: its ``controls`` (name → widget), the ``output`` area that redraws
    go to, the ``button`` (or None) and ``redraw()``. Already displayed, so it displays as nothing
    when it is a cell's last value."""

    def __init__(self, controls: dict, output, redraw: Callable[[], None], button=None):
        self.controls, self.output, self.redraw, self.button = controls, output, redraw, button

    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def _ipython_display_(self) -> None:  # shown once by explorer(); a bare last value adds nothing
        return None


def explorer(
    draw: Callable[..., None],
    controls: dict,
    *,
    default_view: bool = True,
    button: str | None = None,
    live: tuple[str, ...] | None = None,
    what: str | None = None,
) -> Explorer:
    """Show ``controls`` (name → ipywidget; ``draw`` takes the names as keyword arguments) and redraw
    ``draw(**values)`` into an output area under them each time a person acts.

    ``default_view``: call ``draw`` with the controls' initial values now, as plain cell output (keep
    it cheap; pass False when the notebook draws that view elsewhere or it needs training).
    ``button``: label of a button that redraws; then only the controls named in ``live`` (default none)
    redraw on change, the others wait for the button (for heavy redraws such as training).
    Without a button every control redraws on change. ``what``: the one-line note printed above
    the controls (which are live only in a running Jupyter kernel; the static book shows the default
    view)."""
    import ipywidgets as w

    if default_view:
        draw(**{name: control.value for name, control in controls.items()})
    out = w.Output()

    def redraw(_=None):
        with out:  # only ever from a person's action: never while the explorer's cell runs
            out.clear_output(wait=True)
            draw(**{name: control.value for name, control in controls.items()})

    press = None
    if button is not None:
        press = w.Button(description=button)
        press.on_click(redraw)
    watched = controls if button is None else {name: controls[name] for name in (live or ())}
    for control in watched.values():
        control.observe(redraw, names="value")
    if what is None:
        what = "press the button to redraw" if button else "move one and the view is redrawn under them"
    print(LIVE_NOTE.format(what=what))
    children = list(controls.values()) + ([press] if press is not None else [])
    rows = [w.HBox(children[i : i + 3]) for i in range(0, len(children), 3)]
    display(w.VBox([*rows, out]))
    return Explorer(controls, out, redraw, press)


def one_state_scan(delta: float, a: float, inputs: list[float], discretization: str = "euler") -> pd.DataFrame:
    """h_t of a single channel with one state, constant Δ and B = C = 1 (through the reference scan)."""
    u = torch.tensor(inputs, dtype=torch.float64).view(1, 1, -1)
    L = u.shape[-1]
    trace = selective_scan_trace(
        u,
        torch.full_like(u, delta),
        torch.tensor([[a]], dtype=torch.float64),
        torch.ones(1, 1),
        torch.ones(1, 1),
        discretization=discretization,
    )
    return pd.DataFrame(
        {"t": range(L), "input u_t": inputs, f"state h_t ({discretization})": trace.states[0, 0, :, 0].numpy()}
    )


def euler_and_zoh_states(delta: float, a: float, inputs: list[float]) -> pd.DataFrame:
    """Long format (t, series, value): the inputs and the states under Euler and exact ZOH."""
    euler = one_state_scan(delta, a, inputs, "euler")
    zoh = one_state_scan(delta, a, inputs, "zoh")
    return euler.merge(zoh, on=["t", "input u_t"]).melt("t", var_name="series", value_name="value")


def pulse_inputs(length: int) -> list[float]:
    """Two tokens to remember: 1.0 at t = 1 and 0.5 at t = length // 2; zeros elsewhere."""
    u = [0.0] * length
    u[1], u[length // 2] = 1.0, 0.5
    return u


def scan_explorer(delta: float = 0.5, a: float = -1.0, length: int = 24):
    """Sliders for Δ and A; draws h_t of the one-state scan (Euler and exact ZOH), redrawn as they move."""
    import ipywidgets as w

    from .plots import state_chart

    def draw(delta, a, length):
        frame = euler_and_zoh_states(delta, a, pulse_inputs(length))
        decay = float(torch.exp(torch.tensor(delta * a)))
        display(state_chart(frame, f"Δ = {delta:.3f}, A = {a:.3f}: Ā = exp(ΔA) = {decay:.3f}"))

    return explorer(
        draw,
        {
            "delta": w.FloatLogSlider(value=delta, base=10, min=-2, max=1.3, step=0.05, description="Δ"),
            "a": w.FloatSlider(value=a, min=-8.0, max=-0.05, step=0.05, description="A"),
            "length": w.IntSlider(value=length, min=8, max=128, step=8, description="length"),
        },
    )


def explorer_grid(deltas: list[float], a_values: list[float], length: int) -> pd.DataFrame:
    """The precomputed (Δ, A) grid that the static book's sliders filter (long format)."""
    inputs = pulse_inputs(length)
    frames = []
    for i, delta in enumerate(deltas):
        for j, a in enumerate(a_values):
            frames.append(euler_and_zoh_states(delta, a, inputs).assign(delta_i=i, a_i=j))
    return pd.concat(frames, ignore_index=True).round(5)
