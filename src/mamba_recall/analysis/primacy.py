r"""Chapter 4 analysis pipelines (paper 004): what the notebooks call, one function per experiment.

Every function takes a model (an S-model from :func:`load_model`, or any mamba_ssm-named
:class:`~mamba_recall.models.mamba.MambaLMHeadModel`) and returns plain numbers / arrays. The ``check_*`` functions compute the summary numbers of each
experiment (drops, margins, intervals); the verdicts are decided only by the rules declared in
:mod:`mamba_recall.claims.ch4`, which read those numbers (a ``pass`` key, where present, is the
chapter's earlier per-check flag, kept for the interactive explorers).

Which model: :func:`load_model` loads ``results/checkpoints/ch4_<name>.pt`` unless the environment
variable ``MAMBA_RECALL_CH4_CHECKPOINT`` points to another checkpoint — a ``.pt`` written by
:mod:`mamba_recall.experiments.ch4_train` or :mod:`mamba_recall.experiments.ch4_edge` (e.g. the larger GPU S-model), or a mamba_ssm
``save_pretrained`` directory (``config.json`` + ``pytorch_model.bin``) whose vocabulary follows
:class:`~mamba_recall.tasks.serial_recall.RecallVocab` (``MAMBA_RECALL_CH4_VOCAB="names,relations,filler"``,
default ``32,8,16``).
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..models.mamba import MambaLMHeadModel
from ..presets import seeds
from ..results import CHECKPOINT_DIR, read_checkpoint
from ..tasks.serial_recall import RecallVocab, periodic_sequences, recall_contexts, recall_prompts
from ..tasks.transfer import LONGBENCH_ANALOGUE
from ..tasks.transfer import transfer_sets as tasks_transfer_sets
from . import channels as ch
from . import interventions as iv

ENV_CHECKPOINT = "MAMBA_RECALL_CH4_CHECKPOINT"
ENV_VOCAB = "MAMBA_RECALL_CH4_VOCAB"
EVAL_SEED = seeds.PRIMACY_EVAL


# --------------------------------------------------------------------- S-model checkpoints


def checkpoint_path(model: str) -> Path:
    """``results/checkpoints/ch4_<model>.pt``: where the S-model ``model`` (a recipe name of
    :mod:`mamba_recall.experiments.ch4_train`, or an edge-family name ``edge_<recipe>_<preset>_seed<k>`` of
    :mod:`mamba_recall.experiments.ch4_edge`) is kept."""
    if not model or "/" in model or model.startswith("."):
        raise ValueError(f"S-model name {model!r} must be a plain name such as 's_small'.")
    return CHECKPOINT_DIR / f"ch4_{model}.pt"


def build_model(model_config: dict, vocab: RecallVocab, backend="auto", device=None) -> MambaLMHeadModel:
    """A Mamba-1 LM, or a Mamba-2 (SSD) LM if ``model_config["arch"] == "mamba2"`` (the ``s_m2`` model)."""
    cfg = dict(model_config)
    if cfg.pop("arch", "mamba1") == "mamba2":
        from ..models.mamba2 import Mamba2LMHeadModel

        return Mamba2LMHeadModel(
            cfg.pop("d_model"), cfg.pop("n_layer"), vocab.size, backend=backend, device=device, **cfg
        )
    return MambaLMHeadModel(cfg.pop("d_model"), cfg.pop("n_layer"), vocab.size, backend=backend, device=device, **cfg)


def regenerate_command(model: str) -> str:
    """The command that re-makes the committed S-model ``model``."""
    if model.startswith("edge_"):
        preset = "cpu-hours" if "_cpu-hours_" in model else "paper" if "_paper_" in model else "ci"
        return f"python -m mamba_recall.experiments.ch4_edge --preset {preset} --allow-long"
    return f"python -m mamba_recall.experiments.ch4_train --model {model} --preset ci"


def read_smodel(path: Path, model: str, verify_hash: bool = True) -> tuple[dict, dict]:
    """(payload, sidecar) of an S-model checkpoint, hash-checked unless ``verify_hash`` is False; errors name
    the command that regenerates ``model``."""
    regenerate = regenerate_command(model)
    if verify_hash:
        blob, sidecar = read_checkpoint(path, regenerate=regenerate)
    else:
        if not path.exists():
            raise FileNotFoundError(f"no checkpoint at {path}; regenerate it with `{regenerate}`.")
        side_path = path.with_suffix(".json")
        sidecar = json.loads(side_path.read_text()) if side_path.exists() else {}
        blob = torch.load(path, map_location="cpu", weights_only=True)
    for key in ("state_dict", "model_config", "vocab"):
        if key not in blob:
            raise ValueError(f"{path} is not a Chapter 4 checkpoint: key {key!r} is missing.")
    return blob, sidecar


def load_checkpoint(path=None, *, model: str = "s_small", backend="auto", device="cpu", verify_hash=True):
    """Load an S-model checkpoint (``.pt`` + JSON sidecar) → ``(model, vocab, sidecar)``.

    ``path`` defaults to the committed ``results/checkpoints/ch4_<model>.pt``. The sidecar's sha256
    is checked. A reader's own mamba_ssm-compatible checkpoint is loaded with
    :func:`mamba_recall.analysis.interventions.load_mamba_ssm_checkpoint` instead.
    """
    path = Path(path) if path is not None else checkpoint_path(model)
    blob, sidecar = read_smodel(path, model, verify_hash)
    vocab = RecallVocab(**blob["vocab"])
    net = build_model(blob["model_config"], vocab, backend=backend)
    net.load_state_dict(blob["state_dict"])
    net.to(device).eval()
    return net, vocab, sidecar


def load_model(name: str = "s_small", *, backend="auto", device="cpu"):
    """(model, vocab, description): the committed S-model ``name``, or the one named by $MAMBA_RECALL_CH4_CHECKPOINT."""
    if backend == "mamba_ssm":  # prefix states, Ā ablations and h_0 need a PyTorch scan
        print("note: the Chapter 4 probes need a PyTorch scan (states, ablations); using backend='chunked'")
        backend = "chunked"
    env = os.environ.get(ENV_CHECKPOINT)
    if env:
        path = Path(env)
        if not path.exists():
            raise CheckpointEnvError(f"{ENV_CHECKPOINT}={env}: no such file or directory. {VALID_CHECKPOINT}")
        if path.is_file() and path.suffix != ".pt":
            raise CheckpointEnvError(f"{ENV_CHECKPOINT}={env}: not a .pt checkpoint. {VALID_CHECKPOINT}")
        if path.is_file() and not path.with_suffix(".json").exists():
            raise CheckpointEnvError(
                f"{ENV_CHECKPOINT}={env}: its sidecar {path.with_suffix('.json').name} is not "
                f"beside it. {VALID_CHECKPOINT}"
            )
        try:
            return _load_env_checkpoint(path, backend, device)
        except (OSError, ValueError, RuntimeError, KeyError, TypeError, EOFError, pickle.UnpicklingError) as exc:
            if isinstance(exc, CheckpointEnvError):
                raise
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].split("; regenerate")[0]
            raise CheckpointEnvError(
                f"{ENV_CHECKPOINT}={env}: cannot be loaded ({reason}). {VALID_CHECKPOINT}"
            ) from exc
    model, vocab, side = load_checkpoint(model=name, backend=backend, device=device)
    return model, vocab, {"source": f"results/checkpoints/ch4_{name}.pt", **side}


class CheckpointEnvError(ValueError):
    """``MAMBA_RECALL_CH4_CHECKPOINT`` names no loadable checkpoint."""


VALID_CHECKPOINT = (
    f"It must name a Chapter 4 checkpoint: a .pt written by `python -m mamba_recall.experiments.ch4_train` "
    "with its .json sidecar beside it (e.g. results/checkpoints/ch4_s_small.pt), or a mamba_ssm "
    f"save_pretrained directory (config.json + pytorch_model.bin); or unset {ENV_CHECKPOINT} to use "
    "the committed model."
)


def _load_env_checkpoint(path: Path, backend, device):
    """A reader's checkpoint: a mamba_ssm save_pretrained directory or a ch4_train .pt (+ sidecar)."""
    if path.is_dir():
        model = iv.load_mamba_ssm_checkpoint(path, backend=backend, device=device)
        nn_, nr, nf = (int(v) for v in os.environ.get(ENV_VOCAB, "32,8,16").split(","))
        vocab = RecallVocab(nn_, nr, nf)
        if vocab.size > model.vocab_size:
            raise ValueError(
                f"{path}: vocabulary of size {model.vocab_size} is smaller than the task's "
                f"{vocab.size}; set {ENV_VOCAB}."
            )
        return model, vocab, {"source": str(path), "gate": None}
    model, vocab, side = load_checkpoint(path, backend=backend, device=device)
    return model, vocab, {"source": str(path), **side}


def learning_curve(side: dict):
    """The held-out gate metrics recorded while training (a long table: step, metric, recall)."""
    import pandas as pd

    rows = [
        {"step": h["step"], "metric": k, "recall": v}
        for h in side.get("learning_curve", [])
        for k, v in h["gate"].items()
    ]
    return pd.DataFrame(rows)


def converged(side: dict) -> bool:
    """The convergence gate of the training sidecar, False if unknown."""
    gate = (side or {}).get("gate") or {}
    return bool(gate.get("passed"))


def contexts(vocab, L, variant, n, seed=EVAL_SEED):
    return recall_contexts(L, n, variant, vocab=vocab, seed=seed + L)


# --------------------------------------------------------------------- U-curves (§4.1, Fig. 2)


def ucurves(model, vocab, Ls, n, device="cpu") -> dict:
    """{(L, variant): (n, L) bool correct} by prefix-state evaluation (paired names across variants)."""
    return {
        (L, v): iv.recall_by_position(model, contexts(vocab, L, v, n), device=device)
        for L in Ls
        for v in ("repeated", "random")
    }


def pressure_length(curves: dict, Ls) -> int | None:
    """L_p: the smallest evaluated L whose repeated-relation middle-third accuracy ≤ 0.80."""
    for L in Ls:
        if iv.summary(curves[(L, "repeated")])["mid"] <= 0.80:
            return L
    return None


def check_ushape(correct: np.ndarray) -> dict:
    """The numbers of Fig. 2's U for one curve (primacy, recency, middle third, the interior argmin); the rule that
    reads them is the registry's (:mod:`mamba_recall.claims.ch4.serial_recall`)."""
    s = iv.summary(correct)
    acc = s["acc"]
    L = len(acc)
    ma = np.convolve(acc, np.ones(3) / 3, mode="valid") if L >= 3 else acc
    argmin = int(np.argmin(ma)) + 2  # 1-based centre of the 3-point window
    return {"primacy": s["primacy"], "recency": s["recency"], "mid": s["mid"], "argmin": argmin}


def check_random_vs_repeated(curves, L, seed=0) -> dict:
    """§4.1, random vs repeated relations at one L: mid(random) − mid(repeated) with its paired-bootstrap interval and
    each variant's U depth (the rule: :mod:`mamba_recall.claims.ch4.serial_recall`)."""
    rep, rnd = curves[(L, "repeated")], curves[(L, "random")]
    k = np.arange(1, L + 1)
    mid = (k > L / 3) & (k <= 2 * L / 3)
    est, lo, hi = iv.paired_bootstrap(rnd[:, mid].mean(1), rep[:, mid].mean(1), seed=seed)
    return {
        "diff": est,
        "lo": lo,
        "hi": hi,
        "u_depth_rep": iv.summary(rep)["u_depth"],
        "u_depth_rnd": iv.summary(rnd)["u_depth"],
    }


# --------------------------------------------------------------------- channels (§4.2, Figs. 3, 4, 9, 10)


def identification_prompt(vocab, L, seed=42, variant="repeated"):
    """The single identification prompt: one repeated-relation prompt with target position 1 (App. B)."""
    ctx = recall_contexts(L, 1, variant, vocab=vocab, seed=seed)
    toks, _ = recall_prompts(ctx, 1)
    return toks


@torch.no_grad()
def write_strength(model, tokens: torch.Tensor, chans) -> "pd.DataFrame":
    r"""How much the identified channels write into their state, against the other channels.

    Mamba-1 writes ``B̄_t x_t = Δ_t B_t x_t`` (Euler ``B̄``, as mamba_ssm), so per channel ``i`` the input
    gate is ``Δ_t^{(i)}`` and the written size (up to ``B_t``) is ``Δ_t^{(i)}|x_t^{(i)}|``. A channel whose
    ``Π Ā_t = exp(A Σ Δ_t)`` stays near 1 because ``Δ ≈ 0`` also writes almost nothing: a closed gate.
    Returns one row per (layer, group ∈ {identified, other}): the median over channels of the mean over
    ``tokens`` (B, T) of ``Δ`` and of ``Δ·|x|``."""
    import pandas as pd

    internals = ch.record_internals(model, tokens)
    rows = []
    for layer, (it, c) in enumerate(zip(internals, chans)):
        delta = it.delta.mean(dim=(0, 2))
        write = (it.delta * it.x.abs()).mean(dim=(0, 2))
        mask = torch.zeros_like(delta, dtype=torch.bool)
        mask[torch.as_tensor(c, dtype=torch.long)] = True
        for group, m in (("identified", mask), ("other", ~mask)):
            if m.any():
                rows.append(
                    {
                        "layer": layer,
                        "group": group,
                        "channels": int(m.sum()),
                        "median Δ": float(delta[m].median()),
                        "median Δ·|x|": float(write[m].median()),
                    }
                )
    return pd.DataFrame(rows)


def check_sparsity(stats: ch.ChannelStats, chans) -> dict:
    """Fig. 3a's numbers: the identified fraction, per-layer counts, the densest layer's share, χ² against a spread
    proportional to the layer widths, and whether every selected S lies below the 10th percentile."""
    total = stats.n_channels
    counts = np.array([len(c) for c in chans])
    frac = counts.sum() / total
    dens = counts.max() / counts.sum() if counts.sum() else 0.0
    widths = np.array([m.shape[1] for m in stats.M])
    chi_p = iv.chi2_uniform_p(counts, counts.sum() * widths / widths.sum()) if counts.sum() else 1.0
    allS = torch.cat(stats.S).numpy()
    selS = np.concatenate([stats.S[i][c].numpy() for i, c in enumerate(chans)]) if counts.sum() else np.array([])
    p10 = float(np.quantile(allS, 0.10))
    below = bool(selS.size and (selS < p10).all())
    return {
        "fraction": float(frac),
        "counts": counts.tolist(),
        "densest_layer": int(counts.argmax()),
        "densest_share": float(dens),
        "chi2_p": chi_p,
        "S_p10": p10,
        "all_below_p10": below,
    }


def ablation_effects(
    model,
    vocab,
    L,
    n,
    targets: dict,
    steps,
    *,
    n_random=5,
    seed=42,
    device="cpu",
    variant="repeated",
    controls=("global", "layer_matched"),
    base=None,
) -> dict:
    """Recall under: baseline (or the given ``base``), targeted ablation, ``n_random`` random controls of
    each kind in ``controls`` ("global": same count over the whole model; "layer_matched": same count per
    targeted layer, outside the targeted set)."""
    ctx = contexts(vocab, L, variant, n)
    base = iv.recall_by_position(model, ctx, device=device) if base is None else base
    tgt = iv.recall_by_position(model, ctx, channels=targets, steps=steps, device=device)
    count = int(sum(len(v) for v in targets.values()))
    glob, lm = [], []
    for r in range(n_random):
        if "global" in controls:
            g = iv.random_channels(model, count, seed=seed + r)
            glob.append(iv.recall_by_position(model, ctx, channels=g, steps=steps, device=device))
        if "layer_matched" in controls:
            m = iv.random_channels(model, {k: len(v) for k, v in targets.items()}, seed=seed + r, exclude=targets)
            lm.append(iv.recall_by_position(model, ctx, channels=m, steps=steps, device=device))
    return {"base": base, "targeted": tgt, "global": glob, "layer_matched": lm, "count": count}


def check_first_triplet(eff: dict, seed=0) -> dict:
    """Fig. 3b: δ(1) ≥ 0.15; δ(1) ≥ 2× mean random δ(1) for both controls with paired-bootstrap CI > 0;
    mean_{k≥3} |δ(k)| ≤ 0.05."""
    base, tgt = eff["base"], eff["targeted"]
    d = base.mean(0) - tgt.mean(0)
    out = {"delta": d.tolist(), "delta1": float(d[0]), "count": eff["count"]}
    for name in ("global", "layer_matched"):
        dr = np.mean([base[:, 0].mean() - r[:, 0].mean() for r in eff[name]])
        rand_mean = np.mean([r[:, 0] for r in eff[name]], axis=0)  # per-prompt mean over random draws
        est, lo, hi = iv.paired_bootstrap(rand_mean, tgt[:, 0], seed=seed)
        out[f"delta1_{name}"] = float(dr)
        out[f"ci_{name}"] = (lo, hi)
    later = float(np.abs(d[2:]).mean()) if len(d) > 2 else 0.0
    out["mean_abs_delta_k3"] = later
    return out


def check_all_steps(eff: dict) -> dict:
    """Fig. 9: δ(1) ≥ 0.20, δ(1) ≥ max_{k≥2} δ(k) − 0.05; random max_k δ_rand(k) ≤ δ(1)/2."""
    base, tgt = eff["base"], eff["targeted"]
    d = base.mean(0) - tgt.mean(0)
    dr = max(float(np.max(base.mean(0) - r.mean(0))) for r in eff["global"])
    return {
        "delta": d.tolist(),
        "delta1": float(d[0]),
        "max_delta_rand": dr,
        "base1": float(base[:, 0].mean()),
        "abl1": float(tgt[:, 0].mean()),
    }


# --------------------------------------------------------------------- periodicity (§4.3, Figs. 6, 7)


@torch.no_grad()
def periodic_deltas(model, vocab, periods=(1, 4, 16, 64), n=64, length=64, seed=0, reading="tiling"):
    """Per period k: Δ of every layer, list of (n, E, T) float64, plus the kernel to the last token.

    The probe vocabulary is every content token of the model (names ∪ relations: 40 for ``s_small``, 72 for the edge
    family), so that a period-64 sequence differs from a period-16 one (with 16 tokens, as before, every motif longer
    than 16 had to repeat tokens and periods 16 and 64 looked alike to the model).

    Kernel (Eq. 8 per source position): K^{(i)}_{T,j} = Σ_n C_{T,n} exp(A_{i,n} Σ_{m=j+1..T} Δ_m^{(i)}) Δ_j^{(i)} B_{j,n};
    returned as mean_{ℓ,i,seq} |K_{T,j}| per source position j, (length,).
    """
    tokens = vocab.content_tokens
    out = {}
    for k in periods:
        x = periodic_sequences(k, n=n, length=length, tokens=tokens, seed=seed + k, reading=reading)
        _, internals = model(x, return_internals=True)
        deltas = [it.delta.double() for it in internals]
        kern = []
        for it, A in zip(internals, ch.layer_A(model)):
            d = it.delta.double()  # (n, E, T)
            suffix = torch.flip(torch.cumsum(torch.flip(d, [-1]), -1), [-1]) - d  # Σ_{m=j+1..T} Δ_m
            decay = torch.exp(suffix[..., None] * A[None, :, None, :])  # (n, E, T, N)
            BC = it.B.double().transpose(1, 2) * it.C.double()[:, :, -1][:, None, :]  # (n, T, N): B_j ⊙ C_T
            K = (decay * BC[:, None]).sum(-1) * d  # (n, E, T)
            kern.append(K.abs().mean(dim=(0, 1)))
        out[k] = {"deltas": deltas, "kernel": torch.stack(kern).mean(0).numpy()}
    return out


# --------------------------------------------------------------------- distractors (§4.4, Fig. 5b)


class DistractorSweep(dict):
    """{n_d: (n, L) correct} of :func:`distractor_sweep`, tagged with the distractor ``pool`` it drew from (so a claim
    can tell the paper's random tokens from in-distribution filler)."""

    pool = "content"


def untrained_twin(model_name: str, *, backend="auto", path=None):
    """(model, vocab, sidecar): the committed checkpoint ``model_name``'s architecture and vocabulary, **untrained**:
    initialised as its training run started (``torch.manual_seed`` of its recorded training seed, then the same
    constructor). The null control of a statistic that could hold by construction (a claim's rule must not pass it).
    ``path``: the checkpoint file, where it is not the committed one (``checkpoint_path(model_name)``)."""
    blob, side = read_smodel(path or checkpoint_path(model_name), model_name)
    vocab = RecallVocab(**blob["vocab"])
    torch.manual_seed(int((side.get("train_config") or {}).get("seed", 0)))
    net = build_model(blob["model_config"], vocab, backend=backend)
    return net.eval(), vocab, side


def distractor_sweep(
    model, vocab, L, n, ns=(0, 4, 16, 64, 256), variant="repeated", seed=7, device="cpu", pool: str = "content"
):
    """{n_d: (n, L) correct} with n_d random tokens + SEP between the context and the query (§4.4, Fig. 5b).

    ``pool``: ``"content"`` (names and relations, the paper's random tokens; never seen between facts and query in
    training) or ``"filler"`` (the filler tokens a recipe with gaps trained on: distractors in distribution)."""
    if pool not in ("content", "filler"):
        raise ValueError(f"unknown distractor pool {pool!r}; use 'content' or 'filler'.")
    tokens = vocab.content_tokens if pool == "content" else vocab.filler_tokens
    ctx = contexts(vocab, L, variant, n)
    rng = np.random.RandomState(seed)
    out = DistractorSweep()
    out.pool = pool
    for nd in ns:
        dist = None
        if nd:
            d = rng.choice(tokens, size=(n, nd))
            dist = torch.as_tensor(np.concatenate([d, np.full((n, 1), 1)], axis=1), dtype=torch.long)
        out[nd] = iv.recall_by_position(model, ctx, distractors=dist, device=device)
    return out


def check_distractors(sweep: dict) -> dict:
    """Fig. 5b for one (L, variant) cell: acc(L) non-increasing in n (slack 0.03); at the largest n acc(L) drops
    ≥ 0.20; last-quarter drop − first-quarter drop ≥ 0.10; recency advantage ≤ half its n = 0 value."""
    ns = sorted(sweep)
    accL = [float(sweep[n][:, -1].mean()) for n in ns]
    mono = all(b <= a + 0.03 for a, b in zip(accL, accL[1:]))
    base, last = sweep[ns[0]].mean(0), sweep[ns[-1]].mean(0)
    L = len(base)
    q = max(1, L // 4)
    drop_last, drop_first = float((base - last)[-q:].mean()), float((base - last)[:q].mean())
    rec0, recN = iv.summary(sweep[ns[0]])["recency"], iv.summary(sweep[ns[-1]])["recency"]
    return {
        "accL": accL,
        "monotone": mono,
        "drop_last_q": drop_last,
        "drop_first_q": drop_first,
        "recency0": rec0,
        "recencyN": recN,
    }


# --------------------------------------------------------------------- state init (Figs. 5a, 14)


def state_init_effects(
    model, vocab, L, n, seed=42, device="cpu", variant="repeated", scale: float = 1.0, base=None
) -> dict:
    """Baseline and one U(0, scale)-initialised layer at a time: {"base": correct, layer: correct} ((n, L) bool each;
    ``scale = 1`` is the paper's U(0, 1))."""
    ctx = contexts(vocab, L, variant, n)
    out = {"base": iv.recall_by_position(model, ctx, device=device) if base is None else base}
    for layer in range(len(model.backbone.layers)):
        st = iv.uniform_init_states(model, layer, batch=1, seed=seed, scale=scale)
        out[layer] = iv.recall_by_position(model, ctx, init_states=st, device=device)
    return out


@torch.no_grad()
def typical_state_scale(model, vocab, L: int, n: int = 64, variant: str = "repeated") -> float:
    """The model's typical |h|: the mean |h_T| over layers, channels and states at the end of ``n`` contexts of
    length L (what a U(0, s) initial state should be compared with; U(0, 1) has mean 0.5)."""
    ctx = contexts(vocab, L, variant, n)
    _, states = model(ctx.tokens, return_states=True)
    return float(np.mean([s.ssm.abs().mean().item() for s in states]))


def state_scale_sweep(model, vocab, L, n, seed=42, device="cpu", variant="repeated", steps: int = 4) -> dict:
    """The initial-state test at U(0, s) for s from 1 down to the model's typical |h| (``steps`` values, log-spaced):
    {"scales": [...], "typical_h": float, "effects": {s: state_init_effects(...)}} (one shared baseline)."""
    h = typical_state_scale(model, vocab, L)
    scales = [float(x) for x in np.geomspace(1.0, min(1.0, max(h, 1e-6)), steps)] if h < 1 else [1.0]
    base = iv.recall_by_position(model, contexts(vocab, L, variant, n), device=device)
    return {
        "scales": scales,
        "typical_h": h,
        "effects": {
            s: state_init_effects(model, vocab, L, n, seed, device, variant, scale=s, base=base) for s in scales
        },
    }


def check_state_init(eff: dict) -> dict:
    """Fig. 5a: some layer raises mid-third recall by ≥ 0.03 with McNemar p < 0.05."""
    base = eff["base"]
    L = base.shape[1]
    k = np.arange(1, L + 1)
    mid = (k > L / 3) & (k <= 2 * L / 3)
    rows = {}
    for layer, c in eff.items():
        if layer == "base":
            continue
        gain = float(c[:, mid].mean() - base[:, mid].mean())
        rows[layer] = {"mid_gain": gain, "mcnemar_p": iv.mcnemar_p(c[:, mid], base[:, mid])}
    best = max(rows, key=lambda r: rows[r]["mid_gain"])
    return {"layers": rows, "best_layer": best}


# --------------------------------------------------------------------- downstream transfer (Table 1)

TRANSFER_SEED = seeds.TRANSFER_PROBE  # evaluation sets of the transfer tasks (the training mixture uses other seeds)


def transfer_sets(vocab, mix: dict, n: int, seed: int = TRANSFER_SEED) -> dict:
    """Fixed held-out sets of every transfer task of the ``s_mix`` recipe's mixture ``mix``."""
    return tasks_transfer_sets(vocab, mix, n, seed)


def transfer_effects(model, sets: dict, targets: dict, *, n_random: int = 5, seed: int = 42, device="cpu") -> dict:
    """Table 1's three conditions on the transfer sets: base, the identified channels ablated at all
    steps (all layers), and ``n_random`` global random sets of the same count (seeds ``seed + r``)."""
    count = int(sum(len(v) for v in targets.values()))
    return {
        "base": iv.labelled_scores(model, sets, device=device),
        "targeted": iv.labelled_scores(model, sets, targets, device=device),
        "random": [
            iv.labelled_scores(model, sets, iv.random_channels(model, count, seed=seed + r), device=device)
            for r in range(n_random)
        ],
        "count": count,
    }


def transfer_table(eff: dict, learned_min: float = 0.5, seed: int = 0):
    """One row per task (as the paper's Table 1): base, long-term (identified) and random (mean ± sd over
    draws) scores in %, relative drops, and a paired-bootstrap 95 % CI of random − targeted per example."""
    import pandas as pd

    rows = []
    for task, base in eff["base"].items():
        tgt = eff["targeted"][task]
        b, t = base.mean(), tgt.mean()
        rs = np.array([r[task].mean() for r in eff["random"]])
        rand_per_example = np.mean([r[task] for r in eff["random"]], axis=0)
        _, lo, hi = iv.paired_bootstrap(rand_per_example, tgt, seed=seed)  # mean(random − targeted), 95 % CI
        rel = lambda a: (b - a) / b if b > 0 else float("nan")
        rows.append(
            {
                "task": task,
                "LongBench analogue": LONGBENCH_ANALOGUE.get(task, ""),
                "base": 100 * b,
                "long-term": 100 * t,
                "random": 100 * rs.mean(),
                "random sd": 100 * rs.std(),
                "rel. drop long-term": rel(t),
                "rel. drop random": float(np.mean([rel(r) for r in rs])),
                "random − long-term CI": (round(100 * lo, 1), round(100 * hi, 1)),
                "learned": bool(b >= learned_min),
            }
        )
    return pd.DataFrame(rows)


def check_transfer(table) -> dict:
    """Table 1 on the learned tasks (base ≥ 50 %): mean relative drop (identified) ≥ 2 × that of the
    random sets, and identified worse than random on ≥ 3/4 of them; at least 3 learned tasks needed."""
    learned = table[table["learned"]]
    n = len(learned)
    mean_t = float(learned["rel. drop long-term"].mean()) if n else float("nan")
    mean_r = float(learned["rel. drop random"].mean()) if n else float("nan")
    worse = int((learned["long-term"] < learned["random"]).sum())
    ratio = mean_t / mean_r if n and mean_r > 0 else float("inf") if n and mean_t > 0 else float("nan")
    return {
        "n_learned": n,
        "learned": learned["task"].tolist(),
        "mean_rel_drop_targeted": mean_t,
        "mean_rel_drop_random": mean_r,
        "ratio": ratio,
        "worse_on": worse,
    }


# --------------------------------------------------------------------- the model card


def model_card(side: dict) -> str:
    """One line on the model the numbers come from: source, steps, convergence gate."""
    cfg = side.get("train_config") or {}
    gate = side.get("gate") or {}
    metrics = gate.get("metrics") or {}
    g = ", ".join(f"{k} {v:.2f}" for k, v in metrics.items())
    curve = side.get("learning_curve") or [{}]
    done = side.get("stopped_at") or (cfg.get("steps") if side.get("final") else curve[-1].get("step"))
    return (
        f"{side.get('source')}: {cfg.get('model')}, {done} of {cfg.get('steps')} scheduled steps "
        f"({'run stopped there' if side.get('stopped_at') else 'final' if side.get('final') else 'intermediate'}"
        f" checkpoint); gate [{g}] → "
        f"{'CONVERGED' if gate.get('passed') else 'NOT converged'}"
    )


# --------------------------------------------------------------------- the edge family (3 seeds per recipe)

EDGE_COMMAND = "python -m mamba_recall.experiments.ch4_edge --preset {preset} --allow-long"
#: The edge family's Mamba-2 recipe (``presets/ch4.py``): App. F's head claims are judged on its seeds, at each
#: model's pressure length (declared with the recipe, before any of its results).
MAMBA2_RECIPE = "m2"


class EdgeFamily:
    """The committed edge family of :mod:`mamba_recall.experiments.ch4_edge` (bundles ``ch4_edge_<preset>`` and
    ``ch4_edge_checks_<preset>``): ``curves`` (recipe, L, variant, k → mean recall over seeds, 95 % t-interval,
    per-seed values), ``models`` (one row per model: card, gate, L_p), ``runs`` (the per-seed stored claim
    measurements) and ``primary`` (the recipe whose verdicts the scorecard carries). ``missing`` says what is not
    committed yet and the command that makes it (empty when both bundles exist). Only an absent bundle counts as
    not committed (:class:`~mamba_recall.results.BundleMissing`); one that exists but is corrupt raises its
    :class:`~mamba_recall.results.BundleError` (file and regenerate command) rather than turning the chapter's
    verdicts into "not committed yet"."""

    def __init__(self, preset: str = "cpu-hours", *, smoke: bool = False, directory=None):
        from ..results import BundleMissing, load_bundle

        self.preset, self.smoke = preset, smoke
        tail = "_smoke" if smoke else ""  # the bundles of a smoke run (in _build/smoke_results, never evidence)
        self.curves = self.models = self.bundle = self.checks = None
        self.runs: list[dict] = []
        self.primary: str | None = None
        missing = []
        try:
            self.bundle = load_bundle(f"ch4_edge_{preset}{tail}", directory=directory)
            self.curves, self.models = self.bundle.tables["curves"], self.bundle.tables["models"]
        except BundleMissing:
            missing.append(f"the models (`{EDGE_COMMAND.format(preset=preset)}`)")
        try:
            self.checks = load_bundle(f"ch4_edge_checks_{preset}{tail}", directory=directory)
            self.runs = self.checks.data["runs"]
            self.primary = self.checks.data["primary_recipe"]
        except BundleMissing:
            missing.append(f"their claim checks (`{EDGE_COMMAND.format(preset=preset)} --checks`)")
        self.missing = "; ".join(missing)

    @classmethod
    def from_runs(cls, runs: list[dict], preset: str = "cpu-hours", *, smoke: bool = False) -> "EdgeFamily":
        """A family from the checks runner's records (before its bundle is written): runs only, no primary."""
        fam = cls.__new__(cls)
        fam.smoke = smoke
        fam.preset, fam.curves, fam.models, fam.bundle, fam.checks = preset, None, None, None, None
        fam.primary, fam.missing = None, ""
        fam.runs = [  # the same record as the bundle's runs, the model's name included (its checkpoint is re-read)
            {
                "recipe": r["config"]["recipe_name"],
                "seed": r["seed"],
                "model": r["config"].get("model_name"),
                **r["result"],
            }
            for r in runs
        ]
        return fam

    def only(self, recipe: str) -> "EdgeFamily":
        """The family restricted to one recipe (its curves, model rows and check runs); when none of its models is
        committed, ``curves`` and ``models`` are None and ``missing`` names the command that trains it."""
        fam = EdgeFamily.__new__(EdgeFamily)
        fam.preset, fam.smoke, fam.bundle, fam.checks = self.preset, self.smoke, self.bundle, self.checks
        fam.primary = self.primary if self.primary == recipe else None
        fam.runs = [r for r in self.runs if r["recipe"] == recipe]
        fam.curves = None if self.curves is None else self.curves[self.curves["recipe"] == recipe]
        fam.models = None if self.models is None else self.models[self.models["recipe"] == recipe]
        fam.missing = self.missing
        if not fam.missing and (fam.models is None or fam.models.empty):
            fam.curves = fam.models = None
            fam.missing = (
                f"the models of recipe {recipe} (`{EDGE_COMMAND.format(preset=self.preset)} --recipes {recipe}`)"
            )
        return fam

    def seeds_of(self, recipe: str) -> list[dict]:
        """The stored check runs of ``recipe``, by seed (every one, counted or not)."""
        return sorted((r for r in self.runs if r["recipe"] == recipe), key=lambda r: r["seed"])

    @property
    def sizes(self) -> dict:
        """The preset's sizes of the family (experiment ``ch4.edge``: recipes, seeds, reserve seeds)."""
        from ..presets import experiment

        return experiment("ch4.edge", self.preset, smoke=self.smoke)

    def evidence(self, recipe: str):
        """Which seeds of ``recipe`` its verdicts are judged on and why
        (:func:`mamba_recall.analysis.edge_seeds.evidence_seeds`, the declared rule)."""
        from .edge_seeds import evidence_seeds

        return evidence_seeds(recipe, self.runs, self.sizes)

    def evidence_runs(self, recipe: str) -> list[dict]:
        """The stored check runs of the seeds ``recipe`` is judged on (:meth:`evidence`), in seed order."""
        keep = set(self.evidence(recipe).evidence)
        return [r for r in self.seeds_of(recipe) if r["seed"] in keep]

    def probe_table(self, name: str = "slow_states"):
        """One row per (recipe, seed) of a probe stored by the checks runner (e.g. the slow-state ablation)."""
        import pandas as pd

        rows = [
            {
                "recipe": r["recipe"],
                "seed": r["seed"],
                "L": r["at"],
                **{k: v for k, v in r.get("probes", {}).get(name, {}).items() if not isinstance(v, list)},
            }
            for r in self.runs
            if name in r.get("probes", {})
        ]
        return pd.DataFrame(rows)

    def cards(self):
        """One row per model: recipe, seed, its card, the s_small gate of its training run, the edge family's gate (from
        the checks: recall at L = 2), L_p and the recall at L_p (first, middle third, last)."""
        import pandas as pd

        if self.models is None:
            return pd.DataFrame()
        cols = ["model", "recipe", "seed", "gate_passed", "train_L_max", "L_p", "acc1_Lp", "mid_Lp", "accL_Lp", "card"]
        out = self.models[cols].rename(columns={"gate_passed": "s_small gate"}).copy()
        gates = {(r["recipe"], r["seed"]): r.get("gate", {}) for r in self.runs}
        out.insert(4, "edge gate", [gates.get((r, sd), {}).get("passed") for r, sd in zip(out["recipe"], out["seed"])])
        out.insert(
            5,
            "L=2 recall",
            [
                min(gates.get((r, sd), {}).get("metrics", {"": float("nan")}).values())
                for r, sd in zip(out["recipe"], out["seed"])
            ],
        )
        return out.round(3)

    def status(self) -> str:
        """Which recipes have how many checked seeds past the edge gate (what decides the primary recipe): per recipe
        ``<recipe>: <ok> of <n> checked seeds past the edge gate``; a recipe with reserve seeds reads its
        :meth:`evidence` instead (e.g. ``d4: seeds passing 0, 3, 4 of seeds 0–5 trained (3 of 6 …)``, each seed's gate
        and which seeds count), followed by the rule that picks the primary recipe."""
        if self.missing:
            return f"not committed yet: {self.missing}"
        from .edge_seeds import primary_rule, reserve_seeds

        reserves = reserve_seeds(self.sizes)
        counts = {}
        for r in self.runs:
            done, ok = counts.get(r["recipe"], (0, 0))
            counts[r["recipe"]] = (done + 1, ok + bool(r.get("gate", {}).get("passed")))
        parts = [
            self.evidence(k).summary() if k in reserves else f"{k}: {ok} of {n} checked seeds past the edge gate"
            for k, (n, ok) in sorted(counts.items())
        ]
        return ", ".join(parts) + (f". {primary_rule(self.sizes)}" if reserves else "")


def load_edge_family(preset: str = "cpu-hours") -> EdgeFamily:
    return EdgeFamily(preset)


def committed_model_curves(names, Ls, n: int, variant: str = "repeated", device="cpu"):
    """Recall by position of committed S-models (``results/checkpoints/ch4_<name>.pt``) at every length of ``Ls``:
    a long table (model, L, k, acc, lo, hi, trained) where ``trained`` says whether L was inside the model's
    training range (its recipe's ``L_max``)."""
    import pandas as pd

    rows = []
    for name in names:
        model, vocab, side = load_checkpoint(model=name, device=device)
        L_max = side["train_config"]["L_max"]
        for L in Ls:
            s = iv.summary(iv.recall_by_position(model, contexts(vocab, L, variant, n), device=device))
            rows += [
                {
                    "model": name,
                    "L": L,
                    "k": k + 1,
                    "acc": s["acc"][k],
                    "lo": s["lo"][k],
                    "hi": s["hi"][k],
                    "trained": L <= L_max,
                }
                for k in range(L)
            ]
    return pd.DataFrame(rows)


# --------------------------------------------------------------------- slow states (our probe, not a paper claim)


def slow_state_probe(
    model, vocab, L: int, n: int, *, n_random: int = 5, tau: float = 0.7, p: float = 0.7, L_ident: int = 8, device="cpu"
) -> dict:
    """The mechanism the channel statistic misses: zero Ā at the first triple for the *slow-writing states*
    (:func:`mamba_recall.analysis.channels.state_stats` / ``slow_states``: states that keep ≥ τ of themselves up to
    the query while still writing) of the layers whose long-term channels Fig. 3b targets, as many Ā entries as that
    channel set, against ``n_random`` layer-matched random state sets and against the channel set itself.

    Returns δ(1) and mean δ(k ≥ 3) per condition (:func:`mamba_recall.analysis.interventions.first_position_drops`),
    the baseline acc(1), the count of Ā entries and L; NaNs (and ``"why"``) when no long-term channel was identified."""
    prompt = identification_prompt(vocab, L_ident)
    stats = ch.channel_stats(model, prompt)
    targets = ch.target_set(ch.identify(stats, tau, p), max(1, min(3, stats.n_layers // 2)))
    if not targets:
        nan = float("nan")
        return {
            "L": L,
            "entries": 0,
            "base1": nan,
            "channels": nan,
            "targeted": nan,
            "layer_matched_mean": nan,
            "why": f"no long-term channel at τ = {tau}, p = {p}: no layer to match",
        }
    sstats = ch.state_stats(model, prompt)
    N = sstats.A[0].shape[1]
    slow = ch.slow_states(sstats, {layer: len(c) * N for layer, c in targets.items()})
    rctx = contexts(vocab, L, "repeated", n)
    eff = iv.state_ablation_effects(
        model, rctx, slow, iv.first_triplet_steps(bos=rctx.bos), n_random=n_random, channels=targets, device=device
    )
    drops = iv.first_position_drops(eff)
    return {"L": L, "entries": int(sum(eff["count"].values())), **{k: v for k, v in drops.items()}}
