#!/usr/bin/env bash
# Times attention_bwd / attention_kl_bwd bundles with tessel-run on a machine
# with an NVIDIA GPU (no LLVM/MLIR needed): B1, N keys and queries (N=4096 by
# default), H heads (32 for attention_bwd, 16 for attention_kl_bwd), each
# kernel's D (teacher and student alike for attention_kl_bwd), the dtype and
# tiles it was compiled with; prints each bundle's median time over 20 runs.
# The grid follows the bundle's BLOCK_N. Bundles are compiled elsewhere, e.g.
#   tesselc kernels/attention.tsl --kernel=attention_bwd --target=sm_90a \
#     -D D=128 -D DTYPE=bf16 -D BLOCK_M=64 -D BLOCK_N=128 -D NUM_WARPS=8 \
#     -D NUM_STAGES=2 --emit=bundle -o DIR/bwd-64x128x8x2.bundle
#   scripts/gpu/time_backward_variants.sh DIR/*.bundle
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=/tmp/tessel-rt-build
cmake -S "$root" -B "$build" -DTESSEL_ENABLE_COMPILER=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target tessel-run >/dev/null
run="$build/bin/tessel-run"
N=${N:-4096}
NQS=$(((N + 3) / 4 * 4))  # the rows of the per-query statistics (LSE, Delta)
for b in "$@"; do
  read -r kernel d dt bn < <(python3 -c '
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
c = k["constants"]
elem = {p["name"]: p.get("elem") for p in k["params"]}
print(k["name"], c.get("D", c.get("DT")), elem["q" if "q" in elem else "tq"], c["BLOCK_N"])' "$b")
  if [ "$kernel" = attention_kl_bwd ]; then
    H=16; E=$((H * N * d)); R=$((H * N)); S=$((H * NQS))
    args=(--arg tq="$dt[$E]:randn" --arg tk="$dt[$E]:randn" --arg sq="$dt[$E]:randn"
          --arg sk="$dt[$E]:randn" --arg lse_t="f32[$S]:fill=8" --arg lse_s="f32[$S]:fill=8"
          --arg g="f32[$R]:randn" --arg dsq="f32[$E]" --arg dsk="$dt[$E]"
          --arg H=$H --arg HKT=$H --arg HKS=$H --arg scale_t=0.088 --arg scale_s=0.088)
    for t in tq tk sq sk; do
      args+=(--arg "s${t}b=$E" --arg "s${t}h=$((N * d))" --arg "s${t}n=$d")
    done
  else
    H=32; E=$((H * N * d)); S=$((H * NQS))
    args=(--arg q="$dt[$E]:randn" --arg k="$dt[$E]:randn" --arg v="$dt[$E]:randn"
          --arg do="$dt[$E]:randn" --arg lse_rows="f32[$S]:fill=8" --arg delta="f32[$S]:randn"
          --arg dq="f32[$E]" --arg dk="$dt[$E]" --arg dv="$dt[$E]"
          --arg H=$H --arg HKV=$H --arg scale=0.088 --arg num_sms=132)
    for t in q k v do; do
      args+=(--arg "s${t}b=$E" --arg "s${t}h=$((N * d))" --arg "s${t}n=$d")
    done
  fi
  echo "$(basename "$b"): $("$run" "$b" --repeat 20 --grid $(((N + bn - 1) / bn)),$H "${args[@]}" \
    --arg Nq=$N --arg Nk=$N --arg NQS=$NQS 2>&1 | tail -1)"
done
