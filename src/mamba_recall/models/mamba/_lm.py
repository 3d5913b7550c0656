"""The language model around the Mamba-1 mixer, as ``mamba_ssm/modules/block.py`` (``Block``) and
``mamba_ssm/models/mixer_seq_simple.py`` (``MixerModel``, ``MambaLMHeadModel``, ``_init_weights``); see
:mod:`mamba_recall.models.mamba`."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from ._mixer import LayerState, Mamba, _check_backend, at_least_fp32, check_positive_int, check_token_ids


class RMSNorm(nn.Module):
    """RMSNorm, ``y = x / sqrt(mean(x², -1) + eps) · weight`` computed in (at least) fp32 and cast back.

    Official implementation: ``mamba_ssm/ops/triton/layer_norm.py::RMSNorm`` / ``rms_norm_ref``
    (one parameter, ``weight``; the Triton module registers ``bias = None``).
    """

    def __init__(self, d, eps=1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d, device=device, dtype=dtype))

    def forward(self, x):
        xf = at_least_fp32(x)
        out = xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + self.eps) * self.weight
        return out.to(x.dtype)


class Block(nn.Module):
    """mamba-ssm's ``Block``: Add → RMSNorm → Mixer, returning ``(hidden_states, residual)``.

    Official implementation: ``mamba_ssm/modules/block.py`` (non-fused branch; the fused
    add+norm kernel computes the same thing)::

        residual      = hidden_states + residual        (residual = hidden_states in the first block)
        hidden_states = mixer(norm(residual))
        residual      kept in fp32 if residual_in_fp32 (float64 stays float64)

    Parameters: ``norm.weight``, ``mixer.*`` (a :attr:`mixer_cls`, :class:`Mamba` here, built from ``mixer_kwargs``).
    """

    #: the mixer class the block wraps (``models.mamba2.Mamba2Block`` wraps a ``Mamba2``)
    mixer_cls = Mamba

    def __init__(self, d_model, norm_epsilon=1e-5, residual_in_fp32=True, device=None, dtype=None, **mixer_kwargs):
        super().__init__()
        self.residual_in_fp32 = residual_in_fp32
        self.norm = RMSNorm(d_model, eps=norm_epsilon, device=device, dtype=dtype)
        self.mixer = self.mixer_cls(d_model, device=device, dtype=dtype, **mixer_kwargs)

    def add_norm(self, hidden_states, residual):
        """Add → RMSNorm: ``(normed, residual)`` with ``residual = hidden_states + residual`` (``hidden_states``
        alone in the first layer), kept in fp32 if ``residual_in_fp32``, and ``normed = norm(residual)``, the
        mixer's input; (B, L, d_model) each."""
        residual = hidden_states + residual if residual is not None else hidden_states
        hidden_states = self.norm(residual.to(dtype=self.norm.weight.dtype))
        if self.residual_in_fp32:
            residual = at_least_fp32(residual)
        return hidden_states, residual

    def forward(self, hidden_states, residual=None, return_internals=False, *, state=None, return_state=False):
        """Returns ``(hidden_states, residual)`` (+ the mixer's :class:`MambaInternals` if asked)
        (+ the mixer's new :class:`LayerState` last, if ``return_state``). ``state``: a
        :class:`LayerState` to continue from (prefix-state evaluation)."""
        hidden_states, residual = self.add_norm(hidden_states, residual)
        if state is None and not return_state:
            out = self.mixer(hidden_states, return_internals=return_internals)
            if return_internals:
                return out[0], residual, out[1]
            return out, residual
        kw = {} if state is None else {"initial_state": state.ssm, "conv_state": state.conv}
        out = self.mixer(
            hidden_states, return_internals=return_internals, return_last_state=True, return_conv_state=True, **kw
        )
        new_state = LayerState(conv=out[2], ssm=out[1])
        if return_internals:
            return out[0], residual, out[3], new_state
        return out[0], residual, new_state


def init_weights(module, n_layer, initializer_range=0.02, rescale_prenorm_residual=True, n_residuals_per_layer=1):
    """``mamba_ssm.models.mixer_seq_simple._init_weights``, applied with ``model.apply(...)``.

    Linear biases → 0 (unless marked ``_no_reinit``, i.e. ``dt_proj.bias``); Embedding weights →
    N(0, initializer_range²); ``out_proj.weight`` → kaiming_uniform(a=√5) / √(n_residuals_per_layer ·
    n_layer) (GPT-2's scaled init of the residual branch).
    """
    if isinstance(module, nn.Linear):
        if module.bias is not None and not getattr(module.bias, "_no_reinit", False):
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=initializer_range)
    if rescale_prenorm_residual:
        for name, p in module.named_parameters():
            if name in ("out_proj.weight", "fc2.weight"):
                nn.init.kaiming_uniform_(p, a=math.sqrt(5))
                with torch.no_grad():
                    p /= math.sqrt(n_residuals_per_layer * n_layer)


class MixerModel(nn.Module):
    """Embedding → n_layer × :class:`Block` → final Add → RMSNorm (``mixer_seq_simple.MixerModel``, no MLP).

    Parameters: ``embedding.weight``, ``layers.{i}.norm.weight``, ``layers.{i}.mixer.*``, ``norm_f.weight``.
    """

    def __init__(
        self,
        d_model,
        n_layer,
        vocab_size,
        norm_epsilon=1e-5,
        residual_in_fp32=True,
        initializer_range=0.02,
        rescale_prenorm_residual=True,
        device=None,
        dtype=None,
        block_cls=None,
        **mixer_kwargs,
    ):
        super().__init__()
        block_cls = block_cls or Block  # models.mamba2.Mamba2Block for Mamba-2 layers
        self.embedding = nn.Embedding(vocab_size, d_model, device=device, dtype=dtype)
        self.layers = nn.ModuleList(
            [
                block_cls(
                    d_model,
                    norm_epsilon=norm_epsilon,
                    residual_in_fp32=residual_in_fp32,
                    layer_idx=i,
                    device=device,
                    dtype=dtype,
                    **mixer_kwargs,
                )
                for i in range(n_layer)
            ]
        )
        self.norm_f = RMSNorm(d_model, eps=norm_epsilon, device=device, dtype=dtype)
        self.apply(
            lambda m: init_weights(m, n_layer, initializer_range, rescale_prenorm_residual, n_residuals_per_layer=1)
        )  # d_intermediate = 0: one residual

    def forward(self, input_ids, return_internals=False, *, states=None, return_states=False):
        """input_ids (B, L) → hidden states (B, L, d_model) [, internals] [, new states].

        ``states``: one :class:`LayerState` per layer to continue from (prefix-state evaluation);
        ``return_states``: also return the new per-layer states (a list, last in the tuple)."""
        if states is not None and len(states) != len(self.layers):
            raise ValueError(f"states must hold one state per layer ({len(self.layers)}), got {len(states)}.")
        hidden_states = self.embedding(input_ids)
        residual, internals, new_states = None, [], []
        use_state = states is not None or return_states
        for i, layer in enumerate(self.layers):
            if use_state:
                out = layer(
                    hidden_states,
                    residual,
                    return_internals=return_internals,
                    state=None if states is None else states[i],
                    return_state=True,
                )
                new_states.append(out[-1])
            else:
                out = layer(hidden_states, residual, return_internals=return_internals)
            hidden_states, residual = out[0], out[1]
            if return_internals:
                internals.append(out[2])
        residual = hidden_states + residual if residual is not None else hidden_states
        hidden_states = self.norm_f(residual.to(dtype=self.norm_f.weight.dtype))
        result = (hidden_states,)
        if return_internals:
            result += (internals,)
        if return_states:
            result += (new_states,)
        return result[0] if len(result) == 1 else result


class MambaLMHeadModel(nn.Module):
    """``mamba_ssm.models.mixer_seq_simple.MambaLMHeadModel`` (Mamba-1 layers, no MLP, RMSNorm,
    residual in fp32), with the same ``state_dict`` keys::

        backbone.embedding.weight             (V_pad, d_model)
        backbone.layers.{i}.norm.weight       (d_model,)
        backbone.layers.{i}.mixer.<Mamba parameter>
        backbone.norm_f.weight                (d_model,)
        lm_head.weight                        (V_pad, d_model), tied to the embedding by default

    ``V_pad`` is ``vocab_size`` rounded up to a multiple of ``pad_vocab_size_multiple``, as upstream,
    so the logits can be wider than the vocabulary (labels < vocab_size index them unchanged).
    The initialisation follows upstream's order: modules are built, ``init_weights`` runs from the
    backbone and again from the LM (out_proj rescaled by 1/√n_layer), then the head is tied.
    Seed with ``torch.manual_seed`` before construction for a reproducible model.

    ``mixer_kwargs`` go to every :class:`Mamba` (``dt_rank``, ``dt_min``, ``conv_bias``, ...).
    ``zero_out_proj_from = k`` (not upstream; None by default) then sets ``out_proj.weight`` of the layers
    i ≥ k to zero: those blocks start as the identity on the residual stream (h ← h + 0) and grow in from the
    first step, since ∂loss/∂out_proj = (∂loss/∂h) ⊗ (the block's gated scan output) is not zero (the
    "zero-init residual branch" of Fixup / ReZero / SkipInit, Zhang et al. 2019, Bachlechner et al. 2020, De and
    Smith 2020). It draws no random numbers, so every other weight equals the default model's of the same seed.
    ``model.backend`` reads/sets the scan backend of every layer. ``block_cls`` is the layer type
    (:class:`~mamba_recall.models.mamba2.Mamba2LMHeadModel` is this model with Mamba-2 blocks).
    """

    block_cls = Block

    def __init__(
        self,
        d_model,
        n_layer,
        vocab_size,
        d_state=16,
        d_conv=4,
        expand=2,
        pad_vocab_size_multiple=8,
        tie_embeddings=True,
        backend="auto",
        norm_epsilon=1e-5,
        residual_in_fp32=True,
        initializer_range=0.02,
        zero_out_proj_from=None,
        device=None,
        dtype=None,
        **mixer_kwargs,
    ):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("n_layer", n_layer)
        if zero_out_proj_from is not None and (
            isinstance(zero_out_proj_from, bool)
            or not isinstance(zero_out_proj_from, int)
            or not 0 <= zero_out_proj_from < n_layer
        ):
            raise ValueError(
                f"zero_out_proj_from must be None or a layer index in 0..{n_layer - 1} (n_layer = {n_layer}), "
                f"got {zero_out_proj_from!r}."
            )
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("pad_vocab_size_multiple", pad_vocab_size_multiple)
        _check_backend(backend)
        self.d_model, self.n_layer, self.vocab_size = d_model, n_layer, vocab_size
        self.tie_embeddings = tie_embeddings
        padded = vocab_size + (-vocab_size) % pad_vocab_size_multiple
        self.padded_vocab_size = padded
        self.backbone = MixerModel(
            d_model,
            n_layer,
            padded,
            norm_epsilon=norm_epsilon,
            residual_in_fp32=residual_in_fp32,
            initializer_range=initializer_range,
            device=device,
            dtype=dtype,
            d_state=d_state,
            d_conv=d_conv,
            expand=expand,
            backend=backend,
            block_cls=type(self).block_cls,
            **mixer_kwargs,
        )
        self.lm_head = nn.Linear(d_model, padded, bias=False, device=device, dtype=dtype)
        self.apply(lambda m: init_weights(m, n_layer, initializer_range))
        if zero_out_proj_from is not None:
            with torch.no_grad():
                for layer in self.backbone.layers[zero_out_proj_from:]:
                    layer.mixer.out_proj.weight.zero_()
        if tie_embeddings:
            self.lm_head.weight = self.backbone.embedding.weight

    @property
    def backend(self) -> str:
        return self.backbone.layers[0].mixer.backend

    @backend.setter
    def backend(self, value: str) -> None:
        _check_backend(value)
        for layer in self.backbone.layers:
            layer.mixer.backend = value

    def forward(self, input_ids, return_internals=False, *, states=None, return_states=False):
        """input_ids (B, L) int64 → logits (B, L, V_pad); with ``return_internals`` also a list of
        one :class:`MambaInternals` per layer; with ``return_states`` also (last) the list of
        per-layer :class:`LayerState` after the sequence. ``states`` continues from such a list:
        ``model(b, states=model(a, return_states=True)[1])`` equals the last ``len(b)`` logits of
        ``model(a ‖ b)`` (prefix-state evaluation, PyTorch backends)."""
        check_token_ids(input_ids, self.vocab_size)
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}.")
        out = self.backbone(input_ids, return_internals=return_internals, states=states, return_states=return_states)
        if not isinstance(out, tuple):
            return self.lm_head(out)
        return (self.lm_head(out[0]),) + tuple(out[1:])
