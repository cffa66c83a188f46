#!/usr/bin/env bash
# Kernel times and hardware counters of the ready ops, on a machine with an NVIDIA GPU and PyTorch
# (no LLVM/MLIR needed): builds the runtime-only Python package, runs scripts/gpu/profile_ops.py, then
# the same cases once more under Nsight Compute (speed of light, occupancy, warp stalls).
#   scripts/gpu/profile.sh [CASES]       e.g. decode-mha,prefill (default: all of profile_ops.py's)
# NCU_KERNELS (a regex, default every Tessel kernel) picks the kernel ncu profiles: the third
# launch of one that matches (prefill-bwd: NCU_KERNELS=attention_bwd$). NCU_SOURCE=1 also samples
# where the warps stall, per SASS instruction: $OUT/ncu-CASE-source.csv (the source page, with
# the SASS itself; scripts/gpu/sass_hotspots.py summarises it).
# Kernels from <repo>/.gpu-bundles/ops (scripts/gpu/record_bundles.sh); logs in $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/tessel-profile}
build=${TESSEL_RT_BUILD:-/tmp/tessel-rt-build}
py=$(command -v python3)
mkdir -p "$out"
. "$root/scripts/gpu/python_package.sh"
build_python_package || exit 1
export TESSEL_BUNDLE_DIR=${TESSEL_BUNDLE_DIR:-$root/.gpu-bundles/ops} TESSEL_CACHE_DIR=/tmp/tessel-cache
export PYTHONPATH="$build/python"
cases=${1:-prefill,prefill-d64,decode-mha,decode-gqa}
"$py" "$root/scripts/gpu/profile_ops.py" --cases "$cases"
# One launch per case under Nsight Compute, after two warm-up launches: the sections, the tensor
# pipes' activity (mma.sync counts as hmma, wgmma as gmma where the device names it) and the
# stall reasons behind the warps' latency. Without those metrics (a metric this ncu does not know)
# the sections alone.
metrics='regex:^sm__pipe_tensor_op_[a-z]*mma_cycles_active\.avg\.pct_of_peak_sustained_active$'
metrics+=',regex:^smsp__average_warp_latency_issue_stalled_(barrier|long_scoreboard|wait|math_pipe_throttle|mio_throttle|short_scoreboard)$'
for case in ${cases//,/ }; do
  for extra in "--metrics $metrics" ""; do
    ncu --target-processes all -k "regex:${NCU_KERNELS:-^(attention|lean|mta)}" --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis $extra \
      "$py" "$root/scripts/gpu/profile_ops.py" --reps 2 --cases "$case" > "$out/ncu-$case.txt" 2>&1 &&
      break
  done
  if [ -n "${NCU_SOURCE:-}" ]; then
    rm -f "$out/ncu-$case.ncu-rep"
    ncu --target-processes all -k "regex:${NCU_KERNELS:-^(attention|lean|mta)}" --launch-skip 2 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --import-source no -o "$out/ncu-$case" \
      "$py" "$root/scripts/gpu/profile_ops.py" --reps 2 --cases "$case" > /dev/null 2>&1 &&
      ncu -i "$out/ncu-$case.ncu-rep" --page source --csv --print-source sass > "$out/ncu-$case-source.csv" &&
      "$py" "$root/scripts/gpu/sass_hotspots.py" "$out/ncu-$case-source.csv" | head -60
    rm -f "$out/ncu-$case.ncu-rep"
  fi
  echo "== ncu: $case"
  grep -E "^  [a-z_]+.*\(|Duration|Local Memory Spilling Requests|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit (Reg|Shared)|Dynamic Shared|Grid Size|Waves Per SM|Stall|Warp Cycles Per Issued|pipe_tensor|stalled|Executed Ipc|Issue Slots Busy|DRAM Throughput|L1/TEX Hit|L2 Hit" \
    "$out/ncu-$case.txt" | head -60
done
