"""The ready ops in interpret mode against the float64 references of test/numerics/reference.py,
on small ragged sizes (never multiples of the tiles), with GQA and causal masks, in f16 (float16
arrays) and bf16 (float32 arrays); and their argument checks.

Tolerances as in test/numerics/test_kernels.py: outputs in the element type within
4u + 2u·max|ref| (u: 2^-11 for f16, 2^-8 for bf16); f32 results (KL) within 1e-5 + 4e-6·M, M the
magnitude of the terms (the LSEs)."""

import numpy as np
import pytest

import reference as ref
import tessel
from tessel.interpreter import from_bf16_bits, to_bf16_bits
from tessel.ops.lean import (LEAN_CLUSTERS, lean_cluster, lean_cluster_configurations,
                             lean_clusters, lean_live_rows)

U = {np.float16: 2.0 ** -11, np.float32: 2.0 ** -8}
DTYPES = (np.float16, np.float32)


def _inputs(seed, dtype, *shapes):
    """Standard normal arrays of `dtype` (seeded by the string `seed`), and their float64 values
    as the kernels see them (float32 arrays are rounded to bf16)."""
    rng = np.random.default_rng(list(seed.encode()))
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    seen = [from_bf16_bits(to_bf16_bits(a)) if dtype == np.float32 else a for a in arrays]
    return arrays, [s.astype(np.float64) for s in seen]


def _check_out(got, want, dtype):
    u = U[dtype]
    assert got.dtype == dtype and got.shape == want.shape
    err = np.max(np.abs(got.astype(np.float64) - want), initial=0.0)
    assert err <= 4 * u + 2 * u * np.max(np.abs(want), initial=0.0), err


ATTENTION = {  # B, H, HKV, Nq, Nk, D, causal, scale
    "gqa2-ragged": (2, 4, 2, 37, 45, 32, False, None),
    "causal": (1, 2, 1, 40, 40, 64, True, None),
    "d16-scale": (1, 3, 3, 9, 70, 16, False, 0.3),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
@pytest.mark.parametrize("case", list(ATTENTION))
def test_attention(case, dtype):
    B, H, HKV, Nq, Nk, D, causal, scale = ATTENTION[case]
    (q, k, v), (q64, k64, v64) = _inputs(case, dtype, (B, H, Nq, D), (B, HKV, Nk, D),
                                         (B, HKV, Nk, D))
    o = tessel.attention(q, k, v, causal=causal, scale=scale)
    want, _ = ref.attention_fwd(q64, k64, v64, np.float32(scale or 1 / np.sqrt(D)), causal)
    _check_out(o, want, dtype)


def test_no_keys():
    """Rows that see no key: O = 0, KL = 0 (the kernels' contract)."""
    q = np.ones((1, 2, 5, 16), np.float16)
    kv = np.ones((1, 2, 0, 16), np.float16)
    np.testing.assert_array_equal(tessel.attention(q, kv, kv), 0.0)
    np.testing.assert_array_equal(tessel.lean_attention(q, kv, kv), 0.0)
    np.testing.assert_array_equal(tessel.attention_kl(q, kv, q, kv, reduction="none"), 0.0)


LEAN = {  # B, H, HKV, Nq, Nk, D, causal; a unit holds (H / HKV) * Nq query rows
    "gqa4-nq1": (2, 4, 1, 1, 77, 32, False),
    "causal-gqa2": (1, 4, 2, 5, 40, 64, True),
    "nq16": (1, 2, 2, 16, 33, 16, False),
    "gqa3-nq3-causal": (2, 6, 2, 3, 29, 32, True),      # 9 rows: a non-power-of-two group
    "gqa8-nq3-nk-lt-block": (1, 16, 2, 3, 9, 16, False),  # 24 rows: tile of 32; Nk < BLOCK_N
    "gqa8-nq16": (1, 8, 1, 16, 20, 16, True),           # 128 rows: the largest tile
    "mha-nq40": (1, 2, 2, 40, 50, 16, True),            # MHA beyond 16 rows: tile of 64
}


def test_lean_block_m():
    """The query tile of a group of G·Nq rows: the smallest of 16, 32, 64, 128 that holds them."""
    assert [tessel.ops.lean_block_m(r) for r in (1, 8, 16, 17, 32, 33, 64, 65, 128, 129)] == \
        [16, 16, 16, 32, 32, 64, 64, 128, 128, None]
    lean = [c for c in tessel.ops.gpu_configurations((64,), ("bf16",), ((3, 5),))
            if c[1] == "lean_attention"]
    assert sorted({c[2]["BLOCK_M"] for c in lean}) == list(tessel.ops.LEAN_BLOCK_M)
    plain = [c for c in lean if "CLUSTER" not in c[2]]
    # causal x strategy x (BLOCK_M, LIVE_ROWS) x with or without the LSE (tessel.lean_attention
    # writes none): one-row and 8-row units bound their states in the 16-row tile
    tiles = [(16, 1), (16, 8), (16, None), (32, None), (64, None), (128, None)]
    assert sorted({(c[2]["BLOCK_M"], c[2].get("LIVE_ROWS")) for c in plain},
                  key=str) == sorted(tiles, key=str)
    assert len(plain) == 2 * 2 * len(tiles) * 2
    # stream-K also in the clusters lean_cluster may take (causal x BLOCK_M x cluster x LSE)
    clustered = {(c[2]["CAUSAL"], c[2]["BLOCK_M"], c[2]["CLUSTER"], c[2]["BLOCK_N"],
                  c[2]["LIVE_ROWS"], c[3], "lse" in c[2]) for c in lean if "CLUSTER" in c[2]}
    fits = {(causal, bm, *config, "persistent", lse) for causal in (False, True)
            for bm in tessel.ops.LEAN_BLOCK_M for config in lean_cluster_configurations(bm, 64)
            for lse in (False, True)}
    assert clustered == fits and len(lean) == len(plain) + len(fits)
    assert all(c[2]["lse"] is None for c in lean if "lse" in c[2])
    assert not [c for c in tessel.ops.gpu_configurations((64,), ("bf16",), ((3, 5),),
                                                         target="sm_80") if "CLUSTER" in c[2]]


def test_forward_configurations_take_the_table():
    """The precompiled forwards are the tables' (causal or not, with or without the LSE): on
    sm_90a at D64 four consumer warpgroups in turns with a producer, taking blocks in turn."""
    from tessel.ops.common import gpu_tiles
    for d in (64, 128):
        configs = tessel.ops.gpu_configurations((d,), ("bf16",), ((3, 5),), target="sm_90a")
        forward = [c for _, name, c, _ in configs if name == "attention_fwd"]
        assert len(forward) == 4
        for c in forward:
            assert {k: c[k] for k in gpu_tiles("attention_fwd", d, "sm_90a")} == \
                gpu_tiles("attention_fwd", d, "sm_90a")
    tuned = gpu_tiles("attention_fwd", 64, "sm_90a")
    assert (tuned["BLOCK_M"], tuned["NUM_WARPS"]) == (256, 16)
    assert tuned["WARP_SPECIALIZE"] and tuned["PING_PONG"] and tuned["BLOCKS_IN_TURN"]


def test_head_dims_fill_the_conversion_vectors():
    """Backend.scaled_cast hands kernels/convert.tsl (B, H, N, D) buffers whose element counts it
    takes as whole vectors of 8 (its multiple_of(n, 8)): every head dim the ops take is one."""
    assert all(d % 8 == 0 for d in tessel.ops.common.HEAD_DIMS)


def test_lean_tiles_live_rows():
    """On the GPU a unit of fewer live rows (G·Nq) than its query tile bounds its partial states
    to them, rounded up to 1, 8, 16 or 32 (LIVE_ROWS); a full tile and the interpreter do not."""
    tiles = tessel.ops.lean_tiles
    assert tiles(16, True, 1)["LIVE_ROWS"] == 1 and tiles(16, True, 2)["LIVE_ROWS"] == 8
    assert tiles(16, True, 8)["LIVE_ROWS"] == 8
    assert [("LIVE_ROWS" in tiles(bm, True, rows)) for bm, rows in
            ((16, 9), (16, 16), (32, 17), (32, 32), (64, 33), (128, 128))] == [False] * 6
    assert "LIVE_ROWS" not in tiles(16, True) and "LIVE_ROWS" not in tiles(16, False, 1)
    assert {k: v for k, v in tiles(16, True, 1).items() if k != "LIVE_ROWS"} == tiles(16, True)


class FakeGPU:
    """The backend facts the ops' choices read, of an H100/H200 (132 SMs)."""
    gpu = True

    @staticmethod
    def multiprocessor_count():
        return 132


class FakeInterpreter(FakeGPU):
    gpu = False


def test_lean_clusters():
    """lean_attention's thread-block clusters to try, best first: one unit per cluster (8 CTAs
    with key blocks of 128, 16 with 64, 4 and 2 with 128), as many CTAs as key blocks at most,
    each CTA at most LEAN_CLUSTER_KEYS keys (short decodes), all units on the SMs, the received
    states (the live rows rounded up to 1, 8, 16 or 32) beside the pipeline; none on sm_80, for
    more than 32 live rows, nor on the interpreter."""
    def clusters(units, Nk, rows=1, D=128, sms=132, target="sm_90a"):
        return lean_clusters(units, Nk, D, rows, sms, target)
    assert clusters(8, 1024) == [(8, 128), (16, 64), (4, 128), (2, 128)]   # B1 H8
    assert clusters(8, 4096) == [(8, 128), (16, 64)]
    assert clusters(8, 8192) == [(16, 64)] and clusters(8, 16384) == []
    assert clusters(32, 1024) == [(4, 128), (2, 128)]                     # B1 H32
    assert clusters(64, 1024) == [(2, 128)] and clusters(80, 1024) == []
    assert clusters(8, 100) == []               # one key block of 128: nothing to split
    assert clusters(8, 300) == [(2, 128)]       # three: CTAs of two blocks and one
    assert clusters(8, 1024, target="sm_80") == []
    assert clusters(8, 1024, rows=32) == [(4, 128), (2, 128)]   # 15 or 7 states of 32 rows: no
    assert clusters(8, 1024, rows=33) == []
    assert [lean_live_rows(r) for r in (1, 2, 8, 9, 16, 17, 32, 33)] == [1, 8, 8, 16, 16, 32, 32,
                                                                           None]
    assert lean_cluster_configurations(16, 128) == [
        (size, bn, live) for live in (1, 8, 16) for size, bn in LEAN_CLUSTERS]
    assert LEAN_CLUSTERS[0] == (8, 128)
    assert lean_cluster_configurations(32, 128) == [(4, 128, 32), (2, 128, 32)]
    assert lean_cluster_configurations(64, 128) == []
    assert lean_cluster(tessel.ops.common.Backend(False), 8, 1024, 128, 1, {}) is None


def test_lean_cluster_takes_a_resident_kernel(monkeypatch):
    """lean_cluster on a GPU: the first cluster of lean_clusters whose compiled kernel the GPU holds
    a cluster per unit of at once (or cannot tell), skipping kernels missing from the precompiled
    bundles; None when none is left."""
    import tessel.ops.lean as lean
    monkeypatch.setattr(lean.gpu, "target", lambda: "sm_90a")
    resident = {}                # CLUSTER -> clusters held at once, or an error

    class Kernel:
        def specialize(self, **constants):
            found = resident[constants["CLUSTER"]]
            if isinstance(found, Exception):
                raise found
            assert constants["D"] == 128 and constants["LIVE_ROWS"] == 1
            return type("Specialised", (), {"resident_clusters": found})()

    class GPU(FakeGPU):
        @staticmethod
        def kernel(tsl, name):
            return Kernel()

    def choice():
        return lean.lean_cluster(GPU(), 8, 1024, 128, 1, dict(D=128))
    resident.update({8: 15, 16: 14, 4: 30, 2: 66})
    assert choice() == dict(CLUSTER=8, BLOCK_N=128, LIVE_ROWS=1)
    resident.update({8: 7})                                 # 8 units, 7 clusters: waves
    assert choice() == dict(CLUSTER=16, BLOCK_N=64, LIVE_ROWS=1)
    resident.update({16: tessel.errors.BundleNotFoundError("no bundle")})
    assert choice() == dict(CLUSTER=4, BLOCK_N=128, LIVE_ROWS=1)
    resident.update({4: None})                              # the driver cannot tell
    assert choice() == dict(CLUSTER=4, BLOCK_N=128, LIVE_ROWS=1)
    resident.update({4: 3, 2: 7})
    assert choice() is None


def test_forward_programs_per_head():
    """The forward's programs per head: one per query block, fewer for tiles that take blocks in
    turn on a GPU when blocks x heads outnumber the SMs and the fewer programs (all resident)
    take no more rounds than one per block."""
    from tessel.ops.flash import _query_programs

    ws = {"WARP_SPECIALIZE": True, "NUM_WARPS": 8, "BLOCKS_IN_TURN": True}
    assert _query_programs(FakeGPU, 32, 32, ws) == 4        # B1 H32 N4096: 8 blocks each
    assert _query_programs(FakeGPU, 128, 32, ws) == 4
    assert _query_programs(FakeGPU, 8, 64, ws) == 2
    assert _query_programs(FakeGPU, 12, 40, ws) == 3
    assert _query_programs(FakeGPU, 8, 8, ws) == 8          # fewer blocks than SMs: one each
    assert _query_programs(FakeGPU, 32, 40, ws) == 32       # 3 a head: 11 rounds against 10
    assert _query_programs(FakeGPU, 32, 200, ws) == 32      # a program a head: 64 rounds, not 49
    assert _query_programs(FakeGPU, 32, 32, {"WARP_SPECIALIZE": True, "NUM_WARPS": 8}) == 32
    assert _query_programs(FakeInterpreter, 32, 32, ws) == 32
    assert _query_programs(FakeGPU, 0, 32, ws) == 0 and _query_programs(FakeGPU, 4, 0, ws) == 4


def test_kl_forward_table():
    """StreamKL's forward takes its form for long grids (query blocks of 256 rows) on Hopper at
    the head dims that have one, once those blocks number at least 1.5 per SM."""
    from tessel.ops.kl import LONG_FORWARD, forward_table

    assert forward_table(FakeGPU, 16, 4096, 128, "sm_90a") == LONG_FORWARD   # 256 blocks
    assert forward_table(FakeGPU, 13, 4096, 128, "sm_90a") == LONG_FORWARD   # 208 >= 198
    assert forward_table(FakeGPU, 12, 4096, 128, "sm_90a") == "attention_kl_fwd"   # 192
    assert forward_table(FakeGPU, 16, 2048, 128, "sm_90a") == "attention_kl_fwd"   # 128
    assert forward_table(FakeGPU, 80, 3000, 128, "sm_90a") == LONG_FORWARD   # ragged: 12 a head
    assert forward_table(FakeGPU, 16, 8192, 64, "sm_90a") == "attention_kl_fwd"    # no entry
    assert forward_table(FakeGPU, 16, 8192, 128, "sm_90") == "attention_kl_fwd"
    assert forward_table(FakeInterpreter, 16, 8192, 128, "sm_90a") == "attention_kl_fwd"


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
@pytest.mark.parametrize("case", list(LEAN))
def test_lean_attention(case, dtype):
    B, H, HKV, Nq, Nk, D, causal = LEAN[case]
    (q, k, v), (q64, k64, v64) = _inputs(case, dtype, (B, H, Nq, D), (B, HKV, Nk, D),
                                         (B, HKV, Nk, D))
    want, _ = ref.decode_attention(q64, k64, v64, np.float32(1 / np.sqrt(D)), causal)
    for strategy in tessel.ops.LEAN_STRATEGIES:       # the two lowerings of its stream_k
        _check_out(tessel.lean_attention(q, k, v, causal=causal, strategy=strategy), want, dtype)


# ---------------------------------------------------------------------------------------------
# Multi-Token Attention against the reference code's definition (padding + conv2d), float64

def mta_conv2d_reference(q, k, v, wt, scale, do=None):
    """MTA as the MTA reference code computes it, in float64: S0 = Q Kᵀ · scale with future
    positions set to 0, padded with cq - 1 zero rows on top and (ck - 1) // 2 zero columns on the
    left, ck // 2 on the right; conv2d per head with Wt (H, 1, cq, ck) (groups=H: a
    cross-correlation, C[i, j] = Σ_{a,b} Wt[h, 0, a, b] · X[i + a, j + b]); -inf on future
    positions; softmax; · V.  Returns O, and with `do` also (O, dWt) for the loss Σ O ∘ dO."""
    B, H, N, D = q.shape
    k, v = (np.repeat(x, H // x.shape[1], axis=1) for x in (k, v))
    cq, ck = wt.shape[2:]
    future = np.triu(np.ones((N, N), bool), 1)
    s0 = np.where(future, 0.0, np.einsum("bhid,bhjd->bhij", q, k) * scale)
    x = np.zeros((B, H, N + cq - 1, N + ck - 1))
    x[:, :, cq - 1:, (ck - 1) // 2:(ck - 1) // 2 + N] = s0
    c = np.zeros((B, H, N, N))
    for a in range(cq):
        for b in range(ck):
            c += wt[None, :, 0, a, b, None, None] * x[:, :, a:a + N, b:b + N]
    c = np.where(future, -np.inf, c)
    p = np.exp(c - c.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    o = p @ v
    if do is None:
        return o
    dp = do @ v.transpose(0, 1, 3, 2)
    dc = p * (dp - (p * dp).sum(axis=-1, keepdims=True))
    dwt = np.zeros(wt.shape)
    for a in range(cq):
        for b in range(ck):
            dwt[:, 0, a, b] = (dc * x[:, :, a:a + N, b:b + N]).sum(axis=(0, 2, 3))
    return o, dwt


def test_mta_conv2d_reference_weight_grad():
    """The reference's dWt is the gradient of its own forward (central differences)."""
    rng = np.random.default_rng(3)
    q, k, v, do = (rng.standard_normal((1, 2, 6, 4)) for _ in range(4))
    wt = rng.standard_normal((2, 1, 3, 4)) * 0.5
    _, dwt = mta_conv2d_reference(q, k, v, wt, 0.5, do)
    eps, num = 1e-6, np.zeros(wt.shape)
    for i in np.ndindex(wt.shape):
        d = np.zeros(wt.shape)
        d[i] = eps
        num[i] = ((mta_conv2d_reference(q, k, v, wt + d, 0.5) -
                   mta_conv2d_reference(q, k, v, wt - d, 0.5)) * do).sum() / (2 * eps)
    np.testing.assert_allclose(dwt, num, rtol=1e-6, atol=1e-8)


MTA = {  # B, H, HKV, N, D, cq, ck: cq 1..4, odd and even ck, ragged N
    "cq1-ck1": (1, 2, 2, 11, 16, 1, 1),
    "cq2-ck4-batch2": (2, 2, 1, 19, 16, 2, 4),
    "cq3-ck5-gqa2": (1, 4, 2, 29, 32, 3, 5),
    "cq4-ck2": (1, 2, 1, 23, 16, 4, 2),
    "cq4-ck3-n-lt-cq": (1, 2, 2, 3, 16, 4, 3),
}


def _mta_inputs(case, dtype):
    """q, k, v (and their float64 values as the kernels see them), the conv2d weight Wt
    (H, 1, cq, ck) float64 near the identity (C ~ S0, as trained MTA), and its float32 values."""
    B, H, HKV, N, D, cq, ck = MTA[case]
    arrays, seen = _inputs(case, dtype, (B, H, N, D), (B, HKV, N, D), (B, HKV, N, D))
    wt = np.random.default_rng(7).standard_normal((H, 1, cq, ck)) * 0.3
    wt[:, 0, cq - 1, (ck - 1) // 2] += 1.0          # the current row, the centred key
    return arrays, seen, wt, wt.astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
@pytest.mark.parametrize("case", list(MTA))
def test_mta_attention(case, dtype):
    """The default layout takes the reference's conv2d kernel; layout='tessel' its query-flipped
    (H, cq, ck) form, with the same result."""
    (q, k, v), (q64, k64, v64), wt, wt32 = _mta_inputs(case, dtype)
    D = q.shape[3]
    o = tessel.mta_attention(q, k, v, wt)
    _check_out(o, mta_conv2d_reference(q64, k64, v64, wt32, np.float32(1 / np.sqrt(D))), dtype)
    w = np.ascontiguousarray(wt[:, 0, ::-1, :])      # W[h, a, b] = Wt[h, 0, cq - 1 - a, b]
    np.testing.assert_array_equal(tessel.mta_attention(q, k, v, w, layout="tessel"), o)
    np.testing.assert_array_equal(tessel.mta_attention(q, k, v, wt, layout="conv2d"), o)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
@pytest.mark.parametrize("case", ["cq2-ck4-batch2", "cq3-ck5-gqa2", "cq4-ck3-n-lt-cq"])
def test_mta_weight_grad_layout(case, dtype):
    """The op's backward (the host code of its autograd Function, run on the interpreter) gives
    dW in the layout of the weight it was given: (H, 1, cq, ck) against the reference's dWt for
    a conv2d kernel, the query-flipped (H, cq, ck) for layout='tessel'."""
    from tessel.ops import common, mta
    (q, k, v), (q64, k64, v64), wt, wt32 = _mta_inputs(case, dtype)
    do, do64 = (x[0] for x in _inputs(case + "-do", dtype, q.shape))
    scale = float(np.float32(1 / np.sqrt(q.shape[3])))
    be, elem = common.Backend(gpu=False), "f16" if dtype == np.float16 else "bf16"
    o, lse = mta._mta_forward(be, q, k, v, mta.kernel_weight(be, wt, "conv2d"), scale, elem)
    dq, dk, dv, dwt = mta._mta_backward(be, q, k, v, wt, "conv2d", o, lse, do, scale, elem)
    assert dq.dtype == dtype and dwt.dtype == np.float32 and dwt.shape == wt.shape
    _, want = mta_conv2d_reference(q64, k64, v64, wt32, scale, do64)
    u = U[dtype]
    err = np.max(np.abs(dwt - want))
    assert err <= 2 * u + 4 * u * np.max(np.abs(want)), err
    w = np.ascontiguousarray(wt[:, 0, ::-1, :])
    *_, dw = mta._mta_backward(be, q, k, v, w, "tessel", o, lse, do, scale, elem)
    assert dw.shape == w.shape
    np.testing.assert_allclose(dw, dwt[:, 0, ::-1, :], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
@pytest.mark.parametrize("case", list(MTA))
def test_mta_decode(case, dtype):
    """The decode step is row N - 1 of the reference, from a rolling cache of the cq newest
    queries, from all N, and in between; in both weight layouts."""
    (q, k, v), (q64, k64, v64), wt, wt32 = _mta_inputs(case, dtype)
    N, D, cq = q.shape[2], q.shape[3], wt.shape[2]
    want = mta_conv2d_reference(q64, k64, v64, wt32, np.float32(1 / np.sqrt(D)))[:, :, -1:]
    for qn in sorted({min(cq, N), min(cq + 2, N), N}):
        recent = np.ascontiguousarray(q[:, :, N - qn:])
        o = tessel.mta_decode(recent, k, v, wt)
        _check_out(o, want, dtype)
    w = np.ascontiguousarray(wt[:, 0, ::-1, :])
    np.testing.assert_array_equal(tessel.mta_decode(recent, k, v, w, layout="tessel"), o)


KL = {  # B, H, HKT, HKS, Nq, Nk, DT, DS, causal, scale
    "gqa-dt64-ds32": (2, 4, 2, 1, 21, 33, 64, 32, False, None),
    "causal-one-scale": (1, 2, 1, 2, 30, 30, 32, 32, True, 0.2),
    "two-scales": (1, 2, 2, 1, 9, 40, 16, 32, False, (0.3, 0.1)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
@pytest.mark.parametrize("case", list(KL))
def test_attention_kl(case, dtype):
    B, H, HKT, HKS, Nq, Nk, DT, DS, causal, scale = KL[case]
    (qt, kt, qs, ks), xs = _inputs(case, dtype, (B, H, Nq, DT), (B, HKT, Nk, DT),
                                   (B, H, Nq, DS), (B, HKS, Nk, DS))
    if scale is None:
        scales = (1 / np.sqrt(DT), 1 / np.sqrt(DS))
    else:
        scales = scale if isinstance(scale, tuple) else (scale, scale)
    want, lse_t, lse_s = ref.kl_fwd(*xs, *map(np.float32, scales), causal=causal)
    rows = tessel.attention_kl(qt, kt, qs, ks, causal=causal, scale=scale, reduction="none")
    assert rows.dtype == np.float32 and rows.shape == (B, H, Nq)
    magnitude = max(np.max(np.abs(want)), np.max(np.abs(lse_t)), np.max(np.abs(lse_s)))
    tol = 1e-5 + 4e-6 * magnitude
    np.testing.assert_allclose(rows, want, rtol=0, atol=tol)
    for reduction, total in (("sum", want.sum()), ("mean", want.mean()),
                             ("batchmean", want.sum() / B)):
        got = tessel.attention_kl(qt, kt, qs, ks, causal=causal, scale=scale, reduction=reduction)
        assert isinstance(got, np.float32)
        assert abs(got - total) <= tol * want.size, (reduction, got, total)


# ---------------------------------------------------------------------------------------------
# argument checks

def _a(*shape, dtype=np.float16):
    return np.zeros(shape, dtype)


Q, K = _a(1, 4, 8, 32), _a(1, 2, 8, 32)
OP_ERRORS = {
    "attention list": (lambda: tessel.attention(Q.tolist(), K, K), TypeError,
                       r"tessel.attention: q must be a NumPy array or a torch tensor \(B, H, N, D\), got list"),
    "attention 3-d": (lambda: tessel.attention(Q[0], K, K), ValueError,
                      r"tessel.attention: q must have 4 dimensions \(B, H, N, D\), got shape "
                      r"\(4, 8, 32\)"),
    "attention dtypes": (lambda: tessel.attention(Q, K.astype(np.float32), K), TypeError,
                         r"tessel.attention: the inputs must share one dtype, got q float16, "
                         r"k float32, v float16"),
    "attention float64": (lambda: tessel.attention(*(x.astype(np.float64) for x in (Q, K, K))),
                          TypeError, r"tessel.attention: unsupported dtype float64"),
    "attention head dim": (lambda: tessel.attention(_a(1, 4, 8, 48), _a(1, 2, 8, 48),
                                                    _a(1, 2, 8, 48)),
                           ValueError, r"tessel.attention: head dim 48 of q is not supported "
                                       r"\(supported: 16, 32, 64, 128\)"),
    "attention head dims differ": (lambda: tessel.attention(Q, _a(1, 2, 8, 64), _a(1, 2, 8, 64)),
                                   ValueError, r"head dims must match, got q 32, k 64"),
    "attention gqa": (lambda: tessel.attention(_a(1, 3, 8, 32), K, K), ValueError,
                      r"tessel.attention: the 3 heads of q must be a multiple of the 2 heads of "
                      r"k \(GQA\)"),
    "attention k vs v": (lambda: tessel.attention(Q, K, _a(1, 2, 9, 32)), ValueError,
                         r"the shapes of k and v must match"),
    "attention batch": (lambda: tessel.attention(Q, _a(2, 2, 8, 32), _a(2, 2, 8, 32)), ValueError,
                        r"batch sizes must match, got q 1, k 2"),
    "attention causal lengths": (lambda: tessel.attention(Q, _a(1, 2, 9, 32), _a(1, 2, 9, 32),
                                                          causal=True),
                                 ValueError, r"causal attention needs as many queries as keys"),
    "attention scale": (lambda: tessel.attention(Q, K, K, scale="x"), TypeError,
                        r"tessel.attention: scale must be a real number, got str"),
    "attention inf scale": (lambda: tessel.attention(Q, K, K, scale=float("inf")), ValueError,
                            r"scale must be finite"),
    "lean too many rows": (lambda: tessel.lean_attention(_a(1, 4, 65, 32), K, K), ValueError,
                           r"tessel.lean_attention: a unit holds the query rows of one GQA group, "
                           r"at most 128: got 2 query heads per KV head x Nq 65 = 130 rows"),
    "lean too many rows mqa": (lambda: tessel.lean_attention(_a(1, 32, 5, 32), _a(1, 1, 8, 32),
                                                             _a(1, 1, 8, 32)), ValueError,
                               r"at most 128: got 32 query heads per KV head x Nq 5 = 160 rows"),
    "lean no queries": (lambda: tessel.lean_attention(_a(1, 4, 0, 32), K, K), ValueError,
                        r"decode takes at least one query row, got Nq 0"),
    "lean causal": (lambda: tessel.lean_attention(Q, _a(1, 2, 4, 32), _a(1, 2, 4, 32),
                                                  causal=True),
                    ValueError, r"causal decode needs at least as many keys as queries"),
    "lean strategy": (lambda: tessel.lean_attention(_a(1, 4, 1, 32), K, K, strategy="split"),
                      ValueError, r"strategy must be one of stream-k, split-k, got 'split'"),
    "mta lengths": (lambda: tessel.mta_attention(Q, _a(1, 2, 9, 32), _a(1, 2, 9, 32),
                                                 _a(4, 1, 3, 5, dtype=np.float32)),
                    ValueError, r"tessel.mta_attention: query and key lengths \(MTA is causal "
                                r"self-attention\) must match, got q 8, k 9"),
    "mta weight heads": (lambda: tessel.mta_attention(Q, K, K, _a(2, 1, 3, 5, dtype=np.float32)),
                         ValueError, r"weight must have shape \(H=4, 1, cq >= 1, ck >= 1\) with "
                                     r"layout='conv2d', got \(2, 1, 3, 5\)"),
    "mta weight not conv2d": (lambda: tessel.mta_attention(Q, K, K, _a(4, 2, 3, 5,
                                                                       dtype=np.float32)),
                              ValueError, r"weight must have shape \(H=4, 1, cq >= 1, ck >= 1\)"),
    "mta 3-d weight, default layout": (
        lambda: tessel.mta_attention(Q, K, K, _a(4, 3, 5, dtype=np.float32)), ValueError,
        r"weight must have shape \(H=4, 1, cq, ck\) with layout='conv2d' \(the default: the "
        r"conv2d kernel of the MTA reference\), got \(4, 3, 5\); a weight \(H, cq, ck\) in "
        r"tessel's layout \(query axis flipped\) needs layout='tessel'"),
    "mta 4-d weight, tessel layout": (
        lambda: tessel.mta_attention(Q, K, K, _a(4, 1, 3, 5, dtype=np.float32), layout="tessel"),
        ValueError, r"weight must have shape \(H=4, cq, ck\) with layout='tessel', got "
                    r"\(4, 1, 3, 5\); a conv2d kernel \(H, 1, cq, ck\) of the MTA reference "
                    r"needs layout='conv2d' \(the default\)"),
    "mta tessel weight heads": (
        lambda: tessel.mta_attention(Q, K, K, _a(2, 3, 5, dtype=np.float32), layout="tessel"),
        ValueError, r"weight must have shape \(H=4, cq >= 1, ck >= 1\) with layout='tessel', "
                    r"got \(2, 3, 5\)"),
    "mta layout": (lambda: tessel.mta_attention(Q, K, K, _a(4, 1, 3, 5, dtype=np.float32),
                                                layout="torch"),
                   ValueError, r"layout must be 'conv2d' \(weight \(H, 1, cq, ck\), the conv2d "
                               r"kernel of the MTA reference\) or 'tessel' \(weight "
                               r"\(H, cq, ck\)\), got 'torch'"),
    "mta empty window": (lambda: tessel.mta_attention(Q, K, K, _a(4, 1, 0, 5, dtype=np.float32)),
                         ValueError, r"weight must have shape"),
    "mta weight dtype": (lambda: tessel.mta_attention(Q, K, K, np.zeros((4, 1, 3, 5), np.int32)),
                         TypeError, r"weight must be a float array, got int32"),
    "mta weight list": (lambda: tessel.mta_attention(Q, K, K, [[[[1.0]]]]), TypeError,
                        r"weight must be a NumPy array \(H, 1, cq, ck\), got list"),
    "mta decode rows": (lambda: tessel.mta_decode(_a(1, 4, 2, 32), K, K,
                                                  _a(4, 1, 3, 5, dtype=np.float32)),
                        ValueError, r"tessel.mta_decode: q must hold the queries of the newest "
                                    r"min\(cq, N\) = 3 to N = 8 positions \(the query window "
                                    r"reaches cq = 3 rows into the past\), got 2 rows"),
    "mta decode too many rows": (lambda: tessel.mta_decode(_a(1, 4, 9, 32), K, K,
                                                           _a(4, 1, 3, 5, dtype=np.float32)),
                                 ValueError, r"newest min\(cq, N\) = 3 to N = 8 positions"),
    "mta decode no keys": (lambda: tessel.mta_decode(_a(1, 4, 0, 32), _a(1, 2, 0, 32),
                                                     _a(1, 2, 0, 32),
                                                     _a(4, 1, 3, 5, dtype=np.float32)),
                           ValueError, r"tessel.mta_decode: decode needs at least one key, "
                                       r"got N 0"),
    "mta decode 3-d weight": (lambda: tessel.mta_decode(_a(1, 4, 3, 32), K, K,
                                                        _a(4, 3, 5, dtype=np.float32)),
                              ValueError, r"tessel.mta_decode: weight must have shape \(H=4, 1, "
                                          r"cq, ck\) with layout='conv2d'"),
    "kl query heads": (lambda: tessel.attention_kl(Q, K, _a(1, 2, 8, 32), K), ValueError,
                       r"tessel.attention_kl: query heads must match, got q_t 4, q_s 2"),
    "kl student gqa": (lambda: tessel.attention_kl(Q, K, Q, _a(1, 3, 8, 32)), ValueError,
                       r"the 4 heads of q_s must be a multiple of the 3 heads of k_s \(GQA\)"),
    "kl key lengths": (lambda: tessel.attention_kl(Q, K, Q, _a(1, 2, 9, 32)), ValueError,
                       r"key lengths must match, got k_t 8, k_s 9"),
    "kl teacher dims": (lambda: tessel.attention_kl(Q, _a(1, 2, 8, 64), Q, K), ValueError,
                        r"teacher head dims must match, got q_t 32, k_t 64"),
    "kl reduction": (lambda: tessel.attention_kl(Q, K, Q, K, reduction="max"), ValueError,
                     r"reduction must be one of none, sum, mean, batchmean, got 'max'"),
    "kl scale pair": (lambda: tessel.attention_kl(Q, K, Q, K, scale=(1.0,)), ValueError,
                      r"scale must be a number or \(scale_t, scale_s\)"),
    "kl dtypes": (lambda: tessel.attention_kl(Q, K, Q.astype(np.float32), K), TypeError,
                  r"the inputs must share one dtype, got q_t float16, k_t float16, q_s float32"),
}


@pytest.mark.parametrize("case", list(OP_ERRORS))
def test_op_errors(case):
    call, error, message = OP_ERRORS[case]
    with pytest.raises(error, match=message):
        call()


def test_op_tuning(monkeypatch, tmp_path):
    """TESSEL_TUNE_OPS=1: the ops time the table's tiles and the candidates once per call shape
    (here on the interpreter, the GPU's timing being the same code) and keep the choice on disk;
    the trials leave the accumulated outputs as a single launch would (dQ of the backward)."""
    from tessel.ops import common, flash, tuning
    monkeypatch.setenv("TESSEL_TUNE_OPS", "1")
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(common, "_tuners", {})
    monkeypatch.setattr(tuning, "CANDIDATES", {("attention_fwd", 16): [(16, 16, 4, 1), (32, 16, 4, 1)],
                                               ("attention_bwd", 16): [(16, 16, 4, 1), (16, 32, 4, 1)]})
    B, H, HKV, Nq, Nk, D = 1, 2, 1, 40, 37, 16
    (q, k, v, do), (q64, k64, v64, do64) = _inputs("tune", np.float16, (B, H, Nq, D),
                                                   (B, HKV, Nk, D), (B, HKV, Nk, D), (B, H, Nq, D))
    scale = np.float32(1 / np.sqrt(D))
    be = common.backend("attention", {"q": q})
    o, lse = flash._attention_forward(be, q, k, v, True, scale, "f16")
    want_o, _ = ref.attention_fwd(q64, k64, v64, scale, causal=True)
    _check_out(o, want_o, np.float16)
    dq, dk, dv = flash._attention_backward(be, q, k, v, o, lse, do, True, scale, "f16")
    wants = ref.attention_bwd(q64, k64, v64, do64, scale, causal=True)
    for got, want in zip((dq, dk, dv), wants):
        _check_out(got, want, np.float16)
    tuners = list(common._tuners.values())
    assert [t.tunings for t in tuners] == [1, 1]
    assert len(list((tmp_path / "autotune").iterdir())) == 2
    flash._attention_forward(be, q, k, v, True, scale, "f16")      # the same shape: no tuning
    assert [t.tunings for t in tuners] == [1, 1]
    monkeypatch.setattr(common, "_tuners", {})                      # a new process: from disk
    flash._attention_forward(be, q, k, v, True, scale, "f16")
    assert [t.tunings for t in common._tuners.values()] == [0]
    # Without the LSE (the op without autograd): the tuner passes None through.
    o, none = flash._attention_forward(be, q, k, v, True, scale, "f16", with_lse=False)
    assert none is None
    _check_out(o, want_o, np.float16)
