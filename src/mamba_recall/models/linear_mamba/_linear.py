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

Parameter shapes (ensemble axis first)::

    embedding     (n_members, V, D)          token rows (the paper's W_E ∈ R^{D×V}, its E, transposed)
    in_proj[l]    (n_members, D_in, D)       P_in
    conv[l]       (n_members, D_in, d_conv)  W_conv
    x_proj_B[l]   (n_members, N, D_in)       S_B
    x_proj_C[l]   (n_members, N, D_in)       S_C
    out_proj[l]   (n_members, D, D_in)       P_out

See :mod:`mamba_recall.models.linear_mamba` for the ensembles (members of different sizes, masks)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..mamba import check_positive_int

SSM_FORMS = ("attention", "scan")


def n_members_of(ensemble: int | None) -> int:
    """The size of the ensemble axis: 1 for one model without it (``ensemble=None``), else ``ensemble``, which must be
    a positive int (ValueError naming it otherwise)."""
    return 1 if ensemble is None else check_positive_int("ensemble", ensemble)


def _member_sizes(member_sizes, ensemble, n_members: int, D: int, N: int, Lam: int) -> list:
    """``member_sizes`` of :class:`LinearMamba` checked and completed: one ``(D_e, N_e, Λ_e)`` per member, each
    ≤ the maxima ``(D, N, Λ)`` (a pair ``(D_e, N_e)`` gets ``Λ_e = Λ``; None: every member at the maxima)."""
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
    return sizes


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
        n_members = n_members_of(ensemble)
        sizes = _member_sizes(member_sizes, ensemble, n_members, D, N, Lam)
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
