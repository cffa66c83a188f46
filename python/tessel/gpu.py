"""Launching compiled kernels on an NVIDIA GPU: the process's runtime, arguments, streams.

One `tessel._tessel.Runtime` per process drives device 0 through its primary context, the context
PyTorch and CuPy use, so their device memory is passed to kernels as is. A `ptr[T]` argument is:

  * a PyTorch CUDA tensor (its data_ptr(); dtype float16, bfloat16, float32, int32 or int64 must
    match T exactly),
  * any object with `__cuda_array_interface__` (CuPy, Numba, ...) or a CUDA `__dlpack__`,
  * or a plain int, taken as a device address (e.g. from Runtime.alloc).

The kernel sees the buffer from its first element on and indexes it with the strides it is given;
it does not know the tensor's extent, so sizes and strides are the caller's (or the op's) to get
right. Host memory (NumPy arrays, CPU tensors) is refused with a TypeError.

Launches are asynchronous, on PyTorch's current stream when an argument is a PyTorch tensor (on
CuPy's when one is a CuPy array; else the legacy default stream), so they order with the framework's
own work without synchronising.

A launch first tries the extension's fast path (Runtime.try_launch: ints, floats and PyTorch
tensors converted and checked in C++); whatever it declines, this module converts and checks, and
its errors name the kernel and the argument. While an op records its launch plan (tessel.ops.plans)
every launch takes this module's path, which reports it to the recorder.
"""

import sys
import threading

from . import errors
from ._backend import _tessel
from .interpreter import check_multiple_of, none_argument, scalar_argument

# Element types as torch names them, as __cuda_array_interface__ typestrs (byte order stripped)
# and as DLPack (type code, bits) pairs.
_TORCH_DTYPES = {"torch.float16": "f16", "torch.bfloat16": "bf16", "torch.float32": "f32",
                 "torch.int32": "i32", "torch.int64": "i64", "torch.bool": "i1"}
_TYPESTRS = {"f2": "f16", "f4": "f32", "i4": "i32", "i8": "i64", "b1": "i1"}
_DLPACK_DTYPES = {(2, 16): "f16", (4, 16): "bf16", (2, 32): "f32", (0, 32): "i32",
                  (0, 64): "i64", (6, 8): "i1"}
_DLPACK_CUDA = (2, 13)   # kDLCUDA, kDLCUDAManaged
_DEVICE = 0

_runtime = None
_runtime_error = None


def runtime():
    """The process's Runtime (made on first use); DeviceError if there is no usable GPU."""
    global _runtime, _runtime_error
    if _runtime is None and _runtime_error is None:
        if not _tessel.has_runtime:
            _runtime_error = "this tessel was built without the CUDA runtime"
        else:
            try:
                _runtime = _tessel.Runtime(_DEVICE)
            except errors.DeviceError as error:
                _runtime_error = str(error)
    if _runtime is None:
        raise errors.DeviceError(f"no GPU to launch on: {_runtime_error}")
    return _runtime


def has_gpu():
    """True when kernels can be launched on a GPU here."""
    try:
        runtime()
        return True
    except errors.DeviceError:
        return False


def target():
    """The compilation target for this machine's GPU: sm_90a on Hopper (compute capability 9.0:
    warpgroup MMA), sm_90 on later GPUs (the driver JIT-compiles that PTX forward; sm_90a code
    runs on 9.0 only), sm_80 on Ampere."""
    rt = runtime()
    if rt not in _targets:   # asked on every op call: the driver once per runtime
        _targets[rt] = _target_of(*rt.compute_capability)
    return _targets[rt]


_targets = {}


def _target_of(major, minor):
    if (major, minor) == (9, 0):
        return "sm_90a"
    if (major, minor) >= (9, 0):
        return "sm_90"
    if (major, minor) >= (8, 0):
        return "sm_80"
    raise errors.DeviceError(f"the GPU's compute capability {major}.{minor} is below 8.0, the "
                             f"oldest Tessel targets")


def _torch():
    return sys.modules.get("torch")


def _is_torch_tensor(value):
    torch = _torch()
    return torch is not None and isinstance(value, torch.Tensor)


def _check_elem(kernel, param, got, how):
    if got != param.elem:
        raise TypeError(f"kernel '{kernel}', argument '{param.name}': expected a buffer of "
                        f"{param.elem}, got {got or 'an unsupported dtype'} ({how})")


# (torch module, {torch dtype: element type}, device -> raw current stream) of the torch last seen,
# registered with the fast path.
_torch_state = None


def _torch_adapter():
    """({torch dtype: element type}, device -> raw current stream) of the imported torch, which
    the extension's fast path is told about (with torch.Tensor) the first time."""
    global _torch_state
    torch = _torch()
    if _torch_state is None or _torch_state[0] is not torch:
        elems = {getattr(torch, n[len("torch."):]): e for n, e in _TORCH_DTYPES.items()}
        stream = _raw_stream_function(torch)
        if _tessel.has_runtime:
            _tessel.set_tensor_adapter(torch.Tensor, elems, stream)
        _torch_state = (torch, elems, stream)
    return _torch_state[1:]


def _raw_stream_function(torch):
    """device -> the raw CUstream of torch's current stream there; torch's private accessor when
    it has one (what Triton's launcher calls: no Stream object per launch)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda device: torch.cuda.current_stream(device).cuda_stream


def _torch_tensor_pointer(param, value):
    """The address of a CUDA tensor on our device whose dtype is the parameter's, else None (the
    common case of a launch, checked without building any message)."""
    elems, _ = _torch_adapter()
    if elems.get(value.dtype) == param.elem and value.is_cuda \
            and value.get_device() == _DEVICE:
        return value.data_ptr()
    return None


def device_pointer(kernel, param, value):
    """The device address a `ptr` parameter receives for `value` (see the module's docstring)."""
    if (param.none or value is None) \
            and none_argument(f"kernel '{kernel}', argument '{param.name}'", param, value):
        return 0
    if _is_torch_tensor(value):
        address = _torch_tensor_pointer(param, value)
        if address is not None:
            return address
        where = f"kernel '{kernel}', argument '{param.name}'"
        if not value.is_cuda:
            raise TypeError(f"{where}: a CPU tensor; pass a CUDA tensor (or interpret=True with "
                            f"NumPy arrays)")
        if value.device.index not in (None, _DEVICE):
            raise ValueError(f"{where}: the tensor is on {value.device}; tessel launches on "
                             f"cuda:{_DEVICE}")
        _check_elem(kernel, param, _TORCH_DTYPES.get(str(value.dtype)), f"torch {value.dtype}")
        return value.data_ptr()
    where = f"kernel '{kernel}', argument '{param.name}'"
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        typestr = interface["typestr"]
        _check_elem(kernel, param, _TYPESTRS.get(typestr[1:]), f"typestr {typestr!r}")
        return int(interface["data"][0])
    if hasattr(value, "__dlpack__") and not hasattr(value, "__array_interface__"):
        address, device_type, device_id, code, bits, lanes = _tessel.dlpack_info(
            value.__dlpack__())
        if device_type not in _DLPACK_CUDA or device_id != _DEVICE:
            raise TypeError(f"{where}: a DLPack tensor on device type {device_type} id "
                            f"{device_id}; pass one on cuda:{_DEVICE}")
        elem = _DLPACK_DTYPES.get((code, bits)) if lanes == 1 else None
        _check_elem(kernel, param, elem, f"DLPack code {code}, {bits} bits, {lanes} lanes")
        return address
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{where}: a device address must not be negative")
        return value
    raise TypeError(f"{where}: expected a GPU buffer (a CUDA tensor, an object with "
                    f"__cuda_array_interface__ or __dlpack__, or a device address), got "
                    f"{type(value).__name__}" +
                    ("; NumPy arrays run with interpret=True" if hasattr(value, "__array_interface__")
                     else ""))


def stream_of(values):
    """The stream to launch on for these arguments (see the module's docstring)."""
    torch = _torch()
    if torch is not None and any(isinstance(v, torch.Tensor) for v in values):
        _, current_stream = _torch_adapter()
        return current_stream(_DEVICE)
    cupy = sys.modules.get("cupy")
    if cupy is not None and any(isinstance(v, cupy.ndarray) for v in values):
        return cupy.cuda.get_current_stream().ptr
    return 0


# Scalars passed as they are (the common case of a launch, without building any message).
_PLAIN_SCALARS = {"i32": (int, -2**31, 2**31 - 1), "i64": (int, -2**63, 2**63 - 1)}


def _scalar(name, param, value):
    plain = _PLAIN_SCALARS.get(param.kind)
    if plain is not None and type(value) is plain[0] and plain[1] <= value <= plain[2]:
        return value
    if param.kind == "f32" and type(value) is float:
        return value
    return scalar_argument(f"kernel '{name}', argument '{param.name}'", param.kind, value)


# Per thread: the recorder of the op plan being made (tessel.ops.plans), if any.
_recording = threading.local()


def recorder():
    """The recorder this thread's launches and op buffers are reported to, or None."""
    return getattr(_recording, "recorder", None)


def set_recorder(rec):
    _recording.recorder = rec


def try_launch(rt_kernel, args, grid):
    """The fast path: True if the extension launched `rt_kernel` with `args` (positional, every
    parameter) on `grid` (None: a persistent kernel), False if it declined (nothing launched)."""
    if recorder() is not None:
        return False
    return runtime().try_launch(rt_kernel, args, grid)


def launch(rt_kernel, name, params, values, grid):
    """Enqueues `rt_kernel` with `values` (in `params` order); grid None for persistent kernels.
    Arguments that break a multiple_of hint raise ValueError before anything is enqueued."""
    args = []
    for p, v in zip(params, values):
        arg = device_pointer(name, p, v) if p.kind == "ptr" else _scalar(name, p, v)
        if p.multiple_of is not None:
            check_multiple_of(name, p, arg)
        args.append(arg)
    grid = None if grid is None else list(grid)
    rec = recorder()
    if rec is not None:
        rec.launched(rt_kernel, params, values, args, grid)
    runtime().launch(rt_kernel, args, stream_of(values), grid)
