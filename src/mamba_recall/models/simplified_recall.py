r"""The simplified one-layer Mamba of paper 000, §2.2 (Fig. 3 right), on the library's selective scan.

Shapes: ids (b, T) int64 → logits (b, T, |V|). With V = |V|, d = 2V channels, N states:

1. embedding (fixed, "doubling trick"):  v ↦ [e_v; e_v] ∈ R^{2V}
2. convolution (fixed, depthwise, kernel 2, left zero padding), Eq. (1):
       x̂_t = c_0 ⊙ x_{t−1} + c_1 ⊙ x_t,  c_0 = [1; 0], c_1 = [0; 1]   ⇔   x̂_t = [e_{x_{t−1}}; e_{x_t}],  e_{x_{−1}} = 0
3. SSM, Eq. (2):  Δ_t = softplus(W_Δ x̂_t)  (W_Δ ∈ R^{d×d}, PyTorch (out, in) layout: W_Δ[i, j] maps
   input coordinate j to channel i — the paper's "rows 0 and V" are our *columns* 0 and V),
       h_t = exp(Λ ⊙ (Δ_t ⊗ 1_N)) ⊙ h_{t−1} + (Δ_t ⊙ x̂_t) ⊗ B(x̂_t),    y_t = h_t C(x̂_t)
   with Λ = −exp(A_log) ∈ R^{d×N}. For N = 1 and ``selective_bc=False``: B = C = 1, Eq. (3).
   For |K| > 1: B(x̂) = W_B x̂, C(x̂) = W_C x̂ ∈ R^N (Mamba's x_proj, no bias).
4. unembedding (fixed): W_o = [−I  I] ∈ R^{V×2V}, logits o_t = W_o y_t, i.e. o_{t,a} = y_{t,V+a} − y_{t,a};
   or learned (App. B, Fig. 7) with ``learn_unembedding=True`` (init N(0, 1/(2V))).
No gate, no D skip, no dt bias.

Theory variant (Sec. 4, Eqs. 6–7): ``softplus=False`` (Δ_t = W_Δ x̂_t), ``forgetting=False``
(Λ = 0, forgetting factor exactly 1: the paper's "Λ = 1 (no forgetting)"), ``init_std=0`` (W_Δ = 0),
``learn_A=False``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..scan import selective_scan, selective_scan_trace


def pair_embedding(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """x̂ (b, T, 2V): the concatenation [e_{x_{t−1}}; e_{x_t}] with e_{x_{−1}} = 0 (float32)."""
    if ids.dim() != 2:
        raise ValueError(f"ids must be (batch, length) token indices, got shape {tuple(ids.shape)}.")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"token ids must lie in [0, {vocab_size}); got range [{int(ids.min())}, {int(ids.max())}].")
    cur = F.one_hot(ids, vocab_size).float()
    prev = torch.cat([torch.zeros_like(cur[:, :1]), cur[:, :-1]], dim=1)
    return torch.cat([prev, cur], dim=-1)


def doubled_embedding_conv(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """The same x̂ computed literally as the paper writes it: embed v ↦ [e_v; e_v], then the depthwise
    kernel-2 convolution of Eq. (1) with c_0 = [1; 0] (on x_{t−1}) and c_1 = [0; 1] (on x_t), left padding."""
    one = F.one_hot(ids, vocab_size).float()
    emb = torch.cat([one, one], dim=-1)  # (b, T, 2V)
    d = 2 * vocab_size
    weight = torch.zeros(d, 1, 2)
    weight[:vocab_size, 0, 0] = 1.0  # c_0: tap on x_{t−1}, first half
    weight[vocab_size:, 0, 1] = 1.0  # c_1: tap on x_t, second half
    out = F.conv1d(F.pad(emb.transpose(1, 2), (1, 0)), weight, groups=d)
    return out.transpose(1, 2)


def fixed_unembedding(vocab_size: int) -> torch.Tensor:
    """W_o = [−I  I] (V, 2V)."""
    eye = torch.eye(vocab_size)
    return torch.cat([-eye, eye], dim=1)


def wdelta_block_mass(W: torch.Tensor, vocab_size: int) -> dict:
    """How much of |W_Δ| (2V, 2V) sits where the paper says (Fig. 8), in PyTorch (out, in) layout (see the
    module docstring: the paper's rows 0 and V are our columns 0 and V). Used by the probes of the trained
    model (``analysis.recall_probes``) and by the softplus check of Lemma 1 (``theory.gradient_lemma``).

    ``paper_rows_share``: share of Σ|W| in our columns 0 and V (the paper's rows 0 and V; uniform: 1/V).
    ``second_part_share``: share in rows V..2V−1 of those columns ("second part"; uniform: 1/(2V)).
    ``our_rows_share``: the same share for our rows 0 and V (the literal, wrong orientation).
    Also the column means over rows V+1..2V−1 (the key column 0 should be the largest) and column V's mean."""
    W = W.detach().double().cpu()
    V = vocab_size
    if W.shape != (2 * V, 2 * V):
        raise ValueError(f"W_Δ must be (2V, 2V) = ({2 * V}, {2 * V}), got {tuple(W.shape)}.")
    A = W.abs()
    total = float(A.sum())
    col_means = W[V + 1 :, :].mean(0)
    return {
        "paper_rows_share": float(A[:, [0, V]].sum()) / total,
        "paper_rows_uniform": 1 / V,
        "second_part_share": float(A[V:, [0, V]].sum()) / total,
        "second_part_uniform": 1 / (2 * V),
        "our_rows_share": float(A[[0, V], :].sum()) / total,
        "argmax_column_of_second_half_means": int(col_means.argmax()),
        "column0_mean": float(col_means[0]),
        "columnV_mean": float(col_means[V]),
        "mean_abs": float(A.mean()),
        "column0_over_mean_abs": float(col_means[0] / A.mean()),
    }


class SimplifiedMamba(nn.Module):
    """The simplified Mamba of paper 000 (see the module docstring). ids (b, T) → logits (b, T, V).

    Parameters: ``W_delta`` (d, d), ``A_log`` (d, N) with Λ = −exp(A_log) (S4D-real init
    A_log[:, n] = log(n+1)), and for ``selective_bc`` ``W_B``, ``W_C`` (N, d); ``W_o`` (V, d) if learned.
    """

    @classmethod
    def from_sizes(cls, sizes: dict, seed: int, backend: str = "chunked") -> "SimplifiedMamba":
        """The model of a recipe's ``sizes`` (a preset's sizes, or a checkpoint's ``config``: ``vocab_size``,
        ``d_state``, optional ``learn_unembedding``) initialised at ``seed``; selective B, C exactly when N > 1."""
        return cls(
            sizes["vocab_size"],
            sizes["d_state"],
            learn_unembedding=sizes.get("learn_unembedding", False),
            backend=backend,
            seed=seed,
        )

    def __init__(
        self,
        vocab_size: int,
        d_state: int = 1,
        *,
        selective_bc: bool | None = None,
        softplus: bool = True,
        forgetting: bool = True,
        learn_A: bool = True,
        learn_unembedding: bool = False,
        init_std: float = 0.02,
        backend: str = "chunked",
        seed: int | None = None,
    ):
        super().__init__()
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
            raise ValueError(f"vocab_size must be an integer >= 2, got {vocab_size!r}.")
        if isinstance(d_state, bool) or not isinstance(d_state, int) or d_state < 1:
            raise ValueError(f"d_state must be an integer >= 1, got {d_state!r}.")
        if selective_bc is None:
            selective_bc = d_state > 1
        if d_state > 1 and not selective_bc:
            raise ValueError("d_state > 1 needs selective_bc=True (B = C = 1 only makes sense for N = 1).")
        if init_std < 0:
            raise ValueError(f"init_std must be >= 0, got {init_std}.")
        self.vocab_size, self.d_state, self.selective_bc = vocab_size, d_state, selective_bc
        self.softplus, self.forgetting, self.backend = softplus, forgetting, backend
        d = 2 * vocab_size
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        self.W_delta = nn.Parameter(torch.randn(d, d, generator=gen) * init_std)
        a_log = torch.log(torch.arange(1, d_state + 1, dtype=torch.float32)).repeat(d, 1)
        self.A_log = nn.Parameter(a_log, requires_grad=learn_A and forgetting)
        self.A_log._no_weight_decay = True
        if selective_bc:
            bound = 1 / math.sqrt(d)
            self.W_B = nn.Parameter((torch.rand(d_state, d, generator=gen) * 2 - 1) * bound)
            self.W_C = nn.Parameter((torch.rand(d_state, d, generator=gen) * 2 - 1) * bound)
        if learn_unembedding:
            self.W_o = nn.Parameter(torch.randn(vocab_size, d, generator=gen) / math.sqrt(d))
        else:
            self.register_buffer("W_o", fixed_unembedding(vocab_size), persistent=False)

    @property
    def Lambda(self) -> torch.Tensor:
        """Λ (d, N): −exp(A_log), or 0 without forgetting."""
        return -torch.exp(self.A_log) if self.forgetting else torch.zeros_like(self.A_log)

    def _scan_inputs(self, ids):
        xhat = pair_embedding(ids, self.vocab_size).to(self.W_delta)  # (b, T, d), dtype and device of W_Δ
        pre = xhat @ self.W_delta.T  # (b, T, d): W_Δ x̂_t
        b, length, _ = xhat.shape
        if self.selective_bc:
            Bt = (xhat @ self.W_B.T).transpose(1, 2)  # (b, N, T)
            Ct = (xhat @ self.W_C.T).transpose(1, 2)
        else:
            Bt = Ct = xhat.new_ones(b, 1, length)
        return xhat, pre, Bt, Ct

    def forward(self, ids: torch.Tensor, return_internals: bool = False):
        xhat, pre, Bt, Ct = self._scan_inputs(ids)
        u, delta = xhat.transpose(1, 2), pre.transpose(1, 2)  # (b, d, T)
        if return_internals:
            tr = selective_scan_trace(u, delta, self.Lambda, Bt, Ct, delta_softplus=self.softplus)
            y = tr.out.transpose(1, 2)
            logits = y @ self.W_o.T
            internals = {
                "xhat": xhat,
                "delta": tr.delta.transpose(1, 2),  # (b, T, d)
                "forget": tr.decay.permute(0, 2, 1, 3),  # (b, T, d, N) exp(ΛΔ_t)
                "input_term": tr.input_term.permute(0, 2, 1, 3),  # (b, T, d, N) (Δ_t ⊙ x̂_t) ⊗ B
                "state": tr.states.permute(0, 2, 1, 3),  # (b, T, d, N) h_t
                "y": y,
                "B": Bt.transpose(1, 2),
                "C": Ct.transpose(1, 2),  # (b, T, N)
                "logits": logits,
            }
            return logits, internals
        y = selective_scan(u, delta, self.Lambda, Bt, Ct, delta_softplus=self.softplus, backend=self.backend)
        return y.transpose(1, 2) @ self.W_o.T

    def extra_repr(self) -> str:
        return (
            f"vocab_size={self.vocab_size}, d={2 * self.vocab_size}, d_state={self.d_state}, "
            f"selective_bc={self.selective_bc}, softplus={self.softplus}, forgetting={self.forgetting}, "
            f"backend={self.backend!r}"
        )


def m1(vocab_size=8, **kw) -> SimplifiedMamba:
    """M1 of the paper: |K| = 1, N = 1, B = C = 1, learnable W_Δ and Λ (Eq. 3)."""
    return SimplifiedMamba(vocab_size, 1, selective_bc=False, **kw)


def m2(vocab_size=8, num_keys=2, **kw) -> SimplifiedMamba:
    """M2: |K| > 1, N = |K|, selective B(x̂) = W_B x̂, C(x̂) = W_C x̂."""
    return SimplifiedMamba(vocab_size, num_keys, selective_bc=True, **kw)


def theory_model(vocab_size: int) -> SimplifiedMamba:
    """M-th (Lemma 1): W_Δ = 0 trainable, no softplus, no forgetting, B = C = 1."""
    return SimplifiedMamba(
        vocab_size,
        1,
        selective_bc=False,
        softplus=False,
        forgetting=False,
        learn_A=False,
        init_std=0.0,
        backend="reference",
    )
