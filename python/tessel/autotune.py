"""Autotuning: pick a kernel's constexpr values (tiles, warps, stages) by timing candidates.

    add = tessel.jit("add.tsl")
    tuned = tessel.autotune(add, configs=[{"BLOCK": 256}, {"BLOCK": 1024}], key=["n"])
    tuned[lambda meta: (tessel.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n)

or as a decorator over `@tessel.jit`. The first call with new values of the `key` arguments (for
an array: its shape and dtype) compiles every candidate (in parallel), times each on the device
where the call runs (the GPU, or the CPU interpreter) and launches the fastest; the choice is kept
in memory and on disk (`<cache_dir>/autotune/`), keyed by the kernel's source, the candidates,
the key values, the device and the compiler, so a warm cache never tunes again. Tuning stops
timing new candidates once `budget_s` has passed (at least one is always timed). Trial launches
write the call's arrays: `restore=` names the arguments whose values are copied before tuning
and put back before each trial and before the real launch (accumulated outputs, in-place
updates). The grid may be a function of the call's arguments and the candidate's constants.
"""

import concurrent.futures
import hashlib
import json
import os
import time

import numpy as np

from . import cache, compiler, errors, gpu


class Autotuner:
    """A JITKernel whose constexprs in `configs` are chosen per key by timing (tessel.autotune)."""

    def __init__(self, kernel, configs, key, warmup=1, rep=5, budget_s=60.0, restore=(),
                 cache_dir=None, timer=None):
        if not isinstance(kernel, compiler.JITKernel):
            raise TypeError(f"tessel.autotune: expected a tessel.jit kernel, got "
                            f"{type(kernel).__name__}")
        self.kernel = kernel
        self.configs = [dict(c) for c in configs]
        if not self.configs:
            raise ValueError("tessel.autotune: configs must hold at least one candidate")
        _, _, (name, params) = kernel._load()
        names = [p for p, _, _ in params]
        constexprs = {p for p, is_constexpr, _ in params if is_constexpr}
        for c in self.configs:
            unknown = sorted(set(c) - constexprs)
            if unknown:
                raise ValueError(f"tessel.autotune: kernel '{name}' has no constexpr parameter "
                                 f"{', '.join(map(repr, unknown))} (its constexprs: "
                                 f"{', '.join(sorted(constexprs)) or 'none'})")
        self.constexprs = constexprs
        self.key = list(key)
        for k in self.key + list(restore):
            if k not in names:
                raise ValueError(f"tessel.autotune: kernel '{name}' has no parameter {k!r}")
        self.names, self.name = names, name
        self.warmup, self.rep, self.budget_s = warmup, rep, budget_s
        self.restore = list(restore)
        self.cache_dir = cache_dir
        self._timer = timer
        self._best = {}            # key -> config
        self.tunings = 0           # how many keys were tuned (not found in a cache)
        self.refused = []          # (config, error) left out of the last tuning

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            values = compiler._bind(self.name, self.names, args, kwargs)
            values = {k: v for k, v in values.items() if v is not compiler._MISSING}
            config = self.best_config(grid, values)
            self._launch(grid, values, config)
        return launch

    def __call__(self, *args, **kwargs):
        """A persistent kernel (its grid sized by the device)."""
        return self[None](*args, **kwargs)

    # ----------------------------------------------------------------------------------------

    def best_config(self, grid, values):
        """The candidate for these arguments: from memory, the disk, or by timing."""
        call_key = tuple(_key_value(values.get(k)) for k in self.key)
        best = self._best.get(call_key)
        if best is not None:
            return best
        path = self._cache_path(call_key)
        stored = cache.load(path)
        if stored is not None:
            try:
                best = self.configs[json.loads(stored)["index"]]
            except (ValueError, KeyError, IndexError, TypeError):
                best = None
        if best is None:
            best = self._tune(grid, values)
            # The candidate by index (constexpr values such as types are not JSON), with
            # readable copies of it and of the key.
            cache.store(path, json.dumps({"index": self.configs.index(best),
                                          "config": repr(best), "key": repr(call_key)}))
        self._best[call_key] = best
        return best

    def _tune(self, grid, values):
        self.tunings += 1
        # Every candidate compiled (and on a GPU loaded) first, in parallel (the compiler
        # releases the GIL). One the compiler or the device refuses (more shared memory than
        # the device has, tiles the kernel rejects) is left out, as Triton prunes candidates
        # out of resources; if none is left, the first refusal is raised.
        # The call's own constexpr values (a head dim, a dtype) are part of each specialisation.
        fixed = {k: v for k, v in values.items() if k in self.constexprs}

        def prepare(config):
            try:
                self.kernel.specialize(**{**fixed, **config})
                return None
            except (errors.CompileError, errors.DeviceError) as error:
                return error

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            refusals = list(pool.map(prepare, self.configs))
        configs = [c for c, refused in zip(self.configs, refusals) if refused is None]
        if not configs:
            raise refusals[0]
        self.refused = [(c, r) for c, r in zip(self.configs, refusals) if r is not None]
        saved = {k: _copy(values[k]) for k in self.restore}
        clock = self._timer or _Timer(values, self.kernel._backend == "gpu")
        start = time.monotonic()
        best, best_time = None, None
        # The trials are not the call's launches: an op recording its launch plan
        # (tessel.ops) keeps only the chosen candidate's.
        recording = gpu.recorder()
        gpu.set_recorder(None)
        try:
            for config in configs:
                if best is not None and time.monotonic() - start > self.budget_s:
                    break
                run = lambda c=config: self._launch(grid, values, c, saved)
                for _ in range(self.warmup):
                    run()
                t = min(clock(run) for _ in range(max(self.rep, 1)))
                if best_time is None or t < best_time:
                    best, best_time = config, t
            for k, v in saved.items():
                _put(values[k], v)
        finally:
            gpu.set_recorder(recording)
        return best

    def _launch(self, grid, values, config, saved=None):
        for k, v in (saved or {}).items():
            _put(values[k], v)
        meta = {**values, **config}
        g = grid(meta) if callable(grid) else grid
        if g is None:
            self.kernel(**meta)
        else:
            self.kernel[g](**meta)

    def _cache_path(self, call_key):
        text, filename, _ = self.kernel._load()
        device = "interpreter"
        if self.kernel._backend == "gpu":
            rt = gpu.runtime()
            device = f"{gpu.target()}/{rt.multiprocessor_count}sm"
        digest = cache.key(source=hashlib.sha256(text.encode()).hexdigest(), kernel=self.name,
                           configs=[sorted((k, compiler._dsl_value(k, v)) for k, v in c.items())
                                    for c in self.configs],
                           key=repr(call_key), device=device,
                           stream_k=self.kernel._stream_k)
        return os.path.join(self.cache_dir or cache.cache_dir(), "autotune",
                            f"{self.name}-{digest}.json")


def autotune(kernel=None, *, configs, key=(), warmup=1, rep=5, budget_s=60.0, restore=(),
             cache_dir=None):
    """An Autotuner over `kernel` (a tessel.jit kernel), or a decorator making one. configs: the
    candidates, each a dict of constexpr values; key: the names of the arguments whose values
    (for arrays, shape and dtype) select a tuning; warmup/rep: untimed and timed launches per
    candidate (the fastest timed one counts); budget_s: the tuning time after which no new
    candidate is timed; restore: arguments put back to their values before each trial."""
    def make(k):
        return Autotuner(k, configs, key, warmup, rep, budget_s, restore, cache_dir)
    return make if kernel is None else make(kernel)


def _key_value(v):
    """An argument as a tuning key: an array by its shape and dtype, a scalar by its value."""
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return (tuple(v.shape), str(v.dtype))
    return v


def _copy(x):
    return x.clone() if hasattr(x, "clone") else np.array(x, copy=True)


def _put(x, saved):
    if hasattr(x, "copy_"):
        x.copy_(saved)
    else:
        x[...] = saved


class _Timer:
    """Seconds one run takes: wall time around it, from when the device finished earlier work
    until it finishes this run (CUDA events would leave out the launch overhead real calls pay)."""

    def __init__(self, values, on_gpu):
        self.stream = gpu.stream_of(list(values.values())) if on_gpu else None

    def _sync(self):
        if self.stream is not None:
            gpu.runtime().synchronize(self.stream)

    def __call__(self, run):
        self._sync()
        t = time.perf_counter()
        run()
        self._sync()
        return time.perf_counter() - t
