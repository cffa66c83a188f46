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
import sys
import time

import numpy as np

from . import cache, compiler, errors, gpu


# What leaves a candidate out of a tuning instead of failing the call.
_REFUSALS = (errors.CompileError, errors.DeviceError, errors.LaunchError)


class Autotuner:
    """A JITKernel whose constexprs in `configs` are chosen per key by timing (tessel.autotune)."""

    # Seconds of launches of the first candidate before timing on a GPU.
    DEVICE_WARMUP_S = 0.2
    # Measured seconds of one candidate after which it is not measured again.
    LONG_S = 0.05

    def __init__(self, kernel, configs, key, warmup=1, rep=5, budget_s=60.0, restore=(),
                 cache_dir=None, timer=None, margin=0.0):
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
        self.warmup, self.rep, self.budget_s, self.margin = warmup, rep, budget_s, margin
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
        # releases the GIL), with the call's own constexpr values (a head dim, a dtype). One the
        # compiler or the device refuses (more shared memory than the device has, tiles the
        # kernel rejects), then or at its first launch (too many registers), is left out, as
        # Triton prunes candidates out of resources; if none is left, the first refusal is
        # raised.
        # (A pointer passed None specialises the kernel as a constexpr does.)
        fixed = {k: v for k, v in values.items() if k in self.constexprs or v is None}

        def prepare(config):
            try:
                self.kernel.specialize(**{**fixed, **config})
                return None
            except _REFUSALS as error:
                return error

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            refusals = list(pool.map(prepare, self.configs))
        self.refused = [(c, r) for c, r in zip(self.configs, refusals) if r is not None]
        configs = [c for c, refused in zip(self.configs, refusals) if refused is None]
        saved = {k: _copy(values[k]) for k in self.restore}
        clock = self._timer or _Timer(values, self.kernel._backend == "gpu")
        start = time.monotonic()
        best, best_time = None, None
        # The trials are not the call's launches: an op recording its launch plan
        # (tessel.ops) keeps only the chosen candidate's.
        recording = gpu.recorder()
        gpu.set_recorder(None)
        try:
            warmed = self.kernel._backend != "gpu"
            for config in configs:
                if best is not None and time.monotonic() - start > self.budget_s:
                    break
                run = lambda c=config: self._launch(grid, values, c, saved)
                try:
                    if not warmed:
                        # A GPU that sat idle (compiling) runs slow clocks at first: the
                        # first candidate timed would pay for that. Each launch waited for,
                        # so that the warm-up is DEVICE_WARMUP_S of device time, not a queue.
                        warm = time.monotonic()
                        while time.monotonic() - warm < self.DEVICE_WARMUP_S:
                            clock(run)
                        warmed = True
                    for _ in range(self.warmup):
                        run()
                    # The fastest of `rep` measurements; runs so long that their noise is
                    # small stop sooner (a first call of a large shape must not take minutes).
                    times = []
                    while len(times) < max(self.rep, 1) and sum(times) < self.LONG_S:
                        times.append(clock(run))
                    t = min(times)
                except _REFUSALS as error:
                    self.refused.append((config, error))
                    continue
                if config is self.configs[0]:
                    t *= 1.0 - self.margin      # the default keeps its place within the margin
                if best_time is None or t < best_time:
                    best, best_time = config, t
        finally:
            for k, v in saved.items():
                _put(values[k], v)
            gpu.set_recorder(recording)
        if best is None:
            raise self.refused[0][1]
        return best

    def _launch(self, grid, values, config, saved=None):
        for k, v in (saved or {}).items():
            _put(values[k], v)
        meta = {**values, **config}
        g = grid(meta) if callable(grid) else grid
        # Run-time arguments by position, constexprs by keyword: the kernel's fast launch path
        # (a launch by keywords is checked in full every time).
        positional = [meta[n] for n in self.names if n not in self.constexprs and n in meta]
        constants = {n: meta[n] for n in self.constexprs if n in meta}
        launch = self.kernel if g is None else self.kernel[g]
        launch(*positional, **constants)

    def _cache_path(self, call_key):
        text, filename, _ = self.kernel._load()
        device = "interpreter"
        if self.kernel._backend == "gpu":
            rt = gpu.runtime()
            device = f"{gpu.target()}/{rt.multiprocessor_count}sm"
        source = compiler.source_key(text, filename)
        digest = cache.key(source=hashlib.sha256(source.encode()).hexdigest(), kernel=self.name,
                           configs=[sorted((k, compiler._dsl_value(k, v)) for k, v in c.items())
                                    for c in self.configs],
                           key=repr(call_key), device=device,
                           stream_k=self.kernel._stream_k)
        return os.path.join(self.cache_dir or cache.cache_dir(), "autotune",
                            f"{self.name}-{digest}.json")


def autotune(kernel=None, *, configs, key=(), warmup=1, rep=5, budget_s=60.0, restore=(),
             cache_dir=None, margin=0.0):
    """An Autotuner over `kernel` (a tessel.jit kernel), or a decorator making one. configs: the
    candidates, each a dict of constexpr values; key: the names of the arguments whose values
    (for arrays, shape and dtype) select a tuning; warmup/rep: untimed and timed launches per
    candidate (the fastest timed one counts); budget_s: the tuning time after which no new
    candidate is timed; restore: arguments put back to their values before each trial; margin:
    how much faster (0.03: 3 %) a candidate must measure than the first one (a known good
    default) to replace it, so that timing noise does not."""
    def make(k):
        return Autotuner(k, configs, key, warmup, rep, budget_s, restore, cache_dir,
                         margin=margin)
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
    """Seconds one run takes. On the CPU, wall time. On a GPU, device time: runs shorter than
    BATCH_S are timed back to back in a batch that long, so that clock noise does not decide;
    with PyTorch arrays by CUDA events after the device is given a sleep long enough for the
    host to queue the whole batch, so that the host's launch overhead (the same for every
    candidate) does not hide what the candidates differ in; otherwise by wall time from when
    the device finished earlier work until it finishes the batch."""

    BATCH_S = 0.01

    def __init__(self, values, on_gpu):
        self.stream = gpu.stream_of(list(values.values())) if on_gpu else None
        torch = sys.modules.get("torch")
        self.torch = torch if on_gpu and torch is not None and any(
            isinstance(v, torch.Tensor) for v in values.values()) else None

    def _sync(self):
        if self.stream is not None:
            gpu.runtime().synchronize(self.stream)

    def _time(self, run, n):
        self._sync()
        t = time.perf_counter()
        for _ in range(n):
            run()
        self._sync()
        return (time.perf_counter() - t) / n

    def _device_time(self, run, n, host_s):
        torch = self.torch
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        torch.cuda._sleep(int(2 * host_s * n * 2e9))   # cycles, at most ~2 GHz
        start.record()
        for _ in range(n):
            run()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3 / n

    def __call__(self, run):
        one = self._time(run, 1)
        if self.stream is None:
            return one
        n = 1 if one >= self.BATCH_S else min(1000, max(2, int(self.BATCH_S / max(one, 1e-6))))
        return self._device_time(run, n, one) if self.torch else self._time(run, n)
