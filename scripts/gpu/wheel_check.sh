#!/usr/bin/env bash
# The one-install flow on a machine with an NVIDIA GPU and no LLVM: makes a
# wheel for this machine's Python around a compiler library built elsewhere
# (scripts/wheel.sh --compiler-library; the library comes from a
# `scripts/wheel.sh` build, which leaves it at
# <build-wheel>/python/tessel/libtessel_compiler.so), installs it into a fresh
# virtual environment and runs, with no bundle directory (every kernel
# compiled here, on first use, by the installed package):
#   tutorials   examples/tutorials/run.py (vector add, fused softmax, matmul)
#   times       first-call and warm-cache times of the ready ops
#   torch       the PyTorch tests (test/gpu)
#   numerics    the kernel numerics (test/numerics/test_kernels.py on the GPU)
#   scripts/gpu/wheel_check.sh LIBRARY [STAGE ...]   (default: every stage)
# Logs and the wheel under $OUT (default /tmp/tessel-wheel-check).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/tessel-wheel-check}
mkdir -p "$out"
library=${1:?usage: scripts/gpu/wheel_check.sh LIBRARY [tutorials|times|torch|numerics ...]}
shift
stages=${*:-tutorials times torch numerics}
py=$(command -v python3)

echo "== machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ldd --version | head -n 1
"$py" --version
date -u +"date: %Y-%m-%d %H:%M UTC"

echo "== the wheel for this Python, around $library"
start=$(date +%s)
BUILD_DIR=/tmp/tessel-wheel-build "$root/scripts/wheel.sh" --compiler-library "$library" \
  --python "$py" --out "$out/dist" || exit 1
echo "built in $(($(date +%s) - start)) s"
env=/tmp/tessel-env
rm -rf "$env"
# PyTorch, NumPy and pytest come from this Python's site-packages.
"$py" -m venv --without-pip --system-site-packages "$env" &&
  "$env/bin/python" -m pip install -q --no-index --no-deps "$(ls "$out"/dist/tessel-*.whl)" ||
  exit 1
cd /tmp # the installed package, not the source tree
"$env/bin/python" -c 'import tessel, sys
from tessel import _tessel
print("installed:", tessel.__file__, "compiler:", _tessel.has_compiler, _tessel.compiler_error or "")
sys.exit(not _tessel.has_compiler)' || exit 1
unset TESSEL_BUNDLE_DIR PYTHONPATH TESSEL_BUILD_DIR
export TESSEL_CACHE_DIR=$out/cache

rc=0
for stage in $stages; do
  echo "== $stage"
  case "$stage" in
    tutorials) "$env/bin/python" "$root/examples/tutorials/run.py" ;;
    times) "$env/bin/python" "$root/scripts/gpu/op_compile_times.py" ;;
    torch) (cd "$root" && "$env/bin/python" -m pytest -q -p no:cacheprovider test/gpu) \
             >"$out/torch.log" 2>&1
           status=$?; tail -n 5 "$out/torch.log"; (exit $status) ;;
    numerics) (cd "$root" && TESSEL_BACKEND=gpu TESSEL_BUNDLE_DIR=$out/no-bundles \
                 "$env/bin/python" -m pytest -q -p no:cacheprovider -k "not test_tessel_run" \
                 test/numerics/test_kernels.py) >"$out/numerics.log" 2>&1
              status=$?; tail -n 5 "$out/numerics.log"; (exit $status) ;;
    *) echo "unknown stage $stage"; false ;;
  esac || { echo "(stage $stage failed)"; rc=1; }
done
exit $rc
