"""Merging partial results computed over disjoint sets of keys (kernels/merge_states.tsl): the
(O, LSE) of attention and the (KL, LSE teacher, LSE student) rows of StreamKL.  tessel.distributed
merges the states its ranks all-gather with these; any split of the keys merges the same way.

    o, lse = merge_attention_states(o_parts, lse_parts)   # (P, B, H, Nq, D), (P, B, H, Nq)
    kl, lse_t, lse_s = merge_kl_states(parts)              # (P, 3, B, H, Nq) float32

One kernel launch each (on the current stream for CUDA tensors; NumPy arrays on the interpreter).
Parts with no visible key (LSE -inf) weigh nothing; a row empty in every part gives O = 0, KL = 0,
LSE = -inf, as the ops do.
"""

import numpy as np

from ..compiler import cdiv
from .common import backend, check_head_dim, element_type

# Rows per program: the attention merge holds a BLOCK_R x D f32 accumulator, the KL merge only
# per-row scalars.
MERGE_BLOCK_R = 16
KL_MERGE_BLOCK_R = 128


def merge_attention_states(o_parts, lse_parts):
    """softmax(S) V and log Σ exp(S) over the keys of all P parts, from each part's own:
    o_parts (P, B, H, Nq, D) in the element type of the ops (float16 or bfloat16 tensors; float16
    or float32 arrays), lse_parts (P, B, H, Nq) float32.  Returns (O (B, H, Nq, D) o_parts' dtype,
    LSE (B, H, Nq) float32)."""
    op = "merge_attention_states"
    be = backend(op, {"o_parts": o_parts, "lse_parts": lse_parts})
    dtype = element_type(op, {"o_parts": o_parts})
    shape = tuple(o_parts.shape)
    if len(shape) != 5:
        raise ValueError(f"tessel.{op}: o_parts must have 5 dimensions (P, B, H, Nq, D), got "
                         f"shape {shape}")
    if tuple(lse_parts.shape) != shape[:4]:
        raise ValueError(f"tessel.{op}: lse_parts must have shape (P, B, H, Nq) = {shape[:4]}, "
                         f"got {tuple(lse_parts.shape)}")
    _check_f32(op, "lse_parts", be, lse_parts)
    if shape[0] < 1:
        raise ValueError(f"tessel.{op}: there must be at least one part")
    check_head_dim(op, "o_parts", shape[4])
    return _merge_attention(be, o_parts, lse_parts, dtype)


def merge_kl_states(parts):
    """StreamKL's per-row KL(P ‖ Q) and the teacher's and student's LSEs over the keys of all P
    parts, from each part's: parts (P, 3, B, H, Nq) float32, parts[p] = (KL, LSE teacher, LSE
    student) over the keys of part p.  Returns (KL, LSE teacher, LSE student), each (B, H, Nq)
    float32."""
    op = "merge_kl_states"
    be = backend(op, {"parts": parts})
    shape = tuple(parts.shape)
    if len(shape) != 5 or shape[1] != 3:
        raise ValueError(f"tessel.{op}: parts must have shape (P, 3, B, H, Nq), got {shape}")
    if shape[0] < 1:
        raise ValueError(f"tessel.{op}: there must be at least one part")
    _check_f32(op, "parts", be, parts)
    return _merge_kl(be, parts)


def _check_f32(op, name, be, x):
    f32 = be.f32()
    if x.dtype != f32:
        raise TypeError(f"tessel.{op}: {name} must be float32, got {x.dtype}")


def _contiguous(be, x):
    return x.contiguous() if be.gpu else np.ascontiguousarray(x)


def _merge_attention(be, o_parts, lse_parts, dtype):
    """(O, LSE) from checked parts."""
    o_parts, lse_parts = _contiguous(be, o_parts), _contiguous(be, lse_parts)
    P, B, H, Nq, D = o_parts.shape
    rows = B * H * Nq
    o = be.empty((B, H, Nq, D), o_parts)
    lse = be.empty((B, H, Nq), lse_parts)
    be.kernel("merge_states.tsl", "softmax_merge_parts")[(max(1, cdiv(rows, MERGE_BLOCK_R)),)](
        o_parts, lse_parts, o, lse, rows, P, D=D, BLOCK_R=MERGE_BLOCK_R, DTYPE=dtype)
    return o, lse


def _merge_kl(be, parts):
    """(KL, LSE teacher, LSE student) from checked parts."""
    parts = _contiguous(be, parts)
    P, _, B, H, Nq = parts.shape
    rows = B * H * Nq
    kl, lse_t, lse_s = (be.empty((B, H, Nq), parts) for _ in range(3))
    be.kernel("merge_states.tsl", "kl_merge_parts")[(max(1, cdiv(rows, KL_MERGE_BLOCK_R)),)](
        parts, kl, lse_t, lse_s, rows, P, BLOCK_R=KL_MERGE_BLOCK_R)
    return kl, lse_t, lse_s
