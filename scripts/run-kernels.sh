#!/usr/bin/env bash
# The main job: compile every kernel in kernels/ and run it against the
# float64 references. On a machine without the GPU back end or without a GPU
# the kernels run on the CPU interpreter.
#   scripts/run-kernels.sh            (build directory: build/)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}

"$root/scripts/deps.sh"
if [ ! -x "$build/bin/tesselc" ] || [ ! -x "$build/bin/tessel-run" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
fi
ninja -C "$build" tesselc tessel-opt tessel-run >/dev/null

echo "== compiling kernels/*.tsl"
for f in "$root"/kernels/*.tsl; do
  kernels=$("$build/bin/tesselc" "$f" | grep -c 'tessel.kernel' || true)
  "$build/bin/tesselc" "$f" | "$build/bin/tessel-opt" \
    --tessel-expand-online --tessel-lower-stream-k >/dev/null
  printf '  %-22s %d kernel(s): tessel IR verified, online ops expanded, stream-K lowered\n' \
    "$(basename "$f")" "$kernels"
done

echo "== running them on the CPU interpreter against float64 references"
cd "$root/test/numerics"
TESSEL_BUILD_DIR=$build /usr/bin/python3 -m pytest -q -s test_kernels.py test_stream_k.py
