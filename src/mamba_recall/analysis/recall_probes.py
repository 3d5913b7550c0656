r"""Probes of the trained simplified Mamba of paper 000 (Fig. 4, Fig. 8, App. C, Figs. 5–7).

Everything the SSM does at step t — Δ_t = softplus(W_Δ x̂_t), the forgetting factor exp(Λ ⊙ Δ_t) and
the input term (Δ_t ⊙ x̂_t) ⊗ B(x̂_t) — is a function of the token pair (x_{t−1}, x_t) alone
(x̂_t = [e_{x_{t−1}}; e_{x_t}]). So the model's whole "program" is a |V| × |V| table
(:func:`pair_table`), and the paper's three regimes are read off it exactly (:func:`regime_summary`):

* write  (x_{t−1}, x_t) = (k, v): small forgetting factor, large input term on coordinate |V| + v;
* read   (x_{t−1}, x_t) = (x, k): almost no forgetting;
* forget (x_{t−1}, x_t) = (v_1, v_2): slow forgetting, between the two.

W_Δ orientation: PyTorch (out, in). The paper's "second part of rows 0 and V" (Fig. 8) are our
**columns** 0 (previous token = key) and V (current token = key), restricted to output channels
V..2V−1 (:func:`wdelta_block_mass`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..models.simplified_recall import wdelta_block_mass  # noqa: F401  (a probe of W_Δ's layout, kept importable here)
from ..tasks.latest_value import EVENT_NAMES, NOISE, READ, WRITE, pair_events

# App. C approximate values [paper], |K| = 1 (coordinates: 0 = e_0, V = e_V, "rest" = the other ones)
PAPER_APP_C = {
    ("write", "forget", "e_0"): 0.5,
    ("write", "forget", "e_V"): 1.0,
    ("write", "forget", "first half rest"): 0.05,
    ("write", "forget", "second half rest"): 0.3,
    ("read", "forget", "e_0"): 0.9,
    ("read", "forget", "e_V"): 0.9,
    ("read", "forget", "first half rest"): 0.4,
    ("read", "forget", "second half rest"): 0.8,
    ("forget", "forget", "first half"): 0.6,
    ("forget", "forget", "second half"): 0.4,
    ("write", "input", "e_0 (prev = key)"): 15.0,
    ("write", "input", "e_{V+v} (cur = value)"): 30.0,
    ("read", "input", "e_x (prev = value)"): 10.0,
    ("read", "input", "e_{V+k} (cur = key)"): 10.0,
    ("forget", "input", "e_{v1} (prev)"): 10.0,
    ("forget", "input", "e_{V+v2} (cur)"): 10.0,
}


@torch.no_grad()
def pair_table(model) -> dict[str, torch.Tensor]:
    """Δ, forgetting factor and input term for every pair (p, c): tensors (V, V, 2V) (state n = 0),
    plus B, C (V, V, N). Computed by running the model on the 2-token sequences [p, c] (t = 1)."""
    V = model.vocab_size
    p, c = torch.meshgrid(torch.arange(V), torch.arange(V), indexing="ij")
    ids = torch.stack([p.reshape(-1), c.reshape(-1)], 1).to(model.W_delta.device)
    _, internals = model(ids, return_internals=True)
    out = {
        k: internals[k][:, 1].reshape(V, V, *internals[k].shape[2:]).cpu()
        for k in ("delta", "forget", "input_term", "B", "C")
    }
    out["forget"], out["input_term"] = out["forget"][..., 0], out["input_term"][..., 0]
    return out


def regime_summary(model, num_keys: int = 1) -> pd.DataFrame:
    """The write / read / forget regimes of App. C measured on ``model`` (|K| = 1: key 0).

    Averages over all pairs of each regime: write (0, v), read (x, 0), forget (v1, v2), v, x, v_i ≥ 1.
    Rows: regime, quantity (forget | input), coordinate group, ours, paper (App. C, approximate)."""
    if num_keys != 1:
        raise ValueError("regime_summary implements the |K| = 1 mechanism of App. C; use num_keys=1.")
    tab = pair_table(model)
    V = model.vocab_size
    F, I = tab["forget"], tab["input_term"]
    vals = torch.arange(1, V)
    rest1, rest2 = vals, V + vals
    rows = []

    def add(regime, quantity, coord, value):
        rows.append(
            {
                "regime": regime,
                "quantity": quantity,
                "coordinate": coord,
                "ours": float(value),
                "paper": PAPER_APP_C.get((regime, quantity, coord), float("nan")),
            }
        )

    w = F[0, 1:]  # write pairs (0, v): (V−1, 2V)
    add("write", "forget", "e_0", w[:, 0].mean())
    add("write", "forget", "e_V", w[:, V].mean())
    add("write", "forget", "first half rest", w[:, rest1].mean())
    add("write", "forget", "second half rest", w[:, rest2].mean())
    r = F[1:, 0]  # read pairs (x, 0)
    add("read", "forget", "e_0", r[:, 0].mean())
    add("read", "forget", "e_V", r[:, V].mean())
    add("read", "forget", "first half rest", r[:, rest1].mean())
    add("read", "forget", "second half rest", r[:, rest2].mean())
    n = F[1:, 1:]  # noise pairs (v1, v2)
    add("forget", "forget", "first half", n[..., :V].mean())
    add("forget", "forget", "second half", n[..., V:].mean())
    add("write", "input", "e_0 (prev = key)", I[0, 1:, 0].mean())
    add("write", "input", "e_{V+v} (cur = value)", torch.stack([I[0, v, V + v] for v in range(1, V)]).mean())
    add("read", "input", "e_x (prev = value)", torch.stack([I[x, 0, x] for x in range(1, V)]).mean())
    add("read", "input", "e_{V+k} (cur = key)", I[1:, 0, V].mean())
    add("forget", "input", "e_{v1} (prev)", torch.stack([I[a, b, a] for a in range(1, V) for b in range(1, V)]).mean())
    add(
        "forget",
        "input",
        "e_{V+v2} (cur)",
        torch.stack([I[a, b, V + b] for a in range(1, V) for b in range(1, V)]).mean(),
    )
    return pd.DataFrame(rows)


@torch.no_grad()
def second_half_forgetting(model) -> dict:
    """§3 / App. C regimes: mean forgetting factor over coordinates V..2V−1 for write (0, v), forget (v1, v2)
    and read (x, 0) pairs, and whether F_write < F_forget < F_read (the claim's rule is in ``claims.ch1.mechanism_one_key``)."""
    tab = pair_table(model)
    V = model.vocab_size
    F = tab["forget"][..., V:]
    fw, fn, fr = float(F[0, 1:].mean()), float(F[1:, 1:].mean()), float(F[1:, 0].mean())
    return {"F_write": fw, "F_forget": fn, "F_read": fr, "order_holds": bool(fw < fn < fr)}


@torch.no_grad()
def write_strength(model) -> dict:
    """Fig. 4(c) / App. C (write): mean input term on |V|+v at writes (0, v) vs on |V|+v2 at noise pairs (v1, v2)."""
    tab = pair_table(model)
    V = model.vocab_size
    I = tab["input_term"]
    write = float(torch.stack([I[0, v, V + v] for v in range(1, V)]).mean())
    noise = float(torch.stack([I[a, b, V + b] for a in range(1, V) for b in range(1, V)]).mean())
    largest = all(int(I[0, v].argmax()) == V + v for v in range(1, V))
    return {"write": write, "noise": noise, "ratio": write / noise, "write_is_largest_entry": bool(largest)}


def probe_frame(model, ids, start: int = 0, stop: int | None = None, num_keys: int = 1) -> pd.DataFrame:
    """Fig. 4 data for one sequence ``ids`` (T,), long format: t, token, event, panel, dim, half, value.

    Panels: "output" (o_t = W_o y_t, dims 0..V−1), "state" h_t, "input term" Δ_t ⊙ x̂_t (⊗ B),
    "forgetting factor" exp(Λ ⊙ Δ_t) (dims 0..2V−1, state n = 0)."""
    ids = torch.as_tensor(ids).reshape(1, -1)
    with torch.no_grad():
        logits, it = model(ids.to(model.W_delta.device), return_internals=True)
    x = ids[0].numpy()
    events = pair_events(x, num_keys)
    stop = x.shape[0] if stop is None else stop
    V = model.vocab_size
    panels = {
        "output": logits[0],
        "state": it["state"][0, ..., 0],
        "input term": it["input_term"][0, ..., 0],
        "forgetting factor": it["forget"][0, ..., 0],
    }
    frames = []
    for name, val in panels.items():
        val = val[start:stop].cpu().numpy()
        t = np.arange(start, stop)
        dims = np.arange(val.shape[1])
        frames.append(
            pd.DataFrame(
                {
                    "t": np.repeat(t, len(dims)),
                    "token": np.repeat(x[start:stop], len(dims)),
                    "event": np.repeat([EVENT_NAMES[e] for e in events[start:stop]], len(dims)),
                    "panel": name,
                    "dim": np.tile(dims, len(t)),
                    "half": np.tile(
                        np.where(dims < V, "first half (d < |V|)", "second half (d ≥ |V|)")
                        if name != "output"
                        else np.full(len(dims), "output"),
                        len(t),
                    ),
                    "value": val.reshape(-1),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


@torch.no_grad()
def fig4_checks(model, ids, num_keys: int = 1) -> dict:
    """Fig. 4 on one sequence (identity-trained model): (a) the written value's logit is the argmax at
    every write; the latest value at every query; (c) the largest input-term entry of the sequence
    is at a write; (d) second-half forgetting at a write is below that at the next read."""
    ids = torch.as_tensor(ids).reshape(1, -1)
    logits, it = model(ids.to(model.W_delta.device), return_internals=True)
    x = ids[0].numpy()
    ev = pair_events(x, num_keys)
    pred = logits[0].argmax(-1).cpu().numpy()
    writes, reads = np.where(ev == WRITE)[0], np.where(ev == READ)[0]
    from ..tasks.latest_value import latest_value_labels

    q, _ = latest_value_labels(x, num_keys)
    inp = it["input_term"][0, ..., 0].cpu().numpy()
    V = model.vocab_size
    fsec = it["forget"][0, :, V:, 0].mean(-1).cpu().numpy()
    pairs = [(w, reads[reads > w][0]) for w in writes if (reads > w).any()]
    return {
        "write_argmax_is_value": float((pred[writes] == x[writes]).mean()) if len(writes) else float("nan"),
        "query_accuracy": float((pred[reads] == q[reads]).mean()) if len(reads) else float("nan"),
        "max_input_at_write": bool(ev[np.unravel_index(inp.argmax(), inp.shape)[0]] == WRITE),
        "write_forget_below_next_read": float(np.mean([fsec[w] < fsec[r] for w, r in pairs]))
        if pairs
        else float("nan"),
        "n_writes": int(len(writes)),
        "n_reads": int(len(reads)),
    }


@torch.no_grad()
def recency_margins(model, batch) -> dict:
    """§3 recency: for queries whose key had ≥ 2 earlier bindings to *different* values, the share where the
    latest value's logit beats the previous binding's, and the accuracy on those queries."""
    logits = model(batch.inputs.to(model.W_delta.device)).cpu()
    margins, correct = [], []
    K = batch.num_keys
    for i in range(batch.inputs.shape[0]):
        x = batch.inputs[i].numpy()
        hist: dict[int, list[int]] = {}
        for t in range(len(x)):
            tok = int(x[t])
            if tok < K and len(hist.get(tok, [])) >= 2 and hist[tok][-1] != hist[tok][-2]:
                latest, previous = hist[tok][-1], hist[tok][-2]
                margins.append(float(logits[i, t, latest] - logits[i, t, previous]))
                correct.append(int(logits[i, t].argmax()) == latest)
            if t >= 1 and x[t - 1] < K and tok >= K:
                hist.setdefault(int(x[t - 1]), []).append(tok)
    m = np.asarray(margins)
    return {
        "n": int(m.size),
        "margin_positive": float((m > 0).mean()) if m.size else float("nan"),
        "median_margin": float(np.median(m)) if m.size else float("nan"),
        "accuracy": float(np.mean(correct)) if correct else float("nan"),
    }


@torch.no_grad()
def bc_spikes(model, inputs: torch.Tensor) -> pd.DataFrame:
    """Figs. 5–6: spike sizes S_B(event) = mean over event positions of max_n |B_n(x̂_t) − median
    over noise positions of B_n|, and S_C likewise, for events write / read / noise."""
    if not model.selective_bc:
        raise ValueError("bc_spikes needs a model with selective B, C (m2 / selective_bc=True).")
    _, it = model(inputs.to(model.W_delta.device), return_internals=True)
    ev = pair_events(inputs.numpy(), model.d_state)
    rows = []
    for name in ("B", "C"):
        val = it[name].cpu().numpy()  # (n, T, N)
        base = np.median(val[ev == NOISE], axis=0)
        dev = np.abs(val - base).max(-1)
        rows.append(
            {
                "vector": name,
                **{
                    lbl: float(dev[ev == code].mean())
                    for lbl, code in (("write", WRITE), ("read", READ), ("noise", NOISE))
                },
            }
        )
    return pd.DataFrame(rows).set_index("vector")


def wo_centred_cosine(W_o: torch.Tensor) -> dict:
    """Fig. 7: cosine between the learned W_o (V, 2V) and [−I I] after removing each column's mean
    (softmax ignores adding one vector to every logit), and the mean diagonals of both halves."""
    W = W_o.detach().double().cpu()
    V = W.shape[0]
    if W.shape != (V, 2 * V):
        raise ValueError(f"W_o must be (V, 2V), got {tuple(W.shape)}.")
    ref = torch.cat([-torch.eye(V), torch.eye(V)], 1).double()
    Wc, Rc = W - W.mean(0, keepdim=True), ref - ref.mean(0, keepdim=True)
    cos = float((Wc * Rc).sum() / (Wc.norm() * Rc.norm()))
    return {
        "centred_cosine": cos,
        "first_half_diag": float(torch.diagonal(W[:, :V]).mean()),
        "second_half_diag": float(torch.diagonal(W[:, V:]).mean()),
    }


@torch.no_grad()
def fig4_spikes(model, inputs: torch.Tensor, num_keys: int = 1) -> dict:
    """Fig. 4(a, b) over a batch (n, T): the spike at writes (k, v) against noise pairs (v1, v2).

    (a) output: the written value's logit o_t[x_t] at writes, against the top logit max_a o_t[a] at noise
    positions; (b) state: h_t[|V| + x_t] at writes, against h_t[|V| + x_t] at noise positions (what a
    noise token leaves on its own coordinate), and the share of writes where |V| + x_t is the largest
    second-half coordinate of h_t."""
    inputs = torch.as_tensor(inputs)
    logits, it = model(inputs.to(model.W_delta.device), return_internals=True)
    x = inputs.numpy()
    ev = pair_events(x, num_keys)
    V = model.vocab_size
    o = logits.cpu().numpy()
    h = it["state"][..., 0].cpu().numpy()  # (n, T, 2V)
    tok = np.take_along_axis(o, x[..., None], -1)[..., 0]  # o_t[x_t]
    h_cur = np.take_along_axis(h, (V + x)[..., None], -1)[..., 0]  # h_t[V + x_t]
    w, n = ev == WRITE, ev == NOISE
    return {
        "output_write": float(tok[w].mean()),
        "output_noise_top": float(o.max(-1)[n].mean()),
        "written_value_is_argmax": float((o.argmax(-1) == x)[w].mean()),
        "state_write": float(h_cur[w].mean()),
        "state_noise": float(h_cur[n].mean()),
        "state_write_is_second_half_argmax": float((h[..., V:].argmax(-1) == x)[w].mean()),
        "n_writes": int(w.sum()),
        "n_noise": int(n.sum()),
    }


@torch.no_grad()
def delta_by_key_presence(model, num_keys: int = 1) -> dict:
    """§3: "Δ_t ... close to zero unless a key token is present in the input embedding pair".

    Δ_t = softplus(W_Δ x̂_t) is a function of the pair (x_{t−1}, x_t) (:func:`pair_table`). Means of Δ over
    the pairs that occur in the task: with a key — writes (k, v) and reads (v, k) — and without — noise
    pairs (v1, v2); over all 2|V| channels, and over the two channels the pair writes to (x_{t−1} and
    |V| + x_t, those of the input term)."""
    tab = pair_table(model)
    V, K = model.vocab_size, num_keys
    D = tab["delta"].double()  # (V, V, 2V)
    keys, vals = range(K), range(K, V)
    key_pairs = [(k, v) for k in keys for v in vals] + [(v, k) for v in vals for k in keys]
    noise_pairs = [(a, b) for a in vals for b in vals]

    def mean_all(pairs):
        return float(torch.stack([D[p, c].mean() for p, c in pairs]).mean())

    def mean_active(pairs):
        return float(torch.stack([(D[p, c, p] + D[p, c, V + c]) / 2 for p, c in pairs]).mean())

    out = {
        "key_all": mean_all(key_pairs),
        "noise_all": mean_all(noise_pairs),
        "key_active": mean_active(key_pairs),
        "noise_active": mean_active(noise_pairs),
    }
    out["noise_over_key_all"] = out["noise_all"] / out["key_all"]
    out["noise_over_key_active"] = out["noise_active"] / out["key_active"]
    return out
