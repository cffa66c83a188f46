#!/usr/bin/env bash
# Benchmarks on a machine with an NVIDIA GPU and PyTorch (no LLVM/MLIR needed): builds the
# runtime-only Python package, then runs bench/run.py with the ops' kernels precompiled on a
# development machine (scripts/gpu/record_bundles.sh fills <repo>/.gpu-bundles/ops).
#   scripts/gpu/bench.sh [bench/run.py options...]      e.g. --quick --budget-s 120
# Results go to $OUT (default bench/results).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/bench/results}
build=${TESSEL_RT_BUILD:-/tmp/tessel-rt-build}
py=$(command -v python3)
bundles=${TESSEL_BUNDLE_DIR:-$root/.gpu-bundles/ops}
mkdir -p "$out"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
[ -d "$bundles" ] || { echo "no bundles in $bundles: run scripts/gpu/record_bundles.sh"; exit 1; }
. "$root/scripts/gpu/python_package.sh"
build_python_package || exit 1
cd "$root" && TESSEL_BUNDLE_DIR="$bundles" TESSEL_CACHE_DIR=/tmp/tessel-cache \
  PYTHONPATH="$build/python" "$py" bench/run.py --out-dir "$out" "$@"
