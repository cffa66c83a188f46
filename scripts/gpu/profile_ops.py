#!/usr/bin/env python3
"""Kernel times of the ready ops on a few shapes, for profiling on a machine with an NVIDIA GPU
(the runtime-only package built, its kernels precompiled; see scripts/gpu/profile.sh).

Each case runs its op on fresh random bf16 inputs, checks the result against PyTorch SDPA (MTA:
the MTA paper's PyTorch code in float32, bench/workloads/mta.py), then
reports the median of CUDA-event timings of the op alone and of the op's kernels alone (torch's
profiler), so host overhead shows as the difference. Under `ncu` the same script gives the
kernels' hardware counters (`--cases` picks a subset; `--reps 1` for one launch per case).

    profile_ops.py [--cases prefill,decode-mha,decode-gqa] [--reps 20] [--n N] [--causal] [--host]
                   [--flush] [--peer cudnn|flash]

--host also prints where the host time of a call goes (each layer of the launch path timed
alone). --flush writes 256 MiB before each call, as bench/run.py does, so that the op and its
kernels start from a cold L2 cache full of dirty lines (the flush's own kernel is left out).
--peer times PyTorch SDPA on one back end instead of Tessel's op (attention cases), for a side
by side breakdown of the kernels.
"""
import argparse
import functools
import os
import statistics
import sys

import torch
import torch.nn.functional as F

import tessel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.workloads.mta import WEIGHT_NOISE, torch_mta  # noqa: E402
from bench.workloads.paged import scattered_pages  # noqa: E402

CASES = {
    "prefill": dict(op="attention", B=1, H=32, HKV=32, Nq=4096, Nk=4096, D=128),
    "prefill-d64": dict(op="attention", B=1, H=32, HKV=32, Nq=4096, Nk=4096, D=64),
    "prefill-bwd": dict(op="attention", B=1, H=32, HKV=32, Nq=4096, Nk=4096, D=128,
                        backward=True),
    "prefill-bwd-causal": dict(op="attention", B=1, H=32, HKV=32, Nq=8192, Nk=8192, D=128,
                               backward=True, causal=True),
    "prefill-bwd-d64": dict(op="attention", B=1, H=32, HKV=32, Nq=4096, Nk=4096, D=64,
                            backward=True),
    "decode-mha": dict(op="lean_attention", B=1, H=32, HKV=32, Nq=1, Nk=32768, D=128),
    # the launch bench's short decode: host time matters as much as the kernel's
    "decode-short": dict(op="lean_attention", B=1, H=8, HKV=8, Nq=1, Nk=1024, D=128),
    "decode-gqa": dict(op="lean_attention", B=1, H=64, HKV=8, Nq=1, Nk=65536, D=128),
    # decode-gqa over a paged cache: pages of 16 rows in shuffled order
    "decode-paged": dict(op="lean_attention", B=1, H=64, HKV=8, Nq=1, Nk=65536, D=128,
                         page_size=16),
    # StreamKL as the bench runs it (teacher and student of one head dim, causal); the student's
    # q and k take the gradients. No reference here: its numerics are the tests'.
    "kl-bwd": dict(op="attention_kl", B=1, H=16, HKV=16, Nq=8192, Nk=8192, D=128, causal=True,
                   backward=True),
    # Multi-Token Attention as the bench runs it (weight: identity plus noise)
    "mta": dict(op="mta_attention", B=1, H=16, HKV=16, Nq=4096, Nk=4096, D=64, cq=6, ck=11),
    "mta-bwd": dict(op="mta_attention", B=1, H=16, HKV=16, Nq=4096, Nk=4096, D=64, cq=6, ck=11,
                    backward=True),
}


def inputs(c):
    g = torch.Generator(device="cuda").manual_seed(0)
    mk = lambda h, n: torch.randn(c["B"], h, n, c["D"], device="cuda", dtype=torch.bfloat16,
                                  generator=g, requires_grad=c.get("backward", False))
    return mk(c["H"], c["Nq"]), mk(c["HKV"], c["Nk"]), mk(c["HKV"], c["Nk"])


def with_gradients(c, attend, q, k, v):
    """`attend`'s output, or with c["backward"] its output and the gradients of q, k, v for a
    fixed upstream gradient, flattened into one tensor."""
    out = attend(q, k, v)
    if not c.get("backward"):
        return out
    do = torch.ones_like(out) / out.shape[-1]
    grads = torch.autograd.grad(out, (q, k, v), do)
    return torch.cat([t.flatten() for t in (out, *grads)])


def sdpa(c, q, k, v):
    """PyTorch SDPA of an attention case (K and V repeated for grouped heads)."""
    g = c["H"] // c["HKV"]
    if g > 1:
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=c.get("causal", False))


def run_peer(c, q, k, v, backend):
    """The attention case through PyTorch SDPA on `backend` (cudnn or flash) alone."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    which = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[backend]

    def attend(q, k, v):
        with sdpa_kernel(which):
            return sdpa(c, q, k, v)
    return with_gradients(c, attend, q, k, v)


def run_op(c, q, k, v):
    if "page_size" in c:
        k_cache, v_cache, tables = paged_cache(c, k, v)
        return tessel.lean_attention(q, k_cache, v_cache, **tables, check=False)
    if c["op"] == "mta_attention":
        w = mta_weight(c)
        return with_gradients(c, lambda q, k, v: tessel.mta_attention(q, k, v, w), q, k, v)
    if c["op"] == "attention_kl":
        qt, kt = _teacher(c["B"], c["H"], c["HKV"], c["Nq"], c["D"])
        kl = tessel.attention_kl(qt, kt, q, k, causal=c["causal"])
        return torch.cat([kl.flatten(), *(g.flatten() for g in torch.autograd.grad(kl, (q, k)))])
    if c["op"] == "attention":
        return with_gradients(c, lambda q, k, v: tessel.attention(
            q, k, v, causal=c.get("causal", False)), q, k, v)
    return with_gradients(c, getattr(tessel, c["op"]), q, k, v)


def mta_weight(c):
    """The conv2d kernel (H, 1, cq, ck) of an MTA case: the identity plus noise, as the bench's;
    made once, outside the timed calls."""
    return _mta_weight(c["H"], c["cq"], c["ck"])


@functools.cache
def _mta_weight(H, cq, ck):
    g = torch.Generator(device="cuda").manual_seed(1)
    w = torch.zeros(H, 1, cq, ck, device="cuda")
    w[:, 0, cq - 1, (ck - 1) // 2] = 1.0
    return w + WEIGHT_NOISE * torch.randn(w.shape, device="cuda", generator=g)


@functools.cache
def _teacher(B, H, HKV, N, D):
    """A StreamKL case's teacher q and k (no gradient), made once."""
    g = torch.Generator(device="cuda").manual_seed(2)
    mk = lambda h: torch.randn(B, h, N, D, device="cuda", dtype=torch.bfloat16, generator=g)
    return mk(H), mk(HKV)


_PAGED = {}


def paged_cache(c, k, v):
    """(k_cache, v_cache, {block_table, seq_lens}) holding k, v (B, HKV, Nk, D) in pages of
    c["page_size"] rows, the pages in shuffled order (as bench's paged workload); made once per
    case."""
    if id(c) not in _PAGED:
        B, _, Nk, _ = k.shape
        ps = c["page_size"]
        perm = torch.randperm(B * Nk // ps, device="cuda",
                              generator=torch.Generator(device="cuda").manual_seed(1))
        lens = torch.full((B,), Nk, dtype=torch.int32, device="cuda")
        _PAGED[id(c)] = (*(scattered_pages(x, ps, perm) for x in (k, v)),
                         {"block_table": perm.view(B, -1).to(torch.int32), "seq_lens": lens})
    return _PAGED[id(c)]


def reference(c, q, k, v):
    """The case's result in float32, or None where this script does not check it."""
    if c["op"] == "attention_kl":
        return None
    if c["op"] == "mta_attention":
        w = mta_weight(c)
        mta = lambda q, k, v: torch_mta(q.float(), k.float(), v.float(), w, c["D"] ** -0.5)
        return with_gradients(c, mta, q, k, v).float()
    if c["op"] == "lean_attention":
        return sdpa(c, q.float(), k.float(), v.float())
    return with_gradients(c, functools.partial(sdpa, c), q, k, v).float()


# bench/gpu.py's L2 flush: a write of this many bytes before each timed call (--flush).
FLUSH_BYTES = 256 << 20
_flush_buffer = None


def flush():
    global _flush_buffer
    if _flush_buffer is None:
        _flush_buffer = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    _flush_buffer.zero_()


def event_ms(fn, reps, warmup=0, before=lambda: None):
    """Median CUDA-event time of `fn` in ms over `reps` calls after `warmup` more, each call
    after `before()`."""
    times = []
    for _ in range(warmup):
        fn()
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        before()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def kernel_ms(fn, reps, before=None):
    """Mean over calls of the summed GPU time of the kernels one call launches (each call after
    `before()`, whose own kernels are left out)."""
    skip = set()
    if before is not None:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            before()
            torch.cuda.synchronize()
        skip = {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            if before is not None:
                before()
            fn()
        torch.cuda.synchronize()
    per_name = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.name not in skip:
            per_name[e.name] = per_name.get(e.name, 0.0) + e.device_time / 1000.0 / reps
    return sum(per_name.values()), per_name


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--host", action="store_true")
    p.add_argument("--n", type=int, help="sequence length of every case (queries and keys)")
    p.add_argument("--causal", action="store_true", help="every attention case causal")
    p.add_argument("--flush", action="store_true", help="a 256 MiB write before each timed call")
    p.add_argument("--peer", choices=("cudnn", "flash"),
                   help="time PyTorch SDPA on this back end instead (attention cases)")
    a = p.parse_args()
    for name in a.cases.split(","):
        c = dict(CASES[name])
        if a.n:
            c.update(Nq=a.n if c["Nq"] > 1 else 1, Nk=a.n)
        if a.causal and c["op"] in ("attention", "attention_kl"):
            c.update(causal=True)
        if a.peer and c["op"] != "attention":
            sys.exit(f"--peer: {name} is not an attention case")
        q, k, v = inputs(c)
        run = functools.partial(run_peer, backend=a.peer) if a.peer else run_op
        out = run(c, q, k, v)
        ref = reference(c, q, k, v)
        err = float("nan") if ref is None else (out.float() - ref).abs().max().item()
        fn = lambda: run(c, q, k, v)
        fn()
        torch.cuda.synchronize()
        before = flush if a.flush else None
        op = event_ms(fn, a.reps, before=before or (lambda: None))
        kern, per_name = kernel_ms(fn, a.reps, before)
        each = ", ".join(f"{n[:40]} {t * 1e3:.1f}" for n, t in sorted(per_name.items()))
        label = f"{name} ({a.peer})" if a.peer else name
        print(f"{label}: {c} max err {err:.2e} | op {op * 1e3:.1f} us, kernels {kern * 1e3:.1f} us"
              f" ({each})", flush=True)
        if a.host:
            host_breakdown(c, q, k, v, a.reps)
            plan_breakdown(c, q, k, v, a.reps)


def host_breakdown(c, q, k, v, reps):
    """Host time of one call (enqueue only, no synchronisation), and of its layers: the op,
    the kernel object's call, gpu.launch with its arguments converted, and the runtime's launch
    alone."""
    from tessel import gpu

    calls = []
    real = gpu.launch

    def spy(rt_kernel, name, params, values, grid):
        calls.append((rt_kernel, name, params, values, grid))
        real(rt_kernel, name, params, values, grid)

    gpu.launch = spy
    run_op(c, q, k, v)
    gpu.launch = real
    if not calls:           # a launch plan replayed it: plan_breakdown has the layers
        host_time("op", lambda: run_op(c, q, k, v), reps)
        return
    rt_kernel, name, params, values, grid = calls[-1]
    args = [gpu.device_pointer(name, p, x) if p.kind == "ptr"
            else gpu.scalar_argument(name, p.kind, x) for p, x in zip(params, values)]
    stream = gpu.stream_of(values)
    rt = gpu.runtime()
    layers = {
        "op": lambda: run_op(c, q, k, v),
        "gpu.launch": lambda: gpu.launch(rt_kernel, name, params, values, grid),
        "arguments": lambda: [gpu.device_pointer(name, p, x) if p.kind == "ptr"
                              else gpu.scalar_argument(name, p.kind, x)
                              for p, x in zip(params, values)],
        "stream_of": lambda: gpu.stream_of(values),
        "runtime.launch": lambda: rt.launch(rt_kernel, args, stream,
                                            None if grid is None else list(grid)),
    }
    for label, fn in layers.items():
        host_time(label, fn, reps)


def host_time(label, fn, reps):
    """Print the host time per call of `fn` (back-to-back calls, one synchronisation after)."""
    import time
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    elapsed = (time.perf_counter() - start) / reps
    torch.cuda.synchronize()
    print(f"  host {label:15s} {elapsed * 1e6:8.1f} us", flush=True)


def plan_breakdown(c, q, k, v, reps):
    """Where a repeated call's host time goes once its launch plan is kept (ops/plans.py): the
    key, each output allocation, each prepared launch, and the whole replay."""
    from tessel.ops import flash, lean, plans
    # The op's plans and the arguments of its key beside the tensors, as run_op calls it.
    kept, others = {"attention": (flash._PLANS, (c.get("causal", False), None, type(None))),
                    "lean_attention": (lean._PLANS, (False, None, type(None), "stream-k"))
                    }.get(c["op"], (None, ()))
    if kept is None or "page_size" in c or c.get("backward"):
        return
    plan = kept.get(plans.key((q, k, v), *others))
    if plan is None:
        return
    buffers = [q, k, v] + [allocate() for allocate in plan.allocations]
    host_time("plan key", lambda: plans.key((q, k, v), *others), reps)
    for i, allocate in enumerate(plan.allocations):
        host_time(f"allocation {i}", allocate, reps)
    for i, (launch, slots) in enumerate(plan.launches):
        args = [buffers[j] for j in slots]
        host_time(f"launch {i}", lambda: launch(*args), reps)
    host_time("plan replay", lambda: plan(q, k, v), reps)
    host_time("torch.empty(1)", lambda: torch.empty(1, device="cuda"), reps)

if __name__ == "__main__":
    main()
