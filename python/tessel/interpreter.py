"""Launching a compiled kernel on the CPU interpreter with NumPy arguments.

A `ptr[T]` argument is a C-contiguous NumPy array standing in for a GPU buffer: the kernel sees its
elements as one flat buffer, and what the kernel writes lands in the same array (in place, as on a
GPU). Element types and the arrays they take:

    ptr[f16] float16   ptr[f32] float32   ptr[i32] int32   ptr[i64] int64   ptr[i1] bool
    ptr[bf16] float32  (NumPy has no bfloat16: the values are rounded to bf16, nearest even, on the
                        way in; elements the kernel writes come back as float32 holding the bf16
                        value; elements it does not write keep their original float32 value)

Read-only arrays may be passed as inputs; a kernel that writes one raises ValueError (after the
run). The same array passed twice is one buffer; arrays that partly overlap are refused. Scalars
are Python or NumPy numbers: integers for i32/i64 (range-checked, and checked against the
kernel's multiple_of hints; an array has no device address, so pointer hints are not), bools or
0/1 for i1, real numbers for f16/bf16/f32.
"""

import numpy as np

from . import errors

_ARRAY_DTYPES = {"f16": np.float16, "f32": np.float32, "bf16": np.float32, "i32": np.int32,
                 "i64": np.int64, "i1": np.bool_}
_INT_RANGES = {"i32": (-2 ** 31, 2 ** 31 - 1), "i64": (-2 ** 63, 2 ** 63 - 1)}


def to_bf16_bits(values):
    """float32 values -> uint16 bfloat16 bit patterns, rounded to nearest even (NaN stays NaN)."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    quiet_nan = ((u >> 16) | 0x0040).astype(np.uint16)
    return np.where(np.isnan(values), quiet_nan, rounded)


def from_bf16_bits(bits):
    """uint16 bfloat16 bit patterns -> float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


class _Buffer:
    """One array argument during a launch: `device` is what the interpreter reads and writes."""

    def __init__(self, kernel, name, elem, array):
        self.name = name
        self.where = f"kernel '{kernel}', argument '{name}'"
        self.array = array
        self.bf16 = elem == "bf16"
        if self.bf16:
            self.device = to_bf16_bits(array)
            self.before = self.device.copy()
        elif array.flags.writeable:
            self.device = array
        else:
            self.device = array.copy()

    def finish(self, check):
        """Brings the kernel's writes back into the caller's array."""
        if self.bf16:
            written = self.device != self.before
            if written.any():
                self._writable(check)
                self.array[written] = from_bf16_bits(self.device[written])
        elif self.device is not self.array:
            flat = self.device.reshape(-1).view(np.uint8)
            if not np.array_equal(flat, self.array.reshape(-1).view(np.uint8)):
                self._writable(check)

    def _writable(self, check):
        if check and not self.array.flags.writeable:
            raise ValueError(f"{self.where}: the kernel wrote to a read-only array")


def none_argument(where, param, value):
    """Whether `param` is a pointer compiled as None (it then takes None, and only None);
    TypeError for None where the kernel uses the buffer, or a buffer where it was compiled
    None."""
    if param.none and value is not None:
        raise TypeError(f"{where}: the kernel was compiled with it None; pass None (or compile "
                        f"it with a buffer)")
    if value is None and not param.none:
        raise TypeError(f"{where}: None where the kernel uses the buffer (a kernel compiled "
                        f"with the pointer None takes None: tessel.jit compiles one when a "
                        f"call passes None)")
    return param.none


def _array_argument(where, elem, value):
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{where}: ptr[{elem}] takes a NumPy array, got {type(value).__name__}")
    want = np.dtype(_ARRAY_DTYPES[elem])
    if value.dtype != want:
        hint = " (NumPy has no bfloat16: pass float32, rounded to bf16)" if elem == "bf16" else ""
        raise TypeError(f"{where}: ptr[{elem}] takes a {want} array, got {value.dtype}{hint}")
    if not value.flags.c_contiguous:
        raise ValueError(f"{where}: the array must be C-contiguous (a kernel sees a flat buffer; "
                         f"pass np.ascontiguousarray(x) and describe layouts with strides)")
    return value


def scalar_argument(where, kind, value):
    if isinstance(value, np.ndarray):
        raise TypeError(f"{where}: {kind} takes a scalar, got an array")
    if kind == "i1":
        if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer))
                                                   and value in (0, 1)):
            return int(bool(value))
        raise TypeError(f"{where}: i1 takes a bool, got {value!r}")
    if kind in _INT_RANGES:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{where}: {kind} takes an integer, got {type(value).__name__}")
        lo, hi = _INT_RANGES[kind]
        if not lo <= int(value) <= hi:
            raise ValueError(f"{where}: {int(value)} does not fit in {kind}")
        return int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                     np.floating)):
        raise TypeError(f"{where}: {kind} takes a real number, got {type(value).__name__}")
    return float(value)


def check_multiple_of(kernel, param, value):
    """ValueError unless `value` (an integer, or the address of a `ptr` argument) keeps the
    parameter's multiple_of hint: the kernel is compiled on the promise, so it must not run."""
    n = param.multiple_of
    if n is None or value % n == 0:
        return
    where = f"kernel '{kernel}': argument '{param.name}'"
    why = "(multiple_of in the kernel source)"
    if param.kind == "ptr":
        raise ValueError(f"{where} = {value:#x} is not {n}-byte aligned {why}")
    raise ValueError(f"{where} = {value} is not a multiple of {n} {why}")


def launch(program, kernel, params, values, grid):
    """Runs `kernel` of the Program on `grid` (3 ints) with `values` for `params` (Param tuples, in
    order). Raises TypeError/ValueError for bad arguments (a broken multiple_of hint on an integer
    included; arrays have no device address to check) before running, LaunchError for a fault
    (the arrays then hold what was written before it)."""
    device, buffers, by_id = [], [], {}
    for p, value in zip(params, values):
        where = f"kernel '{kernel}', argument '{p.name}'"
        if p.kind != "ptr":
            device.append(scalar_argument(where, p.kind, value))
            check_multiple_of(kernel, p, device[-1])
            continue
        if none_argument(where, p, value):
            value = np.zeros(0, _ARRAY_DTYPES[p.elem])  # never read: an empty buffer
        array = _array_argument(where, p.elem, value)
        buf = by_id.get(id(array))
        if buf is None:
            buf = by_id[id(array)] = _Buffer(kernel, p.name, p.elem, array)
            buffers.append(buf)
        device.append(buf.device)
    _check_overlaps(kernel, buffers)
    try:
        program.run(kernel, device, grid)
    except errors.LaunchError:
        for buf in buffers:
            buf.finish(check=False)
        raise
    for buf in buffers:
        buf.finish(check=True)


def _check_overlaps(kernel, buffers):
    """Distinct arrays must be the same memory (one buffer) or disjoint memory."""
    spans = []
    for buf in buffers:
        a = buf.array
        if a.size:
            start = a.__array_interface__["data"][0]
            spans.append((start, start + a.nbytes, buf))
    spans.sort(key=lambda s: s[0])
    for (s0, e0, b0), (s1, e1, b1) in zip(spans, spans[1:]):
        same = (s0, e0, b0.array.dtype) == (s1, e1, b1.array.dtype)
        if s1 < e0 and not (same and not (b0.bf16 or b1.bf16)):
            raise ValueError(f"kernel '{kernel}': arguments '{b0.name}' and '{b1.name}' overlap "
                             f"in memory (pass one array, or disjoint ones)")
