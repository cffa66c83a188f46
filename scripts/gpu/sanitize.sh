#!/usr/bin/env bash
# Every kernel of kernels/ once under compute-sanitizer's memcheck, racecheck
# and synccheck, on a machine with an NVIDIA GPU and the CUDA toolkit (no
# LLVM/MLIR needed): builds tessel-run without the compiler and runs the lines
# of scripts/gpu/sanitize_cases.txt from the bundles that
# scripts/gpu/record_bundles.sh compiled into <bundles>/sanitize. Prints a
# table (kernel, tool, errors) and the totals; fails on any sanitizer error,
# failed run or timeout. scripts/gpu/check.sh runs it as its last stage.
#   scripts/gpu/sanitize.sh
# Environment: TESSEL_BUNDLE_DIR (default <repo>/.gpu-bundles), OUT (logs go
# to $OUT/sanitize; default /tmp/tessel-gpu-check), TESSEL_RT_BUILD (the
# runtime-only build directory, default /tmp/tessel-rt-build), SANITIZE_TOOLS
# (default memcheck,racecheck,synccheck), SANITIZE_CASES (comma-separated lines of
# sanitize_cases.txt, default all; the control runs whichever are chosen).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/tessel-gpu-check}/sanitize
build=${TESSEL_RT_BUILD:-/tmp/tessel-rt-build}
bundles=${TESSEL_BUNDLE_DIR:-$root/.gpu-bundles}/sanitize
mkdir -p "$out"

if [ ! -d "$bundles" ]; then
  echo "no bundles in $bundles: run scripts/gpu/record_bundles.sh first (and carry .gpu-bundles)"
  exit 1
fi
if ! { cmake -S "$root" -B "$build" -DTESSEL_ENABLE_COMPILER=OFF -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$build" -j "$(nproc)" --target tessel-run; } >"$out/build.log" 2>&1; then
  echo "building tessel-run failed:"; tail -20 "$out/build.log"
  exit 1
fi
exec python3 "$root/scripts/gpu/sanitize.py" run --tessel-run "$build/bin/tessel-run" \
  --bundles "$bundles" --out "$out" --tools "${SANITIZE_TOOLS:-memcheck,racecheck,synccheck}" \
  --cases "${SANITIZE_CASES:-}"
