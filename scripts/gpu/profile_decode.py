#!/usr/bin/env python3
"""Where decode's time goes, on a machine with an NVIDIA GPU (the runtime-only package built, the
ops' kernels precompiled; see scripts/gpu/profile.sh).

For each shape: tessel.lean_attention with both strategies and SDPA's cuDNN and flash backends,
each checked against a float32 reference, then per call the CUDA-event time (L2 flushed before
each call), the summed GPU time of the kernels and memsets the call launches and their names
(torch's profiler). Under `ncu` (--reps 1) the same script gives their hardware counters.

    profile_decode.py [--shapes 1x32x32x4096,...] [--impls stream-k,split-k,cudnn,flash] [--reps 20]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import tessel

SHAPES = "1x32x32x4096,1x64x8x4096,1x8x8x16384,1x32x32x131072"
BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def impl(name, q, k, v):
    if name in BACKENDS:
        g = q.shape[1] // k.shape[1]
        kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)

        def sdpa():
            with sdpa_kernel(BACKENDS[name]):
                return F.scaled_dot_product_attention(q, kk, vv)
        return sdpa
    return lambda: tessel.lean_attention(q, k, v, strategy=name)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default=SHAPES, help="BxHxHKVxNk, comma-separated (D128, Nq 1)")
    p.add_argument("--impls", default="stream-k,split-k,cudnn,flash")
    p.add_argument("--reps", type=int, default=20)
    a = p.parse_args()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for shape in a.shapes.split(","):
        B, H, HKV, Nk = map(int, shape.split("x"))
        g = torch.Generator(device="cuda").manual_seed(0)
        mk = lambda h, n: torch.randn(B, h, n, 128, device="cuda", dtype=torch.bfloat16,
                                      generator=g)
        q, k, v = mk(H, 1), mk(HKV, Nk), mk(HKV, Nk)
        G = H // HKV
        ref = F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(G, 1),
                                             v.float().repeat_interleave(G, 1))
        for name in a.impls.split(","):
            fn = impl(name, q, k, v)
            err = (fn().float() - ref).abs().max().item() / ref.abs().max().item()
            torch.cuda.synchronize()
            times = []
            for _ in range(a.reps):
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                    enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e3)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(a.reps):
                    flush.zero_()
                    fn()
                torch.cuda.synchronize()
            events = {}
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA and "elementwise" not in \
                        e.name and "fill" not in e.name.lower():
                    events.setdefault(e.name, []).append(e.device_time)
            parts = ", ".join(f"{n[:48]} x{len(t) / a.reps:g} {statistics.median(t):.1f} us"
                              for n, t in events.items())
            print(f"B{B} H{H}/{HKV} Nk{Nk} {name:8s} err {err:.1e} | event {statistics.median(times):6.1f}"
                  f" us | {parts}", flush=True)


if __name__ == "__main__":
    main()
