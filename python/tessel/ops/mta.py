"""tessel.mta_attention: Multi-Token Attention (kernels/mta.tsl), forward and backward."""

import numpy as np

from ..compiler import cdiv
from .common import (attention_args, autograd_function, backend, check_same, delta,
                     element_type, is_torch, needs_autograd, scale_value, torch_module)


def mta_attention(q, k, v, weight, scale=None):
    """Multi-Token Attention (causal self-attention with a key-query convolution of the scores,
    see kernels/mta.tsl for the convention).  q (B, H, N, D); k, v (B, HKV, N, D); weight
    (H, cq, ck) real (used in f32), cq query offsets into the past, ck keys centred.  Returns O."""
    op = "mta_attention"
    B, H, HKV, N, Nk, D = attention_args(op, q, k, v)
    check_same(op, "query and key lengths (MTA is causal self-attention)", q=N, k=Nk)
    be = backend(op, {"q": q, "k": k, "v": v})
    if be.gpu:
        if not is_torch(weight):
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
    dtype = element_type(op, {"q": q, "k": k, "v": v})
    scale = scale_value(op, scale, D)
    if needs_autograd((q, k, v, weight)):
        return autograd_function("mta", _define_function).apply(q, k, v, weight, scale, dtype)
    return _mta_forward(be, q, k, v, weight, scale, dtype)[0]


def _mta_weight(be, weight):
    if be.gpu:
        return weight.to(torch_module().float32).contiguous()
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
    dlt = delta(be, "mta.tsl", "mta_bwd_preprocess", o, do, dtype)
    tiles = be.tiles("mta_bwd", D)
    dq = be.zeros((B, H, N, D), q, be.f32())
    dw = be.zeros((H, cq, ck), q, be.f32())
    dk, dv = be.empty(k.shape, k), be.empty(v.shape, v)
    be.kernel("mta.tsl", "mta_bwd")[(cdiv(N, tiles["BLOCK_N"]), B * HKV)](
        q, k, v, w, do, lse, dlt, dq, dk, dv, dw, *be.strides(q), *be.strides(k),
        *be.strides(v), *be.strides(do), H, HKV, N, scale,
        D=D, CQ=cq, CK=ck, DTYPE=dtype, **tiles)
    return dq.to(q.dtype), dk, dv, dw


def _define_function(torch, gpu):
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

    return MTAFunction
