"""Small causal Transformers: the attention baselines of paper 000 (Table 1) and paper 003 (Table 1).

One class covers the variants the papers compare against Mamba:

* ``positional="none"``: no position information at all (paper 000, "Transformer without PE");
* ``positional="learned"`` / ``"sinusoidal"``: absolute embeddings added to the token embeddings;
* ``positional="rope"``: rotary embeddings on queries and keys (Su et al.), paper 000's "with RoPE";
* ``short_conv=k``: a causal depthwise convolution of width k on the residual stream before each
  attention layer (paper 000's "with conv", the local mixing that makes induction heads easy).

Shapes: ids (b, l) int64 → logits (b, l, vocab_size). Attention is causal softmax attention

    Attn(Q, K, V)_t = Σ_{s ≤ t} softmax_s(q_t · k_s / √d_head) v_s,

with ``n_head`` heads of width ``d_model / n_head``; each layer is pre-norm (LayerNorm) attention
followed, if ``mlp``, by a GELU MLP of width 4·d_model.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from .mamba import causal_conv1d

POSITIONAL = ("none", "learned", "sinusoidal", "rope")


def sinusoidal_positions(length: int, dim: int) -> torch.Tensor:
    """The (length, dim) table PE[t, 2i] = sin(t / 10000^{2i/dim}), PE[t, 2i+1] = cos(...)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    inv_freq = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq)[:, : dim // 2]
    return table


def apply_rope(x: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x_{2i}, x_{2i+1}) of x (b, h, l, d_head) by angle t·θ_i, θ_i = 10000^{-2i/d_head}."""
    length, dim = x.shape[-2], x.shape[-1]
    if dim % 2:
        raise ValueError(f"RoPE needs an even head width, got {dim}; choose d_model / n_head even.")
    inv_freq = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, dtype=torch.float32, device=x.device) / dim)
    angle = torch.arange(length, dtype=torch.float32, device=x.device)[:, None] * inv_freq  # (l, d/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, rope: bool):
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"d_model={d_model} is not divisible by n_head={n_head}.")
        self.n_head, self.rope = n_head, rope
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        b, l, d = x.shape
        q, k, v = self.qkv(x).view(b, l, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        if self.rope:
            q, k = apply_rope(q), apply_rope(k)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        mask = torch.ones(l, l, dtype=torch.bool, device=x.device).triu(1)
        weights = scores.masked_fill(mask, float("-inf")).softmax(-1)  # (b, h, l, l)
        y = self.out((weights @ v).transpose(1, 2).reshape(b, l, d))
        return (y, weights) if return_attention else y


class TransformerLayer(nn.Module):
    def __init__(self, d_model: int, n_head: int, rope: bool, short_conv: int, mlp: bool):
        super().__init__()
        self.conv = causal_conv1d(d_model, short_conv, bias=True) if short_conv else None
        self.norm_attn = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, rope)
        self.norm_mlp = nn.LayerNorm(d_model) if mlp else None
        self.mlp = (
            nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)) if mlp else None
        )

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        if self.conv is not None:  # causal: keep the first l outputs of the left-padded convolution
            x = x + self.conv(x.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)
        attn = self.attn(self.norm_attn(x), return_attention)
        y, weights = attn if return_attention else (attn, None)
        x = x + y
        if self.mlp is not None:
            x = x + self.mlp(self.norm_mlp(x))
        return (x, weights) if return_attention else x


class TinyTransformer(nn.Module):
    """A causal Transformer LM for synthetic recall tasks. ids (b, l) → logits (b, l, vocab_size)."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        n_layer: int = 2,
        n_head: int = 2,
        max_len: int = 2048,
        positional: str = "rope",
        short_conv: int = 0,
        mlp: bool = True,
    ):
        super().__init__()
        if positional not in POSITIONAL:
            raise ValueError(f"unknown positional={positional!r}; use one of {POSITIONAL}.")
        if short_conv < 0:
            raise ValueError(f"short_conv must be 0 (off) or a kernel width ≥ 1, got {short_conv}.")
        self.positional, self.max_len = positional, max_len
        self.embedding = nn.Embedding(vocab_size, d_model)
        if positional == "learned":
            self.position = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
        elif positional == "sinusoidal":
            self.register_buffer("position", sinusoidal_positions(max_len, d_model), persistent=False)
        self.layers = nn.ModuleList(
            TransformerLayer(d_model, n_head, positional == "rope", short_conv, mlp) for _ in range(n_layer)
        )
        self.norm_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, ids: torch.Tensor, return_attention: bool = False):
        if ids.dim() != 2:
            raise ValueError(f"ids must be (batch, length) token indices, got shape {tuple(ids.shape)}.")
        length = ids.shape[1]
        if length > self.max_len:
            raise ValueError(
                f"sequence length {length} exceeds max_len={self.max_len}; build the model with a larger max_len."
            )
        x = self.embedding(ids)
        if self.positional in ("learned", "sinusoidal"):
            x = x + self.position[:length]
        attention = []
        for layer in self.layers:
            if return_attention:
                x, weights = layer(x, True)
                attention.append(weights)
            else:
                x = layer(x)
        logits = self.lm_head(self.norm_f(x))
        return (logits, attention) if return_attention else logits
