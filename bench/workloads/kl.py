"""StreamKL: per-row KL(P ‖ Q) between teacher and student attention, B1 H16 D128 causal (the
distillation of a causal language model), N in {2k .. 128k}, forward and forward + backward
(gradients to the student's Q and K); against the materialising PyTorch implementation (which runs
out of memory from 32k) and the same math over blocks of query rows (each block recomputed in the
backward, so its memory grows linearly with N: the best PyTorch can do without a fused kernel),
with every implementation's peak extra memory."""

NAME = "kl"
TITLE = "StreamKL: attention KL, B1 H16 D128 causal"
UNIT = "TFLOP/s"
CEILING = "matmul_tflops"
IMPLS = (("tessel", "Tessel"), ("torch", "PyTorch materialised"),
         ("chunked", "PyTorch by query blocks"))
RATIOS = (("tessel", "torch", "vs PyTorch"), ("tessel", "chunked", "vs blocks"))
COLUMNS = (("N", "N"), ("mode", "mode"))

B, H, D = 1, 16, 128
SEQ = (2048, 4096, 8192, 16384, 32768, 65536, 131072)
MODES = ("fwd", "fwd+bwd")
CAUSAL = True
# Query rows per chunk of the float32 reference.
REF_ROWS = 64
# Query rows per block of the blockwise PyTorch peer.
BLOCK_ROWS = 1024


def config(N, mode):
    return {"id": f"N{N}-{mode.replace('+', '')}", "B": B, "H": H, "N": N, "D": D,
            "mode": mode}


def configs(quick=False):
    if quick:
        return [config(2048, mode) for mode in MODES]
    return [config(N, mode) for mode in MODES for N in SEQ]


def flops(B, H, Nq, Nk, DT, DS, causal, backward):
    """Teacher and student scores (2·Nq·Nk·(DT+DS) per head); the backward adds the student's
    dQ = dT K and dK = dTᵀ Q (4·Nq·Nk·DS); causal counts half."""
    f = 2.0 * B * H * Nq * Nk * (DT + DS)
    if backward:
        f += 4.0 * B * H * Nq * Nk * DS
    return f / 2 if causal else f


def work(cfg):
    return flops(cfg["B"], cfg["H"], cfg["N"], cfg["N"], cfg["D"], cfg["D"], CAUSAL,
                 cfg["mode"] == "fwd+bwd")


def _masked_scores(q, k, scale, causal):
    """q kᵀ·scale in float32; hidden (future) keys get the most negative finite float rather than
    -inf, so that their KL terms are 0·0 and not 0·NaN (forward and backward)."""
    import torch
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:
        n_q, n_k = s.shape[-2:]
        hidden = torch.ones(n_q, n_k, dtype=torch.bool, device=s.device).triu(1)
        s = s.masked_fill(hidden, torch.finfo(torch.float32).min)
    return s


def torch_kl(q_t, k_t, q_s, k_s, causal, scale):
    """The materialising peer: both score matrices in float32, log_softmax, Σ P (log P - log Q)
    over the keys. Returns the per-row KL (B, H, N)."""
    import torch
    logp = torch.log_softmax(_masked_scores(q_t, k_t, scale, causal), dim=-1)
    logq = torch.log_softmax(_masked_scores(q_s, k_s, scale, causal), dim=-1)
    return (logp.exp() * (logp - logq)).sum(-1)


def _block_kl(q_t, k_t, q_s, k_s, r0, causal, scale):
    """torch_kl's math for the query rows r0.. of q_t/q_s against the keys k_t/k_s (those the
    rows can see), with the hidden keys masked as _masked_scores does."""
    import torch
    s = (q_t.float() @ k_t.float().transpose(-1, -2)) * scale
    t = (q_s.float() @ k_s.float().transpose(-1, -2)) * scale
    if causal:
        rows = torch.arange(r0, r0 + s.shape[-2], device=s.device)
        cols = torch.arange(s.shape[-1], device=s.device)
        hidden = cols[None, :] > rows[:, None]
        lowest = torch.finfo(torch.float32).min
        s, t = s.masked_fill(hidden, lowest), t.masked_fill(hidden, lowest)
    logp, logq = torch.log_softmax(s, dim=-1), torch.log_softmax(t, dim=-1)
    return (logp.exp() * (logp - logq)).sum(-1)


def torch_kl_blocks(q_t, k_t, q_s, k_s, causal, scale, rows=BLOCK_ROWS):
    """The non-materialising peer: torch_kl over blocks of `rows` query rows, each against the
    keys it can see, recomputed in the backward (activation checkpointing), so that no more than
    one block's rows × N scores exist at a time. Returns the per-row KL (B, H, N)."""
    import torch
    from torch.utils.checkpoint import checkpoint
    N = q_t.shape[2]
    out = []
    for r0 in range(0, N, rows):
        r1 = min(N, r0 + rows)
        keys = r1 if causal else N
        out.append(checkpoint(_block_kl, q_t[:, :, r0:r1], k_t[:, :, :keys], q_s[:, :, r0:r1],
                              k_s[:, :, :keys], r0, causal, scale, use_reentrant=False))
    return torch.cat(out, dim=2)


def reference(q_t, k_t, q_s, k_s, causal, scale, grads):
    """Per-row KL in float32 by chunks of REF_ROWS query rows, and with `grads` the gradients of
    its sum to q_s and k_s from ∂KL/∂t = Q - P (t the student's scores)."""
    import torch
    with torch.no_grad():                  # q_s, k_s may require grad: no graph of the chunks
        return _reference(torch, q_t, k_t, q_s, k_s, causal, scale, grads)


def _reference(torch, q_t, k_t, q_s, k_s, causal, scale, grads):
    N = q_t.shape[2]
    kl = torch.empty(q_t.shape[:3], device=q_t.device)
    kt, ks = k_t.float(), k_s.float()
    dq = torch.zeros(q_s.shape, device=q_s.device) if grads else None
    dk = torch.zeros(k_s.shape, device=k_s.device) if grads else None
    cols = torch.arange(N, device=q_t.device)
    for r0 in range(0, N, REF_ROWS):
        rows = slice(r0, min(N, r0 + REF_ROWS))
        qs = q_s[:, :, rows].float()
        s = (q_t[:, :, rows].float() @ kt.transpose(-1, -2)) * scale
        t = (qs @ ks.transpose(-1, -2)) * scale
        if causal:
            hidden = cols[None, :] > torch.arange(r0, rows.stop, device=cols.device)[:, None]
            s.masked_fill_(hidden, -torch.inf)
            t.masked_fill_(hidden, -torch.inf)
        logp, logq = torch.log_softmax(s, -1), torch.log_softmax(t, -1)
        p = logp.exp()
        kl[:, :, rows] = torch.where(p > 0, p * (logp - logq), 0.0).sum(-1)
        if grads:
            dt = (logq.exp() - p) * scale
            dq[:, :, rows] = dt @ ks
            dk += dt.transpose(-1, -2) @ qs
    return kl, dq, dk


def run(ctx, cfg):
    import torch

    from .. import gpu
    from ..common import tolerance

    gen = ctx.generator(cfg["id"])
    backward = cfg["mode"] == "fwd+bwd"
    shape = (cfg["B"], cfg["H"], cfg["N"], cfg["D"])
    q_t, k_t = (gpu.randn(gen, shape, ctx.dtype) for _ in range(2))
    q_s, k_s = (gpu.randn(gen, shape, ctx.dtype, requires_grad=backward) for _ in range(2))
    scale = cfg["D"] ** -0.5
    ref_kl, ref_dq, ref_dk = reference(q_t, k_t, q_s, k_s, CAUSAL, scale, backward)
    tessel_kl = ctx.tessel_op("attention_kl", q_t, k_t, q_s, k_s, causal=CAUSAL,
                              reduction="sum" if backward else "none")

    def peer():
        return torch_kl(q_t, k_t, q_s, k_s, CAUSAL, scale)

    def blocks():
        return torch_kl_blocks(q_t, k_t, q_s, k_s, CAUSAL, scale)

    if not backward:
        calls = {"tessel": tessel_kl, "torch": peer, "chunked": blocks}

        def check(impl, out):
            return gpu.rel_err(out, ref_kl)
    else:
        def with_grads(loss):
            def call():
                value = loss()
                return (value.detach(), *torch.autograd.grad(value, (q_s, k_s)))
            return call

        calls = {"tessel": tessel_kl if isinstance(tessel_kl, str) else with_grads(tessel_kl),
                 "torch": with_grads(lambda: peer().sum()),
                 "chunked": with_grads(lambda: blocks().sum())}
        ref_sum = ref_kl.sum()

        def check(impl, out):
            return max(gpu.rel_err(got, want) for got, want in
                       zip(out, (ref_sum, ref_dq, ref_dk)))
    results = gpu.run_impls(ctx, work(cfg), calls, check,
                            tolerance(ctx.dtype_name, grads=backward), measure_memory=True)
    return {"results": results, "note": ""}
