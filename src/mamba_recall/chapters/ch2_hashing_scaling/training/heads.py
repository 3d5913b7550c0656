"""Chapter 2's multi-head training (paper 002, §5.2, Fig. 8 and Thm 5): :func:`train_heads`, one
:class:`~mamba_recall.models.linear_mamba.MultiHeadLinearMamba` ensemble trained with the N–M recipe, used by runner
``ch2_multihead`` at every preset (its ensembles at ``ci``/``paper``, one model per run-store job at ``cpu-hours``)."""

from __future__ import annotations

from mamba_recall.models.linear_mamba import MultiHeadLinearMamba
from mamba_recall.presets import seeds
from mamba_recall.tasks.mqar import batch_fn

from .ensemble import train_ensemble


def train_heads(
    cfg: dict,
    pattern: str,
    M: int,
    states: list[int],
    ev,
    *,
    init_seed: int,
    seed: int = 0,
    values: str | None = None,
    device="cpu",
):
    """Train one :class:`MultiHeadLinearMamba` ensemble of ``pattern`` with ``M`` heads, one member per entry of
    ``states`` (its N), with the N–M recipe of ``cfg`` (the [code] schedule warmup → hold → cosine, clip
    ``cfg["grad_clip"]``, batch ``cfg["batch"]``, early stop at 0.999 on ``ev``); return ``(model on the CPU, result
    of train_ensemble)``. Initialisation ``init_seed``; training stream ``seed · 100003 + step`` (``seed=0``: the ci
    grid's one stream shared by every ensemble); ``values`` (default ``cfg["values"]``): how heads read the values."""
    V, Nf, L, D = cfg["V"], cfg["Nf"], cfg["L"], cfg["D"]
    model = MultiHeadLinearMamba(
        V,
        D,
        max(states),
        M,
        pattern,
        values=cfg["values"] if values is None else values,
        ensemble=len(states),
        member_states=states,
        seed=init_seed,
        device=device,
    )
    r = train_ensemble(
        model,
        batch_fn(V, Nf, L, cfg["batch"], seed * seeds.TRAIN_STRIDE),
        steps=cfg["steps"],
        eval_batch=ev,
        eval_every=max(50, cfg["steps"] // 6),
        target_accuracy=0.999,
        seed=seed,
        device=device,
        recipe="code",
        overrides=dict(
            warmup=min(cfg["warmup"], cfg["steps"] - 1),
            hold=cfg["hold"],
            grad_clip=cfg["grad_clip"],
            batch_size=cfg["batch"],
        ),
    )
    return model.cpu(), r
