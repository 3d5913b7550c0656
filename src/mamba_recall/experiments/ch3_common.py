"""Shared pieces of the Chapter 3 runners: argument parsing, device, checkpoints with a JSON sidecar."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

import torch

from .. import results
from ..devices import resolve_device
from ..models.s6 import MixerLM
from ..models.transformer import TinyTransformer
from ..presets import experiment

CHECKPOINT_DIR = results.CHECKPOINT_DIR
REGENERATE = "python -m mamba_recall.experiments.ch3_keep_nth --preset ci"


def parse(description: str, name: str, bundle: str, argv=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--preset", default="ci", choices=["ci", "paper"])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--out", default=None, help="bundle name (default: <runner>_<preset>)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest for tiny models)")
    args = parser.parse_args(argv)
    try:
        args.device = resolve_device(args.device).type
    except ValueError as exc:
        parser.error(str(exc))
    torch.set_num_threads(args.threads)
    args.sizes = experiment(name, args.preset)
    args.out = args.out or f"{bundle}_{args.preset}"
    return args


def build_model(
    kind: str, *, V: int, d: int, N: int, T: int, n_classes=None, backend="auto", transformer_d: int = 16, **kw
):
    """KEEP/MQAR/IH models by name: s6, s6+pe, s4d, s4d+pe, s6_dT, transformer (1 layer, learned PE)."""
    if kind == "transformer":
        return TinyTransformer(V, d_model=transformer_d, n_layer=1, n_head=2, max_len=T, positional="learned")
    mixer, _, pe = kind.partition("+")
    return MixerLM(V, d, N, mixer=mixer, pe=pe == "pe", n_classes=n_classes, backend=backend, **kw)


def save_checkpoint(model: torch.nn.Module, name: str, config: dict) -> Path:
    """results/checkpoints/<name>.pt (the state dict) plus <name>.json (config, sha256, provenance)."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return results.save_checkpoint(
        CHECKPOINT_DIR / f"{name}.pt",
        state,
        {"config": config},
        command=REGENERATE,
        device=next(model.parameters()).device,
    )


def load_checkpoint(name: str, model_factory):
    """Load results/checkpoints/<name>.pt after checking its hash against the sidecar; returns (model, config)."""
    state, meta = results.read_checkpoint(CHECKPOINT_DIR / f"{name}.pt", regenerate=REGENERATE)
    model = model_factory(meta["config"])
    model.load_state_dict(state)
    return model.eval(), meta["config"]


def save_runner_bundle(
    args,
    runner: str,
    data: dict,
    cfg: dict,
    start: float,
    tables: dict[str, list | pd.DataFrame],
    device: str | None = None,
) -> Path:
    """Write the bundle ``results/<args.out>.json`` of runner ``ch3_<name>`` (tables: rows → CSV) and say so."""
    wall = time.time() - start
    path = results.save_bundle(
        args.out,
        data,
        dict(cfg, preset=args.preset),
        command=f"python -m mamba_recall.experiments.{runner} --preset {args.preset}",
        device=device or args.device,
        wall_seconds=wall,
        tables={k: pd.DataFrame(v) for k, v in tables.items()},
    )
    print(f"wrote {path} in {wall:.0f} s")
    return path
