"""Multi-Token Attention: B1 H16 D64, cq 6, ck 11: forward and forward + backward at N in {1k, 2k,
4k}, and the decode step (the newest position's output) at N in {4k, 16k, 64k}; against the
PyTorch reference of the MTA paper's code (materialised scores, causal zeroing, F.conv2d with
padding, -inf mask, softmax, @V) run in the benchmark's dtype. Its decode step computes the same
row from the cq newest queries. Both take the paper's conv2d weight (H, 1, cq, ck) as it is.
The forward rows also time SDPA flash causal on the same q, k, v (plain attention, checked
against its own float32 reference): the cost of the convolution on top of attention."""

NAME = "mta"
TITLE = "Multi-Token Attention: B1 H16 D64, cq6 ck11"
UNIT = "TFLOP/s"
CEILING = "matmul_tflops"
# SDPA flash causal on the same q, k, v is plain attention (no convolution): what MTA's
# convolution costs on top of it (forward and forward + backward; not in the decode rows).
IMPLS = (("tessel", "Tessel"), ("torch", "PyTorch reference"),
         ("sdpa-flash", "SDPA flash causal, no convolution"))
RATIOS = (("tessel", "torch", "vs PyTorch"), ("tessel", "sdpa-flash", "vs flash causal"))
COLUMNS = (("N", "N"), ("mode", "mode"))

B, H, D, CQ, CK = 1, 16, 64, 6, 11
SEQ = (1024, 2048, 4096)
MODES = ("fwd", "fwd+bwd")
# Decode: one query row (the newest position) against N keys.
DECODE_SEQ = (4096, 16384, 65536)
# The weight: the identity kernel (C = S0) plus this much noise, so scores stay attention-like.
WEIGHT_NOISE = 0.1


def config(N, mode):
    return {"id": f"N{N}-{mode.replace('+', '')}", "B": B, "H": H, "N": N, "D": D, "cq": CQ,
            "ck": CK, "mode": mode}


def configs(quick=False):
    if quick:
        return [config(1024, mode) for mode in MODES] + [config(DECODE_SEQ[0], "decode")]
    return ([config(N, mode) for mode in MODES for N in SEQ]
            + [config(N, "decode") for N in DECODE_SEQ])


def flops(B, H, N, D, cq, ck, backward):
    """Attention 4·N²·D and convolution 2·N²·cq·ck per head, over the causal half; the backward
    counts 2.5× the attention part (five matmuls for two) and 2× the convolution (dS0 and dW)."""
    attention, conv = 4.0 * B * H * N * N * D / 2, 2.0 * B * H * N * N * cq * ck / 2
    return attention * 3.5 + conv * 3 if backward else attention + conv


def decode_flops(B, H, N, D, cq, ck):
    """One decode step per head: the scores of the cq newest queries against the N keys
    (2·cq·N·D), the convolution of one row (2·N·cq·ck) and P·V (2·N·D)."""
    return 2.0 * B * H * N * (D * (cq + 1) + cq * ck)


def kv_bytes(cfg, element_bytes=2):
    """Bytes of K and V a decode step reads once."""
    return 2 * cfg["B"] * cfg["H"] * cfg["N"] * cfg["D"] * element_bytes


def work(cfg):
    if cfg["mode"] == "decode":
        return decode_flops(cfg["B"], cfg["H"], cfg["N"], cfg["D"], cfg["cq"], cfg["ck"])
    return flops(cfg["B"], cfg["H"], cfg["N"], cfg["D"], cfg["cq"], cfg["ck"],
                 cfg["mode"] == "fwd+bwd")


def torch_mta(q, k, v, wt, scale):
    """MTA as the paper's code computes it, in q's dtype (scores, convolution, probabilities)
    with the softmax in float32. wt: the conv2d kernel (H, 1, cq, ck)."""
    import torch
    import torch.nn.functional as F
    H, N = q.shape[1], q.shape[2]
    cq, ck = wt.shape[2], wt.shape[3]
    pad = (ck - 1) // 2
    future = torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1)
    s0 = ((q @ k.transpose(-1, -2)) * scale).masked_fill(future, 0.0)
    padded = F.pad(s0, (pad, ck - 1 - pad, cq - 1, 0))
    c = F.conv2d(padded, wt.to(q.dtype), groups=H)
    p = torch.softmax(c.masked_fill(future, -torch.inf).float(), dim=-1).to(q.dtype)
    return p @ v


def torch_mta_decode(q_recent, k, v, wt, scale):
    """Row N - 1 of torch_mta, computed as the paper's code would for one step: q_recent (B, H,
    cq, D) holds the queries of positions N - cq .. N - 1 (N >= cq); their scores against all N
    keys with the future zeroed, the same padding of the keys, F.conv2d (one output row), softmax
    in float32 (every key is in the past of N - 1), @V."""
    import torch
    import torch.nn.functional as F
    H, cq, N = q_recent.shape[1], q_recent.shape[2], k.shape[2]
    ck = wt.shape[3]
    pad = (ck - 1) // 2
    positions = torch.arange(N - cq, N, device=q_recent.device)
    future = torch.arange(N, device=q_recent.device)[None, :] > positions[:, None]
    s0 = ((q_recent @ k.transpose(-1, -2)) * scale).masked_fill(future, 0.0)
    c = F.conv2d(F.pad(s0, (pad, ck - 1 - pad)), wt.to(q_recent.dtype), groups=H)
    p = torch.softmax(c.float(), dim=-1).to(q_recent.dtype)
    return p @ v


def weight(gen, cfg):
    """The conv2d kernel (H, 1, cq, ck): the identity (the current row, the centred key) plus
    WEIGHT_NOISE times standard normal noise, float32."""
    import torch

    from .. import gpu
    w = torch.zeros(cfg["H"], 1, cfg["cq"], cfg["ck"], device="cuda")
    w[:, 0, cfg["cq"] - 1, (cfg["ck"] - 1) // 2] = 1.0
    return w + WEIGHT_NOISE * gpu.randn(gen, w.shape, torch.float32)


def run(ctx, cfg):
    if cfg["mode"] == "decode":
        return run_decode(ctx, cfg)
    import torch

    from .. import gpu
    from ..common import tolerance

    gen = ctx.generator(cfg["id"])
    backward = cfg["mode"] == "fwd+bwd"
    shape = (cfg["B"], cfg["H"], cfg["N"], cfg["D"])
    q, k, v = (gpu.randn(gen, shape, ctx.dtype, requires_grad=backward) for _ in range(3))
    w = weight(gen, cfg).requires_grad_(backward)
    scale = cfg["D"] ** -0.5
    leaves = (q, k, v, w)
    ref_leaves = tuple(x.detach().float().requires_grad_(backward) for x in leaves)
    ref_out = torch_mta(*ref_leaves, scale)
    flash_ref_out = torch.nn.functional.scaled_dot_product_attention(*ref_leaves[:3],
                                                                     is_causal=True)
    tessel = ctx.tessel_op("mta_attention", q, k, v, w)

    def peer():
        return torch_mta(q, k, v, w, scale)

    flash = gpu.sdpa_call("flash", q, k, v, True)
    if not backward:
        calls = {"tessel": tessel, "torch": peer, "sdpa-flash": flash}
        refs = {"mta": (ref_out.detach(),), "flash": (flash_ref_out.detach(),)}
    else:
        do = gpu.randn(gen, shape, ctx.dtype)
        refs = {"mta": (ref_out.detach(),
                        *torch.autograd.grad(ref_out, ref_leaves, do.float())),
                "flash": (flash_ref_out.detach(),
                          *torch.autograd.grad(flash_ref_out, ref_leaves[:3], do.float()))}

        def with_grads(forward, inputs=leaves):
            def call():
                out = forward()
                return (out.detach(), *torch.autograd.grad(out, inputs, do))
            return call

        calls = {"tessel": tessel if isinstance(tessel, str) else with_grads(tessel),
                 "torch": with_grads(peer), "sdpa-flash": with_grads(flash, leaves[:3])}
    del ref_out, ref_leaves, flash_ref_out

    def check(impl, out):
        want = refs["flash" if impl == "sdpa-flash" else "mta"]
        outs = out if backward else (out,)
        if not isinstance(outs, tuple) or len(outs) != len(want):
            return float("inf")
        return max(gpu.rel_err(got, ref) for got, ref in zip(outs, want))
    results = gpu.run_impls(ctx, work(cfg), calls, check,
                            tolerance(ctx.dtype_name, grads=backward))
    return {"results": results, "note": ""}


def run_decode(ctx, cfg):
    """tessel.mta_decode against torch_mta_decode, both on the cq newest queries (a rolling
    query cache) and all N keys; checked against torch_mta_decode in float32."""
    from .. import gpu
    from ..common import tolerance

    gen = ctx.generator(cfg["id"])
    heads = (cfg["B"], cfg["H"])
    q = gpu.randn(gen, (*heads, cfg["cq"], cfg["D"]), ctx.dtype)
    k, v = (gpu.randn(gen, (*heads, cfg["N"], cfg["D"]), ctx.dtype) for _ in range(2))
    w = weight(gen, cfg)
    scale = cfg["D"] ** -0.5
    ref = torch_mta_decode(q.float(), k.float(), v.float(), w, scale)
    calls = {"tessel": ctx.tessel_op("mta_decode", q, k, v, w),
             "torch": lambda: torch_mta_decode(q, k, v, w, scale)}
    results = gpu.run_impls(ctx, work(cfg), calls, lambda impl, out: gpu.rel_err(out, ref),
                            tolerance(ctx.dtype_name))
    return {"results": results, "note": decode_note(cfg, results, ctx.dtype.itemsize)}


def decode_note(cfg, results, element_bytes):
    """The K/V read rate of each timed implementation (decode is bound by memory, not FLOPs)."""
    rates = [f"{impl} {kv_bytes(cfg, element_bytes) / (res['ms'] * 1e-3) / 1e9:.0f} GB/s"
             for impl, res in results.items() if res.get("ms")]
    return "K/V read: " + ", ".join(rates) if rates else ""
