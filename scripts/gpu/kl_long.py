#!/usr/bin/env python3
"""StreamKL at long context on a machine with an NVIDIA GPU: tessel.attention_kl alone (the
bench's peers take minutes per call there), B1 H16 D128 causal bf16, forward and forward +
backward at each N: time per call (CUDA events, median), the peak memory a call adds (outputs
and gradients included: it should grow linearly in N), and errors against float32 PyTorch on
the first and the last query rows (per-row KL, and dQs of the summed KL: a row's gradient needs
only its own two distributions, so rows can be checked alone at any N; dKs is the numerics
tests' at smaller N).

    kl_long.py [--n 65536,131072] [--reps 5]
"""
import argparse
import os
import sys

import torch

import tessel
from profile_ops import event_ms  # this directory's

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.gpu import peak_extra_bytes  # noqa: E402

B, H, D = 1, 16, 128
ROWS = 64


def rows_reference(q_t, k_t, q_s, k_s, r0, scale):
    """Per-row KL and dQs (of the summed KL) of query rows r0 .. r0 + ROWS, causal, float32."""
    keys = slice(0, r0 + ROWS)
    s = (q_t[:, :, r0:r0 + ROWS].float() @ k_t[:, :, keys].float().transpose(-1, -2)) * scale
    t = (q_s[:, :, r0:r0 + ROWS].float() @ k_s[:, :, keys].float().transpose(-1, -2)) * scale
    hidden = (torch.arange(s.shape[-1], device=s.device)[None, :] >
              torch.arange(r0, r0 + ROWS, device=s.device)[:, None])
    s, t = s.masked_fill(hidden, -torch.inf), t.masked_fill(hidden, -torch.inf)
    logp, logq = torch.log_softmax(s, -1), torch.log_softmax(t, -1)
    p = logp.exp()
    kl = torch.where(p > 0, p * (logp - logq), 0.0).sum(-1)
    dq = ((logq.exp() - p) * scale) @ k_s[:, :, keys].float()
    return kl, dq


def rel(got, want):
    return ((got.float() - want).abs().max() / want.abs().max()).item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", default="65536,131072")
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    print("| N | mode | Tessel ms | TFLOP/s | extra memory | max rel. error, first / last rows |")
    print("|---|---|---|---|---|---|")
    for n in (int(x) for x in a.n.split(",")):
        g = torch.Generator(device="cuda").manual_seed(n)
        mk = lambda: torch.randn(B, H, n, D, device="cuda", dtype=torch.bfloat16, generator=g)
        q_t, k_t, q_s, k_s = mk(), mk(), mk(), mk()
        q_s.requires_grad_(True)
        k_s.requires_grad_(True)
        scale = D ** -0.5
        refs = [rows_reference(q_t, k_t, q_s.detach(), k_s.detach(), r0, scale)
                for r0 in (0, n - ROWS)]

        def forward():
            with torch.no_grad():
                return tessel.attention_kl(q_t, k_t, q_s, k_s, causal=True, reduction="none")

        def both():
            loss = tessel.attention_kl(q_t, k_t, q_s, k_s, causal=True)
            return (loss.detach(), *torch.autograd.grad(loss, (q_s, k_s)))

        kl = forward()
        dq = both()[1]
        errs = {"fwd": [rel(kl[:, :, r0:r0 + ROWS], ref[0])
                        for r0, ref in zip((0, n - ROWS), refs)],
                "fwd+bwd": [rel(dq[:, :, r0:r0 + ROWS], ref[1])
                            for r0, ref in zip((0, n - ROWS), refs)]}
        del kl, dq
        flops = 2.0 * B * H * n * n * 2 * D / 2
        for mode, fn, f in (("fwd", forward, flops),
                            ("fwd+bwd", both, flops + 4.0 * B * H * n * n * D / 2)):
            ms = event_ms(fn, a.reps, warmup=1)
            peak = peak_extra_bytes(fn)
            e = errs[mode]
            print(f"| {n} | {mode} | {ms:.1f} | {f / ms / 1e9:.0f} | {peak / 2**20:.1f} MiB | "
                  f"{e[0]:.1e} / {e[1]:.1e} |", flush=True)


if __name__ == "__main__":
    main()
