#!/usr/bin/env bash
# GPU check, run on a machine with an NVIDIA GPU, CMake and a C++ compiler
# (no LLVM/MLIR needed): builds the runtime there (-DTESSEL_ENABLE_COMPILER=OFF),
# runs the runtime's GPU smoke tests, the kernel numerics of the bundles that
# scripts/gpu/record_bundles.sh compiled elsewhere, the Python package's tests
# with PyTorch, and last every kernel once under compute-sanitizer (memcheck,
# racecheck, synccheck: sanitize.sh, which also runs alone). Fails if any
# stage fails.
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
smoke_rc=${PIPESTATUS[0]}

echo "== numerics of the recorded bundles (test/numerics/test_kernels.py on the GPU)"
# Kernels compiled on the development machine by scripts/gpu/record_bundles.sh
# into $TESSEL_BUNDLE_DIR (default <repo>/.gpu-bundles), run here through the
# Python extension's runtime (runtime-only build) by the same tests as on the
# CPU interpreter (TESSEL_BACKEND=gpu in test/numerics/tessel_run.py). Left out:
# test_tessel_run_* (the interpreter's own plumbing: a deliberate out-of-bounds
# load, which would poison the CUDA context, and a missing tessel-run binary).
bundles=${TESSEL_BUNDLE_DIR:-$root/.gpu-bundles}
numerics_filter="not test_tessel_run"
py=$(command -v python3)
if [ ! -f "$bundles/index.json" ]; then
  echo "no bundles in $bundles: run scripts/gpu/record_bundles.sh first (and carry .gpu-bundles)"
  exit 1
fi
echo "$(find "$bundles" -maxdepth 1 -name '*.bundle' | wc -l) bundles in $bundles"
. "$root/scripts/gpu/python_package.sh"
build_python_package || exit 1
"$py" -c "import numpy, pytest" 2>/dev/null || echo "(python3 lacks numpy or pytest)"
(cd "$root" && TESSEL_BACKEND=gpu TESSEL_BUNDLE_DIR="$bundles" PYTHONPATH="$build/python" \
   "$py" -m pytest -v -s -p no:cacheprovider --junitxml="$out/numerics.xml" \
   -k "$numerics_filter" test/numerics/test_kernels.py) >"$out/numerics.log" 2>&1
numerics_rc=$?
tail -3 "$out/numerics.log"
echo "== numerics table (pytest rc $numerics_rc; full log: numerics.log)"
"$py" "$root/scripts/gpu/numerics_table.py" "$out/numerics.log" "$out/numerics.xml" \
  | tee "$out/numerics-table.txt"

echo "== the Python package with PyTorch (test/gpu: ops, autograd, framework arrays)"
# The runtime-only package finds the ops' kernels precompiled in $bundles/ops.
(cd "$root" && TESSEL_BUNDLE_DIR="$bundles/ops" TESSEL_CACHE_DIR="$out/cache" \
   PYTHONPATH="$build/python" "$py" -m pytest -v -s -p no:cacheprovider -rs test/gpu) \
  >"$out/torch.log" 2>&1
torch_rc=$?
grep -E "^(PASSED|FAILED|SKIPPED|ERROR)|^test/gpu.*(PASSED|FAILED|SKIPPED|ERROR)|max abs|^  [a-z_]+ .*(f16|bf16|float)|passed|failed" \
  "$out/torch.log" | tail -150

echo "== compute-sanitizer: every kernel once under memcheck, racecheck, synccheck"
# tessel-run's bundle mode on the lines of scripts/gpu/sanitize_cases.txt;
# logs under $out/sanitize.
OUT="$out" TESSEL_BUNDLE_DIR="$bundles" TESSEL_RT_BUILD="$build" \
  "$root/scripts/gpu/sanitize.sh" 2>&1 | tee "$out/sanitize.txt"
sanitize_rc=${PIPESTATUS[0]}

[ "$smoke_rc" -eq 0 ] || echo "(the runtime smoke tests failed: rc $smoke_rc)"
[ "$numerics_rc" -eq 0 ] || echo "(the numerics failed: rc $numerics_rc)"
[ "$torch_rc" -eq 0 ] || echo "(the PyTorch tests failed: rc $torch_rc; see torch.log)"
[ "$sanitize_rc" -eq 0 ] || echo "(compute-sanitizer found errors or a run failed: rc $sanitize_rc)"
[ "$smoke_rc" -eq 0 ] && [ "$numerics_rc" -eq 0 ] && [ "$torch_rc" -eq 0 ] && [ "$sanitize_rc" -eq 0 ]
