"""What the book promises about repeating a computation, and the one tolerance that checks it across CPU types.

The promise (book appendix "Engineering notes", section "Determinism"):

* **One machine, one thread count: bit for bit.** The same command on the same machine, with the same number of
  threads, gives the same weights, numbers and notebook outputs, every byte (``torch.use_deterministic_algorithms``
  in the notebooks, every data stream seeded by its rule, one thread per run-store job).
* **Another CPU type: within** :data:`WEIGHT_RTOL` **and the same verdicts.** Intel, AMD and ARM CPUs (and one CPU
  running another instruction set: AVX-512, AVX2 or none) round floating-point sums in another order, so a
  model trained on one differs from the same model trained on another in its last bits, and training carries the
  difference forward: on an AMD EPYC, the 600 steps of ``ch1_k2_ci`` trained with torch's AVX2 or scalar kernels
  differ from the AVX-512 ones by at most 8.3·10⁻⁷ in a weight, and an Intel Xeon's by about 10⁻⁵ (weights of
  size ~1). The promise there: every weight within :data:`WEIGHT_RTOL` of the tensor's largest entry, every
  measured number the book prints the same at the precision it prints (:data:`PRINTED_DIGITS` significant digits
  for accuracies), and every verdict the same. A number that sits on a rounding boundary (an exact tie of a
  readout, as page 3.4's constructions had) is made not to depend on the last bits (ties count 1/k there).

So nothing compares bits with a file made on another CPU: a retrained checkpoint is compared bit for bit with a
retrain on the same machine, and with the committed file through :func:`compare_weights`. Every record names the
CPU and the instruction set it ran on (:func:`cpu_fingerprint`, in the provenance), so a reader can tell which
comparison applies. ``tests/base/test_determinism.py`` checks both halves, forcing a second instruction set on one
machine: ``ATEN_CPU_CAPABILITY=default`` (torch's scalar kernels; ``avx2`` where the CPU has AVX-512) and
``NUMBA_CPU_NAME=generic`` (the fused scan's kernels compiled for no particular CPU).
"""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import dataclass
from pathlib import Path

#: Environment variables that choose the instruction set: torch's ATen kernels and the fused scan's numba kernels.
ISA_ENV = ("ATEN_CPU_CAPABILITY", "NUMBA_CPU_NAME")
#: A weight trained on another CPU type lies within this fraction of its tensor's largest |entry| of the weight
#: trained here (seen: 8.3e-7 AVX-512 vs AVX2 on one AMD EPYC, about 1e-5 Intel Xeon vs AMD EPYC, 600 steps).
WEIGHT_RTOL = 1e-3
#: Significant digits the book prints for an accuracy or a mean (``f"{x:.3g}"``, ``0.992``): the same on every CPU.
PRINTED_DIGITS = 3


@functools.cache
def _cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo``, else ``platform.processor()``): read once per process."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or None


def cpu_fingerprint() -> dict:
    """The CPU a computation ran on, as far as it decides the last bits: the model name (``/proc/cpuinfo``, or
    ``platform.processor()``), the machine (``x86_64``, ``arm64``), torch's kernel instruction set
    (``torch.backends.cpu.get_cpu_capability()``: ``AVX512``, ``AVX2``, ``DEFAULT``) and the environment variables
    that force one (:data:`ISA_ENV`, only those set)."""
    out = {"model": _cpu_model(), "machine": platform.machine()}
    try:
        import torch

        out["torch_isa"] = torch.backends.cpu.get_cpu_capability()
    except Exception:  # torch absent or too old to say: the model name still tells the CPU
        out["torch_isa"] = None
    forced = {k: os.environ[k] for k in ISA_ENV if os.environ.get(k)}
    if forced:
        out["forced"] = forced
    return out


@dataclass(frozen=True)
class WeightComparison:
    """Two state dicts compared: ``identical`` (every tensor equal, bit for bit), ``max_abs`` (the largest |a - b|
    over all entries), ``worst`` (the tensor where |a - b| / max|a| is largest, and that ratio ``max_rel``) and
    ``within`` (every tensor within :data:`WEIGHT_RTOL` of its largest entry)."""

    identical: bool
    max_abs: float
    max_rel: float
    worst: str | None
    within: bool

    def __str__(self) -> str:
        if self.identical:
            return "bit-identical"
        return (
            f"not bit-identical: largest difference {self.max_abs:.3g} ({self.max_rel:.3g} of its tensor's scale, in "
            f"{self.worst}); {'within' if self.within else 'OUTSIDE'} the cross-CPU tolerance {WEIGHT_RTOL:g}"
        )


def compare_weights(a: dict, b: dict, rtol: float = WEIGHT_RTOL) -> WeightComparison:
    """Compare two state dicts (name -> tensor) of the same model: the same names and shapes are required
    (ValueError naming the first that differs), then :class:`WeightComparison`. The scale of each tensor is its
    largest |entry| in ``a`` (at least 1e-12), so a tensor of small weights is held to its own size."""
    import torch

    if list(a) != list(b):
        raise ValueError(f"the two checkpoints hold different tensors: {sorted(set(a) ^ set(b)) or list(a)}")
    identical, max_abs, max_rel, worst = True, 0.0, 0.0, None
    for name, x in a.items():
        y = b[name]
        if tuple(x.shape) != tuple(y.shape):
            raise ValueError(
                f"tensor {name} has shape {tuple(x.shape)} in one checkpoint, {tuple(y.shape)} in the other"
            )
        if torch.equal(x, y):
            continue
        identical = False
        diff = (x.double() - y.double()).abs().max().item()
        rel = diff / max(x.double().abs().max().item(), 1e-12)
        max_abs = max(max_abs, diff)
        if rel >= max_rel:
            max_rel, worst = rel, name
    return WeightComparison(identical, max_abs, max_rel, worst, identical or max_rel <= rtol)


def printed(x: float, digits: int = PRINTED_DIGITS) -> str:
    """``x`` as the book prints a measured number (``digits`` significant digits): the form that must be the same
    on every CPU type."""
    return f"{x:.{digits}g}"
