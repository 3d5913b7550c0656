"""Faults of the scans, the MQAR generator and the Mamba model: nothing lost, nothing silently wrong.

Each test pins one fault that used to pass silently (a finite result from a NaN, integers from an integer
input, a raw Python error, the same data for every seed) or crash without saying what to do (a corrupt or
unwritable numba cache), and the behaviour that replaced it: the reference backend's NaN/inf semantics, or
a one-line error naming the argument, its value, the accepted range and the fix.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys

import pytest
import torch

from mamba_recall.scan import ScanInputError, selective_scan
from test_scan import TENSOR_ARGS, make_scan_inputs

CPU_BACKENDS = ("reference", "chunked", "fused")


# ----------------------------------------------------------------------------- 1. NaN and inf propagate


def _pattern(t: torch.Tensor) -> torch.Tensor:
    """Where ``t`` is NaN, +inf, −inf: (3, *t.shape) bool."""
    return torch.stack([torch.isnan(t), torch.isposinf(t), torch.isneginf(t)])


def _poison(kw: dict, name: str, value: float) -> None:
    """Set one element of argument ``name`` (not the first step, not the first channel) to ``value``."""
    t = kw[name]
    idx = (1,) * (t.dim() - 1) + (2,) if t.dim() > 1 else (1,)
    with torch.no_grad():
        t[idx] = value


def _patterns(backend: str, kw: dict):
    """NaN/inf patterns of the output, the last state and the gradient of every tensor argument."""
    out, last = selective_scan(**kw, backend=backend, return_last_state=True)
    names = [k for k in TENSOR_ARGS if k in kw]
    grads = torch.autograd.grad(out.sum() + last.sum(), [kw[k] for k in names])
    return [_pattern(out), _pattern(last)] + [_pattern(g) for g in grads], ["out", "last"] + [
        f"grad {k}" for k in names
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("bc", ["selective", "invariant"])
@pytest.mark.parametrize("softplus", [False, True], ids=["raw-delta", "softplus"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", TENSOR_ARGS)
def test_nonfinite_inputs_propagate_as_in_the_reference(name, value, softplus, bc, dtype):
    """One NaN/±inf in any argument gives the reference's NaN/inf pattern in the output, the last state and
    every gradient, on every CPU backend. Before: the fused float32 kernel's exp clamped its argument, so a
    NaN in A (a diverged A_log) came out finite and training went on with a finite loss. A = +inf is no decay
    rate: every backend refuses it (``test_positive_A_is_refused``)."""
    expected = None
    for backend in CPU_BACKENDS:
        kw = make_scan_inputs(
            b=2,
            d=3,
            n=4,
            L=6,
            bc=bc,
            dtype=dtype,
            seed=1,
            D=True,
            z=True,
            delta_bias=True,
            delta_softplus=softplus,
            initial_state=True,
        )
        _poison(kw, name, value)
        if name == "A" and value > 0:
            with pytest.raises(ScanInputError, match=re.escape("A has 1 entry > 0 (largest inf)")):
                _patterns(backend, kw)
            continue
        got, what = _patterns(backend, kw)
        if expected is None:
            expected = got
            continue
        for w, a, b in zip(what, got, expected):
            assert torch.equal(a, b), f"{backend}: {w} has another NaN/inf pattern than the reference"


def exp_probe(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(Δ, A) of a (1, K, 1) scan whose Δ·A is ``x`` exactly, with A ≤ 0 (a positive x through Δ = −1): the way
    to reach exp's whole range inside the kernels now that a positive A is refused."""
    K = x.numel()
    delta = torch.where(x > 0, -1.0, 1.0).to(x.dtype).view(1, K, 1)
    return delta, -x.abs()[:, None]


def test_fused_float32_exp_special_values():
    """exp inside the fused kernel (through a (1, K, 1) scan with h_0 = 1, u = 0: out = exp(Δ·A)) follows libm:
    NaN → NaN, −inf → 0, +inf and x > ln(FLT_MAX) → inf, and stays finite just below the overflow."""
    x = torch.tensor([float("nan"), float("-inf"), float("inf"), 88.8, 1e30, -1e30, 88.7, 0.0])
    K = x.numel()
    delta, A = exp_probe(x)
    out = selective_scan(
        torch.zeros(1, K, 1),
        delta,
        A,
        torch.ones(K, 1),
        torch.ones(K, 1),
        initial_state=torch.ones(1, K, 1),
        backend="fused",
    )[0, :, 0]
    assert torch.isnan(out[0])
    assert out[1] == 0 and out[5] == 0
    assert torch.isposinf(out[2:5]).all()
    assert torch.isfinite(out[6]) and out[7] == 1


# ----------------------------------------------------------------------------- 2. bad inputs, clear errors


def _kw(L=5, dtype=torch.float32, **override):
    g = torch.Generator().manual_seed(0)
    kw = dict(
        u=torch.randn(2, 3, L, generator=g, dtype=dtype),
        delta=torch.rand(2, 3, L, generator=g, dtype=dtype),
        A=-torch.rand(3, 4, generator=g, dtype=dtype),
        B=torch.randn(2, 4, L, generator=g, dtype=dtype),
        C=torch.randn(2, 4, L, generator=g, dtype=dtype),
    )
    kw.update(override)
    return kw


INT_CASES = {
    "u": dict(u=torch.randint(0, 5, (2, 3, 5))),
    "delta": dict(delta=torch.ones(2, 3, 5, dtype=torch.int32)),
    "A": dict(A=-torch.randint(1, 5, (3, 4))),
    "B": dict(B=torch.ones(2, 4, 5, dtype=torch.int64)),
    "C": dict(C=torch.ones(3, 4, dtype=torch.bool)),
    "D": dict(D=torch.ones(3, dtype=torch.int64)),
    "z": dict(z=torch.zeros(2, 3, 5, dtype=torch.int64)),
    "delta_bias": dict(delta_bias=torch.zeros(3, dtype=torch.int64)),
    "initial_state": dict(initial_state=torch.zeros(2, 3, 4, dtype=torch.int64)),
}


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("name", list(INT_CASES))
def test_non_floating_inputs_are_rejected(name, backend):
    """Before: an integer u returned integers (the values truncated), an integer A was silently upcast."""
    t = INT_CASES[name][name]
    with pytest.raises(ScanInputError, match=re.escape(f"{name} has dtype {t.dtype}")) as info:
        selective_scan(**_kw(**INT_CASES[name]), backend=backend)
    assert f"{name}.float()" in str(info.value)


@pytest.mark.parametrize("backend", ("auto",) + CPU_BACKENDS)
def test_list_u_is_rejected_clearly(backend):
    """Before: AttributeError: 'list' object has no attribute 'device'."""
    with pytest.raises(ScanInputError, match=re.escape("u must be a torch.Tensor, got list; convert it with")):
        selective_scan(**_kw(u=[[[1.0] * 5] * 3] * 2), backend=backend)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_empty_sequence_is_rejected_on_every_backend(backend):
    """Before: reference raised 'stack expects a non-empty TensorList', chunked and fused returned (b, d, 0).
    Now one rule for all: L ≥ 1."""
    with pytest.raises(ScanInputError, match=re.escape("u has shape (2, 3, 0): length 0; the scan needs at least")):
        selective_scan(**_kw(L=0), backend=backend)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (1, 3, 4)])
def test_wrong_initial_state_shape_names_the_expected_one(backend, shape):
    """Before: chunked and reference failed inside a reshape/broadcast with a raw RuntimeError."""
    msg = f"initial_state has shape {tuple(shape)}; expected (batch, channels, N) = (2, 3, 4)."
    with pytest.raises(ScanInputError, match=re.escape(msg)):
        selective_scan(**_kw(), initial_state=torch.zeros(shape), backend=backend)


# ----------------------------------------------------------------------------- 3., 4. the numba cache

# One fused forward (+ backward) in float64 through ``auto``: run in a fresh interpreter by _run_scan (the code
# below plus a call), and in this process for comparison. size "parallel" (4 × 64 × 16 × 64 elements: the
# parallel kernels) or "serial" (the serially compiled kernels, faster to build).
_SCAN_CODE = """
import warnings
import torch
from mamba_recall.scan import resolve_backend, selective_scan


def scan_once(size, backend="auto"):
    assert resolve_backend("auto", "cpu") == "fused", resolve_backend("auto", "cpu")
    b, d, N, L = (4, 64, 16, 64) if size == "parallel" else (2, 4, 3, 8)
    g = torch.Generator().manual_seed(0)
    f64 = dict(generator=g, dtype=torch.float64)
    kw = dict(u=torch.randn(b, d, L, **f64), delta=torch.randn(b, d, L, **f64),
              A=-torch.rand(d, N, **f64) * 3 - 0.1, B=torch.randn(b, 2, N, L, **f64), C=torch.randn(b, N, L, **f64),
              delta_bias=torch.randn(d, **f64), initial_state=torch.randn(b, d, N, **f64))
    for t in kw.values():
        t.requires_grad_(True)
    out, last = selective_scan(**kw, delta_softplus=True, return_last_state=True, backend=backend)
    res = {"out": out.detach(), "last": last.detach()}
    if size == "parallel":
        loss = (out * torch.randn(out.shape, **f64)).sum() + last.sum()
        res.update({"d" + k: v for k, v in zip(kw, torch.autograd.grad(loss, list(kw.values())))})
    return res
"""
_CALL = """
import sys
warnings.simplefilter("always")
torch.save(scan_once(sys.argv[2]), sys.argv[1])
"""


def _scan_here(size: str, backend: str = "auto") -> dict:
    ns: dict = {}
    exec(_SCAN_CODE, ns)
    return ns["scan_once"](size, backend)


def _run_scan(tmp_path, tag: str, size: str, **env_extra) -> tuple[dict, str]:
    """Run _SCAN_SCRIPT in a fresh interpreter with the given environment; return (results, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env.update(env_extra)
    script, out = tmp_path / "scan_once.py", tmp_path / f"{tag}.pt"
    script.write_text(_SCAN_CODE + _CALL)
    proc = subprocess.run(
        [sys.executable, str(script), str(out), size], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{tag}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return torch.load(out), proc.stderr


def _assert_bitwise_equal(a: dict, b: dict, what: str) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), f"{what}: {k} differs by {(a[k] - b[k]).abs().max().item():.3e}"


def test_float64_fused_is_bit_identical_compiled_or_loaded_from_cache(tmp_path):
    """Item 3. Before: the float64 parallel forward kernel, compiled with fastmath, gave outputs up to 1e-14
    apart in a process that had just compiled it and one that loaded it from the cache. The float64 kernels
    are strict IEEE now: a fresh compile (empty NUMBA_CACHE_DIR), a cached load and this process (the
    package's cache) agree bit for bit (outputs, last state and every gradient)."""
    cache = tmp_path / "cache"
    fresh, err = _run_scan(tmp_path, "fresh", "parallel", NUMBA_CACHE_DIR=str(cache))
    assert "RuntimeWarning" not in err, err
    assert any(cache.rglob("*.nbi")), "the fresh run wrote no cache"
    cached, err = _run_scan(tmp_path, "cached", "parallel", NUMBA_CACHE_DIR=str(cache))
    assert "RuntimeWarning" not in err, err
    _assert_bitwise_equal(fresh, cached, "fresh compile vs cached load")
    _assert_bitwise_equal(fresh, _scan_here("parallel"), "fresh compile vs this process")


@pytest.mark.parametrize("damage", ["truncated-data", "garbage-index"])
def test_corrupt_numba_cache_recompiles_with_one_warning(tmp_path, damage):
    """Item 4. Before: every fused call raised a ~35-line UnpicklingError traceback naming no file, until the
    cache folder was deleted by hand. Now: one warning naming the kernel and the folder, the kernel is
    compiled again (same numbers), the cache is rewritten, and the next process loads it silently."""
    cache = tmp_path / "cache"
    _run_scan(tmp_path, "good", "serial", NUMBA_CACHE_DIR=str(cache))
    good = _scan_here("serial")
    files = sorted(cache.rglob("*.nbc" if damage == "truncated-data" else "*.nbi"))
    assert files, "no cache files were written"
    for f in files:
        f.write_bytes(f.read_bytes()[:100] if damage == "truncated-data" else b"not a numba index")
    repaired, err = _run_scan(tmp_path, "repaired", "serial", NUMBA_CACHE_DIR=str(cache))
    _assert_bitwise_equal(good, repaired, "after recompiling")
    if damage == "truncated-data":  # a garbage index reads as "another numba version": numba recompiles itself
        assert "could not be loaded" in err and str(cache) in err and "compiling the kernel again" in err, err
    assert "Traceback" not in err, err
    again, err = _run_scan(tmp_path, "again", "serial", NUMBA_CACHE_DIR=str(cache))
    assert "RuntimeWarning" not in err, err
    _assert_bitwise_equal(good, again, "from the repaired cache")


@pytest.mark.parametrize("where", ["under-a-file", "read-only-dir"])
def test_no_writable_numba_cache_compiles_without_one(tmp_path, where):
    """Item 4. Before: with no writable cache folder, importing the kernels raised 'cannot cache function
    ...: no locator available' while ``auto`` still picked fused, so every CPU scan crashed. Now the kernels
    compile without a disk cache, with one warning naming NUMBA_CACHE_DIR as the fix, and auto is fused.
    (NUMBA_CACHE_LOCATOR_CLASSES keeps numba from falling back to the package's __pycache__.)"""
    if where == "under-a-file":
        blocker = tmp_path / "a_file"
        blocker.write_text("")
        folder = blocker / "cache"  # makedirs fails for everyone, root included
    else:
        folder = tmp_path / "read_only"
        folder.mkdir()
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        res, err = _run_scan(
            tmp_path,
            where,
            "serial",
            NUMBA_CACHE_DIR=str(folder),
            NUMBA_CACHE_LOCATOR_CLASSES="UserProvidedCacheLocator",
        )
    finally:
        if where == "read-only-dir":
            folder.chmod(stat.S_IRWXU)
    _assert_bitwise_equal(_scan_here("serial"), res, "uncached vs cached kernels")
    if where == "under-a-file" or os.geteuid() != 0:  # root may write into a read-only folder
        assert "no writable numba cache folder" in err and "set NUMBA_CACHE_DIR" in err, err
        assert err.count("no writable numba cache folder") == 1, err


# ----------------------------------------------------------------------------- 5. MQAR arguments


@pytest.mark.parametrize(
    "kw, fragment",
    [
        (dict(variant="repeated_queries", Nq=-1), "Nq must be an integer >= 1 (the number of query sections"),
        (dict(variant="repeated_queries", Nq=0), "Nq must be an integer >= 1"),
        (dict(variant="repeated_queries", Nq=1.5), "got Nq=1.5; pass e.g. Nq=2"),
        (dict(variant="repeated_keys", Nk=0), "Nk must be an integer >= 1 (the number of context chunks"),
        (dict(variant="repeated_keys", Nk=-2), "got Nk=-2; pass e.g. Nk=2"),
        (dict(n=-1), "n (the number of sequences) must be an integer >= 1, got n=-1"),
        (dict(n=2.5), "got n=2.5; pass e.g. n=64"),
        (dict(n=0, variant="repeated_keys"), "got n=0"),
        (
            dict(seed=2**64),
            "seed must be in [0, 2**64) (torch.Generator.manual_seed range), got seed=18446744073709551616",
        ),
        (dict(seed=2**70, variant="repeated_queries"), "pass e.g. seed % 2**64"),
        (dict(seed=-1, variant="paper003"), "seed must be in [0, ∞) (numpy.random.default_rng), got seed=-1"),
        (dict(seed=2**40, variant="zoology"), "seed must be in [0, 2**32)"),
        (dict(power_a=500), "power_a=500 makes the query positions (nearly) the same for every seed"),
        (dict(power_a=500), "Accepted for these sizes: 0 < power_a <= 21.59"),
        (dict(power_a=float("inf")), "power_a must be a finite number > 0"),
        (dict(power_a="0.5"), "power_a must be a real number, got '0.5'"),
        (dict(power_a=30.0, variant="zoology"), "power_a=30.0 makes the query positions (nearly) the same"),
    ],
)
def test_mqar_rejects_bad_arguments_naming_the_fix(kw, fragment):
    """Before: Nq = -1 gave sequences without a labelled query, Nq = 0 a ZeroDivisionError, Nk <= 0 and n = -1
    raw RuntimeErrors, n = 2.5 a TypeError, a seed >= 2**64 'Overflow when unpacking long long', and
    power_a = 500 the same query positions for every seed."""
    from mamba_recall.tasks.mqar import mqar

    args = dict(V=64, Nf=4, L=24, n=8, seed=0)
    args.update({k: kw.pop(k) for k in ("n", "seed") if k in kw})
    with pytest.raises(ValueError, match=re.escape(fragment)):
        mqar(**args, **kw)


def test_mqar_power_a_bound_is_where_the_seed_stops_mattering():
    """max_power_a: at the bound each neighbouring pair of likely slots still swaps with probability ≥ 1 %, so
    the (key → query position) maps vary over seeds; at 500 (accepted before) every seed gave the same map."""
    from mamba_recall.tasks.mqar import MIN_SLOT_SWAP, max_power_a, mqar

    V, Nf, L = 64, 4, 24
    space = (L - 2 * Nf) // 2
    a = max_power_a(space, Nf)
    i0 = space - Nf
    assert 1 / (1 + ((i0 + 1) / i0) ** (a - 1)) == pytest.approx(MIN_SLOT_SWAP)
    assert max_power_a(1, 1) == float("inf") and max_power_a(40, 4) > max_power_a(8, 4) > 1

    def positions(power_a, seed):
        x, y = mqar(V, Nf, L, 256, seed, power_a=power_a, pad="zero")
        hits = x[:, 2 * Nf :, None] == x[:, 0 : 2 * Nf : 2][:, None, :]  # (row, query position, key)
        assert (hits.sum(1) == 1).all()
        return hits.int().argmax(1)  # (row, key): where key j is queried

    maps = [positions(a, s) for s in range(3)]
    assert not torch.equal(maps[0], maps[1]) and not torch.equal(maps[1], maps[2])
    assert (maps[0] != maps[0][0]).any()  # not one map for every row either
    with pytest.raises(ValueError, match="the same for every seed"):
        positions(a * 1.01, 0)


# The MQAR streams for valid arguments are unchanged by the checks (sha256 of the outputs of the code before
# them, HEAD 15e30f5, over every variant and four seeds).
_MQAR_CASES = [
    dict(),
    dict(power_a=0.01),
    dict(power_a=3.0),
    dict(pad="zero"),
    dict(variant="repeated_keys", Nk=2),
    dict(variant="repeated_keys", Nk=1),
    dict(variant="repeated_queries", Nq=2),
    dict(variant="repeated_queries", Nq=3, post_query="values"),
    dict(variant="paper003"),
    dict(variant="zoology"),
    dict(variant="zoology", power_a=1.0),
]
_MQAR_SHA256 = "0377d3cf6673fc5e175f079cd0e5c179bc02e4cbadcc0a41719ed2c3a2166fb3"


def test_mqar_streams_unchanged_for_valid_arguments():
    import hashlib

    from mamba_recall.tasks.mqar import mqar

    h = hashlib.sha256()
    for kw in _MQAR_CASES:
        for seed in (0, 1, 12345, 2**40):
            if kw.get("variant") == "zoology" and seed >= 2**32:
                continue
            for t in mqar(64, 4, 48, 16, seed, **kw):
                h.update(t.numpy().tobytes())
    assert h.hexdigest() == _MQAR_SHA256


# ----------------------------------------------------------------------------- 6. the Mamba model's arguments


@pytest.mark.parametrize(
    "kw, fragment",
    [
        (dict(d_model=-4), "d_model must be a positive integer, got d_model=-4; pass an int >= 1."),
        (dict(d_model=4.5), "got d_model=4.5"),
        (dict(d_model=0), "got d_model=0"),
        (dict(vocab_size=0), "vocab_size must be a positive integer"),
        (dict(d_state=-1), "d_state must be a positive integer"),
    ],
)
def test_mamba_lm_rejects_bad_sizes(kw, fragment):
    """Before: d_model = -4 raised 'Trying to create tensor with negative dimension -4: [16, -4]'."""
    from mamba_recall.models.mamba import MambaLMHeadModel

    with pytest.raises(ValueError, match=re.escape(fragment)):
        MambaLMHeadModel(**{**dict(d_model=8, n_layer=1, vocab_size=10), **kw})


@pytest.mark.parametrize(
    "ids, fragment",
    [
        ([[1, 10]], "token id 10, outside the model's vocabulary [0, 10) (vocab_size=10); build the model with"),
        ([[1, 15]], "token id 15, outside"),  # below the padded 16: used to read an untrained row silently
        ([[1, 99]], "vocab_size > 99"),  # above it: used to be a bare IndexError
        ([[-1, 2]], "token id -1, outside"),
    ],
)
def test_mamba_lm_rejects_out_of_vocabulary_ids(ids, fragment):
    from mamba_recall.models.mamba import MambaLMHeadModel

    torch.manual_seed(0)
    model = MambaLMHeadModel(8, 1, 10)
    assert model.padded_vocab_size == 16
    with pytest.raises(ValueError, match=re.escape(fragment)):
        model(torch.tensor(ids))
    with pytest.raises(ValueError, match=re.escape("input_ids must hold integer token ids, got dtype torch.float32")):
        model(torch.tensor([[1.0, 2.0]]))
    assert model(torch.tensor([[0, 9]])).shape == (1, 2, 16)  # the edges of the vocabulary are fine


# ----------------------------------------------------------------------------- 7. A = 0 under ZOH, A > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("backend", ["reference", "chunked"])
def test_zoh_with_a_zero_entry_of_A_takes_the_limit(backend, dtype):
    """Before: the exact ZOH's B̄ = (exp(ΔA) − 1)/A·B is 0/0 where an entry of A is exactly 0, so that channel's
    output, its last state and every gradient came out NaN. Now B̄ takes its limit ΔB there: a state whose A is 0
    is Euler's h_t = h_{t−1} + Δ_t B_t u_t exactly, the gradients are finite, and the gradient in A at 0 is the
    limit's (Δ²/2 · B u summed, the small-A value)."""
    kw = make_scan_inputs(b=2, d=3, n=4, L=6, bc="selective", dtype=dtype, seed=3, initial_state=True)
    with torch.no_grad():
        kw["A"][1, 2] = 0.0
        kw["A"][0, :] = 0.0
    out, last = selective_scan(**kw, backend=backend, discretization="zoh", return_last_state=True)
    grads = torch.autograd.grad(out.sum() + last.sum(), [kw[k] for k in ("u", "delta", "A", "B", "C")])
    assert torch.isfinite(out).all() and torch.isfinite(last).all()
    assert all(torch.isfinite(g).all() for g in grads)
    euler_out, euler_last = selective_scan(**kw, backend=backend, discretization="euler", return_last_state=True)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out[:, 0], euler_out[:, 0], **tol)  # channel 0: A ≡ 0, ZOH is Euler
    torch.testing.assert_close(last[:, 1, 2], euler_last[:, 1, 2], **tol)
    # the same scan in float64 with the zeros replaced by a tiny negative A: its limit (values and the gradient in
    # A; in float32 that gradient's quotient would lose its digits to cancellation at a small A, not at A = 0)
    tiny = {k: v.detach().double().requires_grad_(True) if torch.is_tensor(v) else v for k, v in kw.items()}
    with torch.no_grad():
        tiny["A"][tiny["A"] == 0] = -1e-8
    out_t, last_t = selective_scan(**tiny, backend=backend, discretization="zoh", return_last_state=True)
    (dA_t,) = torch.autograd.grad(out_t.sum() + last_t.sum(), [tiny["A"]])
    loose = dict(rtol=1e-6, atol=1e-6) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out.double(), out_t, **loose)
    torch.testing.assert_close(grads[2].double(), dA_t, **loose)


def test_zoh_for_nonzero_A_is_unchanged():
    """Where no entry of A is 0, the ZOH input term is bit for bit the quotient it was before the A = 0 case."""
    from mamba_recall.scan import discretize, prepare_scan

    kw = make_scan_inputs(b=2, d=4, n=3, L=9, bc="grouped", seed=5)
    kw = {k: v.detach() if torch.is_tensor(v) else v for k, v in kw.items()}
    for time_major in (False, True):
        p = prepare_scan(**kw, discretization="zoh")
        log_decay, term = discretize(p, time_major=time_major)
        if time_major:
            delta, u, A, B = p.delta.transpose(1, 2), p.u.transpose(1, 2), p.A, p.B.permute(0, 3, 1, 2)
        else:
            delta, u, A, B = p.delta, p.u, p.A[:, None, :], p.B.transpose(-1, -2)
        assert torch.equal(term, (torch.expm1(delta[..., None] * A) / A) * B * u[..., None])


POSITIVE_A = [
    ("one entry", (1, 2), 0.5, "A has 1 entry > 0 (largest 0.5)"),
    ("+inf", (0, 0), float("inf"), "(largest inf)"),
]


@pytest.mark.parametrize("case, where, value, fragment", POSITIVE_A, ids=[c[0] for c in POSITIVE_A])
@pytest.mark.parametrize("backend", ("auto",) + CPU_BACKENDS)
def test_positive_A_is_refused(backend, case, where, value, fragment):
    """Before: A > 0 (documented as < 0) was accepted: exp(ΔA) > 1 and the state grew without bound, silently.
    Now every public scan refuses it with one line naming the largest entry, the rule and the fix; A = 0 (the
    theory's counters: Prop. 1, the MQAR constructions) is still accepted."""
    kw = _kw()
    kw["A"][where] = value
    with pytest.raises(ScanInputError, match=re.escape(fragment)) as info:
        selective_scan(**kw, backend=backend)
    assert "must be ≤ 0" in str(info.value) and "-torch.exp(A_log)" in str(info.value)
    kw["A"][where] = 0.0
    assert torch.isfinite(selective_scan(**kw, backend=backend)).all()


def test_positive_A_is_refused_by_the_trace_and_the_mamba2_scans():
    from mamba_recall.scan import selective_scan_trace, ssd_scan_chunked, ssd_scan_reference
    from test_scan import make_ssd_inputs

    kw = _kw()
    kw["A"][0, 0] = 2.0
    with pytest.raises(ScanInputError, match=re.escape("A has 1 entry > 0 (largest 2)")):
        selective_scan_trace(**kw)
    ssd = make_ssd_inputs()
    ssd["A"] = ssd["A"].detach().clone()
    ssd["A"][1] = 0.25
    for fn in (ssd_scan_reference, ssd_scan_chunked):
        with pytest.raises(ScanInputError, match=re.escape("A has 1 entry > 0 (largest 0.25)")):
            fn(**ssd)
    ssd["A"][1] = 0.0
    torch.testing.assert_close(ssd_scan_chunked(**ssd), ssd_scan_reference(**ssd))


def test_theory_with_A_zero_still_runs():
    """The constructions that use A = 0 (Prop. 1's time counter h_t = t) are unchanged by the sign check."""
    from mamba_recall.theory.haar import prop1_time_counter

    assert torch.equal(torch.as_tensor(prop1_time_counter(6, backend="reference")), torch.arange(1.0, 7.0).double())
