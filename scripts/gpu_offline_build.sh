#!/usr/bin/env bash
# Build mamba-ssm and causal-conv1d for one GPU architecture on a machine with no package index
# (an offline cluster node, or this project's lent GPU machines), reusing the wheels afterwards.
#
#   scripts/gpu_offline_build.sh fetch    # where PyPI is reachable: download the two source archives into
#                                         # .gpu/src, each checked against the sha256 PyPI publishes
#   scripts/gpu_offline_build.sh build    # on the GPU machine (torch, nvcc, ninja installed): build wheels for
#                                         # TORCH_CUDA_ARCH_LIST only (default 9.0 = H100/H200) into .gpu/wheels
#   scripts/gpu_offline_build.sh install  # install the built wheels (no index, no dependency resolution)
#   scripts/gpu_offline_build.sh check    # import both and run one selective scan on the GPU
#
# Why: mamba-ssm's PyPI release is a source archive whose setup.py first tries to download a prebuilt wheel
# from GitHub; with MAMBA_FORCE_BUILD=TRUE (and CAUSAL_CONV1D_FORCE_BUILD=TRUE) it compiles the CUDA kernels
# against the torch already installed, so --no-build-isolation is needed (an isolated build would try to fetch
# torch). Building for the local architecture only keeps the build to minutes instead of an hour.
# With internet the normal install is: pip install 'mamba_recall[gpu]' --no-build-isolation (README, "GPU").
# Carry .gpu/ to the machine (the device tool: `carry: [".gpu"]`); .gpu/ is git-ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
MAMBA_SSM_VERSION="${MAMBA_SSM_VERSION:-2.3.2.post1}"
CAUSAL_CONV1D_VERSION="${CAUSAL_CONV1D_VERSION:-1.7.0}"
PYTHON="${PYTHON:-python3}"
DIR=.gpu

fetch() {
  mkdir -p "$DIR/src"
  "$PYTHON" - "$DIR/src" "mamba-ssm==$MAMBA_SSM_VERSION" "causal-conv1d==$CAUSAL_CONV1D_VERSION" <<'EOF'
import hashlib, json, sys, urllib.request
from pathlib import Path
out = Path(sys.argv[1])
for spec in sys.argv[2:]:
    name, version = spec.split("==")
    meta = json.load(urllib.request.urlopen(f"https://pypi.org/pypi/{name}/json", timeout=60))
    sdists = [u for u in meta["releases"].get(version, []) if u["packagetype"] == "sdist"]
    if not sdists:
        sys.exit(f"error: PyPI has no source archive of {spec}; pick another version (MAMBA_SSM_VERSION / CAUSAL_CONV1D_VERSION).")
    u = sdists[0]
    data = urllib.request.urlopen(u["url"], timeout=300).read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != u["digests"]["sha256"]:
        sys.exit(f"error: {u['filename']}: sha256 {digest} differs from PyPI's {u['digests']['sha256']}; download again.")
    (out / u["filename"]).write_bytes(data)
    print(f"{u['filename']}  {len(data)} bytes  sha256 {digest}")
EOF
}

build() {
  ls "$DIR"/src/*.tar.gz >/dev/null 2>&1 || { echo "error: no source archives in $DIR/src; run '$0 fetch' where PyPI is reachable and carry $DIR here." >&2; exit 2; }
  command -v nvcc >/dev/null || { echo "error: nvcc not found; the build needs the CUDA toolkit that matches torch's CUDA." >&2; exit 2; }
  "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)" 2>/dev/null || {
    echo "error: $PYTHON has no torch that sees a CUDA device; run the build on the GPU machine (PYTHON=... names its python)." >&2; exit 2; }
  # Both setup.py hard-code nine -gencode targets with CUDA 13 and ignore TORCH_CUDA_ARCH_LIST: tools/gpu_check.py
  # unpacks the archives, drops that list (patch_gencode) and builds both wheels at once with MAX_JOBS cores
  # (344 s for both on a 16-core H100 machine, 2026-11-27).
  GPU_CHECK_WORK="$DIR" "$PYTHON" tools/gpu_check.py "$DIR" --build --arch "${TORCH_CUDA_ARCH_LIST:-9.0}" \
    --jobs "${MAX_JOBS:-$(nproc)}"
  ls -la "$DIR/wheels"
}

install() {
  ls "$DIR"/wheels/*.whl >/dev/null 2>&1 || { echo "error: no wheels in $DIR/wheels; run '$0 build' on the GPU machine first." >&2; exit 2; }
  "$PYTHON" -m pip install --no-index --no-deps "$DIR"/wheels/*.whl
}

check() {
  "$PYTHON" - <<'EOF'
import torch
from mamba_ssm.ops.selective_scan_interface import selective_scan_fn
import causal_conv1d  # noqa: F401
u = torch.randn(2, 8, 64, device="cuda"); delta = torch.rand_like(u)
A = -torch.rand(8, 4, device="cuda"); B = torch.randn(2, 4, 64, device="cuda"); C = torch.randn_like(B)
print("selective_scan_fn ok:", tuple(selective_scan_fn(u, delta, A, B, C).shape), torch.cuda.get_device_name())
EOF
}

case "${1:-}" in
  fetch|build|install|check) "$1" ;;
  *) echo "usage: $0 fetch|build|install|check (see the comment at the top)" >&2; exit 2 ;;
esac
