r"""The simplified, purely linear Mamba of paper 002 (Alg. 1, single layer; Alg. 2, Λ layers),
with an **ensemble dimension** so that many small models train in one batched forward.

Alg. 1 (one layer, no gate, no Δ, :math:`\bar A_t = 1`, no SiLU, no bias, no norm, no residual)::

    x_e   = W_E x                    (L, D)          W_E: the embedding (the paper's E), tied unembedding W_E^T
    x_in  = P_in x_e                 (L, D_in)       D_in = expand · D
    x̂     = Conv1D(x_in, W_conv)     (L, D_in)       depthwise, causal, width d_conv, no bias, no activation
    B, C  = S_B x̂, S_C x̂             (L, N) each
    ŷ     = SSM(x̂, B, C)             (L, D_in)       h_t = h_{t-1} + x̂_t B_t^T,  ŷ_t = h_t C_t      (Eq. 3)
    y_out = P_out ŷ                  (L, D)
    logits= W_E^T y_out              (L, V)

Alg. 2 (Λ layers) adds a residual ``x^{l+1} = x^l + y_out^l`` around every layer and shares W_E.

Conv convention (width 2): ``x̂_t = W^0 ⊙ x_in_{t-1} + W^1 ⊙ x_in_t``; ``conv_weight[..., 0]`` is the
previous-token tap :math:`W^0`, ``conv_weight[..., -1]`` the current-token tap (PyTorch's causal
``Conv1d(padding=d_conv-1)[..., :L]`` layout).

SSM forms: ``"attention"`` (default; the unrolled recurrence is causal linear attention
:math:`\hat y_t = \sum_{\tau\le t} \hat x_\tau (B_\tau^\top C_t)`, :math:`O(L^2)`, fastest for L ≤ 512)
and ``"scan"`` (the sequential recurrence of Eq. 3, the reference).

Ensembles
---------
Every parameter carries a leading ensemble axis of size ``n_members`` (``ensemble=None`` means one model and
no ensemble axis in inputs/outputs). Members may have *different sizes*: the tensors are allocated
at the largest ``(D, N, Λ)`` and ``member_sizes=[(D_e, N_e, Λ_e), ...]`` masks the unused embedding
dims, channels, state dims and layers to exactly zero (and initialises each member with its own
fan-in), so member ``e`` computes exactly what an independent model of size ``(D_e, N_e, Λ_e)`` would.
A whole (D, N) grid × seeds then trains in one forward on a GPU. Inputs may be shared ``(B, L)``
or per member ``(n_members, B, L)``; logits are ``(n_members, B, L, V)``. Compact shapes below write
``(n,B,L,D)`` with ``n = n_members``.

Parameter shapes (ensemble axis first)::

    embedding     (n_members, V, D)          token rows (the paper's W_E ∈ R^{D×V}, its E, transposed)
    in_proj[l]    (n_members, D_in, D)       P_in
    conv[l]       (n_members, D_in, d_conv)  W_conv
    x_proj_B[l]   (n_members, N, D_in)       S_B
    x_proj_C[l]   (n_members, N, D_in)       S_C
    out_proj[l]   (n_members, D, D_in)       P_out
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .mamba import check_positive_int

__all__ = ["LinearMamba", "MultiHeadLinearMamba", "HEAD_PATTERNS", "SelectiveAblationMamba", "ABLATION_ROWS"]

SSM_FORMS = ("attention", "scan")


class LinearMamba(nn.Module):
    """Simplified linear Mamba (Alg. 1 / Alg. 2) with an optional ensemble axis.

    Args:
        vocab_size: V. d_model: D. d_state: N. n_layer: Λ (all maxima when ``member_sizes`` is given).
        expand: D_in / D (2 in the paper). d_conv: conv width (2 in the paper; 0 = no Conv1D, Tab. 10 E).
        residual: residual around every layer (default: ``n_layer > 1`` — Alg. 1 has none, Alg. 2 has).
        ensemble: number of members (``n_members``), or None for a single model without the ensemble axis.
        member_sizes: list of n_members tuples ``(D_e, N_e, Λ_e)`` (or ``(D_e, N_e)``), each ≤ the maxima.
        ssm: ``"attention"`` or ``"scan"``. seed: if given, ``torch.manual_seed(seed)`` before init.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        d_state: int,
        n_layer: int = 1,
        *,
        expand: int = 2,
        d_conv: int = 2,
        residual: bool | None = None,
        ensemble: int | None = None,
        member_sizes: list | None = None,
        ssm: str = "attention",
        seed: int | None = None,
        dtype=torch.float32,
        device=None,
    ):
        super().__init__()
        V, D, N, Lam = (
            check_positive_int("vocab_size", vocab_size),
            check_positive_int("d_model", d_model),
            check_positive_int("d_state", d_state),
            check_positive_int("n_layer", n_layer),
        )
        check_positive_int("expand", expand)
        if isinstance(d_conv, bool) or not isinstance(d_conv, int) or d_conv < 0:
            raise ValueError(f"d_conv must be an integer >= 0 (0 = no Conv1D), got {d_conv!r}.")
        if ssm not in SSM_FORMS:
            raise ValueError(f"unknown ssm form {ssm!r}; use one of {SSM_FORMS}.")
        if ensemble is not None:
            check_positive_int("ensemble", ensemble)
        n_members = 1 if ensemble is None else ensemble
        if member_sizes is None:
            member_sizes = [(D, N, Lam)] * n_members
        if len(member_sizes) != n_members:
            raise ValueError(
                f"member_sizes has {len(member_sizes)} entries but ensemble={ensemble}; give one "
                "(D, N[, layers]) tuple per member."
            )
        sizes = []
        for s in member_sizes:
            s = tuple(int(v) for v in s)
            if len(s) == 2:
                s = (*s, Lam)
            if len(s) != 3 or not (1 <= s[0] <= D and 1 <= s[1] <= N and 1 <= s[2] <= Lam):
                raise ValueError(
                    f"member size {s} must be (D_e, N_e[, layers_e]) with 1 ≤ D_e ≤ {D}, "
                    f"1 ≤ N_e ≤ {N}, 1 ≤ layers_e ≤ {Lam}."
                )
            sizes.append(s)
        self.vocab_size, self.d_model, self.d_state, self.n_layer = V, D, N, Lam
        self.expand, self.d_conv, self.d_inner = expand, d_conv, expand * D
        self.residual = (Lam > 1) if residual is None else bool(residual)
        self.ensemble, self.n_members, self.ssm = ensemble, n_members, ssm
        self.member_sizes = sizes
        Din = self.d_inner
        kw = dict(dtype=dtype, device=device)
        # masks (n_members, D), (n_members, Din), (n_members, N), (n_members, Λ)
        d_idx, n_idx, l_idx = torch.arange(D), torch.arange(N), torch.arange(Lam)
        dm = torch.stack([(d_idx < s[0]) for s in sizes]).to(dtype)
        im = dm.repeat(1, expand)  # channel c of block j belongs to embedding dim c mod D
        nm = torch.stack([(n_idx < s[1]) for s in sizes]).to(dtype)
        lm = torch.stack([(l_idx < s[2]) for s in sizes]).to(dtype)
        self.register_buffer("d_mask", dm.to(device))
        self.register_buffer("i_mask", im.to(device))
        self.register_buffer("n_mask", nm.to(device))
        self.register_buffer("l_mask", lm.to(device))
        if seed is not None:
            torch.manual_seed(seed)
        fan_D = torch.tensor([s[0] for s in sizes], dtype=torch.float64)
        fan_Din = fan_D * expand

        def uniform(shape, fan):  # PyTorch's default Linear init U(±1/√fan_in), per member
            bound = (1.0 / fan.sqrt()).to(dtype).view(-1, *([1] * (len(shape) - 1)))
            return nn.Parameter(((torch.rand(shape, **kw) * 2 - 1) * bound.to(device)))

        self.embedding = nn.Parameter(torch.randn(n_members, V, D, **kw))  # nn.Embedding init N(0, 1)
        self.in_proj = nn.ParameterList([uniform((n_members, Din, D), fan_D) for _ in range(Lam)])
        self.conv = (
            nn.ParameterList(
                [
                    uniform(
                        (n_members, Din, max(d_conv, 1)),
                        torch.full((n_members,), float(max(d_conv, 1)), dtype=torch.float64),
                    )
                    for _ in range(Lam)
                ]
            )
            if d_conv
            else None
        )
        self.x_proj_B = nn.ParameterList([uniform((n_members, N, Din), fan_Din) for _ in range(Lam)])
        self.x_proj_C = nn.ParameterList([uniform((n_members, N, Din), fan_Din) for _ in range(Lam)])
        self.out_proj = nn.ParameterList([uniform((n_members, D, Din), fan_Din) for _ in range(Lam)])
        self.apply_masks_()

    # ------------------------------------------------------------------ helpers
    @torch.no_grad()
    def apply_masks_(self) -> None:
        """Zero every parameter entry that a smaller member does not own (called after init/loading)."""
        self.embedding.mul_(self.d_mask[:, None, :])
        for l in range(self.n_layer):
            self.in_proj[l].mul_(self.i_mask[:, :, None] * self.d_mask[:, None, :])
            if self.conv is not None:
                self.conv[l].mul_(self.i_mask[:, :, None])
            self.x_proj_B[l].mul_(self.n_mask[:, :, None] * self.i_mask[:, None, :])
            self.x_proj_C[l].mul_(self.n_mask[:, :, None] * self.i_mask[:, None, :])
            self.out_proj[l].mul_(self.d_mask[:, :, None] * self.i_mask[:, None, :])

    def _ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        if input_ids.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"input_ids must be integer token ids, got dtype {input_ids.dtype}.")
        if input_ids.dim() == 2:
            input_ids = input_ids.unsqueeze(0).expand(self.n_members, -1, -1)
        elif input_ids.dim() != 3 or input_ids.shape[0] != self.n_members:
            raise ValueError(
                f"input_ids must be (batch, length) or (ensemble={self.n_members}, batch, length), got "
                f"shape {tuple(input_ids.shape)}."
            )
        if input_ids.numel() and (int(input_ids.min()) < 0 or int(input_ids.max()) >= self.vocab_size):
            raise ValueError(
                f"token ids must lie in [0, {self.vocab_size}), got range "
                f"[{int(input_ids.min())}, {int(input_ids.max())}]."
            )
        return input_ids

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """(n_members, B, L) → (n_members, B, L, D): x_e = W_E x (masked)."""
        emb = self.embedding * self.d_mask[:, None, :]
        return emb[torch.arange(self.n_members, device=ids.device)[:, None, None], ids]

    def conv1d(self, x_in: torch.Tensor, layer: int) -> torch.Tensor:
        """Depthwise causal conv, no bias: x̂_t = Σ_k W[..., k] ⊙ x_in_{t-(K-1-k)}; (n,B,L,Din) → same."""
        if self.conv is None:
            return x_in
        w = self.conv[layer] * self.i_mask[:, :, None]  # (n_members, Din, K)
        K = w.shape[-1]
        L = x_in.shape[2]
        out = x_in * w[:, None, None, :, K - 1]
        for k in range(K - 1):
            shift = K - 1 - k
            if shift >= L:
                continue
            out = out + F.pad(x_in, (0, 0, shift, 0))[:, :, :L] * w[:, None, None, :, k]
        return out

    def layer_internals(self, x: torch.Tensor, layer: int) -> dict:
        """One layer on the residual stream x (n,B,L,D): dict with x_in, x_hat (n,B,L,Din), B, C (n,B,L,N),
        y_hat (n,B,L,Din), y_out (n,B,L,D)."""
        im, nm = self.i_mask, self.n_mask
        x_in = torch.einsum("ebld,eid->ebli", x, self.in_proj[layer]) * im[:, None, None, :]
        x_hat = self.conv1d(x_in, layer)
        Bm = torch.einsum("ebli,eni->ebln", x_hat, self.x_proj_B[layer]) * nm[:, None, None, :]
        Cm = torch.einsum("ebli,eni->ebln", x_hat, self.x_proj_C[layer]) * nm[:, None, None, :]
        if self.ssm == "attention":
            L = x.shape[2]
            scores = torch.einsum("ebsn,ebtn->ebts", Bm, Cm)  # α[t, τ] = B_τ·C_t
            scores = scores * torch.tril(torch.ones(L, L, device=x.device, dtype=x.dtype))
            y_hat = torch.einsum("ebts,ebsi->ebti", scores, x_hat)
        else:
            y_hat = self._scan(x_hat, Bm, Cm)
        y_out = torch.einsum("ebli,edi->ebld", y_hat, self.out_proj[layer]) * self.d_mask[:, None, None, :]
        return dict(x_in=x_in, x_hat=x_hat, B=Bm, C=Cm, y_hat=y_hat, y_out=y_out)

    @staticmethod
    def _scan(x_hat, Bm, Cm):
        """Sequential Eq. 3: h_t = h_{t-1} + x̂_t B_t^T (n,B,Din,N); ŷ_t = h_t C_t."""
        Eb, Bb, L, Din = x_hat.shape
        h = x_hat.new_zeros(Eb, Bb, Din, Bm.shape[-1])
        ys = []
        for t in range(L):
            h = h + x_hat[:, :, t, :, None] * Bm[:, :, t, None, :]
            ys.append(torch.einsum("ebin,ebn->ebi", h, Cm[:, :, t]))
        return torch.stack(ys, dim=2)

    def hidden(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The final residual stream y^Λ (n_members, B, L, D) before the tied unembedding (always with the member axis)."""
        return self._stream(self._ids(input_ids), False)[0]

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        """Tied unembedding W_E^T: (n_members, ..., D) → (n_members, ..., V)."""
        emb = self.embedding * self.d_mask[:, None, :]
        return torch.einsum("e...d,evd->e...v", x, emb)

    def _stream(self, ids, return_internals):
        x = self.embed(ids)
        internals = []
        for l in range(self.n_layer):
            out = self.layer_internals(x, l)
            keep = self.l_mask[:, l].view(-1, 1, 1, 1)
            y = out["y_out"] * keep
            x = x + y if self.residual else y + (1 - keep) * x  # Alg. 1: no residual; a masked layer passes x
            if return_internals:
                internals.append(out)
        return x, internals

    def forward(self, input_ids: torch.Tensor, return_internals: bool = False):
        """input_ids (B, L) or (n_members, B, L) → logits (B, L, V) if ``ensemble is None`` else (n_members, B, L, V)."""
        ids = self._ids(input_ids)
        x, internals = self._stream(ids, return_internals)
        logits = self.unembed(x)
        if self.ensemble is None:
            logits = logits[0]
            internals = [{k: v[0] for k, v in d.items()} for d in internals]
        return (logits, internals) if return_internals else logits

    @torch.no_grad()
    def load_member(self, member: int, weights: dict) -> None:
        """Load plain weights (the paper's layout, see :mod:`mamba_recall.theory.hashing_circuit`) into member
        ``member``, layer 0 (or ``weights['layers']`` for several): keys ``E`` (W_E, D×V; the paper's letter, as theory.hashing_circuit writes it), ``P_in`` (Din×D),
        ``W_conv`` (Din×d_conv), ``S_B``/``S_C`` (N×Din), ``P_out`` (D×Din); smaller blocks are zero-padded."""
        layers = weights.get("layers", [weights])
        Ew = torch.as_tensor(weights["E"], dtype=self.embedding.dtype)
        if Ew.shape[1] != self.vocab_size:
            raise ValueError(f"E must be (D, V={self.vocab_size}), got {tuple(Ew.shape)}.")
        self.embedding[member].zero_()
        self.embedding[member, :, : Ew.shape[0]] = Ew.T.to(self.embedding.device)
        D_e = Ew.shape[0]
        idx = torch.cat([torch.arange(D_e) + j * self.d_model for j in range(self.expand)])
        for l, w in enumerate(layers):
            P_in = torch.as_tensor(w["P_in"], dtype=self.embedding.dtype)
            S_B = torch.as_tensor(w["S_B"], dtype=self.embedding.dtype)
            S_C = torch.as_tensor(w["S_C"], dtype=self.embedding.dtype)
            P_out = torch.as_tensor(w["P_out"], dtype=self.embedding.dtype)
            N_e = S_B.shape[0]
            if (
                P_in.shape != (len(idx), D_e)
                or S_C.shape != S_B.shape
                or S_B.shape[1] != len(idx)
                or P_out.shape != (D_e, len(idx))
                or N_e > self.d_state
                or D_e > self.d_model
            ):
                raise ValueError(
                    f"designed weights do not fit: E {tuple(Ew.shape)}, P_in {tuple(P_in.shape)}, "
                    f"S_B {tuple(S_B.shape)}, P_out {tuple(P_out.shape)} for a model with D ≤ "
                    f"{self.d_model}, N ≤ {self.d_state}, expand {self.expand}."
                )
            dev = self.embedding.device
            for param in (self.in_proj, self.x_proj_B, self.x_proj_C, self.out_proj):
                param[l][member].zero_()
            self.in_proj[l][member][idx[:, None], torch.arange(D_e)[None]] = P_in.to(dev)
            self.x_proj_B[l][member][torch.arange(N_e)[:, None], idx[None]] = S_B.to(dev)
            self.x_proj_C[l][member][torch.arange(N_e)[:, None], idx[None]] = S_C.to(dev)
            self.out_proj[l][member][torch.arange(D_e)[:, None], idx[None]] = P_out.to(dev)
            if self.conv is not None:
                t = torch.as_tensor(w["W_conv"], dtype=self.conv[l].dtype)
                self.conv[l][member].zero_()
                K = t.shape[1]
                self.conv[l][member][
                    idx[:, None], torch.arange(self.conv[l].shape[-1] - K, self.conv[l].shape[-1])[None]
                ] = t.to(dev)

    @torch.no_grad()
    def member_model(self, member: int) -> "LinearMamba":
        """Member ``member`` as a model of its own: a one-member ensemble (``ensemble=1``) of the *same allocated
        size* (the maxima, masked to the member's size) holding a copy of its parameters. Trained alone it follows
        the member's trajectory in the ensemble bit for bit on the same machine (the ensemble's loss is a sum of
        per-member means, its clipping and AdamW act per member; checked in ``tests/train/test_train.py``)."""
        if isinstance(member, bool) or not isinstance(member, int) or not 0 <= member < self.n_members:
            raise ValueError(f"member must be an integer in [0, {self.n_members}), got {member!r}.")
        dev = self.embedding.device
        one = LinearMamba(
            self.vocab_size,
            self.d_model,
            self.d_state,
            self.n_layer,
            expand=self.expand,
            d_conv=self.d_conv,
            residual=self.residual,
            ensemble=1,
            member_sizes=[self.member_sizes[member]],
            ssm=self.ssm,
            dtype=self.embedding.dtype,
            device=dev,
        )
        for mine, theirs in zip(one.parameters(), self.parameters()):
            mine.copy_(theirs[member : member + 1])
        return one

    def member_weights(self, member: int = 0, layer: int = 0) -> dict:
        """Plain weights of one member (paper layout; see :meth:`load_member`), cropped to its size."""
        D, N, _ = self.member_sizes[member]
        Din = self.expand * D
        idx = torch.cat([torch.arange(D) + j * self.d_model for j in range(self.expand)])
        with torch.no_grad():
            out = dict(
                E=self.embedding[member, :, :D].T.clone(),
                P_in=self.in_proj[layer][member][idx][:, :D].clone(),
                S_B=self.x_proj_B[layer][member][:N][:, idx].clone(),
                S_C=self.x_proj_C[layer][member][:N][:, idx].clone(),
                P_out=self.out_proj[layer][member][:D][:, idx].clone(),
            )
            out["W_conv"] = self.conv[layer][member][idx].clone() if self.conv is not None else torch.ones(Din, 1)
        assert out["P_in"].shape == (Din, D)
        return out


# ====================================================================== multi-head (Alg. 3)

HEAD_PATTERNS = ("MHA", "MQA", "MKA", "MVA")
HEAD_VALUES = ("code", "split", "full")


class _SingleLayerEnsemble(nn.Module):
    """What the single-layer ensemble models below share: token-id checks, the tied (un)embedding of
    their unmasked ``embedding`` (n_members, V, D) and ``forward``; each defines ``internals(x) → {"y_out": ...}``."""

    _ids = LinearMamba._ids

    def embed(self, ids):
        return self.embedding[torch.arange(self.n_members, device=ids.device)[:, None, None], ids]

    def unembed(self, x):
        """Tied unembedding W_E^T: (n_members, ..., D) → (n_members, ..., V)."""
        return torch.einsum("e...d,evd->e...v", x, self.embedding)

    def hidden(self, input_ids: torch.Tensor) -> torch.Tensor:
        """y_out (n_members, B, L, D) before the tied unembedding (always with the ensemble axis)."""
        return self.internals(self.embed(self._ids(input_ids)))["y_out"]

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """input_ids (B, L) or (n_members, B, L) → logits (B, L, V) if ``ensemble is None`` else (n_members, B, L, V)."""
        logits = self.unembed(self.hidden(input_ids))
        return logits[0] if self.ensemble is None else logits


class MultiHeadLinearMamba(_SingleLayerEnsemble):
    r"""Simplified single-layer multi-head linear Mamba-2 (paper 002, Alg. 3, Tabs. 6–8) with an ensemble axis.

    Built like the authors' public code on the simplified block of Alg. 1::

        x_e  = W_E x                  (L, D)
        x̂    = Conv1D(P_in x_e)       (L, D_in)      D_in = expand·D, head size P = D_in / M
        B    = S_B x̂                  (L, M_B, N)    M_B = M for MHA, MKA; 1 (shared) for MQA, MVA
        C    = S_C x̂                  (L, M_C, N)    M_C = M for MHA, MQA; 1 (shared) for MKA, MVA
        x̂^h  = values of head h       (L, P)         see ``values``
        ŷ^h_t = Σ_{τ≤t} (B^h_τ · C^h_t) x̂^h_τ         (the SSM of Eq. 3 with Ā = 1, per head)
        ŷ    = Σ_h W_heads[:, :, h] ŷ^h (L, D_in)    aggregate
        logits = W_E^T P_out ŷ        (L, V)

    Patterns (Tab. 8; "shared" = one tensor for all heads): MHA shares nothing; MQA shares x̂ and B;
    MKA shares x̂ and C; MVA (real Mamba-2) shares B and C.

    ``values`` — how heads read and write the value channels:

    * ``"code"`` (default, the authors' code): MHA/MVA ``x̂^h = W_contract[:, h, :] x̂`` with ``W_contract``
      (P, M, D_in), a learned projection of the *full* value vector; MQA/MKA share
      ``x̂_shared[p] = Σ_h W_contract[p, h] x̂[hP + p]`` with ``W_contract`` (P, M); aggregate with the learned
      ``W_heads`` (D_in, P, M). Init: ``randn / sqrt(fan_in)`` [ours; the code uses plain ``randn``].
    * ``"split"``: Alg. 3 read literally — fixed slices ``x̂^h = x̂[hP:(h+1)P]`` (MHA/MVA; MQA/MKA use their
      sum ``Σ_h x̂^h``) and concatenation back to D_in; no extra parameters.
    * ``"full"``: every head reads the full ``x̂`` (P = D_in) and the heads are summed — the reading of
      Lemma 5's proof (Eqs. 129–131), under which MHA with ``S_B^h = S_C^h = F^h`` is exactly one head with the
      stacked ``F' = (F^1; …; F^M)``, i.e. N' = M N (Lemma 5, Eqs. 129–131).

    Ensembles: members share (D, M, pattern) and may differ in N (``member_states=[N_e, ...]``; the unused
    state dims of every head are masked to zero) and in their initialisation. Same interface as
    :class:`LinearMamba` for :func:`mamba_recall.train.train_ensemble` (``hidden``, ``unembed``, ``apply_masks_``).

    Parameter shapes (ensemble axis first)::

        embedding (n_members, V, D); in_proj (n_members, D_in, D); conv (n_members, D_in, d_conv);
        x_proj_B (n_members, M_B·N, D_in); x_proj_C (n_members, M_C·N, D_in); out_proj (n_members, D, D_in);
        W_contract (n_members, P, M, D_in) or (n_members, P, M); W_heads (n_members, D_in, P, M)
        (the last two only for values="code")
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        d_state: int,
        n_heads: int,
        pattern: str = "MHA",
        *,
        expand: int = 2,
        d_conv: int = 2,
        values: str = "code",
        ensemble: int | None = None,
        member_states: list | None = None,
        seed: int | None = None,
        dtype=torch.float32,
        device=None,
    ):
        super().__init__()
        V, D, N, M = (
            check_positive_int("vocab_size", vocab_size),
            check_positive_int("d_model", d_model),
            check_positive_int("d_state", d_state),
            check_positive_int("n_heads", n_heads),
        )
        check_positive_int("expand", expand)
        if not isinstance(pattern, str) or pattern.upper() not in HEAD_PATTERNS:
            raise ValueError(f"unknown head pattern {pattern!r}; use one of {HEAD_PATTERNS}.")
        if values not in HEAD_VALUES:
            raise ValueError(f"unknown values mode {values!r}; use one of {HEAD_VALUES}.")
        if isinstance(d_conv, bool) or not isinstance(d_conv, int) or d_conv < 1:
            raise ValueError(f"d_conv must be an integer >= 1, got {d_conv!r}.")
        Din = expand * D
        if Din % M:
            raise ValueError(
                f"D_in = expand·D = {Din} must be divisible by n_heads = {M}; pick D so that "
                "expand·D is a multiple of every head count (the paper uses D = 60)."
            )
        if ensemble is not None:
            check_positive_int("ensemble", ensemble)
        n_members = 1 if ensemble is None else ensemble
        member_states = [N] * n_members if member_states is None else [int(n) for n in member_states]
        if len(member_states) != n_members or not all(1 <= n <= N for n in member_states):
            raise ValueError(f"member_states must list {n_members} state sizes in [1, {N}], got {member_states}.")
        pattern = pattern.upper()
        self.vocab_size, self.d_model, self.d_state, self.n_heads, self.pattern = V, D, N, M, pattern
        self.expand, self.d_conv, self.d_inner, self.values = expand, d_conv, Din, values
        self.head_dim = Din if values == "full" else Din // M
        self.heads_B = M if pattern in ("MHA", "MKA") else 1
        self.heads_C = M if pattern in ("MHA", "MQA") else 1
        self.ensemble, self.n_members, self.member_states = ensemble, n_members, member_states
        self.n_layer, self.residual = 1, False
        kw = dict(dtype=dtype, device=device)
        self.register_buffer("n_mask", torch.stack([(torch.arange(N) < n) for n in member_states]).to(dtype).to(device))
        if seed is not None:
            torch.manual_seed(seed)

        def uniform(shape, fan):
            return nn.Parameter((torch.rand(shape, **kw) * 2 - 1) / math.sqrt(fan))

        P = Din // M
        self.embedding = nn.Parameter(torch.randn(n_members, V, D, **kw))
        self.in_proj = uniform((n_members, Din, D), D)
        self.conv = uniform((n_members, Din, d_conv), d_conv)
        self.x_proj_B = uniform((n_members, self.heads_B * N, Din), Din)
        self.x_proj_C = uniform((n_members, self.heads_C * N, Din), Din)
        self.out_proj = uniform((n_members, D, Din), Din)
        if values == "code":
            if pattern in ("MHA", "MVA"):
                self.W_contract = nn.Parameter(torch.randn(n_members, P, M, Din, **kw) / math.sqrt(Din))
            else:
                self.W_contract = nn.Parameter(torch.randn(n_members, P, M, **kw) / math.sqrt(M))
            self.W_heads = nn.Parameter(torch.randn(n_members, Din, P, M, **kw) / math.sqrt(P * M))
        else:
            self.W_contract = self.W_heads = None
        self.apply_masks_()

    @torch.no_grad()
    def apply_masks_(self) -> None:
        """Zero the state rows of S_B, S_C (every head) that a member with a smaller N does not own."""
        for proj, h in ((self.x_proj_B, self.heads_B), (self.x_proj_C, self.heads_C)):
            proj.view(self.n_members, h, self.d_state, -1).mul_(self.n_mask[:, None, :, None])

    @torch.no_grad()
    def copy_shared_from(self, src: LinearMamba) -> None:
        r"""Load the weights of a single-layer :class:`LinearMamba` ``src`` into this model, the algebra checks of
        Lemma 2 and Lemma 5 (paper 002): ``embedding`` (W_E), ``in_proj`` (P_in), ``conv`` (W_conv), ``out_proj``
        (P_out) and ``x_proj_B`` / ``x_proj_C`` (S_B, S_C) are copied member by member.

        S_B, S_C must have the same shape in both: (n_members, M_B·N, D_in) here against (n_members, N_src, D_in)
        in ``src``. So MVA / MQA / MKA with ``values="split"`` take a 1-head model with the same N (Lemma 2: MVA is
        then that model exactly), and MHA with ``values="full"`` takes the 1-head model with the stacked state
        N_src = M·N, ``S_B = (S_B^1; …; S_B^M)`` (Lemma 5, Eqs. 129–131: N' = M N)."""
        if not isinstance(src, LinearMamba) or src.n_layer != 1:
            raise ValueError(
                f"src must be a single-layer LinearMamba, got {type(src).__name__} with "
                f"{getattr(src, 'n_layer', '?')} layers."
            )
        pairs = (
            ("embedding", self.embedding, src.embedding),
            ("in_proj", self.in_proj, src.in_proj[0]),
            ("conv", self.conv, None if src.conv is None else src.conv[0]),
            ("out_proj", self.out_proj, src.out_proj[0]),
            ("x_proj_B", self.x_proj_B, src.x_proj_B[0]),
            ("x_proj_C", self.x_proj_C, src.x_proj_C[0]),
        )
        for name, dst, w in pairs:
            if w is None or dst.shape != w.shape:
                raise ValueError(
                    f"{name}: shape {tuple(dst.shape)} here but "
                    f"{None if w is None else tuple(w.shape)} in src; build src with the same V, D, "
                    f"expand, d_conv, members and N_src = M_B·N = {self.heads_B * self.d_state}."
                )
        for _, dst, w in pairs:
            dst.copy_(w)

    def internals(self, x: torch.Tensor) -> dict:
        """x (n,B,L,D) → dict x_hat (n,B,L,Din), B (n,B,L,M,N), C (n,B,L,M,N), values (n,B,L,M,P),
        y_heads (n,B,L,M,P), y_hat (n,B,L,Din), y_out (n,B,L,D)."""
        Eb, Bb, L, _ = x.shape
        M, N, Din, P = self.n_heads, self.d_state, self.d_inner, self.head_dim
        x_in = torch.einsum("ebld,eid->ebli", x, self.in_proj)
        K = self.d_conv
        x_hat = x_in * self.conv[:, None, None, :, K - 1]
        for k in range(K - 1):
            shift = K - 1 - k
            if shift < L:
                x_hat = x_hat + F.pad(x_in, (0, 0, shift, 0))[:, :, :L] * self.conv[:, None, None, :, k]
        Bm = torch.einsum("ebli,eki->eblk", x_hat, self.x_proj_B).view(Eb, Bb, L, self.heads_B, N)
        Cm = torch.einsum("ebli,eki->eblk", x_hat, self.x_proj_C).view(Eb, Bb, L, self.heads_C, N)
        Bm, Cm = Bm.expand(-1, -1, -1, M, -1), Cm.expand(-1, -1, -1, M, -1)
        shared_values = self.pattern in ("MQA", "MKA")
        if self.values == "full":
            vals = x_hat[:, :, :, None, :].expand(-1, -1, -1, M, -1)
        elif self.values == "split":
            vals = x_hat.view(Eb, Bb, L, M, P)
            if shared_values:
                vals = vals.sum(3, keepdim=True).expand(-1, -1, -1, M, -1)
        elif shared_values:
            vals = torch.einsum("eblhp,eph->eblp", x_hat.view(Eb, Bb, L, M, Din // M), self.W_contract)
            vals = vals[:, :, :, None, :].expand(-1, -1, -1, M, -1)
        else:
            vals = torch.einsum("ebli,ephi->eblhp", x_hat, self.W_contract)
        scores = torch.einsum("ebshn,ebthn->ebhts", Bm, Cm)  # α^h[t, τ] = B^h_τ · C^h_t
        scores = scores * torch.tril(torch.ones(L, L, device=x.device, dtype=x.dtype))
        y_heads = torch.einsum("ebhts,ebshp->ebthp", scores, vals)
        if self.values == "full":
            y_hat = y_heads.sum(3)
        elif self.values == "split":
            y_hat = y_heads.reshape(Eb, Bb, L, Din)
        else:
            y_hat = torch.einsum("ebthp,eiph->ebti", y_heads, self.W_heads)
        y_out = torch.einsum("ebli,edi->ebld", y_hat, self.out_proj)
        return dict(x_hat=x_hat, B=Bm, C=Cm, values=vals, y_heads=y_heads, y_hat=y_hat, y_out=y_out)


# ====================================================================== Tab. 10 ablation rows Base, A, B

ABLATION_ROWS = {
    # row id: (Ā_t = exp(Δ_t A) learned [False: Ā_t = I], output gate ŷ ⊙ SiLU(ẑ), SiLU after Conv1D)
    "Base": dict(decay=True, gate=True, activation=True),
    "A": dict(decay=False, gate=True, activation=True),
    "B": dict(decay=False, gate=False, activation=True),
    "C": dict(decay=False, gate=False, activation=False),
}


class SelectiveAblationMamba(_SingleLayerEnsemble):
    r"""The 1-layer selective Mamba of the Tab. 10 ablation (App. K), rows Base / A / B (and C with Δ), with an
    ensemble axis (members = seeds, all of the same size) so that it trains with
    :func:`mamba_recall.train.train_ensemble`.

    Row ``Base`` is the mamba-ssm Mamba-1 mixer (§3.2, Eqs. 1–2) without normalisation layers, in the
    [code] ``circuit_minimality_ablation`` layout (``expand=2``, ``d_conv=4``, ``conv_bias=True``, ``bias=False``,
    ``init_D=0``: no skip term ``D x̂``)::

        x_e = W_E x                                  (L, D)
        x_in = P_in x_e,  z = P_z x_e                 (L, D_in) each
        x̂ = SiLU(Conv1D(x_in) + b_conv)              (L, D_in)    (no SiLU: row C)
        Δ = SoftPlus(W_Δ (S_Δ x̂) + b_Δ)               (L, D_in)    S_Δ: (R, D_in), W_Δ: (D_in, R), R = ⌈D/16⌉
        B = S_B x̂,  C = S_C x̂                        (L, N) each
        h_t = exp(Δ_t A) ⊙ h_{t-1} + (Δ_t ⊙ x̂_t) B_t^T  (D_in, N)   A = −exp(A_log) (D_in, N), S4D-real init
        ŷ_t = h_t C_t ⊙ SiLU(z_t)                    (D_in)       (no gate: rows B, C)
        logits = W_E^T P_out ŷ                       (L, V)        tied embedding

    Row ``A`` sets :math:`\bar A_t = I` (no ``A_log`` parameter) and keeps :math:`\bar B_t=\Delta_t B_t`, so
    :math:`\hat y_t=\sum_{\tau\le t}(B_\tau\!\cdot\!C_t)\,\Delta_\tau\odot\hat x_\tau` (computed in that
    attention form); row ``B`` also drops the gate; ``C`` (= ``B`` without the SiLU) is Alg. 1 with Δ and
    ``d_conv=4``. No residual connection [ours, as Alg. 1 and the linear rows C–E]; embedding init N(0, 1)
    and U(±1/√fan_in) for the projections as :class:`LinearMamba`; Δ init as mamba-ssm (dt ∈ [1e-3, 0.1]).

    Parameter shapes (ensemble axis first)::

        embedding (n_members, V, D); in_proj (n_members, D_in, D); in_proj_z (n_members, D_in, D) if gate; conv (n_members, D_in, d_conv);
        conv_bias (n_members, D_in); x_proj_dt (n_members, R, D_in); dt_proj (n_members, D_in, R); dt_bias (n_members, D_in);
        x_proj_B, x_proj_C (n_members, N, D_in); A_log (n_members, D_in, N) if decay; out_proj (n_members, D, D_in)
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        d_state: int,
        row: str = "Base",
        *,
        expand: int = 2,
        d_conv: int = 4,
        ensemble: int | None = None,
        seed: int | None = None,
        dtype=torch.float32,
        device=None,
    ):
        super().__init__()
        V, D, N = (
            check_positive_int(name, value)
            for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("d_state", d_state))
        )
        check_positive_int("expand", expand)
        check_positive_int("d_conv", d_conv)
        if row not in ABLATION_ROWS:
            raise ValueError(f"unknown ablation row {row!r}; use one of {tuple(ABLATION_ROWS)}.")
        if ensemble is not None:
            check_positive_int("ensemble", ensemble)
        n_members = 1 if ensemble is None else ensemble
        self.vocab_size, self.d_model, self.d_state, self.row = V, D, N, row
        self.expand, self.d_conv, self.d_inner = expand, d_conv, expand * D
        self.dt_rank = math.ceil(D / 16)
        self.decay, self.gate, self.activation = (ABLATION_ROWS[row][k] for k in ("decay", "gate", "activation"))
        self.ensemble, self.n_members, self.n_layer, self.residual = ensemble, n_members, 1, False
        Din, R = self.d_inner, self.dt_rank
        kw = dict(dtype=dtype, device=device)
        if seed is not None:
            torch.manual_seed(seed)

        def uniform(shape, fan):
            return nn.Parameter((torch.rand(shape, **kw) * 2 - 1) / math.sqrt(fan))

        self.embedding = nn.Parameter(torch.randn(n_members, V, D, **kw))
        self.in_proj = uniform((n_members, Din, D), D)
        self.in_proj_z = uniform((n_members, Din, D), D) if self.gate else None
        self.conv = uniform((n_members, Din, d_conv), d_conv)
        self.conv_bias = uniform((n_members, Din), d_conv)
        self.x_proj_dt = uniform((n_members, R, Din), Din)
        self.dt_proj = nn.Parameter((torch.rand(n_members, Din, R, **kw) * 2 - 1) * R**-0.5)
        dt = torch.exp(torch.rand(n_members, Din, **kw) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3)).clamp(
            min=1e-4
        )
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus^{-1}(dt)
        self.x_proj_B = uniform((n_members, N, Din), Din)
        self.x_proj_C = uniform((n_members, N, Din), Din)
        self.A_log = (
            nn.Parameter(torch.log(torch.arange(1, N + 1, **kw)).expand(n_members, Din, N).clone())
            if self.decay
            else None
        )
        self.out_proj = uniform((n_members, D, Din), Din)

    def apply_masks_(self) -> None:
        """No masked entries (all members have the same size); kept for :func:`mamba_recall.train.train_ensemble`."""

    def internals(self, x: torch.Tensor, ssm: str = "auto") -> dict:
        """x (n,B,L,D) → dict x_hat, delta, y_hat (n,B,L,Din), B, C (n,B,L,N), y_out (n,B,L,D).
        ``ssm``: ``"auto"`` (attention form when Ā = I, else the sequential scan) or ``"scan"``."""
        L, K = x.shape[2], self.d_conv
        x_in = torch.einsum("ebld,eid->ebli", x, self.in_proj)
        x_hat = x_in * self.conv[:, None, None, :, K - 1] + self.conv_bias[:, None, None, :]
        for k in range(K - 1):
            shift = K - 1 - k
            if shift < L:
                x_hat = x_hat + F.pad(x_in, (0, 0, shift, 0))[:, :, :L] * self.conv[:, None, None, :, k]
        if self.activation:
            x_hat = F.silu(x_hat)
        dt = torch.einsum("ebli,eri->eblr", x_hat, self.x_proj_dt)
        delta = F.softplus(torch.einsum("eblr,eir->ebli", dt, self.dt_proj) + self.dt_bias[:, None, None, :])
        Bm = torch.einsum("ebli,eni->ebln", x_hat, self.x_proj_B)
        Cm = torch.einsum("ebli,eni->ebln", x_hat, self.x_proj_C)
        u = delta * x_hat
        if self.decay or ssm == "scan":
            A = -torch.exp(self.A_log) if self.decay else u.new_zeros(self.n_members, self.d_inner, self.d_state)
            h = u.new_zeros(*u.shape[:2], self.d_inner, self.d_state)
            ys = []
            for t in range(L):  # Eq. 2: h_t = exp(Δ_t A) ⊙ h_{t−1} + (Δ_t x̂_t) B_t^T; ŷ_t = h_t C_t
                h = torch.exp(delta[:, :, t, :, None] * A[:, None]) * h + u[:, :, t, :, None] * Bm[:, :, t, None, :]
                ys.append(torch.einsum("ebin,ebn->ebi", h, Cm[:, :, t]))
            y_hat = torch.stack(ys, dim=2)
        else:
            scores = torch.einsum("ebsn,ebtn->ebts", Bm, Cm)
            scores = scores * torch.tril(torch.ones(L, L, device=x.device, dtype=x.dtype))
            y_hat = torch.einsum("ebts,ebsi->ebti", scores, u)
        if self.gate:
            y_hat = y_hat * F.silu(torch.einsum("ebld,eid->ebli", x, self.in_proj_z))
        y_out = torch.einsum("ebli,edi->ebld", y_hat, self.out_proj)
        return dict(x_hat=x_hat, delta=delta, B=Bm, C=Cm, y_hat=y_hat, y_out=y_out)
