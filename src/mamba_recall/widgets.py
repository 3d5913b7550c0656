"""ipywidgets explorers for Jupyter. Headless (papermill, nbval, the book build) they draw their
default view statically and return without waiting for input."""
from __future__ import annotations

import pandas as pd
import torch
from IPython.display import display

from .notebook import is_batch_run
from .scan import selective_scan_trace


def one_state_scan(delta: float, a: float, inputs: list[float], discretization: str = "euler") -> pd.DataFrame:
    """h_t of a single channel with one state, constant Δ and B = C = 1 (through the reference scan)."""
    u = torch.tensor(inputs, dtype=torch.float64).view(1, 1, -1)
    L = u.shape[-1]
    trace = selective_scan_trace(u, torch.full_like(u, delta), torch.tensor([[a]], dtype=torch.float64),
                                 torch.ones(1, 1), torch.ones(1, 1), discretization=discretization)
    return pd.DataFrame({"t": range(L), "input u_t": inputs, f"state h_t ({discretization})":
                         trace.states[0, 0, :, 0].numpy()})


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
    """Sliders for Δ and A; redraws h_t of the one-state scan live (Euler and exact ZOH)."""
    from .plots import state_chart

    def draw(delta, a, length):
        frame = euler_and_zoh_states(delta, a, pulse_inputs(length))
        decay = float(torch.exp(torch.tensor(delta * a)))
        display(state_chart(frame, f"Δ = {delta:.3f}, A = {a:.3f}: Ā = exp(ΔA) = {decay:.3f}"))

    if is_batch_run():
        print("(static view: open this notebook in Jupyter to move the sliders)")
        draw(delta, a, length)
        return None
    import ipywidgets as w

    return w.interact(draw, delta=w.FloatLogSlider(value=delta, base=10, min=-2, max=1.3, step=0.05, description="Δ"),
                      a=w.FloatSlider(value=a, min=-8.0, max=-0.05, step=0.05, description="A"),
                      length=w.IntSlider(value=length, min=8, max=128, step=8, description="length"))


def explorer_grid(deltas: list[float], a_values: list[float], length: int) -> pd.DataFrame:
    """The precomputed (Δ, A) grid that the static book's sliders filter (long format)."""
    inputs = pulse_inputs(length)
    frames = []
    for i, delta in enumerate(deltas):
        for j, a in enumerate(a_values):
            frames.append(euler_and_zoh_states(delta, a, inputs).assign(delta_i=i, a_i=j))
    return pd.concat(frames, ignore_index=True).round(5)
