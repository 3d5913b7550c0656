"""Models with mamba-ssm's parameter names: the Mamba-1 mixer, its Block and the LM (``mamba.py``)."""

from .mamba import Block, Mamba, MambaInternals, MambaLMHeadModel, MixerModel, RMSNorm, init_weights

__all__ = ["Block", "Mamba", "MambaInternals", "MambaLMHeadModel", "MixerModel", "RMSNorm", "init_weights"]
