#!/usr/bin/env bash
# Kernel-file variants against each other on a machine with an NVIDIA GPU and no LLVM: installs
# the wheel around LIBRARY (scripts/gpu/wheel_check.sh's tutorials stage), then, ROUNDS times,
# runs scripts/gpu/profile_ops.py once per variant, in order, each in its own process with its
# own kernel cache and its kernel files copied over the installed package's (put back after
# it). Every kernel is compiled there by the installed compiler; the kernel times (torch
# profiler) of the variants then come from one machine, alternating.
#   scripts/gpu/kernel_ab.sh LIBRARY ROUNDS VARIANT... -- PROFILE_OPS_ARGS...
# A VARIANT is LABEL or LABEL=FILE[,FILE...]: each FILE replaces the installed kernel file of
# its name (LABEL alone: the kernels as installed, from this checkout). For example
#   scripts/gpu/kernel_ab.sh lib.so 2 main new=/tmp/mta.tsl -- --cases mta,mta-bwd --n 4096
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
library=${1:?usage: kernel_ab.sh LIBRARY ROUNDS VARIANT... -- PROFILE_OPS_ARGS...}
rounds=${2:?usage: kernel_ab.sh LIBRARY ROUNDS VARIANT... -- PROFILE_OPS_ARGS...}
shift 2
variants=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  variants+=("$1")
  shift
done
[ "${1:-}" = "--" ] && shift
[ ${#variants[@]} -gt 0 ] || { echo "kernel_ab.sh: no variants given" >&2; exit 2; }
for v in "${variants[@]}"; do
  files=${v#*=}
  [ "$files" = "$v" ] && continue
  for f in ${files//,/ }; do
    [ -f "$f" ] || { echo "kernel_ab.sh: variant ${v%%=*}: no file $f" >&2; exit 2; }
    # It replaces the installed kernel file of its name: any other name would change nothing.
    [ -f "$root/kernels/$(basename "$f")" ] ||
      { echo "kernel_ab.sh: variant ${v%%=*}: $(basename "$f") is no kernel file of kernels/" >&2; exit 2; }
  done
done

out=${OUT:-/tmp/tessel-kernel-ab}
mkdir -p "$out"
OUT="$out/wheel" bash "$root/scripts/gpu/wheel_check.sh" "$library" tutorials > "$out/install.log" 2>&1 ||
  { tail -n 30 "$out/install.log"; exit 1; }
site=/tmp/tessel-site
kernels=$(PYTHONPATH=$site python3 -c 'import os, tessel; print(os.path.join(os.path.dirname(tessel.__file__), "kernels"))') ||
  exit 1
saved="$out/installed-kernels"
rm -rf "$saved" && cp -r "$kernels" "$saved"

for round in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    label=${v%%=*}
    files=${v#*=}
    [ "$files" = "$v" ] && files=
    for f in ${files//,/ }; do
      cp "$f" "$kernels/$(basename "$f")"
    done
    echo "== round $round: $label${files:+ ($files)}"
    PYTHONPATH=$site TESSEL_CACHE_DIR="$out/cache-$label" \
      python3 "$root/scripts/gpu/profile_ops.py" "$@" 2>&1 | grep -v -i "warn"
    rm -rf "$kernels" && cp -r "$saved" "$kernels"
  done
done
