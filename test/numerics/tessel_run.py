"""Run a Tessel kernel on the CPU interpreter (build/bin/tessel-run) with NumPy inputs.

    import tessel_run as tr
    out = tr.run("attention.tsl", "attention_fwd", grid=(2, 8),
                 args=dict(q=tr.Buffer(q, "f16"), o=tr.zeros(o_shape, "f16"), H=8, scale=0.125, ...),
                 defines=dict(D=64, CAUSAL=True), outputs=["o", "lse"])
    out["o"]            # float64 array of o_shape: the buffer after the run

Buffers are written to a temporary directory as little-endian float64 (`TYPE[N]:file=PATH`; tessel-run
rounds them to TYPE on load) and read back with `--save`.  The binary is $TESSEL_BUILD_DIR/bin/tessel-run
(default: <repo>/build).  A failing run raises TesselRunError carrying the command and tessel-run's
stderr.  Use Debian's /usr/bin/python3 (it has NumPy).
"""

import os
import shlex
import subprocess
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
KERNELS_DIR = os.path.join(ROOT, "kernels")

# Element types tessel-run accepts in TYPE[N], and the NumPy dtypes that imply them.
DTYPES = ("i1", "i32", "i64", "f16", "bf16", "f32")
_IMPLIED = {np.dtype(np.bool_): "i1", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
            np.dtype(np.float16): "f16", np.dtype(np.float32): "f32"}


class TesselRunError(RuntimeError):
    """tessel-run is missing or exited non-zero; the message holds the command and its stderr."""


def build_dir():
    return os.path.abspath(os.environ.get("TESSEL_BUILD_DIR") or os.path.join(ROOT, "build"))


def binary():
    path = os.path.join(build_dir(), "bin", "tessel-run")
    if not os.access(path, os.X_OK):
        raise TesselRunError(f"tessel-run not found at {path}: build it (ninja -C build tessel-run) "
                             f"or point TESSEL_BUILD_DIR at a build directory")
    return path


def kernel_path(tsl):
    """An existing path as is, else a file name inside kernels/."""
    return tsl if os.path.exists(tsl) else os.path.join(KERNELS_DIR, tsl)


# ---------------------------------------------------------------------------------------------
# rounding to the element types (what tessel-run does when it loads float64 values)

def round_bf16(x):
    """Round to bfloat16 (nearest, ties to even) through float32; returns float64.  Exact for values
    that are already float32 (use it on float32 data to avoid double rounding)."""
    f = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    u = f.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    out = (u & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(f), np.nan, out)


def round_to(x, dtype):
    """The float64 values of x rounded to a Tessel element type."""
    x = np.asarray(x, dtype=np.float64)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        return round_bf16(x)
    if dtype == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dtype in ("i32", "i64"):
        return np.trunc(x)
    if dtype == "i1":
        return (x != 0).astype(np.float64)
    raise ValueError(f"unknown element type {dtype!r} (one of {', '.join(DTYPES)})")


# ---------------------------------------------------------------------------------------------
# arguments

class Buffer:
    """A buffer argument: `data` (any array-like, any shape) as element type `dtype`, or, with
    data=None, `shape` elements initialised by tessel-run (`init` = 'zeros' or 'fill=V')."""

    def __init__(self, data, dtype, shape=None, init="zeros"):
        if dtype not in DTYPES:
            raise ValueError(f"unknown element type {dtype!r} (one of {', '.join(DTYPES)})")
        self.dtype = dtype
        self.data = None if data is None else np.asarray(data, dtype=np.float64)
        self.shape = tuple(self.data.shape) if self.data is not None else tuple(np.atleast_1d(shape))
        self.init = init

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))


def zeros(shape, dtype):
    return Buffer(None, dtype, shape if isinstance(shape, tuple) else (shape,))


def full(shape, value, dtype):
    return Buffer(None, dtype, shape if isinstance(shape, tuple) else (shape,), init=f"fill={value!r}")


def _as_buffer(name, value):
    if isinstance(value, Buffer):
        return value
    if isinstance(value, np.ndarray):
        dtype = _IMPLIED.get(value.dtype)
        if dtype is None:
            raise TypeError(f"argument {name!r}: a {value.dtype} array does not name an element type; "
                            f"wrap it as Buffer(array, 'f16'|'bf16'|'f32'|...)")
        return Buffer(value, dtype)
    return None


def _scalar(name, value):
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    raise TypeError(f"argument {name!r}: expected a scalar, an array or a Buffer, got {type(value).__name__}")


def _define(value):
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)


# ---------------------------------------------------------------------------------------------

def command(tsl, kernel, grid, specs, defines=None, stage=None, seed=None, saves=()):
    grid = (grid,) if isinstance(grid, int) else tuple(grid)
    cmd = [binary(), kernel_path(tsl), "--kernel", kernel]
    for k, v in (defines or {}).items():
        cmd += ["-D", f"{k}={_define(v)}"]
    cmd += ["--grid", ",".join(str(int(g)) for g in grid)]
    if stage is not None:
        cmd.append(f"--stage={stage}")
    if seed is not None:
        cmd += ["--seed", str(int(seed))]
    for name, spec in specs:
        cmd += ["--arg", f"{name}={spec}"]
    for name, path in saves:
        cmd += ["--save", f"{name}={path}"]
    return cmd


def run(tsl, kernel, grid, args, defines=None, outputs=None, stage=None, seed=None, timeout=600):
    """Compile `kernel` of `tsl` (a path, or a file in kernels/) with `defines` and run it on `grid`
    (int or tuple; the number of persistent programs at stage 'lowered').

    args: {parameter name: value}, value a Python/NumPy scalar, a NumPy array (f16/f32/i32/i64/bool
    imply the element type) or a Buffer.  outputs: the buffer names to read back (default: every
    buffer argument).  Returns {name: float64 array of the argument's shape}.
    """
    with tempfile.TemporaryDirectory(prefix="tessel-run-") as tmp:
        specs, shapes, saves = [], {}, []
        for i, (name, value) in enumerate(args.items()):
            buf = _as_buffer(name, value)
            if buf is None:
                specs.append((name, _scalar(name, value)))
                continue
            shapes[name] = buf.shape
            if buf.data is not None:
                path = os.path.join(tmp, f"in{i}.f64")
                np.ascontiguousarray(buf.data, dtype="<f8").tofile(path)
                specs.append((name, f"{buf.dtype}[{buf.size}]:file={path}"))
            else:
                specs.append((name, f"{buf.dtype}[{buf.size}]:{buf.init}"))
        for name in (outputs if outputs is not None else list(shapes)):
            if name not in shapes:
                raise KeyError(f"output {name!r} is not a buffer argument")
            saves.append((name, os.path.join(tmp, f"out_{name}.f64")))
        cmd = command(tsl, kernel, grid, specs, defines, stage, seed, saves)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise TesselRunError(f"tessel-run failed (exit status {proc.returncode}) for kernel "
                                 f"'{kernel}':\n  {shlex.join(cmd)}\n{proc.stderr.rstrip()}")
        result = {}
        for name, path in saves:
            result[name] = np.fromfile(path, dtype="<f8").reshape(shapes[name])
        return result
