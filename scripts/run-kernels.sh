#!/usr/bin/env bash
# The main job: compile every kernel in kernels/ and run it against the
# float64 references; builds what it needs first (scripts/build.sh).
#   scripts/run-kernels.sh [--cpu|--gpu]     (build directory: build/)
# With an NVIDIA GPU (the CUDA driver finds a device: scripts/gpu/find_gpu.py)
# the numerics tests' kernels are compiled to bundles (scripts/gpu/
# record_bundles.sh, which runs each case on the CPU interpreter once as it
# records) and run on the GPU against the references; without one they run on
# the CPU interpreter. --cpu: the interpreter even with a GPU; --gpu: fail
# without one. Environment: BUILD_DIR, JOBS (scripts/build.sh), TARGET
# (default: from the GPU), TESSEL_BUNDLE_DIR (default <repo>/.gpu-bundles).
#
# Where the Python on PATH ($PYTHON) imports an installed tessel with its
# compiler (the wheel: scripts/wheel.sh) and the CUDA driver finds a GPU,
# nothing is built: that package compiles every kernel and the numerics run on
# the GPU with kernels it compiles there (no LLVM on the machine needed).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
python=/usr/bin/python3
mode=auto
case "${1:-}" in
  "") ;;
  --cpu) mode=cpu ;;
  --gpu) mode=gpu ;;
  *) echo "usage: scripts/run-kernels.sh [--cpu|--gpu]" >&2; exit 2 ;;
esac

# $1: the Python; the rest: environment for it. The numerics tests' kernels on
# the GPU against float64 references, as scripts/gpu/check.sh runs them
# (without the interpreter's own plumbing tests).
gpu_numerics() {
  local py=$1
  shift
  echo "== running them on the GPU against float64 references"
  (cd "$root" && env TESSEL_BACKEND=gpu "$@" "$py" -m pytest -q -p no:cacheprovider \
     -k "not test_tessel_run" test/numerics/test_kernels.py)
}

# An installed package (not this tree's build) with its compiler, on a GPU.
installed_python=${PYTHON:-$(command -v python3 || true)}
if [ "$mode" != cpu ] && [ -z "${BUILD_DIR:-}" ] && [ -n "$installed_python" ] &&
   package=$(cd / && "$installed_python" -c 'import os, tessel
assert tessel._tessel.has_compiler
print(os.path.dirname(os.path.realpath(tessel.__file__)))' 2>/dev/null) &&
   [[ "$package" != "$root"/* ]] &&
   gpu=$(timeout 120 "$installed_python" "$root/scripts/gpu/find_gpu.py" 2>/dev/null); then
  IFS=$'\t' read -r name cc target <<<"$gpu"
  target=${TARGET:-$target}
  echo "running on the GPU: $name (compute capability $cc), kernels compiled for $target by"
  echo "the installed tessel in $package"
  echo "== compiling kernels/*.tsl"
  "$installed_python" - "$root"/kernels/*.tsl <<'PY'
import os, sys
from tessel import _tessel
for path in sys.argv[1:]:
    text = open(path, encoding="utf-8").read()
    kernels = _tessel.signatures(text, path)
    _tessel.compile(text, path, "", {})          # front end, online ops expanded, stream-K lowered
    print(f"  {os.path.basename(path):22s} {len(kernels)} kernel(s): tessel IR verified, online "
          f"ops expanded, stream-K lowered")
PY
  empty=$(mktemp -d)
  trap 'rm -rf "$empty"' EXIT
  gpu_numerics "$installed_python" TESSEL_BUNDLE_DIR="$empty" TESSEL_TARGET="$target"
  exit
fi

"$root/scripts/deps.sh" # the Python that asks the driver, among the rest
gpu=
if [ "$mode" = cpu ]; then
  echo "--cpu: running on the CPU interpreter"
elif gpu=$(timeout 120 "$python" "$root/scripts/gpu/find_gpu.py"); then
  IFS=$'\t' read -r name cc target <<<"$gpu"
  target=${TARGET:-$target}
  echo "running on the GPU: $name (compute capability $cc), kernels compiled for $target"
else
  why=${gpu:-the CUDA driver could not be queried}
  gpu=
  if [ "$mode" = gpu ]; then
    echo "error: --gpu: no NVIDIA GPU found ($why)" >&2
    exit 1
  fi
  echo "no NVIDIA GPU found ($why): running on the CPU interpreter"
fi

targets=(tesselc tessel-opt tessel-run)
[ -z "$gpu" ] || targets+=(TesselPython) # record_bundles.sh and the GPU run
BUILD_DIR=$build "$root/scripts/build.sh" "${targets[@]}"

echo "== compiling kernels/*.tsl"
for f in "$root"/kernels/*.tsl; do
  kernels=$("$build/bin/tesselc" "$f" | grep -c 'tessel.kernel' || true)
  "$build/bin/tesselc" "$f" | "$build/bin/tessel-opt" \
    --tessel-expand-online --tessel-lower-stream-k >/dev/null
  printf '  %-22s %d kernel(s): tessel IR verified, online ops expanded, stream-K lowered\n' \
    "$(basename "$f")" "$kernels"
done

if [ -z "$gpu" ]; then
  echo "== running them on the CPU interpreter against float64 references"
  cd "$root/test/numerics"
  TESSEL_BUILD_DIR=$build "$python" -m pytest -q -s -p no:cacheprovider \
    test_kernels.py test_stream_k.py
  exit
fi

bundles=${TESSEL_BUNDLE_DIR:-$root/.gpu-bundles}
echo "== compiling the numerics tests' kernels to bundles for $target in $bundles"
# The bundles stay on this machine: no size limit.
TARGET=$target TESSEL_BUILD_DIR=$build BUNDLE_LIMIT_MB=1000000 PYTHON=$python \
  "$root/scripts/gpu/record_bundles.sh" "$bundles"
gpu_numerics "$python" TESSEL_BUNDLE_DIR="$bundles" PYTHONPATH="$build/python"
echo "(the rest of the GPU check, on these bundles: scripts/gpu/check.sh: runtime smoke"
echo " tests, the Python package with PyTorch, compute-sanitizer)"
