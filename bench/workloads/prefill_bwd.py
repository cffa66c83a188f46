"""Prefill training step: flash attention forward + backward (dQ, dK, dV), B1 H32, D128 and
D64, N in {4k, 8k, 16k}, causal and not; against PyTorch SDPA with the flash and the cuDNN back
ends. The gradients are checked on two heads against SDPA's math back end in float32."""

from . import prefill

NAME = "prefill-bwd"
TITLE = "Prefill: attention forward + backward (B1 H32)"
UNIT = "TFLOP/s"
CEILING = "matmul_tflops"
IMPLS = prefill.IMPLS
RATIOS = prefill.RATIOS
COLUMNS = (("N", "N"), ("D", "D"), ("causal", "causal"))

B, H = prefill.B, prefill.H
SEQ = (4096, 8192, 16384)
# Heads whose gradients are checked (all of them would need the N x N reference per head).
CHECK_HEADS = (0, H - 1)


def config(N, D, causal):
    return {"id": f"N{N}-D{D}-{'causal' if causal else 'full'}-bwd", "B": B, "H": H, "N": N,
            "D": D, "causal": causal}


def configs(quick=False):
    if quick:
        return [config(4096, 128, True)]
    return [config(N, D, causal)
            for D in prefill.HEAD_DIMS for causal in (False, True) for N in SEQ]


def flops(B, H, Nq, Nk, D, causal):
    """Forward (two matmuls) and backward (five: S again, dV, dP, dQ, dK): 3.5x the forward's
    4·Nq·Nk·D per head, FlashAttention's count; causal counts half."""
    return 3.5 * prefill.flops(B, H, Nq, Nk, D, causal)


def work(cfg):
    return flops(cfg["B"], cfg["H"], cfg["N"], cfg["N"], cfg["D"], cfg["causal"])


def run(ctx, cfg):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from .. import gpu
    from ..common import tolerance

    gen = ctx.generator(cfg["id"])
    shape = (cfg["B"], cfg["H"], cfg["N"], cfg["D"])
    q, k, v = (gpu.randn(gen, shape, ctx.dtype, requires_grad=True) for _ in range(3))
    do = gpu.randn(gen, shape, ctx.dtype)
    causal = cfg["causal"]
    heads = list(CHECK_HEADS)
    sub = [x[:, heads].detach().float().requires_grad_() for x in (q, k, v)]
    with sdpa_kernel(SDPBackend.MATH):
        ref_out = F.scaled_dot_product_attention(*sub, is_causal=causal)
    refs = torch.autograd.grad(ref_out, sub, do[:, heads].float())
    del ref_out, sub

    def step(forward):
        if isinstance(forward, str):
            return forward

        def call():
            return torch.autograd.grad(forward(), (q, k, v), do)
        return call

    calls = {
        "tessel": step(ctx.tessel_op("attention", q, k, v, causal=causal)),
        "sdpa-flash": step(gpu.sdpa_call("flash", q, k, v, causal)),
        "sdpa-cudnn": step(gpu.sdpa_call("cudnn", q, k, v, causal)),
    }

    def check(impl, grads):
        return max(gpu.rel_err(g[:, heads], want) for g, want in zip(grads, refs))

    results = gpu.run_impls(ctx, work(cfg), calls, check,
                            tolerance(ctx.dtype_name, grads=True))
    return {"results": results, "note": ""}
