"""tessel.attention_kl: StreamKL (kernels/attention_kl.tsl), KL(teacher ‖ student) per query row,
forward and the student's gradients."""

import numpy as np

from .. import gpu as _gpu
from ..compiler import cdiv
from . import plans
from .common import (GPU_TUNED_SM90A, autograd_function, backend, bhnd, check_gqa,
                     check_head_dim, check_same, element_type, gpu_tiles, needs_autograd,
                     scale_value, statistics_rows, torch_module)

REDUCTIONS = ("none", "sum", "mean", "batchmean")
# attention_kl_fwd's table entry for grids of many query blocks (forward_table).
LONG_FORWARD = "attention_kl_fwd_long"
_PLANS = plans.Plans()
# The autograd function's passes, forward and backward; and the arguments of calls for autograd
# as checked (a repeated call goes straight to the function).
_FORWARD_PLANS, _BACKWARD_PLANS, _AUTOGRAD_CALLS = plans.Plans(), plans.Plans(), plans.Plans()


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
    key = plans.key((q_t, k_t, q_s, k_s), causal, scale, type(scale), reduction)
    out = _PLANS.replay(key, q_t, k_t, q_s, k_s)
    if out is not None:
        return _reduce(out[0], reduction, q_t.shape[0])
    autograd_key = plans.key((q_t, k_t, q_s, k_s), causal, scale, type(scale), reduction,
                             autograd=True)
    checked = _AUTOGRAD_CALLS.get(autograd_key)
    if checked is not None:
        kl = autograd_function("kl", _define_function).apply(q_t, k_t, q_s, k_s, *checked)
        return _reduce(kl, reduction, q_t.shape[0])
    B, be, dtype, scale_t, scale_s = check_kl_args("attention_kl", q_t, k_t, q_s, k_s, causal,
                                                   scale, reduction)
    if needs_autograd((q_s, k_s)):
        checked = bool(causal), scale_t, scale_s, dtype
        _AUTOGRAD_CALLS.keep(autograd_key, checked)
        kl = autograd_function("kl", _define_function).apply(q_t, k_t, q_s, k_s, *checked)
    else:
        causal = bool(causal)
        kl = _PLANS.run(key, be, (q_t, k_t, q_s, k_s), lambda *xs: _attention_kl_forward(
            be, *xs, causal, scale_t, scale_s, dtype))[0]
    return _reduce(kl, reduction, B)


def check_kl_args(op, q_t, k_t, q_s, k_s, causal, scale, reduction):
    """attention_kl's argument checks, errors naming `op`; returns (B, backend, element type,
    scale_t, scale_s)."""
    B, H, Nq, DT = bhnd(op, "q_t", q_t)
    Bkt, HKT, Nk, DTk = bhnd(op, "k_t", k_t)
    Bs, Hs, Nqs, DS = bhnd(op, "q_s", q_s)
    Bks, HKS, Nks, DSk = bhnd(op, "k_s", k_s)
    check_same(op, "batch sizes", q_t=B, k_t=Bkt, q_s=Bs, k_s=Bks)
    check_same(op, "query heads", q_t=H, q_s=Hs)
    check_same(op, "query lengths", q_t=Nq, q_s=Nqs)
    check_same(op, "key lengths", k_t=Nk, k_s=Nks)
    check_same(op, "teacher head dims", q_t=DT, k_t=DTk)
    check_same(op, "student head dims", q_s=DS, k_s=DSk)
    check_head_dim(op, "q_t", DT)
    check_head_dim(op, "q_s", DS)
    check_gqa(op, "q_t", H, "k_t", HKT)
    check_gqa(op, "q_s", H, "k_s", HKS)
    if causal and Nq != Nk:
        raise ValueError(f"tessel.{op}: causal needs as many queries as keys, got Nq {Nq} and "
                         f"Nk {Nk}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"tessel.{op}: reduction must be one of {', '.join(REDUCTIONS)}, got "
                         f"{reduction!r}")
    if isinstance(scale, (tuple, list)):
        if len(scale) != 2:
            raise ValueError(f"tessel.{op}: scale must be a number or (scale_t, scale_s)")
        scale_t = scale_value(op, scale[0], DT, "scale_t")
        scale_s = scale_value(op, scale[1], DS, "scale_s")
    else:
        scale_t, scale_s = scale_value(op, scale, DT), scale_value(op, scale, DS)
    inputs = {"q_t": q_t, "k_t": k_t, "q_s": q_s, "k_s": k_s}
    be = backend(op, inputs)
    dtype = element_type(op, inputs)
    if be.gpu and any(x.requires_grad for x in (q_t, k_t)) and torch_module().is_grad_enabled():
        raise ValueError(f"tessel.{op}: gradients for the teacher are not computed; pass "
                         f"q_t.detach() and k_t.detach()")
    return B, be, dtype, scale_t, scale_s


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
    # Each a sum scaled: the rows' gradient is then a broadcast of one value (the backward's
    # UNIFORM_G), where mean()'s would be a tensor of copies of it.
    if reduction == "mean":
        return kl.sum() / kl.numel()
    return kl.sum() / batch if reduction == "batchmean" else kl.sum()


def _attention_kl_forward(be, q_t, k_t, q_s, k_s, causal, scale_t, scale_s, dtype, out=None):
    """(KL, LSE teacher, LSE student) float32: KL (B, H, Nq), the LSEs (B, H, NQS) in the rows
    the backward takes (statistics_rows(Nq), 0 past Nq). Written into `out` (three contiguous
    (B, H, Nq) buffers) when given."""
    q_t, k_t, q_s, k_s = (be.input(x) for x in (q_t, k_t, q_s, k_s))
    B, H, Nq, DT = q_t.shape
    DS = q_s.shape[3]
    if out is None:
        nqs = statistics_rows(Nq)
        out = (be.empty((B, H, Nq), q_t, be.f32()),
               *(be.empty((B, H, nqs), q_t, be.f32()) for _ in range(2)))
    kl, lse_t, lse_s = out
    d = max(DT, DS)
    be.launch("attention_kl.tsl", "attention_kl_fwd", d,
              lambda t: (cdiv(Nq, t["BLOCK_M"]), B * H),
              (q_t, k_t, q_s, k_s, kl, lse_t, lse_s,
               *be.strides(q_t), *be.strides(k_t), *be.strides(q_s), *be.strides(k_s),
               H, k_t.shape[1], k_s.shape[1], Nq, k_t.shape[2], lse_t.shape[2], scale_t, scale_s),
              dict(DT=DT, DS=DS, CAUSAL=causal, DTYPE=dtype),
              key=("tq", "tk", "sq", "sk", "CAUSAL", "DTYPE"),
              table=forward_table(be, B * H, Nq, d))
    return kl, lse_t, lse_s


def forward_table(be, heads, Nq, d, target=None):
    """attention_kl_fwd's table entry for `heads` (B·H) rows of Nq queries at head dim d: on
    Hopper (`target` sm_90a, default: this machine's GPU), where d has one, LONG_FORWARD (four
    consumer warpgroups, query blocks of 256 rows) once its programs number at least 1.5 per
    SM; fewer leave SMs idle for longer than its softmax overlap saves (GPU_TUNED_SM90A)."""
    if be.gpu and (target or _gpu.target()) == "sm_90a" and (LONG_FORWARD, d) in GPU_TUNED_SM90A:
        rows = gpu_tiles(LONG_FORWARD, d, "sm_90a")["BLOCK_M"]
        if 2 * cdiv(Nq, rows) * heads >= 3 * be.multiprocessor_count():
            return LONG_FORWARD
    return "attention_kl_fwd"


def _attention_kl_backward(be, q_t, k_t, q_s, k_s, lse_t, lse_s, g, causal, scale_t, scale_s,
                           dtype):
    """(dQs, dKs) of Σ g·KL, g the (B, H, Nq) upstream gradient of the rows, or (1,) their
    common value (row_gradients), float32 and contiguous; lse_t, lse_s the forward's."""
    q_t, k_t, q_s, k_s = (be.input(x) for x in (q_t, k_t, q_s, k_s))
    B, H, Nq, DT = q_t.shape
    HKS, Nk, DS = k_s.shape[1], k_s.shape[2], q_s.shape[3]
    uniform = g.dim() == 1
    dsq = be.zeros((B, H, Nq, DS), q_s, be.f32())
    dsk = be.empty(k_s.shape, k_s)
    be.launch("attention_kl.tsl", "attention_kl_bwd", max(DT, DS),
              lambda t: (cdiv(Nk, t["BLOCK_N"]), B * HKS),
              (q_t, k_t, q_s, k_s, lse_t, lse_s, g, dsq, dsk,
               *be.strides(q_t), *be.strides(k_t), *be.strides(q_s), *be.strides(k_s),
               H, k_t.shape[1], HKS, Nq, Nk, lse_t.shape[2], scale_t, scale_s),
              dict(DT=DT, DS=DS, CAUSAL=causal, DTYPE=dtype, UNIFORM_G=uniform),
              key=("tq", "tk", "sq", "sk", "CAUSAL", "DTYPE", "UNIFORM_G"), restore=("dsq",))
    return be.scaled_cast(dsq, scale_s, q_s, dtype), dsk


def row_gradients(g):
    """The rows' upstream gradient as the backward takes it: a broadcast of one value (autograd's
    gradient of a sum, and so of every reduction) as that value, shape (1,); others as they are."""
    if g.dim() and not any(g.stride()):
        return g.as_strided((1,), (1,))
    return g


def _define_function(torch, gpu):
    class KLFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q_t, k_t, q_s, k_s, causal, scale_t, scale_s, dtype):
            config = causal, scale_t, scale_s, dtype
            inputs = (q_t, k_t, q_s, k_s)
            kl, lse_t, lse_s = _FORWARD_PLANS.call(
                gpu, inputs, config, lambda *xs: _attention_kl_forward(gpu, *xs, *config))
            ctx.save_for_backward(q_t, k_t, q_s, k_s, lse_t, lse_s)
            ctx.config = config
            return kl

        @staticmethod
        def backward(ctx, g):
            # The tensors the kernels take, so that the plan's inputs are theirs (autograd's
            # gradient of a sum is a broadcast view: its one value).
            g = row_gradients(g).to(gpu.f32()).contiguous()
            inputs = (*(gpu.input(x) for x in ctx.saved_tensors[:4]), *ctx.saved_tensors[4:], g)
            dsq, dsk = _BACKWARD_PLANS.call(
                gpu, inputs, ctx.config,
                lambda *xs: _attention_kl_backward(gpu, *xs, *ctx.config))
            return None, None, dsq, dsk, None, None, None, None

    return KLFunction
