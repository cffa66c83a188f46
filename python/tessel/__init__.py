"""Tessel: a tile-level kernel language for NVIDIA GPUs, compiled through MLIR.

    import tessel
    k = tessel.compile("add.tsl", constants={"BLOCK": 256})    # -> Kernel (cached on disk)
    k[(tessel.cdiv(n, 256),)](x, y, out, n)                     # NumPy arrays, in place
    add = tessel.jit("add.tsl")                                 # constexprs given at launch
    tuned = tessel.autotune(add, configs=[{"BLOCK": 256}, {"BLOCK": 1024}], key=["n"])
    o = tessel.attention(q, k, v, causal=True)                  # ready ops on (B, H, N, D)

Kernels run on the GPU when there is one (CUDA tensors of PyTorch or CuPy), else on the CPU
interpreter (the reference semantics) with NumPy arrays; interpret=True or TESSEL_INTERPRET=1 asks
for the interpreter. See python/README.md; tessel.compiler, tessel.interpreter, tessel.ops,
tessel.distributed (attention across processes) and tessel.cache document the details.
"""

from ._backend import _tessel
from .autotune import Autotuner, autotune
from .compiler import (DEFAULT_PROGRAMS, GPUKernel, JITKernel, Kernel, Param, cdiv, compile, jit,
                       precompile)
from .errors import (BundleNotFoundError, CommunicationError, CompileError, DeviceError,
                     Diagnostic, LaunchError, TesselError)
from .gpu import has_gpu
from .language import bf16, constexpr, f16, f32, i1, i32, i64, ptr
from .ops import (KERNELS_DIR, attention, attention_kl, lean_attention, mta_attention,
                  mta_decode)
from . import distributed  # context parallelism; imports torch.distributed only when called

__version__ = _tessel.version

__all__ = [
    "attention", "attention_kl", "autotune", "Autotuner", "bf16", "BundleNotFoundError", "cdiv",
    "CommunicationError", "compile", "CompileError", "constexpr", "DEFAULT_PROGRAMS",
    "DeviceError", "Diagnostic", "f16", "f32", "GPUKernel", "has_gpu", "i1", "i32", "i64", "jit",
    "JITKernel", "Kernel", "KERNELS_DIR", "LaunchError", "lean_attention", "mta_attention",
    "mta_decode", "Param", "precompile", "ptr", "TesselError",
]
