"""Compiling DSL kernels and launching them: tessel.compile, tessel.jit, Kernel, JITKernel.

    k = tessel.compile("kernels/add.tsl", constants={"BLOCK": 256})      # one specialisation
    k[(tessel.cdiv(n, 256),)](x, y, out, n)                               # grid kernel
    k[lambda meta: (tessel.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n=n)

    add = tessel.jit("kernels/add.tsl")             # compiled lazily, per constexpr values
    add[grid](x, y, out, n, BLOCK=256)              # constexprs by keyword (or position)

    @tessel.jit                                     # or @tessel.jit(num_warps=8)
    def add(x: ptr[f32], y: ptr[f32], out: ptr[f32], n: i32, BLOCK: constexpr = 1024):
        ...                                         # the DSL, in a Python file

A persistent (stream_k) kernel sizes its own grid: launch it as `k(*args)`; on the interpreter it
runs on `programs=` programs (default DEFAULT_PROGRAMS; more programs than work is fine).

Where kernels run: on the GPU when there is one (PTX bundles; arguments are CUDA tensors, see
tessel.gpu), else on the CPU interpreter with NumPy arrays (see tessel.interpreter).
`interpret=True` or TESSEL_INTERPRET=1 in the environment picks the interpreter; an explicit
`interpret=False` without a GPU is an error rather than a silent fallback. A package built without
the compiler (runtime only) launches bundles precompiled elsewhere (`tessel.precompile`, found
through $TESSEL_BUNDLE_DIR; see tessel.cache).
"""

import ast
import collections
import functools
import inspect
import math
import os
import re
import textwrap

import numpy as np

import json

from . import cache, errors, gpu, interpreter, language
from ._backend import _tessel

# Programs of a persistent kernel on the interpreter when the launch does not say (stream-K
# splits the work over them; programs without work return at once).
DEFAULT_PROGRAMS = 8


class Param(collections.namedtuple("Param", "name kind elem multiple_of none",
                                   defaults=(None, False))):
    """A runtime parameter: kind 'ptr' (elem: the pointee type) or a scalar type (elem empty);
    multiple_of is the kernel's hint on it (None: none), checked at every launch: an integer
    argument is a multiple of it, a pointer's address aligned to that many bytes. none: a
    pointer the kernel was compiled with as None (it takes None)."""

    __slots__ = ()

    @property
    def type(self):
        """As written in the DSL: 'ptr[f16]', 'i32'."""
        return f"ptr[{self.elem}]" if self.kind == "ptr" else self.kind


_DTYPE_NAMES = {np.dtype(np.float16): "f16", np.dtype(np.float32): "f32",
                np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.bool_): "i1"}
_SCALAR_TYPES = ("i1", "i32", "i64", "f16", "bf16", "f32")
# An argument the call did not give (a default of its own, so that binding leaves the
# reporting of missing arguments to us).
_MISSING = object()


def cdiv(a, b):
    """Ceiling division of integers, as in the DSL and launch rules."""
    return -(-a // b)


def env_flag(name):
    """Whether environment variable `name` is set to 1, true, yes or on."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _no_compiler():
    """Why this tessel cannot compile: the compiler library was not found or did not load."""
    return (f"this tessel has no compiler ({_tessel.compiler_error}; a package built with "
            f"the compiler has libtessel_compiler.so beside its extension, or set "
            f"TESSEL_COMPILER_LIBRARY)")


def _backend(interpret):
    """'interpreter' or 'gpu': where a kernel compiled with `interpret` runs."""
    if interpret is None and env_flag("TESSEL_INTERPRET"):
        interpret = True
    if interpret:
        if not _tessel.has_compiler:
            raise RuntimeError(f"interpret=True: the interpreter is part of the compiler, and "
                               f"{_no_compiler()}")
        return "interpreter"
    if interpret is None and _tessel.has_compiler and not gpu.has_gpu():
        return "interpreter"
    gpu.runtime()                       # no GPU: DeviceError with the reason
    return "gpu"


def _read(source_or_path):
    """(text, file name for diagnostics) of a path or of DSL source text."""
    if isinstance(source_or_path, os.PathLike) or (
            isinstance(source_or_path, str) and "\n" not in source_or_path
            and (source_or_path.endswith(".tsl") or os.path.isfile(source_or_path))):
        path = os.fspath(source_or_path)
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    if isinstance(source_or_path, str):
        return source_or_path, "<string>"
    raise TypeError(f"expected DSL source, a .tsl path or a function, got "
                    f"{type(source_or_path).__name__}")


def _function_source(fn, num_warps):
    """A Python function holding DSL code -> (DSL source, file name). The function's decorators
    become `@kernel(num_warps=...)` and its docstring is blanked; blank lines in front keep every
    line where it is in the Python file, so diagnostics name the right lines (columns are those of
    the dedented function)."""
    lines, first = inspect.getsourcelines(fn)
    text = textwrap.dedent("".join(lines))
    node = ast.parse(text).body[0]
    body = text.splitlines()
    doc = node.body[0] if node.body else None
    if (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)):
        for i in range(doc.lineno - 1, doc.end_lineno):
            body[i] = ""
    def_line = first + node.lineno - 1
    source = "\n" * max(def_line - 2, 0) + f"@kernel(num_warps={int(num_warps)})\n"
    return source + "\n".join(body[node.lineno - 1:]) + "\n", inspect.getsourcefile(fn)


def _dsl_value(name, value):
    """A constant as DSL text: 64, 0.5, True, bf16, None (a pointer compiled without a buffer)."""
    if value is None:
        return "None"
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return repr(value) if math.isfinite(value) else f'float("{value}")'
    if isinstance(value, language.dtype) or (isinstance(value, str) and value in _SCALAR_TYPES):
        return str(value)
    if isinstance(value, (np.dtype, type)) and np.dtype(value) in _DTYPE_NAMES:
        return _DTYPE_NAMES[np.dtype(value)]
    raise TypeError(f"constant '{name}': expected an int, float, bool or element type "
                    f"({', '.join(_SCALAR_TYPES)}), got {value!r}")


def _select(signatures, kernel, filename):
    """(name, [(param, is_constexpr, has_default)]) of the requested kernel."""
    names = [name for name, _ in signatures]
    if kernel is None:
        if len(names) == 1:
            return signatures[0]
        if not names:
            raise ValueError(f"{filename}: no @kernel in the source")
        raise ValueError(f"{filename} holds kernels {', '.join(names)}: pass kernel=NAME")
    for sig in signatures:
        if sig[0] == kernel:
            return sig
    raise ValueError(f"{filename}: no kernel named '{kernel}' (kernels: {', '.join(names)})")


def _defines(signature, constants):
    """The constants as DSL text ({name: '64'}), checked against the kernel's constexprs."""
    name, params = signature
    constexprs = [p for p, is_constexpr, _ in params if is_constexpr]
    for c, value in constants.items():
        if c in [p for p, is_constexpr, _ in params if not is_constexpr]:
            if value is None:       # a pointer compiled as None (the compiler checks the type)
                continue
            raise TypeError(f"kernel '{name}': '{c}' is a runtime parameter, not a constexpr "
                            f"(a pointer parameter may be given as None)")
        if c not in constexprs:
            raise TypeError(f"kernel '{name}' has no constexpr parameter '{c}' "
                            f"(constexprs: {', '.join(constexprs) or 'none'})")
    return {c: _dsl_value(c, v) for c, v in constants.items()}


STREAM_K = ("persistent", "split-k")


def _check_stream_k(stream_k):
    if stream_k not in STREAM_K:
        raise ValueError(f"stream_k must be one of {', '.join(STREAM_K)}, got {stream_k!r}")
    return stream_k


# A top-level `from MODULE import NAME, ...` of a DSL file (MODULE.tsl beside it).
_IMPORT = re.compile(r"^from[ \t]+(\w+)[ \t]+import\b", re.M)


def source_key(text, filename):
    """The text that determines a compile of `text`: it, then each file it imports helpers from
    (as the compiler finds them: MODULE.tsl beside `filename`, or in the working directory for
    text without a file; recursively, each once), so that a cached kernel is rebuilt when a
    helper it imports changes."""
    parts, seen, pending = [text], set(), [(text, filename)]
    while pending:
        body, name = pending.pop()
        base = "." if name.startswith("<") else os.path.dirname(name) or "."
        for module in _IMPORT.findall(body):
            path = os.path.realpath(os.path.join(base, module + ".tsl"))
            if path in seen:
                continue
            seen.add(path)
            try:
                with open(path, encoding="utf-8") as f:
                    imported = f.read()
            except OSError:
                continue                      # the compiler reports the missing file
            parts.append(f"\0{module}.tsl\0{imported}")
            pending.append((imported, path))
    return "".join(parts)


def _bundle_fields(text, filename, name, defines, target, stream_k):
    """What determines a kernel's bundle (the key of its cache entry and of its exported file)."""
    return dict(source=source_key(text, filename), kernel=name,
                constants=sorted(defines.items()), target=target, stage="bundle",
                stream_k=stream_k)


def _compile(text, filename, signature, constants, backend, stream_k):
    """One specialisation, from the on-disk cache (or a bundle directory) or the compiler."""
    name = signature[0]
    defines = _defines(signature, constants)
    if backend == "gpu":
        return _gpu_kernel(text, filename, name, defines, gpu.target(), stream_k)
    entry = cache.entry_path(name, cache.key(
        source=source_key(text, filename), filename=filename, kernel=name,
        constants=sorted(defines.items()), stage="lowered", target="interpreter",
        stream_k=stream_k))
    ir = cache.load(entry)
    program = None
    if ir is not None:
        try:
            program = _tessel.Program(ir, filename)
        except ValueError:  # a damaged entry that passed the checksum: rebuild it
            program = None
    cache_hit = program is not None
    if not cache_hit:
        ir = _tessel.compile(text, filename, name, defines, stream_k)
        program = _tessel.Program(ir, filename)
        cache.store(entry, ir)
    return Kernel(program, name, ir, cache_hit)


def _gpu_kernel(text, filename, name, defines, target, stream_k):
    fields = _bundle_fields(text, filename, name, defines, target, stream_k)
    if _tessel.has_compiler:
        entry = cache.entry_path(name, cache.key(**fields), ".bundle")
        bundle = cache.load(entry)
        cache_hit = bundle is not None
        if not cache_hit:
            bundle = _tessel.compile_bundle(text, filename, name, defines, target, stream_k)
            cache.store(entry, bundle)
    else:
        directory = cache.bundle_dir()
        path = directory and cache.entry_path(name, cache.portable_key(**fields), ".bundle",
                                              directory)
        bundle = path and cache.load(path, checksum=False)
        if not bundle:
            given = ", ".join(f"{k}={v}" for k, v in sorted(defines.items())) or "none"
            raise errors.BundleNotFoundError(
                f"kernel '{name}' of {os.path.basename(filename)} (constants: {given}; target "
                f"{target}): no precompiled bundle in "
                f"{directory or '$TESSEL_BUNDLE_DIR (unset)'}, and {_no_compiler()}; "
                f"precompile it on a machine with one (python -m tessel.precompile) and point "
                f"TESSEL_BUNDLE_DIR at the result")
        cache_hit = True
    module = gpu.runtime().load_bundle_from_string(bundle, f"{name}.bundle")
    return GPUKernel(module.kernel(name), name, bundle, cache_hit)


def precompile(source_or_path, constants=None, kernel=None, target="sm_90", out_dir=None,
               stream_k="persistent"):
    """Compiles one kernel specialisation to a bundle for `target` and writes it to the bundle
    directory `out_dir` (default $TESSEL_BUNDLE_DIR) under its portable key, where a runtime-only
    tessel (no compiler) finds it. Returns the bundle's path. Needs the compiler."""
    text, filename = _read(source_or_path)
    signature = _select(_tessel.signatures(text, filename), kernel, filename)
    return _precompile(text, filename, signature, dict(constants or {}), target, out_dir,
                       _check_stream_k(stream_k))


def _precompile(text, filename, signature, constants, target, out_dir, stream_k):
    if not _tessel.has_compiler:
        raise RuntimeError(f"precompile: {_no_compiler()}")
    out_dir = out_dir or cache.bundle_dir()
    if not out_dir:
        raise ValueError("precompile: give out_dir or set TESSEL_BUNDLE_DIR")
    name = signature[0]
    defines = _defines(signature, constants)
    fields = _bundle_fields(text, filename, name, defines, target, stream_k)
    path = cache.entry_path(name, cache.portable_key(**fields), ".bundle", out_dir)
    if cache.load(path, checksum=False) is None:
        bundle = _tessel.compile_bundle(text, filename, name, defines, target, stream_k)
        cache.store(path, bundle, checksum=False, strict=True)
    return path


def compile(source_or_path, constants=None, kernel=None, interpret=None, stream_k="persistent"):
    """Compiles one kernel of DSL source text or a .tsl file, specialised with `constants` (its
    constexpr parameters: ints, floats, bools, element types such as tessel.bf16 or "bf16"; and
    None for a pointer parameter compiled without its buffer, which launches then pass as None).
    `kernel` names it when the source holds several. `stream_k` picks how a stream_k op is
    lowered: 'persistent' (stream-K: one persistent launch, partial states handed over with
    flags) or 'split-k' (each unit cut into equal chunks, then a combine kernel launched right
    after; see docs/dsl.md). Returns a Kernel (on the interpreter) or a
    GPUKernel (see the module's docstring for which); raises CompileError with the compiler's
    file:line:col report."""
    backend = _backend(interpret)
    _check_stream_k(stream_k)
    text, filename = _read(source_or_path)
    signature = _select(_tessel.signatures(text, filename), kernel, filename)
    return _compile(text, filename, signature, dict(constants or {}), backend, stream_k)


def _normalize_grid(name, grid):
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    try:
        grid = tuple(grid)
    except TypeError:
        grid = None
    if (grid is None or not 1 <= len(grid) <= 3
            or not all(isinstance(g, (int, np.integer)) and not isinstance(g, bool) and g >= 0
                       for g in grid)):
        raise ValueError(f"kernel '{name}': the grid must be 1 to 3 non-negative integers")
    return tuple(int(g) for g in grid) + (1,) * (3 - len(grid))


def _bind(name, names, args, kwargs):
    """{param: value} for the parameters `names`, from a call's args and kwargs; absent ones get
    _MISSING. Raises TypeError naming the kernel for surplus or unknown arguments. (Python's own
    binding rules, without inspect.Signature: this runs on every launch.)"""
    if len(args) > len(names):
        raise TypeError(f"kernel '{name}': too many positional arguments")
    values = dict(zip(names, args))
    for key, value in kwargs.items():
        if key in values:
            raise TypeError(f"kernel '{name}': multiple values for argument '{key}'")
        values[key] = value
    if len(values) > len(args) and not set(kwargs) <= set(names):
        unknown = next(k for k in kwargs if k not in names)
        raise TypeError(f"kernel '{name}': got an unexpected keyword argument '{unknown}'")
    return {n: values.get(n, _MISSING) for n in names}


class Kernel:
    """One compiled kernel, specialised with its constants.

    Attributes: name, params (runtime parameters, Param tuples), constants (constexpr values it
    was compiled with), num_warps, persistent, cluster (CTAs per thread-block cluster, 1: none),
    resident_clusters (on a GPU, the clusters it holds at once; None: unknown or no clusters),
    ir (the lowered tessel IR text), cache_hit (True when the IR came from the on-disk cache and
    the front end did not run), interpret.
    """

    def __init__(self, program, name, ir, cache_hit):
        info = next(k for k in program.kernels() if k["name"] == name)
        self._program = program
        self.name = name
        self.params = [Param(*p) for p in info["params"]]
        self.constants = info["constants"]
        self.num_warps = info["num_warps"]
        self.persistent = info["persistent"]
        self.cluster = info["cluster"]
        self.resident_clusters = None
        self.ir = ir
        self.cache_hit = cache_hit
        self.interpret = True

    def __repr__(self):
        params = ", ".join(f"{p.name}: {p.type}" for p in self.params)
        return f"<tessel.Kernel {self.name}({params}) constants={self.constants}>"

    def __getitem__(self, grid):
        """kernel[grid](*args, **kwargs): grid is an int, a tuple of 1 to 3 ints, or a callable
        of the launch's meta-parameters (arguments and constants by name) returning one."""
        if self.persistent:
            raise TypeError(f"kernel '{self.name}' is persistent (stream_k): it sizes its own "
                            f"grid; launch it as kernel(*args)")
        return functools.partial(self._launch, grid)

    def __call__(self, *args, programs=None, **kwargs):
        """Launches a persistent kernel; `programs` sets the interpreter's program count."""
        if not self.persistent:
            raise TypeError(f"kernel '{self.name}' needs a grid: kernel[grid](*args)")
        self._run(self._persistent_grid(programs), args, kwargs)

    def _persistent_grid(self, programs):
        if programs is None:            # whole clusters
            programs = cdiv(DEFAULT_PROGRAMS, self.cluster) * self.cluster
        if isinstance(programs, bool) or not isinstance(programs, (int, np.integer)) \
                or programs < 1:
            raise ValueError(f"kernel '{self.name}': programs must be a positive integer")
        if programs % self.cluster:
            raise ValueError(f"kernel '{self.name}' runs in thread-block clusters of "
                             f"{self.cluster} programs: programs must be a multiple of "
                             f"{self.cluster}, got {programs}")
        return int(programs)

    def _launch(self, grid, *args, **kwargs):
        self._run(grid, args, kwargs)

    def _run(self, grid, args, kwargs):
        if kwargs or len(args) != len(self.params) or callable(grid):
            values = self._bind_all(args, kwargs)
            if callable(grid):
                grid = grid({**values, **self.constants})
            args = list(values.values())
        if grid is not None:
            grid = _normalize_grid(self.name, grid)
        self._execute(args, grid)

    def _bind_all(self, args, kwargs):
        fixed = [k for k in kwargs if k in self.constants]
        if fixed:
            raise TypeError(f"kernel '{self.name}': '{fixed[0]}' is a constexpr fixed at compile "
                            f"time ({fixed[0]}={self.constants[fixed[0]]!r}); compile another "
                            f"specialisation to change it")
        values = _bind(self.name, [p.name for p in self.params], args, kwargs)
        missing = [n for n, v in values.items() if v is _MISSING]
        if missing:
            raise TypeError(f"kernel '{self.name}': missing argument(s) "
                            f"{', '.join(repr(n) for n in missing)}")
        return values

    def _execute(self, values, grid):
        interpreter.launch(self._program, self.name, self.params, values, grid)


class GPUKernel(Kernel):
    """One compiled kernel on the GPU: the same interface as Kernel, with `bundle` (the bundle's
    JSON text: PTX and launch metadata) instead of `ir`. Arguments are GPU buffers (see
    tessel.gpu); launches are asynchronous. A persistent kernel's grid comes from the GPU's
    occupancy (`programs` is for the interpreter)."""

    def __init__(self, rt_kernel, name, bundle, cache_hit):  # pylint: disable=super-init-not-called
        info = next(k for k in json.loads(bundle)["kernels"] if k["name"] == name)
        self._rt_kernel = rt_kernel
        self.name = name
        self.params = [Param(*p) for p in rt_kernel.params]
        self._names = [p.name for p in self.params]
        self.constants = info.get("constants", {})
        self.num_warps = rt_kernel.num_warps
        self.persistent = rt_kernel.persistent
        self.cluster = rt_kernel.cluster
        self.resident_clusters = rt_kernel.resident_clusters
        self.bundle = bundle
        self.ir = None
        self.cache_hit = cache_hit
        self.interpret = False

    def __repr__(self):
        return "<tessel.GPUKernel" + super().__repr__()[len("<tessel.Kernel"):]

    def _persistent_grid(self, programs):
        if programs is not None:
            raise TypeError(f"kernel '{self.name}': programs= sets the interpreter's program "
                            f"count; on a GPU a persistent kernel's grid comes from occupancy")
        return None

    # A call with every argument by position goes to the extension's fast path first
    # (gpu.try_launch); what it declines takes Kernel's path, which checks and explains.
    def _launch(self, grid, *args, **kwargs):
        if not kwargs and len(args) == len(self._names):
            if callable(grid):
                grid = grid({**dict(zip(self._names, args)), **self.constants})
            if gpu.try_launch(self._rt_kernel, args, grid):
                return
        self._run(grid, args, kwargs)

    def __call__(self, *args, programs=None, **kwargs):
        if self.persistent and programs is None and not kwargs \
                and gpu.try_launch(self._rt_kernel, args, None):
            return
        super().__call__(*args, programs=programs, **kwargs)

    def _execute(self, values, grid):
        gpu.launch(self._rt_kernel, self.name, self.params, values, grid)


class JITKernel:
    """A kernel compiled on first use, once per set of constexpr values (kept in memory; the
    on-disk cache serves other processes). Made by tessel.jit."""

    def __init__(self, source, kernel=None, interpret=None, num_warps=None,
                 stream_k="persistent"):
        self._stream_k = _check_stream_k(stream_k)
        if callable(source):
            functools.update_wrapper(self, source)
            if kernel is not None:
                raise TypeError("tessel.jit: kernel= names a kernel of a source, not of a function")
            self._fn, self._source, kernel = source, None, source.__name__
            self._num_warps = 4 if num_warps is None else num_warps
        else:
            if num_warps is not None:
                raise TypeError("tessel.jit: num_warps= is for functions; a DSL source sets it "
                                "with @kernel(num_warps=...)")
            self._fn, self._source = None, source
        self._kernel = kernel
        self._interpret = interpret
        self._loaded = None
        self._specializations = {}
        # (number of positional arguments, those that are None, constexpr keywords) -> Kernel: a
        # call that passes every runtime argument by position and only constexprs by keyword (as
        # the ops do) skips binding.
        self._fast = {}

    def _read_source(self):
        """(text, filename, signature) of the kernel."""
        if self._fn is not None:
            text, filename = _function_source(self._fn, self._num_warps)
        else:
            text, filename = _read(self._source)
        return text, filename, _select(_tessel.signatures(text, filename), self._kernel, filename)

    def _load(self):
        """(text, filename, signature), read on first use; picks the back end."""
        if self._loaded is None:
            self._backend = _backend(self._interpret)
            self._loaded = self._read_source()
        return self._loaded

    @property
    def name(self):
        return self._load()[2][0]

    def specialize(self, **constants):
        """The Kernel compiled with these constexpr values (memoised)."""
        text, filename, signature = self._load()
        memo = tuple(sorted((k, _dsl_value(k, v)) for k, v in constants.items()))
        kernel = self._specializations.get(memo)
        if kernel is None:
            kernel = self._specializations[memo] = _compile(text, filename, signature, constants,
                                                            self._backend, self._stream_k)
        return kernel

    def precompile(self, target="sm_90", out_dir=None, **constants):
        """tessel.precompile of the specialisation with these constexpr values."""
        text, filename, signature = self._loaded or self._read_source()
        return _precompile(text, filename, signature, constants, target, out_dir,
                           self._stream_k)

    def _split(self, args, kwargs):
        """The compiled Kernel for a call's constexpr arguments, and its runtime arguments."""
        try:
            # Which arguments are None picks the specialisation too.
            key = (len(args), tuple(i for i, a in enumerate(args) if a is None),
                   tuple(kwargs.items()))
            kernel = self._fast.get(key)
        except TypeError:                      # an unhashable value: the general path
            key = kernel = None
        if kernel is not None:
            return kernel, args, {}
        _, _, (name, params) = self._load()
        values = _bind(name, [p for p, _, _ in params], args, kwargs)
        constants, runtime = {}, {}
        for p, is_constexpr, has_default in params:
            value = values[p]
            if is_constexpr:
                if value is not _MISSING:
                    constants[p] = value
                elif not has_default:
                    raise TypeError(f"kernel '{name}': missing constexpr '{p}' (it has no default)")
            elif value is None:
                # A pointer passed None compiles without it (the kernel sees the constant
                # None) and still takes it at launch (a null pointer).
                constants[p] = runtime[p] = None
            elif value is not _MISSING:
                runtime[p] = value
        kernel = self.specialize(**constants)
        constexprs = {p for p, is_constexpr, _ in params if is_constexpr}
        if key is not None and len(args) == len(runtime) and set(kwargs) <= constexprs \
                and len(kernel.params) == len(args):
            self._fast[key] = kernel
        return kernel, (), runtime

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            kernel, positional, keywords = self._split(args, kwargs)
            kernel[grid](*positional, **keywords)
        return launch

    def __call__(self, *args, programs=None, **kwargs):
        kernel, positional, keywords = self._split(args, kwargs)
        kernel(*positional, programs=programs, **keywords)


def jit(source=None, *, kernel=None, interpret=None, num_warps=None, stream_k="persistent"):
    """A lazily compiled kernel (JITKernel) from DSL source text, a .tsl path, or a Python
    function whose body is DSL code (`@tessel.jit` / `@tessel.jit(num_warps=8)`; default 4 warps;
    the function must be self-contained: @func helpers need a .tsl file). Constexpr parameters
    may be given at launch, by keyword or position; each new set of values compiles once."""
    if source is None:
        return lambda fn: JITKernel(fn, kernel, interpret, num_warps, stream_k)
    return JITKernel(source, kernel, interpret, num_warps, stream_k)
