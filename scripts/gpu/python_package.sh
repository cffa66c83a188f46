# Sourced by scripts/gpu/*.sh: builds the runtime-only Python package (no LLVM/MLIR) on a machine
# with an NVIDIA GPU. Needs $root, $build, $out and $py set; pybind11 comes from pip if the
# interpreter lacks it. Returns non-zero (with the logs' tails printed) if the build fails.
build_python_package() {
  local pybind11_dir
  pybind11_dir=$("$py" -m pybind11 --cmakedir 2>/dev/null) || {
    "$py" -m pip install -q pybind11 >"$out/pip.log" 2>&1
    pybind11_dir=$("$py" -m pybind11 --cmakedir 2>/dev/null) || pybind11_dir=
  }
  [ -n "$pybind11_dir" ] || echo "(pybind11 not found for $py: see $out/pip.log)"
  if cmake -S "$root" -B "$build" -DTESSEL_ENABLE_COMPILER=OFF -DTESSEL_ENABLE_PYTHON=ON \
       -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$py" -Dpybind11_DIR="$pybind11_dir" \
       >"$out/configure-python.log" 2>&1 &&
     cmake --build "$build" -j "$(nproc)" --target TesselPython \
       >"$out/build-python.log" 2>&1; then
    echo "Python extension built: $(ls "$build"/python/tessel/_tessel*.so)"
  else
    echo "Python extension build failed:"
    tail -20 "$out/configure-python.log" "$out/build-python.log"
    return 1
  fi
}
