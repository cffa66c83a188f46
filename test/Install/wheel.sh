#!/usr/bin/env bash
# Builds the self-contained wheel (scripts/wheel.sh: the compiler library with
# LLVM/MLIR linked in), installs it into a fresh virtual environment and runs
# test/Install/wheel_check.py there, outside the source tree; then does the
# same for a wheel whose extension was built without LLVM around that compiler
# library (how a wheel for another Python is made). Prints "PASS: ..." or
# "FAIL: ..." last.
#   test/Install/wheel.sh [WORK_DIR]   (default: a temporary one)
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
name="build the wheel and use it from a virtual environment"
. "$root/test/Install/common.sh"

# $1: wheel, $2: environment directory. NumPy comes from the system (no
# package index here): the environment sees the system's site-packages, and
# the check makes sure tessel itself is the environment's.
install_and_check() {
  step /usr/bin/python3 -m venv --without-pip --system-site-packages "$2" ||
    fail "make $2"
  step "$2/bin/python" -m pip install --no-index --no-deps -q "$1" ||
    fail "install $1"
  (cd "$work" && env -u PYTHONPATH -u TESSEL_BUILD_DIR -u TESSEL_COMPILER_LIBRARY \
     TESSEL_CACHE_DIR="$work/cache" \
     "$2/bin/python" "$root/test/Install/wheel_check.py") >>"$log" 2>&1 ||
    fail "check $1 in $2"
  grep '^wheel check' "$log" | tail -n 1
}

BUILD_DIR=$work/build step "$root/scripts/wheel.sh" --out "$work/dist" || fail "build the wheel"
wheel=$(ls "$work"/dist/tessel-*.whl) || fail "no wheel"
/usr/bin/python3 -c 'import sys, zipfile
sys.exit("tessel/libtessel_compiler.so" not in zipfile.ZipFile(sys.argv[1]).namelist())' "$wheel" ||
  fail "no compiler library in $wheel"
install_and_check "$wheel" "$work/env"

# The extension alone (no LLVM) around the first build's compiler library.
library=$work/build/python/tessel/libtessel_compiler.so
BUILD_DIR=$work/build-runtime step "$root/scripts/wheel.sh" --compiler-library "$library" \
  --out "$work/dist-runtime" || fail "build the wheel around a compiler library"
grep -q 'TESSEL_ENABLE_COMPILER:BOOL=OFF' "$work/build-runtime/CMakeCache.txt" ||
  fail "the second wheel's build has the compiler"
install_and_check "$(ls "$work"/dist-runtime/tessel-*.whl)" "$work/env-runtime"
echo "PASS: $name"
