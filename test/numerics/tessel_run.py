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

BACKENDS (environment variable TESSEL_BACKEND):
  * "interpreter" (default): the CPU interpreter, as above.
  * "record": the interpreter, and also compiles a kernel bundle (`tesselc --emit=bundle`, PTX for
    $TESSEL_TARGET, default sm_90) for every distinct (kernel file, kernel, defines) into $TESSEL_BUNDLE_DIR (default
    <repo>/.gpu-bundles): `<key>.bundle`, with index.json mapping each key to what it was compiled
    from.  The key hashes the file's basename, the kernel, the sorted defines AND the SHA-256 of the
    file's text (so edited kernels, e.g. the mutants of test_kernels.py, get their own bundles and a
    stale bundle is never picked up).  scripts/gpu/record_bundles.sh fills the directory.
  * "gpu": no tessel-run or tesselc: looks the bundle up in $TESSEL_BUNDLE_DIR, or compiles it with
    the package's compiler for this GPU ($TESSEL_TARGET if set) when it is not there (a package
    with the compiler, such as the installed wheel; TesselRunError without one), and runs it through the CUDA runtime of the
    Python extension (tessel._tessel.Runtime; an installed package, or <build>/python on
    PYTHONPATH).  Buffers are converted to their storage format on the host
    (f16, bf16 = round-to-nearest-even bits, f32, i32, i64, i1 = uint8), outputs converted back to
    float64 exactly as the interpreter returns them.  `grid` is the launch grid of "grid" kernels and
    ignored by persistent ones (they size their own grid); `stage` and `seed` are ignored (the bundle
    is the lowered kernel).  scripts/gpu/check.sh runs test_kernels.py this way.
"""

import fcntl
import hashlib
import json
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

def command(tsl, kernel, grid, specs, defines=None, stage=None, seed=None, saves=(), stream_k=None):
    grid = (grid,) if isinstance(grid, int) else tuple(grid)
    cmd = [binary(), kernel_path(tsl), "--kernel", kernel]
    for k, v in (defines or {}).items():
        cmd += ["-D", f"{k}={_define(v)}"]
    cmd += ["--grid", ",".join(str(int(g)) for g in grid)]
    if stage is not None:
        cmd.append(f"--stage={stage}")
    if stream_k is not None:
        cmd.append(f"--stream-k={stream_k}")
    if seed is not None:
        cmd += ["--seed", str(int(seed))]
    for name, spec in specs:
        cmd += ["--arg", f"{name}={spec}"]
    for name, path in saves:
        cmd += ["--save", f"{name}={path}"]
    return cmd


def run(tsl, kernel, grid, args, defines=None, outputs=None, stage=None, seed=None, timeout=600,
        stream_k=None):
    """Compile `kernel` of `tsl` (a path, or a file in kernels/) with `defines` and run it on `grid`
    (int or tuple; the number of persistent programs at stage 'lowered').  `stream_k`: how stage
    'lowered' lowers stream_k, 'persistent' (the default) or 'split-k' (the kernel, then its
    combine kernel).

    args: {parameter name: value}, value a Python/NumPy scalar, a NumPy array (f16/f32/i32/i64/bool
    imply the element type) or a Buffer.  outputs: the buffer names to read back (default: every
    buffer argument).  Returns {name: float64 array of the argument's shape}.
    The back end is chosen by $TESSEL_BACKEND (see the module's docstring).
    """
    mode = backend()
    if mode == "gpu":
        return _gpu_run(tsl, kernel, grid, args, defines, outputs, stream_k)
    result = _interpreter_run(tsl, kernel, grid, args, defines, outputs, stage, seed, timeout, stream_k)
    if mode == "record":                               # after the run: its failures come first
        record_bundle(tsl, kernel, defines, timeout=timeout, stream_k=stream_k)
    return result


def _interpreter_run(tsl, kernel, grid, args, defines, outputs, stage, seed, timeout, stream_k):
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
        cmd = command(tsl, kernel, grid, specs, defines, stage, seed, saves, stream_k)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise TesselRunError(f"tessel-run failed (exit status {proc.returncode}) for kernel "
                                 f"'{kernel}':\n  {shlex.join(cmd)}\n{proc.stderr.rstrip()}")
        result = {}
        for name, path in saves:
            result[name] = np.fromfile(path, dtype="<f8").reshape(shapes[name])
        return result


# ---------------------------------------------------------------------------------------------
# back ends: bundles recorded here, run on a GPU elsewhere

BACKENDS = ("interpreter", "record", "gpu")


def backend():
    mode = os.environ.get("TESSEL_BACKEND") or "interpreter"
    if mode not in BACKENDS:
        raise TesselRunError(f"TESSEL_BACKEND={mode!r}: expected one of {', '.join(BACKENDS)}")
    return mode


def bundle_dir():
    return os.path.abspath(os.environ.get("TESSEL_BUNDLE_DIR") or os.path.join(ROOT, ".gpu-bundles"))


def bundle_key(tsl, kernel, defines=None, stream_k=None):
    """(key, entry): entry describes what the bundle is compiled from (file basename, kernel, sorted
    defines as tesselc sees them, SHA-256 of the file's text, and the stream_k lowering when one is
    chosen); key is a stable hash of it."""
    path = kernel_path(tsl)
    try:
        with open(path, "rb") as f:
            source_sha = hashlib.sha256(f.read()).hexdigest()
    except OSError as error:
        raise TesselRunError(f"kernel file {path} cannot be read: {error}") from error
    entry = {"tsl": os.path.basename(path), "kernel": kernel,
             "defines": sorted([str(k), _define(v)] for k, v in (defines or {}).items()),
             "source_sha256": source_sha}
    if stream_k is not None:
        entry["stream_k"] = stream_k
    blob = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
    key = f"{os.path.splitext(entry['tsl'])[0]}-{kernel}-{hashlib.sha256(blob).hexdigest()[:16]}"
    return key, entry


def bundle_path(key):
    return os.path.join(bundle_dir(), key + ".bundle")


def tesselc():
    path = os.path.join(build_dir(), "bin", "tesselc")
    if not os.access(path, os.X_OK):
        raise TesselRunError(f"tesselc not found at {path}: build it (ninja -C build tesselc) "
                             f"or point TESSEL_BUILD_DIR at a build directory")
    return path


def record_bundle(tsl, kernel, defines=None, timeout=600, stream_k=None):
    """Compile `kernel` of `tsl` with `defines` to a bundle in bundle_dir() unless it is there;
    returns its path.  Safe against concurrent recorders (pytest-xdist)."""
    key, entry = bundle_key(tsl, kernel, defines, stream_k)
    out_dir = bundle_dir()
    os.makedirs(out_dir, exist_ok=True)
    path = bundle_path(key)
    if not os.path.exists(path):
        cmd = [tesselc(), kernel_path(tsl), "--kernel", kernel]
        for k, v in (defines or {}).items():
            cmd += ["-D", f"{k}={_define(v)}"]
        if stream_k is not None:
            cmd.append(f"--stream-k={stream_k}")
        tmp = f"{path}.tmp{os.getpid()}"
        cmd += ["--target", os.environ.get("TESSEL_TARGET", "sm_90"), "--emit=bundle", "-o", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise TesselRunError(f"tesselc failed (exit status {proc.returncode}) for kernel "
                                 f"'{kernel}':\n  {shlex.join(cmd)}\n{proc.stderr.rstrip()}")
        os.replace(tmp, path)
    with open(os.path.join(out_dir, ".index.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        index_path = os.path.join(out_dir, "index.json")
        index = {}
        if os.path.exists(index_path):
            with open(index_path) as f:
                index = json.load(f)
        if index.get(key) != entry:
            index[key] = entry
            tmp = f"{index_path}.tmp{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(index, f, indent=1, sort_keys=True)
                f.write("\n")
            os.replace(tmp, index_path)
    return path


# Storage formats on the device, and the conversions float64 <-> storage.
_STORAGE = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32, "i32": np.int32, "i64": np.int64,
            "i1": np.uint8}


def to_storage(x, dtype):
    """float64 values -> a contiguous array in the device format of `dtype` (rounded as tessel-run
    rounds them on load)."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1))
    if dtype == "f16":
        return x.astype(np.float16)
    if dtype == "bf16":
        f = x.astype(np.float32)
        u = f.view(np.uint32).astype(np.uint64)
        bits = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)
        return np.where(np.isnan(f), np.uint16(0x7FC0), bits).astype(np.uint16)
    if dtype == "f32":
        return x.astype(np.float32)
    if dtype in ("i32", "i64"):
        return np.trunc(x).astype(_STORAGE[dtype])
    if dtype == "i1":
        return (x != 0).astype(np.uint8)
    raise ValueError(f"unknown element type {dtype!r} (one of {', '.join(DTYPES)})")


def from_storage(a, dtype):
    """A device-format array of `dtype` -> float64."""
    if dtype == "bf16":
        return (np.asarray(a, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return np.asarray(a).astype(np.float64)


def _host_values(buf):
    """A Buffer's initial float64 values, flat."""
    if buf.data is not None:
        return buf.data.reshape(-1)
    if buf.init == "zeros":
        return np.zeros(buf.size)
    if buf.init.startswith("fill="):
        return np.full(buf.size, float(buf.init[len("fill="):]))
    raise ValueError(f"unknown buffer initialisation {buf.init!r}")


_GPU = {}


def _gpu_runtime():
    """The process's tessel._tessel.Runtime (created once), or a TesselRunError saying why not."""
    if "runtime" not in _GPU:
        try:
            from tessel import _tessel
        except ImportError as error:
            raise TesselRunError(f"TESSEL_BACKEND=gpu needs the tessel Python extension: build it "
                                 f"(-DTESSEL_ENABLE_PYTHON=ON) and put <build>/python on PYTHONPATH "
                                 f"({error})") from error
        if not getattr(_tessel, "has_runtime", False):
            raise TesselRunError("TESSEL_BACKEND=gpu: this tessel extension was built without the "
                                 "CUDA runtime (TESSEL_ENABLE_CUDA_RUNTIME=OFF)")
        try:
            _GPU["runtime"] = _tessel.Runtime()
        except Exception as error:  # tessel.DeviceError: no driver, no device
            raise TesselRunError(f"TESSEL_BACKEND=gpu: cannot start the CUDA runtime: {error}") from error
        _GPU["modules"] = {}
    return _GPU["runtime"]


def _gpu_kernel(rt, tsl, kernel, defines, stream_k):
    key, entry = bundle_key(tsl, kernel, defines, stream_k)
    path = bundle_path(key)
    modules = _GPU["modules"]
    if path not in modules:
        if os.path.exists(path):
            modules[path] = rt.load_bundle(path)
        else:
            modules[path] = rt.load_bundle_from_string(
                _compile_here(tsl, kernel, stream_k, entry, path), key + ".bundle")
    return modules[path].kernel(kernel)


def _compile_here(tsl, kernel, stream_k, entry, path):
    """The bundle compiled by the package's own compiler for this GPU (an installed wheel), when
    none was recorded; a TesselRunError when the package has no compiler."""
    from tessel import _tessel
    if not _tessel.has_compiler:
        raise TesselRunError(
            f"no bundle for kernel '{kernel}' of {entry['tsl']} with defines "
            f"{dict(entry['defines'])} (source sha256 {entry['source_sha256'][:12]}): expected "
            f"{path}, and this tessel has no compiler to build it ({_tessel.compiler_error}); "
            f"record it with TESSEL_BACKEND=record (scripts/gpu/record_bundles.sh) or point "
            f"TESSEL_BUNDLE_DIR at the recorded bundles")
    from tessel import gpu
    with open(kernel_path(tsl), encoding="utf-8") as f:
        source = f.read()
    return _tessel.compile_bundle(source, kernel_path(tsl), kernel, dict(entry["defines"]),
                                  os.environ.get("TESSEL_TARGET") or gpu.target(),
                                  stream_k or "persistent")


def _gpu_scalar(name, kind, value):
    if isinstance(value, (Buffer, np.ndarray)):
        raise TypeError(f"argument {name!r}: the kernel takes a {kind} scalar, got a buffer")
    if kind in ("i32", "i64"):
        if isinstance(value, (float, np.floating)) and float(value) != int(value):
            raise TypeError(f"argument {name!r}: {value!r} is not an integer ({kind})")
        return int(value)
    return float(value)


def _gpu_run(tsl, kernel, grid, args, defines, outputs, stream_k):
    rt = _gpu_runtime()
    k = _gpu_kernel(rt, tsl, kernel, defines, stream_k)
    params = k.params                       # [(name, kind, elem, multiple_of, none)]
    names = [p[0] for p in params if not p[4]]   # pointers compiled as None take no argument
    unknown = [n for n in args if n not in names]
    missing = [n for n in names if n not in args]
    if unknown or missing:
        raise TesselRunError(f"kernel '{kernel}' takes ({', '.join(names)}); "
                             f"unknown arguments: {unknown}, missing: {missing}")
    buffers = {n: b for n, b in ((n, _as_buffer(n, v)) for n, v in args.items()) if b is not None}
    outputs = list(outputs) if outputs is not None else list(buffers)
    for name in outputs:
        if name not in buffers:
            raise KeyError(f"output {name!r} is not a buffer argument")
    grid = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    ptrs, launch_args = {}, []
    try:
        for name, kind, elem, _, none in params:   # the runtime checks the hints
            if none:
                launch_args.append(0)
                continue
            value = args[name]
            if kind != "ptr":
                launch_args.append(_gpu_scalar(name, kind, value))
                continue
            buf = buffers.get(name)
            if buf is None:
                raise TypeError(f"argument {name!r}: the kernel takes a pointer to {elem}, got a scalar")
            if buf.dtype != elem:
                raise TesselRunError(f"kernel '{kernel}', argument {name!r}: a {buf.dtype} buffer, but "
                                     f"the bundle's parameter points to {elem}")
            host = to_storage(_host_values(buf), buf.dtype)
            ptrs[name] = rt.alloc(max(host.nbytes, 16))    # no zero-byte allocations
            if host.nbytes:
                rt.copy_to_device(ptrs[name], host)
            launch_args.append(ptrs[name])
        if k.persistent:
            rt.launch(k, launch_args)
        elif all(int(g) > 0 for g in grid):                # an empty grid: nothing to run
            rt.launch(k, launch_args, grid=[int(g) for g in grid])
        rt.synchronize()
        result = {}
        for name in outputs:
            buf = buffers[name]
            host = np.empty(buf.size, dtype=_STORAGE[buf.dtype])
            if host.nbytes:
                rt.copy_to_host(host, ptrs[name])
            result[name] = from_storage(host, buf.dtype).reshape(buf.shape)
        return result
    finally:
        for ptr in ptrs.values():
            rt.free(ptr)
