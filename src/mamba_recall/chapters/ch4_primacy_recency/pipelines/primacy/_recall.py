"""Recall by position under the probes of §4.1 and §4.4: the U-curves and the pressure length (Fig. 2), distractors
between context and query (Fig. 5b) and one layer's state started from U(0, s) (Figs. 5a, 14), each with the
summary numbers its claims read."""

from __future__ import annotations

import numpy as np
import torch

from mamba_recall.analysis import interventions as iv
from ._models import contexts

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
    reads them is the registry's (:mod:`mamba_recall.chapters.ch4_primacy_recency.claims.serial_recall`)."""
    s = iv.summary(correct)
    acc = s["acc"]
    L = len(acc)
    ma = np.convolve(acc, np.ones(3) / 3, mode="valid") if L >= 3 else acc
    argmin = int(np.argmin(ma)) + 2  # 1-based centre of the 3-point window
    return {"primacy": s["primacy"], "recency": s["recency"], "mid": s["mid"], "argmin": argmin}


def check_random_vs_repeated(curves, L, seed=0) -> dict:
    """§4.1, random vs repeated relations at one L: mid(random) − mid(repeated) with its paired-bootstrap interval and
    each variant's U depth (the rule: :mod:`mamba_recall.chapters.ch4_primacy_recency.claims.serial_recall`)."""
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


# --------------------------------------------------------------------- distractors (§4.4, Fig. 5b)


class DistractorSweep(dict):
    """{n_d: (n, L) correct} of :func:`distractor_sweep`, tagged with the distractor ``pool`` it drew from (so a claim
    can tell the paper's random tokens from in-distribution filler)."""

    pool = "content"


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
