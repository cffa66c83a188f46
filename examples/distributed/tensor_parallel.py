"""Tensor parallelism with Tessel: each rank runs the attention ops on its own heads.

Attention heads are independent, so a model sharded by heads (Megatron-style: a column-parallel
QKV projection, attention, a row-parallel output projection whose partial sums are all-reduced)
runs Tessel's ops unchanged on each rank's heads: no communication inside attention.  This example
shards the heads of one layer's q, k, v over the ranks, runs prefill (tessel.attention, causal)
and one decode step (tessel.lean_attention) on each rank, all-gathers the outputs along the heads
to check them against one process running all heads, and prints the largest difference.

    torchrun --nproc_per_node=N examples/distributed/tensor_parallel.py      # N GPUs, NCCL
    python3 examples/distributed/tensor_parallel.py --cpu --world-size 2     # interpreter, gloo

With GQA, the key/value heads are split too (HKV a multiple of the world size), so the query heads
of a group land on the rank of their key/value head.  The script exits 1 if a result differs.
"""

import argparse
import datetime
import os
import sys

import numpy as np

# Tessel launches on its process's device 0: give each rank its own GPU before CUDA starts.
if "LOCAL_RANK" in os.environ and "--cpu" not in sys.argv:
    _gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    if _gpus == [""]:
        _gpus = [str(i) for i in range(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))]
    os.environ["CUDA_VISIBLE_DEVICES"] = _gpus[int(os.environ["LOCAL_RANK"]) % len(_gpus)]

import torch                      # noqa: E402
import torch.distributed as dist  # noqa: E402

import tessel                     # noqa: E402

B, H, HKV, N, D = 1, 16, 8, 128, 64     # up to 8 ranks


def heads(x, rank, world):
    """Rank `rank`'s contiguous share of the heads (dimension 1) of x."""
    share = x.shape[1] // world
    return x[:, rank * share:(rank + 1) * share]


def gather_heads(x, world):
    """The full (B, H, N, D) output from every rank's heads, on every rank."""
    t = torch.from_numpy(x) if isinstance(x, np.ndarray) else x
    parts = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(parts, t.contiguous())
    full = torch.cat(parts, dim=1)
    return full.numpy() if isinstance(x, np.ndarray) else full


def inputs(cpu):
    """The same seeded q, k, v on every rank: NumPy float16 arrays for the interpreter, CUDA
    tensors on a GPU."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, h, N, D, generator=g, dtype=torch.float32).to(torch.float16)
               for h in (H, HKV, HKV))
    if cpu:
        return q.numpy(), k.numpy(), v.numpy()
    return q.cuda(), k.cuda(), v.cuda()


def max_diff(a, b):
    a, b = (torch.as_tensor(x).float().cpu() for x in (a, b))
    return (a - b).abs().max().item()


def run(rank, world, cpu):
    q, k, v = inputs(cpu)
    q_r, k_r, v_r = (heads(x, rank, world) for x in (q, k, v))
    if cpu:   # the interpreter takes C-contiguous arrays; the ops take strided CUDA tensors
        q_r, k_r, v_r = (np.ascontiguousarray(x) for x in (q_r, k_r, v_r))
    # This rank's heads: prefill over the N tokens, then decode the newest token's query.
    o_prefill = gather_heads(tessel.attention(q_r, k_r, v_r, causal=True), world)
    o_decode = gather_heads(tessel.lean_attention(q_r[:, :, -1:], k_r, v_r), world)
    # The check: one process running every head.
    prefill_diff = max_diff(o_prefill, tessel.attention(q, k, v, causal=True))
    decode_diff = max_diff(o_decode, tessel.lean_attention(q[:, :, -1:], k, v))
    # Each head's prefill is the same program either way; decode's stream-K split of the keys
    # depends on the heads per GPU, so its sums may be added in another order.
    ok = prefill_diff == 0 and decode_diff <= 2e-3
    if rank == 0:
        print(f"rank {rank}: heads {H // world} of {H} (KV heads {HKV // world} of {HKV}); "
              f"max |difference| prefill {prefill_diff:.3g}, decode {decode_diff:.3g}")
        print(f"tensor parallel over {world} ranks: prefill and decode "
              f"{'match' if ok else 'DO NOT match'} one process")
    return ok


def worker(rank, world, init, cpu):
    if init:
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
    else:
        dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=120))
        rank, world = dist.get_rank(), dist.get_world_size()
    if H % world or HKV % world:
        raise SystemExit(f"the world size {world} must divide H {H} and HKV {HKV}")
    ok = run(rank, world, cpu)
    dist.destroy_process_group()
    if not ok:
        raise SystemExit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", action="store_true",
                        help="run on the CPU interpreter in --world-size spawned processes")
    parser.add_argument("--world-size", type=int, default=2)
    args = parser.parse_args()
    if not args.cpu:      # started by torchrun, one process per GPU
        worker(0, 0, None, False)
        return
    import tempfile
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(args.world_size, f"file://{tmp}/init", True),
                 nprocs=args.world_size)


if __name__ == "__main__":
    main()
