"""Tessel: a tile-level kernel language for NVIDIA GPUs, compiled through MLIR.

    import tessel
    k = tessel.compile("add.tsl", constants={"BLOCK": 256})    # -> Kernel (cached on disk)
    k[(tessel.cdiv(n, 256),)](x, y, out, n)                     # NumPy arrays, in place
    add = tessel.jit("add.tsl")                                 # constexprs given at launch
    o = tessel.attention(q, k, v, causal=True)                  # ready ops on (B, H, N, D)

Until the GPU back end lands, kernels run on the CPU interpreter (the reference semantics) with
NumPy arrays. See python/README.md; tessel.compiler, tessel.interpreter, tessel.ops and
tessel.cache document the details.
"""

from ._backend import _tessel
from .compiler import DEFAULT_PROGRAMS, JITKernel, Kernel, Param, cdiv, compile, jit
from .errors import CompileError, DeviceError, Diagnostic, LaunchError, TesselError
from .language import bf16, constexpr, f16, f32, i1, i32, i64, ptr
from .ops import KERNELS_DIR, attention, attention_kl, lean_attention, mta_attention

__version__ = _tessel.version

__all__ = [
    "CompileError", "DEFAULT_PROGRAMS", "DeviceError", "Diagnostic", "JITKernel", "KERNELS_DIR",
    "Kernel", "LaunchError", "Param", "TesselError", "attention", "attention_kl", "bf16", "cdiv",
    "compile", "constexpr", "f16", "f32", "i1", "i32", "i64", "jit", "lean_attention",
    "mta_attention", "ptr",
]
