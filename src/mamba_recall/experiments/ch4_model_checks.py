r"""Run Chapter 4's claim checks on another S-model and keep the verdicts as a result bundle.

The Tier-B checks of paper 004 live in the chapter's notebooks (§4.1–§4.4), which load the model named by
``$MAMBA_RECALL_CH4_CHECKPOINT`` when it is set. This runner executes those four notebooks with papermill
on one S-model checkpoint (batch mode, the given preset), collects the claims they record (C1–C4, C6: our
numbers and the computed status) and the model card, and writes them to
``results/ch4_checks_<model>_<preset>.json`` (table ``claims``). Section 4.7 of the book compares the
committed S-models with these bundles; the notebooks themselves stay the one implementation of the checks.

Run::

    python -m mamba_recall.experiments.ch4_model_checks --model s_small_seed1 --preset ci
    python -m mamba_recall.experiments.ch4_model_checks --model s_small --preset ci
    python -m mamba_recall.experiments.ch4_model_checks --checkpoint path/to/ch4_x.pt --name x   # any .pt
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

from ..paths import REPO_ROOT
from ..presets import experiment
from ..results import save_bundle
from ..scorecard import load_claims
from .ch4_analysis import ENV_CHECKPOINT, model_card
from .ch4_train import checkpoint_path, load_checkpoint

CHAPTER = REPO_ROOT / "book" / "04_primacy_recency"
NOTEBOOKS = ("01_serial_recall", "02_long_term_channels", "03_periodicity", "04_recency_state_init")
DEPENDS_ON = ("ch4_train",)  # `reproduce` retrains the checkpoints first
COMMITTED_RUNS = [["--model", m, "--preset", "ci"] for m in ("s_small", "s_small_seed1", "s_mix")]


def run_checks(checkpoint: Path, preset: str = "ci", *, device: str = "cpu", log=print) -> tuple[list, dict]:
    """Execute the chapter's check notebooks on ``checkpoint`` → (claims recorded, the checkpoint's sidecar)."""
    import papermill

    _, _, sidecar = load_checkpoint(checkpoint)  # hash-checked before spending minutes on it
    saved = {k: os.environ.get(k) for k in (ENV_CHECKPOINT, "MAMBA_RECALL_SCORECARD_DIR", "MAMBA_RECALL_BATCH")}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.update({ENV_CHECKPOINT: str(Path(checkpoint).resolve()), "MAMBA_RECALL_SCORECARD_DIR": tmp,
                           "MAMBA_RECALL_BATCH": "1"})
        try:
            for name in NOTEBOOKS:
                start = time.perf_counter()
                papermill.execute_notebook(str(CHAPTER / f"{name}.ipynb"), str(Path(tmp) / f"{name}.out.ipynb"),
                                           parameters={"preset": preset, "device": device}, cwd=str(CHAPTER),
                                           kernel_name="python3", progress_bar=False)
                log(f"{name}: {time.perf_counter() - start:.0f} s")
            claims = load_claims(Path(tmp))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return claims, sidecar


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="a committed S-model (results/checkpoints/ch4_<model>.pt); "
                                                  "default: every model of the preset's ch4.model_checks list")
    p.add_argument("--checkpoint", default=None, help="or any Chapter 4 checkpoint .pt (then give --name)")
    p.add_argument("--name", default=None, help="bundle name part for --checkpoint")
    p.add_argument("--preset", choices=("ci", "paper"), default="ci")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    if args.model is not None and args.checkpoint is not None:
        p.error("give one of --model NAME or --checkpoint PATH (with --name), not both.")
    if args.model is None and args.checkpoint is None:
        for model in experiment("ch4.model_checks", args.preset)["models"]:
            main(["--model", model, "--preset", args.preset, "--device", args.device])
        return
    if args.checkpoint and not args.name:
        p.error("--checkpoint needs --name (the bundle is results/ch4_checks_<name>_<preset>.json).")
    path = checkpoint_path(args.model) if args.model else Path(args.checkpoint)
    name = args.model or args.name
    start = time.perf_counter()
    claims, sidecar = run_checks(path, args.preset, device=args.device)
    table = pd.DataFrame([{"claim_id": c.claim_id, "status": c.status, "ours": c.ours, "note": c.note}
                          for c in claims if c.chapter == "ch4"])
    card = model_card({"source": str(path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path),
                       **sidecar})
    out = save_bundle(f"ch4_checks_{name}_{args.preset}",
                      {"model": name, "model_card": card, "converged": bool((sidecar.get("gate") or {}).get("passed")),
                       "checkpoint_sha256": sidecar.get("sha256")},
                      {"preset": args.preset, "notebooks": list(NOTEBOOKS), "checkpoint": str(path.name)},
                      command=f"python -m mamba_recall.experiments.ch4_model_checks --model {name} --preset {args.preset}"
                      if args.model else f"python -m mamba_recall.experiments.ch4_model_checks --checkpoint "
                                         f"{args.checkpoint} --name {name} --preset {args.preset}",
                      device=args.device, wall_seconds=time.perf_counter() - start, tables={"claims": table})
    print(f"wrote {out}: " + ", ".join(f"{r.claim_id} {r.status}" for r in table.itertuples()))


if __name__ == "__main__":
    main()
