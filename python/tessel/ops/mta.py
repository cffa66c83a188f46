"""tessel.mta_attention and tessel.mta_decode: Multi-Token Attention (kernels/mta.tsl), forward and
backward, and the decode step (split-K over the keys, then a combine kernel).

The weight: by default (layout="conv2d") the kernel Wt (H, 1, cq, ck) of the MTA reference code,
which pads the masked scores S0 by cq - 1 rows on top and (ck - 1) // 2 / ck // 2 columns left /
right and calls F.conv2d(S0, Wt, groups=H); layout="tessel" takes the kernels' own (H, cq, ck)
form, W[h, a, b] = Wt[h, 0, cq - 1 - a, b] (the query axis flipped: a counts rows into the past).
"""

import numpy as np

from .. import gpu as _gpu
from ..compiler import cdiv
from . import plans
from .common import (GPU_TUNED_SM90A, Backend, attention_args, autograd_function, backend,
                     check_same, delta, element_type, is_torch, needs_autograd, scale_value,
                     torch_module)

WEIGHT_LAYOUTS = {"conv2d": "(H, 1, cq, ck)", "tessel": "(H, cq, ck)"}
# mta_decode: key blocks per split (BLOCK_N) and the most splits (BLOCK_S, the combine kernel's
# tile).  The splits fill about DECODE_PROGRAMS_PER_SM programs per SM of the GPU (a fixed count
# on the interpreter), never more than there are key blocks.
DECODE_BLOCK_N = {"interpreter": 16, "gpu": 64}
DECODE_BLOCK_S = 32
DECODE_PROGRAMS_PER_SM = 2
_DECODE_INTERPRETER_PROGRAMS = 8
# mta_fwd's convolved keys up to this depth cq·D on the GPU.
CONV_KEYS_MAX_DEPTH = 384
# The plans take the kernels' weight (kernel_weight), made on each call.
_PLANS, _DECODE_PLANS = plans.Plans(), plans.Plans()
# The autograd function's passes, forward and backward; and the arguments of calls for autograd
# as checked (a repeated call goes straight to the function).
_FORWARD_PLANS, _BACKWARD_PLANS, _AUTOGRAD_CALLS = plans.Plans(), plans.Plans(), plans.Plans()
_GPU = Backend(gpu=True)


def _planned(plan_cache, call_key, q, k, v, weight, layout):
    """The planned call's outputs, or None (no plan, or its launch declined the inputs)."""
    plan = plan_cache.get(call_key)
    return plan and plan(q, k, v, kernel_weight(_GPU, weight, layout))


def mta_attention(q, k, v, weight, scale=None, layout="conv2d"):
    """Multi-Token Attention (causal self-attention with a key-query convolution of the scores,
    see kernels/mta.tsl for the convention).  q (B, H, N, D); k, v (B, HKV, N, D); weight real
    (used in f32): layout="conv2d" (default) the MTA reference's conv2d kernel (H, 1, cq, ck),
    layout="tessel" the (H, cq, ck) form with the query axis flipped; cq query offsets into the
    past, ck keys centred.  Returns O; with torch inputs the weight's gradient comes back in the
    weight's own layout.  Where the forward folds the convolution into the keys (conv_keys) it
    takes a workspace of 2·cq·D elements of q's dtype per key and query head."""
    key = plans.key((q, k, v, weight), scale, type(scale), layout)
    out = _planned(_PLANS, key, q, k, v, weight, layout)
    if out is not None:
        return out[0]
    autograd_key = plans.key((q, k, v, weight), scale, type(scale), layout, autograd=True)
    checked = _AUTOGRAD_CALLS.get(autograd_key)
    if checked is not None:
        return autograd_function("mta", _define_function).apply(q, k, v, weight, *checked)
    op = "mta_attention"
    B, H, HKV, N, Nk, D = attention_args(op, q, k, v)
    check_same(op, "query and key lengths (MTA is causal self-attention)", q=N, k=Nk)
    be = backend(op, {"q": q, "k": k, "v": v})
    check_weight(op, be, q, weight, H, layout)
    dtype = element_type(op, {"q": q, "k": k, "v": v})
    scale = scale_value(op, scale, D)
    if needs_autograd((q, k, v, weight)):
        checked = layout, scale, dtype
        _AUTOGRAD_CALLS.keep(autograd_key, checked)
        return autograd_function("mta", _define_function).apply(q, k, v, weight, *checked)
    return _PLANS.run(key, be, (q, k, v, kernel_weight(be, weight, layout)),
                      lambda q, k, v, w: _mta_forward(be, q, k, v, w, scale, dtype))[0]


def check_weight(op, be, q, weight, H, layout):
    """Checks the weight's type, dtype, device and shape for `layout`; returns (cq, ck)."""
    if layout not in WEIGHT_LAYOUTS:
        raise ValueError(f"tessel.{op}: layout must be 'conv2d' (weight (H, 1, cq, ck), the "
                         f"conv2d kernel of the MTA reference) or 'tessel' (weight (H, cq, ck)), "
                         f"got {layout!r}")
    form = WEIGHT_LAYOUTS[layout]
    if be.gpu:
        if not is_torch(weight):
            raise TypeError(f"tessel.{op}: weight must be a torch tensor {form} like q, got "
                            f"{type(weight).__name__}")
        if weight.device != q.device:
            raise ValueError(f"tessel.{op}: weight is on {weight.device}, q on {q.device}")
        floating = weight.dtype.is_floating_point
    else:
        if not isinstance(weight, np.ndarray):
            raise TypeError(f"tessel.{op}: weight must be a NumPy array {form}, got "
                            f"{type(weight).__name__}")
        floating = np.issubdtype(weight.dtype, np.floating)
    if not floating:
        raise TypeError(f"tessel.{op}: weight must be a float array, got {weight.dtype}")
    shape = tuple(weight.shape)
    if layout == "conv2d":
        if len(shape) == 3:
            raise ValueError(f"tessel.{op}: weight must have shape (H={H}, 1, cq, ck) with "
                             f"layout='conv2d' (the default: the conv2d kernel of the MTA "
                             f"reference), got {shape}; a weight (H, cq, ck) in tessel's layout "
                             f"(query axis flipped) needs layout='tessel'")
        ok = len(shape) == 4 and shape[0] == H and shape[1] == 1 and min(shape[2:]) >= 1
        expected = f"(H={H}, 1, cq >= 1, ck >= 1)"
    else:
        if len(shape) == 4:
            raise ValueError(f"tessel.{op}: weight must have shape (H={H}, cq, ck) with "
                             f"layout='tessel', got {shape}; a conv2d kernel (H, 1, cq, ck) of "
                             f"the MTA reference needs layout='conv2d' (the default)")
        ok = len(shape) == 3 and shape[0] == H and min(shape[1:]) >= 1
        expected = f"(H={H}, cq >= 1, ck >= 1)"
    if not ok:
        raise ValueError(f"tessel.{op}: weight must have shape {expected} with "
                         f"layout={layout!r}, got {shape}")
    return shape[-2:]


def kernel_weight(be, weight, layout):
    """The weight as the kernels take it: (H, cq, ck) float32, contiguous."""
    if layout == "conv2d":
        weight = weight[:, 0].flip(1) if be.gpu else weight[:, 0, ::-1]
    if be.gpu:
        return weight.to(torch_module().float32).contiguous()
    return np.ascontiguousarray(weight, dtype=np.float32)


def user_weight_grad(dw, layout):
    """The kernels' dW (H, cq, ck) in the layout of the user's weight."""
    if layout != "conv2d":
        return dw
    if isinstance(dw, np.ndarray):
        return np.ascontiguousarray(dw[:, None, ::-1])
    return dw.flip(1).unsqueeze(1)


def conv_keys(gpu, cq, d, target=None):
    """Whether mta_fwd takes its key blocks below the diagonal through the convolved keys
    (CONV_KEYS: the convolution folded into a tensor-core product of depth cq·d): on the
    interpreter; on the GPU for Hopper (`target` sm_90a, default: this machine's GPU) at the
    head dims with measured warpgroup tiles (GPU_TUNED_SM90A's "mta_fwd_conv_keys" entries)
    and depths up to CONV_KEYS_MAX_DEPTH, where the query rows and two stages of convolved keys
    fit the shared memory (mma.sync would hold them in registers)."""
    if not gpu:
        return True
    return ((target or _gpu.target()) == "sm_90a" and ("mta_fwd_conv_keys", d) in GPU_TUNED_SM90A
            and cq * d <= CONV_KEYS_MAX_DEPTH)


def _mta_forward(be, q, k, v, w, scale, dtype):
    """(O, LSE); w the kernel weight (kernel_weight). With conv_keys, mta_conv_keys first
    writes the convolved keys (hi and lo parts: 2·cq times the size of one query head's K, per
    query head) that mta_fwd reads."""
    q, k, v = (be.input(x) for x in (q, k, v))
    B, H, N, D = q.shape
    HKV = k.shape[1]
    _, cq, ck = w.shape
    o = be.empty((B, H, N, D), q)
    lse = be.empty((B, H, N), q, be.f32())
    folded = conv_keys(be.gpu, cq, D)
    kc = o  # not read without CONV_KEYS
    if folded:
        # In key blocks of the forward's (hi rows, then lo rows: see kernels/mta.tsl).
        bn = be.tiles("mta_fwd_conv_keys", D)["BLOCK_N"]
        kc = be.empty((B * H, cdiv(N, bn), 2 * bn, cq * D), q)
        be.kernel("mta.tsl", "mta_conv_keys")[(cdiv(N, bn), B * H)](
            k, w, kc, *be.strides(k), H, HKV, N, scale, D=D, CQ=cq, CK=ck, BLOCK_N=bn,
            DTYPE=dtype)
    be.launch("mta.tsl", "mta_fwd", D, lambda t: (cdiv(N, t["BLOCK_M"]), B * H),
              (q, k, v, w, kc, o, lse, *be.strides(q), *be.strides(k), *be.strides(v), H,
               HKV, N, scale), dict(D=D, CQ=cq, CK=ck, DTYPE=dtype, CONV_KEYS=folded),
              key=("q", "k", "CQ", "CK", "DTYPE"),
              table="mta_fwd_conv_keys" if folded else "mta_fwd")
    return o, lse


def _mta_backward(be, q, k, v, weight, layout, o, lse, do, scale, dtype):
    """(dQ, dK, dV, dW); dW float32 in the weight's layout (accumulated per program, then added
    atomically)."""
    *grads, dw = _mta_backward_kernels(be, q, k, v, kernel_weight(be, weight, layout), o, lse,
                                       do, scale, dtype)
    return (*grads, user_weight_grad(dw, layout))


def _mta_backward_kernels(be, q, k, v, w, o, lse, do, scale, dtype):
    """(dQ, dK, dV, dW) from the kernels' weight `w` (kernel_weight); dW in w's layout."""
    do = be.input(do)
    B, H, N, D = q.shape
    HKV = k.shape[1]
    _, cq, ck = w.shape
    dlt = delta(be, "mta.tsl", "mta_bwd_preprocess", o, do, dtype)
    dq = be.zeros((B, H, N, D), q, be.f32())
    dw = be.zeros((H, cq, ck), q, be.f32())
    dk, dv = be.empty(k.shape, k), be.empty(v.shape, v)
    be.launch("mta.tsl", "mta_bwd", D, lambda t: (cdiv(N, t["BLOCK_N"]), B * HKV),
              (q, k, v, w, do, lse, dlt, dq, dk, dv, dw, *be.strides(q), *be.strides(k),
               *be.strides(v), *be.strides(do), H, HKV, N, scale),
              dict(D=D, CQ=cq, CK=ck, DTYPE=dtype), key=("q", "k", "CQ", "CK", "DTYPE"),
              restore=("dq", "dw"))
    return be.scaled_cast(dq, scale, q, dtype), dk, dv, dw


def _define_function(torch, gpu):
    class MTAFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, weight, layout, scale, dtype):
            w = kernel_weight(gpu, weight, layout)
            o, lse = _FORWARD_PLANS.call(
                gpu, (q, k, v, w), (scale, dtype),
                lambda q, k, v, w: _mta_forward(gpu, q, k, v, w, scale, dtype))
            ctx.save_for_backward(q, k, v, weight, w, o, lse)
            ctx.config = layout, scale, dtype
            return o

        @staticmethod
        def backward(ctx, do):
            # The tensors the kernels take, so that the plan's inputs are theirs (as the
            # attention's backward).
            q, k, v, weight, w, o, lse = ctx.saved_tensors
            layout, scale, dtype = ctx.config
            inputs = (*(gpu.input(x) for x in (q, k, v)), w, o, lse, gpu.input(do))
            dq, dk, dv, dw = _BACKWARD_PLANS.call(
                gpu, inputs, (scale, dtype),
                lambda *xs: _mta_backward_kernels(gpu, *xs, scale, dtype))
            dw = user_weight_grad(dw, layout)
            return dq, dk, dv, dw.to(weight.dtype), None, None, None

    return MTAFunction


# ---------------------------------------------------------------------------------------------
# decode

def mta_decode(q, k, v, weight, scale=None, layout="conv2d"):
    """One decode step of Multi-Token Attention: the output of the newest position N - 1, as row
    N - 1 of mta_attention over the N positions.  q (B, H, QN, D) holds the queries of the QN
    newest positions N - QN .. N - 1 (min(cq, N) <= QN <= N: a rolling cache of the cq newest
    queries, or all of them); k, v (B, HKV, N, D), N >= 1; weight as in mta_attention (layout).
    The keys are split over programs (mta_decode_split), whose partial results are merged by
    their LSEs (mta_decode_combine).  Forward only.  Returns O (B, H, 1, D), q's dtype."""
    key = plans.key((q, k, v, weight), scale, type(scale), layout)
    out = _planned(_DECODE_PLANS, key, q, k, v, weight, layout)
    if out is not None:
        return out[0]
    op = "mta_decode"
    B, H, HKV, QN, N, D = attention_args(op, q, k, v)
    be = backend(op, {"q": q, "k": k, "v": v})
    cq, _ = check_weight(op, be, q, weight, H, layout)
    if N < 1:
        raise ValueError(f"tessel.{op}: decode needs at least one key, got N {N}")
    if not min(cq, N) <= QN <= N:
        raise ValueError(f"tessel.{op}: q must hold the queries of the newest min(cq, N) = "
                         f"{min(cq, N)} to N = {N} positions (the query window reaches cq = "
                         f"{cq} rows into the past), got {QN} rows")
    dtype = element_type(op, {"q": q, "k": k, "v": v})
    scale = scale_value(op, scale, D)
    return _DECODE_PLANS.run(key, be, (q, k, v, kernel_weight(be, weight, layout)),
                             lambda q, k, v, w: _mta_decode(be, q, k, v, w, scale, dtype))[0]


def decode_splits(be, q, bh, blocks):
    """How many programs share one (batch, head)'s `blocks` key blocks."""
    if be.gpu:
        programs = DECODE_PROGRAMS_PER_SM * _sm_count(q.device)
    else:
        programs = _DECODE_INTERPRETER_PROGRAMS
    return max(1, min(blocks, DECODE_BLOCK_S, cdiv(programs, bh)))


_sm_counts = {}


def _sm_count(device):
    if device not in _sm_counts:
        props = torch_module().cuda.get_device_properties(device)
        _sm_counts[device] = props.multi_processor_count
    return _sm_counts[device]


def _mta_decode(be, q, k, v, w, scale, dtype):
    """(O (B, H, 1, D), LSE (B, H, 1) f32); w the kernel weight."""
    q, k, v = (be.input(x) for x in (q, k, v))
    B, H, QN, D = q.shape
    HKV, N = k.shape[1], k.shape[2]
    _, cq, ck = w.shape
    bn = DECODE_BLOCK_N[be.name]
    nsplit = decode_splits(be, q, B * H, cdiv(N, bn))
    o_part = be.empty((B * H, nsplit, D), q, be.f32())
    lse_part = be.empty((B * H, nsplit), q, be.f32())
    be.kernel("mta.tsl", "mta_decode_split")[(nsplit, B * H)](
        q, k, v, w, o_part, lse_part, *be.strides(q), *be.strides(k), *be.strides(v),
        H, HKV, N, QN, scale, D=D, CQ=cq, CK=ck, BLOCK_N=bn, DTYPE=dtype)
    o = be.empty((B, H, 1, D), q)
    lse = be.empty((B, H, 1), q, be.f32())
    be.kernel("mta.tsl", "mta_decode_combine")[(B * H,)](
        o_part, lse_part, o, lse, nsplit, D=D, BLOCK_S=DECODE_BLOCK_S, DTYPE=dtype)
    return o, lse
