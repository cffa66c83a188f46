#!/usr/bin/env python3
"""The ready ops with their fixed tile tables against the same ops tuned (TESSEL_TUNE_OPS=1,
tessel.ops.tuning), on a machine with an NVIDIA GPU and a tessel package with its compiler (the
installed wheel). Per shape: the op's time both ways (batches of back-to-back calls between CUDA
events, median of 7 after warm-up, inputs the same), the results compared, the tuning's one-off cost and the tiles it chose.

    op_tuning.py [--cases attention-d128-4k,...]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch

import tessel
from tessel.ops import common, flash, kl, mta, tuning

# name: (op, B, H, N, D, causal, backward)
CASES = {
    "attention-d128-1k": ("attention", 1, 16, 1024, 128, True, False),
    "attention-d128-4k": ("attention", 1, 32, 4096, 128, True, False),
    "attention-d64-2k": ("attention", 2, 16, 2048, 64, False, False),
    "attention-d64-8k": ("attention", 1, 32, 8192, 64, True, False),
    "attention-bwd-d128-2k": ("attention", 1, 16, 2048, 128, True, True),
    "attention-bwd-d64-4k": ("attention", 1, 32, 4096, 64, True, True),
    "attention-bwd-d128-8k": ("attention", 1, 32, 8192, 128, True, True),
    "kl-d128-2k": ("attention_kl", 1, 16, 2048, 128, True, False),
    "kl-d128-8k": ("attention_kl", 1, 16, 8192, 128, True, False),
    "mta-d64-2k": ("mta_attention", 1, 16, 2048, 64, True, False),
    "mta-d64-4k": ("mta_attention", 1, 16, 4096, 64, True, False),
}


def make(case):
    op, B, H, N, D, causal, backward = CASES[case]
    g = torch.Generator(device="cuda").manual_seed(0)
    x = lambda: torch.randn((B, H, N, D), device="cuda", generator=g,
                            dtype=torch.bfloat16).requires_grad_(backward)
    if op == "attention":
        q, k, v = x(), x(), x()
        do = torch.randn_like(q)

        def call():
            o = tessel.attention(q, k, v, causal=causal)
            if backward:
                q.grad = k.grad = v.grad = None
                o.backward(do)
                return torch.cat([q.grad, k.grad, v.grad])
            return o
    elif op == "attention_kl":
        tq, tk, sq, sk = x(), x(), x(), x()

        def call():
            return tessel.attention_kl(tq, tk, sq, sk, causal=causal, reduction="none")
    else:
        q, k, v = x(), x(), x()
        w = torch.randn((H, 1, 6, 11), device="cuda", generator=g) * 0.3

        def call():
            return tessel.mta_attention(q, k, v, w)
    return call


def timed(call, reps=7, batch=10):
    """Milliseconds per call: back-to-back calls between two CUDA events (what a loop of calls
    costs, host included), the median of `reps` batches."""
    for _ in range(3):
        call()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / batch)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    os.environ.setdefault("TESSEL_CACHE_DIR", tempfile.mkdtemp(prefix="tessel-tuning-"))
    print(f"{torch.cuda.get_device_name()}, tessel {tessel.__version__}, bf16; budget "
          f"{tuning.TUNE_BUDGET_S:.0f} s of timing per shape")
    print("| case | table | tuned | table / tuned | tuning (compile + time) | chosen | max diff |")
    print("|---|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        call = make(case)
        os.environ.pop("TESSEL_TUNE_OPS", None)
        fixed = call().float()
        t_fixed = timed(call)
        os.environ["TESSEL_TUNE_OPS"] = "1"
        common._tuners.clear()
        for module in (flash, kl, mta):     # the launch plans recorded with the table's tiles
            module._PLANS._plans.clear()
        start = time.perf_counter()
        tuned = call().float()
        torch.cuda.synchronize()
        t_tune = time.perf_counter() - start
        t_tuned = timed(call)
        os.environ.pop("TESSEL_TUNE_OPS", None)
        chosen = "; ".join(
            f"{name}: " + ",".join(str(v) for v in next(iter(t._best.values())).values())
            for (_, name, *_), t in common._tuners.items() if t is not None and t._best)
        diff = (tuned - fixed).abs().max().item()
        print(f"| {case} | {t_fixed:.3f} ms | {t_tuned:.3f} ms | {t_fixed / t_tuned:.2f}x | "
              f"{t_tune:.1f} s | {chosen} | {diff:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
