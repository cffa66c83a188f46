"""Ready-made attention ops on (B, H, N, D) tensors, running the kernels of kernels/*.tsl.

    o = tessel.attention(q, k, v, causal=True)          # flash attention (prefill)
    o = tessel.lean_attention(q, k, v)                  # decode: the newest query rows, stream-K
    o = tessel.mta_attention(q, k, v, w)                # Multi-Token Attention, w: (H, 1, cq, ck)
    o = tessel.mta_decode(q[:, :, -cq:], k, v, w)       # its decode step (the newest position)
    kl = tessel.attention_kl(q_t, k_t, q_s, k_s)        # StreamKL: KL(teacher ‖ student) per row

Two kinds of input, one set of kernels:

  * PyTorch CUDA tensors (float16 or bfloat16; the weight of mta_attention float32) run on the GPU
    and return PyTorch tensors. attention, mta_attention and attention_kl are differentiable
    (torch.autograd.Function; their backward passes launch the backward kernels of the same files,
    by recomputation from the saved per-row LSEs). Any strides with a contiguous last dimension are
    taken as they are when they are multiples of 8 elements and the tensor starts 16-byte aligned
    (other layouts are copied); launches go on the current stream.
  * NumPy arrays run on the CPU interpreter: float16 arrays in f16; float32 arrays in bf16 (NumPy
    has no bfloat16: the inputs are rounded to bf16 on the way in and the output is float32 holding
    bf16 values).

Keys and values may have fewer heads than queries (GQA: H a multiple of HKV; query head h reads
KV head h // (H // HKV)). `scale` multiplies Q Kᵀ (default 1/sqrt(D)). Bad input raises TypeError
(dtype, type, device) or ValueError (shape, head dim, GQA ratio, sizes) naming the op and the
argument, before anything runs. Each kernel is compiled once per configuration (the on-disk cache
keeps it for later processes; a runtime-only package finds it precompiled, see
`python -m tessel.precompile`, which compiles every configuration `gpu_configurations` lists).

One module per op family: common (back ends, tiles, argument checks), flash (attention), lean
(lean_attention), mta (mta_attention, mta_decode), kl (attention_kl), merge (merge_attention_states,
merge_kl_states: partial results over disjoint keys, as tessel.distributed merges them),
configurations (gpu_configurations).
"""

from .common import (BLOCKS, GPU_TUNED, GPU_TUNED_SM90A, HEAD_DIMS, KERNELS_DIR, PREPROCESS_ROWS,
                     gpu_tiles, head_dim)
from .configurations import gpu_configurations
from .flash import attention
from .kl import REDUCTIONS, attention_kl
from .lean import (LEAN_BLOCK_M, LEAN_MAX_ROWS, LEAN_STRATEGIES, lean_attention, lean_block_m,
                   lean_tiles)
from .mta import WEIGHT_LAYOUTS, mta_attention, mta_decode

__all__ = [
    "attention", "attention_kl", "BLOCKS", "gpu_configurations", "gpu_tiles", "GPU_TUNED",
    "GPU_TUNED_SM90A", "HEAD_DIMS", "head_dim", "KERNELS_DIR", "lean_attention", "LEAN_BLOCK_M",
    "lean_block_m", "LEAN_MAX_ROWS", "LEAN_STRATEGIES", "lean_tiles", "mta_attention",
    "mta_decode", "PREPROCESS_ROWS", "REDUCTIONS", "WEIGHT_LAYOUTS",
]
