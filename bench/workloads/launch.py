"""Launch: the host cost of one call. Per-call wall-clock time of back-to-back eager calls (CALLS
calls, one synchronize at the end, median of ROUNDS rounds) of an empty Tessel kernel through
kernel[grid](...) and of the ready ops on tiny inputs, against, in the same run: torch.add on
one-element tensors, Triton's launch of an empty kernel, the bare driver launch of Tessel's empty
kernel (cuLaunchKernel through ctypes: the floor from Python), PyTorch SDPA on the op's inputs;
and the GPU time of one replay of a CUDA graph holding the Tessel call (and, for the ops, one
holding SDPA's cuDNN back end). The decode rows are the shapes of the decode-latency targets
(B1 H8 Nk 1k and 16k, B1 H32 Nk 8k, B1 H32/HKV4 Nk 128k; SDPA with enable_gqa, K/V repeated per
query head only for a back end that refuses it, as the row's note says).

On such inputs the GPU finishes each kernel before the host issues the next, so the eager time is
the host's: argument handling, output allocation, the launch itself.
"""

import json
import os
import time

NAME = "launch"
TITLE = "Launch: per-call time of tiny calls"
UNIT = None                      # times only: no rate
CEILING = None
IMPLS = (("tessel", "Tessel eager"), ("tessel-graph", "Tessel graph replay"),
         ("sdpa", "SDPA eager"), ("sdpa-graph", "SDPA cuDNN graph replay"),
         ("torch-add", "torch.add eager"), ("triton", "Triton empty kernel eager"),
         ("driver", "cuLaunchKernel (ctypes)"))
RATIOS = (("tessel", "torch-add", "vs torch.add"), ("tessel", "triton", "vs Triton"),
          ("tessel", "sdpa", "vs SDPA"), ("tessel-graph", "sdpa-graph", "graph vs cuDNN graph"))
COLUMNS = (("call", "Tessel call"), ("shape", "shape"))

CALLS = 300
ROUNDS = 5
WARMUP = 20
EMPTY_KERNEL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "launch_empty.tsl")


def configs(quick=False):
    rows = [
        {"id": "empty-kernel", "call": "kernel[(1,)](x): an empty kernel", "shape": "—"},
        {"id": "attention-B1-H1-N64-D64", "call": "tessel.attention", "op": "attention",
         "shape": "B1 H1 N64 D64", "q": (1, 1, 64, 64), "kv": (1, 1, 64, 64)},
    ] + [decode_row(*shape) for shape in DECODE_SHAPES]
    return [rows[0], rows[2]] if quick else rows


# (B, H, HKV, Nk) of the decode rows.
DECODE_SHAPES = ((1, 8, 8, 1024), (1, 8, 8, 16384), (1, 32, 32, 8192), (1, 32, 4, 131072))


def decode_row(B, H, HKV, Nk):
    kv = f"/{HKV}" if HKV != H else ""
    return {"id": f"decode-B{B}-H{H}-KV{HKV}-N{Nk}-D128", "call": "tessel.lean_attention",
            "op": "lean_attention", "shape": f"B{B} H{H}{kv} Nq1 Nk{Nk} D128",
            "q": (B, H, 1, 128), "kv": (B, HKV, Nk, 128)}


def work(cfg):
    """One call (the rows keep their order: every row costs the same)."""
    return 1


def per_call_ms(fn):
    """(median, min, max) milliseconds per call of CALLS back-to-back calls, over ROUNDS rounds."""
    import torch
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / CALLS * 1e3)
    times.sort()
    return times[len(times) // 2], times[0], times[-1]


def graph_replay_ms(fn):
    """GPU milliseconds per replay of a CUDA graph holding one fn() (CUDA events around CALLS
    back-to-back replays), after warm-up calls on a side stream as PyTorch asks."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    start.record()
    for _ in range(CALLS):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / CALLS


def triton_call(x):
    """Triton's launch of an empty kernel on x, or why there is none."""
    try:
        import triton
    except ImportError:
        return "unsupported: Triton is not installed"

    @triton.jit
    def empty(x_ptr):
        pass

    return lambda: empty[(1,)](x)


def driver_call(kernel, x):
    """The bare driver launch of Tessel's empty kernel (its PTX loaded by cuModuleLoadData), from
    Python through ctypes on the current stream."""
    import ctypes

    import torch
    cuda = ctypes.CDLL("libcuda.so.1")
    info = json.loads(kernel.bundle)
    entry = info["kernels"][0]["ptx_entry"].encode()
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    for name, result in (
            ("cuModuleLoadData", cuda.cuModuleLoadData(ctypes.byref(module),
                                                       info["ptx"].encode())),
            ("cuModuleGetFunction", cuda.cuModuleGetFunction(ctypes.byref(function), module,
                                                             entry))):
        if result:
            return f"error: {name} returned {result}"
    address = ctypes.c_uint64(x.data_ptr())
    params = (ctypes.c_void_p * 1)(ctypes.addressof(address))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    launch = cuda.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    threads = 32 * kernel.num_warps

    def call():
        return launch(function, 1, 1, 1, threads, 1, 1, 0, stream, params, None)
    result = call()
    if result:
        return f"error: cuLaunchKernel returned {result}"
    call.storage = (address, params, module)    # alive as long as the call
    return call


def tessel_calls(ctx, cfg, inputs):
    """{impl: the Tessel call} for the row, or the reason there is none."""
    if ctx.tessel is None:
        why = f"import tessel failed: {ctx.tessel_error}"
        return {"tessel": why, "tessel-graph": why}
    if "op" not in cfg:
        kernel = ctx.tessel.compile(EMPTY_KERNEL)
        x = inputs["x"]
        call = lambda: kernel[(1,)](x)  # noqa: E731
        return {"tessel": call, "tessel-graph": call, "kernel": kernel}
    call = ctx.tessel_op(cfg["op"], *inputs["qkv"])
    return {"tessel": call, "tessel-graph": call}


def run(ctx, cfg):
    import torch

    from .. import gpu
    from ..common import judge, short_error, tolerance

    gen = ctx.generator(cfg["id"])
    x = torch.zeros(1, device="cuda")
    a, b = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    inputs, ref = {"x": x}, None
    if "op" in cfg:
        q = gpu.randn(gen, cfg["q"], ctx.dtype)
        k, v = (gpu.randn(gen, cfg["kv"], ctx.dtype) for _ in range(2))
        inputs["qkv"] = (q, k, v)
        ref = gpu.attention_reference(q, k, v, False, cfg["q"][3] ** -0.5)
    calls = tessel_calls(ctx, cfg, inputs)
    kernel = calls.pop("kernel", None)
    if "op" in cfg:
        q, k, v = inputs["qkv"]
        # GQA through enable_gqa (K/V expanded to every query head only where a back end
        # refuses it, said in the row's note)
        calls["sdpa"] = gpu.sdpa_gqa_call(None, q, k, v)
        calls["sdpa-graph"] = gpu.sdpa_gqa_call("cudnn", q, k, v)
    else:
        calls["sdpa"] = calls["sdpa-graph"] = \
            "unsupported: no SDPA counterpart of an empty kernel"
    calls["torch-add"] = lambda: torch.add(a, b)
    calls["triton"] = triton_call(x)
    if kernel is not None:
        calls["driver"] = driver_call(kernel, x)
    elif "op" in cfg:
        calls["driver"] = "unsupported: measured on the empty-kernel row"
    else:
        calls["driver"] = calls["tessel"]           # why there is no Tessel empty kernel
    results = {}
    for impl, call in calls.items():
        if isinstance(call, str):
            results[impl] = {"status": "unsupported" if call.startswith("unsupported") else
                             "error", "note": call}
            continue
        call, note = call if isinstance(call, tuple) else (call, None)
        res = {}
        try:
            out = gpu.checked_call(call)
            if ref is not None and impl in ("tessel", "tessel-graph", "sdpa", "sdpa-graph"):
                res["err"] = gpu.rel_err(out, ref)
            del out
            if impl.endswith("-graph"):
                res["ms"] = graph_replay_ms(call)
            else:
                res["ms"], res["min_ms"], res["max_ms"] = per_call_ms(call)
                res["reps"] = ROUNDS
            res["status"] = "timed" if "err" in res else "ok"
        except Exception as exc:  # recorded in the row; the run goes on
            res = {"status": "error", "note": short_error(exc)}
            gpu.forget(exc)
        if note:
            res["note"] = f"{note}; {res['note']}" if res.get("note") else note
        results[impl] = res
    judge(results, tolerance(ctx.dtype_name))
    return {"results": results, "note": ""}
