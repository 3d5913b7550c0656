"""Chapter 0, section 0.2 (``book/00_selective_scan/02_parallel_scan.ipynb``): paper 001's closing claim of
"efficient linear-time processing", measured two ways on the library's scans: the work (operations counted) that
computing the recurrence takes grows linearly with L, for the sequential loop and the parallel (chunked) scan, both
of which give the recurrence's result (tier ``exact``); and the wall time the committed CPU benchmark measured grows
no faster than linearly, for the compiled sequential loop (``fused``), the backend that runs the example's recurrence
as written.

Each measurement sits above the claim it measures; the package (``ch0/__init__.py``) registers the claims.
"""

from __future__ import annotations

import numpy as np

from mamba_recall.claims.core import Claim, Control, Evidence, Measurement, Revision, Rule, conds

#: this module's book section (its claims are judged on that page)
SECTION = "00_selective_scan/02_parallel_scan"


#: This section's claims, each declared below its measurement; ``ch0/__init__.py`` registers them with their
#: quotes.
CLAIMS: list[Claim] = []

#: lengths at which the work is counted (fixed, whatever the preset: the count is exact and cheap)
WORK_LENGTHS = (256, 512, 1024, 2048, 4096)
#: the counted scans' size: batch 1, 2 channels, N = 4, float64 (the count per token does not depend on the values)
WORK_SIZE = (1, 2, 4)
#: "linear" for an exponent fitted over L = 256–4096: L log L would give 1 + 1/ln(1024) = 1.14 there, L² gives 2; a
#: fixed per-call cost only lowers the exponent
LINEAR_EXPONENT = 1.05
#: the same bound for a noisy wall time: between linear (1) and L log L (1.14 over L = 512–4096)
LINEAR_TIME_EXPONENT = 1.1

_MATMUL = {"mm", "bmm", "addmm", "baddbmm"}


def count_work(fn, *args) -> int:
    """The elements the tensor operations of ``fn(*args)`` touch: for each operation that is not a view, the largest
    of its inputs' and outputs' sizes (m·n·k for a matrix product). Views, shapes and Python overhead count 0: the
    number is the algorithm's work, the same on every machine."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    import torch

    class _Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not func.is_view:
                tensors = [t for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)]
                if func.overloadpacket.__name__ in _MATMUL:
                    a, b = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)][-2:]
                    self.n += a.numel() * b.shape[-1]
                else:
                    self.n += max((t.numel() for t in tensors), default=0)
            return out

    counter = _Count()
    with counter:
        fn(*args)
    return counter.n


def _scan_work(backend: str, length: int, backward: bool) -> int:
    """The work of one selective scan (``delta_softplus``, D, z, Δ-bias) at ``length``, forward or forward +
    backward."""
    import torch

    from mamba_recall.scan import selective_scan
    from mamba_recall.scan.agreement import random_scan_inputs

    leaves = {k: v.requires_grad_(backward) for k, v in random_scan_inputs(*WORK_SIZE, length).items()}

    def step():
        out = selective_scan(**leaves, delta_softplus=True, backend=backend)
        if backward:
            torch.autograd.grad(out.sum(), list(leaves.values()))

    return count_work(step)


def quadratic_recurrence(log_a, x):
    """The states of h_t = exp(log_a_t) ⊙ h_{t−1} + x_t (h_0 = 0, along dim 1) in the attention-like form
    h_t = Σ_{s≤t} exp(Σ_{s<k≤t} log_a_k) x_s, through an L × L matrix per feature: the same recurrence in quadratic
    work, the null control of 001/linear-time-scan (a rule that read it as linear could not tell L from L²)."""
    import torch

    cs = torch.cumsum(log_a, dim=1)  # (b, L, K)
    seg = cs[:, :, None] - cs[:, None, :]  # (b, t, s, K): Σ_{s<k≤t} log a_k
    L = x.shape[1]
    causal = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()[None, :, :, None]
    weights = torch.exp(seg.masked_fill(~causal, float("-inf")))
    return torch.einsum("btsk,bsk->btk", weights, x)


def _quadratic_work(length: int) -> int:
    """The work of :func:`quadratic_recurrence` on the counted scans' size, on meta tensors (shapes only: an L × L
    matrix at L = 4096 would need a gigabyte)."""
    import torch

    b, d, n = WORK_SIZE
    x = torch.empty(b, length, d * n, dtype=torch.float64, device="meta")
    return count_work(quadratic_recurrence, x, x)


def _quadratic_agreement(length: int = 64) -> float:
    """Relative max error of :func:`quadratic_recurrence` against a sequential loop (float64): it computes the
    recurrence."""
    import torch

    g = torch.Generator().manual_seed(0)
    log_a, x = (
        -torch.rand(1, length, 8, generator=g, dtype=torch.float64),
        torch.randn(1, length, 8, generator=g, dtype=torch.float64),
    )
    h, states = torch.zeros(1, 8, dtype=torch.float64), []
    for t in range(length):
        h = torch.exp(log_a[:, t]) * h + x[:, t]
        states.append(h)
    ref = torch.stack(states, dim=1)
    return float((quadratic_recurrence(log_a, x) - ref).abs().max() / ref.abs().max())


def loglog_slope(lengths, values) -> float:
    """The exponent b of values ∝ L^b, least squares on log–log."""
    return float(np.polyfit(np.log(np.asarray(lengths, float)), np.log(np.asarray(values, float)), 1)[0])


def measure_linear_time(agreement, lengths, work_lengths=WORK_LENGTHS) -> Measurement:
    """ "Linear-time processing" as work: the elements the operations of one forward pass touch (:func:`count_work`)
    at L = ``work_lengths``, for the sequential loop (``reference``, the example's recurrence as written) and the
    parallel ``chunked`` scan, as the exponent b of work ∝ L^b; and that both compute the recurrence (``agreement``:
    :func:`mamba_recall.scan.agreement.backend_agreement`'s table, worst relative error over outputs and gradients in
    float64 at ``lengths``). Null control: the same recurrence in its quadratic (L × L) form."""
    rows = agreement[agreement["dtype"] == "float64"]
    worst = float(rows[["output rel. error", "max gradient rel. error"]].max().max())
    work = {
        (backend, backward): [_scan_work(backend, L, backward) for L in work_lengths]
        for backend in ("reference", "chunked")
        for backward in (False, True)
    }
    slope = {key: loglog_slope(work_lengths, w) for key, w in work.items()}
    per_token = {key: [w / L for w, L in zip(ws, work_lengths)] for key, ws in work.items()}
    quad = [_quadratic_work(L) for L in work_lengths]
    q_slope = loglog_slope(work_lengths, quad)
    control = Control(
        "null",
        "the same recurrence in its quadratic form (an L × L matrix per feature, quadratic_recurrence)",
        Measurement(
            {
                "worst_rel_error_fp64": _quadratic_agreement(),
                "work_exponent_reference": q_slope,
                "work_exponent_chunked": q_slope,
            },
            f"work ∝ L^{q_slope:.3f}",
            Evidence.exact(f"L = {list(work_lengths)}, shapes only"),
        ),
    )
    span = f"L = {work_lengths[0]}–{work_lengths[-1]}"

    def per_tok(key):
        return f"{per_token[key][0]:.0f} → {per_token[key][-1]:.0f} per token"

    return Measurement(
        {
            "worst_rel_error_fp64": worst,
            "work_exponent_reference": slope[("reference", False)],
            "work_exponent_chunked": slope[("chunked", False)],
            "work_exponent_chunked_fwd_bwd": slope[("chunked", True)],
            "work_exponent_reference_fwd_bwd": slope[("reference", True)],
        },
        f"forward-pass work ∝ L^{slope[('reference', False)]:.3f} for the sequential loop "
        f"({per_tok(('reference', False))}) and L^{slope[('chunked', False)]:.3f} for the chunked scan "
        f"({per_tok(('chunked', False))}) over {span}; both give the loop's result (max rel. error {worst:.1e}, "
        f"float64, outputs and every gradient, L up to {max(lengths)})",
        Evidence.exact(f"operations counted at {span} (batch 1, 2 channels, N = 4); {len(rows)} agreement cases"),
        note=(
            f"forward + backward: the chunked scan's work ∝ L^{slope[('chunked', True)]:.3f} "
            f"({per_tok(('chunked', True))}), so training through it is linear-time too; the sequential loop's "
            f"autograd backward is not (∝ L^{slope[('reference', True)]:.3f}, {per_tok(('reference', True))}): "
            "each step's slice of a (b, d, L, n) tensor gets a full-size gradient, a property of that Python "
            "reference, not of the recurrence, whose backward is the same scan reversed in time"
        ),
        control=control,
    )


CLAIMS += [
    Claim(
        "001/linear-time-scan",
        "processing the sequence takes linear time: the work of computing the recurrence grows linearly with L, for "
        "the sequential loop the example runs and for the parallel (chunked) scan, both of which compute it",
        "What This Represents",
        "no number given",
        Rule(
            why="'linear-time' is a statement of complexity: the operations a pass takes grow as L¹. Counted "
            "exactly, the exponent of work in L over L = 256–4096 is 1 for a linear pass (a fixed per-call cost "
            "only lowers it), 1.14 for L log L and 2 for a quadratic (L × L) form; the scans must also compute "
            "the recurrence (float64 agreement ≤ 1e-10 over thousands of steps; another recurrence differs at "
            "order 1). The quadratic form of the same recurrence is the null that must not pass",
            reproduced=conds(
                ("work_exponent_reference", "<=", LINEAR_EXPONENT),
                ("work_exponent_chunked", "<=", LINEAR_EXPONENT),
                ("worst_rel_error_fp64", "<=", 1e-10),
            ),
        ),
        measure_linear_time,
        SECTION,
        revisions=(
            Revision(
                date="2026-12-04",
                reason="Open review (referee-A; review of d645e6c, issue 51): the rule tested that the parallel "
                "scan agrees with the sequential loop, which an O(L²) implementation would pass as well, not that "
                "processing takes linear time; the rule now counts the work of each scan in L, with the quadratic "
                "form of the recurrence as the null that must fail.",
                rule_before="reproduced if worst_rel_error_fp64 ≤ 1e-10; otherwise not reproduced",
                status_before="reproduced",
            ),
        ),
    ),
]


def _time_exponent(table) -> tuple[float, tuple[float, float]]:
    """The exponent b of seconds ∝ L^b in a benchmark table (columns ``L``, ``seconds``) and its 95 % interval
    (least squares on log–log, Student t with n − 2 degrees of freedom, :func:`mamba_recall.runstore.regression_interval`)."""
    from mamba_recall.runstore import regression_interval

    fit = regression_interval(np.log(table["L"].astype(float)), np.log(table["seconds"].astype(float)))
    return fit["slope"], fit["slope_ci"]


def measure_time_scaling(bench) -> Measurement:
    """Wall time and memory of forward + backward against L, from the committed CPU benchmark bundle: the exponent of
    time in L with its 95 % interval for the ``fused`` backend (table ``memory_scaling_fused``) and the ``chunked``
    one (``memory_scaling``), and the exponent of the bytes saved for the backward pass (chunked)."""
    fused, chunked = bench.tables["memory_scaling_fused"], bench.tables["memory_scaling"]
    b_fused, ci_fused = _time_exponent(fused)
    b_chunked, ci_chunked = _time_exponent(chunked)
    mem = loglog_slope(chunked["L"], chunked["saved_MB"])
    cfg = bench.config.get("scaling", {})
    per_token = (chunked["seconds"] / chunked["L"] / (cfg.get("batch", 1) * cfg.get("channels", 1)) * 1e6).tolist()
    return Measurement(
        {"time_exponent_fused": b_fused, "time_exponent_chunked": b_chunked, "memory_exponent_chunked": mem},
        f"forward + backward time ∝ L^{b_fused:.2f} (fused) and L^{b_chunked:.2f} (chunked) over L = "
        f"{fused['L'].tolist()}; bytes saved for backward ∝ L^{mem:.3f} (chunked)",
        Evidence.from_bundle(
            bench,
            f"{len(fused)} lengths (batch {cfg.get('batch')}, {cfg.get('channels')} channels, N {cfg.get('N')}), "
            f"the minimum of {bench.config.get('repeats')} timed runs each",
            seeds=0,
            tier="exact",
        ),
        intervals={"time_exponent_fused": ci_fused, "time_exponent_chunked": ci_chunked},
        note=(
            "the fused backend is the example's recurrence as written (one compiled loop over t per channel, the N "
            "states kept local); the chunked scan, our parallel rewriting for PyTorch, is shown, not judged: its "
            f"time per token rises {per_token[0]:.2f} → {per_token[-1]:.2f} µs per channel-token while its work per "
            "token is constant (001/linear-time-scan), so the extra time is not operations (its tensors saved for "
            f"backward grow {chunked['saved_MB'].iloc[0]:.0f} → {chunked['saved_MB'].iloc[-1]:.0f} MB). Four lengths "
            "timed once each (the minimum of the repeats) give a wide interval; what would settle it: the benchmark's "
            "scaling step (benchmarks/scan.py, run_memory_scaling) over L = 512–16384 with each length timed in "
            "several independent runs on an idle machine, a few CPU-minutes"
        ),
    )


CLAIMS += [
    Claim(
        "001/linear-memory",
        "processing takes linear time as measured: the wall time of a forward + backward pass of the compiled "
        "sequential scan grows no faster than linearly with L (the memory it keeps is shown beside it)",
        "What This Represents",
        "no number given",
        Rule(
            why="'linear-time' measured on a clock: the exponent of time in L is at most 1 (less where a fixed "
            "per-call cost still counts); 1.1 lies between linear and L log L (1.14 over L = 512–4096). Judged on "
            "the backend that runs the example's recurrence as written (fused), over the exponent's whole 95 % "
            "interval (a noisy timing)",
            reproduced=conds(("time_exponent_fused", "<=", LINEAR_TIME_EXPONENT)),
        ),
        measure_time_scaling,
        SECTION,
        revisions=(
            Revision(
                date="2026-12-04",
                reason="Open review (referee-A; review of d645e6c, issue 51): the sentence claims linear time and the "
                "rule tested the memory saved for backward; the rule now reads the committed benchmark's wall time "
                "in L, with its interval, on the backend that runs the example's recurrence.",
                rule_before="reproduced if log_log_slope ≤ 1.05 and log_log_slope ≥ 0.95 and "
                "bytes_per_token_spread ≤ 0.05; otherwise not reproduced",
                status_before="reproduced",
            ),
        ),
    ),
]
