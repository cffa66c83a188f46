#!/usr/bin/env bash
# The whole test suite: installs what is missing, configures, builds, runs
# every test and ends with one summary line "N passed, N failed".
#   scripts/test.sh            (build directory: build/)
#   BUILD_DIR=... JOBS=... FUZZ_SECONDS=60 scripts/test.sh
#   TESSEL_SKIP_SANITIZERS=1 scripts/test.sh   (skip the ASan/UBSan + fuzz stage)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}
# The build directories below (build, the wheel's) share compiled objects
# through ccache when paths are taken relative to the repository.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}

"$root/scripts/deps.sh" || { echo "error: installing dependencies failed"; exit 1; }

cmake -S "$root" -B "$build" -G Ninja -DTESSEL_ENABLE_PYTHON=ON \
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

# lit and the C++ unit tests of one build directory.
run_suite() { # $1: build dir, $2: label
  echo "== lit ($2)"
  /usr/lib/llvm-22/bin/lit -v "$1/test" 2>&1 | tee "$1/lit.log"
  count "$1/lit.log" '^PASS: ' '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): '
  if grep -qE '^(UNSUPPORTED|XFAIL): ' "$1/lit.log"; then
    echo "error: skipped or expected-fail lit tests are not allowed"
    failed=$((failed + 1))
  fi
  echo "== unit tests ($2)"
  for t in "$1"/bin/*Tests; do
    [ -x "$t" ] || continue
    "$t" 2>&1 | tee "$1/$(basename "$t").log"
    count "$1/$(basename "$t").log" '^\[       OK \] ' '^\[  FAILED  \] [^ ]+\.[^ ]+ \('
  done
}

run_suite "$build" "release"

# Python suites (kernel numerics on the interpreter, the tessel package):
# Debian's interpreter, which has numpy and pytest.
echo "== pytest"
TESSEL_BUILD_DIR=$build /usr/bin/python3 -m pytest -v -p no:cacheprovider \
  "$root/test/numerics" "$root/test/python" 2>&1 | tee "$build/pytest.log"
count "$build/pytest.log" ' PASSED' ' (FAILED|ERROR)'
if grep -qE ' (SKIPPED|XFAIL)' "$build/pytest.log"; then
  echo "error: skipped or expected-fail Python tests are not allowed"
  failed=$((failed + 1))
fi

# A runtime-only install (no LLVM) and a C++ application built against it
# through find_package(Tessel), then the same against this build installed
# (its C program compiles through Tessel::Compiler); kept in $build-install.
echo "== install the runtime and build an application against it"
if JOBS=$jobs TESSEL_COMPILER_BUILD=$build "$root/test/Install/install-consumer.sh" \
     "$build-install" 2>&1 |
     tee "$build/install.log"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi

# The self-contained wheel (LLVM/MLIR inside its compiler library), installed
# into a fresh virtual environment and used from there; kept in $build-wheel.
echo "== build the wheel and use it from a virtual environment"
if JOBS=$jobs "$root/test/Install/wheel.sh" "$build-wheel" 2>&1 | tee "$build/wheel.log"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi

# The same suites with AddressSanitizer + UndefinedBehaviorSanitizer (clang),
# then the front-end fuzzer for a bounded time over the seed corpus.
if [ "${TESSEL_SKIP_SANITIZERS:-0}" != 1 ]; then
  asan=${build}-asan
  CC=clang-22 CXX=clang++-22 cmake -S "$root" -B "$asan" -G Ninja \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit -DTESSEL_ENABLE_SANITIZERS=ON \
    -DTESSEL_ENABLE_FUZZER=ON -DTESSEL_ENABLE_CUDA_RUNTIME=OFF \
    -DTESSEL_ENABLE_PYTHON=OFF \
    >"$asan.configure.log" 2>&1 ||
    { cat "$asan.configure.log"; echo "error: sanitizer configure failed"; exit 1; }
  ninja -C "$asan" -j "$jobs" all || { echo "error: sanitizer build failed"; exit 1; }
  # LLVM's headers poison BumpPtrAllocator memory in instrumented code, but
  # Debian's libMLIR/libLLVM are not instrumented and do not unpoison it: the
  # mix reports false use-after-poison. Manual poisoning is therefore off;
  # ASan's own checks stay on.
  export ASAN_OPTIONS=allow_user_poisoning=0
  run_suite "$asan" "asan+ubsan"

  echo "== fuzz the front end for ${FUZZ_SECONDS:-60} s"
  corpus=$(mktemp -d)
  cp "$root"/kernels/*.tsl "$corpus"/
  find "$root/test/Frontend" -name '*.tsl' -exec cp {} "$corpus"/ \; 2>/dev/null
  if "$asan/bin/tessel-fuzz-frontend" -max_total_time="${FUZZ_SECONDS:-60}" \
       -timeout=10 -rss_limit_mb=4096 -artifact_prefix="$asan/" "$corpus" \
       >"$asan/fuzz.log" 2>&1; then
    tail -n 1 "$asan/fuzz.log"
    echo "PASS: fuzz the front end"
    passed=$((passed + 1))
  else
    tail -n 40 "$asan/fuzz.log"
    echo "FAIL: fuzz the front end (artifact in $asan/)"
    failed=$((failed + 1))
  fi
  rm -rf "$corpus"
fi

echo
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
