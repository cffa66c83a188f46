"""Ready-made attention ops on (B, H, N, D) tensors, running the kernels of kernels/*.tsl.

    o = tessel.attention(q, k, v, causal=True)          # flash attention (prefill)
    o = tessel.lean_attention(q, k, v)                  # decode: the newest query rows, stream-K
    o = tessel.mta_attention(q, k, v, w)                # Multi-Token Attention, w: (H, cq, ck)
    kl = tessel.attention_kl(q_t, k_t, q_s, k_s)        # StreamKL: KL(teacher ‖ student) per row

Two kinds of input, one set of kernels:

  * PyTorch CUDA tensors (float16 or bfloat16; the weight of mta_attention float32) run on the GPU
    and return PyTorch tensors. attention, mta_attention and attention_kl are differentiable
    (torch.autograd.Function; their backward passes launch the backward kernels of the same files,
    by recomputation from the saved per-row LSEs). Any strides with a contiguous last dimension are
    taken as they are when they are multiples of 8 elements and the tensor starts 16-byte aligned
    (other layouts are copied); launches go on the current stream.
  * NumPy arrays run on the CPU interpreter: float16 arrays in f16; float32 arrays in bf16 (NumPy
    has no bfloat16: the inputs are rounded to bf16 on the way in and the output is float32 holding
    bf16 values).

Keys and values may have fewer heads than queries (GQA: H a multiple of HKV; query head h reads
KV head h // (H // HKV)). `scale` multiplies Q Kᵀ (default 1/sqrt(D)). Bad input raises TypeError
(dtype, type, device) or ValueError (shape, head dim, GQA ratio, sizes) naming the op and the
argument, before anything runs. Each kernel is compiled once per configuration (the on-disk cache
keeps it for later processes; a runtime-only package finds it precompiled, see
`python -m tessel.precompile`, which compiles every configuration `gpu_configurations` lists).
"""

import math
import os
import sys

import numpy as np

from . import gpu as _gpu
from .compiler import cdiv, jit

KERNELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")

# Head dims the kernels are tested with (constexpr D; each value is one more compilation).
HEAD_DIMS = (16, 32, 64, 128)
# The decode kernel's query tiles: a unit of lean_attention is one (batch, KV head), and its tile
# holds the G·Nq query rows of the G = H / HKV query heads that share the KV head, padded to a
# power of two of at least 16 rows (the M of the tensor-core MMA) and at most LEAN_MAX_ROWS (the
# largest tile compiled: GQA 8:1 with 16 query rows).  With D = 128 the current GPU lowering (4
# warps) already spills registers from 32 rows (ptxas, sm_90: ~0.2 KB at 32 rows, ~3.7 KB at 128);
# one-row decode up to GQA 16:1 stays in the 16-row tile.
LEAN_BLOCK_M = (16, 32, 64, 128)
LEAN_MAX_ROWS = LEAN_BLOCK_M[-1]
REDUCTIONS = ("none", "sum", "mean", "batchmean")
# lean_attention's strategies and the lowering of its stream_k each one compiles.
LEAN_STRATEGIES = {"stream-k": "persistent", "split-k": "split-k"}

# (BLOCK_M, BLOCK_N) per kernel. On the interpreter small tiles keep masked-off work low at small
# sizes; on the GPU GPU_TUNED refines them. lean_attention's BLOCK_M is None: it is picked per
# call from the rows of a GQA group (lean_block_m), and on the GPU its tiles from that
# (lean_tiles).
BLOCKS = {
    "interpreter": {"attention_fwd": (32, 32), "attention_bwd": (32, 32),
                    "lean_attention": (None, 32), "mta_fwd": (16, 16),
                    "mta_bwd": (16, 16), "attention_kl_fwd": (32, 32),
                    "attention_kl_bwd": (32, 32)},
    "gpu": {"attention_fwd": (64, 32), "attention_bwd": (32, 32),
            "mta_fwd": (32, 32), "mta_bwd": (16, 32),
            "attention_kl_fwd": (32, 32), "attention_kl_bwd": (32, 32)},
}
# On the GPU, per (kernel, head dim): tiles, warps and pipeline depths measured fastest on an H100
# (scripts/gpu/tune.py; they override BLOCKS). lean_attention's depend on its query tile instead
# (lean_tiles).
GPU_TUNED = {
    ("attention_fwd", 16): dict(BLOCK_M=128, BLOCK_N=64, NUM_WARPS=4, NUM_STAGES=3),
    ("attention_fwd", 32): dict(BLOCK_M=128, BLOCK_N=64, NUM_WARPS=4, NUM_STAGES=3),
    ("attention_fwd", 64): dict(BLOCK_M=128, BLOCK_N=64, NUM_WARPS=4, NUM_STAGES=3),
    ("attention_fwd", 128): dict(BLOCK_M=128, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=2),
    ("attention_bwd", 64): dict(BLOCK_M=32, BLOCK_N=64, NUM_WARPS=4, NUM_STAGES=3),
    ("attention_bwd", 128): dict(BLOCK_M=64, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=3),
    ("attention_kl_fwd", 128): dict(BLOCK_M=64, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=2),
    ("attention_kl_bwd", 128): dict(BLOCK_M=64, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=2),
    ("mta_fwd", 64): dict(BLOCK_M=64, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=3),
    ("mta_bwd", 64): dict(BLOCK_M=32, BLOCK_N=32, NUM_WARPS=8, NUM_STAGES=3),
}
# On Hopper (target sm_90a) the dots whose BLOCK_M is a multiple of 16 · NUM_WARPS run on the
# warpgroup MMA (wgmma); these entries override GPU_TUNED there (scripts/gpu/tune.py, H100).
GPU_TUNED_SM90A = {
    ("attention_fwd", 128): dict(BLOCK_M=128, BLOCK_N=128, NUM_WARPS=8, NUM_STAGES=2),
}
# Rows per program of the Delta = rowsum(dO ∘ O) kernels.
PREPROCESS_ROWS = 64
# Persistent programs of lean_attention on the interpreter (enough to split units).
_LEAN_PROGRAMS = 8

_jit_kernels = {}


def _torch():
    return sys.modules.get("torch")


def _is_torch(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


class _Backend:
    """Where an op's kernels run and how its buffers are made: NumPy arrays on the interpreter,
    or PyTorch CUDA tensors on the GPU."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.name = "gpu" if gpu else "interpreter"

    def kernel(self, tsl, name, stream_k="persistent"):
        """The JITKernel `name` of kernels/`tsl` on this back end, made once per process."""
        key = (tsl, name, self.gpu, stream_k)
        if key not in _jit_kernels:
            _jit_kernels[key] = jit(os.path.join(KERNELS_DIR, tsl), kernel=name,
                                    interpret=not self.gpu, stream_k=stream_k)
        return _jit_kernels[key]

    def blocks(self, kernel):
        return BLOCKS[self.name][kernel]

    def tiles(self, kernel, d):
        """The tile constexprs of `kernel` for head dim `d`: BLOCK_M, BLOCK_N and, where tuned,
        NUM_WARPS and NUM_STAGES."""
        return gpu_tiles(kernel, d) if self.gpu else dict(zip(("BLOCK_M", "BLOCK_N"),
                                                              self.blocks(kernel)))

    def input(self, x):
        """The array as the kernels take it: contiguous along D (and C-contiguous for NumPy).
        On the GPU also what the kernels' multiple_of hints promise, so that their loads are
        16-byte vectors: the start 16-byte aligned and the batch, head and row strides
        multiples of 8 elements; other tensors are copied."""
        if not self.gpu:
            return np.ascontiguousarray(x)
        if x.stride(-1) == 1 and x.data_ptr() % 16 == 0 and \
                all(s % 8 == 0 for s in x.stride()[:-1]):
            return x
        return x.clone(memory_format=_torch().contiguous_format)

    @staticmethod
    def strides(x):
        """Element strides (batch, head, row) of a (B, H, N, D) array with stride 1 along D."""
        if isinstance(x, np.ndarray):
            _, h, n, d = x.shape
            return h * n * d, n * d, d
        return tuple(x.stride()[:3])

    def empty(self, shape, like, dtype=None):
        """An output buffer (every element is written by the kernel); dtype None: like's."""
        if self.gpu:
            return _torch().empty(shape, dtype=dtype or like.dtype, device=like.device)
        return np.zeros(shape, dtype or like.dtype)

    def zeros(self, shape, like, dtype):
        """A zeroed buffer (atomically accumulated gradients)."""
        if self.gpu:
            return _torch().zeros(shape, dtype=dtype, device=like.device)
        return np.zeros(shape, dtype)

    def f32(self):
        return _torch().float32 if self.gpu else np.float32


# ---------------------------------------------------------------------------------------------
# argument checks

def _bhnd(op, name, x):
    if not isinstance(x, np.ndarray) and not _is_torch(x):
        raise TypeError(f"tessel.{op}: {name} must be a NumPy array or a torch tensor "
                        f"(B, H, N, D), got {type(x).__name__}")
    if x.ndim != 4:
        raise ValueError(f"tessel.{op}: {name} must have 4 dimensions (B, H, N, D), got shape "
                         f"{tuple(x.shape)}")
    return tuple(x.shape)


def _backend(op, arrays):
    """The _Backend of the inputs ({name: array}), which must all be NumPy arrays or all CUDA
    tensors on one device."""
    torch_names = [n for n, a in arrays.items() if _is_torch(a)]
    if not torch_names:
        return _Backend(gpu=False)
    if len(torch_names) != len(arrays):
        other = next(n for n in arrays if n not in torch_names)
        raise TypeError(f"tessel.{op}: {torch_names[0]} is a torch tensor but {other} is not; "
                        f"pass all inputs as CUDA tensors (or all as NumPy arrays)")
    devices = {n: arrays[n].device for n in torch_names}
    for n, device in devices.items():
        if device.type != "cuda":
            raise TypeError(f"tessel.{op}: {n} is on {device}; tessel runs torch tensors on a "
                            f"CUDA device (NumPy arrays run on the CPU interpreter)")
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{n} {d}" for n, d in devices.items())
        raise ValueError(f"tessel.{op}: the inputs must be on one device, got {listed}")
    return _Backend(gpu=True)


def _element_type(op, arrays):
    """'f16' or 'bf16' from the one dtype of `arrays` ({name: array})."""
    dtypes = {name: a.dtype for name, a in arrays.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{name} {dt}" for name, dt in dtypes.items())
        raise TypeError(f"tessel.{op}: the inputs must share one dtype, got {listed}")
    dtype = next(iter(dtypes.values()))
    torch = _torch()
    if torch is not None and isinstance(dtype, torch.dtype):
        names, supported = {torch.float16: "f16", torch.bfloat16: "bf16"}, \
            "torch tensors: float16 or bfloat16"
    else:
        names, supported = {np.dtype(np.float16): "f16", np.dtype(np.float32): "bf16"}, \
            "float16 runs in f16, float32 in bf16"
    if dtype not in names:
        raise TypeError(f"tessel.{op}: unsupported dtype {dtype} ({supported})")
    return names[dtype]


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


def _attention_args(op, q, k, v):
    """Checks q (B, H, Nq, D) and k, v (B, HKV, Nk, D); returns (B, H, HKV, Nq, Nk, D)."""
    B, H, Nq, D = _bhnd(op, "q", q)
    Bk, HKV, Nk, Dk = _bhnd(op, "k", k)
    _same(op, "the shapes of k and v", k=(Bk, HKV, Nk, Dk), v=_bhnd(op, "v", v))
    _same(op, "batch sizes", q=B, k=Bk)
    _same(op, "head dims", q=D, k=Dk)
    _head_dim(op, "q", D)
    _gqa(op, "q", H, "k", HKV)
    return B, H, HKV, Nq, Nk, D


def _autograd(inputs):
    """Whether a torch op must record its graph (grad mode on and an input requiring grad)."""
    torch = _torch()
    return torch is not None and torch.is_grad_enabled() and any(
        _is_torch(x) and x.requires_grad for x in inputs)


# ---------------------------------------------------------------------------------------------
# flash attention

def attention(q, k, v, causal=False, scale=None):
    """softmax(Q Kᵀ · scale) V.  q (B, H, Nq, D); k, v (B, HKV, Nk, D).  causal: row i sees keys
    j <= i (top-left aligned; needs Nq == Nk).  Returns O (B, H, Nq, D), q's dtype."""
    op = "attention"
    *_, Nq, Nk, D = _attention_args(op, q, k, v)
    if causal and Nq != Nk:
        raise ValueError(f"tessel.{op}: causal attention needs as many queries as keys, "
                         f"got Nq {Nq} and Nk {Nk}")
    be = _backend(op, {"q": q, "k": k, "v": v})
    dtype = _element_type(op, {"q": q, "k": k, "v": v})
    scale = _scale(op, scale, D)
    if _autograd((q, k, v)):
        return _function("attention").apply(q, k, v, bool(causal), scale, dtype)
    return _attention_forward(be, q, k, v, bool(causal), scale, dtype)[0]


def _attention_forward(be, q, k, v, causal, scale, dtype):
    """(O, LSE) from checked inputs."""
    q, k, v = (be.input(x) for x in (q, k, v))
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    tiles = be.tiles("attention_fwd", D)
    o = be.empty((B, H, Nq, D), q)
    lse = be.empty((B, H, Nq), q, be.f32())
    be.kernel("attention.tsl", "attention_fwd")[(cdiv(Nq, tiles["BLOCK_M"]), B * H)](
        q, k, v, o, lse, *be.strides(q), *be.strides(k), *be.strides(v), H, HKV, Nq, Nk, scale,
        D=D, CAUSAL=causal, DTYPE=dtype, **tiles)
    return o, lse


def _delta(be, tsl, kernel, o, do, dtype):
    """Delta = rowsum(dO ∘ O) (B, H, N) f32 by the file's preprocess kernel; o contiguous."""
    B, H, N, D = o.shape
    delta = be.empty((B, H, N), o, be.f32())
    be.kernel(tsl, kernel)[(cdiv(N, PREPROCESS_ROWS), B * H)](
        o, do, delta, *be.strides(do), H, N, D=D, BLOCK_M=PREPROCESS_ROWS, DTYPE=dtype)
    return delta


def _attention_backward(be, q, k, v, o, lse, do, causal, scale, dtype):
    """(dQ, dK, dV) in the inputs' dtype (torch tensors: the backward passes are autograd's)."""
    do = be.input(do)
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    delta = _delta(be, "attention.tsl", "attention_bwd_preprocess", o, do, dtype)
    tiles = be.tiles("attention_bwd", D)
    dq = be.zeros((B, H, Nq, D), q, be.f32())
    dk, dv = be.empty(k.shape, k), be.empty(v.shape, v)
    be.kernel("attention.tsl", "attention_bwd")[(cdiv(Nk, tiles["BLOCK_N"]), B * HKV)](
        q, k, v, do, lse, delta, dq, dk, dv, *be.strides(q), *be.strides(k), *be.strides(v),
        *be.strides(do), H, HKV, Nq, Nk, scale,
        D=D, CAUSAL=causal, DTYPE=dtype, **tiles)
    return dq.to(q.dtype), dk, dv


# ---------------------------------------------------------------------------------------------
# LeanAttention (decode)

def head_dim(constants):
    """The head dim GPU_TUNED is keyed by: D, or the larger of StreamKL's two."""
    return constants["D"] if "D" in constants else max(constants["DT"], constants["DS"])


def gpu_tiles(kernel, d, target=None):
    """The GPU's tile constexprs of `kernel` for head dim `d` when compiled for `target` (default:
    this machine's GPU; see GPU_TUNED and GPU_TUNED_SM90A)."""
    tiles = dict(zip(("BLOCK_M", "BLOCK_N"), BLOCKS["gpu"][kernel]))
    tiles.update(GPU_TUNED.get((kernel, d), {}))
    if (target or _gpu.target()) == "sm_90a":
        tiles.update(GPU_TUNED_SM90A.get((kernel, d), {}))
    return tiles


def lean_tiles(block_m, gpu):
    """lean_attention's tile constexprs for a query tile of `block_m` rows. On the GPU the key
    blocks are 128 wide (64 with 128 query rows), with 8 warps from 64 rows and two pipeline
    stages (measured: decode is bound by memory, and deeper pipelines cost occupancy)."""
    if not gpu:
        return dict(BLOCK_M=block_m, BLOCK_N=BLOCKS["interpreter"]["lean_attention"][1])
    return dict(BLOCK_M=block_m, BLOCK_N=64 if block_m > 64 else 128,
                NUM_WARPS=8 if block_m >= 64 else 4, NUM_STAGES=2)


def lean_block_m(rows):
    """lean_attention's BLOCK_M for a GQA group of `rows` = G·Nq query rows: the smallest tile of
    LEAN_BLOCK_M that holds them (None if none does)."""
    return next((bm for bm in LEAN_BLOCK_M if rows <= bm), None)


def lean_attention(q, k, v, causal=False, scale=None, strategy="stream-k"):
    """Decode attention with a stream-K split of the keys.  q (B, H, Nq, D) holds the Nq newest
    query rows; k, v (B, HKV, Nk, D).  One work unit per (batch, KV head) holds the G·Nq query
    rows of the G = H / HKV query heads of its group, so K/V are read once per unit:
    1 <= G·Nq <= LEAN_MAX_ROWS (128; e.g. Nq <= 16 up to GQA 8:1, Nq <= 128 for MHA).  causal:
    the queries are the last Nq positions (row i sees keys j <= Nk - Nq + i; needs Nk >= Nq).
    strategy: how the kernel's stream_k is lowered: 'stream-k' (LeanAttention: the key blocks of
    all (batch, KV head) units split evenly over a persistent grid) or 'split-k' (FlashDecoding:
    each unit cut into equal chunks, then a combine kernel).  Returns O (B, H, Nq, D)."""
    op = "lean_attention"
    _, H, HKV, Nq, Nk, D = _attention_args(op, q, k, v)
    if Nq < 1:
        raise ValueError(f"tessel.{op}: decode takes at least one query row, got Nq {Nq}")
    if lean_block_m(H // HKV * Nq) is None:
        raise ValueError(f"tessel.{op}: a unit holds the query rows of one GQA group, at most "
                         f"{LEAN_MAX_ROWS}: got {H // HKV} query heads per KV head x Nq {Nq} = "
                         f"{H // HKV * Nq} rows (use fewer query rows per call, or "
                         f"tessel.attention for prefill)")
    if causal and Nk < Nq:
        raise ValueError(f"tessel.{op}: causal decode needs at least as many keys as queries, "
                         f"got Nq {Nq} and Nk {Nk}")
    if strategy not in LEAN_STRATEGIES:
        raise ValueError(f"tessel.{op}: strategy must be one of {', '.join(LEAN_STRATEGIES)}, "
                         f"got {strategy!r}")
    be = _backend(op, {"q": q, "k": k, "v": v})
    dtype = _element_type(op, {"q": q, "k": k, "v": v})
    return _lean_attention_forward(be, q, k, v, bool(causal), _scale(op, scale, D), dtype,
                                   LEAN_STRATEGIES[strategy])[0]


def _lean_attention_forward(be, q, k, v, causal, scale, dtype, stream_k="persistent"):
    q, k, v = (be.input(x) for x in (q, k, v))
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    tiles = lean_tiles(lean_block_m(H // HKV * Nq), be.gpu)
    bn = tiles["BLOCK_N"]
    o = be.empty((B, H, Nq, D), q)
    lse = be.empty((B, H, Nq), q, be.f32())
    # units = B * HKV (one per KV head), each of max(cdiv(Nk, bn), 1) iterations
    launch = {} if be.gpu else {"programs": min(B * HKV * max(cdiv(Nk, bn), 1), _LEAN_PROGRAMS)}
    be.kernel("lean_attention.tsl", "lean_attention", stream_k)(
        q, k, v, o, lse, *be.strides(q), *be.strides(k), *be.strides(v), B, H, HKV, Nq, Nk, scale,
        D=D, CAUSAL=causal, DTYPE=dtype, **tiles, **launch)
    return o, lse


# ---------------------------------------------------------------------------------------------
# Multi-Token Attention

def mta_attention(q, k, v, weight, scale=None):
    """Multi-Token Attention (causal self-attention with a key-query convolution of the scores,
    see kernels/mta.tsl for the convention).  q (B, H, N, D); k, v (B, HKV, N, D); weight
    (H, cq, ck) real (used in f32), cq query offsets into the past, ck keys centred.  Returns O."""
    op = "mta_attention"
    B, H, HKV, N, Nk, D = _attention_args(op, q, k, v)
    _same(op, "query and key lengths (MTA is causal self-attention)", q=N, k=Nk)
    be = _backend(op, {"q": q, "k": k, "v": v})
    if be.gpu:
        if not _is_torch(weight):
            raise TypeError(f"tessel.{op}: weight must be a torch tensor (H, cq, ck) like q, got "
                            f"{type(weight).__name__}")
        if weight.device != q.device:
            raise ValueError(f"tessel.{op}: weight is on {weight.device}, q on {q.device}")
        floating = weight.dtype.is_floating_point
    else:
        if not isinstance(weight, np.ndarray):
            raise TypeError(f"tessel.{op}: weight must be a NumPy array (H, cq, ck), got "
                            f"{type(weight).__name__}")
        floating = np.issubdtype(weight.dtype, np.floating)
    if not floating:
        raise TypeError(f"tessel.{op}: weight must be a float array, got {weight.dtype}")
    if weight.ndim != 3 or weight.shape[0] != H or min(weight.shape[1:]) < 1:
        raise ValueError(f"tessel.{op}: weight must have shape (H={H}, cq >= 1, ck >= 1), got "
                         f"{tuple(weight.shape)}")
    dtype = _element_type(op, {"q": q, "k": k, "v": v})
    scale = _scale(op, scale, D)
    if _autograd((q, k, v, weight)):
        return _function("mta").apply(q, k, v, weight, scale, dtype)
    return _mta_forward(be, q, k, v, weight, scale, dtype)[0]


def _mta_weight(be, weight):
    if be.gpu:
        return weight.to(_torch().float32).contiguous()
    return np.ascontiguousarray(weight, dtype=np.float32)


def _mta_forward(be, q, k, v, weight, scale, dtype):
    q, k, v = (be.input(x) for x in (q, k, v))
    w = _mta_weight(be, weight)
    B, H, N, D = q.shape
    _, cq, ck = w.shape
    tiles = be.tiles("mta_fwd", D)
    o = be.empty((B, H, N, D), q)
    lse = be.empty((B, H, N), q, be.f32())
    be.kernel("mta.tsl", "mta_fwd")[(cdiv(N, tiles["BLOCK_M"]), B * H)](
        q, k, v, w, o, lse, *be.strides(q), *be.strides(k), *be.strides(v), H, k.shape[1], N, scale,
        D=D, CQ=cq, CK=ck, DTYPE=dtype, **tiles)
    return o, lse


def _mta_backward(be, q, k, v, weight, o, lse, do, scale, dtype):
    """(dQ, dK, dV, dW); dW float32 (accumulated per program, then added atomically)."""
    do = be.input(do)
    w = _mta_weight(be, weight)
    B, H, N, D = q.shape
    HKV = k.shape[1]
    _, cq, ck = w.shape
    delta = _delta(be, "mta.tsl", "mta_bwd_preprocess", o, do, dtype)
    tiles = be.tiles("mta_bwd", D)
    dq = be.zeros((B, H, N, D), q, be.f32())
    dw = be.zeros((H, cq, ck), q, be.f32())
    dk, dv = be.empty(k.shape, k), be.empty(v.shape, v)
    be.kernel("mta.tsl", "mta_bwd")[(cdiv(N, tiles["BLOCK_N"]), B * HKV)](
        q, k, v, w, do, lse, delta, dq, dk, dv, dw, *be.strides(q), *be.strides(k),
        *be.strides(v), *be.strides(do), H, HKV, N, scale,
        D=D, CQ=cq, CK=ck, DTYPE=dtype, **tiles)
    return dq.to(q.dtype), dk, dv, dw


# ---------------------------------------------------------------------------------------------
# StreamKL

def attention_kl(q_t, k_t, q_s, k_s, causal=False, scale=None, reduction="sum"):
    """KL(P ‖ Q) per query row between the teacher's attention P = softmax(q_t k_tᵀ · scale_t)
    and the student's Q = softmax(q_s k_sᵀ · scale_s), without materialising either.
    q_t (B, H, Nq, DT), k_t (B, HKT, Nk, DT), q_s (B, H, Nq, DS), k_s (B, HKS, Nk, DS): teacher
    and student may differ in head dim and key heads.  scale: None (1/sqrt(DT), 1/sqrt(DS)), one
    number for both, or (scale_t, scale_s).  causal: row i sees keys j <= i (needs Nq == Nk).
    reduction: 'none' (the (B, H, Nq) float32 rows), 'sum', 'mean' (over the B·H·Nq rows) or
    'batchmean' (sum / B): a float32 scalar (a 0-d tensor for torch inputs; NumPy sums the f32
    rows in float64).  With torch inputs, gradients flow to q_s and k_s; the teacher is a
    constant (its tensors must not require grad)."""
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
    inputs = {"q_t": q_t, "k_t": k_t, "q_s": q_s, "k_s": k_s}
    be = _backend(op, inputs)
    dtype = _element_type(op, inputs)
    if be.gpu and any(x.requires_grad for x in (q_t, k_t)) and _torch().is_grad_enabled():
        raise ValueError(f"tessel.{op}: gradients for the teacher are not computed; pass "
                         f"q_t.detach() and k_t.detach()")
    if _autograd((q_s, k_s)):
        kl = _function("kl").apply(q_t, k_t, q_s, k_s, bool(causal), scale_t, scale_s, dtype)
    else:
        kl = _attention_kl_forward(be, q_t, k_t, q_s, k_s, bool(causal), scale_t, scale_s,
                                   dtype)[0]
    return _reduce(kl, reduction, B)


def _reduce(kl, reduction, batch):
    if reduction == "none":
        return kl
    if isinstance(kl, np.ndarray):
        total = kl.sum(dtype=np.float64)
        if reduction == "mean":
            total /= kl.size
        elif reduction == "batchmean":
            total /= batch
        return np.float32(total)
    if reduction == "mean":
        return kl.mean()
    return kl.sum() / batch if reduction == "batchmean" else kl.sum()


def _attention_kl_forward(be, q_t, k_t, q_s, k_s, causal, scale_t, scale_s, dtype):
    """(KL, LSE teacher, LSE student), each (B, H, Nq) float32."""
    q_t, k_t, q_s, k_s = (be.input(x) for x in (q_t, k_t, q_s, k_s))
    B, H, Nq, DT = q_t.shape
    DS = q_s.shape[3]
    tiles = be.tiles("attention_kl_fwd", max(DT, DS))
    kl, lse_t, lse_s = (be.empty((B, H, Nq), q_t, be.f32()) for _ in range(3))
    be.kernel("attention_kl.tsl", "attention_kl_fwd")[(cdiv(Nq, tiles["BLOCK_M"]), B * H)](
        q_t, k_t, q_s, k_s, kl, lse_t, lse_s,
        *be.strides(q_t), *be.strides(k_t), *be.strides(q_s), *be.strides(k_s),
        H, k_t.shape[1], k_s.shape[1], Nq, k_t.shape[2], scale_t, scale_s,
        DT=DT, DS=DS, CAUSAL=causal, DTYPE=dtype, **tiles)
    return kl, lse_t, lse_s


def _attention_kl_backward(be, q_t, k_t, q_s, k_s, lse_t, lse_s, g, causal, scale_t, scale_s,
                           dtype):
    """(dQs, dKs) of Σ g·KL, g the (B, H, Nq) upstream gradient of the rows."""
    q_t, k_t, q_s, k_s = (be.input(x) for x in (q_t, k_t, q_s, k_s))
    B, H, Nq, DT = q_t.shape
    HKS, Nk, DS = k_s.shape[1], k_s.shape[2], q_s.shape[3]
    g = g.to(be.f32()).contiguous()
    tiles = be.tiles("attention_kl_bwd", max(DT, DS))
    dsq = be.zeros((B, H, Nq, DS), q_s, be.f32())
    dsk = be.empty(k_s.shape, k_s)
    be.kernel("attention_kl.tsl", "attention_kl_bwd")[(cdiv(Nk, tiles["BLOCK_N"]), B * HKS)](
        q_t, k_t, q_s, k_s, lse_t, lse_s, g, dsq, dsk,
        *be.strides(q_t), *be.strides(k_t), *be.strides(q_s), *be.strides(k_s),
        H, k_t.shape[1], HKS, Nq, Nk, scale_t, scale_s,
        DT=DT, DS=DS, CAUSAL=causal, DTYPE=dtype, **tiles)
    return dsq.to(q_s.dtype), dsk


# ---------------------------------------------------------------------------------------------
# autograd (PyTorch); the classes are made on first use so that importing tessel needs no torch

_autograd_functions = {}


def _function(name):
    """The torch.autograd.Function of an op: 'attention', 'mta' or 'kl'."""
    if not _autograd_functions:
        _autograd_functions.update(_define_autograd())
    return _autograd_functions[name]


def _define_autograd():
    torch = _torch()
    gpu = _Backend(gpu=True)

    class AttentionFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, causal, scale, dtype):
            o, lse = _attention_forward(gpu, q, k, v, causal, scale, dtype)
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.config = causal, scale, dtype
            return o

        @staticmethod
        def backward(ctx, do):
            q, k, v, o, lse = ctx.saved_tensors
            grads = _attention_backward(gpu, *(gpu.input(x) for x in (q, k, v)), o, lse, do,
                                        *ctx.config)
            return (*grads, None, None, None)

    class MTAFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, weight, scale, dtype):
            o, lse = _mta_forward(gpu, q, k, v, weight, scale, dtype)
            ctx.save_for_backward(q, k, v, weight, o, lse)
            ctx.config = scale, dtype
            return o

        @staticmethod
        def backward(ctx, do):
            q, k, v, weight, o, lse = ctx.saved_tensors
            dq, dk, dv, dw = _mta_backward(gpu, *(gpu.input(x) for x in (q, k, v)), weight, o,
                                           lse, do, *ctx.config)
            return dq, dk, dv, dw.to(weight.dtype), None, None

    class KLFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q_t, k_t, q_s, k_s, causal, scale_t, scale_s, dtype):
            kl, lse_t, lse_s = _attention_kl_forward(gpu, q_t, k_t, q_s, k_s, causal, scale_t,
                                                     scale_s, dtype)
            ctx.save_for_backward(q_t, k_t, q_s, k_s, lse_t, lse_s)
            ctx.config = causal, scale_t, scale_s, dtype
            return kl

        @staticmethod
        def backward(ctx, g):
            q_t, k_t, q_s, k_s, lse_t, lse_s = ctx.saved_tensors
            dsq, dsk = _attention_kl_backward(gpu, q_t, k_t, q_s, k_s, lse_t, lse_s, g,
                                              *ctx.config)
            return None, None, dsq, dsk, None, None, None, None

    return {"attention": AttentionFunction, "mta": MTAFunction, "kl": KLFunction}


# ---------------------------------------------------------------------------------------------
# precompiling for machines without the compiler

def gpu_configurations(head_dims=(64, 128), dtypes=("f16", "bf16"), mta_windows=((6, 11),),
                       target="sm_90"):
    """[(tsl, kernel, constants, stream_k)]: every kernel specialisation the ops launch on a GPU of
    `target` for these head dims, element types and MTA windows (cq, ck) (with and without causal masks;
    StreamKL with every pair of teacher and student head dims; both lean_attention strategies
    with every query tile of LEAN_BLOCK_M)."""
    configs = []

    def add(tsl, kernel, blocks=None, stream_k="persistent", **constants):
        if blocks is not None:
            constants.update(gpu_tiles(blocks, head_dim(constants), target))
        configs.append((tsl, kernel, constants, stream_k))

    for dtype in dtypes:
        for d in head_dims:
            for causal in (False, True):
                add("attention.tsl", "attention_fwd", "attention_fwd", D=d, CAUSAL=causal,
                    DTYPE=dtype)
                add("attention.tsl", "attention_bwd", "attention_bwd", D=d, CAUSAL=causal,
                    DTYPE=dtype)
                for stream_k in LEAN_STRATEGIES.values():
                    for bm in LEAN_BLOCK_M:
                        add("lean_attention.tsl", "lean_attention", None, stream_k, D=d,
                            CAUSAL=causal, DTYPE=dtype, **lean_tiles(bm, gpu=True))
                for ds in head_dims:
                    for kernel in ("attention_kl_fwd", "attention_kl_bwd"):
                        add("attention_kl.tsl", kernel, kernel, DT=d, DS=ds, CAUSAL=causal,
                            DTYPE=dtype)
            for tsl in ("attention.tsl", "mta.tsl"):
                add(tsl, tsl[:-4] + "_bwd_preprocess", D=d,
                    BLOCK_M=PREPROCESS_ROWS, DTYPE=dtype)
            for cq, ck in mta_windows:
                for kernel in ("mta_fwd", "mta_bwd"):
                    add("mta.tsl", kernel, kernel, D=d, CQ=cq, CK=ck, DTYPE=dtype)
    return configs
