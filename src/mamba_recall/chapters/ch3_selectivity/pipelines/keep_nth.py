r"""KEEP n-TH (paper 003, Tab. 1, Fig. 1, Lem. 2) read off the models: the decay e^{−λΔ_t} of the S6 / S4D states
(:func:`decay_values`) and its 50-bin histograms (:data:`BINS`, the ``decay`` rows of a bundle), Fig. 1's baseline (the
same histograms of each run's model at initialisation: :func:`untrained_decay_rows`, :func:`untrained_decay_table`),
Fig. 1's trained / untrained pairs on the committed Mamba+PE checkpoints (:func:`fig1_decay_pairs`), and whether a
model can use its positional encoding at all (:func:`pe_logit_dependence`).

The runs are the ones :mod:`mamba_recall.chapters.ch3_selectivity.runners.keep_nth` trains: a run is its resolved config
(:func:`resolved_config`) and init seed, its model before any step :func:`initial_model`, its test sequences
:func:`keep_test_set`; the models, checkpoints and recipe are :mod:`mamba_recall.chapters.ch3_selectivity.training.selectivity`'s.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from mamba_recall.tasks.keep_nth import keep_nth
from mamba_recall.chapters.ch3_selectivity.training.job_configs import KeepRun
from mamba_recall.chapters.ch3_selectivity.training.selectivity import (
    regenerate_command,
    build_model,
    keep_checkpoint_name,
    recipe_fields,
)

BINS = np.linspace(0.0, 1.0, 51)


@torch.no_grad()
def decay_values(model, ids: torch.Tensor, nth: int):
    r"""e^{−λΔ_t} of every (channel, state) at every position, split into t < n and t ≥ n (1-based).

    Paper 003, Eq. (5) (ZOH) with Eq. (7) for Mamba and Eq. (6) for S4D: the state of channel c, entry k decays by
    :math:`\bar\Lambda_{t,ck}=e^{-\lambda_{ck}\Delta_{t,c}}` per step, with :math:`\lambda_{ck}=-A_{ck}=e^{A\_log_{ck}}>0`
    (A: ``(d, N)``) and, for S6, :math:`\Delta_t=\mathrm{softplus}(W_{dt}W_x\hat x_t+b_{dt})` (``(b, d, T)``, input
    dependent); for S4D :math:`\Delta_c=e^{\log\Delta_c}` is the same at every step and for every input. Fig. 1
    histograms these values; Lem. 2 says retaining information over T steps needs
    :math:`\lambda\sum_r\Delta(x_r)` bounded, i.e. :math:`e^{-\lambda\Delta_t}\to1` as T grows. ``ids`` (b, T)
    → (values at t < n, values at t ≥ n), each flattened over (b, d, positions, N)."""
    model.eval()
    x = model.embed(ids)
    mix = model.mixer
    if model.mixer_name == "s6":
        _, internals = mix(x, return_internals=True)
        delta = internals["delta"]  # (b, d, T)
        dec = torch.exp(delta[..., None] * internals["A"][None, :, None, :])  # (b, d, T, N)
    else:
        dec = mix.decay(ids.shape[1])[None, :, None, :].expand(ids.shape[0], -1, ids.shape[1], -1)
    before = dec[:, :, : nth - 1].reshape(-1).cpu().numpy()
    after = dec[:, :, nth - 1 :].reshape(-1).cpu().numpy()
    return before, after


@torch.no_grad()
def pe_logit_dependence(
    kinds=("s4d", "s6"),
    V: int = 128,
    d: int = 32,
    N: int = 8,
    T: int = 20,
    nth: int = 5,
    sequences: int = 64,
    seeds=(0, 1, 2),
) -> dict:
    r"""Can the model use its positional encoding? For each mixer in ``kinds`` and each init seed, a fresh
    ``MixerLM(mixer, pe=True)`` (float64) is run on ``sequences`` KEEP n-TH inputs twice: with the PE
    coordinate :math:`p_t=t` and with it set to 0. The difference of the logits is the PE's whole effect; its
    spread across input sequences (max over t and classes of max − min over sequences) is 0 when the PE
    only adds a per-position bias, independent of the tokens.

    For S4D this holds for *any* weights: the mixer is depthwise and time-invariant (each channel c is
    :math:`y_{t,c}=\sum_s K_c(t-s)x_{s,c}+D_cx_{t,c}`), so the PE channel's output is a fixed function of t,
    and the linear head adds it to every sequence's logits alike. A per-position bias cannot tell which
    token sat at position n, so S4D+PE can do no more than S4D. In the S6, the PE enters Δ, B and C through
    ``x_proj``, which mixes channels, and multiplies the token channels' inputs: its effect depends on the
    tokens. Returns {mixer: largest spread over the seeds}."""
    ids, _ = keep_nth(sequences, T, V, nth, seed=12345)
    out = {}
    for kind in kinds:
        worst = 0.0
        for seed in seeds:
            torch.manual_seed(seed)
            model = build_model(f"{kind}+pe", V=V, d=d, N=N, T=T, backend="reference").double().eval()
            x = model.embed(ids)
            x0 = x.clone()
            x0[..., -1] = 0.0
            effect = _logits_from_embedding(model, x) - _logits_from_embedding(model, x0)  # (b, T, V)
            worst = max(worst, float((effect.max(0).values - effect.min(0).values).abs().max()))
        out[kind] = worst
    return out


def _logits_from_embedding(model, x):
    y = model.mixer(x)
    return model.head(y)


def initial_model(c: KeepRun, seed: int, backend: str = "auto"):
    """The model a KEEP n-TH run of resolved config ``c`` (:func:`resolved_config`) and init seed ``seed`` starts from,
    before any training step: :func:`train_one` builds its model with this very call (the global torch seed is set,
    then the model is built, so nothing drawn before it changes the initial weights)."""
    torch.manual_seed(seed)
    return build_model(c.model, V=c.V, d=c.d, N=c.N, T=c.T, backend=backend, transformer_d=c.transformer_d)


def keep_test_set(c: KeepRun):
    """The test sequences ``(ids, labels)`` of resolved config ``c``: ``test_sequences`` of length T drawn with seed
    ``test_seed``; the ``decay`` histograms use the first 500 (:func:`decay_rows_of`)."""
    return keep_nth(c.test_sequences, c.T, c.V, c.nth, seed=c.test_seed)


@torch.no_grad()
def untrained_decay_values(ck: dict, ids: torch.Tensor, backend: str = "auto"):
    """e^{−λΔ_t} (split at n, as :func:`decay_values`) of the model the runner starts from: the same kind, sizes
    and init seed as checkpoint config ``ck``, before any training step."""
    torch.manual_seed(ck["seed"])
    model = build_model(ck["kind"], V=ck["V"], d=ck["d"], N=ck["N"], T=ck["T"], backend=backend)
    return decay_values(model, ids, ck["nth"])


def fig1_decay_pairs(
    sequences: int = 500, seed: int = 2, backend: str = "auto", preset: str = "ci", T: int | None = None
):
    """Fig. 1 for every seed whose Mamba+PE checkpoint (d = 32, N = 8) of ``preset`` exists, on ``sequences`` test
    sequences of the checkpoint's T (data seed ``seed``): a list of ((t < n, t ≥ n) trained, (t < n, t ≥ n) untrained)
    e^{−λΔ} values, and the first checkpoint's config (plus ``checkpoint``, its path). The files are
    ``ch3_keep_nth_s6pe_<preset>_T<T>_seed<s>`` (:func:`keep_checkpoint_name`), read at ``T`` (default: the largest T
    saved), seed by seed."""
    from mamba_recall.models.s6 import MixerLM
    from mamba_recall.chapters.ch3_selectivity.training.selectivity import CHECKPOINT_DIR, load_checkpoint

    def factory(c):
        return MixerLM(c["V"], c["d"], c["N"], "s6", pe=True, backend=backend)

    stem = keep_checkpoint_name(preset)
    found = {}  # T -> {seed: name}
    for path in CHECKPOINT_DIR.glob(f"{stem}_T*_seed*.pt"):
        match = re.fullmatch(rf"{re.escape(stem)}_T(\d+)_seed(\d+)", path.stem)
        if match:
            found.setdefault(int(match.group(1)), {})[int(match.group(2))] = path.stem
    if not found:
        raise FileNotFoundError(
            f"no {stem}_T<T>_seed<s>.pt in {CHECKPOINT_DIR}; make them with `{regenerate_command(preset)}`."
        )
    T = T if T is not None else max(found)
    if T not in found:
        raise FileNotFoundError(f"no {stem}_T{T}_seed<s>.pt in {CHECKPOINT_DIR}; the saved T are {sorted(found)}.")
    names = [found[T][s] for s in sorted(found[T])]
    model, ck = load_checkpoint(names[0], factory)
    ids, _ = keep_nth(sequences, ck["T"], ck["V"], ck["nth"], seed=seed)
    pairs = [(decay_values(model, ids, ck["nth"]), untrained_decay_values(ck, ids, backend))]
    for name in names[1:]:
        other, ck2 = load_checkpoint(name, factory)
        if (ck2["preset"], ck2["T"]) == (ck["preset"], ck["T"]):
            pairs.append((decay_values(other, ids, ck2["nth"]), untrained_decay_values(ck2, ids, backend)))
    return pairs, dict(ck, checkpoint=f"results/checkpoints/{names[0]}.pt")


def resolved_config(cfg: dict, T: int, d: int, N: int, kind: str) -> KeepRun:
    """The fully resolved configuration of one KEEP n-TH run (a run-store job's config; nothing left to a
    default): task sizes, model, recipe (Adam without weight decay, cosine lr to 0, early stop at 100 % held-out
    accuracy, evaluated every 100 steps), data seeds (training batch of step s: ``10⁷·(seed + 1) + s``; held-out
    ``10⁶ + T``; test ``2·10⁶ + T``)."""
    return KeepRun(
        task="keep_nth",
        T=T,
        V=cfg["V"],
        nth=cfg["nth"],
        d=d,
        N=N,
        model=kind,
        transformer_d=cfg["transformer_d"],
        **recipe_fields(cfg, T, lr=cfg["lr_transformer"] if kind == "transformer" else cfg["lr"]),
    )


def decay_rows_of(model, test_ids, c: KeepRun, seed: int) -> list[dict]:
    """The ``decay`` table rows of one S6/S4D model (module docstring): 50-bin histograms of e^{−λΔ} on the first 500
    test sequences, before and from n, plus the bin = −1 row of fractions."""
    b, a = decay_values(model, test_ids[:500], c.nth)
    return histogram_rows(dict(T=c.T, d=c.d, N=c.N, model=c.model, seed=seed), b, a)


def histogram_rows(cell: dict, before, after) -> list[dict]:
    """The ``decay`` rows of one run (``cell``: its T, d, N, model, seed) from the values of e^{−λΔ} at t < n
    (``before``) and t ≥ n (``after``): per bin of :data:`BINS` (50 equal bins of [0, 1], ``bin`` = lower edge) the
    two counts, then the row ``bin`` = −1 with frac(< 0.1 | t < n) and frac(> 0.9 | t ≥ n) of the raw values."""
    b, a = np.asarray(before), np.asarray(after)
    hb, _ = np.histogram(b, BINS)
    ha, _ = np.histogram(a, BINS)
    rows = [dict(cell, bin=float(lo), before=int(cb), after=int(ca)) for lo, cb, ca in zip(BINS[:-1], hb, ha)]
    rows.append(dict(cell, bin=-1.0, before=float(np.mean(b < 0.1)), after=float(np.mean(a > 0.9))))
    return rows


def untrained_decay_rows(c: KeepRun, seed: int, backend: str = "auto") -> list[dict]:
    """Fig. 1's baseline for one run: the ``decay`` rows (:func:`decay_rows_of`: 50-bin histograms of e^{−λΔ_t} at
    t < n and t ≥ n, pooled over the first 500 test sequences, every channel, state and position, plus the bin = −1
    row of fractions) of the model that the run of resolved config ``c`` and init seed ``seed`` starts from
    (:func:`initial_model`), on the run's own test sequences (:func:`keep_test_set`). No training step: a forward
    pass of 500 sequences."""
    if c.model not in ("s6+pe", "s6", "s4d+pe", "s4d"):
        raise ValueError(f"untrained_decay_rows: model {c.model!r} has no e^(−λΔ); use an S6 or S4D kind.")
    return decay_rows_of(initial_model(c, seed, backend), keep_test_set(c)[0], c, seed)


def _bundle_sizes(bundle) -> dict:
    """The preset sizes a KEEP n-TH bundle was made with: a run-store bundle keeps them under ``sizes``, a loop
    runner's bundle (``ci``/``paper``) is the sizes themselves."""
    cfg = bundle.config
    return cfg["sizes"] if "sizes" in cfg else cfg


def untrained_decay_table(bundle, backend: str = "auto"):
    """The untrained baseline of every run in ``bundle``'s ``decay`` table, in the same format (one set of rows per
    run, with its seed): the runs' resolved configs are rebuilt from the bundle's sizes (:func:`resolved_config`), so
    each model is its run's own initialisation on its run's own test sequences. A bundle written without a ``seed``
    column holds seed 0 (the ``ci`` bundle; its runs were seed 0)."""
    import pandas as pd

    dec = bundle.tables["decay"]
    dec = dec if "seed" in dec else dec.assign(seed=0)
    sizes = _bundle_sizes(bundle)
    rows = []
    for T, d, N, kind, seed in sorted(set(dec[["T", "d", "N", "model", "seed"]].itertuples(index=False))):
        c = resolved_config(sizes, int(T), int(d), int(N), kind)
        rows += untrained_decay_rows(c, int(seed), backend)
    return pd.DataFrame(rows)
