"""Paged decode: tessel.lean_attention over a paged KV cache (vLLM's and FlashInfer's layout,
(num_pages, page_size, HKV, D), each sequence's pages in shuffled order through a block table)
against the same decode on the contiguous cache, and SDPA cuDNN on the contiguous cache. One
query row, D128, GQA 8:1; Tessel's calls as a decode loop makes them (check=False, max_seq_len
the batch's longest sequence).

  ctx     B1 H64 HKV8, Nk 4k .. 256k: the cost of the indirection, page sizes 16, 64 and 256
  ragged  B8 H32 HKV8, lengths spread over [Nk/8, Nk] (the same in every run): paged and the
          contiguous cache with a length per sequence (SDPA has no ragged form: padded K/V with a
          mask would read the padding, so it is left out)
The rate is the bytes of K and V the sequences hold (what a decode step must read).
"""

NAME = "paged"
TITLE = "Paged decode: one query row, D128, GQA 8:1"
UNIT = "GB/s"
CEILING = "copy_gbps"
PAGE_SIZES = (16, 64, 256)
IMPLS = tuple((f"tessel-paged{p}", f"Tessel pages of {p}") for p in PAGE_SIZES) + (
    ("tessel-contiguous", "Tessel contiguous"), ("sdpa-cudnn", "SDPA cuDNN (contiguous)"))
RATIOS = tuple((f"tessel-paged{p}", "tessel-contiguous", f"{p} vs contiguous")
               for p in PAGE_SIZES) + (("tessel-paged16", "sdpa-cudnn", "16 vs cuDNN"),)
COLUMNS = (("series", "series"), ("B", "B"), ("H", "H"), ("HKV", "HKV"), ("Nk", "Nk"),
           ("kv_gb", "K/V GB"))

D = 128
ELEMENT_BYTES = 2
CONTEXTS = tuple(4096 << i for i in range(7))           # 4k .. 256k


def lengths(B, Nk):
    """The ragged series' lengths: B values spread evenly over [Nk / 8, Nk], longest first."""
    return [Nk - (Nk - Nk // 8) * i // max(B - 1, 1) for i in range(B)]


def config(series, B, H, HKV, Nk):
    lens = lengths(B, Nk) if series == "ragged" else [Nk] * B
    return {"id": f"{series}-B{B}-H{H}-KV{HKV}-N{Nk}", "series": series, "B": B, "H": H,
            "HKV": HKV, "Nk": Nk, "D": D, "lens": lens,
            "kv_gb": round(2 * sum(lens) * HKV * D * ELEMENT_BYTES / 1e9, 3)}


def configs(quick=False):
    if quick:
        return [config("ctx", 1, 64, 8, 32768), config("ragged", 8, 32, 8, 32768)]
    return ([config("ctx", 1, 64, 8, n) for n in CONTEXTS]
            + [config("ragged", 8, 32, 8, n) for n in (8192, 32768, 131072)])


def work(cfg):
    return 2 * sum(cfg["lens"]) * cfg["HKV"] * D * ELEMENT_BYTES


def run(ctx, cfg):
    import torch

    from .. import gpu
    from ..common import tolerance

    gen = ctx.generator(cfg["id"])
    B, H, HKV, Nk = cfg["B"], cfg["H"], cfg["HKV"], cfg["Nk"]
    q = gpu.randn(gen, (B, H, 1, D), ctx.dtype)
    k, v = (gpu.randn(gen, (B, HKV, Nk, D), ctx.dtype) for _ in range(2))
    lens = torch.tensor(cfg["lens"], dtype=torch.int32, device="cuda")
    ragged = cfg["series"] == "ragged"
    ref = torch.cat([gpu.attention_reference(q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n],
                                             False, D ** -0.5) for b, n in enumerate(cfg["lens"])])
    decode = dict(seq_lens=lens, max_seq_len=max(cfg["lens"]), check=False)
    calls = {}
    for p in PAGE_SIZES:
        # page j of the sequences, in order, is page perm[j] of the cache
        perm = torch.randperm(B * Nk // p, generator=gen, device="cuda")
        k_cache, v_cache = (scattered_pages(x, p, perm) for x in (k, v))
        calls[f"tessel-paged{p}"] = ctx.tessel_op("lean_attention", q, k_cache, v_cache,
                                                  block_table=perm.view(B, -1).to(torch.int32),
                                                  **decode)
    calls["tessel-contiguous"] = ctx.tessel_op("lean_attention", q, k, v,
                                               **(decode if ragged else {}))
    calls["sdpa-cudnn"] = ("unsupported: no ragged form (padded K/V would be read)" if ragged
                           else gpu.sdpa_gqa_call("cudnn", q, k, v))
    results = gpu.run_impls(ctx, work(cfg), calls, lambda impl, out: gpu.rel_err(out, ref),
                            tolerance(ctx.dtype_name))
    return {"results": results, "note": ""}


def scattered_pages(x, page_size, perm):
    """The cache (num_pages, page_size, HKV, D) holding x (B, HKV, Nk, D), Nk a multiple of
    page_size, whose page j (in sequence order) is page perm[j] of the cache."""
    B, HKV, Nk, _ = x.shape
    pages = x.view(B, HKV, Nk // page_size, page_size, D).permute(0, 2, 3, 1, 4)
    cache = x.new_empty((B * Nk // page_size, page_size, HKV, D))
    cache[perm] = pages.reshape(cache.shape)
    return cache
