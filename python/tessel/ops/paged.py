"""tessel.lean_attention with a length per sequence, over a paged KV cache or a contiguous one
(kernels/lean_attention.tsl's lean_attention_paged).

A paged cache holds K and V in pages of page_size rows, (num_pages, page_size, HKV, D), the layout
of vLLM and FlashInfer; block_table (B, max_pages) int32 lists each sequence's pages and seq_lens
(B,) int32 its number of keys. A contiguous cache (B, HKV, Nk, D) with seq_lens is the case of one
page of Nk rows per sequence."""

import numpy as np

from ..compiler import cdiv
from . import lean, plans
from .common import bhnd, backend, check_gqa, check_head_dim, check_same, element_type, \
    is_torch, scale_value, torch_module

# check=: True reads the tables on the host before the launch; 'device' has the kernel count what
# it finds out of range and reads the count after it; False checks shapes only (the kernel still
# never reads out of range: it reads a key whose page is not in the cache as zeros).
CHECKS = (True, False, "device")
# On the GPU a paged cache takes key blocks of 64 where the split has at least this many of them
# (units x blocks per unit): the page lookup costs integer work per key row, which two CTAs per SM
# (blocks of 64) hide better than one (blocks of 128), while at fewer blocks per program the
# doubled fix-up of partial states costs more. Measured on an H100 and an H200 (132 SMs; docs/gpu/
# 2026-11-26-paged-decode.md): B1 H64/8 from 128k keys and ragged B8 H32/8 from 8k gain, B1 H64/8
# up to 32k loses. The device check always runs blocks of 64 (one debug build per query tile).
PAGED_SMALL_BLOCKS_FROM = 8192
_PLANS = plans.Plans()
_identity_tables = {}


def paged_attention(q, k, v, causal, scale, strategy, seq_lens, block_table, max_seq_len, check):
    """lean_attention's paged and ragged form (see tessel.lean_attention)."""
    op = "lean_attention"
    if check is not True and check is not False and check != "device":
        raise ValueError(f"tessel.{op}: check must be True, False or 'device', got {check!r}")
    if seq_lens is None:
        raise ValueError(f"tessel.{op}: block_table needs seq_lens, the number of keys of each "
                         f"sequence")
    table = _identity_table(seq_lens, k.shape[0]) if block_table is None else block_table
    key = plans.key((q, k, v, table, seq_lens), causal, scale, type(scale), strategy,
                    max_seq_len, block_table is None) if check is False else None
    out = _PLANS.replay(key, q, k, v, table, seq_lens)
    if out is not None:
        return out[0]
    args = _check(op, q, k, v, table, seq_lens, block_table is None, causal, scale, strategy,
                  max_seq_len)
    if check is True:
        longest = _check_tables(op, table, seq_lens, args, causal)
        if max_seq_len is None:           # the split covers the keys the sequences have
            args["max_len"] = longest
    be = args["be"]
    results = _PLANS.run(key, be, (q, k, v, table, seq_lens),
                         lambda *inputs: _forward(be, *inputs, args, check == "device"))
    if check == "device":
        errors = results[1].tolist()
        if any(errors):
            found = _table_errors(*_host_tables(table, seq_lens), args, causal)
            raise ValueError(f"tessel.{op}: kernel lean_attention_paged found {errors[1]} key "
                             f"reads of pages outside the cache and {errors[0]} lengths out of "
                             f"range" + (f": {found}" if found else ""))
    return results[0]


def _identity_table(seq_lens, batch):
    """block_table[b, 0] = b: a contiguous cache seen as one page per sequence."""
    if not is_torch(seq_lens):
        return np.arange(batch, dtype=np.int32).reshape(batch, 1)
    key = (batch, seq_lens.device)
    if key not in _identity_tables:
        torch = torch_module()
        _identity_tables[key] = torch.arange(batch, dtype=torch.int32,
                                             device=seq_lens.device).view(batch, 1)
    return _identity_tables[key]


def _int_vector(op, name, x, shape):
    """x: an int32 array of `shape` (NumPy or torch)."""
    if not isinstance(x, np.ndarray) and not is_torch(x):
        raise TypeError(f"tessel.{op}: {name} must be a NumPy array or a torch tensor of int32, "
                        f"got {type(x).__name__}")
    torch = torch_module()
    if x.dtype not in (np.dtype(np.int32), getattr(torch, "int32", None)):
        raise TypeError(f"tessel.{op}: {name} must be int32, got {x.dtype}")
    if x.ndim != len(shape) or any(want is not None and got != want
                                   for got, want in zip(x.shape, shape)):
        dims = ", ".join("any" if d is None else str(d) for d in shape)
        raise ValueError(f"tessel.{op}: {name} must have shape ({dims}), got {tuple(x.shape)}")


def _check(op, q, k, v, table, seq_lens, contiguous, causal, scale, strategy, max_seq_len):
    """The shape, type and option checks; returns what the launch needs."""
    B, H, Nq, D = bhnd(op, "q", q)
    if contiguous:
        Bk, HKV, Nk, Dk = bhnd(op, "k", k)
        check_same(op, "batch sizes", q=B, k=Bk)
        num_pages, page_size, capacity = B, max(Nk, 1), Nk
    else:
        if k.ndim != 4 or k.shape[1] < 1:
            raise ValueError(f"tessel.{op}: with a block_table, k must be a paged cache "
                             f"(num_pages, page_size >= 1, HKV, D), got shape {tuple(k.shape)}")
        num_pages, page_size, HKV, Dk = k.shape
        capacity = None
    check_same(op, "the shapes of k and v", k=tuple(k.shape), v=tuple(v.shape))
    check_same(op, "head dims", q=D, k=Dk)
    check_head_dim(op, "q", D)
    check_gqa(op, "q", H, "k", HKV)
    lean.check_rows(op, H // HKV, Nq)
    _int_vector(op, "seq_lens", seq_lens, (B,))
    _int_vector(op, "block_table", table, (B, None))
    if capacity is None:
        capacity = table.shape[1] * page_size
    if max_seq_len is None:
        max_len = capacity
    elif isinstance(max_seq_len, (bool, np.bool_)) or \
            not isinstance(max_seq_len, (int, np.integer)) or not 0 <= max_seq_len <= capacity:
        what = "k holds" if contiguous else "block_table can hold"
        raise ValueError(f"tessel.{op}: max_seq_len must be an integer in [0, {capacity}] "
                         f"(the keys {what}), got {max_seq_len!r}")
    else:
        max_len = int(max_seq_len)
    stream_k = lean.stream_k_lowering(op, strategy)
    arrays = {"q": q, "k": k, "v": v, "block_table": table, "seq_lens": seq_lens}
    be = backend(op, arrays)
    dtype = element_type(op, {"q": q, "k": k, "v": v})
    return dict(be=be, dtype=dtype, scale=scale_value(op, scale, D), stream_k=stream_k,
                causal=bool(causal), contiguous=contiguous, Nq=Nq, num_pages=num_pages,
                page_size=page_size, capacity=capacity, max_len=max_len)


def _host(x):
    return x.cpu().numpy() if is_torch(x) else np.asarray(x)


def _host_tables(table, seq_lens):
    """(lengths, block table) as int64 NumPy arrays on the host."""
    return _host(seq_lens).astype(np.int64), _host(table).astype(np.int64)


def _table_errors(lens, pages, args, causal):
    """The first problem of the tables' values (host arrays), or ''."""
    max_len = args["max_len"]
    out_of_range = np.flatnonzero((lens < 0) | (lens > max_len))
    if len(out_of_range):
        b = out_of_range[0]
        bound = "max_seq_len" if max_len < args["capacity"] else \
            "the keys k holds" if args["contiguous"] else "the keys its block_table row holds"
        return f"seq_lens[{b}] = {lens[b]} is outside [0, {max_len}] ({bound})"
    if causal and len(lens) and lens.min() < args["Nq"]:
        b = int(np.argmin(lens))
        return (f"causal decode needs at least as many keys as queries: sequence {b} has "
                f"{lens[b]} keys and {args['Nq']} queries")
    used = np.arange(pages.shape[1])[None, :] < -(-lens // args["page_size"])[:, None]
    bad = np.argwhere(used & ((pages < 0) | (pages >= args["num_pages"])))
    if len(bad):
        b, j = bad[0]
        return (f"block_table[{b}, {j}] = {pages[b, j]} is not a page of the cache "
                f"(num_pages {args['num_pages']}), and sequence {b} has {lens[b]} keys")
    return ""


def _check_tables(op, table, seq_lens, args, causal):
    """check=True: the tables' values, read on the host before the launch; returns the longest
    length."""
    torch = torch_module()
    if is_torch(seq_lens) and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(f"tessel.{op}: check=True reads block_table and seq_lens on the host, "
                           f"which a CUDA graph capture cannot do; check them before capturing "
                           f"and pass check=False (or check='device' outside the capture)")
    lens, pages = _host_tables(table, seq_lens)
    found = _table_errors(lens, pages, args, causal)
    if found:
        raise ValueError(f"tessel.{op}: {found}")
    return int(lens.max(initial=0))


def _forward(be, q, k, v, table, seq_lens, args, device_check):
    q, k, v = (be.input(x) for x in (q, k, v))
    if not be.gpu:
        table, seq_lens = np.ascontiguousarray(table), np.ascontiguousarray(seq_lens)
    else:
        table, seq_lens = table.contiguous(), seq_lens.contiguous()
    B, H, Nq, D = q.shape
    HKV = k.shape[1] if args["contiguous"] else k.shape[2]
    rows = H // HKV * Nq
    tiles = paged_tiles(lean.lean_block_m(rows), be.gpu, B * HKV, args["max_len"], device_check,
                        rows)
    o = be.empty((B, H, Nq, D), q)
    errors = (be.zeros if device_check else be.empty)((2,), seq_lens, seq_lens.dtype)
    if B == 0:                          # no sequence: nothing to launch
        return o, errors
    # k's (page, row, head) strides; a contiguous cache's are (batch, row, head)
    sk, sv = (_page_strides(be, x, args["contiguous"]) for x in (k, v))
    usual = usual_cache(args["page_size"], sk, sv)
    iters = cdiv(args["max_len"], tiles["BLOCK_N"])
    launch = {} if be.gpu else {"programs": min(B * HKV * max(iters, 1), lean.LEAN_PROGRAMS)}
    be.kernel("lean_attention.tsl", "lean_attention_paged", args["stream_k"])(
        q, k, v, table, seq_lens, o, None, errors, *be.strides(q), *sk, *sv, table.shape[1], B, H,
        HKV, Nq, table.shape[1], args["num_pages"], args["page_size"], args["max_len"],
        args["scale"], D=D, CAUSAL=args["causal"], CHECK_TABLES=device_check,
        DTYPE=args["dtype"], POW2_PAGES=usual, SAME_KV_STRIDES=usual, **tiles, **launch)
    return o, errors


def usual_cache(page_size, sk, sv):
    """Whether a cache takes lean_attention_paged's form with less integer work per key row: pages
    of a power of two rows, and V's strides K's (vLLM's and FlashInfer's caches; measured on an
    H200, B4 H32/8 ragged to 32k keys: 103.9-104.0 -> 93.7-93.9 us in pages of 16). Both conditions or
    neither, so that two specialisations per tile cover every cache."""
    return page_size & (page_size - 1) == 0 and tuple(sk) == tuple(sv)


def paged_tiles(block_m, gpu, units, max_len, device_check=False, rows=None):
    """lean_attention_paged's tile constexprs: lean_attention's (LIVE_ROWS for units of `rows`
    live rows), with key blocks of 64 on the GPU where `units` x the blocks of `max_len` keys
    reach PAGED_SMALL_BLOCKS_FROM, or for the device check."""
    tiles = lean.lean_tiles(block_m, gpu, rows)
    if gpu and (device_check or units * cdiv(max_len, 64) >= PAGED_SMALL_BLOCKS_FROM):
        tiles["BLOCK_N"] = 64
    return tiles


def _page_strides(be, x, contiguous):
    """(page, row, head) element strides of a paged cache, or of a (B, HKV, Nk, D) one."""
    s = be.strides(x)
    return (s[0], s[2], s[1]) if contiguous else s
