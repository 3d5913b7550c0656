r"""Multi-query associative recall (MQAR): the one generator of the library, with the papers' variants as options.

:func:`mqar` ``(V, N_f, L, n, seed, *, variant=...)`` returns ``(inputs, labels)``, int64 ``(n, L)``, labels
``IGNORE_INDEX`` except at the query positions, where the target (the value) sits *at the query token*:

=====================  =========================================================================================
``variant``            the data
=====================  =========================================================================================
``"standard"``         (default) zoology's MQAR distribution, vectorised in torch (paper 002's data; keys from
                       ``[1, V/2)``, values from ``[V/2, V)``, ``power_a=1`` uniform query gaps as the authors'
                       [code]; ``pad="full"`` fills with uniform tokens of ``[0, V)``, ``"zero"`` leaves 0).
                       Sequential weighted sampling without replacement ≡ Gumbel-top-k: ~1 ms per 128×64
                       batch instead of ~25 ms for the zoology-exact loop below.
``"repeated_keys"``    paper 002, App. G / Remark 3 ([code] ``multiquery_ar_repeated_keys``): ``Nk`` chunks over
                       the same keys (re-permuted per chunk, fresh values per chunk), the canonical chunk last;
                       the label is the value of the **last** occurrence; uniform gaps. Needs ``2 N_f (Nk+1) ≤ L``.
``"repeated_queries"`` paper 002, App. G / Remark 5 ([code] ``multiquery_ar_repeated_queries``): the query area
                       is split into ``Nq`` sections of length ``(L − 2N_f)/Nq``, each holding all ``N_f``
                       queries at even offsets with uniform gaps; every occurrence is labelled.
                       ``post_query="full"`` ([code]) pads uniformly; ``"values"`` puts a random *value* token
                       after every query (the paper's examples, Remark 5's 3/4 prediction).
``"paper003"``         paper 003, App. D.3 (with distinct keys): ``V`` is the number of *values* |V| and the
                       vocabulary is κ + |V| (κ = ``N_f``): keys a permutation of ``0..κ−1``, values
                       ``κ + randint(|V|)``, noise values elsewhere; κ query positions uniform without
                       replacement in ``2κ..L−1``, each key queried once in random order; ``labels`` = the value
                       index (in ``[0, |V|)``). Needs ``L ≥ 3κ``. numpy ``default_rng(seed)``.
``"zoology"``          :func:`multiquery_ar` below, zoology's exact RNG call sequence (``power_a`` default 0.01).
=====================  =========================================================================================

:func:`batch_fn` makes a ``make_batch(step)`` for :func:`mamba_recall.train.train` (seed ``base_seed + step``).
The rest of this docstring specifies :func:`multiquery_ar`, the zoology reference the other variants follow.

Zoology's MQAR
==============

This module reproduces the data generator of HazyResearch/zoology,
``zoology/data/multiquery_ar.py::multiquery_ar`` at commit ``d88d6f5``
(the file was ``zoology/data/associative_recall.py`` before commit ``dbcb60d``;
the 2024 version is the ``num_passes=1`` special case). The semantics are
restated below, step by step.

The task
--------
Let :math:`V` be the vocabulary size, :math:`L` the sequence length, :math:`K`
the number of key-value pairs and :math:`P` the number of passes. The
vocabulary is split in two halves:

* **keys** :math:`k_1, \dots, k_K` are drawn *without replacement* from
  :math:`\{1, \dots, \lfloor V/2 \rfloor - 1\}` (token 0 is reserved as the
  filler placeholder);
* **values** :math:`v_1, \dots, v_K` are drawn *without replacement* from
  :math:`\{\lfloor V/2 \rfloor, \dots, V-1\}`.

So, within one example, keys are distinct, values are distinct, and key
:math:`k_i` is bound to value :math:`v_i`.

**Context.** Positions :math:`0 \dots 2K-1` hold
:math:`k_1\, v_1\, k_2\, v_2 \dots k_K\, v_K`; this block is repeated
:math:`P` times (same order each pass), so the context has length
:math:`C = 2KP`.

**Queries.** The remaining :math:`L - C` positions form the query region,
which has :math:`S = \lfloor (L - C)/2 \rfloor` slots (even offsets). For each
example, :math:`K` distinct slots ("gaps") :math:`g_1, \dots, g_K` are drawn
without replacement from :math:`\{0, \dots, S-1\}` with a power law

.. math::

    p(g) \;=\; \frac{a\,(g+1)^{a-1}}{\sum_{h=0}^{S-1} a\,(h+1)^{a-1}},
    \qquad a = \texttt{power\_a} > 0,

(sequential sampling without replacement, as ``numpy.random.choice`` does).
The default :math:`a = 0.01` strongly favours early slots, so queries cluster
right after the context; :math:`a = 1` is uniform. Key :math:`k_i` is written
at input position :math:`q_i = C + 2 g_i`. Every key is therefore queried
exactly once, in an order set by the gaps (not by the context order), and
every query sits at an even offset of the query region.

**Labels.** ``labels[b, t] = -100`` (:data:`IGNORE_INDEX`) everywhere except at
the query positions, where ``labels[b, q_i] = v_i``: the model must predict,
*at the query token*, the value bound to that key (next-token prediction).
zoology builds length-:math:`L+1` arrays, writes :math:`v_i` at
:math:`2 g_i + C + 1` and then takes ``inputs = ex[:, :-1]``,
``labels = lab[:, 1:]``; this module does exactly the same. Loss and accuracy
are computed only where ``labels != -100``.

**Fillers.** With ``random_non_queries=True`` (the default) every remaining 0
in the inputs (the odd offsets and unused slots of the query region) is
replaced by a token drawn uniformly from the *whole* vocabulary
:math:`\{0, \dots, V-1\}`; fillers may therefore coincide with keys or values
of the same example. With ``False`` they stay 0.

Example (``V=16, L=12, K=2, random_non_queries=False``)::

    inputs  k1 v1 k2 v2 | k2  0 k1  0  0  0  0  0
    labels  -100 x 4     | v2 -100 v1 -100 ...

Deviations from zoology (the only ones)
---------------------------------------
1. **Local RNGs.** zoology seeds the *global* NumPy RNG (``np.random.seed(seed)``)
   and draws fillers from the *global, unseeded* torch RNG. Here the NumPy draws
   use a local ``np.random.RandomState(seed)`` and the fillers a local
   ``torch.Generator`` seeded with ``seed``. The NumPy call sequence is the
   same as zoology's (keys for every example, then values for every example,
   then gaps for every example, each row via ``choice(..., replace=False)``),
   and ``np.random.seed(s)`` merely seeds the global ``RandomState`` whose
   bound methods are ``np.random.choice`` etc. So keys, values, gaps, query
   positions and labels are identical to zoology's whenever zoology's global
   NumPy seed equals ``seed``; the filler tokens are additionally identical
   when zoology's global torch RNG was seeded with ``torch.manual_seed(seed)``
   right before the call (a fresh CPU ``torch.Generator`` seeded with ``s``
   produces the same stream as the default CPU generator after
   ``torch.manual_seed(s)``). Global RNG state is never touched.
2. **No tiling of the choice population.** zoology tiles ``arange(1, V//2)``
   to an ``(n, V//2 - 1)`` array and calls ``np.apply_along_axis`` on it;
   every row is the same array, so calling ``rng.choice`` on the 1-D population
   once per row consumes the RNG identically and returns identical numbers,
   without the ``n x V/2`` memory (3 GB for zoology's 100k x 8192 segment).
   Cost note: like zoology, each key/value draw permutes the whole half
   vocabulary (that is what ``choice(..., replace=False)`` does), so 100k
   examples at ``V=8192`` take ~30 s on one CPU core; cache large segments.
3. **Validation.** zoology uses bare ``assert`` statements; here every rule
   raises ``ValueError`` with a message naming the argument, its value, the
   rule and a fix.

The package
===========

The code lives in three private modules (import every name from ``mamba_recall.tasks.mqar``):

* ``_checks``: the argument checks of the zoology generator (:func:`check_int`, the gap law
  :func:`max_power_a` and its bound :data:`MIN_SLOT_SWAP`, the seed range);
* ``_reference``: :class:`MQARConfig`, :class:`MQARBatch` and zoology's exact generator :func:`multiquery_ar`
  (:func:`mqar_batch`);
* ``_variants``: the vectorised variants behind :func:`mqar` (:data:`VARIANTS`, :data:`PADS`) and
  :func:`batch_fn`.
"""

from __future__ import annotations

from ...labels import IGNORE_INDEX
from ._checks import MIN_SLOT_SWAP, check_int, max_power_a
from ._reference import MQARBatch, MQARConfig, mqar_batch, multiquery_ar
from ._variants import PADS, VARIANTS, batch_fn, mqar

__all__ = [
    "IGNORE_INDEX",
    "MQARConfig",
    "MQARBatch",
    "VARIANTS",
    "batch_fn",
    "check_int",
    "max_power_a",
    "mqar",
    "mqar_batch",
    "multiquery_ar",
]
