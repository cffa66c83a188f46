"""Host-side launch code for the kernels of kernels/*.tsl, on the CPU interpreter via tessel_run.

Each launcher takes logical [B, H, N, D] float64 arrays (already rounded to the element type, see
`randn`), lays them out in memory as a caller would (contiguous 'bhnd' or the strided 'bnhd' view of
a [B, N, H, D] tensor), computes the kernel's grid from the header comment of its .tsl file, runs
it, and returns the outputs as float64 arrays of their logical shapes.  Also: the comparison with a
reference that prints max abs / max rel errors.
"""

import numpy as np

import tessel_run as tr


def cdiv(a, b):
    return -(-a // b)


def randn(rng, shape, dtype, s=1.0):
    """Standard normal values times s, rounded to the element type (float64 array)."""
    return tr.round_to(rng.standard_normal(shape) * s, dtype)


def f32(x):
    """A host scalar as the kernel sees an f32 parameter."""
    return float(np.float32(x))


def strided(x, layout):
    """x [B, H, N, D] -> (memory as a flat array, (stride_b, stride_h, stride_n)); stride 1 in D."""
    B, H, N, D = x.shape
    if layout == "bhnd":
        return np.ascontiguousarray(x).reshape(-1), (H * N * D, N * D, D)
    assert layout == "bnhd", layout
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(-1), (N * H * D, D, H * D)


def _strided_args(prefix, x, layout, dtype):
    buf, (sb, sh, sn) = strided(x, layout)
    return {f"{prefix}b": sb, f"{prefix}h": sh, f"{prefix}n": sn}, tr.Buffer(buf, dtype)


# ---------------------------------------------------------------------------------------------
# comparison

class Mismatch(AssertionError):
    pass


def errors(got, want):
    """(max abs error, max rel error = max abs error / max |want|) over the finite entries of want;
    the infinite entries must be equal (same sign) in got."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    fin = np.isfinite(want)
    if not np.array_equal(got[~fin], want[~fin]) or not np.all(np.isfinite(got[fin])):
        return np.inf, np.inf
    err = float(np.max(np.abs(got[fin] - want[fin]), initial=0.0))
    scale = float(np.max(np.abs(want[fin]), initial=0.0))
    return err, (err / scale if scale > 0 else (0.0 if err == 0 else np.inf))


def report(label, got, want):
    """Print the errors without a pass/fail decision (informational)."""
    err, rel = errors(got, want)
    print(f"    {label:34s} max abs {err:9.2e}  max rel {rel:9.2e}  (information)")
    return err, rel


def compare(label, got, want, tol):
    """Assert max|got - want| <= atol + rtol * max|want| (tol = (atol, rtol)), infinities equal.
    Prints the errors (pytest -s shows them); returns (max abs, max rel)."""
    atol, rtol = tol
    err, rel = errors(got, want)
    want = np.asarray(want, dtype=np.float64)
    scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0))
    limit = atol + rtol * scale
    ok = err <= limit
    print(f"    {label:34s} max abs {err:9.2e}  max rel {rel:9.2e}  (limit {limit:8.2e})  "
          f"{'ok' if ok else 'FAIL'}")
    if not ok:
        raise Mismatch(f"{label}: max abs error {err:.3e} > limit {limit:.3e} "
                       f"(atol {atol:.1e} + rtol {rtol:.1e} * max|ref| {scale:.3e})")
    return err, rel


# ---------------------------------------------------------------------------------------------
# attention.tsl

def _outputs_and_lse(args, defines, lse, shape):
    """The outputs to read back: O and, with `lse`, the LSE buffer (added to `args`); without
    it the kernel is compiled with its lse pointer None."""
    if not lse:
        defines["lse"] = None
        return ["o"]
    args["lse"] = tr.full(shape, 7.0, "f32")
    return ["o", "lse"]


def attention_fwd(q, k, v, scale, causal, BM, BN, dtype="f16", layout="bhnd", tsl="attention.tsl",
                  extra_defines=None, num_sms=1, lse=True):
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    sq, qb = _strided_args("sq", q, layout, dtype)
    sk, kb = _strided_args("sk", k, layout, dtype)
    sv, vb = _strided_args("sv", v, layout, dtype)
    args = dict(q=qb, k=kb, v=vb, o=tr.full((B, H, Nq, D), 7.0, dtype),
                **sq, **sk, **sv, H=H, HKV=HKV, Nq=Nq, Nk=Nk, scale=f32(scale), num_sms=num_sms)
    defines = dict(D=D, CAUSAL=causal, BLOCK_M=BM, BLOCK_N=BN, DTYPE=dtype, **(extra_defines or {}))
    outputs = _outputs_and_lse(args, defines, lse, (B, H, Nq))
    return tr.run(tsl, "attention_fwd", (cdiv(Nq, BM), B * H), args, defines, outputs=outputs)


def statistics_rows(n):
    """The row length of the backwards' per-query statistics (LSE, Delta): n rounded up to 4, as
    the ops lay them out (16 bytes, for Hopper's copy engine)."""
    return cdiv(n, 4) * 4


def _bwd_preprocess(tsl, kernel, length, o, do, BM, dtype, layout):
    """Delta = rowsum(dO ∘ O); `length` names the kernel's sequence-length parameter."""
    B, H, N, D = o.shape
    sdo, dob = _strided_args("sdo", do, layout, dtype)
    args = dict(o=tr.Buffer(o, dtype), do=dob, delta=tr.full((B, H, N), 7.0, "f32"), **sdo, H=H,
                **{length: N})
    return tr.run(tsl, kernel, (cdiv(N, BM), B * H), args, dict(D=D, BLOCK_M=BM, DTYPE=dtype),
                  outputs=["delta"])["delta"]


def attention_bwd_preprocess(o, do, lse, BM, dtype="f16", layout="bhnd"):
    """(LSE, Delta = rowsum(dO ∘ O)) in rows of NQS = Nq rounded up to 4, as the op lays them
    out for attention_bwd (B, H, NQS)."""
    B, H, N, D = o.shape
    nqs = statistics_rows(N)
    sdo, dob = _strided_args("sdo", do, layout, dtype)
    args = dict(o=tr.Buffer(o, dtype), do=dob, lse=tr.Buffer(lse, "f32"),
                delta=tr.full((B, H, nqs), 7.0, "f32"), lse_rows=tr.full((B, H, nqs), 7.0, "f32"),
                **sdo, H=H, Nq=N, NQS=nqs)
    out = tr.run("attention.tsl", "attention_bwd_preprocess", (cdiv(nqs, BM), B * H), args,
                 dict(D=D, BLOCK_M=BM, DTYPE=dtype), outputs=["lse_rows", "delta"])
    return out["lse_rows"], out["delta"]


def _scaled(outputs, name, scale):
    """The backwards leave their f32 dQ unscaled (dS·K): the ops multiply it by the softmax scale
    as they convert it to the inputs' dtype; so does this, in f32 as they do."""
    outputs[name] = (outputs[name].astype(np.float32) * np.float32(scale)).astype(np.float64)
    return outputs


def attention_bwd(q, k, v, do, lse_rows, delta, scale, causal, BM, BN, dtype="f16",
                  layout="bhnd", unmasked_loop=False, num_sms=1, extra_defines=None):
    """`lse_rows`, `delta`: attention_bwd_preprocess's (B, H, NQS)."""
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    sq, qb = _strided_args("sq", q, layout, dtype)
    sk, kb = _strided_args("sk", k, layout, dtype)
    sv, vb = _strided_args("sv", v, layout, dtype)
    sdo, dob = _strided_args("sdo", do, layout, dtype)
    args = dict(q=qb, k=kb, v=vb, do=dob, lse_rows=tr.Buffer(lse_rows, "f32"),
                delta=tr.Buffer(delta, "f32"),
                dq=tr.zeros((B, H, Nq, D), "f32"), dk=tr.full((B, HKV, Nk, D), 7.0, dtype),
                dv=tr.full((B, HKV, Nk, D), 7.0, dtype),
                **sq, **sk, **sv, **sdo, H=H, HKV=HKV, Nq=Nq, Nk=Nk, NQS=delta.shape[-1],
                scale=f32(scale),
                num_sms=num_sms)
    out = tr.run("attention.tsl", "attention_bwd", (cdiv(Nk, BN), B * HKV), args,
                 dict(D=D, CAUSAL=causal, BLOCK_M=BM, BLOCK_N=BN, DTYPE=dtype,
                      UNMASKED_LOOP=unmasked_loop, **(extra_defines or {})),
                 outputs=["dq", "dk", "dv"])
    return _scaled(out, "dq", scale)


# ---------------------------------------------------------------------------------------------
# lean_attention.tsl (the only stream_k kernel)

def lean_attention(q, k, v, scale, causal, BM, BN, programs, stage=None, dtype="f16",
                   layouts=("bnhd", "bhnd", "bnhd"), tsl="lean_attention.tsl", extra_defines=None,
                   stream_k=None, lse=True):
    """`programs`: the persistent grid (stage 'lowered'); at stage 'source'/'expanded' the same number
    of programs run the high-level stream_k op, which splits the work the same way.  `stream_k`:
    the lowering ('persistent' by default, or 'split-k': split kernel + combine kernel).  `lse`
    False: the kernel compiled without its LSE (the op's form)."""
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    sq, qb = _strided_args("sq", q, layouts[0], dtype)
    sk, kb = _strided_args("sk", k, layouts[1], dtype)
    sv, vb = _strided_args("sv", v, layouts[2], dtype)
    args = dict(q=qb, k=kb, v=vb, o=tr.full((B, H, Nq, D), 7.0, dtype),
                **sq, **sk, **sv, B=B, H=H, HKV=HKV, Nq=Nq, Nk=Nk, scale=f32(scale))
    defines = dict(D=D, BLOCK_M=BM, BLOCK_N=BN, CAUSAL=causal, DTYPE=dtype, **(extra_defines or {}))
    outputs = _outputs_and_lse(args, defines, lse, (B, H, Nq))
    return tr.run(tsl, "lean_attention", (programs,), args, defines, outputs=outputs, stage=stage,
                  stream_k=stream_k)


# ---------------------------------------------------------------------------------------------
# mta.tsl

# Two warpgroups (the kernels' defaults are Hopper's 4-warp tiles, which the ops' tests in
# test/gpu run): 8-warp tiles, the sm_80 and sm_90 ops' and wgmma over two warpgroups.
MTA_WARPS = 8


def mta_conv_keys(k, w, scale, BN, dtype="f16", layout="bnhd"):
    """The convolved keys kc [B*H, cdiv(N, BN), 2*BN, cq*D] of mta_conv_keys on grid
    (cdiv(N, BN), B*H): per key block its BN hi rows, then its BN lo rows."""
    B, HKV, N, D = k.shape
    H, cq, ck = w.shape
    sk, kb = _strided_args("sk", k, layout, dtype)
    kc = tr.full((B * H, cdiv(N, BN), 2 * BN, cq * D), 7.0, dtype)
    args = dict(k=kb, w=tr.Buffer(w, "f32"), kc=kc, **sk,
                H=H, HKV=HKV, N=N, scale=f32(scale))
    return tr.run("mta.tsl", "mta_conv_keys", (cdiv(N, BN), B * H), args,
                  dict(D=D, CQ=cq, CK=ck, BLOCK_N=BN, DTYPE=dtype), outputs=["kc"])["kc"]


def mta_fwd(q, k, v, w, scale, BM, BN, dtype="f16", layout="bnhd", conv_keys=False):
    """conv_keys: the far key blocks through the convolved keys (CONV_KEYS, mta_conv_keys first)."""
    B, H, N, D = q.shape
    HKV = k.shape[1]
    _, cq, ck = w.shape
    sq, qb = _strided_args("sq", q, layout, dtype)
    sk, kb = _strided_args("sk", k, "bhnd", dtype)
    sv, vb = _strided_args("sv", v, layout, dtype)
    kc = mta_conv_keys(k, w, scale, BN, dtype, "bhnd") if conv_keys else np.zeros(1)
    args = dict(q=qb, k=kb, v=vb, w=tr.Buffer(w, "f32"), kc=tr.Buffer(kc.reshape(-1), dtype),
                o=tr.full((B, H, N, D), 7.0, dtype), lse=tr.full((B, H, N), 7.0, "f32"), **sq, **sk,
                **sv, H=H, HKV=HKV, N=N, scale=f32(scale))
    return tr.run("mta.tsl", "mta_fwd", (cdiv(N, BM), B * H), args,
                  dict(D=D, CQ=cq, CK=ck, BLOCK_M=BM, BLOCK_N=BN, DTYPE=dtype, NUM_WARPS=MTA_WARPS,
                       CONV_KEYS=conv_keys), outputs=["o", "lse"])


def mta_bwd_preprocess(o, do, BM, dtype="f16", layout="bnhd"):
    return _bwd_preprocess("mta.tsl", "mta_bwd_preprocess", "N", o, do, BM, dtype, layout)


def mta_bwd(q, k, v, w, do, lse, delta, scale, BM, BN, dtype="f16", layout="bnhd"):
    B, H, N, D = q.shape
    HKV = k.shape[1]
    _, cq, ck = w.shape
    sq, qb = _strided_args("sq", q, layout, dtype)
    sk, kb = _strided_args("sk", k, "bhnd", dtype)
    sv, vb = _strided_args("sv", v, layout, dtype)
    sdo, dob = _strided_args("sdo", do, layout, dtype)
    args = dict(q=qb, k=kb, v=vb, w=tr.Buffer(w, "f32"), do=dob, lse=tr.Buffer(lse, "f32"),
                delta=tr.Buffer(delta, "f32"), dq=tr.zeros((B, H, N, D), "f32"),
                dk=tr.full((B, HKV, N, D), 7.0, dtype), dv=tr.full((B, HKV, N, D), 7.0, dtype),
                dw=tr.zeros((H, cq, ck), "f32"),
                **sq, **sk, **sv, **sdo, H=H, HKV=HKV, N=N, scale=f32(scale))
    out = tr.run("mta.tsl", "mta_bwd", (cdiv(N, BN), B * HKV), args,
                 dict(D=D, CQ=cq, CK=ck, BLOCK_M=BM, BLOCK_N=BN, DTYPE=dtype, NUM_WARPS=MTA_WARPS),
                 outputs=["dq", "dk", "dv", "dw"])
    return _scaled(out, "dq", scale)


def mta_decode(q_recent, k, v, w, N, scale, nsplit, BN, BS, dtype="f16"):
    """mta_decode_split on grid (nsplit, B*H) then mta_decode_combine on (B*H,).  q_recent holds the
    QN newest query rows (positions N-QN .. N-1).  Returns (o [B,H,1,D], lse [B,H,1], parts)."""
    B, H, QN, D = q_recent.shape
    HKV = k.shape[1]
    _, cq, ck = w.shape
    sq, qb = _strided_args("sq", q_recent, "bhnd", dtype)
    sk, kb = _strided_args("sk", k, "bnhd", dtype)
    sv, vb = _strided_args("sv", v, "bhnd", dtype)
    args = dict(q=qb, k=kb, v=vb, w=tr.Buffer(w, "f32"),
                o_part=tr.full((B * H, nsplit, D), float("nan"), "f32"),
                lse_part=tr.full((B * H, nsplit), float("nan"), "f32"),
                **sq, **sk, **sv, H=H, HKV=HKV, N=N, QN=QN, scale=f32(scale))
    parts = tr.run("mta.tsl", "mta_decode_split", (nsplit, B * H), args,
                   dict(D=D, CQ=cq, CK=ck, BLOCK_N=BN, DTYPE=dtype), outputs=["o_part", "lse_part"])
    args = dict(o_part=tr.Buffer(parts["o_part"], "f32"), lse_part=tr.Buffer(parts["lse_part"], "f32"),
                o=tr.full((B, H, 1, D), 7.0, dtype), lse=tr.full((B, H, 1), 7.0, "f32"), NSPLIT=nsplit)
    out = tr.run("mta.tsl", "mta_decode_combine", (B * H,), args, dict(D=D, BLOCK_S=BS, DTYPE=dtype),
                 outputs=["o", "lse"])
    return out["o"], out["lse"], parts


# ---------------------------------------------------------------------------------------------
# attention_kl.tsl

def _kl_args(tq, tk, sq, sk, layouts, dtype):
    stq, tqb = _strided_args("stq", tq, layouts[0], dtype)
    stk, tkb = _strided_args("stk", tk, layouts[1], dtype)
    ssq, sqb = _strided_args("ssq", sq, layouts[2], dtype)
    ssk, skb = _strided_args("ssk", sk, layouts[3], dtype)
    return dict(tq=tqb, tk=tkb, sq=sqb, sk=skb), {**stq, **stk, **ssq, **ssk}


def kl_fwd(tq, tk, sq, sk, scale_t, scale_s, causal, BM, BN, dtype="f16",
           layouts=("bnhd", "bhnd", "bhnd", "bnhd")):
    """kl (B, H, Nq); lse_t, lse_s in rows of NQS = Nq rounded up to 4, as the op lays them out
    for attention_kl_bwd (B, H, NQS)."""
    B, H, Nq, DT = tq.shape
    HKT, Nk, DS, HKS = tk.shape[1], tk.shape[2], sq.shape[3], sk.shape[1]
    nqs = statistics_rows(Nq)
    bufs, strides = _kl_args(tq, tk, sq, sk, layouts, dtype)
    args = dict(**bufs, kl=tr.full((B, H, Nq), 7.0, "f32"), lse_t=tr.full((B, H, nqs), 7.0, "f32"),
                lse_s=tr.full((B, H, nqs), 7.0, "f32"), **strides, H=H, HKT=HKT, HKS=HKS, Nq=Nq, Nk=Nk,
                NQS=nqs, scale_t=f32(scale_t), scale_s=f32(scale_s))
    return tr.run("attention_kl.tsl", "attention_kl_fwd", (cdiv(Nq, BM), B * H), args,
                  dict(DT=DT, DS=DS, CAUSAL=causal, BLOCK_M=BM, BLOCK_N=BN, DTYPE=dtype),
                  outputs=["kl", "lse_t", "lse_s"])


def kl_bwd(tq, tk, sq, sk, lse_t, lse_s, g, scale_t, scale_s, causal, BM, BN, dtype="f16",
           layouts=("bnhd", "bhnd", "bhnd", "bnhd"), unmasked_loop=False, extra_defines=None):
    """lse_t, lse_s: kl_fwd's (B, H, NQS); g: the rows' upstream gradients (B, H, Nq), or a
    number, every row's (UNIFORM_G)."""
    B, H, Nq, DT = tq.shape
    HKT, Nk, DS, HKS = tk.shape[1], tk.shape[2], sq.shape[3], sk.shape[1]
    bufs, strides = _kl_args(tq, tk, sq, sk, layouts, dtype)
    uniform = np.ndim(g) == 0
    g = np.reshape(g, (1,)) if uniform else g
    args = dict(**bufs, lse_t=tr.Buffer(lse_t, "f32"), lse_s=tr.Buffer(lse_s, "f32"), g=tr.Buffer(g, "f32"),
                dsq=tr.zeros((B, H, Nq, DS), "f32"), dsk=tr.full((B, HKS, Nk, DS), 7.0, dtype),
                **strides, H=H, HKT=HKT, HKS=HKS, Nq=Nq, Nk=Nk, NQS=lse_t.shape[-1],
                scale_t=f32(scale_t), scale_s=f32(scale_s))
    out = tr.run("attention_kl.tsl", "attention_kl_bwd", (cdiv(Nk, BN), B * HKS), args,
                 dict(DT=DT, DS=DS, CAUSAL=causal, BLOCK_M=BM, BLOCK_N=BN, DTYPE=dtype,
                      UNMASKED_LOOP=unmasked_loop, UNIFORM_G=uniform, **(extra_defines or {})),
                 outputs=["dsq", "dsk"])
    return _scaled(out, "dsq", scale_s)
