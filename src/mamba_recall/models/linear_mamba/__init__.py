r"""The simplified, purely linear Mamba of paper 002 (Alg. 1, single layer; Alg. 2, Λ layers),
with an **ensemble dimension** so that many small models train in one batched forward.

Alg. 1 (one layer, no gate, no Δ, :math:`\bar A_t = 1`), Alg. 2 (Λ layers with a residual), the conv convention,
the SSM forms and the parameter shapes are written out beside the code that implements them, in
:class:`LinearMamba`'s module (``_linear.py``).

Ensembles
---------
Every parameter carries a leading ensemble axis of size ``n_members`` (``ensemble=None`` means one model and
no ensemble axis in inputs/outputs). Members may have *different sizes*: the tensors are allocated
at the largest ``(D, N, Λ)`` and ``member_sizes=[(D_e, N_e, Λ_e), ...]`` masks the unused embedding
dims, channels, state dims and layers to exactly zero (and initialises each member with its own
fan-in), so member ``e`` computes exactly what an independent model of size ``(D_e, N_e, Λ_e)`` would.
A whole (D, N) grid × seeds then trains in one forward on a GPU. Inputs may be shared ``(B, L)``
or per member ``(n_members, B, L)``; logits are ``(n_members, B, L, V)``. Compact shapes write ``(n,B,L,D)``
with ``n = n_members``; every parameter's shape (ensemble axis first) is listed in ``_linear.py``.

The modules, this package's internals (import every name from ``mamba_recall.models.linear_mamba``):

* ``_linear``: :class:`LinearMamba`, Alg. 1 / Alg. 2 with the ensemble axis (its docstring writes out the equations
  and the parameter shapes, next to the code);
* ``_multihead``: the multi-head model of Alg. 3, :class:`MultiHeadLinearMamba` (:data:`HEAD_PATTERNS`), and the
  base it shares with the ablation model (token-id checks, tied (un)embedding, ``forward``);
* ``_ablation``: the selective rows of the Tab. 10 ablation, :class:`SelectiveAblationMamba` (:data:`ABLATION_ROWS`).
"""

from __future__ import annotations

from ._ablation import ABLATION_ROWS, SelectiveAblationMamba
from ._linear import SSM_FORMS, LinearMamba
from ._multihead import HEAD_PATTERNS, HEAD_VALUES, MultiHeadLinearMamba

__all__ = ["LinearMamba", "MultiHeadLinearMamba", "HEAD_PATTERNS", "SelectiveAblationMamba", "ABLATION_ROWS"]
