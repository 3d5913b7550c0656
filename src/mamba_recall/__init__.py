r"""mamba_recall: the library behind the Mamba recall book.

Notation (the book's glossary page, ``book/glossary.md``, holds the same table): each symbol of the book, its name in
this library (with its shape) and each paper's own letter; papers 001, 000, 002, 003, 004 are the sources of
Chapters 0, 1, 2, 3, 4.

<!-- GLOSSARY TABLE -->
| symbol here | meaning | code name (shape) | paper 001 (Ch. 0) | paper 000 (Ch. 1) | paper 002 (Ch. 2) | paper 003 (Ch. 3) | paper 004 (Ch. 4) | clashes |
|---|---|---|---|---|---|---|---|---|
| b | batch size | `b`, `batch` (first axis everywhere) | – | – | – | – | – | – |
| l, T | sequence length | `l` in scan shapes `(b, d, l)`; `T`, `seq_len` in tasks; `L` in `tasks.mqar` | 3 tokens, index t | T (Lemma 1: positions x_0..x_T) | L (context length) | T | T (last context step) | L is the value set in 000 and the number of facts in 004 |
| d_model | model width (embedding size) | `d_model` | d (input dimension, 1) | d = 2\|V\| (doubled one-hot) | D | d | d | D is the skip parameter in 004 and in mamba-ssm (`D` below) |
| d_inner | SSM channels, expand · d_model | `d_inner`; written E in the docstrings of `models.mamba`, `models.mamba2` | d | d (no expansion) | D_in = expand × D | d (no expansion) | channel i of d | E is paper 002's embedding matrix (see E) |
| expand | inner expansion factor | `expand` | – | – | expand | – | – | – |
| N | state size per channel | `d_state`; `N` in `theory` | N = 2 | N | N | N | N | – |
| d_conv | causal conv width | `d_conv` | – | 2 (fixed c_0, c_1, Eq. 1) | D_conv | 2 (c_0, c_1, b; Eq. 54) | – | – |
| Δ | step size, per channel and position | `delta` `(b, d, l)`; `dt`, `dt_proj`, `dt_bias` in models; `W_delta` in `models.simplified_recall` | Δ = softplus(W_Δ u) | Δ_t = Softplus(W_Δ x̂_t), W_Δ ∈ R^{d×d} | Δ_t = SoftPlus(S_Δ x̂_t) | Δ(t), Δ_t | Δ_t = softplus(W_Δ x_t) (Eq. 5) | – |
| A | continuous state matrix (diagonal, negative) | `A` `(d, N)` = −exp(`A_log`); Mamba-2: one scalar per head | A | Λ ∈ R^{d×N} | A ∈ R^N | Λ = −diag(λ_1..λ_N) (Mamba-2: scalar λ) | Λ_n (S4D init −½ + 2πin) | Λ is the number of layers in 002 |
| λ | decay rate(s) | `lam` in `theory.haar` | – | – | – | λ_n ≥ 0, continuous (Λ = −diag λ) | λ_n = exp(Δ_t Λ_n), the discrete pole | 003's λ is a rate, 004's a discrete eigenvalue |
| Ā | discrete transition exp(Δ A) | `decay` `(b, d, l, N)` in `scan.reference`; `analysis.channels.layer_A` | Ā | exp(Λ ⊙ (Δ_t ⊗ 1_N)), "forgetting factor" | Ā_t | Λ̄_t (Eq. 5) | **A**_t (Eq. 1) | 004 writes the discrete matrix as A_t |
| B | input projection of the state | `B` `(b, N, l)` (or `(d, N)` fixed); `x_proj` | B = W_B u | B(x̂_t) ∈ R^N | B_t = S_B x̂_t | B_t, B(x_t) | – (folded into **B**_t) | – |
| B̄ | discrete input: Δ B (Euler, Mamba) or ZOH | `discretization="euler"` / `"zoh"` | B̄ = Δ B | (Δ_t ⊙ x̂_t) ⊗ B, "input term" | B̄_t = Δ_t B_t | B̄_t (ZOH, Eq. 5; Euler as in Mamba) | **B**_t (Eq. 1) | – |
| C | readout of the state | `C` `(b, N, l)` | C = W_C u | C(x̂_t) | C_t = S_C x̂_t | C_t | **C**_t | – |
| D | skip connection y += D ⊙ u | `D` `(d,)` | – | – | (D is the width) | – | **D**^(i) (Eq. 1) | D: skip here and in 004, model width in 002 |
| h | SSM state | last state `(b, d, N)`; `initial_state` | x (the state; u is the input) | h_t ∈ R^{d×N} | h_t ∈ R^{D_in×N} | h_t, h(t) | h_t^(i) | 001 calls the state x |
| u, x | SSM input; tokens | `u` `(b, d, l)` in scans; `x`/`ids` for tokens | u | x (tokens), x̂_t (conv output) | x (one-hot), x^e (embedded), x̂ (SSM input) | x_t, x̂_t | x_t | – |
| z | gate branch | `z` `(b, d, l)` | – | disabled | ẑ | g(x_t) (Eq. 14g) | – | – |
| E | embedding matrix | `embedding` (`nn.Embedding`, rows = tokens) | – | one-hot [e_v e_v] | E ∈ R^{D×V} | embedding k e_i, v e_j (Eq. 53) | – | E means inner width in our model docstrings; the ensemble size is `n_members` |
| W_o | unembedding / output layer | `lm_head`; `W_o` in `models.simplified_recall`, `theory` | – | W_o = [−I I] | E^⊤ (readout, Eq. 12) | W_o (Eq. 59) | – | – |
| \|V\| | vocabulary size | `vocab_size`, `V` | – | \|V\| (vocabulary V) | V = \|𝒱\| | \|V\| | – | 002's V is the size, 000's V the set |
| \|K\| | number of keys (Ch. 1) | `num_keys` | – | \|K\| | V_k (key vocabulary) | κ | – | – |
| N_f | facts: key–value pairs in the context | `Nf` (`tasks.mqar`) | – | – | N_f | κ | L (triples s r o) | – |
| κ | pairs (= distinct keys) in paper 003's MQAR | `kappa` | – | – | N_f | κ | – | – |
| n_ε | longest noise run | `max_noise` | – | n_ε | – | – | – | – |
| M | heads; JL matrix; channel persistence | `nheads` (H in `models.mamba2`); `jl_matrix`; `analysis.channels` `M` | – | – | M (number of SSM heads) | M ∈ {±1/√p}^{p×n} (Lemma 4) | 𝓜^(i) (Eq. 3) | three meanings across 002, 003, 004 |
| P, p | head size; JL size; cut-off | `headdim`; `p`, `pk`, `pv`; `p` in `analysis.channels.identify` | – | – | P = D/M; p = head pattern | p (JL dimension), p_k, p_v | P^(i)(τ) (Eq. 4), p (cut-off) | – |
| τ | long-term threshold | `tau` | – | – | – | – | τ (Eq. 4) | – |
| Λ (layers) | number of layers | `n_layer` | – | 1 layer | Λ | 1 layer | layer index | see A: Λ is also a state matrix |
| j, k | Haar scale, shift | `j`, `k` (`theory.haar`) | – | – | – | j, k (Eq. 10) | – | k is also a key and an embedding scale in 003 |
<!-- END GLOSSARY TABLE -->

Modules: ``scan`` (selective scans and their backends), ``models`` (Mamba block and LM with
mamba-ssm parameter names), ``tasks`` (data generators), ``train`` (the training loop),
``results`` (result bundles with provenance), ``runstore`` (resumable training grids), ``presets``
(ci / cpu-hours / paper sizes), ``claims`` (every claim of the four papers, its declared verdict rule and
the generated scorecard), ``plots`` and ``widgets`` (charts and explorers; ``pip install 'mamba_recall[book]'``),
``cli``.

The main entry points, importable from the package itself (loaded on first use, so ``import mamba_recall``
stays fast and imports no torch)::

    from mamba_recall import selective_scan, ssd_scan             # scan: Mamba-1 / Mamba-2 scans
    from mamba_recall import Mamba, MambaLMHeadModel               # models: mixer and LM (mamba-ssm names)
    from mamba_recall import Mamba2, Mamba2LMHeadModel             # models.mamba2
    from mamba_recall import MQARConfig, mqar_batch, multiquery_ar # tasks: the MQAR generator
    from mamba_recall.train import train, evaluate                 # the training loop
    from mamba_recall.train import Recipe, Stopping                # its optimiser / schedule and stopping rule
    from mamba_recall import claims; claims.check("001/Delta1", ..., record=False)

and the modules above as attributes (``mamba_recall.claims``, ``mamba_recall.train``, ...). Files of the book
(``results/``, ``_build/``) are found through ``mamba_recall.paths``: inside a checkout as always, elsewhere
from ``MAMBA_RECALL_ROOT`` (see that module).
"""

import importlib as _importlib

__version__ = "0.2.0"

#: public name -> module that defines it (imported on first access: PEP 562)
_EXPORTS = {
    "selective_scan": "scan",
    "ssd_scan": "scan",
    "Mamba": "models",
    "MambaLMHeadModel": "models",
    "Mamba2": "models.mamba2",
    "Mamba2LMHeadModel": "models.mamba2",
    "MQARConfig": "tasks",
    "mqar_batch": "tasks",
    "multiquery_ar": "tasks",
}
#: modules reachable as attributes without importing them first
_MODULES = (
    "analysis",
    "claims",
    "models",
    "paths",
    "presets",
    "results",
    "runstore",
    "scan",
    "tasks",
    "theory",
    "train",
)

__all__ = [*_EXPORTS, *_MODULES]


def __getattr__(name: str):
    # importlib with strings, not ``from .scan import ...``: this package is the lowest layer
    # (tests/base/test_layering.py) and must not import the layers above it when it is imported.
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    elif name in _MODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*(n for n in globals() if not n.startswith("_") or n.startswith("__")), *__all__})
