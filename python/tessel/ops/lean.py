"""tessel.lean_attention: LeanAttention decode (kernels/lean_attention.tsl), stream-K or split-K."""

from .. import gpu
from ..compiler import cdiv
from . import plans
from .paged import paged_attention
from .common import BLOCKS, attention_args, backend, element_type, scale_value

# The decode kernel's query tiles: a unit of lean_attention is one (batch, KV head), and its tile
# holds the G·Nq query rows of the G = H / HKV query heads that share the KV head, padded to a
# power of two of at least 16 rows (the M of the tensor-core MMA) and at most LEAN_MAX_ROWS (the
# largest tile compiled: GQA 8:1 with 16 query rows).  With D = 128 the current GPU lowering (4
# warps) already spills registers from 32 rows (ptxas, sm_90: ~0.2 KB at 32 rows, ~3.7 KB at 128);
# one-row decode up to GQA 16:1 stays in the 16-row tile.
LEAN_BLOCK_M = (16, 32, 64, 128)
LEAN_MAX_ROWS = LEAN_BLOCK_M[-1]
# lean_attention's strategies and the lowering of its stream_k each one compiles.
LEAN_STRATEGIES = {"stream-k": "persistent", "split-k": "split-k"}
# Persistent programs of lean_attention on the interpreter (enough to split units).
LEAN_PROGRAMS = 8
_PLANS = plans.Plans()


def lean_tiles(block_m, gpu):
    """lean_attention's tile constexprs for a query tile of `block_m` rows. On the GPU the key
    blocks are 128 wide (64 with 128 query rows), with 8 warps from 64 rows and two pipeline
    stages (measured: decode is bound by memory, and deeper pipelines cost occupancy)."""
    if not gpu:
        return dict(BLOCK_M=block_m, BLOCK_N=BLOCKS["interpreter"]["lean_attention"][1])
    return dict(BLOCK_M=block_m, BLOCK_N=64 if block_m > 64 else 128,
                NUM_WARPS=8 if block_m >= 64 else 4, NUM_STAGES=2)


# lean_attention's thread-block clusters: their sizes (powers of two, the widest 16: a
# non-portable size that Hopper grants), the shared memory a CTA may take on sm_90 (227 KB) less
# room for the kernel's scratch area, and the most key blocks a CTA of a cluster may take: a
# cluster per unit keeps fewer SMs busy than the persistent grid, which pays only while the
# decode is short enough to be bound by latency rather than bandwidth (H200, B1 H8, clusters of
# 8 against the persistent grid: 1 or 4 blocks per CTA, 1.1 and 1.6 us faster; 16, 3.5 us
# slower; docs/gpu/2026-11-29-decode-clusters.md).
LEAN_CLUSTERS = (16, 8, 4, 2)
LEAN_CLUSTER_SHARED_BYTES = 220 * 1024
LEAN_CLUSTER_BLOCKS = 4
# Query tiles of more rows leave too little shared memory beside their scratch areas (one-row
# decodes up to GQA 32:1 take clusters).
LEAN_CLUSTER_MAX_ROWS = 32


def lean_cluster_block_n(size, block_m, D):
    """The key block of a cluster of `size` CTAs (128 rows, else 64): CTA 0 receives size - 1
    partial states (block_m x (D + 2) floats each) beside the two-stage K/V pipeline. None if
    neither fits."""
    received = (size - 1) * block_m * (D + 2) * 4
    return next((bn for bn in (128, 64)
                 if received + 2 * 2 * bn * D * 2 <= LEAN_CLUSTER_SHARED_BYTES), None)


def lean_clusters(units, Nk, D, block_m, sms, target):
    """The (CLUSTER, BLOCK_N) worth a try for lean_attention's stream-K on `sms` SMs, best first.
    With thread-block clusters (sm_90 and later) a unit's key blocks are split over the C CTAs of
    one cluster, which hand their partial states to the first through its shared memory instead
    of through global memory and arrival flags. That pays for short decodes (each CTA of a
    cluster at most LEAN_CLUSTER_BLOCKS key blocks, none idle) of few units (a cluster per unit
    on the SMs at once), when CTA 0's received states fit beside the K/V pipeline; whether the
    GPU holds a cluster per unit at once (clusters share a GPC's SMs) only the compiled kernel
    tells (lean_cluster)."""
    if target == "sm_80" or units < 1 or block_m > LEAN_CLUSTER_MAX_ROWS:
        return []
    fits = []
    for size in LEAN_CLUSTERS:
        block_n = lean_cluster_block_n(size, block_m, D)
        if block_n is None or units * size > sms:
            continue
        iters = max(cdiv(Nk, block_n), 1)
        if size <= iters <= size * LEAN_CLUSTER_BLOCKS:
            fits.append((size, block_n))
    return fits


def lean_cluster(be, units, Nk, D, block_m, constants):
    """lean_cluster's choice on back end `be` for lean_attention with `constants` (its tiles
    without a cluster): the first of lean_clusters whose kernel the GPU holds a cluster per unit
    of at once (a later one would wait for a free GPC), or None."""
    if not be.gpu:
        return None
    kernel = be.kernel("lean_attention.tsl", "lean_attention")
    for size, block_n in lean_clusters(units, Nk, D, block_m, be.multiprocessor_count(),
                                       gpu.target()):
        resident = kernel.specialize(**dict(constants, CLUSTER=size,
                                            BLOCK_N=block_n)).resident_clusters
        if resident is None or resident >= units:
            return size, block_n
    return None


def lean_block_m(rows):
    """lean_attention's BLOCK_M for a GQA group of `rows` = G·Nq query rows: the smallest tile of
    LEAN_BLOCK_M that holds them (None if none does)."""
    return next((bm for bm in LEAN_BLOCK_M if rows <= bm), None)


def lean_attention(q, k, v, causal=False, scale=None, strategy="stream-k", *, seq_lens=None,
                   block_table=None, max_seq_len=None, check=True):
    """Decode attention with a stream-K split of the keys.  q (B, H, Nq, D) holds the Nq newest
    query rows; k, v (B, HKV, Nk, D).  One work unit per (batch, KV head) holds the G·Nq query
    rows of the G = H / HKV query heads of its group, so K/V are read once per unit:
    1 <= G·Nq <= LEAN_MAX_ROWS (128; e.g. Nq <= 16 up to GQA 8:1, Nq <= 128 for MHA).  causal:
    the queries are the last Nq positions (row i sees keys j <= Nk - Nq + i; needs Nk >= Nq).
    strategy: how the kernel's stream_k is lowered: 'stream-k' (LeanAttention: the key blocks of
    all (batch, KV head) units split evenly over a persistent grid) or 'split-k' (FlashDecoding:
    each unit cut into equal chunks, then a combine kernel).  Returns O (B, H, Nq, D).

    Ragged batches and paged caches: seq_lens (B,) int32 gives each sequence's number of keys
    (its first seq_lens[b] rows of k and v; causal: its queries are its last Nq positions).  With
    block_table (B, max_pages) int32, k and v are paged caches (num_pages, page_size, HKV, D)
    (vLLM's and FlashInfer's layout) and key j of sequence b is row j % page_size of page
    block_table[b, j // page_size].  max_seq_len (optional) bounds the lengths: the work is
    split over max_seq_len keys per sequence, so a tight bound balances the programs better
    (default: the longest sequence where check=True reads the lengths, else what the table
    holds, max_pages·page_size).  check: True reads block_table and seq_lens
    on the host and rejects a length outside [0, max_seq_len] or a page outside the cache before
    the launch (a device-to-host copy: pass False in a decode loop or a CUDA graph); 'device'
    has the kernel count what it finds out of range and raises after it; False checks shapes
    only.  In no case does the kernel read outside the cache: a page number outside it reads
    as zeros."""
    if seq_lens is not None or block_table is not None:
        return paged_attention(q, k, v, causal, scale, strategy, seq_lens, block_table,
                               max_seq_len, check)
    key = plans.key((q, k, v), causal, scale, type(scale), strategy)
    out = _PLANS.replay(key, q, k, v)
    if out is not None:
        return out[0]
    be, dtype, scale, stream_k = check_lean_args("lean_attention", q, k, v, causal, scale,
                                                 strategy)
    causal = bool(causal)
    return _PLANS.run(key, be, (q, k, v), lambda q, k, v: _lean_attention_forward(
        be, q, k, v, causal, scale, dtype, stream_k))[0]


def check_lean_args(op, q, k, v, causal, scale, strategy):
    """lean_attention's argument checks, errors naming `op`; returns (backend, element type,
    scale, stream_k lowering)."""
    _, H, HKV, Nq, Nk, D = attention_args(op, q, k, v)
    check_rows(op, H // HKV, Nq)
    if causal and Nk < Nq:
        raise ValueError(f"tessel.{op}: causal decode needs at least as many keys as queries, "
                         f"got Nq {Nq} and Nk {Nk}")
    stream_k = stream_k_lowering(op, strategy)
    be = backend(op, {"q": q, "k": k, "v": v})
    dtype = element_type(op, {"q": q, "k": k, "v": v})
    return be, dtype, scale_value(op, scale, D), stream_k


def stream_k_lowering(op, strategy):
    """The lowering of stream_k that `strategy` names (LEAN_STRATEGIES)."""
    if strategy not in LEAN_STRATEGIES:
        raise ValueError(f"tessel.{op}: strategy must be one of {', '.join(LEAN_STRATEGIES)}, "
                         f"got {strategy!r}")
    return LEAN_STRATEGIES[strategy]


def check_rows(op, group, Nq):
    """A unit's query tile holds the Nq rows of each of the `group` query heads of a KV head."""
    if Nq < 1:
        raise ValueError(f"tessel.{op}: decode takes at least one query row, got Nq {Nq}")
    if lean_block_m(group * Nq) is None:
        raise ValueError(f"tessel.{op}: a unit holds the query rows of one GQA group, at most "
                         f"{LEAN_MAX_ROWS}: got {group} query heads per KV head x Nq {Nq} = "
                         f"{group * Nq} rows (use fewer query rows per call, or "
                         f"tessel.attention for prefill)")


def _lean_attention_forward(be, q, k, v, causal, scale, dtype, stream_k="persistent"):
    q, k, v = (be.input(x) for x in (q, k, v))
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    tiles = lean_tiles(lean_block_m(H // HKV * Nq), be.gpu)
    if stream_k == "persistent":
        cluster = lean_cluster(be, B * HKV, Nk, D, tiles["BLOCK_M"],
                               dict(tiles, D=D, CAUSAL=causal, DTYPE=dtype))
        if cluster:
            tiles.update(CLUSTER=cluster[0], BLOCK_N=cluster[1])
    bn = tiles["BLOCK_N"]
    o = be.empty((B, H, Nq, D), q)
    lse = be.empty((B, H, Nq), q, be.f32())
    if B == 0:                          # no unit: nothing to launch
        return o, lse
    # units = B * HKV (one per KV head), each of max(cdiv(Nk, bn), 1) iterations
    launch = {} if be.gpu else {"programs": min(B * HKV * max(cdiv(Nk, bn), 1), LEAN_PROGRAMS)}
    be.kernel("lean_attention.tsl", "lean_attention", stream_k)(
        q, k, v, o, lse, *be.strides(q), *be.strides(k), *be.strides(v), B, H, HKV, Nq, Nk, scale,
        D=D, CAUSAL=causal, DTYPE=dtype, **tiles, **launch)
    return o, lse
