"""Run by test/Install/wheel.sh with the Python of a virtual environment holding the installed
wheel: the package is the environment's, its compiler library is the one inside the package and
needs no LLVM, and the compiler works through it: a kernel compiled and run on the interpreter
against NumPy, a bundle for sm_90a, and a compile error naming file:line:col."""

import json
import os
import subprocess
import sys

import numpy as np

import tessel
from tessel import _tessel

package = os.path.dirname(os.path.realpath(tessel.__file__))
assert package.startswith(os.path.realpath(sys.prefix) + os.sep), \
    f"tessel imported from {package}, not from the environment {sys.prefix}"
assert _tessel.has_compiler, f"no compiler: {_tessel.compiler_error}"
assert os.path.dirname(os.path.realpath(_tessel.compiler_library)) == package, \
    _tessel.compiler_library
needed = subprocess.run(["objdump", "-p", _tessel.compiler_library], check=True,
                        capture_output=True, text=True).stdout
needed = [line.split()[1] for line in needed.splitlines() if line.strip().startswith("NEEDED")]
assert not any(n.startswith(("libLLVM", "libMLIR", "libstdc++")) for n in needed), needed
# What the kernel cache keys on instead of reading 40 MiB of library.
assert len(_tessel.compiler_build_id) >= 16, _tessel.compiler_build_id

ADD = """\
@kernel(num_warps=4)
def add(x: ptr[f32], y: ptr[f32], out: ptr[f32], n: i32, BLOCK: constexpr = 64):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    store(out + offs, load(x + offs, mask=m, other=0.0) + load(y + offs, mask=m, other=0.0), mask=m)
"""
rng = np.random.default_rng(1)
n = 1000
x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
out = np.zeros(n, np.float32)
kernel = tessel.compile(ADD, {"BLOCK": 64}, interpret=True)
kernel[(tessel.cdiv(n, 64),)](x, y, out, n)
np.testing.assert_array_equal(out, x + y)

bundle = json.loads(_tessel.compile_bundle(ADD, "add.tsl", "add", {"BLOCK": "64"}, "sm_90a"))
assert bundle["target"] == "sm_90a" and ".entry add" in bundle["ptx"], bundle["target"]

try:
    tessel.compile("@kernel(num_warps=4)\ndef bad(x: ptr[f32]):\n    y = undefined_name + 1\n",
                   interpret=True)
    raise AssertionError("an undefined name compiled")
except tessel.CompileError as e:
    assert "<string>:3:9" in str(e), str(e)

print(f"wheel check: ok (tessel {tessel.__version__}, Python {sys.version.split()[0]}, "
      f"compiler library {os.path.getsize(_tessel.compiler_library) >> 20} MiB, needs "
      f"{' '.join(needed)})")
