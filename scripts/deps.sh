#!/usr/bin/env bash
# Installs the Debian packages Tessel builds and tests with. Idempotent: a
# no-op when everything is present, so the test command can always call it.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache libgtest-dev
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22
  libclang-rt-22-dev libzstd-dev
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest python3-torch
  python3-pip python3-setuptools python3-wheel python3-venv binutils
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
