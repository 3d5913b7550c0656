"""A reader's own mamba_ssm-format checkpoint (``save_pretrained``: ``config.json`` + ``pytorch_model.bin``) as a
:class:`~mamba_recall.models.mamba.MambaLMHeadModel`, so that every probe runs on it unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ...models.mamba import MambaLMHeadModel


def load_mamba_ssm_checkpoint(path, *, backend="auto", device="cpu") -> MambaLMHeadModel:
    """A reader's own mamba_ssm-format model: a directory with ``config.json`` (``d_model``, ``n_layer``,
    ``vocab_size``, optional ``ssm_cfg``, ``pad_vocab_size_multiple``, ``tie_embeddings``) and
    ``pytorch_model.bin`` (mamba_ssm's ``save_pretrained``), e.g. ``state-spaces/mamba-130m``.

    Only Mamba-1 mixers without MLP (``d_intermediate = 0``) are supported; Falcon-Mamba's extra
    RMS normalisation of B, C and Δ is not (its probes would be wrong, not just slower).
    """
    path = Path(path)
    cfg_path, w_path = path / "config.json", path / "pytorch_model.bin"
    if not cfg_path.exists() or not w_path.exists():
        raise FileNotFoundError(f"{path} must hold config.json and pytorch_model.bin (mamba_ssm's save_pretrained).")
    cfg = json.loads(cfg_path.read_text())
    ssm_cfg = dict(cfg.get("ssm_cfg", {}))
    if ssm_cfg.pop("layer", "Mamba1") not in ("Mamba1",) or cfg.get("d_intermediate", 0):
        raise ValueError("only Mamba-1 checkpoints without MLP layers are supported by this loader.")
    model = MambaLMHeadModel(
        cfg["d_model"],
        cfg["n_layer"],
        cfg["vocab_size"],
        pad_vocab_size_multiple=cfg.get("pad_vocab_size_multiple", 8),
        tie_embeddings=cfg.get("tie_embeddings", True),
        backend=backend,
        **ssm_cfg,
    )
    sd = torch.load(w_path, map_location="cpu", weights_only=True)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight" or not cfg.get("tie_embeddings", True)]
    if missing or unexpected:
        raise ValueError(
            f"{w_path} does not match mamba_ssm's MambaLMHeadModel names: missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}."
        )
    return model.to(device).eval()
