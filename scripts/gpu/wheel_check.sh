#!/usr/bin/env bash
# The one-install flow on a machine with an NVIDIA GPU and no LLVM: makes a
# wheel for this machine's Python around a compiler library built elsewhere
# (scripts/wheel.sh --compiler-library; the library comes from a
# `scripts/wheel.sh` build, which leaves it at
# <build-wheel>/python/tessel/libtessel_compiler.so), installs it (pip
# --target a fresh directory) and runs, with no bundle directory (every kernel
# compiled here, on first use, by the installed package):
#   tutorials   examples/tutorials/run.py (vector add, fused softmax, matmul)
#   times       first-call and warm-cache times of the ready ops
#   torch       the PyTorch tests (test/gpu)
#   numerics    the kernel numerics (test/numerics/test_kernels.py on the GPU)
#   tuning      the ops with their tile tables against the ops tuned (op_tuning.py)
#   scripts/gpu/wheel_check.sh LIBRARY [STAGE ...]   (default: every stage)
# Logs and the wheel under $OUT (default /tmp/tessel-wheel-check).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/tessel-wheel-check}
mkdir -p "$out"
library=${1:?usage: scripts/gpu/wheel_check.sh LIBRARY [tutorials|times|torch|numerics|tuning ...]}
shift
stages=${*:-tutorials times torch numerics tuning}
py=$(command -v python3)

echo "== machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ldd --version | head -n 1
"$py" --version
date -u +"date: %Y-%m-%d %H:%M UTC"

echo "== the wheel for this Python, around $library"
start=$(date +%s)
wheel=$(BUILD_DIR=/tmp/tessel-wheel-build "$root/scripts/wheel.sh" --compiler-library "$library" \
  --python "$py" --out "$out/dist" | tee /dev/stderr | tail -n 1) && [ -f "$wheel" ] || exit 1
echo "built in $(($(date +%s) - start)) s"
# Installed into a directory of its own, first on the path; PyTorch, NumPy and
# pytest are this Python's.
site=/tmp/tessel-site
rm -rf "$site"
"$py" -m pip install -q --no-index --no-deps --target "$site" "$wheel" || exit 1
unset TESSEL_BUNDLE_DIR TESSEL_BUILD_DIR TESSEL_COMPILER_LIBRARY
export PYTHONPATH=$site TESSEL_CACHE_DIR=$out/cache
cd /tmp # the installed package, not the source tree
"$py" -c 'import tessel, sys
from tessel import _tessel
print("installed:", tessel.__file__, "compiler:", _tessel.has_compiler, _tessel.compiler_error or "")
sys.exit(not _tessel.has_compiler)' || exit 1

rc=0
for stage in $stages; do
  echo "== $stage"
  case "$stage" in
    tutorials) "$py" "$root/examples/tutorials/run.py" ;;
    times) "$py" "$root/scripts/gpu/op_compile_times.py" ;;
    tuning) "$py" "$root/scripts/gpu/op_tuning.py" ;;
    torch) (cd "$root" && "$py" -m pytest -q -p no:cacheprovider test/gpu) \
             >"$out/torch.log" 2>&1
           status=$?; tail -n 5 "$out/torch.log"; (exit $status) ;;
    numerics) (cd "$root" && TESSEL_BACKEND=gpu TESSEL_BUNDLE_DIR=$out/no-bundles \
                 "$py" -m pytest -q -p no:cacheprovider -k "not test_tessel_run" \
                 test/numerics/test_kernels.py) >"$out/numerics.log" 2>&1
              status=$?; tail -n 5 "$out/numerics.log"; (exit $status) ;;
    *) echo "unknown stage $stage"; false ;;
  esac || { echo "(stage $stage failed)"; rc=1; }
done
exit $rc
