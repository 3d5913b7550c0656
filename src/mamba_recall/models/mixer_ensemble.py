r"""Many single-layer mixer models of one shape trained as one model: :class:`MixerEnsemble`, the member axis of
:class:`~mamba_recall.models.s6.MixerLM` (paper 003's MQAR models: ``s6`` = Mamba without gate, ``s4d`` = Mamba-S4D
with gate).

E members of width d run as **one** selective scan of E·d channels. Every map of the model is per channel
(the depthwise convolution, Δ, A, D) or per member (the embedding, W_x, W_dt, the gate, the head), so the members
never mix:

.. math::

    \hat x^{(e)} = \sigma(\mathrm{conv}^{(e)}(E^{(e)}[\mathrm{ids}^{(e)}])),\quad
    \Delta^{(e)}_t = \mathrm{softplus}(W^{(e)}_{dt} W^{(e)}_{x,\Delta}\hat x^{(e)}_t + b^{(e)}_{dt}),\quad
    B^{(e)}_t, C^{(e)}_t = W^{(e)}_{x,B|C}\,\hat x^{(e)}_t

(Eq. 14c–f of paper 003 for each member e), and the scan takes B and C as *groups* (mamba-ssm's ``(b, g, n, l)``
layout: channels e·d … (e+1)·d − 1 read group e), so channel c of member e sees only member e's B and C. The
members' data streams differ: ids (E, b, T), one batch per member.

Each member computes what :class:`~mamba_recall.models.s6.MixerLM` computes with the same parameters, up to
floating-point rounding (batched matmuls instead of one per model): :meth:`MixerEnsemble.from_members` stacks
built models and :meth:`MixerEnsemble.member` gives member e back as a ``MixerLM`` (tests: the two agree to 1e-5).

Parameter shapes (member axis first; ``R`` = ⌈d/16⌉, ``Vin`` the input vocabulary, ``Vout`` the classes)::

    embedding (E, Vin, d)    conv_weight (E, d, 1, k)  conv_bias (E, d)
    s6:  x_proj (E, R+2N, d)  dt_proj_weight (E, d, R)  dt_proj_bias (E, d)  A_log (E, d, N)  D (E, d)
    s4d: log_dt (E, d)  A_log (E, d, N)  B (E, d, N)  C (E, d, N)  D (E, d)
    gate (E, d, d) (use_gate)   head_weight (E, Vout, d)  head_bias (E, Vout)

It has the member-axis interface of :func:`mamba_recall.train.train` (``per_member=True``): ``n_members``,
``ensemble``, ``hidden``, ``unembed``, ``apply_masks_``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..scan import selective_scan
from .s6 import MixerLM

__all__ = ["ENSEMBLE_MIXERS", "MixerEnsemble"]

#: the mixers :class:`MixerEnsemble` implements (Mamba-2 has its own convolutions and scalar Δ: not here)
ENSEMBLE_MIXERS = ("s6", "s4d")
_ACTIVATIONS = {"silu": F.silu, "relu": F.relu, "identity": lambda v: v}


def _check_members(models: list) -> MixerLM:
    if not models:
        raise ValueError("MixerEnsemble.from_members needs at least one model.")
    first = models[0]
    for m in models:
        if not isinstance(m, MixerLM):
            raise TypeError(f"MixerEnsemble members must be MixerLM models, got {type(m).__name__}.")
    if first.mixer_name not in ENSEMBLE_MIXERS:
        raise ValueError(
            f"MixerEnsemble has no {first.mixer_name!r} mixer (it has {', '.join(ENSEMBLE_MIXERS)}); train "
            f"{first.mixer_name!r} models one at a time."
        )
    if first.pe or (first.conv1d is not None and first.conv1d.bias is None):
        raise ValueError("MixerEnsemble takes models without positional coordinate (pe=False) and with conv bias.")
    shapes = [{k: tuple(v.shape) for k, v in m.state_dict().items()} for m in models]
    signature = [(m.mixer_name, m.activation, m.use_conv, m.use_gate, m.mixer.backend) for m in models]
    if any(s != shapes[0] for s in shapes) or len(set(signature)) != 1:
        raise ValueError("MixerEnsemble members must share mixer, sizes, activation, conv, gate and backend.")
    return first


class MixerEnsemble(nn.Module):
    """E :class:`~mamba_recall.models.s6.MixerLM` models of one shape as one module: ids (E, b, T) (or (b, T),
    the same batch for every member) → logits (E, b, T, Vout). Build it with :meth:`from_members`."""

    def __init__(self, models: list[MixerLM]):
        super().__init__()
        first = _check_members(models)
        self.n_members = self.ensemble = len(models)
        self.d, self.N, self.mixer_name = first.d, first.N, first.mixer_name
        self.activation, self.use_conv, self.use_gate = first.activation, first.use_conv, first.use_gate
        self.backend = first.mixer.backend
        self.vocab_size, self.n_classes = first.vocab_size, first.head.out_features
        self.d_conv = first.conv1d.kernel_size[0] if first.use_conv else None
        self.dt_rank = getattr(first.mixer, "dt_rank", None)
        for name, path in self._layout().items():
            stacked = torch.stack([_get(m, path).detach().clone() for m in models])
            setattr(self, name, nn.Parameter(stacked))
            if name in ("A_log", "D", "log_dt"):
                getattr(self, name)._no_weight_decay = True

    @classmethod
    def from_members(cls, models: list[MixerLM]) -> MixerEnsemble:
        """The ensemble of ``models`` (built alike, e.g. one per seed): their parameters copied, member e = models[e]."""
        return cls(list(models))

    def _layout(self) -> dict[str, str]:
        """This ensemble's parameter name → the matching ``MixerLM`` attribute path."""
        out = {"embedding": "embedding.weight"}
        if self.use_conv:
            out.update(conv_weight="conv1d.weight", conv_bias="conv1d.bias")
        if self.mixer_name == "s6":
            out.update(
                x_proj="mixer.x_proj.weight",
                dt_proj_weight="mixer.dt_proj.weight",
                dt_proj_bias="mixer.dt_proj.bias",
                A_log="mixer.A_log",
                D="mixer.D",
            )
        else:
            out.update(log_dt="mixer.log_dt", A_log="mixer.A_log", B="mixer.B", C="mixer.C", D="mixer.D")
        if self.use_gate:
            out["gate"] = "gate.weight"
        out.update(head_weight="head.weight", head_bias="head.bias")
        return out

    def member(self, e: int) -> MixerLM:
        """Member ``e`` as a ``MixerLM`` of its own (a copy of its parameters, in eval mode, on this device)."""
        if not (isinstance(e, int) and 0 <= e < self.n_members):
            raise IndexError(f"member {e!r} out of range: this ensemble has {self.n_members} members.")
        model = MixerLM(
            self.vocab_size,
            self.d,
            self.N,
            mixer=self.mixer_name,
            n_classes=self.n_classes,
            use_conv=self.use_conv,
            d_conv=self.d_conv or 4,
            activation=self.activation,
            use_gate=self.use_gate,
            backend=self.backend,
        )
        state = {path: getattr(self, name)[e].detach().clone() for name, path in self._layout().items()}
        model.load_state_dict(state)
        return model.to(self.embedding.device).eval()

    def apply_masks_(self) -> None:
        """Nothing to mask: the members share every size (the train loop's member-axis interface)."""

    def _ids(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dim() == 2:
            ids = ids.unsqueeze(0).expand(self.n_members, *ids.shape)
        if ids.dim() != 3 or ids.shape[0] != self.n_members:
            raise ValueError(
                f"ids must be (n_members={self.n_members}, batch, T) or (batch, T) token indices, got "
                f"{tuple(ids.shape)}."
            )
        return ids

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (E, b, T) or (b, T) → the mixer's (gated) output (E, b, T, d), before the head."""
        ids = self._ids(ids)
        E, b, T = ids.shape
        d = self.d
        x = self.embedding[torch.arange(E, device=ids.device)[:, None, None], ids]  # (E, b, T, d)
        u = x.permute(1, 0, 3, 2).reshape(b, E * d, T)  # channel e·d + c = member e's channel c
        if self.use_conv:
            k = self.conv_weight.shape[-1]
            w = self.conv_weight.reshape(E * d, 1, k)
            u = F.conv1d(u, w, self.conv_bias.reshape(E * d), padding=k - 1, groups=E * d)[..., :T]
            u = _ACTIVATIONS[self.activation](u)
        y = self._scan(u.contiguous(), b, T)  # (b, E·d, T)
        y = y.reshape(b, E, d, T).permute(1, 0, 3, 2)  # (E, b, T, d)
        if self.use_gate:
            y = F.silu(torch.einsum("ebtd,ekd->ebtk", x, self.gate)) * y
        return y

    def _scan(self, u: torch.Tensor, b: int, T: int) -> torch.Tensor:
        E, d, N = self.n_members, self.d, self.N
        A = -torch.exp(self.A_log).reshape(E * d, N)
        if self.mixer_name == "s4d":
            delta = torch.exp(self.log_dt).reshape(1, E * d, 1).expand(b, E * d, T).contiguous()
            return selective_scan(
                u, delta, A, self.B.reshape(E * d, N), self.C.reshape(E * d, N), self.D.reshape(E * d),
                backend=self.backend,
            )  # fmt: skip
        proj = torch.einsum("bedt,ekd->bekt", u.reshape(b, E, d, T), self.x_proj)  # (b, E, R + 2N, T)
        dt, B, C = proj.split([self.dt_rank, N, N], dim=2)
        delta_raw = torch.einsum("bert,edr->bedt", dt, self.dt_proj_weight).reshape(b, E * d, T)
        return selective_scan(
            u,
            delta_raw.contiguous(),
            A,
            B.contiguous(),  # (b, g = E, N, T): member e's B for its channels
            C.contiguous(),
            self.D.reshape(E * d),
            delta_bias=self.dt_proj_bias.reshape(E * d),
            delta_softplus=True,
            backend=self.backend,
        )

    def unembed(self, h: torch.Tensor) -> torch.Tensor:
        """(E, …, d) → logits (E, …, Vout) with each member's head."""
        flat = h.reshape(self.n_members, -1, self.d)
        logits = torch.einsum("eqd,ecd->eqc", flat, self.head_weight) + self.head_bias[:, None, :]
        return logits.reshape(*h.shape[:-1], self.n_classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.unembed(self.hidden(ids))


def _get(model: nn.Module, path: str) -> torch.Tensor:
    obj = model
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj
