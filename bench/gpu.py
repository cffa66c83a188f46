"""The GPU half of the harness (needs PyTorch with CUDA): timing, L2 flush, ceilings, memory,
errors against float32 references, and running every implementation of one configuration.

Only the worker process imports this module; the pure parts (budget, reports, configuration
lists) live elsewhere so they are tested without torch.
"""

import gc
import math
import statistics
import time
import traceback
import warnings
import zlib

import torch
import torch.nn.functional as F

from . import budget
from .common import judge, short_error

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
# Larger than any H100/H200 L2 (50/60 MB): writing it evicts the inputs of the previous call.
FLUSH_BYTES = 256 << 20
# Upper bound on the temporaries of the chunked float32 references.
REF_CHUNK_BYTES = 1 << 30


class ContextLost(RuntimeError):
    """The CUDA context is unusable (a kernel faulted): this process cannot run anything more.
    Carries the results of the configuration so far."""

    def __init__(self, message, results):
        super().__init__(message)
        self.results = results


def is_oom(exc):
    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def release():
    gc.collect()
    torch.cuda.empty_cache()


def forget(exc):
    """Drops the locals of the frames a caught exception passed through: the tensors of a failed
    call must not outlive it, whoever still holds its traceback."""
    traceback.clear_frames(exc.__traceback__)


def alive():
    """Whether the CUDA context still runs work (an illegal access poisons it for good)."""
    try:
        return torch.ones(1, device="cuda").add_(1).item() == 2.0
    except Exception:  # any CUDA error here means the context is gone
        return False


def device_info():
    props = torch.cuda.get_device_properties(0)
    return {
        "device": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "memory_bytes": props.total_memory,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }


class Context:
    """What the measurements of one worker share: dtype, seed, the flush buffer, the clock, the
    Tessel module (or why it could not be imported) and the last measured time per
    implementation (for predictions)."""

    def __init__(self, dtype_name, seed, clock, max_reps, tessel, tessel_error):
        self.dtype_name = dtype_name
        self.dtype = DTYPES[dtype_name]
        self.seed = seed
        self.clock = clock
        self.max_reps = max_reps
        self.tessel = tessel
        self.tessel_error = tessel_error
        self.history = {}
        self.configs_left = 1
        self._flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
        self.flush_s = self._time_flush()
        self.baseline_bytes = torch.cuda.memory_allocated()

    def leaked_bytes(self):
        """Memory still allocated beyond this context's own, after a clean-up."""
        release()
        return torch.cuda.memory_allocated() - self.baseline_bytes

    def flush(self):
        self._flush.zero_()

    def _time_flush(self):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.flush()
        start.record()
        for _ in range(5):
            self.flush()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 5e3

    def generator(self, config_id):
        """A CUDA generator seeded by the run's seed and the configuration (not the run order)."""
        gen = torch.Generator(device="cuda")
        gen.manual_seed(self.seed * 1000003 + zlib.crc32(config_id.encode()))
        return gen

    def tessel_op(self, name, *args, **kwargs):
        """A call of tessel.<name>(*args, **kwargs), or the reason there is none (a string)."""
        if self.tessel is None:
            return f"import tessel failed: {self.tessel_error}"
        op = getattr(self.tessel, name, None)
        if op is None:
            return f"tessel has no {name}"
        return lambda: op(*args, **kwargs)


def randn(gen, shape, dtype, requires_grad=False):
    """Standard normal values (never all zero: zeros hide unwritten outputs)."""
    x = torch.randn(shape, generator=gen, device="cuda", dtype=dtype)
    return x.requires_grad_(requires_grad)


def rel_err(got, want):
    """max |got - want| / max |want|; inf where got is not finite or not of want's size."""
    if not isinstance(got, torch.Tensor) or got.numel() != want.numel():
        return math.inf
    got = got.detach().float().reshape(want.shape)
    if not torch.isfinite(got).all():
        return math.inf
    scale = want.abs().max().item()
    return (got - want).abs().max().item() / max(scale, 1e-30)


# ---------------------------------------------------------------------------------------------
# timing

def _event_pair():
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def event_us(fn):
    """µs of one call of fn() between CUDA events on the current stream (waits for it)."""
    start, end = _event_pair()
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3


def measure(ctx, fn, slot_s):
    """Times fn(): one estimating call, then as many repetitions as fit in slot_s (MIN_REPS to
    ctx.max_reps), each preceded by an L2 flush and bracketed by CUDA events on the current
    stream; the median is the result. Three back-to-back calls between device-wide
    synchronisations give the wall-clock time per call as a cross-check (it exceeds the event
    time when the call is host-bound or launches work outside the current stream)."""
    ctx.flush()
    estimate_s = event_us(fn) / 1e6
    reps = budget.plan_reps(slot_s - 4 * estimate_s, estimate_s + ctx.flush_s, ctx.max_reps)
    pairs = [_event_pair() for _ in range(reps)]
    for start, end in pairs:
        ctx.flush()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    times = sorted(start.elapsed_time(end) for start, end in pairs)
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    wall_ms = (time.perf_counter() - t0) / 3 * 1e3
    return {"ms": statistics.median(times), "min_ms": times[0], "max_ms": times[-1],
            "reps": reps, "wall_ms": wall_ms}


def peak_extra_bytes(fn):
    """Peak memory allocated by fn() beyond what was allocated before it (its outputs included)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak


def checked_call(call):
    """call() then a device-wide synchronisation (so an asynchronous fault is charged to this
    call). An exception leaves with the warnings the call raised as notes: PyTorch explains
    there why a back end refused the inputs."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = call()
            torch.cuda.synchronize()
            return out
        except Exception as exc:
            for w in caught:
                exc.add_note(" ".join(str(w.message).split()))
            raise


def run_impls(ctx, work, calls, check, tol, measure_memory=False):
    """Checks, then times, each implementation of one configuration.

    calls: {impl: a function running it once, or (function, note), or a string saying why it
    cannot run}.
    check(impl, output) -> relative error against the reference. Each implementation ends as
    ok / FAIL (see common.judge) / OOM / error / unsupported with its times; a fault that kills
    the CUDA context raises ContextLost after recording what is known."""
    results = {}
    slot = ctx.clock.config_slot(ctx.configs_left) / max(len(calls), 1)
    for impl, call in calls.items():
        if isinstance(call, str):
            results[impl] = {"status": "unsupported" if call.startswith("unsupported") else
                             "error", "note": call}
            continue
        call, note = call if isinstance(call, tuple) else (call, None)
        res = {}
        try:
            out = checked_call(call)
            res["err"] = check(impl, out)
            del out
            if measure_memory:
                res["mem_bytes"] = peak_extra_bytes(call)
            res.update(measure(ctx, call, slot))
            ctx.history[impl] = (res["ms"] / 1e3, work)
            res["status"] = "timed"
        except Exception as exc:  # recorded in the row; the run goes on
            res = {"status": "OOM" if is_oom(exc) else "error", "note": short_error(exc),
                   **({"err": res["err"]} if "err" in res else {})}
            forget(exc)
        if res["status"] != "timed":
            # outside the except block, whose traceback would keep the failed call's tensors
            release()
            if not alive():
                results[impl] = res
                raise ContextLost(f"{impl}: {res['note']}", judge(results, tol))
        if note:
            res["note"] = f"{note}; {res['note']}" if res.get("note") else note
        results[impl] = res
    judge(results, tol)
    return results


def predicted_calls(ctx, impls, work):
    return {impl: budget.predict_call_s(ctx.history.get(impl), work) for impl in impls}


# ---------------------------------------------------------------------------------------------
# physical ceilings

def _median_s(fn, reps):
    """Median seconds of fn() by CUDA events, after three warm-up calls."""
    for _ in range(3):
        fn()
    pairs = [_event_pair() for _ in range(reps)]
    for start, end in pairs:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs) / 1e3


def copy_gbps(nbytes=1 << 30):
    """Device-to-device copy bandwidth, counting bytes read plus bytes written."""
    src = torch.randn(nbytes // 2, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    return 2 * nbytes / _median_s(lambda: dst.copy_(src), 10) / 1e9


def matmul_tflops(m=8192):
    a, b = (torch.randn(m, m, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    return 2 * m ** 3 / _median_s(lambda: a @ b, 20) / 1e12


def ceilings():
    """The physical ceilings the results are read against, measured in this run."""
    result = {"copy_gbps": copy_gbps(), "copy_bytes": 1 << 30, "matmul_tflops": matmul_tflops(),
              "matmul_shape": [8192, 8192, 8192]}
    release()
    return result


# ---------------------------------------------------------------------------------------------
# peers and references shared by the attention workloads

def sdpa_call(backend, q, k, v, causal):
    """PyTorch SDPA restricted to one back end ('flash' or 'cudnn'; None: the back end PyTorch
    picks); GQA through enable_gqa."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    gqa = q.shape[1] != k.shape[1]
    if backend is None:
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    chosen = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]

    def call():
        with sdpa_kernel(chosen):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    return call


def sdpa_gqa_call(backend, q, k, v):
    """sdpa_call for decode (not causal) where K/V may have fewer heads than Q. A back end that
    rejects enable_gqa gets K/V expanded to every query head beforehand (outside the timing:
    it then reads H/HKV times more bytes, said in the note), or a reason why not."""
    call = sdpa_call(backend, q, k, v, False)
    if q.shape[1] == k.shape[1]:
        return call
    try:
        checked_call(call)
        return call
    except Exception as exc:  # the back end has no GQA for these inputs
        forget(exc)
        if is_oom(exc):
            return call
        reason = short_error(exc)
    release()
    g = q.shape[1] // k.shape[1]
    if 2 * g * k.numel() * k.element_size() > torch.cuda.mem_get_info()[0] - (2 << 30):
        return f"unsupported: no GQA ({reason}) and K/V expanded to every head do not fit"
    ke, ve = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    return (sdpa_call(backend, q, ke, ve, False),
            f"K/V expanded to {q.shape[1]} heads beforehand: no GQA ({reason})")


def attention_reference(q, k, v, causal, scale, rows=None):
    """softmax(Q Kᵀ·scale) V in float32 for the query rows `rows` (default all), GQA by head
    groups, in chunks of (batch, KV heads) bounded by REF_CHUNK_BYTES. Causal: row i sees keys
    j <= i."""
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    g = H // HKV
    rows = torch.arange(Nq, device=q.device) if rows is None else rows
    R = rows.numel()
    out = torch.empty(B, H, R, v.shape[3], device=q.device, dtype=torch.float32)
    per_kv_head = 4 * (2 * Nk * D + 3 * g * R * Nk)
    hc = max(1, min(HKV, REF_CHUNK_BYTES // per_kv_head))
    hidden = None
    if causal:
        hidden = torch.arange(Nk, device=q.device)[None, :] > rows[:, None]
    for b in range(B):
        for h0 in range(0, HKV, hc):
            h1 = min(HKV, h0 + hc)
            kk = k[b, h0:h1].float()
            vv = v[b, h0:h1].float()
            qq = q[b, h0 * g:h1 * g][:, rows].float().reshape(h1 - h0, g * R, D)
            s = (qq @ kk.transpose(-1, -2)).mul_(scale).view(h1 - h0, g, R, Nk)
            if hidden is not None:
                s.masked_fill_(hidden, -math.inf)
            p = torch.softmax(s, dim=-1).view(h1 - h0, g * R, Nk)
            out[b, h0 * g:h1 * g] = (p @ vv).view((h1 - h0) * g, R, -1)
            del s, p
    return out
