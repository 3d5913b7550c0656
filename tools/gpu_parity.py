"""The comparisons of the GPU check (``tools/gpu_check.py``): mamba-ssm's kernels against the library's scans and
Mamba block, at mamba-ssm's own tolerances, and the dispatch overhead at the large size. Each runs on the CPU too, with
``chunked`` standing in for mamba-ssm (``tests/scan/test_scan_gpu.py`` tests them there; on CUDA the same tests
compare against mamba-ssm). Tooling of the repository, not a module of the library."""

from __future__ import annotations

import os
import time

# mamba-ssm's tests/ops/test_selective_scan.py: (rtol, atol) of outputs per input dtype; gradients scaled below.
MS_TOLS = {"float32": (6e-4, 2e-3), "float16": (3e-3, 5e-3), "bfloat16": (3e-2, 5e-2)}
MS_LENGTHS = (128, 256, 512, 1024, 2048, 4096)


def _dtype(name):
    import torch

    return getattr(torch, name)


def ms_case_inputs(L, itype, groups, has_D, has_z, has_delta_bias, device, seed=0):
    """The inputs of mamba-ssm's ``test_selective_scan`` (batch 2, dim 4, dstate 8; A = −0.5·U(0,1), Δ = 0.5·U(0,1),
    selective B and C in the input dtype, D and delta_bias in float32)."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    it, f32 = _dtype(itype), torch.float32
    b, d, n = 2, 4, 8
    bshape = (b, n, L) if groups == 1 else (b, groups, n, L)

    def mk(x, dtype):
        return x.to(dtype).to(device)

    kw = dict(
        u=mk(torch.randn(b, d, L, generator=g), it),
        delta=mk(0.5 * torch.rand(b, d, L, generator=g), it),
        A=mk(-0.5 * torch.rand(d, n, generator=g), f32),
        B=mk(torch.randn(*bshape, generator=g), it),
        C=mk(torch.randn(*bshape, generator=g), it),
    )
    if has_D:
        kw["D"] = mk(torch.randn(d, generator=g), f32)
    if has_z:
        kw["z"] = mk(torch.randn(b, d, L, generator=g), it)
    if has_delta_bias:
        kw["delta_bias"] = mk(0.5 * torch.rand(d, generator=g), f32)
    return kw


def grad_tols(name, itype, has_z):
    """mamba-ssm's test: u at 2×(rtol, atol), delta at (5 rtol, 10 atol), the weights A, D, delta_bias at
    rtolw = atolw = 1e-3 (raised to rtol, atol with z; A's atol ×5), selective B, C at (rtol, atol), z at the
    weights' tolerance."""
    rtol, atol = MS_TOLS[itype]
    rtolw, atolw = (max(1e-3, rtol), max(1e-3, atol)) if has_z else (1e-3, 1e-3)
    return {
        "out": (rtol, atol),
        "last_state": (rtol, atol),
        "u": (2 * rtol, 2 * atol),
        "delta": (5 * rtol, 10 * atol),
        "A": (rtolw, 5 * atolw),
        "B": (rtol, atol),
        "C": (rtol, atol),
        "D": (rtolw, atolw),
        "z": (rtolw, atolw),
        "delta_bias": (rtolw, atolw),
    }[name]


def _excess(x, ref, rtol, atol):
    """max |x − ref| and max |x − ref| / (atol + rtol·|ref|) (≤ 1: inside ``torch.allclose``'s tolerance)."""
    x, ref = x.detach().double(), ref.detach().double()
    diff = (x - ref).abs()
    return float(diff.max()), float((diff / (atol + rtol * ref.abs())).max())


def _output_grad(shape, device, itype=None):
    """The loss's weight g (Σ out·g): the same seeded draw everywhere, rounded to ``itype`` when given (mamba-ssm's
    test draws it with ``randn_like(out)``, in the output's dtype)."""
    import torch

    g = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    return (g.to(_dtype(itype)).float() if itype else g).to(device)


def _scan_grads(base, backend, delta_softplus, *, upcast, itype=None):
    """``backend`` on fresh copies of ``base`` (in float32 when ``upcast``, as mamba-ssm's reference computes):
    ``{"out", "last_state", <every input>: its gradient}`` for the loss Σ out·g, g from :func:`_output_grad`."""
    import torch

    from mamba_recall.scan import selective_scan

    kw = {k: (v.float() if upcast else v).detach().clone().requires_grad_(True) for k, v in base.items()}
    out, last = selective_scan(**kw, delta_softplus=delta_softplus, return_last_state=True, backend=backend)
    g = _output_grad(out.shape, out.device, itype)
    grads = torch.autograd.grad((out.float() * g).sum(), list(kw.values()))
    return {"out": out, "last_state": last, **dict(zip(kw, grads))}


def compare_scan_case(
    L, itype, groups, has_D, has_z, has_delta_bias, delta_softplus, *, device="cuda", backend="mamba_ssm"
):
    """One case of mamba-ssm's grid: ``backend`` (mamba-ssm's kernel) against our ``reference`` computed in float32
    from the same inputs (as mamba-ssm's ``selective_scan_ref`` does: it upcasts, and its output is cast back to the
    input dtype), the loss Σ out·g with one random g. Returns ``{tensor: [max |Δ|, ratio]}`` for the output, the last
    state and every gradient, ``worst`` (the largest ratio) and ``ok`` (every ratio ≤ 1).

    g is drawn in the input dtype for both, as mamba-ssm's test does: a float32 g would reach the kernel rounded to
    its output dtype and the reference unrounded, which alone moves the float16 / bfloat16 gradients of A and
    delta_bias past the tolerance (measured: the 2026-11-27 run, ratio 66; :func:`g_rounding_artifact`)."""
    base = ms_case_inputs(L, itype, groups, has_D, has_z, has_delta_bias, device)
    ref = _scan_grads(base, "reference", delta_softplus, upcast=True, itype=itype)
    got = _scan_grads(base, backend, delta_softplus, upcast=False, itype=itype)
    res = {}
    dtype = {**{k: v.dtype for k, v in base.items()}, "out": base["u"].dtype}  # as mamba-ssm compares
    for name, r in ref.items():
        g, r = (got[name].to(dtype[name]), r.to(dtype[name])) if name in dtype else (got[name], r)
        res[name] = list(_excess(g, r, *grad_tols(name, itype, has_z)))
    worst = max(v[1] for v in res.values())
    return {"errors": res, "worst": worst, "ok": worst <= 1.0}


def scan_cases(lengths=MS_LENGTHS):
    """mamba-ssm's grid, shortest and longest lengths first (so that a run cut short has both ends)."""
    order = list(dict.fromkeys([lengths[0], lengths[-1], *lengths[1:-1]]))  # one length: once
    for L in order:
        for itype in MS_TOLS:
            for groups in (1, 2):
                for flags in range(16):
                    yield dict(
                        L=L,
                        itype=itype,
                        groups=groups,
                        has_D=bool(flags & 1),
                        has_z=bool(flags & 2),
                        has_delta_bias=bool(flags & 4),
                        delta_softplus=bool(flags & 8),
                    )


def scan_parity(deadline, device, backend, lengths=MS_LENGTHS):
    rows, skipped = [], 0
    for case in scan_cases(lengths):
        if time.monotonic() > deadline:
            skipped += 1
            continue
        r = compare_scan_case(**case, device=device, backend=backend)
        rows.append({**case, "worst": r["worst"], "ok": r["ok"], "errors": r["errors"]})
    maxima = {}
    for r in rows:
        per = maxima.setdefault(r["itype"], {})
        for name, (diff, ratio) in r["errors"].items():
            a, b = per.get(name, (0.0, 0.0))
            per[name] = (max(a, diff), max(b, ratio))
    failed = [
        {k: r[k] for k in ("L", "itype", "groups", "has_D", "has_z", "has_delta_bias", "delta_softplus", "worst")}
        for r in rows
        if not r["ok"]
    ]
    return {
        "output_grad": "input dtype",  # g as mamba-ssm's test draws it (runs before 2026-11-28 lack this key: float32)
        "cases": len(rows),
        "not_run_deadline": skipped,
        "passed": sum(r["ok"] for r in rows),
        "failed": failed,
        "max_abs_and_ratio_per_dtype": maxima,
        "rows": [{k: v for k, v in r.items() if k != "errors"} for r in rows],
    }


def block_parity(device, dry, seed=0, d_model=64, L=256, batch=2):
    """Our Mamba block (:class:`mamba_recall.models.mamba.Mamba`) against ``mamba_ssm.Mamba`` built with the same
    sizes, its state_dict loaded into ours: outputs and every parameter's gradient, with mamba-ssm's fast path (fused
    ``mamba_inner_fn``, causal-conv1d's kernel when importable) and its slow path, and ours on ``mamba_ssm``,
    ``chunked`` and ``reference``. ``ratio`` ≤ 1: within fp32 rtol 6e-4, atol 2e-3."""
    import torch

    from mamba_recall.models.mamba import Mamba as Ours

    torch.manual_seed(seed)
    sizes = dict(d_model=d_model, d_state=16, d_conv=4, expand=2)
    if dry:  # stand-in for mamba_ssm.Mamba: our block on the reference scan
        theirs = {"slow path": Ours(**sizes, backend="reference", device=device)}
    else:
        from mamba_ssm import Mamba as Theirs

        theirs = {
            "fast path": Theirs(**sizes, use_fast_path=True, device=device),
            "slow path": Theirs(**sizes, use_fast_path=False, device=device),
        }
        theirs["slow path"].load_state_dict(theirs["fast path"].state_dict())
    state = next(iter(theirs.values())).state_dict()
    x = torch.randn(batch, L, d_model, generator=torch.Generator().manual_seed(seed + 1)).to(device)
    g = torch.randn(batch, L, d_model, generator=torch.Generator().manual_seed(seed + 2)).to(device)

    def run(module):
        xi = x.clone().requires_grad_(True)
        y = module(xi)
        names = [n for n, _ in module.named_parameters()]
        grads = torch.autograd.grad((y * g).sum(), [xi, *(p for _, p in module.named_parameters())])
        return {"out": y.detach(), "x": grads[0], **dict(zip(names, grads[1:]))}

    ref = {k: run(m) for k, m in theirs.items()}
    rows = []
    backends = ("chunked", "reference") if dry else ("mamba_ssm", "chunked", "reference")
    for backend in backends:
        ours = Ours(**sizes, backend=backend, device=device)
        missing = ours.load_state_dict(state, strict=True)
        assert not missing.missing_keys and not missing.unexpected_keys
        got = run(ours)
        for path, r in ref.items():
            errs = {k: _excess(got[k], r[k], 6e-4, 2e-3) for k in r}
            worst = max(e[1] for e in errs.values())
            rows.append(
                {"ours": backend, "theirs": path, "worst": worst, "ok": worst <= 1.0,
                 "max_abs": max(e[0] for e in errs.values()), "worst_tensor": max(errs, key=lambda k: errs[k][1])}
            )  # fmt: skip
    try:
        import causal_conv1d  # noqa: F401

        conv = "causal-conv1d kernel"
    except ImportError:
        conv = "nn.Conv1d (causal-conv1d not importable)"
    return {
        "sizes": {**sizes, "L": L, "batch": batch},
        "their_conv": conv,
        "rows": rows,
        "ok": all(r["ok"] for r in rows),
    }


SSD_CASES = ((256, 64), (1024, 256))  # (L, chunk_size) of the Mamba-2 comparisons


def _ssd_case(L, device, seed=0):
    """Inputs of one Mamba-2 comparison (batch 2, 4 heads of 16, 2 groups, N = 32; D, z, dt_bias) and its output
    gradient."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    b, h, p, gr, n = 2, 4, 16, 2, 32
    r = lambda *s: torch.randn(*s, generator=gen).to(device)  # noqa: E731
    base = dict(
        x=r(b, L, h, p), dt=r(b, L, h) * 0.5, A=-torch.rand(h, generator=gen).to(device) - 0.5,
        B=r(b, L, gr, n), C=r(b, L, gr, n), D=r(h), z=r(b, L, h, p), dt_bias=r(h) * 0.1,
    )  # fmt: skip
    return base, r(b, L, h, p)


def _ssd_run(base, g, backend, chunk):
    """Output and every gradient of ``ssd_scan`` (softplus on) for the loss Σ y·g."""
    import torch

    from mamba_recall.scan import ssd_scan

    kw = {k: v.clone().requires_grad_(True) for k, v in base.items()}
    y = ssd_scan(**kw, dt_softplus=True, backend=backend, chunk_size=chunk)
    grads = torch.autograd.grad((y * g).sum(), list(kw.values()))
    return {"out": y.detach(), **dict(zip(kw, grads))}


def ssd_parity(device, backend, seed=0):
    """The Mamba-2 scan: our :func:`mamba_recall.scan.ssd_scan` (``reference`` and ``chunked``) against ``backend``
    (``mamba_chunk_scan_combined``), with D, z, dt_bias, softplus, 2 groups, outputs and every gradient, fp32
    (rtol 6e-4, atol 2e-3)."""
    rows = []
    for L, chunk in SSD_CASES:
        base, g = _ssd_case(L, device, seed)
        runs = {which: _ssd_run(base, g, which, chunk) for which in ("reference", "chunked", backend)}
        for ours in ("reference", "chunked"):
            errs = {k: _excess(runs[backend][k], runs[ours][k], 6e-4, 2e-3) for k in runs[ours]}
            worst = max(e[1] for e in errs.values())
            rows.append({"L": L, "chunk": chunk, "ours": ours, "worst": worst, "ok": worst <= 1.0,
                         "max_abs": max(e[0] for e in errs.values()), "worst_tensor": max(errs, key=lambda k: errs[k][1]),
                         "errors": errs, "triton_f32": os.environ.get("TRITON_F32_DEFAULT", "tf32 (Triton's default)")})  # fmt: skip
    return {"rows": rows, "ok": all(r["ok"] for r in rows)}


def tf32(t):
    """``t`` (float32) with its mantissa rounded to TF32's 10 bits (relative error ≤ 2⁻¹¹): what a tensor core reads
    of a float32 operand when TF32 is on (Triton's ``tl.dot`` default)."""
    import torch

    i = t.contiguous().view(torch.int32)
    return ((i + 0x1000) & ~0x1FFF).view(torch.float32)


def ssd_tf32_sensitivity(device="cpu", seed=0):
    """How far TF32 alone can move the Mamba-2 comparison: our ``chunked`` scan with only its inputs x, B and C
    rounded to TF32 against the same scan in float32, in the ratio to the fp32 tolerance that :func:`ssd_parity`
    reports (the intermediate products, which TF32 rounds too on a GPU, are left in float32: a lower bound)."""
    rows = []
    for L, chunk in SSD_CASES:
        base, g = _ssd_case(L, device, seed)
        ref = _ssd_run(base, g, "chunked", chunk)
        got = _ssd_run({k: tf32(v) if k in ("x", "B", "C") else v for k, v in base.items()}, g, "chunked", chunk)
        for k in ref:
            rows.append({"L": L, "chunk": chunk, "tensor": k, "ratio": _excess(got[k], ref[k], 6e-4, 2e-3)[1]})
    return rows


def dispatch_overhead(device, dry, batch=16, channels=1536, N=16, L=2048, repeats=50):
    """Forward + backward at the large size through our dispatch (``selective_scan(..., backend="mamba_ssm")``)
    against ``selective_scan_fn`` called directly, CUDA events, median of ``repeats`` after warm-up; and the achieved
    bandwidth of the kernel against the card's peak (bytes = the inputs, read by the forward and again by the
    backward, plus the output, the output's gradient and the inputs' gradients; a lower bound on the traffic)."""
    import torch

    from mamba_recall.scan import selective_scan
    from mamba_recall.scan.agreement import random_scan_inputs

    if dry:
        batch, channels, L, repeats = 2, 16, 64, 3
    kw = random_scan_inputs(batch, channels, N, L, dtype=torch.float32, device=device)
    kw = {k: kw[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")}
    if dry:
        direct = lambda **k: selective_scan(**k, backend="reference")  # noqa: E731
    else:
        from mamba_ssm.ops.selective_scan_interface import selective_scan_fn as direct
    ways = {
        "ours (backend='mamba_ssm')": lambda **k: selective_scan(**k, backend="chunked" if dry else "mamba_ssm"),
        "selective_scan_fn directly": direct,
    }
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in kw.items()}
    g = torch.randn(batch, channels, L, device=device)

    def step(fn):
        out = fn(**leaves, delta_softplus=True)
        out.backward(g)

    times = {}
    for name, fn in list(ways.items()) * 2:  # interleaved twice: each way's second pass is the one kept
        for _ in range(3):
            step(fn)
        ts = []
        for _ in range(repeats):
            if device == "cuda":
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                step(fn)
                e.record()
                torch.cuda.synchronize()
                ts.append(s.elapsed_time(e) / 1e3)
            else:
                t0 = time.perf_counter()
                step(fn)
                ts.append(time.perf_counter() - t0)
        times[name] = sorted(ts)[len(ts) // 2]
    in_bytes = sum(v.numel() * v.element_size() for v in kw.values())
    out_bytes = batch * channels * L * 4
    traffic = 2 * in_bytes + 2 * out_bytes + in_bytes
    peak = None
    if device == "cuda":
        name = torch.cuda.get_device_name()
        peak = 4.8e12 if "H200" in name else 3.35e12 if "H100" in name else None
    ours, direct_s = times["ours (backend='mamba_ssm')"], times["selective_scan_fn directly"]
    return {
        "size": dict(batch=batch, channels=channels, N=N, L=L),
        "seconds_median": times,
        "overhead": ours / direct_s - 1,
        "traffic_bytes_lower_bound": traffic,
        "achieved_GBps": traffic / direct_s / 1e9,
        "peak_GBps": None if peak is None else peak / 1e9,
        "fraction_of_peak": None if peak is None else traffic / direct_s / peak,
    }


def g_rounding_artifact(L, itype, groups, has_D, has_z, has_delta_bias, delta_softplus, *, device="cpu"):
    """What the first GPU run's harness did to a float16 / bfloat16 case on its own: the reference's gradients with the
    output gradient g in float32 against the same with g rounded to ``itype`` (what the kernel, whose output is in
    ``itype``, received). Returns the largest ratio to mamba-ssm's tolerance and its tensor: where it equals the
    ratio the GPU run reported, the kernel agreed with the reference fed the same g."""
    base = ms_case_inputs(L, itype, groups, has_D, has_z, has_delta_bias, device)
    exact = _scan_grads(base, "reference", delta_softplus, upcast=True)
    rounded = _scan_grads(base, "reference", delta_softplus, upcast=True, itype=itype)
    ratios = {
        k: _excess(rounded[k].to(base[k].dtype), exact[k].to(base[k].dtype), *grad_tols(k, itype, has_z))[1]
        for k in base
    }
    worst = max(ratios, key=ratios.get)
    return ratios[worst], worst
