#!/usr/bin/env bash
# Records, on the development machine (LLVM/MLIR; tesselc, tessel-run and the
# Python package are built first by scripts/build.sh), the kernel bundles that
# scripts/gpu/check.sh runs on a GPU:
# runs every case of test/numerics/test_kernels.py on the CPU interpreter with
# TESSEL_BACKEND=record, which also compiles each distinct (kernel file, kernel,
# defines) with `tesselc --emit=bundle` (PTX for $TARGET) into the bundle
# directory (see test/numerics/tessel_run.py), and the kernels of the
# compute-sanitizer runs (scripts/gpu/sanitize_cases.txt) into its sanitize/.
# Nothing is skipped here; the GPU run leaves out only the interpreter's own
# plumbing tests (check.sh).
# Then, into BUNDLE_DIR/ops, the Python package's precompiled kernels: every
# configuration the ready ops launch (python -m tessel.precompile), the
# kernels of test/gpu, for the PyTorch tests of check.sh, and the empty kernel
# of the benchmark's launch workload.
#   scripts/gpu/record_bundles.sh [BUNDLE_DIR]     (default <repo>/.gpu-bundles)
# Environment: TARGET (default sm_90a, for an H100/H200: Hopper's warpgroup
# MMA; sm_90 or sm_80 for other GPUs), TESSEL_BUILD_DIR (default
# <repo>/build), PYTHON (default /usr/bin/python3), BUNDLE_LIMIT_MB (default 40: fail above it, the device
# tool carries at most 64 MiB with the working tree).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mkdir -p "${1:-$root/.gpu-bundles}" && cd "${1:-$root/.gpu-bundles}" && pwd)
python=${PYTHON:-/usr/bin/python3}
limit_mb=${BUNDLE_LIMIT_MB:-40}
target=${TARGET:-sm_90a}
build=${TESSEL_BUILD_DIR:-$root/build}

# tesselc and tessel-run record, the Python package precompiles the ops.
BUILD_DIR=$build "$root/scripts/build.sh" tesselc tessel-run TesselPython

# A fresh record: no stale bundles of kernels that changed since.
rm -f "$dir"/*.bundle "$dir"/*.bundle.tmp* "$dir/index.json" "$dir/index.json.tmp"* "$dir/.index.lock"
rm -rf "$dir/ops" "$dir/sanitize"

cd "$root"
TESSEL_BACKEND=record TESSEL_BUNDLE_DIR="$dir" TESSEL_TARGET="$target" \
  TESSEL_BUILD_DIR="$build" \
  "$python" -m pytest -q -p no:cacheprovider test/numerics/test_kernels.py
rm -f "$dir/.index.lock"
"$python" scripts/gpu/sanitize.py record --tesselc "$build/bin/tesselc" \
  --bundles "$dir/sanitize" --target "$target"

PYTHONPATH="$build/python" "$python" -m tessel.precompile --out "$dir/ops" --target "$target" \
  --head-dims 64,128 --dtypes f16,bf16 --mta 6x11,3x4
PYTHONPATH="$build/python" "$python" -m tessel.precompile --out "$dir/ops" --target "$target" \
  --source test/gpu/add.tsl -D BLOCK=256 >/dev/null
PYTHONPATH="$build/python" "$python" -m tessel.precompile --out "$dir/ops" --target "$target" \
  --source bench/launch_empty.tsl >/dev/null

count=$(find "$dir" -name '*.bundle' | wc -l)
bytes=$(du -sb "$dir" | cut -f1)
echo "recorded $count bundles in $dir: $((bytes / 1024)) KiB"
if [ "$bytes" -gt $((limit_mb * 1024 * 1024)) ]; then
  echo "error: the bundles take more than $limit_mb MB: record a subset (pytest -k)" >&2
  exit 1
fi
