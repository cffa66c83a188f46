"""Ready-made attention ops on (B, H, N, D) arrays, running the kernels of kernels/*.tsl.

    o = tessel.attention(q, k, v, causal=True)          # flash attention (prefill)
    o = tessel.lean_attention(q, k, v)                  # decode: 1..16 newest query rows, stream-K
    o = tessel.mta_attention(q, k, v, w)                # Multi-Token Attention, w: (H, cq, ck)
    kl = tessel.attention_kl(q_t, k_t, q_s, k_s)        # StreamKL: KL(teacher ‖ student) per row

Inputs are NumPy arrays today and run on the CPU interpreter. float16 arrays run the kernels in f16;
float32 arrays run them in bf16 (NumPy has no bfloat16: the inputs are rounded to bf16 on the way
in and the output is float32 holding bf16 values); q, k, v (q_t, k_t, q_s, k_s) share one dtype.
Keys and values may have fewer heads than queries (GQA: H a multiple of HKV; query head h reads
KV head h // (H // HKV)). `scale` multiplies Q Kᵀ (default 1/sqrt(D)). Bad input raises TypeError
(dtype, type) or ValueError (shape, head dim, GQA ratio, sizes) naming the op and the argument,
before anything runs. Each kernel is compiled once per configuration (the on-disk cache keeps it
for later processes).

Structure: each op checks its arguments, then calls a `_*_forward` function that launches the
kernel and returns the output together with what a backward pass needs (the per-row LSEs). The
GPU half wraps the same forwards in torch.autograd.Function classes whose backward launches the
backward kernels of the same files (attention_bwd, mta_bwd, attention_kl_bwd).
"""

import math
import os

import numpy as np

from .compiler import cdiv, jit

KERNELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")

# Head dims the kernels are tested with (constexpr D; each value is one more compilation).
HEAD_DIMS = (16, 32, 64, 128)
# The decode kernel's query tile: at most this many query rows.
LEAN_MAX_QUERIES = 16
REDUCTIONS = ("none", "sum", "mean", "batchmean")

# Tile sizes on the interpreter: small tiles keep masked-off work low at small sizes.
_BLOCKS = {"attention": (32, 32), "lean_attention": (LEAN_MAX_QUERIES, 32),
           "mta_attention": (16, 16), "attention_kl": (32, 32)}
# Persistent programs of lean_attention on the interpreter (enough to split units).
_LEAN_PROGRAMS = 8

_jit_kernels = {}


def _kernel(tsl, name):
    """The JITKernel `name` of kernels/`tsl`, made once per process."""
    key = (tsl, name)
    if key not in _jit_kernels:
        _jit_kernels[key] = jit(os.path.join(KERNELS_DIR, tsl), kernel=name)
    return _jit_kernels[key]


# ---------------------------------------------------------------------------------------------
# argument checks

def _bhnd(op, name, x):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"tessel.{op}: {name} must be a NumPy array (B, H, N, D), got "
                        f"{type(x).__name__}")
    if x.ndim != 4:
        raise ValueError(f"tessel.{op}: {name} must have 4 dimensions (B, H, N, D), got shape "
                         f"{x.shape}")
    return x.shape


def _element_type(op, arrays):
    """'f16' or 'bf16' from the one dtype of `arrays` ({name: array})."""
    dtypes = {name: a.dtype for name, a in arrays.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{name} {dt}" for name, dt in dtypes.items())
        raise TypeError(f"tessel.{op}: the inputs must share one dtype, got {listed}")
    dtype = next(iter(dtypes.values()))
    if dtype == np.float16:
        return "f16"
    if dtype == np.float32:
        return "bf16"
    raise TypeError(f"tessel.{op}: unsupported dtype {dtype} (float16 runs in f16, float32 in "
                    f"bf16)")


def _head_dim(op, name, d):
    if d not in HEAD_DIMS:
        raise ValueError(f"tessel.{op}: head dim {d} of {name} is not supported "
                         f"(supported: {', '.join(map(str, HEAD_DIMS))})")


def _gqa(op, q_name, h, kv_name, hkv):
    if hkv < 1 or h % hkv:
        raise ValueError(f"tessel.{op}: the {h} heads of {q_name} must be a multiple of the "
                         f"{hkv} heads of {kv_name} (GQA)")


def _same(op, what, **values):
    if len(set(values.values())) > 1:
        listed = ", ".join(f"{name} {v}" for name, v in values.items())
        raise ValueError(f"tessel.{op}: {what} must match, got {listed}")


def _scale(op, scale, d, name="scale"):
    if scale is None:
        return 1.0 / math.sqrt(d)
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.integer,
                                                                     np.floating)):
        raise TypeError(f"tessel.{op}: {name} must be a real number, got {type(scale).__name__}")
    if not math.isfinite(scale):
        raise ValueError(f"tessel.{op}: {name} must be finite, got {scale}")
    return float(scale)


def _strides(x):
    """Element strides (batch, head, row) of a contiguous (B, H, N, D) array (stride 1 in D).
    The interpreter takes flat contiguous buffers; GPU tensors will pass their own strides."""
    _, h, n, d = x.shape
    return h * n * d, n * d, d


# ---------------------------------------------------------------------------------------------
# flash attention

def attention(q, k, v, causal=False, scale=None):
    """softmax(Q Kᵀ · scale) V.  q (B, H, Nq, D); k, v (B, HKV, Nk, D).  causal: row i sees keys
    j <= i (top-left aligned; needs Nq == Nk).  Returns O (B, H, Nq, D), q's dtype."""
    B, H, Nq, D = _bhnd("attention", "q", q)
    Bk, HKV, Nk, Dk = _bhnd("attention", "k", k)
    _same("attention", "the shapes of k and v", k=k.shape, v=_bhnd("attention", "v", v))
    _same("attention", "batch sizes", q=B, k=Bk)
    _same("attention", "head dims", q=D, k=Dk)
    _head_dim("attention", "q", D)
    _gqa("attention", "q", H, "k", HKV)
    if causal and Nq != Nk:
        raise ValueError(f"tessel.attention: causal attention needs as many queries as keys, "
                         f"got Nq {Nq} and Nk {Nk}")
    dtype = _element_type("attention", {"q": q, "k": k, "v": v})
    return _attention_forward(q, k, v, bool(causal), _scale("attention", scale, D), dtype)[0]


def _attention_forward(q, k, v, causal, scale, dtype):
    """(O, LSE) from checked inputs."""
    q, k, v = (np.ascontiguousarray(x) for x in (q, k, v))
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    bm, bn = _BLOCKS["attention"]
    o = np.zeros(q.shape, q.dtype)
    lse = np.zeros((B, H, Nq), np.float32)
    _kernel("attention.tsl", "attention_fwd")[(cdiv(Nq, bm), B * H)](
        q, k, v, o, lse, *_strides(q), *_strides(k), *_strides(v), H, HKV, Nq, Nk, scale,
        D=D, CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn, DTYPE=dtype)
    return o, lse


# ---------------------------------------------------------------------------------------------
# LeanAttention (decode)

def lean_attention(q, k, v, causal=False, scale=None):
    """Decode attention with a stream-K split of the keys.  q (B, H, Nq, D) holds the Nq newest
    query rows (1 <= Nq <= 16); k, v (B, HKV, Nk, D).  causal: the queries are the last Nq
    positions (row r sees keys j <= Nk - Nq + r; needs Nk >= Nq).  Returns O (B, H, Nq, D)."""
    op = "lean_attention"
    B, H, Nq, D = _bhnd(op, "q", q)
    Bk, HKV, Nk, Dk = _bhnd(op, "k", k)
    _same(op, "the shapes of k and v", k=k.shape, v=_bhnd(op, "v", v))
    _same(op, "batch sizes", q=B, k=Bk)
    _same(op, "head dims", q=D, k=Dk)
    _head_dim(op, "q", D)
    _gqa(op, "q", H, "k", HKV)
    if not 1 <= Nq <= LEAN_MAX_QUERIES:
        raise ValueError(f"tessel.{op}: decode takes 1 to {LEAN_MAX_QUERIES} query rows, got "
                         f"Nq {Nq} (use tessel.attention for prefill)")
    if causal and Nk < Nq:
        raise ValueError(f"tessel.{op}: causal decode needs at least as many keys as queries, "
                         f"got Nq {Nq} and Nk {Nk}")
    dtype = _element_type(op, {"q": q, "k": k, "v": v})
    return _lean_attention_forward(q, k, v, bool(causal), _scale(op, scale, D), dtype)[0]


def _lean_attention_forward(q, k, v, causal, scale, dtype):
    q, k, v = (np.ascontiguousarray(x) for x in (q, k, v))
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    bm, bn = _BLOCKS["lean_attention"]
    o = np.zeros(q.shape, q.dtype)
    lse = np.zeros((B, H, Nq), np.float32)
    units, iters = B * H, max(cdiv(Nk, bn), 1)
    _kernel("lean_attention.tsl", "lean_attention")(
        q, k, v, o, lse, *_strides(q), *_strides(k), *_strides(v), B, H, HKV, Nq, Nk, scale,
        D=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, DTYPE=dtype,
        programs=min(units * iters, _LEAN_PROGRAMS))
    return o, lse


# ---------------------------------------------------------------------------------------------
# Multi-Token Attention

def mta_attention(q, k, v, weight, scale=None):
    """Multi-Token Attention (causal self-attention with a key-query convolution of the scores,
    see kernels/mta.tsl for the convention).  q (B, H, N, D); k, v (B, HKV, N, D); weight
    (H, cq, ck) real (used in f32), cq query offsets into the past, ck keys centred.  Returns O."""
    op = "mta_attention"
    B, H, N, D = _bhnd(op, "q", q)
    Bk, HKV, Nk, Dk = _bhnd(op, "k", k)
    _same(op, "the shapes of k and v", k=k.shape, v=_bhnd(op, "v", v))
    _same(op, "batch sizes", q=B, k=Bk)
    _same(op, "head dims", q=D, k=Dk)
    _same(op, "query and key lengths (MTA is causal self-attention)", q=N, k=Nk)
    _head_dim(op, "q", D)
    _gqa(op, "q", H, "k", HKV)
    if not isinstance(weight, np.ndarray):
        raise TypeError(f"tessel.{op}: weight must be a NumPy array (H, cq, ck), got "
                        f"{type(weight).__name__}")
    if not np.issubdtype(weight.dtype, np.floating):
        raise TypeError(f"tessel.{op}: weight must be a float array, got {weight.dtype}")
    if weight.ndim != 3 or weight.shape[0] != H or min(weight.shape[1:]) < 1:
        raise ValueError(f"tessel.{op}: weight must have shape (H={H}, cq >= 1, ck >= 1), got "
                         f"{weight.shape}")
    dtype = _element_type(op, {"q": q, "k": k, "v": v})
    return _mta_forward(q, k, v, weight, _scale(op, scale, D), dtype)[0]


def _mta_forward(q, k, v, weight, scale, dtype):
    q, k, v = (np.ascontiguousarray(x) for x in (q, k, v))
    w = np.ascontiguousarray(weight, dtype=np.float32)
    B, H, N, D = q.shape
    _, cq, ck = w.shape
    bm, bn = _BLOCKS["mta_attention"]
    o = np.zeros(q.shape, q.dtype)
    lse = np.zeros((B, H, N), np.float32)
    _kernel("mta.tsl", "mta_fwd")[(cdiv(N, bm), B * H)](
        q, k, v, w, o, lse, *_strides(q), *_strides(k), *_strides(v), H, k.shape[1], N, scale,
        D=D, CQ=cq, CK=ck, BLOCK_M=bm, BLOCK_N=bn, DTYPE=dtype)
    return o, lse


# ---------------------------------------------------------------------------------------------
# StreamKL

def attention_kl(q_t, k_t, q_s, k_s, causal=False, scale=None, reduction="sum"):
    """KL(P ‖ Q) per query row between the teacher's attention P = softmax(q_t k_tᵀ · scale_t)
    and the student's Q = softmax(q_s k_sᵀ · scale_s), without materialising either.
    q_t (B, H, Nq, DT), k_t (B, HKT, Nk, DT), q_s (B, H, Nq, DS), k_s (B, HKS, Nk, DS): teacher
    and student may differ in head dim and key heads.  scale: None (1/sqrt(DT), 1/sqrt(DS)), one
    number for both, or (scale_t, scale_s).  causal: row i sees keys j <= i (needs Nq == Nk).
    reduction: 'none' (the (B, H, Nq) float32 array), 'sum', 'mean' (over the B·H·Nq rows) or
    'batchmean' (sum / B), a float32 scalar; accumulated in float64 from the f32 rows."""
    op = "attention_kl"
    B, H, Nq, DT = _bhnd(op, "q_t", q_t)
    Bkt, HKT, Nk, DTk = _bhnd(op, "k_t", k_t)
    Bs, Hs, Nqs, DS = _bhnd(op, "q_s", q_s)
    Bks, HKS, Nks, DSk = _bhnd(op, "k_s", k_s)
    _same(op, "batch sizes", q_t=B, k_t=Bkt, q_s=Bs, k_s=Bks)
    _same(op, "query heads", q_t=H, q_s=Hs)
    _same(op, "query lengths", q_t=Nq, q_s=Nqs)
    _same(op, "key lengths", k_t=Nk, k_s=Nks)
    _same(op, "teacher head dims", q_t=DT, k_t=DTk)
    _same(op, "student head dims", q_s=DS, k_s=DSk)
    _head_dim(op, "q_t", DT)
    _head_dim(op, "q_s", DS)
    _gqa(op, "q_t", H, "k_t", HKT)
    _gqa(op, "q_s", H, "k_s", HKS)
    if causal and Nq != Nk:
        raise ValueError(f"tessel.{op}: causal needs as many queries as keys, got Nq {Nq} and "
                         f"Nk {Nk}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"tessel.{op}: reduction must be one of {', '.join(REDUCTIONS)}, got "
                         f"{reduction!r}")
    if isinstance(scale, (tuple, list)):
        if len(scale) != 2:
            raise ValueError(f"tessel.{op}: scale must be a number or (scale_t, scale_s)")
        scale_t, scale_s = _scale(op, scale[0], DT, "scale_t"), _scale(op, scale[1], DS, "scale_s")
    else:
        scale_t, scale_s = _scale(op, scale, DT), _scale(op, scale, DS)
    dtype = _element_type(op, {"q_t": q_t, "k_t": k_t, "q_s": q_s, "k_s": k_s})
    kl = _attention_kl_forward(q_t, k_t, q_s, k_s, bool(causal), scale_t, scale_s, dtype)[0]
    if reduction == "none":
        return kl
    total = kl.sum(dtype=np.float64)
    if reduction == "mean":
        total /= kl.size
    elif reduction == "batchmean":
        total /= B
    return np.float32(total)


def _attention_kl_forward(q_t, k_t, q_s, k_s, causal, scale_t, scale_s, dtype):
    """(KL, LSE teacher, LSE student), each (B, H, Nq) float32."""
    q_t, k_t, q_s, k_s = (np.ascontiguousarray(x) for x in (q_t, k_t, q_s, k_s))
    B, H, Nq, DT = q_t.shape
    bm, bn = _BLOCKS["attention_kl"]
    kl, lse_t, lse_s = (np.zeros((B, H, Nq), np.float32) for _ in range(3))
    _kernel("attention_kl.tsl", "attention_kl_fwd")[(cdiv(Nq, bm), B * H)](
        q_t, k_t, q_s, k_s, kl, lse_t, lse_s,
        *_strides(q_t), *_strides(k_t), *_strides(q_s), *_strides(k_s),
        H, k_t.shape[1], k_s.shape[1], Nq, k_t.shape[2], scale_t, scale_s,
        DT=DT, DS=q_s.shape[3], CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn, DTYPE=dtype)
    return kl, lse_t, lse_s
