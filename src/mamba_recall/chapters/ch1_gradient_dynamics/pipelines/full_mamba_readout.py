r"""App. B, Fig. 7 of paper 000 on the *full* Mamba language model: its readout in the paper's (previous, current)
token coordinates.

In the simplified model (§2.2, Eq. (1)) the scan's input is x̂_t = [e_{x_{t−1}}; e_{x_t}] ∈ R^{2|V|}, so a channel *is*
a (lag, token) pair, and the learned output matrix W_o ∈ R^{|V| × 2|V|} maps y_t (same coordinates) to the logits;
App. B reports it "close to (−I, I)" (Fig. 7). The full model (:class:`~mamba_recall.models.mamba.MambaLMHeadModel`,
one layer) has a learned embedding, depthwise convolution, gate and readout, and its E = expand · d_model inner
channels are not token coordinates. We express its readout in the coordinates its own convolution gives a token at
lag j (j = 1: the previous token, the paper's first half; j = 0: the current token, the second half):

    n_v       = RMSNorm_0(E[v])                                   (d_model,)   the mixer's input at a token v
                                                                               (layer 0: the residual is E[v])
    u_{v,j}   = c_j ⊙ (W_x n_v),   c_j = conv1d.weight[:, 0, K−1−j]  (E,)     token v's term of the conv output
                                                                               at lag j: conv(x)_t = b + Σ_j u_{x_{t−j}, j}
    R         = W_head[:|V|] · diag(g_f) · W_out                  (|V|, E)     inner channels → logits
                (W_out = out_proj.weight (d_model, E), g_f = norm_f.weight, W_head = lm_head.weight, its first
                |V| rows: the task's vocabulary, the padded rows dropped)
    W_o^full  = [R U_1 | R U_0] ∈ R^{|V| × 2|V|},   U_j = [u_{0,j} … u_{|V|−1,j}]  (E, |V|)

Entry (a, j·|V| + v) is the logit of token a that the readout gives a unit of scan output along token v's
lag-j convolution direction. For the simplified model (one-hot embedding, the fixed pair convolution, no gate)
U_1 = [I; 0], U_0 = [0; I] and R = W_o, so W_o^full = W_o: this is Fig. 7's matrix when the full model reduces to
the simplified one. What it leaves out (a linearised readout of the mixer branch): the silu after the conv, the
per-channel Δ, B and C of the scan, the D skip and the gate silu(z) (per-position, per-channel factors), the final
norm's 1/rms (a positive per-position scalar) and the residual stream (E[x_t], which bypasses the mixer).

It is compared with [−I I] as :func:`~mamba_recall.analysis.recall_probes.wo_centred_cosine` does for the
simplified model's W_o: the cosine after removing each column's mean over the |V| logits (softmax ignores a
constant added to every logit), and the mean diagonals of both halves.
"""

from __future__ import annotations

import torch

from mamba_recall.analysis.recall_probes import wo_centred_cosine


def _check_one_layer_lm(model) -> None:
    layers = getattr(getattr(model, "backbone", None), "layers", None)
    if layers is None or not hasattr(model, "lm_head"):
        raise ValueError(
            f"pair_readout needs a MambaLMHeadModel (backbone.layers, lm_head), got {type(model).__name__}; "
            "for the simplified model's W_o use analysis.recall_probes.wo_centred_cosine(model.W_o)."
        )
    if len(layers) != 1:
        raise ValueError(
            f"pair_readout is defined for a 1-layer model (layer 0's input is the embedding itself), got "
            f"{len(layers)} layers; build MambaLMHeadModel(..., n_layer=1)."
        )
    mixer = layers[0].mixer
    if not hasattr(mixer, "conv1d") or mixer.d_conv < 2:
        raise ValueError(
            "pair_readout needs a Mamba-1 mixer with a causal conv of width d_conv >= 2 (lags 0 and 1), got "
            f"{type(mixer).__name__} with d_conv={getattr(mixer, 'd_conv', None)}."
        )


@torch.no_grad()
def pair_directions(model) -> torch.Tensor:
    """(2, E, |V|) float64: ``[U_1, U_0]``, each token's term of layer 0's conv output at lag 1 (previous token)
    and lag 0 (current token), as in the module docstring (the conv bias excluded)."""
    _check_one_layer_lm(model)
    layer = model.backbone.layers[0]
    mixer = layer.mixer
    V, E, K = model.vocab_size, mixer.d_inner, mixer.d_conv
    emb = model.backbone.embedding.weight[:V]  # (|V|, d_model)
    n = layer.norm(emb).double()  # (|V|, d_model): RMSNorm_0 of each token's embedding
    W_x = mixer.in_proj.weight[:E].double()  # (E, d_model): the x branch of in_proj
    x = n @ W_x.T  # (|V|, E)
    if mixer.in_proj.bias is not None:
        x = x + mixer.in_proj.bias[:E].double()
    w = mixer.conv1d.weight[:, 0, :].double()  # (E, K); output_t = Σ_i w[:, i] x_{t−(K−1)+i}
    c1, c0 = w[:, K - 2], w[:, K - 1]  # lag 1 (previous token), lag 0 (current token)
    return torch.stack([(x * c1).T, (x * c0).T])  # (2, E, |V|)


@torch.no_grad()
def channel_readout(model) -> torch.Tensor:
    """(|V|, E) float64: ``R = W_head[:|V|] · diag(norm_f.weight) · out_proj.weight``, inner channels → logits
    (out_proj's bias, if any, is a constant over channels and drops out of the centred comparison)."""
    _check_one_layer_lm(model)
    V = model.vocab_size
    head = model.lm_head.weight[:V].double()  # (|V|, d_model)
    g = model.backbone.norm_f.weight.double()  # (d_model,)
    W_out = model.backbone.layers[0].mixer.out_proj.weight.double()  # (d_model, E)
    return (head * g) @ W_out


def pair_readout(model) -> torch.Tensor:
    """(|V|, 2|V|) float64: W_o^full = [R U_1 | R U_0], the full model's readout in the paper's (previous token,
    current token) coordinates (module docstring)."""
    R, U = channel_readout(model), pair_directions(model)
    return torch.cat([R @ U[0], R @ U[1]], dim=1)


def full_readout_cosine(model) -> dict:
    """Fig. 7's comparison on the full model: :func:`~mamba_recall.analysis.recall_probes.wo_centred_cosine` of
    :func:`pair_readout` (``centred_cosine`` against [−I I], ``first_half_diag``, ``second_half_diag``)."""
    return wo_centred_cosine(pair_readout(model))
