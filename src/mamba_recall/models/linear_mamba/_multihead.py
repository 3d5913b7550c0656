"""The simplified multi-head linear Mamba-2 of paper 002 (Alg. 3), and the base of the single-layer ensemble
models; see :mod:`mamba_recall.models.linear_mamba`."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..mamba import check_positive_int
from ._linear import LinearMamba, n_members_of


# ====================================================================== multi-head (Alg. 3)

HEAD_PATTERNS = ("MHA", "MQA", "MKA", "MVA")
HEAD_VALUES = ("code", "split", "full")


def uniform_init(shape, fan: int, **kw) -> nn.Parameter:
    """A parameter of ``shape`` drawn from PyTorch's default Linear init, U(±1/√fan) (``kw``: dtype, device)."""
    return nn.Parameter((torch.rand(shape, **kw) * 2 - 1) / math.sqrt(fan))


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
    :class:`LinearMamba` for :func:`mamba_recall.train.train` with ``per_member=True`` (Chapter 2's ``train_ensemble``) (``hidden``, ``unembed``, ``apply_masks_``).

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
        n_members = n_members_of(ensemble)
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

        uniform = functools.partial(uniform_init, **kw)

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
