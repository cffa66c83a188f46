#!/usr/bin/env python3
"""Context parallelism on GPUs: tessel.distributed against one GPU, numerics then time.  Started
by scripts/gpu/distributed.sh under torchrun, one process per rank:

    python3 -m torch.distributed.run --standalone --nproc_per_node=N scripts/gpu/distributed.py

Each process drives one GPU (CUDA_VISIBLE_DEVICES is set from LOCAL_RANK below, before CUDA
starts; tessel launches on its process's device 0).  With one process per GPU the ranks talk
through NCCL; with more processes than GPUs (TESSEL_GPUS, default: as many as processes) they
share them through gloo, for correctness only (--check-only).

Numerics (rank 0 prints, every rank checks its own copy): the keys of each case cut into one
uneven chunk per rank; the merged result against the one-GPU op on all the keys (equal up to the
order of the additions: within 4u + 2u·max|O|, u = 2^-11 f16, 2^-8 bf16; KL rows within
1e-5 + 4e-6·max|LSE|) and against a float64 reference on a few heads.
Times: the median over --reps of the slowest rank's wall time per call (a barrier, then
synchronise, call, synchronise), against the one-GPU op run by rank 0 alone: decode B1 H32 D128
f16 over --decode-keys keys (default 1M; K/V 16 GiB on one GPU), and the StreamKL forward B1 H16
D128 f16 over N = --kl-n queries and keys (non-causal), its keys sharded.  Exit status 1 if a
check fails.
"""

import argparse
import datetime
import math
import os
import statistics
import sys
import time

_gpus = int(os.environ.get("TESSEL_GPUS") or os.environ.get("LOCAL_WORLD_SIZE", "1"))
_visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
if _visible == [""]:
    _visible = [str(i) for i in range(_gpus)]
os.environ["CUDA_VISIBLE_DEVICES"] = _visible[int(os.environ.get("LOCAL_RANK", "0")) % _gpus]

import torch                      # noqa: E402
import torch.distributed as dist  # noqa: E402

import tessel                     # noqa: E402
import tessel.distributed as td   # noqa: E402

U = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}
# Numerics cases: B, H, HKV, Nq, Nk, D, causal, dtype.
DECODE_CHECKS = {
    "decode B1 H32 D128 f16": (1, 32, 32, 1, 65536 + 77, 128, False, torch.float16),
    "decode GQA 32/8 Nq4 causal bf16": (1, 32, 8, 4, 32768 + 5, 128, True, torch.bfloat16),
}
KL_CHECK = (1, 16, 4096 + 3, 8192 + 11, 128)   # B, H, Nq, Nk, D (f16, non-causal)


def cuts(n, world):
    """Uneven chunks: rank r holds keys [cuts[r], cuts[r + 1]) (the last one the smallest)."""
    weights = [world + 1 - r for r in range(world)]
    bounds = [0]
    for w in weights:
        bounds.append(bounds[-1] + n * w // sum(weights))
    bounds[-1] = n
    return bounds


def even(n, world):
    """Equal chunks (to within one key), for the timings."""
    return [n * r // world for r in range(world + 1)]


def chunk(x, rank, world):
    c = cuts(x.shape[2], world)
    return x[:, :, c[rank]:c[rank + 1]]


def randn(shape, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, generator=g, device="cuda", dtype=dtype)


def ref_decode(q, k, v, causal, heads):
    """float64 O of the first `heads` query heads (bottom-right causal)."""
    H, HKV, Nq, Nk = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    g = H // HKV
    q = q[:, :heads].double()
    k, v = (x[:, :math.ceil(heads / g)].double().repeat_interleave(g, dim=1)[:, :heads]
            for x in (k, v))
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        visible = torch.arange(Nk, device=q.device)[None, :] <= \
            (Nk - Nq) + torch.arange(Nq, device=q.device)[:, None]
        s = s.masked_fill(~visible, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def ref_kl(q_t, k_t, q_s, k_s, heads):
    """float64 KL rows of the first `heads` heads (one key head per query head here), and the
    largest |LSE| of either side."""
    st, ss = ((q[:, :heads].double() @ k[:, :heads].double().transpose(-1, -2)) /
              math.sqrt(q.shape[-1]) for q, k in ((q_t, k_t), (q_s, k_s)))
    lse = max(torch.logsumexp(x, -1).abs().max().item() for x in (st, ss))
    logp, logq = torch.log_softmax(st, -1), torch.log_softmax(ss, -1)
    return (logp.exp() * (logp - logq)).sum(-1), lse


def max_diff(a, b):
    return (a.double() - b.double()).abs().max().item()


def check_decode(name, case, rank, world, rows):
    B, H, HKV, Nq, Nk, D, causal, dtype = case
    q = randn((B, H, Nq, D), dtype, 1)
    k, v = randn((B, HKV, Nk, D), dtype, 2), randn((B, HKV, Nk, D), dtype, 3)
    o = td.context_parallel_decode(q, chunk(k, rank, world).contiguous(),
                                   chunk(v, rank, world).contiguous(), causal=causal)
    single = tessel.lean_attention(q, k, v, causal=causal)
    want = ref_decode(q, k, v, causal, 4)
    u = U[dtype]
    tol = 4 * u + 2 * u * single.abs().max().item()
    rows.append((name, max_diff(o, single), max_diff(o[:, :4], want), tol))


def check_kl(rank, world, rows):
    B, H, Nq, Nk, D = KL_CHECK
    q_t, q_s = randn((B, H, Nq, D), torch.float16, 4), randn((B, H, Nq, D), torch.float16, 5)
    k_t, k_s = randn((B, H, Nk, D), torch.float16, 6), randn((B, H, Nk, D), torch.float16, 7)
    kl = td.context_parallel_attention_kl(q_t, chunk(k_t, rank, world).contiguous(), q_s,
                                          chunk(k_s, rank, world).contiguous(), reduction="none")
    single = tessel.attention_kl(q_t, k_t, q_s, k_s, reduction="none")
    want, lse = ref_kl(q_t, k_t, q_s, k_s, 2)
    tol = 1e-5 + 4e-6 * lse
    rows.append((f"StreamKL B{B} H{H} Nq {Nq} Nk {Nk} D{D} f16", max_diff(kl, single),
                 max_diff(kl[:, :2], want), tol))


def timed(fn, reps, group_wide):
    """Median wall time (ms) per call; group_wide: every rank calls, the slowest one counts."""
    times = []
    for i in range(reps + 2):           # two warm-ups
        if group_wide:
            dist.barrier()
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        t = torch.tensor([time.perf_counter() - start], device="cuda")
        if group_wide:
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
        if i >= 2:
            times.append(t.item() * 1e3)
    return statistics.median(times)


def one_gpu(rank, fn, reps):
    """fn timed by rank 0 alone (its inputs made inside, freed after); the others wait."""
    ms = None
    if rank == 0:
        ms = timed(fn(), reps, False)
        torch.cuda.empty_cache()
    dist.barrier()
    return ms


def time_decode(rank, world, keys, reps):
    B, H, D, dtype = 1, 32, 128, torch.float16
    q = randn((B, H, 1, D), dtype, 1)

    def single():
        k, v = randn((B, H, keys, D), dtype, 2), randn((B, H, keys, D), dtype, 3)
        return lambda: tessel.lean_attention(q, k, v)
    base = one_gpu(rank, single, reps)
    c = even(keys, world)
    n = c[rank + 1] - c[rank]
    k, v = randn((B, H, n, D), dtype, 10 + rank), randn((B, H, n, D), dtype, 20 + rank)
    fast = timed(lambda: td.context_parallel_decode(q, k, v, validate=False), reps, True)
    checked = timed(lambda: td.context_parallel_decode(q, k, v), reps, True)
    return [(f"decode B1 H32 D128 f16, Nk {keys}", base, fast, checked)]


def time_kl(rank, world, n, reps):
    B, H, D, dtype = 1, 16, 128, torch.float16
    q_t, q_s = randn((B, H, n, D), dtype, 4), randn((B, H, n, D), dtype, 5)

    def single():
        k_t, k_s = randn((B, H, n, D), dtype, 6), randn((B, H, n, D), dtype, 7)
        return lambda: tessel.attention_kl(q_t, k_t, q_s, k_s, reduction="none")
    base = one_gpu(rank, single, reps)
    c = even(n, world)
    k_t, k_s = (randn((B, H, c[rank + 1] - c[rank], D), dtype, s + rank) for s in (30, 40))
    fast = timed(lambda: td.context_parallel_attention_kl(q_t, k_t, q_s, k_s, reduction="none",
                                                          validate=False), reps, True)
    checked = timed(lambda: td.context_parallel_attention_kl(q_t, k_t, q_s, k_s,
                                                             reduction="none"), reps, True)
    return [(f"StreamKL forward B1 H16 D128 f16, N {n} (non-causal)", base, fast, checked)]


def hang_check(rank, world, timeout_s):
    """The last rank hangs instead of calling; the others must end with an error (tessel's
    CommunicationError, or on NCCL PyTorch's watchdog aborting the process) after the group's
    timeout, never wait for ever.  Exits with status 3 on the ranks that saw an error."""
    group = dist.new_group(list(range(world)), timeout=datetime.timedelta(seconds=timeout_s))
    dist.barrier(group=group)                    # the group's communicator exists on every rank
    q = randn((1, 32, 1, 128), torch.float16, 1)
    k, v = randn((1, 32, 4096, 128), torch.float16, 2), randn((1, 32, 4096, 128), torch.float16, 3)
    if rank == world - 1:
        print(f"rank {rank}: hangs for {4 * timeout_s} s", flush=True)
        time.sleep(4 * timeout_s)
        return 0
    start = time.perf_counter()
    try:
        td.context_parallel_decode(q, k, v, group=group)
        torch.cuda.synchronize()
    except Exception as e:   # noqa: BLE001 -- reported, then the exit status says it
        print(f"rank {rank}: {type(e).__name__} after {time.perf_counter() - start:.1f} s "
              f"(group timeout {timeout_s} s): {str(e)[:300]}", flush=True)
        sys.exit(3)
    print(f"rank {rank}: no error after {time.perf_counter() - start:.1f} s", flush=True)
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check-only", action="store_true", help="numerics, no timing")
    parser.add_argument("--decode-keys", type=int, default=1 << 20)
    parser.add_argument("--kl-n", type=int, default=131072)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--hang-check", type=int, metavar="TIMEOUT_S",
                        help="only this: the last rank hangs, the others must fail after the "
                             "group's timeout of TIMEOUT_S seconds")
    args = parser.parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    backend = "nccl" if world_size <= _gpus else "gloo"
    torch.cuda.set_device(0)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=300))
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"{world} rank(s) on {_gpus} GPU(s) ({torch.cuda.get_device_name()}), {backend}; "
              f"torch {torch.__version__}")
    if args.hang_check:
        return hang_check(rank, world, args.hang_check)

    rows = []
    for name, case in DECODE_CHECKS.items():
        check_decode(name, case, rank, world, rows)
    check_kl(rank, world, rows)
    ok = all(single <= tol and ref <= tol for _, single, ref, tol in rows)
    flags = torch.tensor([float(ok)], device="cuda" if backend == "nccl" else "cpu")
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    if rank == 0:
        print(f"\n== numerics, {world} rank(s), keys cut {cuts(100, world)[1:-1]}% "
              f"(max |difference|)")
        print(f"| case | vs one GPU | vs float64 (4 heads) | limit | |\n|---|---|---|---|---|")
        for name, single, ref, tol in rows:
            verdict = "ok" if single <= tol and ref <= tol else "FAIL"
            print(f"| {name} | {single:.2e} | {ref:.2e} | {tol:.2e} | {verdict} |")
    torch.cuda.empty_cache()

    if not args.check_only:
        times = time_decode(rank, world, args.decode_keys, args.reps)
        times += time_kl(rank, world, args.kl_n, max(3, args.reps // 3))
        if rank == 0:
            print(f"\n== time, median ms per call ({world} rank(s): the slowest rank; "
                  f"validate=False, then validate=True)")
            print(f"| workload | one GPU | {world} GPUs | speedup | {world} GPUs, validated | "
                  f"speedup |\n|---|---|---|---|---|---|")
            for name, base, fast, checked in times:
                print(f"| {name} | {base:.3f} | {fast:.3f} | {base / fast:.2f}x | "
                      f"{checked:.3f} | {base / checked:.2f}x |")
    dist.destroy_process_group()
    return 0 if flags.item() == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
