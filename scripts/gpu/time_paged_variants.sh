#!/usr/bin/env bash
# Times variants of the paged decode kernel against the contiguous one with
# tessel-run on a machine with an NVIDIA GPU (no LLVM/MLIR needed): B1 H64
# HKV8 Nq1 D128 bf16, 131072 keys, pages of 16 rows in the order of the table
# in DIR/table.f64 (float64 page numbers). DIR holds bundles compiled
# elsewhere: paged-*.bundle (lean_attention_paged) and contig-*.bundle
# (lean_attention), each printed with its median time over 50 runs, in two
# layouts each.
#   scripts/gpu/time_paged_variants.sh DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(cd "$1" && pwd)
build=/tmp/tessel-rt-build
cmake -S "$root" -B "$build" -DTESSEL_ENABLE_COMPILER=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target tessel-run >/dev/null
run="$build/bin/tessel-run"
nk=131072; ps=16; pages=$((nk / ps)); kv=$((pages * ps * 8 * 128))
common=(--repeat 50 --arg q="bf16[8192]:randn" --arg o="bf16[8192]" --arg lse="f32[64]"
        --arg sqb=8192 --arg sqh=128 --arg sqn=128 --arg B=1 --arg H=64 --arg HKV=8 --arg Nq=1
        --arg scale=0.088 --arg k="bf16[$kv]:randn" --arg v="bf16[$kv]:randn")
# Paged caches in both layouts: NHD (num_pages, page_size, HKV, D), a page's rows holding every
# head (vLLM's), and HND (num_pages, HKV, page_size, D), a page's rows of one head together.
for b in "$dir"/paged-*.bundle; do
  for layout in NHD HND; do
    if [ $layout = NHD ]; then s=(--arg skn=1024 --arg skh=128 --arg svn=1024 --arg svh=128)
    else s=(--arg skn=128 --arg skh=$((ps * 128)) --arg svn=128 --arg svh=$((ps * 128))); fi
    echo "$(basename "$b") $layout: $("$run" "$b" "${common[@]}" "${s[@]}" \
      --arg block_table="i32[$pages]:file=$dir/table.f64" --arg seq_lens="i32[1]:fill=$nk" \
      --arg errors="i32[2]" --arg skp=$((ps * 1024)) --arg svp=$((ps * 1024)) --arg sbt=$pages \
      --arg max_pages=$pages --arg num_pages=$pages --arg page_size=$ps --arg max_len=$nk 2>&1 |
      tail -1)"
  done
done
# The contiguous cache as (B, HKV, Nk, D), and as (B, Nk, HKV, D) (heads interleaved per row).
for b in "$dir"/contig-*.bundle; do
  echo "$(basename "$b") BHND: $("$run" "$b" "${common[@]}" --arg skb=$((8 * nk * 128)) \
    --arg skh=$((nk * 128)) --arg skn=128 --arg svb=$((8 * nk * 128)) --arg svh=$((nk * 128)) \
    --arg svn=128 --arg Nk=$nk 2>&1 | tail -1)"
  echo "$(basename "$b") BNHD: $("$run" "$b" "${common[@]}" --arg skb=$((8 * nk * 128)) \
    --arg skh=128 --arg skn=1024 --arg svb=$((8 * nk * 128)) --arg svh=128 \
    --arg svn=1024 --arg Nk=$nk 2>&1 | tail -1)"
done
