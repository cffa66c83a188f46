#!/usr/bin/env bash
# Attention across GPUs, on a machine with NVIDIA GPUs and PyTorch (no LLVM/MLIR needed): builds
# the runtime-only Python package, then runs scripts/gpu/distributed.py under torchrun:
#   N GPUs (N >= 2): N processes, one per GPU, through NCCL: context-parallel decode and StreamKL
#     numerics against one GPU, then times (decode B1 H32 D128 f16 with 1M keys, StreamKL
#     forward N 131072, keys sharded) against one GPU;
#   one GPU: the same with one process (world size 1), then 2 processes sharing the GPU through
#     gloo, numerics only;
#   then a hung rank (the last one sleeps instead of calling): the others must fail after the
#     process group's timeout, not wait for ever;
#   and the tensor-parallel example (examples/distributed/tensor_parallel.py) on every GPU.
#   scripts/gpu/distributed.sh [distributed.py options...]     e.g. --reps 20
# NPROC=K runs K processes instead of one per GPU (more than the GPUs: gloo, numerics only).
# Needs the ops' kernels precompiled on a development machine (scripts/gpu/record_bundles.sh
# fills <repo>/.gpu-bundles/ops). Logs go to $OUT (default /tmp/tessel-gpu-distributed).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/tessel-gpu-distributed}
build=${TESSEL_RT_BUILD:-/tmp/tessel-rt-build}
py=$(command -v python3)
bundles=${TESSEL_BUNDLE_DIR:-$root/.gpu-bundles/ops}
mkdir -p "$out"
# The states are a few KB: NVLink multicast (NVLS) has nothing to add, keep it off.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
date -u +"date: %Y-%m-%d %H:%M UTC"
gpus=$(nvidia-smi -L | grep -c '^GPU')
[ -d "$bundles" ] || { echo "no bundles in $bundles: run scripts/gpu/record_bundles.sh"; exit 1; }
. "$root/scripts/gpu/python_package.sh"
build_python_package || exit 1

# $1: processes, then distributed.py's options; the log in $out/world$1.log.
run() {
  local nproc=$1
  shift
  echo "== $nproc process(es) on $gpus GPU(s)"
  (cd "$root" && TESSEL_GPUS=$gpus TESSEL_BUNDLE_DIR="$bundles" TESSEL_CACHE_DIR="$out/cache" \
     PYTHONPATH="$build/python" "$py" -m torch.distributed.run --standalone \
     --nproc_per_node="$nproc" scripts/gpu/distributed.py "$@") 2>&1 | tee "$out/world$nproc.log"
  return "${PIPESTATUS[0]}"
}

rc=0
if [ -n "${NPROC:-}" ]; then
  extra=()
  [ "$NPROC" -le "$gpus" ] || extra=(--check-only)
  run "$NPROC" "${extra[@]}" "$@" || rc=1
else
  run "$gpus" "$@" || rc=1
  if [ "$gpus" -eq 1 ]; then
    run 2 --check-only "$@" || rc=1
  fi
fi

# The last rank hangs: the others must end with an error after the group's timeout (20 s), and
# torchrun then stops the hung one; 240 s bounds the run if they do not.
hang_nproc=$gpus
[ "$gpus" -ge 2 ] || hang_nproc=2
echo "== a hung rank, $hang_nproc processes: the others must fail after the group's timeout"
start=$(date +%s)
(cd "$root" && TESSEL_GPUS=$gpus TESSEL_BUNDLE_DIR="$bundles" TESSEL_CACHE_DIR="$out/cache" \
   PYTHONPATH="$build/python" timeout 240 "$py" -m torch.distributed.run --standalone \
   --nproc_per_node="$hang_nproc" scripts/gpu/distributed.py --hang-check 20) >"$out/hang.log" 2>&1
hang_rc=$?
elapsed=$(($(date +%s) - start))
grep -E "^rank [0-9]+:|Watchdog caught|timed out|Timeout" "$out/hang.log" | cut -c1-300 | head -12
if [ "$hang_rc" -ne 0 ] && [ "$hang_rc" -ne 124 ] && grep -qE \
     "^rank 0: CommunicationError|Watchdog caught collective operation timeout" "$out/hang.log"; then
  echo "ok: rank 0 failed on the timeout, the run ended with status $hang_rc after $elapsed s" \
    "(startup included)"
else
  echo "FAIL: status $hang_rc after $elapsed s, no timeout error from rank 0 (see $out/hang.log)"
  rc=1
fi

echo "== tensor parallelism: examples/distributed/tensor_parallel.py on $gpus GPU(s)"
(cd "$root" && TESSEL_BUNDLE_DIR="$bundles" TESSEL_CACHE_DIR="$out/cache" \
   PYTHONPATH="$build/python" "$py" -m torch.distributed.run --standalone \
   --nproc_per_node="$gpus" examples/distributed/tensor_parallel.py) 2>&1 |
  tee "$out/tensor_parallel.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
[ "$rc" -eq 0 ] || echo "(a run failed: see the logs in $out)"
exit "$rc"
