r"""Mamba-1 block and language model with mamba-ssm's parameter names, runnable on the CPU.

Official implementation: ``mamba_ssm/modules/mamba_simple.py`` (``Mamba``, slow path),
``mamba_ssm/modules/block.py`` (``Block``) and ``mamba_ssm/models/mixer_seq_simple.py``
(``MixerModel``, ``MambaLMHeadModel``, ``_init_weights``), state-spaces/mamba, Apache-2.0.
mamba-ssm's own module has no CPU path (when ``causal_conv1d`` is missing, ``Mamba.forward`` falls
back to ``nn.Conv1d`` but still calls the CUDA ``selective_scan_fn``), so this is a
re-implementation with the *same parameter names, shapes and initialisation*: one ``state_dict``
loads into either. The scan runs on the backend chosen by ``backend`` (see
:mod:`mamba_recall.scan`): ``"chunked"`` / ``"reference"`` in PyTorch, or ``"mamba_ssm"``'s CUDA
kernel; ``"auto"`` picks ``mamba_ssm`` for CUDA inputs when it imports,
else ``chunked``.

The mixer's equations, with their shapes and the line of ``mamba_simple.Mamba.forward`` each one follows, are
written out beside the code that implements them (``_mixer.py``, :class:`Mamba`).

All randomness of the initialisation comes from PyTorch's global RNG: call
``torch.manual_seed(seed)`` before constructing a model to make it reproducible.

The modules, this package's internals (import every name from ``mamba_recall.models.mamba``):

* ``_mixer``: the argument checks every model shares (:func:`check_positive_int`, :func:`check_token_ids`,
  :func:`at_least_fp32`), what both mixers build alike (their checked sizes :func:`mixer_sizes`, the initial Δ
  bias :func:`dt_bias_init`, the causal depthwise convolution :func:`causal_conv1d`, also S6's and the
  Transformer's), the recurrent state :class:`LayerState`, :class:`MambaInternals` and the mixer :class:`Mamba`
  (with the mixer's equations);
* ``_lm``: the model around the mixer: :class:`RMSNorm`, :class:`Block`, :func:`init_weights`,
  :class:`MixerModel` and :class:`MambaLMHeadModel`.
"""

from __future__ import annotations

from ._lm import Block, MambaLMHeadModel, MixerModel, RMSNorm, init_weights
from ._mixer import (
    LayerState,
    Mamba,
    MambaInternals,
    at_least_fp32,
    causal_conv1d,
    check_positive_int,
    check_token_ids,
    dt_bias_init,
    mixer_sizes,
)

__all__ = [
    "Block",
    "LayerState",
    "Mamba",
    "MambaInternals",
    "MambaLMHeadModel",
    "MixerModel",
    "RMSNorm",
    "at_least_fp32",
    "causal_conv1d",
    "check_positive_int",
    "check_token_ids",
    "dt_bias_init",
    "init_weights",
    "mixer_sizes",
]

# the old private name of check_positive_int, kept importable at this path
_check_positive_int = check_positive_int
