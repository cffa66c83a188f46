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

# The tutorial's kernel, read from the source tree (the package itself is the environment's).
ADD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                   "tutorials", "vector_add.tsl")
rng = np.random.default_rng(1)
n = 1000
x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
out = np.zeros(n, np.float32)
kernel = tessel.compile(ADD, {"BLOCK": 64}, interpret=True)
kernel[(tessel.cdiv(n, 64),)](x, y, out, n)
np.testing.assert_array_equal(out, x + y)

with open(ADD, encoding="utf-8") as f:
    bundle = json.loads(_tessel.compile_bundle(f.read(), ADD, "vector_add", {"BLOCK": "64"},
                                               "sm_90a"))
assert bundle["target"] == "sm_90a" and ".entry vector_add" in bundle["ptx"], bundle["target"]

try:
    tessel.compile("@kernel(num_warps=4)\ndef bad(x: ptr[f32]):\n    y = undefined_name + 1\n",
                   interpret=True)
    raise AssertionError("an undefined name compiled")
except tessel.CompileError as e:
    assert "<string>:3:9" in str(e), str(e)

print(f"wheel check: ok (tessel {tessel.__version__}, Python {sys.version.split()[0]}, "
      f"compiler library {os.path.getsize(_tessel.compiler_library) >> 20} MiB, needs "
      f"{' '.join(needed)})")
