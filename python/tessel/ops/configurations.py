"""Every kernel specialisation the ops launch on a GPU, for precompiling on a machine with the
compiler (python -m tessel.precompile) and launching on one without."""

from itertools import product

from .common import CAST_BLOCK, GPU_TUNED_SM90A, PREPROCESS_ROWS, gpu_tiles, head_dim
from .kl import LONG_FORWARD
from .lean import (LEAN_BLOCK_M, LEAN_STRATEGIES, lean_cluster_configurations,
                   lean_tile_configurations, lean_tile_rows, lean_tiles)
from .merge import KL_MERGE_BLOCK_R, MERGE_BLOCK_R
from .paged import paged_tiles
from .mta import DECODE_BLOCK_N, DECODE_BLOCK_S, conv_keys


def gpu_configurations(head_dims=(64, 128), dtypes=("f16", "bf16"), mta_windows=((6, 11),),
                       target="sm_90"):
    """[(tsl, kernel, constants, stream_k)]: every kernel specialisation the ops launch on a GPU of
    `target` for these head dims, element types and MTA windows (cq, ck) (with and without causal
    masks; the attention forward with and without its LSE; StreamKL with every pair of teacher
    and student head dims (its forward on sm_90a also in the form for long grids), its backward
    with the rows' gradients and with one for all; both
    lean_attention strategies with every query tile of LEAN_BLOCK_M (stream-K also in
    thread-block clusters from sm_90 on), contiguous (with and without the LSE) and paged
    (with and without the device check of its tables); MTA's forward (on sm_90a with its
    convolved keys), backward and decode; the merges of tessel.distributed; the backwards'
    conversion of their f32 dQ)."""
    configs = []

    def add(tsl, kernel, blocks=None, stream_k="persistent", **constants):
        if blocks is not None:
            constants.update(gpu_tiles(blocks, head_dim(constants), target))
        configs.append((tsl, kernel, constants, stream_k))

    for dtype in dtypes:
        for d in head_dims:
            for causal in (False, True):
                # with the LSE the backward reads, and without it (no autograd)
                for lse in ({}, {"lse": None}):
                    add("attention.tsl", "attention_fwd", "attention_fwd", D=d, CAUSAL=causal,
                        DTYPE=dtype, **lse)
                add("attention.tsl", "attention_bwd", "attention_bwd", D=d, CAUSAL=causal,
                    DTYPE=dtype)
                for stream_k in LEAN_STRATEGIES.values():
                    for bm in LEAN_BLOCK_M:
                        plain = lean_tiles(bm, gpu=True)
                        # tessel.lean_attention writes no LSE; tessel.distributed's decode
                        # merges the ranks' results by it
                        for lse in ({"lse": None}, {}):
                            for tiles in lean_tile_configurations(bm):
                                add("lean_attention.tsl", "lean_attention", None, stream_k, D=d,
                                    CAUSAL=causal, DTYPE=dtype, **tiles, **lse)
                            # stream-K in thread-block clusters (lean_cluster), from sm_90 on
                            if stream_k == "persistent" and target != "sm_80":
                                for size, block_n, live in lean_cluster_configurations(bm, d):
                                    add("lean_attention.tsl", "lean_attention", None, stream_k,
                                        D=d, CAUSAL=causal, DTYPE=dtype,
                                        **dict(plain, CLUSTER=size, BLOCK_N=block_n,
                                               LIVE_ROWS=live), **lse)
                        # few key blocks and many (paged_tiles), and the device check, for
                        # each bound of live rows; the usual caches' form and the general one
                        # (usual_cache)
                        paged = []
                        for (check, blocks), rows in product(
                                ((False, 0), (False, 1 << 30), (True, 0)), lean_tile_rows(bm)):
                            tiles = paged_tiles(bm, True, 1, blocks, check, rows)
                            if (check, tiles) not in paged:
                                paged.append((check, tiles))
                                for usual in (True, False):
                                    add("lean_attention.tsl", "lean_attention_paged", None,
                                        stream_k, D=d, CAUSAL=causal, CHECK_TABLES=check,
                                        DTYPE=dtype, lse=None, POW2_PAGES=usual,
                                        SAME_KV_STRIDES=usual, **tiles)
                for ds in head_dims:
                    add("attention_kl.tsl", "attention_kl_fwd", "attention_kl_fwd", DT=d, DS=ds,
                        CAUSAL=causal, DTYPE=dtype)
                    if target == "sm_90a" and (LONG_FORWARD, max(d, ds)) in GPU_TUNED_SM90A:
                        add("attention_kl.tsl", "attention_kl_fwd", LONG_FORWARD, DT=d, DS=ds,
                            CAUSAL=causal, DTYPE=dtype)
                    # the rows' gradients, or one for all of them (a reduction's)
                    for uniform in (False, True):
                        add("attention_kl.tsl", "attention_kl_bwd", "attention_kl_bwd", DT=d,
                            DS=ds, CAUSAL=causal, DTYPE=dtype, UNIFORM_G=uniform)
            for tsl in ("attention.tsl", "mta.tsl"):
                add(tsl, tsl[:-4] + "_bwd_preprocess", D=d,
                    BLOCK_M=PREPROCESS_ROWS, DTYPE=dtype)
            for cq, ck in mta_windows:
                folded = conv_keys(True, cq, d, target)
                if folded:
                    add("mta.tsl", "mta_conv_keys", D=d, CQ=cq, CK=ck,
                        BLOCK_N=gpu_tiles("mta_fwd_conv_keys", d, target)["BLOCK_N"],
                        DTYPE=dtype)
                add("mta.tsl", "mta_fwd", "mta_fwd_conv_keys" if folded else "mta_fwd", D=d,
                    CQ=cq, CK=ck, DTYPE=dtype, CONV_KEYS=folded)
                add("mta.tsl", "mta_bwd", "mta_bwd", D=d, CQ=cq, CK=ck, DTYPE=dtype)
                add("mta.tsl", "mta_decode_split", D=d, CQ=cq, CK=ck,
                    BLOCK_N=DECODE_BLOCK_N["gpu"], DTYPE=dtype)
            add("mta.tsl", "mta_decode_combine", D=d, BLOCK_S=DECODE_BLOCK_S, DTYPE=dtype)
            add("merge_states.tsl", "softmax_merge_parts", D=d, BLOCK_R=MERGE_BLOCK_R,
                DTYPE=dtype)
        add("convert.tsl", "scaled_cast", BLOCK=CAST_BLOCK, DTYPE=dtype)
    add("merge_states.tsl", "kl_merge_parts", BLOCK_R=KL_MERGE_BLOCK_R)
    return configs
