#!/usr/bin/env bash
# GPU check, run on a machine with an NVIDIA GPU, CMake and a C++ compiler
# (no LLVM/MLIR needed): builds the runtime there (-DTESSEL_ENABLE_COMPILER=OFF)
# and runs the runtime's GPU smoke tests. Kernels compiled elsewhere to bundles
# are checked by the later stages of this script as the GPU back end lands.
#   scripts/gpu/check.sh [PREBUILT_BIN_DIR]
# PREBUILT_BIN_DIR: a bin/ with tessel-runtime-gpu-smoke built elsewhere (for
# machines without GoogleTest).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/tessel-gpu-check}
mkdir -p "$out"

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
date -u +"date: %Y-%m-%d %H:%M UTC"

echo "== runtime-only build (no LLVM/MLIR)"
build=/tmp/tessel-rt-build
if cmake -S "$root" -B "$build" -DTESSEL_ENABLE_COMPILER=OFF \
     -DCMAKE_BUILD_TYPE=Release >"$out/configure.log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" --target TesselRuntime \
     >"$out/build.log" 2>&1; then
  echo "runtime library built"
else
  echo "runtime build failed:"; tail -20 "$out/configure.log" "$out/build.log"
fi
smoke="$build/bin/tessel-runtime-gpu-smoke"
if ! cmake --build "$build" --target tessel-runtime-gpu-smoke >>"$out/build.log" 2>&1; then
  smoke="${1:-}/tessel-runtime-gpu-smoke"
  echo "(no GoogleTest here: using the prebuilt $smoke)"
fi

echo "== runtime smoke tests on the GPU"
TESSEL_RUNTIME_TEST_INPUTS="$root/test/Unit/Runtime/Inputs" "$smoke" 2>&1 | tee "$out/smoke.log"
