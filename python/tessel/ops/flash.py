"""tessel.attention: flash attention (kernels/attention.tsl), forward and backward."""

from ..compiler import cdiv
from . import plans
from .common import (PREPROCESS_ROWS, attention_args, autograd_function, backend,
                     element_type, needs_autograd, scale_value, statistics_rows)

_PLANS = plans.Plans()
# The autograd function's passes: the forward with the LSE, and the backward; and the
# arguments of calls for autograd as checked (a repeated call goes straight to the function).
_FORWARD_PLANS, _BACKWARD_PLANS, _AUTOGRAD_CALLS = plans.Plans(), plans.Plans(), plans.Plans()


def attention(q, k, v, causal=False, scale=None):
    """softmax(Q Kᵀ · scale) V.  q (B, H, Nq, D); k, v (B, HKV, Nk, D).  causal: row i sees keys
    j <= i (top-left aligned; needs Nq == Nk).  Returns O (B, H, Nq, D), q's dtype."""
    key = plans.key((q, k, v), causal, scale, type(scale))
    out = _PLANS.replay(key, q, k, v)
    if out is not None:
        return out[0]
    autograd_key = plans.key((q, k, v), causal, scale, type(scale), autograd=True)
    checked = _AUTOGRAD_CALLS.get(autograd_key)
    if checked is not None:
        return autograd_function("attention", _define_function).apply(q, k, v, *checked)
    op = "attention"
    *_, Nq, Nk, D = attention_args(op, q, k, v)
    if causal and Nq != Nk:
        raise ValueError(f"tessel.{op}: causal attention needs as many queries as keys, "
                         f"got Nq {Nq} and Nk {Nk}")
    be = backend(op, {"q": q, "k": k, "v": v})
    dtype = element_type(op, {"q": q, "k": k, "v": v})
    scale = scale_value(op, scale, D)
    if needs_autograd((q, k, v)):
        checked = bool(causal), scale, dtype
        _AUTOGRAD_CALLS.keep(autograd_key, checked)
        return autograd_function("attention", _define_function).apply(q, k, v, *checked)
    causal = bool(causal)
    return _PLANS.run(key, be, (q, k, v), lambda q, k, v: _attention_forward(
        be, q, k, v, causal, scale, dtype, with_lse=False))[0]


def _attention_forward(be, q, k, v, causal, scale, dtype, with_lse=True):
    """(O, LSE) from checked inputs (LSE None without with_lse: the kernel then writes none)."""
    q, k, v = (be.input(x) for x in (q, k, v))
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    o = be.empty((B, H, Nq, D), q)
    lse = be.empty((B, H, Nq), q, be.f32()) if with_lse else None
    be.launch("attention.tsl", "attention_fwd", D,
              lambda t: (_query_programs(be, cdiv(Nq, t["BLOCK_M"]), B * H, t), B * H),
              (q, k, v, o, lse, *be.strides(q), *be.strides(k), *be.strides(v), H, HKV, Nq, Nk,
               scale, be.multiprocessor_count()), dict(D=D, CAUSAL=causal, DTYPE=dtype),
              key=("q", "k", "CAUSAL", "DTYPE"))
    return o, lse


def _query_programs(be, blocks, heads, tiles):
    """Programs per head of the forward (its grid's axis 0). One per query block, but where the
    table's tiles take blocks in turn (BLOCKS_IN_TURN: the warp-specialised kernel, whose
    producer loads a block's keys while the consumers finish the previous block, so fewer
    programs that each take several blocks save the start and end of all but one; it holds an
    SM alone): as many programs as keep every CTA resident at once, unless that takes more
    rounds than one per block."""
    if not (be.gpu and tiles.get("BLOCKS_IN_TURN")) or blocks == 0 or heads == 0:
        return blocks
    sms = be.multiprocessor_count()
    programs = min(blocks, max(1, sms // heads))
    rounds = cdiv(blocks, programs) * cdiv(programs * heads, sms)
    return programs if rounds <= cdiv(blocks * heads, sms) else blocks


def _statistics(be, o, do, lse, dtype):
    """The backward's per-row statistics, (LSE, Delta = rowsum(dO ∘ O)), (B, H, NQS) f32 in rows
    of NQS = statistics_rows(Nq), 0 past Nq; and NQS."""
    B, H, Nq, D = o.shape
    nqs = statistics_rows(Nq)
    lse_rows, dlt = be.empty((B, H, nqs), o, be.f32()), be.empty((B, H, nqs), o, be.f32())
    be.kernel("attention.tsl", "attention_bwd_preprocess")[(cdiv(nqs, PREPROCESS_ROWS), B * H)](
        o, do, lse, dlt, lse_rows, *be.strides(do), H, Nq, nqs, D=D, BLOCK_M=PREPROCESS_ROWS,
        DTYPE=dtype)
    return lse_rows, dlt, nqs


def _attention_backward(be, q, k, v, o, lse, do, causal, scale, dtype):
    """(dQ, dK, dV) in the inputs' dtype (torch tensors: the backward passes are autograd's)."""
    do = be.input(do)
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    lse_rows, dlt, nqs = _statistics(be, o, do, lse, dtype)
    dq = be.zeros((B, H, Nq, D), q, be.f32())
    dk, dv = be.empty(k.shape, k), be.empty(v.shape, v)
    be.launch("attention.tsl", "attention_bwd", D, lambda t: (cdiv(Nk, t["BLOCK_N"]), B * HKV),
              (q, k, v, do, lse_rows, dlt, dq, dk, dv, *be.strides(q), *be.strides(k),
               *be.strides(v), *be.strides(do), H, HKV, Nq, Nk, nqs, scale,
               be.multiprocessor_count()),
              dict(D=D, CAUSAL=causal, DTYPE=dtype), key=("q", "k", "CAUSAL", "DTYPE"),
              restore=("dq",))
    return be.scaled_cast(dq, scale, q, dtype), dk, dv


def _define_function(torch, gpu):
    class AttentionFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, causal, scale, dtype):
            o, lse = _FORWARD_PLANS.call(
                gpu, (q, k, v), (causal, scale, dtype),
                lambda q, k, v: _attention_forward(gpu, q, k, v, causal, scale, dtype))
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.config = causal, scale, dtype
            return o

        @staticmethod
        def backward(ctx, do):
            # The tensors the kernels take, so that the plan's inputs are theirs (autograd's
            # gradient of a sum is a broadcast view, which the checked path would copy).
            q, k, v, o, lse = ctx.saved_tensors
            q, k, v, do = (gpu.input(x) for x in (q, k, v, do))
            grads = _BACKWARD_PLANS.call(
                gpu, (q, k, v, o, lse, do), ctx.config,
                lambda *xs: _attention_backward(gpu, *xs, *ctx.config))
            return (*grads, None, None, None)

    return AttentionFunction
