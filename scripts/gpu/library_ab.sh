#!/usr/bin/env bash
# Compiler libraries against each other on a machine with an NVIDIA GPU and no LLVM: a change of
# the compiler (a lowering, a pass) lives in the library, not in the kernel files, so each
# variant is a library built elsewhere (scripts/wheel.sh). Each is installed as a wheel of its
# own (scripts/wheel_check.sh's tutorials stage, every kernel compiled here), then, ROUNDS times,
# scripts/gpu/profile_ops.py runs once per variant, in order, each in its own process with its
# own package and kernel cache; the kernel times (torch profiler) then come from one machine,
# alternating.
#   scripts/gpu/library_ab.sh ROUNDS LABEL=LIBRARY... -- PROFILE_OPS_ARGS...
# For example
#   scripts/gpu/library_ab.sh 2 main=/tmp/main.so new=/tmp/new.so -- --cases prefill --n 8192
# PROFILE_SCRIPT names another script of this directory to run instead (the decode:
#   PROFILE_SCRIPT=profile_decode.py scripts/gpu/library_ab.sh 2 main=... new=... -- \
#     --shapes 1x8x8x16384 --tiles op,128x4x2).
# The packages stay in $OUT/site-LABEL (default OUT /tmp/tessel-library-ab) for further checks.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: library_ab.sh ROUNDS LABEL=LIBRARY... -- PROFILE_OPS_ARGS..."
rounds=${1:?$usage}
shift
variants=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    *=*) [ -f "${1#*=}" ] || { echo "library_ab.sh: variant ${1%%=*}: no file ${1#*=}" >&2; exit 2; } ;;
    *) echo "library_ab.sh: $1 is not LABEL=LIBRARY" >&2; exit 2 ;;
  esac
  variants+=("$1")
  shift
done
[ "${1:-}" = "--" ] && shift
[ ${#variants[@]} -gt 0 ] || { echo "$usage" >&2; exit 2; }

out=${OUT:-/tmp/tessel-library-ab}
mkdir -p "$out"
for v in "${variants[@]}"; do
  label=${v%%=*}
  OUT="$out/wheel-$label" bash "$root/scripts/gpu/wheel_check.sh" "${v#*=}" tutorials \
    > "$out/install-$label.log" 2>&1 || { tail -n 30 "$out/install-$label.log"; exit 1; }
  # wheel_check.sh installs into one fixed directory; each variant keeps its own.
  rm -rf "$out/site-$label" && mv /tmp/tessel-site "$out/site-$label"
done

for round in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    label=${v%%=*}
    echo "== round $round: $label"
    PYTHONPATH="$out/site-$label" TESSEL_CACHE_DIR="$out/cache-$label" \
      python3 "$root/scripts/gpu/${PROFILE_SCRIPT:-profile_ops.py}" "$@" 2>&1 | grep -v -i "warn"
  done
done
