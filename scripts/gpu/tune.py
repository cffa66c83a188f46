#!/usr/bin/env python3
"""Tile sizes, warps and pipeline depths of the kernels, measured.

On the machine with the compiler, precompile every configuration into a bundle directory:
    PYTHONPATH=build/python python3 scripts/gpu/tune.py --precompile .gpu-bundles/tune [--target sm_90a]
On the GPU machine (runtime-only package, TESSEL_BUNDLE_DIR pointing there), time them:
    python3 scripts/gpu/tune.py [--kernels attention_fwd,lean_attention,attention_bwd,...]
The prefill and decode kernels are launched directly, each configuration checked against
PyTorch SDPA on the same bf16 inputs; the kernels of backward passes, StreamKL and MTA are timed
through their ops (forward and backward, with the configuration put in tessel.ops.GPU_TUNED),
their numerics being the GPU tests' to check. Times are CUDA events, median of 20 after
warm-up; the output ends with the fastest configuration per shape.
"""
import argparse
import math
import os
import sys

from tessel.ops.tuning import CANDIDATES, tile_constants

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(ROOT, "kernels")

# The candidates are the package's (tessel.ops.tuning, which the ops tune through with
# TESSEL_TUNE_OPS=1): the kernels launched here directly, and those timed through their ops.
DIRECT = ("attention_fwd", "lean_attention")
CONFIGS = {k: v for k, v in CANDIDATES.items() if k[0] in DIRECT}
OP_CONFIGS = {k: v for k, v in CANDIDATES.items() if k[0] not in DIRECT}
# Shapes: (B, H, HKV, Nq, Nk) per kernel.
SHAPES = {
    "attention_fwd": [(1, 32, 32, 4096, 4096), (1, 32, 32, 16384, 16384)],
    "lean_attention": [(1, 32, 32, 1, 32768), (1, 64, 8, 1, 65536), (16, 32, 32, 1, 4096)],
}


def constants(name, d, cfg, dtype="bf16"):
    c = dict(D=d, DTYPE=dtype, **tile_constants(cfg))
    if name == "attention_fwd":
        c["CAUSAL"] = False
    return c


def kernel(name):
    import tessel
    tsl = "lean_attention.tsl" if name == "lean_attention" else "attention.tsl"
    return tessel.jit(os.path.join(KERNELS, tsl), kernel=name)


def tuned(name, d, cfg, target=None):
    """Puts the configuration in the table of tessel.ops that `target` (default: this machine's
    GPU) reads last: GPU_TUNED_SM90A on Hopper, else GPU_TUNED."""
    from tessel import gpu, ops
    table = ops.GPU_TUNED_SM90A if (target or gpu.target()) == "sm_90a" else ops.GPU_TUNED
    table[(name, d)] = tile_constants(cfg)


def precompile(out_dir, names, target):
    from tessel import ops
    from tessel.compiler import jit
    for (name, d), cfgs in CONFIGS.items():
        if name not in names:
            continue
        k = kernel(name)
        for cfg in cfgs:
            path = k.precompile(target=target, out_dir=out_dir, **constants(name, d, cfg))
            print(name, d, cfg, "->", os.path.basename(path), flush=True)
    for (name, d), cfgs in OP_CONFIGS.items():
        if name not in names:
            continue
        for cfg in cfgs:
            tuned(name, d, cfg, target)
            # Every kernel of the op's file at this head dim: the op's call also launches the
            # others (the forward, the Delta preprocess) with their own tiles.
            tsl_of_name = name.rsplit("_", 1)[0] + ".tsl"
            for tsl, kname, c, stream_k in ops.gpu_configurations((d,), ("bf16",), ((6, 11),),
                                                                  target):
                if tsl == tsl_of_name and ops.head_dim(c) == d:
                    jit(os.path.join(ops.KERNELS_DIR, tsl), kernel=kname,
                        stream_k=stream_k).precompile(target=target, out_dir=out_dir, **c)
            print(name, d, cfg, flush=True)


def op_call(name, d):
    """A forward and backward of the op that runs `name`, on fresh bf16 inputs."""
    import torch
    import tessel
    g = torch.Generator(device="cuda").manual_seed(0)
    if name.startswith("mta"):
        shape, causal = (1, 16, 2048, d), None
    elif name.startswith("attention_kl"):
        shape, causal = (1, 16, 4096, d), True
    else:
        shape, causal = (1, 16, 4096, d), False
    mk = lambda: torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=g,
                             requires_grad=True)
    if name.startswith("mta"):
        q, k, v = mk(), mk(), mk()
        w = torch.randn(shape[1], 1, 6, 11, device="cuda", generator=g) * 0.1  # conv2d kernel
        run = lambda: tessel.mta_attention(q, k, v, w)
    elif name.startswith("attention_kl"):
        qt, kt = mk().detach(), mk().detach()
        qs, ks = mk(), mk()
        run = lambda: tessel.attention_kl(qt, kt, qs, ks, causal=True)
    else:
        q, k, v = mk(), mk(), mk()
        run = lambda: tessel.attention(q, k, v, causal=causal)

    def call():
        out = run()
        out.sum().backward() if out.dim() == 0 else out.backward(torch.ones_like(out))
    return call


def run(names):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from profile_ops import event_ms
    print(torch.cuda.get_device_name(), flush=True)
    best = {}
    for (name, d), cfgs in CONFIGS.items():
        if name not in names:
            continue
        k = kernel(name)
        for shape in SHAPES[name]:
            B, H, HKV, Nq, Nk = shape
            g = torch.Generator(device="cuda").manual_seed(0)
            mk = lambda h, n: torch.randn(B, h, n, d, device="cuda", dtype=torch.bfloat16,
                                          generator=g)
            q, kk, v = mk(H, Nq), mk(HKV, Nk), mk(HKV, Nk)
            rep = H // HKV
            ref = F.scaled_dot_product_attention(q.float(), kk.repeat_interleave(rep, 1).float(),
                                                 v.repeat_interleave(rep, 1).float())
            strides = [*q.stride()[:3], *kk.stride()[:3], *v.stride()[:3]]
            for cfg in cfgs:
                o = torch.empty_like(q)
                lse = torch.empty(B, H, Nq, device="cuda", dtype=torch.float32)
                c = constants(name, d, cfg)
                if name == "lean_attention":
                    rows = H // HKV * Nq
                    if rows > cfg[0]:
                        continue
                    args = [q, kk, v, o, lse, *strides, B, H, HKV, Nq, Nk, 1 / math.sqrt(d)]
                    call = lambda: k(*args, **c)
                else:
                    args = [q, kk, v, o, lse, *strides, H, HKV, Nq, Nk, 1 / math.sqrt(d),
                            torch.cuda.get_device_properties(0).multi_processor_count]
                    grid = (math.ceil(Nq / cfg[0]), B * H)
                    call = lambda: k[grid](*args, **c)
                try:
                    call()
                    torch.cuda.synchronize()
                except Exception as e:            # a missing bundle, a launch error
                    print(f"{name} D{d} {shape} {cfg}: {type(e).__name__}: {e}", flush=True)
                    continue
                err = (o.float() - ref).abs().max().item() / ref.abs().max().item()
                ms = event_ms(call, 20, warmup=5)
                if name == "lean_attention":
                    rate = f"{2 * B * HKV * Nk * d * 2 / ms / 1e6:.0f} GB/s"
                else:
                    rate = f"{4 * B * H * Nq * Nk * d / ms / 1e9:.0f} TFLOP/s"
                ok = err < 2e-2
                print(f"{name} D{d} {shape} {cfg}: {ms * 1e3:.1f} us {rate} err {err:.1e}"
                      f"{'' if ok else ' FAIL'}", flush=True)
                key = (name, d, shape)
                if ok and (key not in best or ms < best[key][0]):
                    best[key] = (ms, cfg, rate)
    for (name, d), cfgs in OP_CONFIGS.items():
        if name not in names:
            continue
        for cfg in cfgs:
            tuned(name, d, cfg)
            call = op_call(name, d)
            try:
                call()
                torch.cuda.synchronize()
            except Exception as e:
                print(f"{name} D{d} {cfg}: {type(e).__name__}: {e}", flush=True)
                continue
            ms = event_ms(call, 12, warmup=3)
            print(f"{name} D{d} {cfg}: forward + backward {ms * 1e3:.1f} us", flush=True)
            key = (name, d, "op")
            if key not in best or ms < best[key][0]:
                best[key] = (ms, cfg, "")
    print("best:")
    for key, (ms, cfg, rate) in best.items():
        print(f"  {key}: {cfg} {ms * 1e3:.1f} us {rate}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--precompile", metavar="DIR")
    p.add_argument("--target", default="sm_90a", choices=("sm_80", "sm_90", "sm_90a"),
                   help="the bundles' target (sm_90a: an H100/H200; --precompile only)")
    p.add_argument("--kernels", default=",".join(sorted({n for n, _ in CONFIGS} |
                                                        {n for n, _ in OP_CONFIGS})))
    a = p.parse_args()
    if a.precompile:
        precompile(a.precompile, a.kernels.split(","), a.target)
    else:
        run(a.kernels.split(","))


if __name__ == "__main__":
    sys.exit(main())
