#!/usr/bin/env python3
"""Kernel times of tessel.attention (forward, or forward + backward with --backward) on a machine
with an NVIDIA GPU, B1 H32 D128 bf16 at N 4k/8k/16k, causal and not, each output checked against
float32 SDPA first; then the errors of ragged, odd-scale cases (B2 H4 N1000, scale -0.09, 0, 0.3).

To compare two compiler libraries on one machine, run it once per library, alternating:
    for lib in old new old new; do
      TESSEL_COMPILER_LIBRARY=/path/$lib.so python3 scripts/gpu/time_attention_kernels.py
    done
Times: the summed GPU time per call of each kernel the call launches (torch profiler).
"""
import argparse
import os

import torch
import torch.nn.functional as F

import tessel
from profile_ops import kernel_ms  # this directory is the script's first import path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backward", action="store_true")
    p.add_argument("--head-dim", type=int, default=128)
    a = p.parse_args()
    lib = os.path.basename(os.environ.get("TESSEL_COMPILER_LIBRARY", "default"))
    for n in (4096, 8192, 16384):
        for causal in (False, True):
            g = torch.Generator(device="cuda").manual_seed(n)
            q, k, v = (torch.randn(1, 32, n, a.head_dim, device="cuda", dtype=torch.bfloat16,
                                   generator=g, requires_grad=a.backward) for _ in range(3))
            if a.backward:
                do = torch.randn_like(q)
                fn = lambda: torch.autograd.grad(tessel.attention(q, k, v, causal=causal),
                                                 (q, k, v), do)
            else:
                fn = lambda: tessel.attention(q, k, v, causal=causal)
            out = tessel.attention(q, k, v, causal=causal).float()
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                 is_causal=causal)
            err = (out - ref).abs().max().item()
            fn()
            torch.cuda.synchronize()
            _, times = kernel_ms(fn, 10 if n < 16384 else 5)
            each = " ".join(f"{name[:18]}={ms * 1e3:.1f}" for name, ms in sorted(times.items())
                            if "attention" in name)
            print(f"{lib} D{a.head_dim} N{n} causal={causal} max err {err:.1e} | {each} us",
                  flush=True)
    for scale in (-0.09, 0.0, 0.3):
        for causal in (False, True):
            g = torch.Generator(device="cuda").manual_seed(7)
            q, k, v = (torch.randn(2, 4, 1000, a.head_dim, device="cuda", dtype=torch.bfloat16,
                                   generator=g) for _ in range(3))
            out = tessel.attention(q, k, v, causal=causal, scale=scale).float()
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                 is_causal=causal, scale=scale)
            print(f"{lib} B2 H4 N1000 scale {scale} causal={causal} max err "
                  f"{(out - ref).abs().max().item():.1e}", flush=True)


if __name__ == "__main__":
    main()
