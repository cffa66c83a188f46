#!/usr/bin/env python3
"""Per-call wall time of forward + backward through autograd, calls back to back: what a
training step sees of tessel.attention, tessel.attention_kl and tessel.mta_attention (bf16,
causal) where the host, not the GPU, sets the pace (short sequences), and where the GPU does.
One process per run; alternate runs of the variants being compared.

    autograd_host.py [--n 1024,4096] [--calls 100] [--repeats 5]

Prints, per op and N, the median over repeats of (wall time of `calls` back-to-back calls, one
synchronisation at the end) / calls, with the spread, and the time of one call on its own
(CUDA events around it, synchronised after; median of the repeats)."""
import argparse
import statistics
import time

import torch

import tessel


def attention_step(n):
    g = torch.Generator(device="cuda").manual_seed(0)
    mk = lambda h, d: torch.randn(1, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    q, k, v = (mk(32, 128).requires_grad_() for _ in range(3))
    do = mk(32, 128)

    def step():
        o = tessel.attention(q, k, v, causal=True)
        torch.autograd.backward(o, do)
    return step


def kl_step(n):
    g = torch.Generator(device="cuda").manual_seed(0)
    mk = lambda h, d: torch.randn(1, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    q_t, k_t = mk(16, 128), mk(16, 128)
    q_s, k_s = mk(16, 128).requires_grad_(), mk(16, 128).requires_grad_()

    def step():
        tessel.attention_kl(q_t, k_t, q_s, k_s, causal=True).backward()
    return step


def mta_step(n):
    g = torch.Generator(device="cuda").manual_seed(0)
    mk = lambda h, d: torch.randn(1, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    q, k, v = (mk(16, 64).requires_grad_() for _ in range(3))
    w = torch.randn(16, 1, 6, 11, device="cuda", generator=g) * 0.3
    w[:, 0, 5, 5] += 1.0
    w.requires_grad_()
    do = mk(16, 64)

    def step():
        torch.autograd.backward(tessel.mta_attention(q, k, v, w), do)
    return step


def measure(step, calls, repeats):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    walls, gpus = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            step()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - start) / calls)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        b.synchronize()
        gpus.append(a.elapsed_time(b) / 1e3)
    return statistics.median(walls), min(walls), max(walls), statistics.median(gpus)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", default="1024,4096")
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    for name, make in (("attention", attention_step), ("attention_kl", kl_step),
                       ("mta_attention", mta_step)):
        for n in (int(x) for x in a.n.split(",")):
            wall, lo, hi, gpu = measure(make(n), a.calls, a.repeats)
            print(f"{name} N {n} causal fwd+bwd: per call {wall * 1e6:8.1f} us "
                  f"({lo * 1e6:.1f}-{hi * 1e6:.1f}), one synchronised call {gpu * 1e6:8.1f} us",
                  flush=True)


if __name__ == "__main__":
    main()
