#!/usr/bin/env bash
# Decode under compiler libraries built elsewhere, on a machine with an NVIDIA GPU and no LLVM:
# each library installed as a package of its own (scripts/gpu/library_ab.sh), then ROUNDS times,
# alternating, scripts/gpu/profile_decode.py per library with the op's choices and with the
# forced tiles of TILES (default the one-row decode's 128x4x2, without LIVE_ROWS), then
# optionally the GPU numerics of the decode kernels with the library labelled NUMERICS
# (test_kernels.py -k lean, every kernel compiled on the machine).
#   scripts/gpu/decode_ab.sh ROUNDS SHAPES LABEL=LIBRARY...
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:?usage: decode_ab.sh ROUNDS SHAPES LABEL=LIBRARY...}
shapes=${2:?usage: decode_ab.sh ROUNDS SHAPES LABEL=LIBRARY...}
shift 2
out=${OUT:-/tmp/tessel-decode-ab}
mkdir -p "$out"
OUT=$out bash "$root/scripts/gpu/library_ab.sh" 0 "$@" || exit 1
for round in $(seq 1 "$rounds"); do
  for v in "$@"; do
    label=${v%%=*}
    echo "== round $round: $label"
    export PYTHONPATH="$out/site-$label" TESSEL_CACHE_DIR="$out/cache-$label"
    python3 "$root/scripts/gpu/profile_decode.py" --shapes "$shapes" \
      --impls stream-k,stream-k-flags,split-k,cudnn 2>&1 | grep -v -i warn
    python3 "$root/scripts/gpu/profile_decode.py" --shapes "$shapes" --impls stream-k,split-k \
      --tiles "${TILES:-128x4x2}" 2>&1 | grep -v -i warn
  done
done
if [ -n "${NUMERICS:-}" ]; then
  echo "== numerics: $NUMERICS"
  cd "$root" && PYTHONPATH="$out/site-$NUMERICS" TESSEL_CACHE_DIR="$out/cache-$NUMERICS" \
    TESSEL_BACKEND=gpu TESSEL_BUNDLE_DIR=$out/no-bundles python3 -m pytest -q \
    -p no:cacheprovider -k "lean" test/numerics/test_kernels.py 2>&1 | tail -n 3
fi
