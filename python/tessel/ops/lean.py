"""tessel.lean_attention: LeanAttention decode (kernels/lean_attention.tsl), stream-K or split-K."""

from .. import errors, gpu
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


def lean_tiles(block_m, gpu, rows=None):
    """lean_attention's tile constexprs for a query tile of `block_m` rows. On the GPU the key
    blocks are 128 wide (64 with 128 query rows), with 8 warps from 64 rows and two pipeline
    stages (measured: decode is bound by memory, and deeper pipelines cost occupancy). Given the
    unit's `rows` = G·Nq live rows, fewer than the tile's, LIVE_ROWS bounds them: partial states
    then move only those rows, and the tile's other rows take no registers where they fold."""
    if not gpu:
        return dict(BLOCK_M=block_m, BLOCK_N=BLOCKS["interpreter"]["lean_attention"][1])
    tiles = dict(BLOCK_M=block_m, BLOCK_N=64 if block_m > 64 else 128,
                 NUM_WARPS=8 if block_m >= 64 else 4, NUM_STAGES=2)
    live = None if rows is None else lean_live_rows(rows)
    if live is not None and live < block_m:
        tiles["LIVE_ROWS"] = live
    return tiles


def lean_tile_rows(block_m):
    """Live row counts, one per distinct lean_tiles, of the units that take a query tile of
    `block_m` rows."""
    return [rows for rows in sorted({*LEAN_LIVE_ROWS, block_m}) if lean_block_m(rows) == block_m]


def lean_tile_configurations(block_m):
    """Every lean_tiles on the GPU for units whose rows take a query tile of `block_m` rows."""
    return [lean_tiles(block_m, True, rows) for rows in lean_tile_rows(block_m)]


# lean_attention's thread-block clusters, best first, each with its key block: 8 CTAs with
# blocks of 128 rows; 16 (a non-portable size that Hopper grants) with blocks of 64, whose smaller
# pipeline lets two CTAs share an SM (a GPC then holds twice the clusters) but which read keys
# more slowly (B1 H8 1k: 9.1 us against 7.7 in clusters of 8), so only for what 8 cannot take;
# then 4 and 2 with blocks of 128. The shared memory a CTA may take on sm_90 (227 KB) less room
# for the kernel's scratch area, and the most keys a CTA of a cluster may take: a cluster per
# unit keeps fewer SMs busy than the persistent grid, which pays only while the decode is bound
# by latency rather than bandwidth (docs/gpu/2026-11-29-decode-clusters.md). The partial states
# CTA 0 receives take the live rows (G·Nq) rounded up to LEAN_LIVE_ROWS, not the query tile's.
LEAN_CLUSTERS = ((8, 128), (16, 64), (4, 128), (2, 128))
LEAN_CLUSTER_SHARED_BYTES = 220 * 1024
LEAN_CLUSTER_KEYS = 512
LEAN_LIVE_ROWS = (1, 8, 16, 32)


def lean_live_rows(rows):
    """LIVE_ROWS for a unit of `rows` = G·Nq live rows in clusters: the first of LEAN_LIVE_ROWS
    that holds them, None above them (a query tile of more rows takes no cluster)."""
    return next((r for r in LEAN_LIVE_ROWS if rows <= r), None)


def lean_cluster_fits(size, block_n, live_rows, D):
    """Whether CTA 0's size - 1 received states (live_rows x (D + 2) floats each) fit beside
    the two-stage K/V pipeline."""
    received = (size - 1) * live_rows * (D + 2) * 4
    return received + 2 * 2 * block_n * D * 2 <= LEAN_CLUSTER_SHARED_BYTES


def lean_clusters(units, Nk, D, rows, sms, target):
    """The (CLUSTER, BLOCK_N) worth a try for lean_attention's stream-K on `sms` SMs for units of
    `rows` live rows, in LEAN_CLUSTERS' order. With thread-block clusters (sm_90 and later) a
    unit's key blocks are split over the C CTAs of one cluster, which hand their partial states
    to the first through its shared memory instead of through global memory and arrival flags.
    That pays for short
    decodes (each CTA of a cluster at most LEAN_CLUSTER_KEYS keys, none idle) of few units (a
    cluster per unit on the SMs at once), when CTA 0's received states fit beside the K/V
    pipeline; whether the GPU holds a cluster per unit at once (clusters share a GPC's SMs) only
    the compiled kernel tells (lean_cluster)."""
    live = lean_live_rows(rows)
    if target == "sm_80" or units < 1 or live is None:
        return []
    return [(size, block_n) for size, block_n in LEAN_CLUSTERS
            if units * size <= sms and lean_cluster_fits(size, block_n, live, D)
            and size <= cdiv(Nk, block_n) and cdiv(Nk, size) <= LEAN_CLUSTER_KEYS]


def lean_cluster_configurations(block_m, D):
    """[(CLUSTER, BLOCK_N, LIVE_ROWS)] lean_cluster may take with a query tile of `block_m` rows
    (rows that need this tile round up to these LIVE_ROWS) and head dim D."""
    return [(size, block_n, live) for live in LEAN_LIVE_ROWS if lean_block_m(live) == block_m
            for size, block_n in LEAN_CLUSTERS if lean_cluster_fits(size, block_n, live, D)]


def lean_cluster(be, units, Nk, D, rows, constants):
    """The cluster constexprs (CLUSTER, BLOCK_N, LIVE_ROWS) of lean_attention on back end `be`
    for units of `rows` live rows with `constants` (its tiles without a cluster): the first of
    lean_clusters whose kernel the GPU holds a cluster per unit of at once (a later one would
    wait for a free GPC), or None. Without the compiler, a cluster kernel missing from the
    precompiled bundles (a directory made before they were listed) leaves the persistent one."""
    if not be.gpu:
        return None
    kernel = be.kernel("lean_attention.tsl", "lean_attention")
    for size, block_n in lean_clusters(units, Nk, D, rows, be.multiprocessor_count(),
                                       gpu.target()):
        chosen = dict(CLUSTER=size, BLOCK_N=block_n, LIVE_ROWS=lean_live_rows(rows))
        try:
            resident = kernel.specialize(**dict(constants, **chosen)).resident_clusters
        except errors.BundleNotFoundError:
            continue
        if resident is None or resident >= units:
            return chosen
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
        be, q, k, v, causal, scale, dtype, stream_k, with_lse=False))[0]


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


def _lean_attention_forward(be, q, k, v, causal, scale, dtype, stream_k="persistent",
                            with_lse=True):
    """(O, LSE) of the decode (LSE None without with_lse: the kernel then writes none)."""
    q, k, v = (be.input(x) for x in (q, k, v))
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    tiles = lean_tiles(lean_block_m(H // HKV * Nq), be.gpu, H // HKV * Nq)
    if stream_k == "persistent":
        tiles.update(lean_cluster(be, B * HKV, Nk, D, H // HKV * Nq,
                                  dict(tiles, D=D, CAUSAL=causal, DTYPE=dtype,
                                       **({} if with_lse else {"lse": None}))) or {})
    bn = tiles["BLOCK_N"]
    o = be.empty((B, H, Nq, D), q)
    lse = be.empty((B, H, Nq), q, be.f32()) if with_lse else None
    if B == 0:                          # no unit: nothing to launch
        return o, lse
    # units = B * HKV (one per KV head), each of max(cdiv(Nk, bn), 1) iterations
    launch = {} if be.gpu else {"programs": min(B * HKV * max(cdiv(Nk, bn), 1), LEAN_PROGRAMS)}
    be.kernel("lean_attention.tsl", "lean_attention", stream_k)(
        q, k, v, o, lse, *be.strides(q), *be.strides(k), *be.strides(v), B, H, HKV, Nq, Nk, scale,
        D=D, CAUSAL=causal, DTYPE=dtype, **tiles, **launch)
    return o, lse
