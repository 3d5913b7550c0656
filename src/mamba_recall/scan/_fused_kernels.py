"""numba kernels of the fused CPU scan (imported lazily by ``fused.py``; see its docstring for the math).

The kernels compute the state-space part only, y_t = ⟨C_t, h_t⟩ with h_t = exp(Δ_t a) ⊙ h_{t−1} + Δ_t u_t B_t,
and its backward pass; Δ's bias and softplus, D and the z gate are elementwise over (b, d, L) and run in
PyTorch around them (``fused.py``).

Array layouts (all C-contiguous, float32 or float64, one compiled version per dtype):
u, dt (Δ after bias and softplus), y: (b, d, L);  A: (d, N);  Bk, Ck: (b|1, G, L|1, N), i.e. B_t of
pair (bi, c) is ``Bk[bi if b_B > 1 else 0, c // (d // G), t if L_B > 1 else 0, :]``;  h0, last: (b, d, N)
(zeros when no initial state is given).
"""

from __future__ import annotations

import math
import os
import types as pytypes
import warnings

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import config as numba_config
from numba.extending import intrinsic, overload

from ..paths import PACKAGE_IN_CHECKOUT, user_cache_dir

# fastmath flags: FMA contraction and reassociation (vectorises ⟨C_t, h_t⟩ over N); no 'nnan'/'ninf',
# so inf and NaN propagate as in the reference.
FASTMATH = {"contract", "reassoc", "nsz", "arcp"}


@intrinsic
def _bits_to_f32(typingctx, x):
    """Reinterpret the low 32 bits of an integer as a float32 (LLVM trunc + bitcast; vectorises)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        v = args[0]
        if x.bitwidth > 32:
            v = builder.trunc(v, ir.IntType(32))
        return builder.bitcast(v, ir.FloatType())

    return types.float32(x), codegen


@intrinsic
def _minus_product(typingctx, x, k, c):
    """x − k·c in float32 with only the ``contract`` flag on its two instructions (FMA allowed, no reassociation).
    numba's fastmath pass adds the kernels' flags only to float instructions that carry none, so these keep theirs:
    with ``reassoc``, LLVM may fold expf's two-step range reduction (x − k·C1) − k·C2 into x − k·(C1 + C2), losing
    the split constant's low bits. With FMA hardware the fold never happened (each step became an fma); on a
    target without it (``NUMBA_CPU_NAME=generic``) it did, and expf's error rose from 2.5 to 34 ulp."""
    if not all(t == types.float32 for t in (x, k, c)):
        return None

    def codegen(context, builder, signature, args):
        xv, kv, cv = args
        return builder.fsub(xv, builder.fmul(kv, cv, flags=("contract",)), flags=("contract",))

    return types.float32(x, k, c), codegen


def _exp(x):  # pragma: no cover - replaced by the overload below inside compiled code
    return math.exp(x)


@overload(_exp, inline="always")
def _exp_impl(x):
    """exp for the decays: libm for float64; for float32 the Cephes ``expf`` (range reduction
    x = k ln2 + r, |r| ≤ ln2/2, degree-6 polynomial, 2^k by exponent bits; ≤ 2 ulp), branch-free so
    that LLVM vectorises the N-loop (numba's libm call would stay scalar). Below −87.3 it returns 0
    (exact expf gives denormals < 1.2e-38 there).

    Non-finite and overflowing inputs as libm's ``expf`` (and so as the reference backend): NaN → NaN,
    −inf → 0, x > ln(FLT_MAX) ≈ 88.72 (+inf included) → +inf. The polynomial itself works on the
    clamped xc, so without the last two selects a NaN (a diverged ``A_log``) would come out as a finite
    number and training would go on with a finite loss. The selects are vector blends: no branch, no
    pass over the inputs (timed in the README's "Speed of the scans"). Between 88.376 and 88.72, where
    2^k would overflow the exponent bits, the result is expf(88.376) ≈ 2.4e38 (finite, as the exact
    value)."""
    if x == types.float32:

        def impl(x):
            xc = min(max(x, np.float32(-87.33654)), np.float32(88.37626))
            k = np.floor(xc * np.float32(1.44269504088896341) + np.float32(0.5))
            # Cody–Waite: k·C1 is exact (C1 has 11 bits), the two steps kept apart (:func:`_minus_product`)
            r = _minus_product(_minus_product(xc, k, np.float32(0.693359375)), k, np.float32(-2.12194440e-4))
            p = np.float32(1.9875691500e-4)
            p = p * r + np.float32(1.3981999507e-3)
            p = p * r + np.float32(8.3334519073e-3)
            p = p * r + np.float32(4.1665795894e-2)
            p = p * r + np.float32(1.6666665459e-1)
            p = p * r + np.float32(5.0000001201e-1)
            e = p * r * r + r + np.float32(1.0)
            scale = _bits_to_f32((np.int32(k) + np.int32(127)) << 23)
            res = e * scale
            res = res if x > np.float32(-87.33654) else np.float32(0.0)  # underflow, −inf → 0 (NaN → 0 here)
            # overflow and +inf → x + inf = inf; NaN fails both tests → x + inf = NaN (FASTMATH has no
            # 'nnan'/'ninf', so LLVM may not fold the comparisons or the sum)
            return res if x <= np.float32(88.72283) else x + np.float32(np.inf)

        return impl
    return lambda x: math.exp(x)


def _forward(u, dt_, A, Bk, Ck, h0, one, y_out, last):
    """y (b, d, L) and the last state (b, d, N); ``one`` is 1 in the compute dtype (keeps float32 float32)."""
    b, d, L = u.shape
    N = A.shape[1]
    zero = one - one
    bB, gB, lB = Bk.shape[0], Bk.shape[1], Bk.shape[2]
    bC, gC, lC = Ck.shape[0], Ck.shape[1], Ck.shape[2]
    sB = 1 if lB > 1 else 0
    sC = 1 if lC > 1 else 0
    for item in prange(b * d):
        bi = item // d
        c = item - bi * d
        Bp = Bk[bi if bB > 1 else 0, c // (d // gB)]  # (L|1, N)
        Cp = Ck[bi if bC > 1 else 0, c // (d // gC)]
        a = A[c]
        h = h0[bi, c].copy()
        for t in range(L):
            dt = dt_[bi, c, t]
            dtu = dt * u[bi, c, t]
            Bt = Bp[t * sB]
            Ct = Cp[t * sC]
            y = zero
            for n in range(N):
                hn = _exp(dt * a[n]) * h[n] + dtu * Bt[n]
                h[n] = hn
                y += Ct[n] * hn
            y_out[bi, c, t] = y
        for n in range(N):
            last[bi, c, n] = h[n]


def _backward(u, dt_, A, Bk, Ck, h0, one, dy_, dlast, G, blocks, B_inv, C_inv, du, ddt_, dA_p, dh0, dBp, dCp):
    """Tasks (batch bi, task group g, block p) each run the channels of their block one after the
    other: recompute the states (forward), run the state gradient G_t back in time (the only
    sequential part), then form every gradient from G_t, h_{t−1}, Ā_t step by step (independent t).

    dBp, dCp: (1, b, d, 1, N) per-(batch, channel) partial sums for a time-invariant map
    (``B_inv``/``C_inv``), else (blocks, b, G, L, N) per-task partial sums; the caller reduces them.
    The inner loops over N each write one array, so that LLVM vectorises them.
    """
    b, d, L = u.shape
    N = A.shape[1]
    zero = one - one
    bB, gB, lB = Bk.shape[0], Bk.shape[1], Bk.shape[2]
    bC, gC, lC = Ck.shape[0], Ck.shape[1], Ck.shape[2]
    per_group = d // G
    per_block = (per_group + blocks - 1) // blocks
    sB = 1 if lB > 1 else 0
    sC = 1 if lC > 1 else 0
    for task in prange(b * G * blocks):
        bi = task // (G * blocks)
        rem = task - bi * (G * blocks)
        g = rem // blocks
        p = rem - g * blocks
        c_start = g * per_group + p * per_block
        c_stop = min(g * per_group + per_group, c_start + per_block)
        hs = np.empty((L + 1, N), dtype=u.dtype)  # h_0 … h_L of one channel (recomputed)
        dec = np.empty((L, N), dtype=u.dtype)  # Ā_1 … Ā_L
        Gs = np.empty((L, N), dtype=u.dtype)  # G_1 … G_L = ∂ℓ/∂h_t
        gs = np.empty(N, dtype=u.dtype)
        dA_acc = np.empty(N, dtype=u.dtype)
        for c in range(c_start, c_stop):
            Bp = Bk[bi if bB > 1 else 0, c // (d // gB)]
            Cp = Ck[bi if bC > 1 else 0, c // (d // gC)]
            a = A[c]
            # ---- 1. forward: recompute Ā_t and h_t
            for n in range(N):
                hs[0, n] = h0[bi, c, n]
            for t in range(L):
                dt = dt_[bi, c, t]
                dtu = dt * u[bi, c, t]
                Bt = Bp[t * sB]
                dec_t = dec[t]
                h_prev = hs[t]
                h_t = hs[t + 1]
                for n in range(N):
                    e = _exp(dt * a[n])
                    dec_t[n] = e
                    h_t[n] = e * h_prev[n] + dtu * Bt[n]
            # ---- 2. the state gradient, back in time: G_t = dy_t C_t + Ā_{t+1} ⊙ G_{t+1};
            #         gs holds Ā_{t+1} ⊙ G_{t+1} (at t = L: the last-state gradient)
            for n in range(N):
                gs[n] = dlast[bi, c, n]
            for t in range(L - 1, -1, -1):
                dy = dy_[bi, c, t]
                Ct = Cp[t * sC]
                G_t = Gs[t]
                dec_t = dec[t]
                for n in range(N):
                    gn = gs[n] + dy * Ct[n]
                    G_t[n] = gn
                    gs[n] = gn * dec_t[n]
            for n in range(N):
                dh0[bi, c, n] = gs[n]
                dA_acc[n] = zero
            # ---- 3. every gradient from G_t, h_{t−1}, h_t, Ā_t (no recurrence left)
            for t in range(L):
                dt = dt_[bi, c, t]
                ut = u[bi, c, t]
                dtu = dt * ut
                dy = dy_[bi, c, t]
                Bt = Bp[t * sB]
                G_t = Gs[t]
                dec_t = dec[t]
                h_prev = hs[t]
                h_t = hs[t + 1]
                sum_gB = zero
                dda = zero
                for n in range(N):
                    q = G_t[n] * h_prev[n] * dec_t[n]  # ∂ℓ/∂(Δ_t a_n)
                    dda += q * a[n]
                    dA_acc[n] += q * dt
                    sum_gB += G_t[n] * Bt[n]
                dBrow = dBp[0, bi, c, 0] if B_inv else dBp[p, bi, g, t]
                for n in range(N):
                    dBrow[n] += G_t[n] * dtu
                dCrow = dCp[0, bi, c, 0] if C_inv else dCp[p, bi, g, t]
                for n in range(N):
                    dCrow[n] += dy * h_t[n]
                du[bi, c, t] = sum_gB * dt
                ddt_[bi, c, t] = dda + sum_gB * ut
            for n in range(N):
                dA_p[bi, c, n] = dA_acc[n]


def _renamed(fn, name):
    """A copy of ``fn`` under another name: numba's on-disk cache is keyed by the function's name, so the
    serial and the parallel compilation of one kernel need two names."""
    new = pytypes.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    new.__qualname__ = name
    new.__doc__ = fn.__doc__
    return new


# ----------------------------------------------------------------------------- the on-disk cache
#
# numba keeps the compiled kernels in its cache folder: NUMBA_CACHE_DIR if set and writable; else, for an
# installed package (``pip install .``: no checkout around it), the user's cache folder
# (``paths.user_cache_dir("numba")``, ~/.cache/mamba_recall/numba on Linux), never site-packages; else (in a
# checkout, or that folder unwritable) this package's __pycache__, else ~/.cache/numba. Two faults used to stop
# every fused call:
#
# * a corrupt cache file (an interrupted write, a disk error, files copied between machines) made every
#   call raise a ~35-line pickle traceback naming no file, until the folder was deleted by hand. A failed
#   load now warns once, naming the file, removes that kernel's index file (numba then writes a new index
#   and data file) and compiles the kernel again: the next process loads the repaired cache.
# * no writable cache location at all made ``njit(cache=True)`` raise at import, while ``auto`` still
#   picked ``fused``. The kernels are then compiled without a disk cache (in every process, about 15 s of
#   CPU time), with a warning naming NUMBA_CACHE_DIR as the fix; ``fused.fused_available()`` imports this
#   module, so ``auto`` knows whether the kernels can be built.

#: what went wrong with the cache, one line each (read by ``fused.py`` for its messages; empty when all is well)
CACHE_PROBLEMS: list[str] = []
_UNCACHEABLE = "no locator available"  # numba's RuntimeError when no cache folder is writable


def _warn(msg: str) -> None:
    CACHE_PROBLEMS.append(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=2)


def _guard_cache(dispatcher, name: str) -> None:
    """Wrap the dispatcher's cache so that a failed load (corrupt or foreign file) or save (a folder that
    became unwritable) warns once and recompiles, instead of raising out of every call (numba internals:
    ``Dispatcher._cache`` is a ``FunctionCache`` with ``load_overload``/``save_overload``)."""
    cache = dispatcher._cache
    load, save = cache.load_overload, cache.save_overload

    def load_overload(sig, target_context):
        try:
            return load(sig, target_context)
        except Exception as exc:  # UnpicklingError, EOFError, a bad object file, ...
            index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
            removed = ""
            if index and os.path.exists(index):
                try:
                    os.remove(index)
                    removed = f"; removed its index {index}, numba writes a new one"
                except OSError as rm_exc:
                    removed = f"; could not remove its index {index} ({rm_exc}): delete that file by hand"
            _warn(
                f"mamba_recall fused scan: the numba cache of kernel {name!r} in {cache._cache_path} could not be "
                f"loaded ({type(exc).__name__}: {exc}){removed}; compiling the kernel again."
            )
            return None

    def save_overload(sig, data):
        try:
            save(sig, data)
        except Exception as exc:
            _warn(
                f"mamba_recall fused scan: kernel {name!r} compiled but could not be saved to the numba cache "
                f"{cache._cache_path} ({type(exc).__name__}: {exc}); it will compile again in the next process. "
                "Fix: make that folder writable or set NUMBA_CACHE_DIR to a writable folder."
            )

    cache.load_overload, cache.save_overload = load_overload, save_overload


def user_cache_folder() -> str | None:
    """Where the kernels are cached when NUMBA_CACHE_DIR is unset and the package is installed (no checkout
    around it): ``paths.user_cache_dir("numba")``, made here; None (numba's own order) in a checkout, when
    NUMBA_CACHE_DIR is set, or when that folder cannot be made."""
    if os.environ.get("NUMBA_CACHE_DIR") or PACKAGE_IN_CHECKOUT:
        return None
    folder = user_cache_dir("numba")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(folder) if os.access(folder, os.W_OK) else None


_USER_CACHE = user_cache_folder()


def _jit(fn, name: str, **flags):
    """``numba.njit(cache=True, **flags)`` of ``fn`` renamed ``name``, its cache guarded (above); compiled
    without a disk cache, with a warning, when no cache folder is writable. numba picks the cache folder when
    the dispatcher is made, so :data:`_USER_CACHE` is numba's ``CACHE_DIR`` for that moment only."""
    renamed = _renamed(fn, name)
    before = numba_config.CACHE_DIR
    try:
        if _USER_CACHE is not None:
            numba_config.CACHE_DIR = _USER_CACHE
        dispatcher = njit(cache=True, **flags)(renamed)
    except RuntimeError as exc:
        if _UNCACHEABLE not in str(exc):
            raise
        if not any(_UNCACHEABLE in p for p in CACHE_PROBLEMS):
            _warn(
                "mamba_recall fused scan: no writable numba cache folder (NUMBA_CACHE_DIR="
                f"{os.environ.get('NUMBA_CACHE_DIR', '(unset)')!r}, {os.path.dirname(__file__)}/__pycache__, "
                f"~/.cache/numba: {_UNCACHEABLE}); the kernels compile in every process (about 15 s of CPU "
                "time). Fix: set NUMBA_CACHE_DIR to a writable folder."
            )
        return njit(**flags)(renamed)
    finally:
        numba_config.CACHE_DIR = before
    _guard_cache(dispatcher, name)
    return dispatcher


# parallel over (batch, channels) with numba.prange, and the same loops compiled serially (prange =
# range): a launch of the parallel version costs a thread hand-off, which the serial one avoids on one
# thread and at small sizes (fused.py picks).
#
# float32 (the training precision) with FASTMATH; float64 (the verification precision) under separate
# names with strict IEEE semantics (no fastmath: no FMA contraction, no reassociation). With fastmath the
# float64 parallel forward kernel gave outputs up to 1e-14 apart in a process that had just compiled it
# and in one that loaded it from numba's on-disk cache (measured; float32 and the serial kernels agreed):
# the code that runs is not the same LLVM output in the two cases (likely the parfor body as first JIT-
# compiled vs. as linked into the cached library and optimised again), and fastmath lets LLVM contract
# and reassociate each differently. Strict float64 leaves LLVM no such choice, so
# float64 results are bit-identical whether the kernels were compiled or loaded (tests/scan/test_faults_scan.py),
# for 0–8 % more time (measured at 4 × 128 × 16 × 256: the scalar libm exp dominates the float64 loop).
forward = _jit(_forward, "forward", parallel=True, fastmath=FASTMATH)
backward = _jit(_backward, "backward", parallel=True, fastmath=FASTMATH)
forward_serial = _jit(_forward, "forward_serial", fastmath=FASTMATH)
backward_serial = _jit(_backward, "backward_serial", fastmath=FASTMATH)
forward64 = _jit(_forward, "forward64", parallel=True)
backward64 = _jit(_backward, "backward64", parallel=True)
forward64_serial = _jit(_forward, "forward64_serial")
backward64_serial = _jit(_backward, "backward64_serial")
