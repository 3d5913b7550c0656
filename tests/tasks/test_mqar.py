"""Tests for the zoology-compatible MQAR generator (mamba_recall.tasks.mqar)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from mamba_recall.tasks import (
    IGNORE_INDEX,
    MQARBatch,
    MQARConfig,
    mqar_batch,
    multiquery_ar,
)


def _gen(**kw):
    args = dict(vocab_size=64, num_examples=50, input_seq_len=32, seed=0, num_kv_pairs=4)
    args.update(kw)
    return multiquery_ar(**args)


# ----------------------------------------------------------------------------- zoology transcript


def _zoology_reference(
    vocab_size, num_examples, input_seq_len, seed, power_a=0.01, num_kv_pairs=8, num_passes=1, random_non_queries=True
):
    """Transcription of zoology's vectorised code, with the GLOBAL RNGs (as zoology does).

    Written from zoology's 2024 ``associative_recall.py::multiquery_ar`` plus d88d6f5's ``num_passes``
    tiling (the context ``k1 v1 … kK vK`` repeated ``num_passes`` times, in the same order each
    pass; the d88d6f5 file itself was not available offline); it pins that our local-RNG code
    consumes the stream the same way.

    Global NumPy / torch RNG state is saved and restored around the call.
    """
    np_state = np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            np.random.seed(seed)
            torch.manual_seed(seed)  # zoology leaves torch unseeded; we seed to compare fillers
            context_size = num_kv_pairs * 2
            key_vocab_size = vocab_size // 2
            key_choices = np.arange(1, key_vocab_size)
            value_choices = np.arange(key_vocab_size, vocab_size)
            keys_unshuffled = np.tile(key_choices, (num_examples, 1))
            keys = np.apply_along_axis(np.random.choice, 1, keys_unshuffled, replace=False, size=num_kv_pairs)
            values_unshuffled = np.tile(value_choices, (num_examples, 1))
            values = np.apply_along_axis(np.random.choice, 1, values_unshuffled, replace=False, size=num_kv_pairs)
            kvs = np.zeros((num_examples, context_size), dtype=np.int64)
            kvs[:, 0::2] = keys
            kvs[:, 1::2] = values
            kvs = np.tile(kvs, (1, num_passes))
            context_size = context_size * num_passes
            space = (input_seq_len - context_size) // 2
            p = power_a * np.arange(1, space + 1) ** (power_a - 1)
            p = p / p.sum()
            x = np.stack([np.arange(space, dtype=int)] * num_examples)
            gaps = np.apply_along_axis(np.random.choice, axis=1, arr=x, replace=False, p=p, size=num_kv_pairs)
            queries = np.zeros((num_examples, input_seq_len - context_size + 1), dtype=np.int64)
            np.put_along_axis(queries, (gaps * 2), values=keys, axis=1)
            examples = np.concatenate([kvs, queries], axis=1)
            labels = np.full((num_examples, input_seq_len + 1), -100, dtype=np.int64)
            np.put_along_axis(labels, (gaps * 2) + context_size + 1, values=values, axis=1)
            inputs, labels = torch.tensor(examples[:, :-1]), torch.tensor(labels[:, 1:])
            if random_non_queries:
                inputs[inputs == 0] = torch.randint(vocab_size, size=inputs.shape)[inputs == 0]
            return inputs, labels
    finally:
        np.random.set_state(np_state)


@pytest.mark.parametrize(
    "kw",
    [
        dict(vocab_size=64, num_examples=20, input_seq_len=32, seed=3, num_kv_pairs=4),
        dict(vocab_size=100, num_examples=7, input_seq_len=40, seed=11, num_kv_pairs=3, num_passes=2, power_a=1.0),
        dict(vocab_size=50, num_examples=5, input_seq_len=24, seed=0, num_kv_pairs=6, random_non_queries=False),
    ],
)
def test_matches_zoology_global_rng_transcript(kw):
    inputs, labels = _zoology_reference(**kw)
    b = multiquery_ar(**kw)
    assert torch.equal(b.inputs, inputs)
    assert torch.equal(b.labels, labels)


def test_does_not_touch_global_rngs():
    np.random.seed(1234)
    torch.manual_seed(1234)
    expected_np = np.random.rand(3)
    expected_t = torch.rand(3)
    np.random.seed(1234)
    torch.manual_seed(1234)
    _gen()
    assert np.array_equal(np.random.rand(3), expected_np)
    assert torch.equal(torch.rand(3), expected_t)


# ----------------------------------------------------------------------------- structure


def test_shapes_and_dtypes():
    b = _gen()
    assert isinstance(b, MQARBatch)
    assert b.inputs.shape == b.labels.shape == (50, 32)
    assert b.inputs.dtype == b.labels.dtype == torch.int64
    assert b.keys.shape == b.values.shape == b.gaps.shape == b.query_positions.shape == (50, 4)
    assert len(b) == 50
    assert b.seed == 0
    assert b.config == MQARConfig(vocab_size=64, input_seq_len=32, num_kv_pairs=4, num_examples=50)
    assert int(b.inputs.min()) >= 0 and int(b.inputs.max()) < 64


@pytest.mark.parametrize("random_non_queries", [True, False])
def test_context_keys_values_ranges_and_distinct(random_non_queries):
    V, K = 64, 4
    b = _gen(random_non_queries=random_non_queries)
    ctx_keys = b.inputs[:, 0 : 2 * K : 2]
    ctx_vals = b.inputs[:, 1 : 2 * K : 2]
    assert torch.equal(ctx_keys, b.keys) and torch.equal(ctx_vals, b.values)
    assert bool(((ctx_keys >= 1) & (ctx_keys < V // 2)).all())
    assert bool(((ctx_vals >= V // 2) & (ctx_vals < V)).all())
    for row_k, row_v in zip(ctx_keys.tolist(), ctx_vals.tolist()):
        assert len(set(row_k)) == K
        assert len(set(row_v)) == K
    # context labels are all ignored
    assert bool((b.labels[:, : 2 * K] == IGNORE_INDEX).all())


def test_each_key_queried_exactly_once_without_fillers():
    K = 4
    b = _gen(random_non_queries=False)
    ctx = 2 * K
    for row in range(b.inputs.shape[0]):
        region = b.inputs[row, ctx:].tolist()
        for k in b.keys[row].tolist():
            assert region.count(k) == 1
        # everything else in the query region is the 0 filler
        assert sorted(t for t in region if t != 0) == sorted(b.keys[row].tolist())
        assert region.count(0) == len(region) - K


@pytest.mark.parametrize("random_non_queries", [True, False])
def test_labels_at_queries_equal_bound_values(random_non_queries):
    K = 4
    b = _gen(random_non_queries=random_non_queries)
    ctx = 2 * K
    n_labelled = (b.labels != IGNORE_INDEX).sum(dim=1)
    assert bool((n_labelled == K).all())
    for row in range(b.inputs.shape[0]):
        binding = dict(zip(b.inputs[row, 0:ctx:2].tolist(), b.inputs[row, 1:ctx:2].tolist()))
        pos = torch.nonzero(b.labels[row] != IGNORE_INDEX).flatten().tolist()
        assert sorted(pos) == sorted(b.query_positions[row].tolist())
        for t in pos:
            assert t >= ctx
            assert (t - ctx) % 2 == 0  # even offset of the query region
            tok = int(b.inputs[row, t])
            assert tok in binding
            assert int(b.labels[row, t]) == binding[tok]
        # every key is queried (labels cover all keys)
        assert sorted(int(b.inputs[row, t]) for t in pos) == sorted(binding)


def test_fillers_replace_zeros_only_outside_queries():
    a = _gen(random_non_queries=False)
    b = _gen(random_non_queries=True)
    nonzero = a.inputs != 0
    assert torch.equal(a.inputs[nonzero], b.inputs[nonzero])
    assert torch.equal(a.labels, b.labels)
    # fillers drawn from the whole vocabulary: many distinct, non-zero tokens appear
    fillers = b.inputs[~nonzero]
    assert int((fillers != 0).sum()) > 0.9 * fillers.numel()
    assert len(set(fillers.tolist())) > 40
    assert int(fillers.min()) >= 0 and int(fillers.max()) < 64


def test_num_passes_tiles_context():
    K, P, L = 3, 3, 36
    b = multiquery_ar(
        vocab_size=128, num_examples=10, input_seq_len=L, seed=5, num_kv_pairs=K, num_passes=P, random_non_queries=False
    )
    block = b.inputs[:, : 2 * K]
    for pass_ in range(P):
        assert torch.equal(b.inputs[:, 2 * K * pass_ : 2 * K * (pass_ + 1)], block)
    ctx = 2 * K * P
    assert bool((b.query_positions >= ctx).all())
    assert bool(((b.query_positions - ctx) % 2 == 0).all())
    assert bool((b.gaps < (L - ctx) // 2).all())
    assert bool((b.labels[:, :ctx] == IGNORE_INDEX).all())
    # queries after the tiled context: each key once
    for row in range(10):
        region = b.inputs[row, ctx:].tolist()
        for k in b.keys[row].tolist():
            assert region.count(k) == 1


def test_seed_determinism():
    a, b, c = _gen(seed=7), _gen(seed=7), _gen(seed=8)
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.inputs, c.inputs)
    assert not torch.equal(a.labels, c.labels)


def test_mqar_batch_matches_function():
    cfg = MQARConfig(vocab_size=64, input_seq_len=32, num_kv_pairs=4, num_examples=12, power_a=0.5, num_passes=2)
    a = mqar_batch(cfg, seed=9)
    b = multiquery_ar(
        vocab_size=64, num_examples=12, input_seq_len=32, seed=9, power_a=0.5, num_kv_pairs=4, num_passes=2
    )
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.labels, b.labels)
    assert a.config == cfg and a.seed == 9
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.vocab_size = 10  # type: ignore[misc]


def test_power_law_concentrates_early_vs_uniform():
    # space = (128 - 8) // 2 = 60 slots, 4 keys per example, 2000 examples
    kw = dict(vocab_size=256, num_examples=2000, input_seq_len=128, seed=0, num_kv_pairs=4, random_non_queries=False)
    steep_gaps = multiquery_ar(power_a=0.01, **kw).gaps
    flat_gaps = multiquery_ar(power_a=1.0, **kw).gaps
    steep, flat = steep_gaps.flatten().double(), flat_gaps.flatten().double()
    space = 60
    # uniform: mean slot ≈ (space-1)/2 = 29.5 (sampling w/o replacement keeps the marginal uniform)
    assert abs(flat.mean().item() - (space - 1) / 2) < 1.5
    early = space // 4
    assert abs((flat < early).double().mean().item() - early / space) < 0.03
    # power_a = 0.01: p(g) ∝ (g+1)^-0.99, most mass in the first slots
    assert steep.mean().item() < 0.7 * flat.mean().item()
    assert (steep < early).double().mean().item() > 0.5
    # slot 0 is queried in most examples under the power law (~62% here), vs 4/60 ≈ 7% uniform
    assert (steep_gaps == 0).any(dim=1).double().mean().item() > 0.5
    assert (flat_gaps == 0).any(dim=1).double().mean().item() < 0.12


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(input_seq_len=31), r"input_seq_len.*even.*31"),
        (dict(vocab_size=32), r"vocab_size.*> input_seq_len.*vocab_size=32"),
        (dict(vocab_size=20), r"vocab_size.*> input_seq_len"),
        (dict(num_kv_pairs=9), r"num_kv_pairs=9.*num_passes"),
        (dict(num_kv_pairs=4, num_passes=4), r"num_kv_pairs=4.*too large.*num_passes=4"),
        (dict(num_kv_pairs=0), r"num_kv_pairs.*>= 1"),
        (dict(power_a=0.0), r"power_a.*> 0"),
        (dict(power_a=-1.0), r"power_a.*> 0"),
        (dict(power_a=float("nan")), r"power_a"),
        (dict(power_a=float("inf")), r"power_a"),
        (dict(power_a="0.01"), r"power_a must be a real number"),
        (dict(power_a=1e6), r"power_a=1000000\.0 gives a degenerate"),
        (dict(num_examples=-1), r"num_examples must be >= 1.*-1"),
        (dict(num_examples=0), r"num_examples must be >= 1"),
        (dict(num_examples=2.0), r"num_examples must be an integer"),
        (dict(num_passes=0), r"num_passes must be >= 1"),
        (dict(vocab_size=True), r"vocab_size must be an integer"),
        (dict(random_non_queries=1), r"random_non_queries must be a bool"),
        (dict(seed=-1), r"seed must be in \[0, 2\*\*32\)"),
        (dict(seed=2**32), r"seed must be in"),
        (dict(seed=1.5), r"seed must be an integer"),
    ],
)
def test_validation_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        _gen(**kw)


def test_config_validates_and_mqar_batch_type_check():
    with pytest.raises(ValueError, match=r"input_seq_len must be even"):
        MQARConfig(input_seq_len=63)
    with pytest.raises(ValueError, match=r"config must be an MQARConfig"):
        mqar_batch({"vocab_size": 64}, seed=0)  # type: ignore[arg-type]


def test_numpy_integer_arguments_accepted():
    a = _gen(vocab_size=np.int64(64), num_kv_pairs=np.int32(4), seed=np.int64(0))
    b = _gen()
    assert torch.equal(a.inputs, b.inputs)


# ----------------------------------------------------------------------------- golden stream

# Computed once from this implementation; pins the exact random stream.
_GOLDEN_KW = dict(vocab_size=16, num_examples=2, input_seq_len=12, seed=0, num_kv_pairs=2)
_GOLDEN_INPUTS_NOFILL = [
    [7, 14, 3, 15, 7, 0, 0, 0, 0, 0, 3, 0],
    [2, 10, 1, 11, 2, 0, 0, 0, 1, 0, 0, 0],
]
_GOLDEN_INPUTS = [
    [7, 14, 3, 15, 7, 11, 3, 7, 9, 3, 3, 2],
    [2, 10, 1, 11, 2, 12, 10, 1, 1, 7, 7, 14],
]
_GOLDEN_LABELS = [
    [-100, -100, -100, -100, 14, -100, -100, -100, -100, -100, 15, -100],
    [-100, -100, -100, -100, 10, -100, -100, -100, 11, -100, -100, -100],
]


def test_golden_stream():
    b = multiquery_ar(random_non_queries=False, **_GOLDEN_KW)
    assert b.inputs.tolist() == _GOLDEN_INPUTS_NOFILL
    assert b.labels.tolist() == _GOLDEN_LABELS
    b = multiquery_ar(**_GOLDEN_KW)
    assert b.inputs.tolist() == _GOLDEN_INPUTS
    assert b.labels.tolist() == _GOLDEN_LABELS


# --------------------------------------------------------------------------- one generator, variants as options


def test_mqar_variants_are_options_of_one_generator():
    from mamba_recall.tasks.mqar import VARIANTS, batch_fn, mqar
    from mamba_recall.theory.mqar_constructions import gen_mqar

    assert VARIANTS == ("standard", "repeated_keys", "repeated_queries", "paper003", "zoology")
    for variant, kw in (
        ("standard", {}),
        ("repeated_keys", {"Nk": 2}),
        ("repeated_queries", {"Nq": 2}),
        ("zoology", {"power_a": 0.5}),
    ):
        x, y = mqar(64, 4, 24, 10, 3, variant=variant, **kw)
        assert x.shape == y.shape == (10, 24) and x.dtype == y.dtype == torch.int64
        assert torch.equal(x, mqar(64, 4, 24, 10, 3, variant=variant, **kw)[0])
        assert ((y != IGNORE_INDEX).sum(1) >= 4).all()
        assert (y[y != IGNORE_INDEX] >= 32).all()  # values from [V/2, V)
    # zoology variant = multiquery_ar's tensors
    b = multiquery_ar(64, 10, 24, 3, power_a=0.5, num_kv_pairs=4)
    x, y = mqar(64, 4, 24, 10, 3, variant="zoology", power_a=0.5)
    assert torch.equal(x, b.inputs) and torch.equal(y, b.labels)
    # paper 003's layout: keys 0..κ-1, labels = value index in [0, |V|); gen_mqar is this variant
    ids, labels = mqar(20, 6, 40, 50, 0, variant="paper003")
    assert torch.equal(ids, gen_mqar(50, 40, 6, 20, seed=0)[0]) and torch.equal(labels, gen_mqar(50, 40, 6, 20, 0)[1])
    assert (labels != IGNORE_INDEX).sum(1).eq(6).all() and int(labels.max()) < 20
    a, b2 = (
        batch_fn(64, 4, 24, 5, 10, task="repeated_keys", Nk=2)(2),
        mqar(64, 4, 24, 5, 12, variant="repeated_keys", Nk=2),
    )
    assert torch.equal(a[0], b2[0]) and torch.equal(a[1], b2[1])


def test_mqar_variant_options_are_checked():
    from mamba_recall.tasks.mqar import batch_fn, mqar

    with pytest.raises(ValueError, match="unknown MQAR variant"):
        mqar(64, 4, 24, 2, 0, variant="keys")
    with pytest.raises(ValueError, match="takes no option Nk"):
        mqar(64, 4, 24, 2, 0, Nk=2)
    with pytest.raises(ValueError, match="takes no option pad"):
        mqar(64, 4, 24, 2, 0, variant="repeated_queries", pad="zero")
    with pytest.raises(ValueError, match="T=8 must be >= 3"):
        mqar(20, 3, 8, 2, 0, variant="paper003")
    with pytest.raises(ValueError, match="unknown task"):
        batch_fn(64, 4, 24, 2, 0, task="induction")
