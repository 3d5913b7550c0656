"""Trained KEEP n-TH models (paper 003, Tab. 1, Tabs. A.1–A.4, Fig. 1).

``python -m mamba_recall.experiments.ch3_keep_nth --preset ci|paper [--device cpu|cuda]`` trains every
(T, d, N, model, seed) of ``presets ch3.keep_train`` on on-the-fly data (a deviation from the paper's
fixed 10⁵-sample set, App. D.1), Adam (no weight decay), cosine lr, early stop at 100 % held-out
accuracy, and tests on fresh sequences. It writes ``results/ch3_keep_nth_<preset>.json`` with the tables
``runs`` (one row per run) and ``decay`` (Fig. 1: 50-bin histograms of e^{−λΔ} of the S6/S4D models, counts in
``before`` (t < n) and ``after`` (t ≥ n); the extra row with ``bin = −1`` holds frac(< 0.1 | t < n) in ``before`` and
frac(> 0.9 | t ≥ n) in ``after``; one set per seed), and the checkpoint of the S6+PE model with d = 32, N = 8 (the
largest T) in ``results/checkpoints/ch3_keep_s6pe.pt`` (first seed; ``_s{seed}`` for the others, ``_T{T}`` per T
when several T are run).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from ..tasks.keep_nth import copy_baseline, keep_nth
from ..train import evaluate, train
from .ch3_common import build_model, parse, save_checkpoint, save_runner_bundle

BINS = np.linspace(0.0, 1.0, 51)


@torch.no_grad()
def decay_values(model, ids: torch.Tensor, nth: int):
    """e^{−λΔ_t} of every (channel, state) at every position, split into t < n and t ≥ n (1-based)."""
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


@torch.no_grad()
def untrained_decay_values(ck: dict, ids: torch.Tensor, backend: str = "auto"):
    """e^{−λΔ_t} (split at n, as :func:`decay_values`) of the model the runner starts from: the same kind, sizes
    and init seed as checkpoint config ``ck``, before any training step."""
    torch.manual_seed(ck["seed"])
    model = build_model(ck["kind"], V=ck["V"], d=ck["d"], N=ck["N"], T=ck["T"], backend=backend)
    return decay_values(model, ids, ck["nth"])


def fig1_decay_pairs(sequences: int = 500, seed: int = 2, backend: str = "auto"):
    """Fig. 1 for every seed whose Mamba+PE checkpoint exists (``ch3_keep_s6pe`` and ``ch3_keep_s6pe_s<seed>`` of the
    same preset and T), on ``sequences`` test sequences of the checkpoint's T (data seed ``seed``): a list of
    ((t < n, t ≥ n) trained, (t < n, t ≥ n) untrained) e^{−λΔ} values, and the first checkpoint's config."""
    from ..models.s6 import MixerLM
    from .ch3_common import CHECKPOINT_DIR, load_checkpoint

    def factory(c):
        return MixerLM(c["V"], c["d"], c["N"], "s6", pe=True, backend=backend)

    model, ck = load_checkpoint("ch3_keep_s6pe", factory)
    ids, _ = keep_nth(sequences, ck["T"], ck["V"], ck["nth"], seed=seed)
    pairs = [(decay_values(model, ids, ck["nth"]), untrained_decay_values(ck, ids, backend))]
    for path in sorted(CHECKPOINT_DIR.glob("ch3_keep_s6pe_s*.pt")):
        other, ck2 = load_checkpoint(path.stem, factory)
        if (ck2["preset"], ck2["T"]) == (ck["preset"], ck["T"]):
            pairs.append((decay_values(other, ids, ck2["nth"]), untrained_decay_values(ck2, ids, backend)))
    return pairs, ck


# The runs whose outputs are committed in results/ (``make reproduce`` repeats them).
COMMITTED_RUNS = [["--preset", "ci", "--device", "cpu"]]


def main(argv=None):
    args = parse(__doc__.splitlines()[0], "ch3.keep_train", "ch3_keep_nth", argv)
    cfg = args.sizes
    rows, decay_rows = [], []
    start = time.time()
    for T in cfg["Ts"]:
        ev = keep_nth(cfg["eval_sequences"], T, cfg["V"], cfg["nth"], seed=1_000_000 + T)
        test = keep_nth(cfg["test_sequences"], T, cfg["V"], cfg["nth"], seed=2_000_000 + T)
        for d, N in cfg["dN"]:
            for kind in cfg["models"]:
                if kind == "transformer" and (d, N) != tuple(cfg["dN"][0]):
                    continue  # the Transformer row does not depend on (d, N)
                for seed in cfg["seeds"]:
                    torch.manual_seed(seed)
                    model = build_model(
                        kind, V=cfg["V"], d=d, N=N, T=T, backend=args.backend, transformer_d=cfg["transformer_d"]
                    )
                    lr = cfg["lr_transformer"] if kind == "transformer" else cfg["lr"]
                    res = train(
                        model,
                        lambda s, T=T, seed=seed: keep_nth(
                            cfg["batch"], T, cfg["V"], cfg["nth"], seed=10_000_000 * (seed + 1) + s
                        ),
                        steps=cfg["steps"],
                        lr=lr,
                        weight_decay=0.0,
                        seed=seed,
                        eval_every=100,
                        eval_batch=ev,
                        target_accuracy=1.0,
                        device=args.device,
                        progress=False,
                        desc=f"{kind} T={T} d={d} N={N} s={seed}",
                    )
                    acc = evaluate(model, *test, device=args.device)
                    params = sum(p.numel() for p in model.parameters())
                    rows.append(
                        dict(
                            T=T,
                            d=d,
                            N=N,
                            model=kind,
                            seed=seed,
                            accuracy=acc,
                            steps=res.steps_run,
                            params=params,
                            seconds=res.seconds,
                            copy_baseline=copy_baseline(T, cfg["nth"]),
                        )
                    )
                    print(rows[-1], flush=True)
                    model = model.cpu()
                    if kind in ("s6+pe", "s4d+pe", "s6", "s4d"):
                        b, a = decay_values(model, test[0][:500], cfg["nth"])
                        hb, _ = np.histogram(b, BINS)
                        ha, _ = np.histogram(a, BINS)
                        for lo, cb, ca in zip(BINS[:-1], hb, ha):
                            decay_rows.append(
                                dict(T=T, d=d, N=N, model=kind, seed=seed, bin=float(lo), before=int(cb), after=int(ca))
                            )
                        decay_rows.append(
                            dict(
                                T=T,
                                d=d,
                                N=N,
                                model=kind,
                                seed=seed,
                                bin=-1.0,
                                before=float(np.mean(b < 0.1)),
                                after=float(np.mean(a > 0.9)),
                            )
                        )
                    if kind == "s6+pe" and (d, N) == (32, 8):
                        meta = dict(V=cfg["V"], d=d, N=N, T=T, nth=cfg["nth"], kind=kind, seed=seed, preset=args.preset)
                        # the largest T wins (Fig. 1 notebook); seeds after the first as ch3_keep_s6pe_s<seed>
                        save_checkpoint(
                            model, "ch3_keep_s6pe" if seed == cfg["seeds"][0] else f"ch3_keep_s6pe_s{seed}", meta
                        )
                        if len(cfg["Ts"]) > 1 and seed == cfg["seeds"][0]:
                            save_checkpoint(model, f"ch3_keep_s6pe_T{T}", meta)
    save_runner_bundle(args, "ch3_keep_nth", {"n_runs": len(rows)}, cfg, start, {"runs": rows, "decay": decay_rows})


if __name__ == "__main__":
    main(sys.argv[1:])
