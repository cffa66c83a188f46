#!/usr/bin/env python3
"""attention_fwd in constexpr forms the ops do not take, each launched in a process of its own with
a time limit, on a machine with an NVIDIA GPU and the installed tessel (its compiler): per form the
result against float32 SDPA, then the time of a call (CUDA events, median of 10), or "hung" where
the limit passed. For probing schedules before they go into the tile tables (a form that hangs
or faults costs its process, not the probe). B1 H32 bf16, non-causal.

With --op, tessel.attention's forward itself with the form as its sm_90a table entry (causal
with --causal), L2 flushed before each call, against SDPA's cuDNN back end in
the same process. With --op --kl, tessel.attention_kl's forward (StreamKL, teacher and student
of head dim D, B1 H16: the bench's shape) with the form as attention_kl_fwd's entry, against the
KL of the same inputs through float64 PyTorch on the first 256 query rows. With --op --bwd, the
forward + backward with the form as the backward's entry (attention_bwd, against cuDNN's
forward + backward, dQ checked against float32 SDPA's; with --kl attention_kl_bwd, the student's
dQ checked against the table's backward).

    forms_probe.py [--n 4096] [--d 64] [--timeout 30] [--op [--causal] [--kl] [--bwd]] FORM...
    FORM: BLOCK_M,BLOCK_N,NUM_WARPS,NUM_STAGES[,WARP_SPECIALIZE[,PING_PONG]][,NAME=INT...]
          e.g. 256,64,16,2,1 or 256,64,16,3,1,0,BLOCKS_IN_TURN=1 (named values past the tiles:
          other constexprs of the kernel, 0/1 as booleans)
"""
import argparse
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..")]     # profile_ops; bench


def form_constants(form):
    """FORM's constexprs (the flags past the fourth value, and named 0/1 values, as booleans)."""
    from tessel.ops.tuning import tile_constants
    fields = form.split(",")
    values = [int(x) for x in fields if "=" not in x]
    named = dict(x.split("=", 1) for x in fields if "=" in x)
    constants = tile_constants(tuple(bool(v) if i >= 4 else v for i, v in enumerate(values)))
    for name, value in named.items():
        constants[name] = bool(int(value)) if value in ("0", "1") else int(value)
    return constants


def run_form(form, n, d):
    import torch
    import torch.nn.functional as F
    import tessel
    from tessel.ops import KERNELS_DIR
    from profile_ops import event_ms
    c = dict(form_constants(form), D=d, DTYPE="bf16", CAUSAL=False)
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, 32, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
               for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(1, 32, n, device="cuda", dtype=torch.float32)
    kernel = tessel.jit(f"{KERNELS_DIR}/attention.tsl", kernel="attention_fwd")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    args = [q, k, v, o, lse, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], 32, 32, n, n,
            1 / math.sqrt(d), sms]
    call = lambda: kernel[(math.ceil(n / c["BLOCK_M"]), 32)](*args, **c)
    call()
    torch.cuda.synchronize()
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
    err = (o.float() - ref).abs().max().item() / ref.abs().max().item()
    ms = event_ms(call, 10, warmup=3)
    print(f"{form}: {ms * 1e3:.1f} us, {4 * 32 * n * n * d / ms / 1e9:.0f} TFLOP/s, err {err:.1e}",
          flush=True)


def flushed_us(fn, flush, reps=15):
    """Median CUDA-event time of fn() in us, L2 flushed before each call (after two more)."""
    import statistics
    from bench.gpu import event_us
    times = []
    for _ in range(reps + 2):
        flush.zero_()
        times.append(event_us(fn))
    return statistics.median(times[2:])


def run_op(form, n, d, causal, bwd):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import tessel
    from tessel import ops
    ops.GPU_TUNED_SM90A[("attention_bwd" if bwd else "attention_fwd", d)] = form_constants(form)
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, do = (torch.randn(1, 32, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
                   for _ in range(4))
    inputs = [x.requires_grad_(bwd) for x in (q, k, v)]

    def call(attend):
        out = attend(*inputs)
        if not bwd:
            return out
        return torch.autograd.grad(out, inputs, do.to(out.dtype))[0]        # dQ
    ref = call(lambda *xs: F.scaled_dot_product_attention(*(x.float() for x in xs),
                                                          is_causal=causal))
    ours = call(lambda *xs: tessel.attention(*xs, causal=causal))
    err = (ours.float() - ref).abs().max().item() / ref.abs().max().item()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    ours = flushed_us(lambda: call(lambda *xs: tessel.attention(*xs, causal=causal)), flush)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        peer = flushed_us(lambda: call(lambda *xs: F.scaled_dot_product_attention(
            *xs, is_causal=causal)), flush)
    what = "forward + backward" if bwd else "forward"
    print(f"{form} N{n} D{d} causal={causal}: tessel.attention {what} {ours:.1f} us, SDPA cuDNN "
          f"{peer:.1f} us ({peer / ours:.2f}x), err {err:.1e}", flush=True)


def run_kl(form, n, d, causal, bwd):
    import torch
    import tessel
    from tessel import ops
    from tessel.ops import kl as kl_op
    g = torch.Generator(device="cuda").manual_seed(0)
    qt, kt, qs, ks = (torch.randn(1, 16, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
                      for _ in range(4))
    qs.requires_grad_(bwd)

    def call():
        kl = tessel.attention_kl(qt, kt, qs, ks, causal=causal, reduction="none")
        return torch.autograd.grad(kl.sum(), qs)[0] if bwd else kl
    if bwd:     # the table's backward first: the form's student gradient is checked against it
        ref = call().double()
        kl_op._PLANS._plans.clear()
    else:       # the KL of the first 256 query rows in float64
        rows = 256
        scores = lambda q, k: (q[:, :, :rows].double() @ k.double().transpose(-1, -2)) / \
            math.sqrt(d)
        s, t = scores(qt, kt), scores(qs, ks)
        if causal:
            hidden = torch.ones(rows, n, dtype=torch.bool, device="cuda").triu(1)
            s, t = s.masked_fill(hidden, float("-inf")), t.masked_fill(hidden, float("-inf"))
        p = torch.softmax(s, -1)
        ref = (p * (torch.log_softmax(s, -1) - torch.log_softmax(t, -1))).nan_to_num().sum(-1)
    # The forward's form under both its entries: the op takes the one for its grid.
    from tessel.ops.kl import LONG_FORWARD
    for entry in ("attention_kl_bwd",) if bwd else ("attention_kl_fwd", LONG_FORWARD):
        ops.GPU_TUNED_SM90A[(entry, d)] = form_constants(form)
    out = call().double()
    out = out if bwd else out[:, :, :rows]
    err = (out - ref).abs().max().item() / ref.abs().max().item()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    us = flushed_us(call, flush)
    what = "forward + backward" if bwd else "forward"
    flops = 2 * 16 * n * n * 2 * d * (2 if bwd else 1) / (2 if causal else 1)
    print(f"{form} N{n} D{d} causal={causal}: tessel.attention_kl {what} {us:.1f} us, "
          f"{flops / us / 1e6:.0f} TFLOP/s (the bench's count), err {err:.1e}"
          f"{' against the table' if bwd else ''}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--op", action="store_true")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--kl", action="store_true")
    p.add_argument("--bwd", action="store_true")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("forms", nargs="*")
    a = p.parse_args()
    if a.one:
        if a.op:
            return (run_kl if a.kl else run_op)(a.one, a.n, a.d, a.causal, a.bwd)
        return run_form(a.one, a.n, a.d)
    flags = ["--op"] * a.op + ["--causal"] * a.causal + ["--kl"] * a.kl + ["--bwd"] * a.bwd
    for form in a.forms:
        try:
            r = subprocess.run([sys.executable, __file__, "--n", str(a.n), "--d", str(a.d),
                                *flags, "--one", form], capture_output=True, text=True,
                               timeout=a.timeout)
            lines = [l for l in (r.stdout + r.stderr).splitlines() if "warn" not in l.lower()]
            print("\n".join(lines[-3:]) if r.returncode else lines[-1], flush=True)
        except subprocess.TimeoutExpired:
            print(f"{form}: hung (no result within {a.timeout:g} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
