"""The long-term channels of §4.2 (identification prompt, write strength, sparsity, Ā ablations: Figs. 3, 4, 9, 10),
Δ under periodic input (§4.3, Figs. 6, 7), the channels' cost on the downstream transfer tasks (Table 1) and the
slow-state probe (ours, not a paper claim)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from mamba_recall.presets import seeds
from mamba_recall.tasks.serial_recall import periodic_sequences, recall_contexts, recall_prompts
from mamba_recall.tasks.transfer import LONGBENCH_ANALOGUE
from mamba_recall.tasks.transfer import transfer_sets as tasks_transfer_sets
from mamba_recall.analysis import channels as ch
from mamba_recall.analysis import interventions as iv
from ._models import contexts

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


def transfer_ablation(model, sets: dict, chans, *, n_random: int, device="cpu"):
    """Table 1 on the transfer ``sets``: Ā = 0 at every step on the identified channels ``chans`` (one index tensor
    per layer, :func:`mamba_recall.analysis.channels.identify`; every layer), against ``n_random`` random sets of the
    same count → :func:`transfer_table`'s table, or None when no channel was identified (nothing to ablate)."""
    targets = {layer: c for layer, c in enumerate(chans) if len(c)}
    if not targets:
        return None
    return transfer_table(transfer_effects(model, sets, targets, n_random=n_random, device=device))


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
