#!/usr/bin/env bash
# The whole test suite: installs what is missing, configures, builds, runs
# every test and ends with one summary line "N passed, N failed".
#   scripts/test.sh            (build directory: build/)
#   BUILD_DIR=... JOBS=... scripts/test.sh
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

"$root/scripts/deps.sh" || { echo "error: installing dependencies failed"; exit 1; }

cmake -S "$root" -B "$build" -G Ninja \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; echo "error: configure failed"; exit 1; }
ninja -C "$build" -j "$jobs" all || { echo "error: build failed"; exit 1; }

passed=0
failed=0
count() { # $1: log, $2: pass regex, $3: fail regex
  local p f
  p=$(grep -cE "$2" "$1" || true)
  f=$(grep -cE "$3" "$1" || true)
  passed=$((passed + p))
  failed=$((failed + f))
}

echo "== lit"
/usr/lib/llvm-22/bin/lit -v "$build/test" 2>&1 | tee "$build/lit.log"
count "$build/lit.log" '^PASS: ' '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): '
grep -qE '^(UNSUPPORTED|XFAIL): ' "$build/lit.log" &&
  { echo "error: skipped or expected-fail lit tests are not allowed"; failed=$((failed + 1)); }

echo "== unit tests"
if compgen -G "$build/bin/*Tests" >/dev/null; then
  for t in "$build"/bin/*Tests; do
    "$t" 2>&1 | tee "$build/$(basename "$t").log"
    count "$build/$(basename "$t").log" '^\[       OK \] ' '^\[  FAILED  \] [^ ]+\.[^ ]+ \('
  done
fi

echo
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
