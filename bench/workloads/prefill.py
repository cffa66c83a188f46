"""Prefill: flash attention forward, B1 H32, N in {1k, 4k, 8k, 16k}, D in {64, 128}, causal and
not; against PyTorch SDPA with the flash and the cuDNN back ends."""

NAME = "prefill"
TITLE = "Prefill: attention forward (B1 H32)"
UNIT = "TFLOP/s"
CEILING = "matmul_tflops"
IMPLS = (("tessel", "Tessel"), ("sdpa-flash", "SDPA flash"), ("sdpa-cudnn", "SDPA cuDNN"))
RATIOS = (("tessel", "sdpa-flash", "vs flash"), ("tessel", "sdpa-cudnn", "vs cuDNN"))
COLUMNS = (("N", "N"), ("D", "D"), ("causal", "causal"))

B, H = 1, 32
SEQ = (1024, 4096, 8192, 16384)
HEAD_DIMS = (64, 128)
# Query rows checked against the float32 reference: spread over the sequence plus the last ones
# (the longest causal rows).
CHECK_SPREAD, CHECK_LAST = 64, 64


def config(N, D, causal):
    return {"id": f"N{N}-D{D}-{'causal' if causal else 'full'}", "B": B, "H": H, "N": N, "D": D,
            "causal": causal}


def configs(quick=False):
    if quick:
        return [config(1024, 128, False), config(1024, 64, True)]
    return [config(N, D, causal) for D in HEAD_DIMS for causal in (False, True) for N in SEQ]


def flops(B, H, Nq, Nk, D, causal):
    """Forward attention: two matmuls of 2·Nq·Nk·D each per head; causal counts half."""
    f = 4.0 * B * H * Nq * Nk * D
    return f / 2 if causal else f


def work(cfg):
    return flops(cfg["B"], cfg["H"], cfg["N"], cfg["N"], cfg["D"], cfg["causal"])


def check_rows(N):
    """Sorted distinct query rows checked against the reference."""
    spread = {round(i * (N - 1) / (CHECK_SPREAD - 1)) for i in range(CHECK_SPREAD)}
    return sorted(spread | set(range(max(0, N - CHECK_LAST), N)))


def run(ctx, cfg):
    import torch

    from .. import gpu
    from ..common import tolerance

    gen = ctx.generator(cfg["id"])
    shape = (cfg["B"], cfg["H"], cfg["N"], cfg["D"])
    q, k, v = (gpu.randn(gen, shape, ctx.dtype) for _ in range(3))
    causal, scale = cfg["causal"], cfg["D"] ** -0.5
    rows = torch.tensor(check_rows(cfg["N"]), device="cuda")
    ref = gpu.attention_reference(q, k, v, causal, scale, rows)
    calls = {
        "tessel": ctx.tessel_op("attention", q, k, v, causal=causal),
        "sdpa-flash": gpu.sdpa_call("flash", q, k, v, causal),
        "sdpa-cudnn": gpu.sdpa_call("cudnn", q, k, v, causal),
    }
    results = gpu.run_impls(ctx, work(cfg), calls,
                            lambda impl, out: gpu.rel_err(out[:, :, rows], ref),
                            tolerance(ctx.dtype_name))
    return {"results": results, "note": ""}
