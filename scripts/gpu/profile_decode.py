#!/usr/bin/env python3
"""Where decode's time goes, on a machine with an NVIDIA GPU (the runtime-only package built, the
ops' kernels precompiled; see scripts/gpu/profile.sh).

For each shape: tessel.lean_attention with both strategies (and stream-k-flags: stream-K with the
partial states handed over through global memory even where the op would take a thread-block
cluster; paged: stream-K over the same keys in a paged cache) and SDPA's cuDNN and flash backends,
each checked against a float32 reference, then per call the CUDA-event time (L2 flushed before
each call), the replay time of a CUDA graph holding one call (back to back, L2 warm), the summed
GPU time of the kernels and memsets the call launches and their names (torch's profiler). Under
`ncu` (--reps 1) the same script gives their hardware counters. --tiles times Tessel's decode
with other key blocks, warps and pipeline depths than tessel.ops.lean_tiles picks
(BLOCK_NxNUM_WARPSxNUM_STAGES each, without clusters and without LIVE_ROWS: partial states of
the whole query tile; the query tile stays the op's; `op` among them: the op's own choice), and
--clusters with thread-block clusters of other sizes and key blocks (CLUSTERxBLOCK_N each).

    profile_decode.py [--shapes 1x32x32x4096,...] [--impls stream-k,stream-k-flags,paged,...]
                      [--reps 20] [--tiles 128x4x2,64x4x3] [--clusters 16x64,8x128]
"""
import argparse
import importlib
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import tessel

lean = importlib.import_module("tessel.ops.lean")
PICK_TILES = lean.lean_tiles            # the op's own choice of tiles
PICK_CLUSTER = lean.lean_cluster        # and of thread-block clusters
paged_plans = importlib.import_module("tessel.ops.paged")._PLANS

SHAPES = "1x32x32x4096,1x64x8x4096,1x8x8x16384,1x32x32x131072"
BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def impl(name, q, k, v):
    if name in BACKENDS:
        def sdpa(kk=k, vv=v):
            with sdpa_kernel(BACKENDS[name]):
                return F.scaled_dot_product_attention(q, kk, vv,
                                                      enable_gqa=kk.shape[1] != q.shape[1])
        try:
            sdpa()
            return sdpa
        except RuntimeError:            # no GQA in this back end: K/V read once per query head
            g = q.shape[1] // k.shape[1]
            print(f"{name}: K/V expanded to {q.shape[1]} heads", flush=True)
            ke, ve = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
            return lambda: sdpa(ke, ve)
    if name == "paged":
        return paged(q, k, v)
    strategy = "stream-k" if name == "stream-k-flags" else name
    return lambda: tessel.lean_attention(q, k, v, strategy=strategy)


def paged(q, k, v, page_size=16):
    """Stream-K over the same keys in a paged cache (pages of `page_size` rows, vLLM's layout,
    in a random order), unchecked tables (no host read of them per call)."""
    B, HKV, Nk, D = k.shape
    pages = B * -(-Nk // page_size)
    g = torch.Generator(device="cuda").manual_seed(1)
    table = torch.randperm(pages, device="cuda", generator=g).to(torch.int32).view(B, -1)
    caches = []
    for x in (k, v):
        padded = F.pad(x, (0, 0, 0, pages // B * page_size - Nk))
        rows = padded.view(B, HKV, pages // B, page_size, D).permute(0, 2, 3, 1, 4)
        cache = torch.empty(pages, page_size, HKV, D, device=x.device, dtype=x.dtype)
        cache[table.flatten().long()] = rows.reshape(pages, page_size, HKV, D)
        caches.append(cache)
    lens = torch.full((B,), Nk, device="cuda", dtype=torch.int32)
    return lambda: tessel.lean_attention(q, *caches, seq_lens=lens, block_table=table,
                                         max_seq_len=Nk, check=False)


def use_tiles(tiles, cluster="auto"):
    """Has lean_attention run with key blocks, warps and stages `tiles` ("BNxWxS"), or with its
    own choice for None, and with thread-block clusters where it would take them ("auto"), never
    ("off") or of C CTAs and key blocks of BN rows ("CxBN"); the plans made otherwise are
    dropped."""
    lean.lean_tiles = PICK_TILES
    if cluster == "auto" and tiles is None:
        lean.lean_cluster = PICK_CLUSTER
    elif cluster in ("auto", "off"):
        lean.lean_cluster = lambda *args: None
    else:
        size, block_n = map(int, cluster.split("x"))
        lean.lean_cluster = lambda be, units, Nk, D, rows, constants: dict(
            CLUSTER=size, BLOCK_N=block_n, LIVE_ROWS=lean.lean_live_rows(rows))
    if tiles is not None:
        bn, warps, stages = map(int, tiles.split("x"))
        lean.lean_tiles = lambda block_m, gpu, rows=None: dict(BLOCK_M=block_m, BLOCK_N=bn,
                                                                NUM_WARPS=warps, NUM_STAGES=stages)
    lean._PLANS._plans.clear()
    paged_plans._plans.clear()


def graph_us(fn, reps):
    """GPU time of one replay of a CUDA graph holding fn(), replayed back to back."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()                            # the plan is made outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / reps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default=SHAPES,
                   help="BxHxHKVxNk[xNq], comma-separated (D128; Nq 1 unless given)")
    p.add_argument("--impls", default="stream-k,split-k,cudnn,flash")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--tiles", default=None,
                   help="BLOCK_NxNUM_WARPSxNUM_STAGES or op (the op's choice), comma-separated")
    p.add_argument("--clusters", default=None,
                   help="stream-k in clusters of CLUSTERxBLOCK_N, comma-separated")
    a = p.parse_args()
    tiles = [None if t == "op" else t for t in a.tiles.split(",")] if a.tiles else [None]
    variants = [(name, t, "off" if name == "stream-k-flags" else "auto")
                for name in a.impls.split(",")
                for t in ([None] if name in BACKENDS else tiles)]
    variants += [("stream-k", None, c) for c in (a.clusters.split(",") if a.clusters else [])]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for shape in a.shapes.split(","):
        B, H, HKV, Nk, Nq = (list(map(int, shape.split("x"))) + [1])[:5]
        g = torch.Generator(device="cuda").manual_seed(0)
        mk = lambda h, n: torch.randn(B, h, n, 128, device="cuda", dtype=torch.bfloat16,
                                      generator=g)
        q, k, v = mk(H, Nq), mk(HKV, Nk), mk(HKV, Nk)
        G = H // HKV
        ref = F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(G, 1),
                                             v.float().repeat_interleave(G, 1))
        for name, tiles, cluster in variants:
            use_tiles(tiles, cluster)
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
            label = name + (f" {tiles}" if tiles else "") + \
                (f" c{cluster}" if cluster not in ("auto", "off") else "")
            print(f"B{B} H{H}/{HKV} Nq{Nq} Nk{Nk} {label:16s} err {err:.1e} | event "
                  f"{statistics.median(times):6.1f} us | graph {graph_us(fn, a.reps):6.1f} us | "
                  f"{parts}", flush=True)


if __name__ == "__main__":
    main()
