"""Attention across processes with torch.distributed: context-parallel decode and StreamKL.

Context parallelism shards one sequence's keys and values over the ranks of a process group, in
rank order: rank r holds the r-th contiguous chunk (chunks may differ in length, or be empty).
Each rank runs the one-GPU kernels on its chunk for all the query rows (lean_attention's stream-K
decode; StreamKL's forward), which gives per row a partial state over its keys: (O, LSE) for
attention, (KL, LSE teacher, LSE student) for StreamKL.  The ranks all-gather these states (a few
KB: per row D values and one LSE, or three floats) and each merges them with one kernel
(kernels/merge_states.tsl, see tessel.ops.merge) on the current stream, so every rank ends with
the result over all keys, equal to the one-GPU result up to the order of the additions.

    import datetime, torch.distributed as dist, tessel.distributed as td
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=60))
    o = td.context_parallel_decode(q, k_shard, v_shard)            # O over all keys, every rank
    kl = td.context_parallel_attention_kl(q_t, k_t_shard, q_s, k_s_shard, reduction="none")

Tensor parallelism (each rank runs the ops on its own heads, then gathers the outputs) needs no
communication inside attention and nothing from this module: see examples/distributed/.

Devices.  tessel launches on its process's device 0: give each rank one GPU through
CUDA_VISIBLE_DEVICES before CUDA starts (as examples/distributed/ and scripts/gpu/distributed.py
do).  NCCL needs one GPU per rank; ranks sharing a GPU communicate through a gloo group, which also
takes CUDA tensors.  NumPy arrays run on the CPU interpreter and communicate through gloo.

Errors.  With validate=True (the default) the ranks first all-gather what must match (shapes,
dtype, scale, options) and whether each rank's arguments passed its checks, so a bad argument on
any rank raises on every rank, before any kernel runs: the rank at fault raises its TypeError or
ValueError (naming the op), the others a ValueError naming that rank.  This costs one small
collective that waits for the device (NCCL), which a decode loop or a CUDA graph may not want:
validate=False checks the local arguments only.  A rank that fails, exits or hangs: the peers'
collective fails after the process group's timeout (init_process_group(timeout=...)); tessel
raises tessel.CommunicationError naming the op and the rank.  On NCCL, collectives run
asynchronously from the host: the validating exchange waits for its all-gather on the host for at
most the group's timeout, then raises; with validate=False a timeout surfaces through the process
group's watchdog (PyTorch aborts the communicator and the process) rather than as an exception.
"""

import contextlib
import time

import numpy as np

from .errors import CommunicationError
from .ops.common import needs_autograd, torch_module
from .ops.kl import _attention_kl_forward, _reduce, check_kl_args
from .ops.lean import _lean_attention_forward, check_lean_args
from .ops.merge import _merge_attention, _merge_kl

_DTYPES = ("f16", "bf16")


def context_parallel_decode(q, k, v, group=None, causal=False, scale=None, strategy="stream-k",
                            validate=True, return_lse=False):
    """Decode attention over keys sharded across the ranks of `group` (default: the default
    process group).  q (B, H, Nq, D): the same query rows on every rank; k, v (B, HKV, Nk_r, D):
    this rank's chunk of the keys and values (chunk r of the sequence; Nk_r may differ between
    ranks).  causal: the queries are the last Nq positions of the whole sequence (row i sees
    global keys j <= Nk - Nq + i), which needs the last rank's chunk to hold at least Nq keys.
    scale, strategy: as tessel.lean_attention, whose kernel computes each rank's part.  Returns O
    (B, H, Nq, D) over all keys, the same on every rank, q's dtype; with return_lse also its LSE
    (B, H, Nq) float32."""
    op = "context_parallel_decode"
    dist, rank, world = _group(op, group)
    last = rank == world - 1
    fields, error = None, None
    try:
        be, dtype, scale, stream_k = check_lean_args(op, q, k, v, bool(causal and last), scale,
                                                     strategy)
        _check_backend(op, dist, group, be)
        B, H, Nq, D = q.shape
        fields = {"q's shape (B, H, Nq, D)": (B, H, Nq, D), "the key heads (HKV)": (k.shape[1],),
                  **_common_fields(dtype, be), "causal": (int(bool(causal)),), "scale": (scale,),
                  "strategy (0: stream-k, 1: split-k)": (int(stream_k != "persistent"),)}
    except (TypeError, ValueError) as e:
        error = e
    _agree(op, dist, group, rank, world, _DECODE_FIELDS, fields, error, validate)
    o, lse = _lean_attention_forward(be, q, k, v, bool(causal and last), scale, dtype, stream_k)
    o_parts, lse_parts = _all_gather(op, dist, group, rank, world, o, lse)
    o, lse = _merge_attention(be, o_parts, lse_parts, dtype)
    return (o, lse) if return_lse else o


def context_parallel_attention_kl(q_t, k_t, q_s, k_s, group=None, causal=False, scale=None,
                                  reduction="sum", validate=True):
    """StreamKL, KL(teacher ‖ student) per query row, over keys sharded across the ranks of
    `group`: q_t (B, H, Nq, DT) and q_s (B, H, Nq, DS) the same query rows on every rank; k_t
    (B, HKT, Nk_r, DT) and k_s (B, HKS, Nk_r, DS) this rank's chunk of the keys.  scale,
    reduction: as tessel.attention_kl.  Returns its result over all keys, the same on every rank.
    Forward only (the inputs must not require grad); no causal mask (the kernel's is aligned on
    the chunk's own positions)."""
    op = "context_parallel_attention_kl"
    dist, rank, world = _group(op, group)
    fields, error = None, None
    try:
        if causal:
            raise ValueError(f"tessel.{op}: causal=True is not supported with the keys sharded "
                             f"across ranks (use tessel.attention_kl on one GPU)")
        B, be, dtype, scale_t, scale_s = check_kl_args(op, q_t, k_t, q_s, k_s, False, scale,
                                                       reduction)
        _check_backend(op, dist, group, be)
        if needs_autograd((q_s, k_s)):
            raise ValueError(f"tessel.{op}: gradients are not computed across ranks; pass "
                             f"tensors that do not require grad (or call under torch.no_grad())")
        fields = {"q_t's shape (B, H, Nq, DT)": tuple(q_t.shape),
                  "q_s's head dim (DS)": (q_s.shape[3],),
                  "the key heads (HKT, HKS)": (k_t.shape[1], k_s.shape[1]),
                  **_common_fields(dtype, be), "the scales": (scale_t, scale_s)}
    except (TypeError, ValueError) as e:
        error = e
    _agree(op, dist, group, rank, world, _KL_FIELDS, fields, error, validate)
    _, H, Nq, _ = q_t.shape
    state = be.empty((3, B, H, Nq), q_t, be.f32())
    _attention_kl_forward(be, q_t, k_t, q_s, k_s, False, scale_t, scale_s, dtype,
                          out=tuple(state))
    parts, = _all_gather(op, dist, group, rank, world, state)
    kl, _, _ = _merge_kl(be, parts)
    return _reduce(kl, reduction, B)


# How many numbers each field of _agree holds, per op (the all-gathered rows have one length).
_DECODE_FIELDS = 10
_KL_FIELDS = 11


def _common_fields(dtype, be):
    return {"the dtype (0: f16, 1: bf16)": (_DTYPES.index(dtype),),
            "the device (0: CPU interpreter, 1: GPU)": (int(be.gpu),)}


def _group(op, group):
    """torch.distributed, this process's rank in `group` and the group's size."""
    try:
        import torch.distributed as dist
    except ImportError as e:
        raise RuntimeError(f"tessel.{op}: needs PyTorch with torch.distributed ({e})") from None
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(f"tessel.{op}: torch.distributed is not initialised: call "
                           f"torch.distributed.init_process_group first")
    rank = dist.get_rank(group)
    if rank < 0:
        raise ValueError(f"tessel.{op}: this process is not a member of the group")
    return dist, rank, dist.get_world_size(group)


def _on_cpu(dist, group):
    """Whether the group's collectives take CPU tensors (gloo) rather than CUDA ones (NCCL)."""
    return dist.get_backend(group) != "nccl"


def _check_backend(op, dist, group, be):
    if not be.gpu and not _on_cpu(dist, group):
        raise ValueError(f"tessel.{op}: NumPy arrays run on the CPU interpreter and need a "
                         f"process group that takes CPU tensors (gloo), not "
                         f"{dist.get_backend(group)}")


def _agree(op, dist, group, rank, world, size, fields, error, validate):
    """Raises on every rank if any rank's arguments failed its checks (`error`) or the ranks'
    `fields` ({what: numbers}, `size` numbers in all) differ; validate=False: only this rank's
    own error."""
    if not validate:
        if error is not None:
            raise error
        return
    torch = torch_module()
    row = [float("nan")] * size
    if fields is not None:
        row = [float(x) for values in fields.values() for x in values]
        assert len(row) == size
    device = "cpu" if _on_cpu(dist, group) else torch.device("cuda", torch.cuda.current_device())
    # The first number says the rank took part: 1 (its checks passed) or 2 (they failed). A row
    # that is neither was never written: on NCCL a timed-out all-gather returns to the host
    # without raising, leaving the buffer as it was.
    mine = torch.tensor([1.0 if error is None else 2.0] + row, dtype=torch.float64, device=device)
    rows = _collect(op, dist, group, rank, world, mine).cpu().tolist()
    missing = [r for r, values in enumerate(rows) if values[0] not in (1.0, 2.0)]
    if missing:
        raise CommunicationError(
            f"tessel.{op}: rank {missing[0]} of {world} did not take part in the argument "
            f"exchange (it failed, exited, or did not reach it within the process group's "
            f"timeout); seen from rank {rank}")
    if error is not None:
        raise error
    failed = [r for r, values in enumerate(rows) if values[0] == 2.0]
    if failed:
        raise ValueError(f"tessel.{op}: the arguments of rank {failed[0]} of {world} failed its "
                         f"checks (its error says why); no rank ran")
    at = 1
    for what, values in fields.items():
        got = [tuple(row[at:at + len(values)]) for row in rows]
        if any(g != got[0] for g in got):
            listed = ", ".join(f"rank {r} {_show(g)}" for r, g in enumerate(got))
            raise ValueError(f"tessel.{op}: the ranks must agree on {what}, got {listed}")
        at += len(values)


def _show(values):
    values = [int(v) if float(v).is_integer() else v for v in values]
    return str(values[0]) if len(values) == 1 else str(tuple(values))


def _collect(op, dist, group, rank, world, x):
    """all_gather of a CPU or CUDA tensor into a (world, *x.shape) tensor."""
    out = x.new_zeros((world,) + tuple(x.shape))
    with _communicating(op, rank, world):
        work = _start(dist, group, out, x)
        if _on_cpu(dist, group):
            work.wait()                   # gloo raises after the group's timeout itself
        else:
            _wait_on_host(op, work, _timeout_s(dist, group), rank, world)
    return out


def _wait_on_host(op, work, timeout_s, rank, world):
    """Waits for an NCCL collective on the host, at most `timeout_s`: a peer that never joins
    would otherwise leave this rank blocked until the watchdog ends the process."""
    deadline = time.monotonic() + timeout_s
    while not work.is_completed():
        if time.monotonic() > deadline:
            raise CommunicationError(
                f"tessel.{op}: the argument exchange did not complete on rank {rank} of {world} "
                f"within the process group's timeout ({timeout_s:g} s): a rank failed, exited or "
                f"did not reach it")
        time.sleep(50e-6)
    work.wait()


def _timeout_s(dist, group):
    """The process group's timeout in seconds (init_process_group(timeout=...)); PyTorch's
    default where the group does not say."""
    torch = torch_module()
    pg = group if group is not None else dist.group.WORLD
    try:
        return pg._get_backend(torch.device("cuda")).options._timeout.total_seconds()
    except (AttributeError, RuntimeError):
        return dist.default_pg_timeout.total_seconds()


def _all_gather(op, dist, group, rank, world, *arrays):
    """The (world, *shape) stacks of every rank's `arrays`, all-gathered together; NumPy arrays
    (the interpreter's) travel as CPU tensors that share their memory."""
    torch = torch_module()
    pairs = [(torch.from_numpy(x), True) if isinstance(x, np.ndarray) else (x, False)
             for x in arrays]
    outs = [t.new_empty((world,) + tuple(t.shape)) for t, _ in pairs]
    with _communicating(op, rank, world):
        works = [_start(dist, group, out, t) for out, (t, _) in zip(outs, pairs)]
        for work in works:
            work.wait()
    return [out.numpy() if numpy else out for out, (_, numpy) in zip(outs, pairs)]


def _start(dist, group, out, x):
    """Starts the all-gather of x into out (world, *x.shape); returns its work handle."""
    if not _on_cpu(dist, group) and hasattr(dist, "all_gather_into_tensor"):
        return dist.all_gather_into_tensor(out, x, group=group, async_op=True)
    # gloo has no all_gather_into_tensor (PyTorch 1.13): gather into views of out.
    return dist.all_gather(list(out.unbind(0)), x, group=group, async_op=True)


@contextlib.contextmanager
def _communicating(op, rank, world):
    try:
        yield
    except CommunicationError:
        raise
    except RuntimeError as e:
        raise CommunicationError(
            f"tessel.{op}: the all-gather failed on rank {rank} of {world} (a rank failed, "
            f"exited, or did not reach it within the process group's timeout): {e}") from e


__all__ = ["context_parallel_attention_kl", "context_parallel_decode"]
