"""Decode (LeanAttention's sweep): one query row, D128, Nk from 1k to 512k, heads in {8, 16, 24,
32, 56, 64, 128}, batch in {1, 4, 16}, GQA 8:1 included. Tessel's stream-K lowering against its
own split-K lowering and PyTorch SDPA (flash and cuDNN back ends).

The full cross product (210 configurations, up to 550 GB of K/V) does not fit in a run or on the
card, so the sweep is a covering subset, each series varying one thing:
  ctx-mha   B1 H32 (MHA), every Nk                 -> the speedup-vs-context plot
  ctx-gqa   B1 H64 HKV8 (GQA 8:1), every Nk        -> same, grouped-query
  heads     B4 Nk16k (MHA), every head count
  batch     H32 HKV4 (GQA 8:1) Nk64k, every batch
  large     the corners: B16 H128 Nk32k (34 GB of K/V), B16 H64 HKV8 Nk512k (34 GB), and
            B16 H128 Nk512k (550 GB: does not fit, reported as skipped)
Every listed Nk, head count and batch appears; configurations whose K/V do not fit in the card's
memory are skipped with a note.
"""

NAME = "decode"
TITLE = "Decode: one query row, D128"
UNIT = "GB/s"
CEILING = "copy_gbps"
IMPLS = (("tessel-streamk", "Tessel stream-K"), ("tessel-splitk", "Tessel split-K"),
         ("sdpa-flash", "SDPA flash"), ("sdpa-cudnn", "SDPA cuDNN"))
RATIOS = (("tessel-streamk", "sdpa-flash", "vs flash"),
          ("tessel-streamk", "sdpa-cudnn", "vs cuDNN"),
          ("tessel-streamk", "tessel-splitk", "vs split-K"))
COLUMNS = (("series", "series"), ("B", "B"), ("H", "H"), ("HKV", "HKV"), ("Nk", "Nk"),
           ("kv_gb", "K/V GB"))

D = 128
CONTEXTS = tuple(1024 << i for i in range(10))          # 1k .. 512k
HEADS = (8, 16, 24, 32, 56, 64, 128)
BATCHES = (1, 4, 16)
ELEMENT_BYTES = 2                                       # bf16 and f16
# Device memory kept free beside K/V: queries, outputs, the flush buffer, reference chunks,
# workspaces of the implementations.
HEADROOM_BYTES = 4 << 30


def kv_bytes(B, HKV, Nk):
    """Bytes of K and V: what a decode step must read."""
    return 2 * B * HKV * Nk * D * ELEMENT_BYTES


def config(series, B, H, HKV, Nk):
    return {"id": f"{series}-B{B}-H{H}-KV{HKV}-N{Nk}", "series": series, "B": B, "H": H,
            "HKV": HKV, "Nk": Nk, "D": D, "kv_gb": round(kv_bytes(B, HKV, Nk) / 1e9, 3)}


def configs(quick=False):
    if quick:
        return [config("ctx-mha", 1, 32, 32, 4096), config("ctx-gqa", 1, 64, 8, 16384)]
    return ([config("ctx-mha", 1, 32, 32, n) for n in CONTEXTS]
            + [config("ctx-gqa", 1, 64, 8, n) for n in CONTEXTS]
            + [config("heads", 4, h, h, 16384) for h in HEADS]
            + [config("batch", b, 32, 4, 65536) for b in BATCHES]
            + [config("large", 16, 128, 128, 32768), config("large", 16, 64, 8, 524288),
               config("large", 16, 128, 128, 524288)])


def work(cfg):
    return kv_bytes(cfg["B"], cfg["HKV"], cfg["Nk"])


def precheck(cfg, memory_bytes):
    """Why the configuration cannot run on a card with `memory_bytes` (None if it can)."""
    need = work(cfg) + HEADROOM_BYTES
    if need > memory_bytes:
        return (f"skipped: K/V of {work(cfg) / 1e9:.0f} GB do not fit in the card's "
                f"{memory_bytes / 1e9:.0f} GB")
    return None


def run(ctx, cfg):
    from .. import gpu
    from ..common import tolerance

    gen = ctx.generator(cfg["id"])
    B, H, HKV, Nk = cfg["B"], cfg["H"], cfg["HKV"], cfg["Nk"]
    q = gpu.randn(gen, (B, H, 1, D), ctx.dtype)
    k, v = (gpu.randn(gen, (B, HKV, Nk, D), ctx.dtype) for _ in range(2))
    ref = gpu.attention_reference(q, k, v, False, D ** -0.5)
    calls = {
        "tessel-streamk": ctx.tessel_op("lean_attention", q, k, v, strategy="stream-k"),
        "tessel-splitk": ctx.tessel_op("lean_attention", q, k, v, strategy="split-k"),
        "sdpa-flash": gpu.sdpa_gqa_call("flash", q, k, v),
        "sdpa-cudnn": gpu.sdpa_gqa_call("cudnn", q, k, v),
    }
    results = gpu.run_impls(ctx, work(cfg), calls, lambda impl, out: gpu.rel_err(out, ref),
                            tolerance(ctx.dtype_name))
    return {"results": results, "note": ""}
