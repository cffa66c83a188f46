#!/usr/bin/env bash
# Builds what the scripts run, after installing missing packages and
# configuring the build directory where needed (with the compiler, the runtime
# and the Python package, as scripts/test.sh does, so they share one build):
#   scripts/build.sh [TARGET ...]  (default: tesselc tessel-opt tessel-run TesselPython)
# Environment: BUILD_DIR (default <repo>/build), JOBS (default: ninja's).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(tesselc tessel-opt tessel-run TesselPython)

"$root/scripts/deps.sh"
configured=1
for option in TESSEL_ENABLE_COMPILER TESSEL_ENABLE_CUDA_RUNTIME TESSEL_ENABLE_PYTHON; do
  grep -qs "^$option:BOOL=ON\$" "$build/CMakeCache.txt" || configured=0
done
[ -f "$build/build.ninja" ] || configured=0
if [ "$configured" = 0 ]; then
  echo "== configuring $build"
  cmake -S "$root" -B "$build" -G Ninja -DTESSEL_ENABLE_COMPILER=ON \
    -DTESSEL_ENABLE_CUDA_RUNTIME=ON -DTESSEL_ENABLE_PYTHON=ON \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >"$build.configure.log" 2>&1 ||
    { tail -n 30 "$build.configure.log"; echo "error: configure failed (log: $build.configure.log)"; exit 1; }
fi
echo "== building ${targets[*]} in $build"
ninja -C "$build" ${JOBS:+-j "$JOBS"} "${targets[@]}" >"$build/scripts-build.log" 2>&1 ||
  { tail -n 40 "$build/scripts-build.log"; echo "error: build failed (log: $build/scripts-build.log)"; exit 1; }
