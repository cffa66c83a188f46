#!/usr/bin/env python3
"""The prefill forward's cost split into a fixed part and a part per key, against SDPA's cuDNN back
end, on a machine with an NVIDIA GPU (the package installed; kernels compiled or precompiled).

The query length stays fixed and the key length varies (non-causal, so Nq may differ from Nk);
Tessel and cuDNN are called alternately, each call after an L2 flush and between CUDA events,
so that the GPU's drift over a run (clocks, temperature) falls on both alike. A line through the
medians from --fit-from keys on says what a call costs before its first key (the work around
the key loop: query blocks, epilogues, launch) and what each 1k keys add.

    fixed_cost_sweep.py [--nq 4096] [--heads 32] [--d 128] [--nk 512,1024,...] [--reps 15]
"""
import argparse
import os
import statistics
import sys

import torch

import tessel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.gpu import event_us, rel_err, sdpa_call  # noqa: E402


def timed_pair(fns, reps, flush):
    """Median µs of each of fns, called round-robin, each call after an L2 flush."""
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, out in zip(fns, times):
            flush.fill_(1)
            out.append(event_us(fn))
    return [statistics.median(t) for t in times]


def line(points):
    """Least-squares (intercept, slope) of (x, y) points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    slope = (sum((x - mx) * (y - my) for x, y in points) /
             sum((x - mx) ** 2 for x, _ in points))
    return my - slope * mx, slope


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nq", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--nk", default="512,1024,2048,4096,8192,16384")
    parser.add_argument("--fit-from", type=int, default=1024,
                        help="fit the line through the key lengths from this one on")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--dtype", choices=("bf16", "f16"), default="bf16")
    args = parser.parse_args()
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    lengths = [int(n) for n in args.nk.split(",")]
    if len([n for n in lengths if n >= args.fit_from]) < 2:
        parser.error("--fit-from leaves fewer than two key lengths to fit")

    torch.manual_seed(0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    q = torch.randn(1, args.heads, args.nq, args.d, device="cuda", dtype=dtype)
    print(f"{torch.cuda.get_device_name()}, tessel {tessel.__version__}, {args.dtype}, "
          f"B1 H{args.heads} Nq {args.nq} D{args.d}, non-causal; median of {args.reps} "
          "alternating calls")
    print("| Nk | Tessel | cuDNN | cuDNN / Tessel | error (max abs / max) |")
    print("|---|---|---|---|---|")
    rows = []
    for nk in lengths:
        k, v = (torch.randn(1, args.heads, nk, args.d, device="cuda", dtype=dtype)
                for _ in range(2))
        with torch.no_grad():
            ours = lambda: tessel.attention(q, k, v)  # noqa: E731
            peer = sdpa_call("cudnn", q, k, v, causal=False)
            error = rel_err(ours(), peer().float())
            if not error <= 2e-2:
                print(f"Nk {nk}: the outputs differ by {error:.2e}", file=sys.stderr)
                return 1
            for _ in range(3):
                ours(), peer()
            t_ours, t_peer = timed_pair((ours, peer), args.reps, flush)
        rows.append((nk, t_ours, t_peer))
        print(f"| {nk} | {t_ours:.1f} µs | {t_peer:.1f} µs | {t_peer / t_ours:.3f}x | "
              f"{error:.1e} |", flush=True)
    for name, column in (("Tessel", 1), ("cuDNN", 2)):
        fixed, per_key = line([(r[0], r[column]) for r in rows if r[0] >= args.fit_from])
        print(f"{name}: {fixed:.1f} µs + {per_key * 1e3:.2f} µs per 1k keys "
              f"(line through Nk >= {args.fit_from})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
