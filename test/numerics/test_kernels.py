"""Numerical tests of every kernel in kernels/*.tsl on the CPU interpreter (tessel-run), against the
independent float64 references of reference.py.

    TESSEL_BUILD_DIR=build /usr/bin/python3 -m pytest -s test/numerics/test_kernels.py

`-s` shows, per case and output, the max abs error, the max rel error (max abs error / max |ref|) and
the limit.  Inputs are drawn in float64, rounded to the element type (f16 or bf16, the kernels'
DTYPE constexpr), and the references see exactly those rounded values; so every difference comes
from the kernels' own arithmetic.  Sizes are small and ragged (never multiples of the tile sizes),
with GQA, strided (B, N, H, D) views, causal masks, fully masked rows (Nk = 0), ±1e4-magnitude
scores and degenerate shapes.

TOLERANCES (the table TOL below).  A tensor passes iff  max|got - ref| <= atol + rtol * M  with
M = max|ref| unless stated; infinities (LSE = -inf of an empty row) must match exactly, and every
element must have been written (outputs are pre-filled with 7.0).  u = unit roundoff of the element
type (f16: 2^-11 = 4.9e-4, bf16: 2^-8 = 3.9e-3); MMAs take element-type operands and accumulate in
f32 (u32 = 2^-24 = 6e-8).

    dtype   "out" atol, rtol      "grad" atol, rtol     "f32" atol, rtol
    f16     1.95e-3, 9.8e-4       9.8e-4, 1.95e-3       1e-5, 4e-6
    bf16    1.56e-2, 7.8e-3       7.8e-3, 1.56e-2       1e-5, 4e-6

  * "out" (4u, 2u): outputs stored in the element type: O of every forward, the decode O.  Two
    roundings to the element type in the data path: P before the P·V MMA (|ΔO| <= u·Σp|v| <= u·max|V|,
    and max|V| ~ 4 for N(0,1) values) and the final store (<= u·|O|).  Observed: <= 1.9u absolute.
  * "grad" (2u, 4u): dQ (f32, atomically accumulated), dK, dV, dKs (element type), dQs, dW (f32).
    dK/dV are stored in the element type (<= u·M); P, dS, dT are rounded to the element type before
    their MMAs, each term off by <= u relative, and these errors have random signs over the <= 100
    summed rows, so they stay below u·M in practice.  Observed: <= 1.1u·M.
    The backward kernels are checked against the reference of their contract: Delta = rowsum(dO∘O)
    of the STORED (rounded) O, computed in float64 from the forward's output (FlashAttention
    computes Delta from the stored O, and with a near one-hot softmax the O rounding, times
    scale·|K| ~ 20, dominates the exact gradient, which is ~0 there).  The error against the exact
    gradient (exact Delta) is printed for information.
    MTA's dW additionally gets 8·u32 of the magnitude of its terms, Σ_{i,j} P·(|dO||V| + |dO||O|)·|S0|
    (reference.mta_dw_term_magnitude): with ±1e4 scores the softmax rows are one-hot, dC = P·(dP -
    Delta) cancels exactly in exact arithmetic (exact dW ~ 1e-8) while its terms are ~1e7, so the
    f32 summation order of dP and Delta (shuffle trees on a GPU, sequential on the interpreter)
    decides the result: 3e-2 was observed on an H100, 2e-9 of the terms.  For the other cases the
    addition is ~1e-2 of the "grad" limit.
  * "f32" (1e-5, 4e-6 ~ 64·u32): outputs computed from the element-type inputs by f32 arithmetic only:
    LSE, KL, Delta, the decode LSE.  f32 accumulation of D <= 128 terms and f32 exp/log: error
    <= ~64·u32 relative to the magnitude of the TERMS, which is M for LSE (~1e3 for the ±1e4
    scores), max(|KL|, |LSE_t|, |LSE_s|) for KL = Σp(s-t) - LSE_t + LSE_s, and max_i Σ_d |O·dO| for
    Delta.  Independent of the element type.  MTA's forward with the convolved keys multiplies by
    Kc stored as hi + lo in the element type (relative error <= u² per term: 2^-16 in bf16, 2^-22
    in f16): held to the same limit (worst observed: 22 % of it, bf16).
"""

import os
import shutil
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_launch as kl  # noqa: E402
import reference as ref  # noqa: E402
import tessel_run as tr  # noqa: E402

U = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}
# dW of MTA: 8·u32 of Σ|terms| on top of "grad" (the rounding of f32 dot products of D <= 128
# terms with random-sign errors, ~sqrt(D)·u32).
DW_TERM_RTOL = 8 * 2.0 ** -24
TOL = {dt: {"out": (4 * u, 2 * u), "grad": (2 * u, 4 * u), "f32": (1e-5, 4e-6)} for dt, u in U.items()}
DTYPES = ("f16", "bf16")


def scaled_tol(dt, cls, magnitude):
    """The tolerance TOL[dt][cls] with rtol applied to `magnitude` (the magnitude of the terms, for
    "f32" outputs whose rounding scales with it rather than with their value): (atol', 0)."""
    atol, rtol = TOL[dt][cls]
    return atol + rtol * magnitude, 0.0


def _seed(*key):
    """A generator seeded by the case's name (deterministic across runs and case orders)."""
    return np.random.default_rng(list(repr(key).encode()))


def _header(text):
    print(f"\n  {text}")


def _unwritten(name, *arrays):
    for a in arrays:
        assert not np.any(a == 7.0), f"{name}: elements left unwritten (sentinel 7.0)"


# ---------------------------------------------------------------------------------------------
# test_reference: the references themselves (vs naive loops and finite differences)

def test_reference_selftest():
    rng = np.random.default_rng(20261122)
    with np.errstate(all="raise", under="ignore"):
        ref._selftest_attention(rng)
        ref._selftest_mta(rng)
        ref._selftest_kl(rng)


def test_tessel_run_roundtrip():
    """The helper's plumbing: inputs come back rounded exactly as round_to rounds them, outputs keep
    their shapes, and a failing run raises TesselRunError with tessel-run's message."""
    x = np.random.default_rng(1).standard_normal(15) * 100
    for dt in DTYPES:
        out = tr.run("attention.tsl", "attention_bwd_preprocess", (1, 1),
                     dict(o=tr.zeros((1, 16), dt), do=tr.Buffer(np.append(x, 0.0).reshape(1, 16), dt),
                          lse=tr.zeros(1, "f32"), delta=tr.full(4, 7.0, "f32"),
                          lse_rows=tr.zeros(4, "f32"), sdob=16, sdoh=16, sdon=16, H=1, Nq=1,
                          NQS=4),
                     dict(D=16, BLOCK_M=2, DTYPE=dt))
        assert out["do"].shape == (1, 16) and out["delta"].shape == (4,)
        assert np.array_equal(out["do"][0, :15], tr.round_to(x, dt)), dt
        assert out["delta"][0] == 0.0
    with pytest.raises(tr.TesselRunError, match=r"out-of-bounds load of buffer #0 at element 4 \(size 4\)"):
        tr.run("attention.tsl", "attention_bwd_preprocess", (1, 1),
               dict(o=tr.zeros(4, "f16"), do=tr.zeros(4, "f16"), lse=tr.zeros(1, "f32"),
                    delta=tr.zeros(4, "f32"), lse_rows=tr.zeros(4, "f32"), sdob=16, sdoh=16,
                    sdon=16, H=1, Nq=1, NQS=4), dict(D=16, BLOCK_M=2))


def test_tessel_run_missing_binary(monkeypatch, tmp_path):
    monkeypatch.setenv("TESSEL_BUILD_DIR", str(tmp_path))
    with pytest.raises(tr.TesselRunError, match="tessel-run not found at .*TESSEL_BUILD_DIR"):
        tr.run("attention.tsl", "attention_bwd_preprocess", 1, {})


# ---------------------------------------------------------------------------------------------
# attention.tsl: attention_fwd, attention_bwd_preprocess, attention_bwd

ATTN_CASES = {  # B, H, HKV, Nq, Nk, D, causal, BM, BN, layout, input scale, score scale (None: 1/sqrt(D))
    "gqa2-ragged":        (2, 4, 2, 70, 90, 64, False, 32, 16, "bnhd", 1.0, None),
    "causal-gqa2":        (1, 2, 1, 100, 100, 64, True, 32, 16, "bhnd", 1.0, None),
    "causal-d128":        (1, 2, 2, 37, 37, 128, True, 16, 16, "bnhd", 1.0, None),
    "gqa3-nq-lt-block":      (1, 3, 1, 21, 50, 64, False, 64, 32, "bhnd", 1.0, None),
    "nq1":                (2, 2, 1, 1, 19, 64, False, 16, 16, "bnhd", 1.0, None),
    "gqa8":               (1, 8, 1, 13, 29, 32, False, 16, 16, "bnhd", 1.0, None),
    "causal-n1":          (1, 2, 2, 1, 1, 32, True, 16, 16, "bhnd", 1.0, None),
    # Five heads of three blocks: the causal orders' groups of heads start with a short one.
    "causal-heads5":      (1, 5, 5, 40, 40, 32, True, 16, 16, "bhnd", 1.0, None),
    # ±1e4 raw scores (q, k ~ N(0, 35^2), D = 64: q·k ~ ±1e4): with 1/sqrt(D) the softmax is one-hot
    # (scaled scores ~1e3), with scale 1e-3 it is spread out but every score passes through 1e4.
    "large-causal":       (1, 4, 2, 45, 45, 64, True, 16, 16, "bnhd", 35.0, None),
    "large-smallscale":   (1, 2, 1, 33, 47, 64, False, 16, 16, "bhnd", 35.0, 1e-3),
    # Tiles of whole warpgroups (64 and 128 rows over 4 warps): on sm_90a the dots run on wgmma,
    # B read through descriptors (K-major keys and MN-major values over two 128-byte column blocks
    # at D = 128), two 64-row slices per warpgroup at BLOCK_M = 128.
    "wgmma-causal-d128":  (1, 2, 1, 150, 150, 128, True, 64, 64, "bhnd", 1.0, None),
    "wgmma-ragged-bm128": (2, 4, 2, 77, 203, 64, False, 128, 128, "bnhd", 1.0, None),
    # More keys than queries per block (the tuned sm_90a backward's 64 x 128): the causal
    # diagonal spans two query blocks of every full key block.
    "causal-bn-gt-bm":    (1, 2, 1, 150, 150, 64, True, 32, 64, "bhnd", 1.0, None),
}


def _run_attention(name, dt):
    B, H, HKV, Nq, Nk, D, causal, BM, BN, layout, s, scale = ATTN_CASES[name]
    scale = kl.f32(scale if scale is not None else 1.0 / np.sqrt(D))
    rng = _seed("attention", name, dt)
    q, k, v = kl.randn(rng, (B, H, Nq, D), dt, s), kl.randn(rng, (B, HKV, Nk, D), dt, s), \
        kl.randn(rng, (B, HKV, Nk, D), dt)
    do = kl.randn(rng, (B, H, Nq, D), dt)
    _header(f"attention {name} [{dt}]: B{B} H{H}/{HKV} Nq{Nq} Nk{Nk} D{D} causal={causal} "
            f"blocks {BM}x{BN} {layout} |q|,|k|~{s} scale {scale:.4g}")
    # Causal orders of the blocks, as the backward's below (num_sms 0: head-major; 1: groups of
    # heads, the first one short where they do not divide the heads).
    O, L = ref.attention_fwd(q, k, v, scale, causal)
    for num_sms in (1, 0) if causal else (1,):
        fwd = kl.attention_fwd(q, k, v, scale, causal, BM, BN, dt, layout, num_sms=num_sms)
        _unwritten("attention_fwd", fwd["o"], fwd["lse"])
        kl.compare(f"O (num_sms {num_sms})", fwd["o"], O, TOL[dt]["out"])
        kl.compare(f"LSE (num_sms {num_sms})", fwd["lse"], L,
                   scaled_tol(dt, "f32", np.max(np.abs(L))))
    # Compiled without its LSE (the op without autograd): the same O.
    alone = kl.attention_fwd(q, k, v, scale, causal, BM, BN, dt, layout, lse=False)
    _unwritten("attention_fwd without LSE", alone["o"])
    kl.compare("O (without LSE)", alone["o"], O, TOL[dt]["out"])

    lse_rows, delta = kl.attention_bwd_preprocess(fwd["o"], do, fwd["lse"], BM, dt, layout)
    kl.compare("Delta (vs rowsum(O_kernel dO))", delta[..., :Nq], (fwd["o"] * do).sum(-1),
               scaled_tol(dt, "f32", np.max(np.abs(fwd["o"] * do).sum(-1))))
    kl.compare("LSE rows", lse_rows[..., :Nq], fwd["lse"], (0.0, 0.0))
    kl.compare("LSE, Delta past Nq == 0", np.concatenate(
        (lse_rows[..., Nq:], delta[..., Nq:])), np.zeros((2 * B, H, delta.shape[-1] - Nq)),
        (0.0, 0.0))
    grads = ref.attention_bwd(q, k, v, do, scale, causal, delta=(fwd["o"] * do).sum(-1))
    exact = ref.attention_bwd(q, k, v, do, scale, causal)
    # Both forms of the query loop: masks on every block, and the fully visible blocks apart;
    # and causal orders of the blocks (num_sms 0: head-major; 3: groups of heads, the first one
    # short where they do not divide the heads; 1000: every head in one group).
    for unmasked_loop, num_sms in ((False, 0), (True, 3), (False, 1000)):
        bwd = kl.attention_bwd(q, k, v, do, lse_rows, delta, scale, causal, BM, BN, dt, layout,
                               unmasked_loop, num_sms)
        _unwritten("attention_bwd", bwd["dk"], bwd["dv"])
        for n, g, want, want_exact in zip(("dQ", "dK", "dV"), (bwd["dq"], bwd["dk"], bwd["dv"]),
                                          grads, exact):
            n += f" (unmasked loop {unmasked_loop}, num_sms {num_sms})"
            kl.compare(n, g, want, TOL[dt]["grad"])
            kl.report(f"{n} end-to-end (exact Delta)", g, want_exact)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", list(ATTN_CASES))
def test_attention(name, dt):
    _run_attention(name, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_attention_backward_negative_scores(dt):
    """Every score far below zero (q >= 0, k <= 0), LSE below -88: exp(0 - LSE) overflows, and a key
    row past Nk (read as zeros, score 0) must stay masked in a ragged key block or its inf times
    the zero row gives NaN in dQ."""
    B, H, HKV, Nq, Nk, D = 1, 2, 1, 70, 45, 64
    rng = _seed("attention-negative-scores", dt)
    q = np.abs(kl.randn(rng, (B, H, Nq, D), dt, 5.0))
    k = -np.abs(kl.randn(rng, (B, HKV, Nk, D), dt, 5.0))
    v, do = kl.randn(rng, (B, HKV, Nk, D), dt), kl.randn(rng, (B, H, Nq, D), dt)
    scale = kl.f32(0.25)
    _header(f"attention backward, scores far below zero [{dt}]: Nq{Nq} Nk{Nk} D{D}")
    fwd = kl.attention_fwd(q, k, v, scale, False, 32, 32, dt)
    assert np.max(fwd["lse"]) < -88, "LSE must be below log(FLT_MIN) for the test to bite"
    lse_rows, delta = kl.attention_bwd_preprocess(fwd["o"], do, fwd["lse"], 32, dt)
    grads = ref.attention_bwd(q, k, v, do, scale, False, delta=(fwd["o"] * do).sum(-1))
    for unmasked_loop in (False, True):
        bwd = kl.attention_bwd(q, k, v, do, lse_rows, delta, scale, False, 32, 32, dt,
                               unmasked_loop=unmasked_loop)
        for n, g, want in zip(("dQ", "dK", "dV"), (bwd["dq"], bwd["dk"], bwd["dv"]), grads):
            kl.compare(f"{n} (unmasked loop={unmasked_loop})", g, want, TOL[dt]["grad"])


def _other_head_unchanged(backward, stats, poison, tolerances):
    """`backward(stats, ws)` -> gradients (arrays of shape (B, H, ...)) of a two-head case, in
    both forms of the backward (WARP_SPECIALIZE ws: the copy engine moves a query block of the
    per-row statistics, rows past NQS reading as zeros, not the next head's). Each head's
    statistics in turn made extreme by `poison(stats, head)` must leave the other head's
    gradients as they are (`tolerances`: name -> (abs, rel); atomically added ones may come in
    another order). Both heads are poisoned in turn: a row offset off by the padding reads the
    head before, one past the row's end the head after."""
    for ws in (False, True):
        clean = backward(stats, ws)
        for bad in (0, 1):
            poisoned = backward(poison(stats, bad), ws)
            for n, tol in tolerances.items():
                kl.compare(f"{n} of head {1 - bad} (warp-specialised {ws})",
                           poisoned[n][:, 1 - bad], clean[n][:, 1 - bad], tol)


def _poisoned(arrays, head, values):
    """Copies of `arrays` with head `head`'s rows set to `values` (one per array)."""
    out = tuple(a.copy() for a in arrays)
    for a, v in zip(out, values):
        a[:, head] = v
    return out


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("causal", (False, True))
def test_attention_backward_other_heads_statistics(causal, dt):
    """A head's gradients read only its own LSE and Delta rows: one head's made extreme (LSE
    -1e30, so that exp(s - LSE) overflows, and Delta NaN) leaves the other's as they are."""
    B, H, Nq, Nk, D, BM, BN = 1, 2, 70, 90, 64, 64, 128
    rng = _seed("attention-other-heads", causal, dt)
    q, k, v, do = (kl.randn(rng, (B, H, n, D), dt) for n in (Nq, Nk, Nk, Nq))
    scale = kl.f32(0.125)
    _header(f"attention backward, the other head's statistics extreme [{dt}]: causal={causal}")
    fwd = kl.attention_fwd(q, k, v, scale, causal, BM, 64, dt)
    stats = kl.attention_bwd_preprocess(fwd["o"], do, fwd["lse"], BM, dt)
    _other_head_unchanged(
        lambda st, ws: kl.attention_bwd(q, k, v, do, *st, scale, causal, BM, BN, dt,
                                        extra_defines=dict(NUM_WARPS=8, WARP_SPECIALIZE=ws)),
        stats, lambda st, head: _poisoned(st, head, (-1e30, np.nan)),
        {"dq": (0.0, 1e-5), "dk": (0.0, 0.0), "dv": (0.0, 0.0)})


@pytest.mark.parametrize("dt", DTYPES)
def test_attention_no_keys(dt):
    """Nk = 0: every row is fully masked -> O = 0, LSE = -inf; the backward grid is empty, dQ = 0."""
    B, H, HKV, Nq, D = 1, 2, 1, 5, 64
    rng = _seed("attention-nk0", dt)
    q, do = kl.randn(rng, (B, H, Nq, D), dt), kl.randn(rng, (B, H, Nq, D), dt)
    kv = np.zeros((B, HKV, 0, D))
    _header(f"attention Nk=0 [{dt}]: B{B} H{H}/{HKV} Nq{Nq} D{D}")
    for causal in (False, True):
        fwd = kl.attention_fwd(q, kv, kv, 0.125, causal, 16, 16, dt)
        kl.compare(f"O == 0 (causal={causal})", fwd["o"], np.zeros_like(fwd["o"]), (0.0, 0.0))
        kl.compare(f"LSE == -inf (causal={causal})", fwd["lse"], np.full(fwd["lse"].shape, -np.inf), (0.0, 0.0))
    lse_rows, delta = kl.attention_bwd_preprocess(fwd["o"], do, fwd["lse"], 16, dt)
    kl.compare("Delta == 0", delta, np.zeros_like(delta), (0.0, 0.0))
    bwd = kl.attention_bwd(q, kv, kv, do, lse_rows, delta, 0.125, False, 16, 16, dt)
    kl.compare("dQ == 0", bwd["dq"], np.zeros_like(bwd["dq"]), (0.0, 0.0))


# ---------------------------------------------------------------------------------------------
# lean_attention.tsl (decode, stream_k; run here in its lowered persistent form; the stream-K
# schedule itself is tested in test_stream_k.py).  A unit is one (batch, KV head): units = B*HKV,
# and its query tile holds the group's rows = (H/HKV)*Nq query rows (rows <= BM; rows < BM leaves
# padding rows).  The programs column is the persistent grid: fewer, as many or more than units.

LEAN_CASES = {  # B, H, HKV, Nq, Nk, D, causal, BM, BN, programs, input scale
    # GQA 4:1, one row per head: 4 rows of 16; units 2 < 5 programs.
    "gqa4-nq1":           (2, 4, 1, 1, 300, 64, False, 16, 32, 5, 1.0),
    # GQA 2:1, causal, D128: 10 rows; units 2 < 3 programs.
    "causal-gqa2-d128":   (1, 4, 2, 5, 257, 128, True, 16, 64, 3, 1.0),
    # MHA (G = 1) with Nq = 16 = BM: a full tile, no padding row; units 4 = programs.
    "nq-eq-block":        (2, 2, 2, 16, 33, 64, False, 16, 16, 4, 1.0),
    # MHA, one row: 15 padding rows; units 6 > 4 programs.
    "mha-nq1":            (2, 3, 3, 1, 100, 64, False, 16, 32, 4, 1.0),
    # GQA 2:1, causal with Nk = Nq: row i of each head sees keys 0..i only; 6 rows of 8.
    "causal-nk-eq-nq":    (1, 2, 1, 3, 3, 64, True, 8, 16, 2, 1.0),
    # ±1e4 scores (q, k ~ N(0, 35^2)), causal, GQA 2:1 and 4:1: one-hot softmax rows.
    "causal-large":       (1, 2, 1, 4, 70, 64, True, 8, 16, 3, 35.0),
    "causal-large-gqa4":  (1, 8, 2, 3, 70, 64, True, 16, 16, 5, 35.0),
    # GQA 8:1, one row: 8 rows of 16; units 4 > 3 programs.
    "gqa8-nq1":           (2, 16, 2, 1, 77, 64, False, 16, 16, 3, 1.0),
    # GQA 8:1, Nq = 3, causal: 24 rows in a tile of 32; units 2 = programs.
    "causal-gqa8-nq3":    (1, 16, 2, 3, 50, 64, True, 32, 16, 2, 1.0),
    # GQA 3:1 (H = 6, HKV = 2: not a power of two), Nq = 3: 9 rows; units 4 < 9 programs.
    "gqa3-nq3":           (2, 6, 2, 3, 45, 64, False, 16, 16, 9, 1.0),
    # GQA 3:1, causal, D128, Nq = 5: 15 rows; units 2 < 3 programs.
    "causal-gqa3-nq5-d128": (1, 6, 2, 5, 37, 128, True, 16, 32, 3, 1.0),
    # Nk = 9 < BN: a single ragged key block; GQA 4:1, 8 rows = BM; units 4 > 3 programs.
    "nk-lt-block-gqa4":   (2, 8, 2, 2, 9, 64, False, 8, 16, 3, 1.0),
    # GQA 4:1 with Nq = 16: 64 rows = BM, causal; GQA 8:1 with Nq = 16: 128 rows = BM (the largest
    # tile of the Python op).
    "causal-gqa4-nq16":   (1, 4, 1, 16, 40, 32, True, 64, 16, 2, 1.0),
    "gqa8-nq16":          (1, 8, 1, 16, 35, 32, False, 128, 16, 3, 1.0),
    # Nk = 0: every unit fully masked (O = 0, LSE = -inf); CAUSAL needs Nk >= Nq, so non-causal only.
    "nk0":                (1, 4, 2, 2, 0, 64, False, 4, 16, 3, 1.0),
    "nk0-nq1-G1":         (1, 2, 2, 1, 0, 32, False, 4, 16, 1, 1.0),
}


def _run_lean(name, dt, G=None, stream_k=None, cluster=None, lse=True):
    """`cluster`: the cluster constexprs (CLUSTER and/or LIVE_ROWS), None for none; `lse` False: the
    kernel compiled without its LSE (tessel.lean_attention's form), O checked alone."""
    B, H, HKV, Nq, Nk, D, causal, BM, BN, case_G, s = LEAN_CASES[name]
    assert (H // HKV) * Nq <= BM, f"{name}: the group's rows do not fit in BLOCK_M"
    scale = kl.f32(1.0 / np.sqrt(D))
    rng = _seed("lean", name, dt)
    q, k, v = kl.randn(rng, (B, H, Nq, D), dt, s), kl.randn(rng, (B, HKV, Nk, D), dt, s), \
        kl.randn(rng, (B, HKV, Nk, D), dt)
    out = kl.lean_attention(q, k, v, scale, causal, BM, BN, G or case_G, "lowered", dt,
                            stream_k=stream_k, extra_defines=cluster, lse=lse)
    _unwritten("lean_attention", *out.values())
    if Nk == 0:
        kl.compare("O == 0", out["o"], np.zeros_like(out["o"]), (0.0, 0.0))
        if lse:
            kl.compare("LSE == -inf", out["lse"], np.full(out["lse"].shape, -np.inf), (0.0, 0.0))
    else:
        O, L = ref.decode_attention(q, k, v, scale, causal)
        kl.compare("O", out["o"], O, TOL[dt]["out"])
        if lse:
            kl.compare("LSE", out["lse"], L, scaled_tol(dt, "f32", np.max(np.abs(L))))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", list(LEAN_CASES))
def test_lean_attention(name, dt):
    B, H, HKV, Nq, Nk, D, causal, BM, BN, G, s = LEAN_CASES[name]
    _header(f"lean_attention {name} [{dt}]: B{B} H{H}/{HKV} Nq{Nq} Nk{Nk} D{D} causal={causal} "
            f"{(H // HKV) * Nq} rows per unit, {B * HKV} units, blocks {BM}x{BN}, "
            f"{G} persistent programs, |q|,|k|~{s}")
    _run_lean(name, dt)


def _lean_split_grid(name, grid):
    """'case': the case's G (S = max(1, G // units) chunks per unit); 'wide': 4 * units + 3
    programs (S = min(4, iters) chunks per unit, idle programs; with Nk < BLOCK_N, S = 1)."""
    B, H, HKV = LEAN_CASES[name][:3]
    return LEAN_CASES[name][9] if grid == "case" else 4 * B * HKV + 3


@pytest.mark.parametrize("grid", ("case", "wide"))
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", list(LEAN_CASES))
def test_lean_attention_split_k(name, dt, grid):
    """The split-K lowering (split kernel + combine kernel) against the same reference."""
    B, H, HKV, Nq, Nk, D, causal, BM, BN, _, s = LEAN_CASES[name]
    G = _lean_split_grid(name, grid)
    iters = max(kl.cdiv(Nk, BN), 1)
    S = max(1, min(G // (B * HKV), iters))
    _header(f"lean_attention split-K {name} [{dt}]: B{B} H{H}/{HKV} Nq{Nq} Nk{Nk} D{D} "
            f"causal={causal} blocks {BM}x{BN}, {B * HKV} units, {G} programs, {S} chunks of "
            f"{iters} iterations per unit")
    _run_lean(name, dt, G, "split-k")


@pytest.mark.parametrize("stream_k", ("persistent", "split-k"))
@pytest.mark.parametrize("name", list(LEAN_CASES))
def test_lean_attention_live_rows(name, stream_k):
    """Without clusters, partial states bounded by the live rows (LIVE_ROWS = G·Nq, as
    tessel.lean_attention bounds them where a unit has fewer rows than its tile): the same O
    and LSE, through the persistent hand-over and through the split-K combine."""
    B, H, HKV, Nq, Nk, D, causal, BM, BN, G, s = LEAN_CASES[name]
    live = H // HKV * Nq
    grid = G if stream_k == "persistent" else _lean_split_grid(name, "wide")
    _header(f"lean_attention {stream_k} with {live} live rows {name}: B{B} H{H}/{HKV} Nq{Nq} "
            f"Nk{Nk} D{D} causal={causal} blocks {BM}x{BN}, {grid} programs")
    _run_lean(name, DTYPES[-1], grid, stream_k, cluster={"LIVE_ROWS": live})


@pytest.mark.parametrize("name", list(LEAN_CASES))
def test_lean_attention_without_lse(name):
    """Compiled without its LSE (tessel.lean_attention's form), in clusters of 2 where the unit
    has key blocks for both (the op's short decodes), persistent otherwise: the same O."""
    B, H, HKV, Nq, Nk, D, causal, BM, BN, G, s = LEAN_CASES[name]
    cluster = {"CLUSTER": 2, "LIVE_ROWS": BM} if kl.cdiv(Nk, BN) >= 2 else None
    _header(f"lean_attention without LSE {name}: B{B} H{H}/{HKV} Nq{Nq} Nk{Nk} D{D} "
            f"causal={causal} blocks {BM}x{BN}, clusters {cluster}")
    _run_lean(name, DTYPES[-1], 2 * B * HKV if cluster else None, cluster=cluster, lse=False)


@pytest.mark.parametrize("grid", ("one", "several"))
@pytest.mark.parametrize("name", list(LEAN_CASES))
def test_lean_attention_cluster(name, grid):
    """Stream-K in thread-block clusters (CLUSTER): 'one': clusters of 3, one per unit, the
    states' rows bounded by the live ones (LIVE_ROWS = G·Nq); 'several': clusters of 2, fewer
    than the units (each takes several in turn), or one more (an idle cluster) with a single
    unit, whole states."""
    B, H, HKV, Nq, Nk, D, causal, BM, BN, _, s = LEAN_CASES[name]
    units = B * HKV
    size = 3 if grid == "one" else 2
    clusters = units if grid == "one" else max(units - 1, 1) if units > 1 else 2
    live = H // HKV * Nq if grid == "one" else BM
    _header(f"lean_attention in clusters {name}: B{B} H{H}/{HKV} Nq{Nq} Nk{Nk} D{D} "
            f"causal={causal} blocks {BM}x{BN}, {units} units, {clusters} clusters of {size}, "
            f"{live} live rows")
    _run_lean(name, DTYPES[0], clusters * size, cluster={"CLUSTER": size, "LIVE_ROWS": live})


# ---------------------------------------------------------------------------------------------
# mta.tsl: mta_fwd, mta_bwd_preprocess, mta_bwd, mta_decode_split + mta_decode_combine

MTA_CASES = {  # B, H, HKV, N, D, cq, ck, BM, BN, input scale, score scale (None: 1/sqrt(D)),
    #               decode runs ((QN, nsplit, BLOCK_N), ...): QN = N (full Q), cq (rolling Q cache),
    #               nsplit > key blocks (empty splits)
    "cq3-ck5-gqa2":       (1, 4, 2, 75, 64, 3, 5, 16, 16, 1.0, None, ((75, 3, 16), (3, 1, 32), (5, 8, 16))),
    "cq6-ck11":           (1, 2, 2, 70, 64, 6, 11, 32, 32, 1.0, None,
                           ((70, 3, 16), (6, 1, 32), (8, 8, 16), (9, 2, 64))),
    "cq2-ck4-even":       (2, 2, 1, 40, 64, 2, 4, 16, 32, 1.0, None, ((40, 3, 16), (2, 1, 32), (4, 8, 16))),
    "cq1-ck1":            (1, 2, 1, 19, 64, 1, 1, 16, 16, 1.0, None, ((19, 3, 16), (1, 1, 32), (3, 8, 16))),
    # Wide windows (cq 8, ck 15), and an odd cq with an even ck (mta_conv_keys takes the query
    # offsets in pairs: an odd cq ends on a single one).
    "cq8-ck15":           (1, 2, 1, 45, 32, 8, 15, 16, 16, 1.0, None, ((45, 2, 16),)),
    "cq7-ck2":            (1, 3, 3, 33, 32, 7, 2, 16, 16, 1.0, None, ((33, 3, 16),)),
    "cq6-ck11-n-lt-cq":      (1, 2, 1, 4, 32, 6, 11, 16, 16, 1.0, None, ((4, 1, 16), (4, 3, 16))),
    "cq3-ck5-large":      (1, 2, 1, 37, 64, 3, 5, 16, 16, 35.0, None, ((37, 3, 16),)),
    "cq6-ck11-large-smallscale": (1, 2, 1, 29, 64, 6, 11, 16, 16, 35.0, 1e-3, ((29, 2, 16),)),
    "wgmma-cq3-ck5":      (1, 2, 1, 150, 64, 3, 5, 128, 32, 1.0, None, ((150, 3, 64),)),
    "wgmma-cq5-ck14-gqa2": (1, 4, 2, 170, 64, 5, 14, 128, 32, 1.0, None, ((170, 2, 64),)),
}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", list(MTA_CASES))
def test_mta(name, dt):
    B, H, HKV, N, D, cq, ck, BM, BN, s, scale, decodes = MTA_CASES[name]
    rng = _seed("mta", name, dt)
    scale = kl.f32(scale if scale is not None else 1.0 / np.sqrt(D))
    q, k, v = kl.randn(rng, (B, H, N, D), dt, s), kl.randn(rng, (B, HKV, N, D), dt, s), \
        kl.randn(rng, (B, HKV, N, D), dt)
    do = kl.randn(rng, (B, H, N, D), dt)
    w = tr.round_to(rng.standard_normal((H, cq, ck)) * 0.3, "f32")
    w[:, 0, (ck - 1) // 2] += 1.0               # near the identity kernel (C ~ S0), as trained MTA
    _header(f"mta {name} [{dt}]: B{B} H{H}/{HKV} N{N} D{D} cq{cq} ck{ck} blocks {BM}x{BN} "
            f"|q|,|k|~{s} scale {scale:.4g}")
    O, L = ref.mta_fwd(q, k, v, w, scale)
    # Both forms of the forward: the convolution on S0 everywhere, and the convolved keys (their
    # hi + lo split in the element type) on the blocks below the diagonal.
    for conv_keys in (False, True):
        fwd = kl.mta_fwd(q, k, v, w, scale, BM, BN, dt, conv_keys=conv_keys)
        _unwritten("mta_fwd", fwd["o"], fwd["lse"])
        form = " (convolved keys)" if conv_keys else ""
        kl.compare("O" + form, fwd["o"], O, TOL[dt]["out"])
        kl.compare("LSE" + form, fwd["lse"], L, scaled_tol(dt, "f32", np.max(np.abs(L))))

    delta = kl.mta_bwd_preprocess(fwd["o"], do, BM, dt)
    kl.compare("Delta (vs rowsum(O_kernel dO))", delta, (fwd["o"] * do).sum(-1),
               scaled_tol(dt, "f32", np.max(np.abs(fwd["o"] * do).sum(-1))))
    bwd = kl.mta_bwd(q, k, v, w, do, fwd["lse"], delta, scale, BM, BN, dt)
    _unwritten("mta_bwd", bwd["dk"], bwd["dv"])
    grads = ref.mta_bwd(q, k, v, w, do, scale, delta=(fwd["o"] * do).sum(-1))
    exact = ref.mta_bwd(q, k, v, w, do, scale)
    # dW also gets DW_TERM_RTOL of the magnitude of its terms (see the module's docstring).
    atol, rtol = TOL[dt]["grad"]
    dw_tol = (atol + rtol * np.max(np.abs(grads[3])) + DW_TERM_RTOL * np.max(
        ref.mta_dw_term_magnitude(q, k, v, w, do, scale, fwd["o"])), 0.0)
    for n, g, want, want_exact, tol in zip(
            ("dQ", "dK", "dV", "dW"), (bwd["dq"], bwd["dk"], bwd["dv"], bwd["dw"]), grads, exact,
            (TOL[dt]["grad"],) * 3 + (dw_tol,)):
        kl.compare(n, g, want, tol)
        kl.report(f"{n} end-to-end (exact Delta)", g, want_exact)

    Od, Ld = ref.mta_decode(q, k, v, w, scale)
    for QN, nsplit, BNd in decodes:
        o, lse, parts = kl.mta_decode(np.ascontiguousarray(q[:, :, N - QN:]), k, v, w, N, scale, nsplit,
                                      BNd, 8, dt)
        assert not np.any(np.isnan(parts["lse_part"])), "a split left its partial unwritten"
        kl.compare(f"decode O (QN={QN}, {nsplit} splits, BN={BNd})", o, Od, TOL[dt]["out"])
        kl.compare(f"decode LSE (QN={QN}, {nsplit} splits)", lse, Ld,
                   scaled_tol(dt, "f32", np.max(np.abs(Ld))))


# ---------------------------------------------------------------------------------------------
# attention_kl.tsl: attention_kl_fwd, attention_kl_bwd

KL_CASES = {  # B, H, HKT, HKS, Nq, Nk, DT, DS, causal, BM, BN, teacher input scale, reduction
    "causal-gqa-sum":     (2, 4, 2, 1, 70, 70, 64, 32, True, 32, 16, 1.0, "sum"),
    "dt128-ds64-mean":    (1, 4, 4, 2, 50, 80, 128, 64, False, 16, 32, 1.0, "mean"),
    "causal-batchmean":   (2, 2, 1, 1, 33, 33, 64, 64, True, 16, 16, 1.0, "batchmean"),
    "large-teacher":      (1, 2, 1, 2, 29, 41, 64, 32, False, 16, 16, 35.0, "sum"),
    # 128 rows over the kernels' 8 warps: warpgroup MMA on sm_90a.
    "wgmma-causal-d128":  (1, 2, 1, 1, 140, 140, 128, 64, True, 128, 64, 1.0, "sum"),
    # More keys than queries per block: the causal diagonal spans two query blocks.
    "causal-bn-gt-bm":    (1, 2, 1, 1, 100, 100, 64, 32, True, 16, 32, 1.0, "sum"),
}


def _kl_weights(rng, B, H, Nq, reduction):
    """The host's folding of the reduction (and of a row mask) into the per-row upstream gradient g:
    loss = Σ_rows g·KL."""
    keep = np.ones((B, H, Nq))
    keep[:, :, 3::7] = 0.0                       # masked-out rows (e.g. padding tokens)
    if reduction == "sum":
        g = keep
    elif reduction == "mean":                    # mean over the kept rows
        g = keep / keep.sum()
    elif reduction == "batchmean":               # sum / batch size
        g = keep / B
    else:
        raise ValueError(reduction)
    return tr.round_to(g, "f32"), keep


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", list(KL_CASES))
def test_attention_kl(name, dt):
    B, H, HKT, HKS, Nq, Nk, DT, DS, causal, BM, BN, s, reduction = KL_CASES[name]
    rng = _seed("kl", name, dt)
    tq, tk = kl.randn(rng, (B, H, Nq, DT), dt, s), kl.randn(rng, (B, HKT, Nk, DT), dt, s)
    sq, sk = kl.randn(rng, (B, H, Nq, DS), dt), kl.randn(rng, (B, HKS, Nk, DS), dt)
    sc_t, sc_s = kl.f32(1.0 / np.sqrt(DT)), kl.f32(1.3 / np.sqrt(DS))
    _header(f"attention_kl {name} [{dt}]: B{B} H{H} HKT{HKT} HKS{HKS} Nq{Nq} Nk{Nk} DT{DT} DS{DS} "
            f"causal={causal} blocks {BM}x{BN} |teacher|~{s} reduction={reduction}")
    fwd = kl.kl_fwd(tq, tk, sq, sk, sc_t, sc_s, causal, BM, BN, dt)
    _unwritten("attention_kl_fwd", fwd["kl"], fwd["lse_t"], fwd["lse_s"])
    KL, LT, LS = ref.kl_fwd(tq, tk, sq, sk, sc_t, sc_s, causal)
    mag = max(np.max(np.abs(KL)), np.max(np.abs(LT)), np.max(np.abs(LS)))
    kl.compare("KL", fwd["kl"], KL, scaled_tol(dt, "f32", mag))
    kl.compare("LSE teacher", fwd["lse_t"][..., :Nq], LT, scaled_tol(dt, "f32", np.max(np.abs(LT))))
    kl.compare("LSE student", fwd["lse_s"][..., :Nq], LS, scaled_tol(dt, "f32", np.max(np.abs(LS))))
    kl.compare("LSEs past Nq == 0", np.concatenate((fwd["lse_t"][..., Nq:], fwd["lse_s"][..., Nq:])),
               np.zeros((2 * B, H, fwd["lse_t"].shape[-1] - Nq)), (0.0, 0.0))
    g, keep = _kl_weights(rng, B, H, Nq, reduction)
    kl.compare(f"loss = Σ g·KL ({reduction})", np.sum(g * fwd["kl"]), np.sum(g * KL),
               scaled_tol(dt, "f32", mag * np.sum(np.abs(g))))

    _, dSQ, dSK = ref.kl_bwd(tq, tk, sq, sk, g, sc_t, sc_s, causal)
    # Both forms of the query loop: masks on every block, and the fully visible blocks apart.
    for unmasked_loop in (False, True):
        bwd = kl.kl_bwd(tq, tk, sq, sk, fwd["lse_t"], fwd["lse_s"], g, sc_t, sc_s, causal, BM, BN,
                        dt, unmasked_loop=unmasked_loop)
        _unwritten("attention_kl_bwd", bwd["dsk"])
        form = " (unmasked loop)" if unmasked_loop else ""
        kl.compare("dQs" + form, bwd["dsq"], dSQ, TOL[dt]["grad"])
        kl.compare("dKs" + form, bwd["dsk"], dSK, TOL[dt]["grad"])
        assert np.all(bwd["dsq"][keep == 0] == 0), "masked rows (g = 0) got a gradient"
    # Without a row mask the reduction's gradient is one value for every row (UNIFORM_G); both
    # kinds of query block (masked at the edges, not inside) with the unmasked loop.
    c = g.max()
    _, dSQ, dSK = ref.kl_bwd(tq, tk, sq, sk, np.full(g.shape, c), sc_t, sc_s, causal)
    bwd = kl.kl_bwd(tq, tk, sq, sk, fwd["lse_t"], fwd["lse_s"], c, sc_t, sc_s, causal, BM, BN,
                    dt, unmasked_loop=True)
    kl.compare("dQs (one upstream gradient)", bwd["dsq"], dSQ, TOL[dt]["grad"])
    kl.compare("dKs (one upstream gradient)", bwd["dsk"], dSK, TOL[dt]["grad"])


@pytest.mark.parametrize("dt", DTYPES)
def test_attention_kl_backward_negative_scores(dt):
    """As test_attention_backward_negative_scores, for both distributions: a zero key row past Nk
    that escaped its mask would give inf - inf in dQs."""
    B, H, Nq, Nk, D = 1, 2, 70, 45, 64
    rng = _seed("kl-negative-scores", dt)
    tq, sq = (np.abs(kl.randn(rng, (B, H, Nq, D), dt, 5.0)) for _ in range(2))
    tk, sk = (-np.abs(kl.randn(rng, (B, 1, Nk, D), dt, 5.0)) for _ in range(2))
    sc = kl.f32(0.25)
    _header(f"attention_kl backward, scores far below zero [{dt}]: Nq{Nq} Nk{Nk} D{D}")
    fwd = kl.kl_fwd(tq, tk, sq, sk, sc, sc, False, 32, 32, dt)
    assert max(np.max(fwd["lse_t"][..., :Nq]), np.max(fwd["lse_s"][..., :Nq])) < -88, \
        "LSEs must be below -88"
    g = np.ones((B, H, Nq))
    _, dSQ, dSK = ref.kl_bwd(tq, tk, sq, sk, g, sc, sc, False)
    for unmasked_loop in (False, True):
        bwd = kl.kl_bwd(tq, tk, sq, sk, fwd["lse_t"], fwd["lse_s"], g, sc, sc, False, 32, 32, dt,
                        unmasked_loop=unmasked_loop)
        kl.compare(f"dQs (unmasked loop={unmasked_loop})", bwd["dsq"], dSQ, TOL[dt]["grad"])
        kl.compare(f"dKs (unmasked loop={unmasked_loop})", bwd["dsk"], dSK, TOL[dt]["grad"])


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("causal", (False, True))
def test_attention_kl_backward_other_heads_statistics(causal, dt):
    """As test_attention_backward_other_heads_statistics, for StreamKL's two LSEs (-1e30 for the
    teacher and the student)."""
    B, H, Nq, Nk, D, BM, BN = 1, 2, 70, 90, 64, 64, 128
    rng = _seed("kl-other-heads", causal, dt)
    tq, sq = (kl.randn(rng, (B, H, Nq, D), dt) for _ in range(2))
    tk, sk = (kl.randn(rng, (B, H, Nk, D), dt) for _ in range(2))
    sc = kl.f32(0.125)
    _header(f"attention_kl backward, the other head's LSEs extreme [{dt}]: causal={causal}")
    fwd = kl.kl_fwd(tq, tk, sq, sk, sc, sc, causal, BM, 64, dt)
    g = np.ones((B, H, Nq))
    _other_head_unchanged(
        lambda st, ws: kl.kl_bwd(tq, tk, sq, sk, *st, g, sc, sc, causal, BM, BN, dt,
                                 extra_defines=dict(NUM_WARPS=8, WARP_SPECIALIZE=ws)),
        (fwd["lse_t"], fwd["lse_s"]), lambda st, head: _poisoned(st, head, (-1e30, -1e30)),
        {"dsq": (0.0, 1e-5), "dsk": (0.0, 0.0)})


@pytest.mark.parametrize("dt", DTYPES)
def test_attention_kl_no_keys(dt):
    """Nk = 0: KL = 0, both LSEs = -inf; the backward grid is empty and dQs stays 0."""
    B, H, Nq, D = 1, 2, 4, 64
    rng = _seed("kl-nk0", dt)
    x = kl.randn(rng, (B, H, Nq, D), dt)
    z = np.zeros((B, 1, 0, D))
    _header(f"attention_kl Nk=0 [{dt}]: B{B} H{H} Nq{Nq} D{D}")
    for causal in (False, True):
        fwd = kl.kl_fwd(x, z, x, z, 0.125, 0.125, causal, 16, 16, dt)
        kl.compare(f"KL == 0 (causal={causal})", fwd["kl"], np.zeros_like(fwd["kl"]), (0.0, 0.0))
        for n in ("lse_t", "lse_s"):
            kl.compare(f"{n} == -inf", fwd[n][..., :Nq], np.full((B, H, Nq), -np.inf), (0.0, 0.0))
    bwd = kl.kl_bwd(x, z, x, z, fwd["lse_t"], fwd["lse_s"], np.ones((B, H, Nq)), 0.125, 0.125, False,
                    16, 16, dt)
    kl.compare("dQs == 0", bwd["dsq"], np.zeros_like(bwd["dsq"]), (0.0, 0.0))


# ---------------------------------------------------------------------------------------------
# The checks can fail: deliberately broken variants of the kernels must be caught.

MUTANTS = {
    # kernel file, the exact text replaced, its replacement, what runs it
    "attention_fwd scale x1.02": (
        "attention.tsl", "            s = dot(qt, trans(kt)) * scale\n            st = online_softmax(st, s, vt)\n",
        "            s = dot(qt, trans(kt)) * (scale * 1.02)\n            st = online_softmax(st, s, vt)\n",
        "attention"),
    "lean causal offset off by one": (
        "lean_attention.tsl", "(offs_n[None, :] <= (Nk - Nq) + row_i[:, None])",
        "(offs_n[None, :] <= (Nk - Nq - 1) + row_i[:, None])", "lean"),
    "lean merge that drops the later partial": (
        "lean_attention.tsl", "iters=cdiv(Nk, BLOCK_N), body=body, merge=softmax_merge",
        "iters=cdiv(Nk, BLOCK_N), body=body, merge=keep_first", "lean"),
    # GQA packing: the causal mask on the tile row r instead of the query row r % Nq (right for
    # the first head of the group only).
    "lean causal mask on the tile row": (
        "lean_attention.tsl",
        "mask=n_ok[:, None], other=0.0)\n            st = attend_block(st, qt, kt, vt, offs_n, n_ok, "
        "r_ok, row_i,",
        "mask=n_ok[:, None], other=0.0)\n            st = attend_block(st, qt, kt, vt, offs_n, n_ok, "
        "r_ok, offs_r,", "lean"),
    # GQA packing: Q of the group's heads read from head hk + g instead of hk·G + g (right for
    # the first KV head only).
    "lean Q rows of the wrong heads": (
        "lean_attention.tsl", "    h = hk * G + head_g\n    return load(",
        "    h = hk + head_g\n    return load(", "lean"),
    # GQA packing: O and LSE stored one unit per query head, as before the packing.
    "lean store addressed per query head": (
        "lean_attention.tsl", "row = (b * H + h).to(i64) * Nq + row_i",
        "row = (b * (H // G) + hk).to(i64) * Nq + head_g * Nq + row_i", "lean"),
}


def _mutate(tmp_path, name):
    tsl, old, new, _ = MUTANTS[name]
    src = open(tr.kernel_path(tsl)).read()
    assert src.count(old) == 1, f"mutant '{name}': the text to replace is not in {tsl} exactly once"
    src = src.replace(old, new)
    if "keep_first" in new:
        src = src.replace("    def epilogue(unit, st):",
                          "    def keep_first(a, b):\n        return a\n\n    def epilogue(unit, st):")
    path = tmp_path / tsl
    path.write_text(src)
    # The helpers it imports, beside it.
    shutil.copy(tr.kernel_path("common.tsl"), tmp_path)
    return str(path)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_broken_kernel_is_caught(tmp_path, name):
    path = _mutate(tmp_path, name)
    kind = MUTANTS[name][3]
    _header(f"mutant: {name} (must FAIL the comparison)")
    if kind == "attention":
        B, H, HKV, Nq, Nk, D = 1, 2, 1, 21, 37, 64
        rng = _seed("mutant", name)
        q, k, v = kl.randn(rng, (B, H, Nq, D), "f16"), kl.randn(rng, (B, HKV, Nk, D), "f16"), \
            kl.randn(rng, (B, HKV, Nk, D), "f16")
        scale = kl.f32(1.0 / np.sqrt(D))
        out = kl.attention_fwd(q, k, v, scale, False, 16, 16, "f16", tsl=path)
        O, L = ref.attention_fwd(q, k, v, scale, False)
        with pytest.raises(kl.Mismatch):
            kl.compare("O", out["o"], O, TOL["f16"]["out"])
            kl.compare("LSE", out["lse"], L, scaled_tol("f16", "f32", np.max(np.abs(L))))
        # and the unmutated kernel passes the same comparison
        good = kl.attention_fwd(q, k, v, scale, False, 16, 16, "f16")
        kl.compare("O (original kernel)", good["o"], O, TOL["f16"]["out"])
    else:
        # 2 batches x 2 KV heads = 4 units; GQA 2:1 with Nq = 3: 6 rows in a tile of 8.
        B, H, HKV, Nq, Nk, D = 2, 4, 2, 3, 70, 64
        rng = _seed("mutant", name)
        q, k, v = kl.randn(rng, (B, H, Nq, D), "f16"), kl.randn(rng, (B, HKV, Nk, D), "f16"), \
            kl.randn(rng, (B, HKV, Nk, D), "f16")
        scale = kl.f32(1.0 / np.sqrt(D))
        out = kl.lean_attention(q, k, v, scale, True, 8, 16, 3, None, "f16", tsl=path)
        O, L = ref.decode_attention(q, k, v, scale, True)
        with pytest.raises(kl.Mismatch):
            kl.compare("O", out["o"], O, TOL["f16"]["out"])
            kl.compare("LSE", out["lse"], L, scaled_tol("f16", "f32", np.max(np.abs(L))))
        good = kl.lean_attention(q, k, v, scale, True, 8, 16, 3, None, "f16")
        kl.compare("O (original kernel)", good["o"], O, TOL["f16"]["out"])


@pytest.mark.parametrize("dt", DTYPES)
def test_scaled_cast(dt):
    """The backwards' dQ conversion (kernels/convert.tsl): x · scale in the element type, one
    rounding of the f32 product, for a length that fills neither its last program nor a power of
    two, and nothing written past it."""
    n, block = 8 * 91, 256
    rng = _seed("scaled_cast", dt)
    x = tr.round_to(rng.standard_normal(n) * 40, "f32")
    scale = np.float32(0.0883)
    out = tr.run("convert.tsl", "scaled_cast", (-(-n // block),),
                 dict(x=tr.Buffer(x, "f32"), y=tr.full(n + 8, 7.0, dt), n=n, scale=float(scale)),
                 dict(BLOCK=block, DTYPE=dt), outputs=["y"])
    want = tr.round_to(tr.round_to(x * np.float64(scale), "f32"), dt)
    assert np.array_equal(out["y"][:n], want), f"{np.sum(out['y'][:n] != want)} elements differ"
    assert np.all(out["y"][n:] == 7.0), "written past n"
