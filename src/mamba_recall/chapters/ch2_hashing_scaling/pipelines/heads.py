"""Chapter 2's logit statistics of a trained multi-head model (paper 002, Figs. 14–15): :func:`logit_noise` at the
query positions of the held-out noise stream (:data:`NOISE_SEED`)."""

from __future__ import annotations

import torch

from mamba_recall.models.linear_mamba import MultiHeadLinearMamba
from mamba_recall.presets import seeds

NOISE_SEED = seeds.MQAR_NOISE


@torch.no_grad()
def logit_noise(model: MultiHeadLinearMamba, x: torch.Tensor, y: torch.Tensor, V: int, Nf: int) -> list[dict]:
    """Per member: logit statistics at the query positions (Fig. 14/15). x, y (B, L) from :func:`mqar`.

    correct = logit of the target value; wrong = logits of the other N_f − 1 context values; empty = logits of
    the V/2 − N_f value tokens absent from the context. Returns one dict per member (raw moments, variances
    relative to the squared margin, and normalised values for the histograms)."""
    model.eval()
    logits = model(x) if model.ensemble is not None else model(x)[None]  # (n_members, B, L, V)
    model.train()
    ctx_vals = x[:, 1 : 2 * Nf : 2]  # (B, N_f)
    in_ctx = torch.zeros(x.shape[0], V, dtype=torch.bool)
    in_ctx.scatter_(1, ctx_vals, True)
    b_idx, t_idx = (y != -100).nonzero(as_tuple=True)
    target = y[b_idx, t_idx]
    out = []
    for e in range(logits.shape[0]):
        q = logits[e, b_idx, t_idx].double()  # (Q, V)
        correct = q.gather(1, target[:, None])[:, 0]
        is_val = torch.zeros(V, dtype=torch.bool)
        is_val[V // 2 :] = True
        ctx = in_ctx[b_idx]
        wrong_mask = ctx & is_val[None]
        wrong_mask[torch.arange(len(target)), target] = False
        empty_mask = (~ctx) & is_val[None]
        wrong, empty = q[wrong_mask], q[empty_mask]
        margin = float(correct.mean() - empty.mean())
        scale = margin if abs(margin) > 1e-9 else 1.0
        norm = {
            k: ((v - empty.mean()) / scale).float()
            for k, v in (("correct", correct), ("wrong", wrong), ("empty", empty))
        }
        out.append(
            dict(
                mean_correct=float(correct.mean()),
                mean_wrong=float(wrong.mean()),
                mean_empty=float(empty.mean()),
                var_correct=float(correct.var()),
                var_wrong=float(wrong.var()),
                var_empty=float(empty.var()),
                margin=margin,
                rel_var_wrong=float(wrong.var()) / scale**2,
                rel_var_empty=float(empty.var()) / scale**2,
                norm=norm,
            )
        )
    return out
