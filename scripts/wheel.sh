#!/usr/bin/env bash
# Builds a self-contained wheel of the `tessel` package: the extension for one
# Python and libtessel_compiler.so with LLVM/MLIR and the C++ runtime linked
# in, so the installed package compiles, interprets and (with the NVIDIA
# driver) runs kernels on a machine with no LLVM, CUDA toolkit or compiler.
#
#   scripts/wheel.sh [--python PY] [--out DIR]
#       everything here: needs LLVM/MLIR 22 with their static libraries
#       (Debian's llvm-22-dev, libmlir-22-dev; scripts/deps.sh installs them)
#   scripts/wheel.sh --compiler-library FILE [--python PY] [--out DIR]
#       a wheel for PY around a compiler library built by the first form on
#       another machine (no LLVM needed here: a C++17 compiler, CMake and
#       pybind11), e.g. for another Python version
#
# PY defaults to /usr/bin/python3, DIR to <repo>/dist. Environment: BUILD_DIR
# (default <repo>/build-wheel), JOBS. Prints the wheel's path last.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
out=$root/dist
library=
while [ $# -gt 0 ]; do
  case "$1" in
    --python) py=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --compiler-library) library=$(realpath "$2"); shift 2 ;;
    *) echo "usage: scripts/wheel.sh [--compiler-library FILE] [--python PY] [--out DIR]" >&2
       exit 2 ;;
  esac
done
build=${BUILD_DIR:-$root/build-wheel}
mkdir -p "$out"

pybind11_dir=$("$py" -m pybind11 --cmakedir 2>/dev/null || true)
options=(-DTESSEL_ENABLE_PYTHON=ON -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$py"
         ${pybind11_dir:+-Dpybind11_DIR="$pybind11_dir"})
if [ -n "$library" ]; then
  [ -f "$library" ] || { echo "error: --compiler-library $library: no such file" >&2; exit 1; }
  options+=(-DTESSEL_ENABLE_COMPILER=OFF)
else
  [ -x "$root/scripts/deps.sh" ] && "$root/scripts/deps.sh"
  options+=(-DTESSEL_ENABLE_COMPILER=ON -DTESSEL_LINK_LLVM_STATIC=ON)
fi
generator=()
command -v ninja >/dev/null && [ ! -f "$build/Makefile" ] && generator=(-G Ninja)
echo "== configuring $build"
cmake -S "$root" -B "$build" "${generator[@]}" "${options[@]}" >"$build.configure.log" 2>&1 ||
  { tail -n 30 "$build.configure.log"; echo "error: configure failed (log: $build.configure.log)"; exit 1; }
echo "== building the extension${library:+ (compiler library: $library)}"
cmake --build "$build" --target TesselPython -j "${JOBS:-$(nproc)}" >"$build/wheel-build.log" 2>&1 ||
  { tail -n 40 "$build/wheel-build.log"; echo "error: build failed (log: $build/wheel-build.log)"; exit 1; }

compiler=${library:-$build/python/tessel/libtessel_compiler.so}
command -v objdump >/dev/null || { echo "error: objdump (binutils) is needed" >&2; exit 1; }
# What the compiler library needs from the machine: the C library and a few
# ubiquitous libraries (libgcc_s, zlib, zstd), never LLVM or the C++ runtime.
needed=$(objdump -p "$compiler" | awk '/NEEDED/ {print $2}' | tr '\n' ' ')
echo "compiler library: $(du -h "$compiler" | cut -f1), needs: $needed"
case "$needed" in
  *LLVM* | *MLIR* | *stdc++*) echo "error: $compiler is not self-contained" >&2; exit 1 ;;
esac
# The C library it asks for: 2.34 at most, what the README promises.
glibc=$(objdump -T "$compiler" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
if [ "$(printf '%s\n' "$glibc" GLIBC_2.34 | sort -V | tail -n 1)" != GLIBC_2.34 ]; then
  echo "error: $compiler needs $glibc (at most GLIBC_2.34 is promised)" >&2
  exit 1
fi

echo "== packaging"
rm -f "$out"/tessel-*-"$("$py" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"-*.whl
TESSEL_BUILD_DIR=$build TESSEL_PACKAGE_COMPILER_LIBRARY=$compiler \
  "$py" -m pip wheel --no-build-isolation --no-deps -q -w "$out" "$root/python" \
  >"$build/wheel-pip.log" 2>&1 ||
  { tail -n 40 "$build/wheel-pip.log"; echo "error: pip wheel failed (log: $build/wheel-pip.log)"; exit 1; }
ls -t "$out"/tessel-*.whl | head -n 1
