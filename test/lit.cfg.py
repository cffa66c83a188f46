# -*- Python -*-
import os
import shutil
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TESSEL"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".tsl", ".test"]
# gpu: a pytest suite (with its .tsl kernels) for a machine with a GPU.
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "gpu"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessel_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%tessel_src", config.tessel_src_root))
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools = [
    ToolSubst(name, unresolved="ignore")
    for name in ["tessel-opt", "tesselc", "tessel-run"]
]
llvm_config.add_tool_substitutions(tools, [config.tessel_tools_dir, config.llvm_tools_dir])

# ptxas checks the PTX tesselc emits (no GPU needed): from PATH, else the
# CUDA toolkit's default location.
config.substitutions.append(
    ("%ptxas", shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"))

# Conversion/Emulation runs kernels' LLVM IR on the CPU: it needs the host
# clang++ and a Python with NumPy (the one running lit).
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(
    ("%clangxx", os.path.join(config.llvm_tools_dir, "clang++")))
config.substitutions.append(("%tessel_tools", config.tessel_tools_dir))

# Runtime/ runs tessel-run's GPU path and the README's runtime example against
# the stand-in libcuda of the runtime's unit tests: only where the runtime is
# built (the sanitizer build leaves it out).
config.substitutions.append(
    ("%fake_cuda", os.path.join(config.tessel_tools_dir, "libTesselFakeCuda.so")))
if not config.tessel_cuda_runtime:
    config.excludes.append("Runtime")
