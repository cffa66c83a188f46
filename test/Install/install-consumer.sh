#!/usr/bin/env bash
# Installs a runtime-only Tessel (-DTESSEL_ENABLE_COMPILER=OFF: no LLVM) into
# a temporary prefix, builds examples/install-consumer against the installed
# tree (find_package(Tessel) + Tessel::Runtime) and runs it: on this machine's
# driver (a GPU, or the error saying there is none) and on the runtime's
# stand-in libcuda with a bundle. With TESSEL_COMPILER_BUILD (a build
# directory with the compiler, built), also installs that build and builds the
# same application against it, whose second program compiles a kernel through
# Tessel::Compiler (the C API). Prints "PASS: ..." or "FAIL: ..." last.
#   [TESSEL_COMPILER_BUILD=build] test/Install/install-consumer.sh [WORK_DIR]
#   (WORK_DIR default: a temporary one)
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
name="install the runtime and build a C++ application against it"
. "$root/test/Install/common.sh"

step cmake -S "$root" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTESSEL_ENABLE_COMPILER=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix" ||
  fail "configure"
# What is installed (the runtime, tessel-run), and the stand-in driver.
step ninja -C "$work/build" ${JOBS:+-j "$JOBS"} TesselRuntime tessel-run \
  TesselFakeCuda || fail "build"
step cmake --install "$work/build" || fail "install"
for f in include/tessel/Runtime.h lib/cmake/Tessel/TesselConfig.cmake \
         lib/cmake/Tessel/TesselConfigVersion.cmake \
         lib/cmake/Tessel/TesselTargets.cmake bin/tessel-run; do
  [ -e "$work/prefix/$f" ] || fail "not installed: $f"
done

# The consumer sees only the installed tree: no source or build directory.
step cmake -S "$root/examples/install-consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" || fail "configure the consumer"
step ninja -C "$work/consumer" || fail "build the consumer"
consumer=$work/consumer/tessel-consumer

# This machine's driver: a GPU, or the error that says why there is none.
if "$consumer" >"$work/real.out" 2>&1; then
  grep -q '^GPU: compute capability' "$work/real.out" || fail "no device line"
elif ! grep -qE 'no CUDA (driver found|device)' "$work/real.out"; then
  cat "$work/real.out" >>"$log"
  fail "unexpected error without a GPU"
fi
cat "$work/real.out"

# The stand-in libcuda: the bundle is loaded and its kernel launched.
mkdir -p "$work/fake"
ln -sf "$work/build/bin/libTesselFakeCuda.so" "$work/fake/libcuda.so.1"
LD_LIBRARY_PATH=$work/fake "$consumer" \
  "$root/test/Unit/Runtime/Inputs/vector_add.bundle" >"$work/fake.out" 2>&1 ||
  { cat "$work/fake.out" >>"$log"; fail "launch on the stand-in driver"; }
grep -q '^vector_add: out\[0\] = ' "$work/fake.out" ||
  { cat "$work/fake.out" >>"$log"; fail "no output from the launch"; }
cat "$work/fake.out"

if [ -n "${TESSEL_COMPILER_BUILD:-}" ]; then
  step cmake --install "$TESSEL_COMPILER_BUILD" --prefix "$work/full-prefix" ||
    fail "install the build with the compiler"
  for f in include/tessel-c/Compiler.h lib/libtessel_compiler.so bin/tesselc; do
    [ -e "$work/full-prefix/$f" ] || fail "not installed: $f"
  done
  step cmake -S "$root/examples/install-consumer" -B "$work/consumer-full" -G Ninja \
    -DCMAKE_PREFIX_PATH="$work/full-prefix" || fail "configure the consumer (compiler)"
  step ninja -C "$work/consumer-full" || fail "build the consumer (compiler)"
  "$work/consumer-full/tessel-compile-consumer" >"$work/compile.out" 2>&1 ||
    { cat "$work/compile.out" >>"$log"; fail "compile through Tessel::Compiler"; }
  grep -q 'PTX entry add' "$work/compile.out" &&
    grep -q '^diagnostic: broken.tsl:3:' "$work/compile.out" ||
    { cat "$work/compile.out" >>"$log"; fail "unexpected output of tessel-compile-consumer"; }
  cat "$work/compile.out"
fi
echo "PASS: $name"
