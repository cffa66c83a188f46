#!/usr/bin/env python3
"""Where the prefill forward's time goes inside one CTA, on a machine with an NVIDIA GPU (the
package installed with its compiler): a copy of kernels/attention.tsl whose attention_fwd reads the
multiprocessor's clock (the DSL's clock()) at the start of each query block, after its key loops
and after its store of O, and writes the readings through an extra pointer; with --iterations N
also at the top of the unmasked key loop's first N - 1 iterations and its last one.

Per query block it reports, in cycles of the SM clock (median over the blocks and calls):
  start -> loops   the query block's load and every key block (what grows with Nk)
  loops -> stored  the normalisation and store of O (the epilogue)
  stored -> start  from one block's store to the next block's start in the same CTA
and with --iterations the steps from the start to the first iterations, the mean iteration
between them and the last, and from the last to the loops' end. With the tiles of blocks in turn
(the tuned D128 forward) each CTA takes several query blocks in a known order, so the gap between
them is measured; a CTA's span against the call's CUDA-event time gives the clock rate used to
print microseconds. The traced kernel's own time is printed beside the untraced op's: the
readings are only worth what the two agree.

    trace_forward_phases.py [--nq 4096] [--nk 1024,4096] [--heads 32] [--d 128] [--reps 5]
                            [--iterations 0]
"""
import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile

import torch

import tessel
from tessel.ops.common import gpu_tiles
from tessel.ops.flash import _query_programs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.gpu import event_us  # noqa: E402


def traced_source(text, iterations):
    """attention.tsl with the trace pointer and the clock readings added to attention_fwd: per
    query block 3 + iterations slots (start, loops, stored, then the iterations')."""
    slots = 3 + iterations
    edits = [
        # The pointer, after lse.
        (r"(def attention_fwd\(.*?lse: ptr\[f32\],)", r"\1 trace: ptr[i64],"),
        (r"(\n    def attend\(pid_m\):\n)",
         rf"\1        slot = (bh.to(i64) * n_blocks + pid_m) * {slots}\n"
         r"        t_start = clock()\n"),
        (r"(\n        out, row_lse = softmax_finalize\(st\)\n)",
         r"\n        t_loops = clock()\1"),
        (r"(\n        store\(o_base \+ offs_m\[:, None\] \* D \+ offs_d\[None, :\], out, "
         r"mask=m_ok\[:, None\]\)\n)",
         r"\1        t_stored = clock()\n"
         r"        store(trace + slot, t_start)\n"
         r"        store(trace + slot + 1, t_loops)\n"
         r"        store(trace + slot + 2, t_stored)\n"),
    ]
    if iterations:
        # The last slot keeps the last iteration's reading.
        edits.append((r"(\n        for n0 in range\(0, n_full, BLOCK_N\):\n)",
                      rf"\1            store(trace + slot + 3 + minimum(n0 // BLOCK_N, "
                      rf"{iterations - 1}), clock())\n"))
    for pattern, replacement in edits:
        text, count = re.subn(pattern, replacement, text, count=1, flags=re.S)
        if count != 1:
            raise SystemExit(f"trace_forward_phases.py: attention.tsl no longer has {pattern!r}")
    return text


def block_order(n_blocks, programs):
    """The query blocks each program takes, in order (attention_fwd's BLOCKS_IN_TURN)."""
    full_rounds = n_blocks // programs
    order = []
    for x in range(programs):
        blocks = []
        for r in range((n_blocks - x + programs - 1) // programs):
            j = programs - 1 - x if r % 2 == 1 and r < full_rounds else x
            blocks.append(n_blocks - 1 - (r * programs + j))
        order.append(blocks)
    return order


class _Backend:
    """What flash._query_programs asks of a backend: a GPU and its multiprocessors."""
    gpu = True

    def __init__(self, sms):
        self.sms = sms

    def multiprocessor_count(self):
        return self.sms


def steps(reading, iterations, key_blocks):
    """{step: cycles} of one block's readings, in the order they are reported (the gap to the
    next block aside: it needs that block's readings)."""
    start, loops, stored, its = reading[0], reading[1], reading[2], reading[3:]
    out = {"start -> loops": loops - start, "loops -> stored": stored - loops}
    if iterations:
        firsts = min(iterations - 1, key_blocks)
        out["start -> it 0"] = its[0] - start
        for i in range(1, firsts):
            out[f"it {i - 1} -> it {i}"] = its[i] - its[i - 1]
        last = its[firsts - 1]
        if key_blocks > firsts:
            last = its[iterations - 1]
            out[f"mean it {firsts - 1} -> last"] = (last - its[firsts - 1]) / (key_blocks - firsts)
        out["last it -> loops"] = loops - last
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nq", type=int, default=4096)
    parser.add_argument("--nk", default="1024,4096")
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=0,
                        help="also read the clock in this many of the key loop's iterations "
                             "(the first ones and the last; at least 2)")
    args = parser.parse_args()
    if args.iterations == 1:
        parser.error("--iterations: 0, or at least 2")

    tiles = gpu_tiles("attention_fwd", args.d)
    work = tempfile.mkdtemp()
    for name in os.listdir(tessel.KERNELS_DIR):
        shutil.copy(os.path.join(tessel.KERNELS_DIR, name), work)
    path = os.path.join(work, "attention.tsl")
    with open(path) as f:
        source = traced_source(f.read(), args.iterations)
    with open(path, "w") as f:
        f.write(source)
    kernel = tessel.jit(path, kernel="attention_fwd")
    constants = dict(D=args.d, CAUSAL=False, DTYPE=tessel.bf16, **tiles)
    slots = 3 + args.iterations

    torch.manual_seed(0)
    B, H, Nq, D = 1, args.heads, args.nq, args.d
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    n_blocks = tessel.cdiv(Nq, tiles["BLOCK_M"])
    programs = _query_programs(_Backend(sms), n_blocks, B * H, tiles)
    q = torch.randn(B, H, Nq, D, device="cuda", dtype=torch.bfloat16)
    print(f"{torch.cuda.get_device_name()}, tessel {tessel.__version__}, bf16 B{B} H{H} Nq {Nq} "
          f"D{D} non-causal, tiles {tiles}, {programs} programs per head "
          f"({n_blocks} query blocks each); cycles (µs), medians over blocks and calls")
    for nk in (int(n) for n in args.nk.split(",")):
        key_blocks = nk // tiles["BLOCK_N"]
        k, v = (torch.randn(B, H, nk, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        o = torch.empty_like(q)
        trace = torch.zeros(B * H * n_blocks * slots, dtype=torch.int64, device="cuda")

        def traced():
            kernel[(programs, B * H)](q, k, v, o, None, trace, *q.stride()[:3], *k.stride()[:3],
                                      *v.stride()[:3], H, H, Nq, nk, D ** -0.5, sms, **constants)

        with torch.no_grad():
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            traced()
            torch.cuda.synchronize()
            error = (o.float() - ref.float()).abs().max().item()
            if not error <= 2e-2:
                print(f"Nk {nk}: the traced kernel's output differs by {error:.2e}",
                      file=sys.stderr)
                return 1
            gap = "stored -> next start"
            samples = {"start -> loops": [], "loops -> stored": [], gap: []}
            rates, times = [], {"traced": [], "op": []}
            for _ in range(args.reps):
                for label, fn in (("traced", traced),
                                  ("op", lambda: tessel.attention(q, k, v))):
                    times[label].append(event_us(fn))
                t = trace.view(B * H, n_blocks, slots).cpu().tolist()
                spans = []
                for bh in range(B * H):
                    for blocks in block_order(n_blocks, programs):
                        readings = [t[bh][m] for m in blocks]
                        for r in readings:
                            for name, cycles in steps(r, args.iterations, key_blocks).items():
                                samples.setdefault(name, []).append(cycles)
                        for a, b in zip(readings, readings[1:]):
                            samples[gap].append(b[0] - a[2])
                        spans.append(readings[-1][2] - readings[0][0])
                rates.append(statistics.median(spans) / times["traced"][-1])
        rate = statistics.median(rates)
        print(f"Nk {nk}: traced kernel {statistics.median(times['traced']):.1f} µs, untraced op "
              f"{statistics.median(times['op']):.1f} µs, {rate:.0f} cycles per µs")
        for name, values in samples.items():
            if values:
                m = statistics.median(values)
                print(f"  {name:>22}: {m:9.0f} cycles ({m / rate:6.2f} µs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
