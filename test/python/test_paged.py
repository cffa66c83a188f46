"""tessel.lean_attention with a length per sequence, over paged caches (vLLM's layout: pages of
page_size rows in any order, a block table per sequence) and contiguous ones, in interpret mode
against float64 references that gather each sequence's pages; and the checks of the tables.
The interpreter refuses any unmasked access outside a buffer, so the runs with bad tables and no
host check also show that the kernel never reads out of range."""

import numpy as np
import pytest

import reference as ref
import tessel
from test_ops import DTYPES, _check_out, _inputs

PAGED = {  # B, H, HKV, Nq, D, page_size, seq_lens, causal (BLOCK_N is 32 on the interpreter)
    "pages-of-16-gqa2": (3, 4, 2, 1, 32, 16, (37, 5, 64), False),
    "one-row-pages-causal": (2, 2, 1, 3, 16, 1, (9, 3), True),
    "pages-of-3-mha": (2, 3, 3, 2, 16, 3, (0, 40), False),        # an empty sequence
    "pages-of-40-causal-gqa3": (2, 6, 2, 2, 32, 40, (81, 40), True),  # pages beyond a key block
    "pages-of-64-gqa8-nq2": (1, 16, 2, 2, 16, 64, (100,), False),  # 32 rows: tile of 32
}


def _paged_inputs(case, dtype, spare_pages=3):
    """q, the caches and a block table of the case: each sequence's pages drawn at random from a
    cache with a few pages more than the sequences use (pages of sequences in no order), the
    table padded with pages of other sequences past each sequence's end."""
    B, H, HKV, Nq, D, ps, lens, _ = PAGED[case]
    max_pages = max(-(-n // ps) for n in lens) + 1
    num_pages = B * max_pages + spare_pages
    (q, k, v), (q64, k64, v64) = _inputs(case, dtype, (B, H, Nq, D), (num_pages, ps, HKV, D),
                                         (num_pages, ps, HKV, D))
    rng = np.random.default_rng(len(case))
    table = rng.permutation(num_pages)[:B * max_pages].reshape(B, max_pages).astype(np.int32)
    return (q, k, v, table, np.array(lens, np.int32)), (q64, k64, v64)


def _gathered(cache, pages, n):
    """A sequence's first n keys (1, HKV, n, D) from its pages of `cache`."""
    ps, hkv, d = cache.shape[1:]
    return cache[pages].reshape(len(pages) * ps, hkv, d)[:n].transpose(1, 0, 2)[None]


def _reference(q64, k64, v64, table, lens, causal):
    D = q64.shape[-1]
    outs = []
    for b, n in enumerate(lens):
        if n == 0:                         # no key: O = 0
            outs.append(np.zeros_like(q64[b:b + 1]))
            continue
        k_b, v_b = _gathered(k64, table[b], n), _gathered(v64, table[b], n)
        outs.append(ref.decode_attention(q64[b:b + 1], k_b, v_b, np.float32(1 / np.sqrt(D)),
                                         causal)[0])
    return np.concatenate(outs)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
@pytest.mark.parametrize("case", list(PAGED))
def test_paged(case, dtype):
    (q, k, v, table, lens), (q64, k64, v64) = _paged_inputs(case, dtype)
    causal = PAGED[case][-1]
    want = _reference(q64, k64, v64, table, lens, causal)
    for strategy in tessel.ops.LEAN_STRATEGIES:
        for check in tessel.ops.paged.CHECKS:
            got = tessel.lean_attention(q, k, v, causal=causal, strategy=strategy, seq_lens=lens,
                                        block_table=table, check=check)
            _check_out(got, want, dtype)
    # A tight bound on the lengths splits less work, with the same result.
    got = tessel.lean_attention(q, k, v, causal=causal, seq_lens=lens, block_table=table,
                                max_seq_len=int(lens.max()))
    _check_out(got, want, dtype)


@pytest.mark.parametrize("case", list(PAGED))
def test_paged_live_rows(case, monkeypatch):
    """Partial states bounded by the live rows (LIVE_ROWS = G·Nq, as the op bounds them on the
    GPU where a unit has fewer rows than its query tile), through both strategies' hand-overs:
    the same O."""
    from tessel.ops import paged
    tiles = paged.paged_tiles
    monkeypatch.setattr(paged, "paged_tiles", lambda bm, gpu, units, max_len, check, rows: dict(
        tiles(bm, gpu, units, max_len, check, rows), LIVE_ROWS=rows))
    (q, k, v, table, lens), (q64, k64, v64) = _paged_inputs(case, DTYPES[-1])
    causal = PAGED[case][-1]
    want = _reference(q64, k64, v64, table, lens, causal)
    for strategy in tessel.ops.LEAN_STRATEGIES:
        got = tessel.lean_attention(q, k, v, causal=causal, strategy=strategy, seq_lens=lens,
                                    block_table=table)
        _check_out(got, want, DTYPES[-1])


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
def test_ragged_contiguous(dtype):
    """A contiguous (B, HKV, Nk, D) cache with a length per sequence: its first seq_lens[b] rows."""
    B, H, HKV, Nq, Nk, D = 3, 4, 2, 2, 70, 32
    lens = np.array([70, 2, 33], np.int32)
    (q, k, v), (q64, k64, v64) = _inputs("ragged", dtype, (B, H, Nq, D), (B, HKV, Nk, D),
                                         (B, HKV, Nk, D))
    for causal in (False, True):
        want = np.concatenate([ref.decode_attention(
            q64[b:b + 1], k64[b:b + 1, :, :n], v64[b:b + 1, :, :n], np.float32(1 / np.sqrt(D)),
            causal)[0] for b, n in enumerate(lens)])
        for strategy in tessel.ops.LEAN_STRATEGIES:
            _check_out(tessel.lean_attention(q, k, v, causal=causal, strategy=strategy,
                                             seq_lens=lens), want, dtype)


def test_bad_tables_never_read_out_of_range():
    """check=False with a page past the cache, a negative page and lengths past the table: the
    kernel reads none of them (the interpreter would refuse), and the sequences whose tables
    are good get their attention."""
    (q, k, v, table, lens), (q64, k64, v64) = _paged_inputs("pages-of-16-gqa2", np.float16)
    good = _reference(q64, k64, v64, table, lens, False)
    num_pages = k.shape[0]
    bad = table.copy()
    bad[0, 1] = num_pages + 1000
    bad[2, 0] = -7
    for lengths in (lens, np.array([37, 10 ** 6, -5], np.int32)):
        got = tessel.lean_attention(q, k, v, seq_lens=lengths, block_table=bad, check=False)
        assert np.all(np.isfinite(got.astype(np.float64)))
        if lengths is lens:
            _check_out(got[1:2], good[1:2], np.float16)


def _bad(case_update):
    (q, k, v, table, lens), _ = _paged_inputs("pages-of-16-gqa2", np.float16)
    args = dict(q=q, k=k, v=v, seq_lens=lens, block_table=table)
    case_update(args)
    return args


def _set(name, index, value):
    def update(args):
        args[name] = args[name].copy()
        args[name][index] = value
    return update


TABLE_ERRORS = {  # how the tables go wrong, the host check's message
    "page past the cache": (_set("block_table", (0, 2), 1000),
                            r"block_table\[0, 2\] = 1000 is not a page of the cache \(num_pages "
                            r"18\), and sequence 0 has 37 keys"),
    "negative page": (_set("block_table", (2, 3), -1),
                      r"block_table\[2, 3\] = -1 is not a page of the cache"),
    "negative length": (_set("seq_lens", 1, -1),
                        r"seq_lens\[1\] = -1 is outside \[0, 80\] \(the keys its block_table row "
                        r"holds\)"),
    "length past the table": (_set("seq_lens", 2, 81), r"seq_lens\[2\] = 81 is outside \[0, 80\]"),
}


@pytest.mark.parametrize("case", list(TABLE_ERRORS))
def test_bad_tables_are_rejected(case):
    update, message = TABLE_ERRORS[case]
    args = _bad(update)
    with pytest.raises(ValueError, match=r"tessel.lean_attention: " + message):
        tessel.lean_attention(**args)
    # The device check finds it in the kernel, then names it.
    with pytest.raises(ValueError, match=r"tessel.lean_attention: kernel lean_attention_paged "
                                         r"found .*: " + message):
        tessel.lean_attention(**args, check="device")


def test_unused_table_entries_are_not_checked():
    """Entries past a sequence's last page are not read, so they may hold anything (-1 padding)."""
    (q, k, v, table, lens), (q64, k64, v64) = _paged_inputs("pages-of-16-gqa2", np.float16)
    padded = table.copy()
    padded[1, 1:] = -1                    # sequence 1 has 5 keys: one page
    want = _reference(q64, k64, v64, table, lens, False)
    for check in tessel.ops.paged.CHECKS:
        _check_out(tessel.lean_attention(q, k, v, seq_lens=lens, block_table=padded, check=check),
                   want, np.float16)


def _a(*shape, dtype=np.float16):
    return np.zeros(shape, dtype)


Q, K = _a(2, 4, 1, 32), _a(10, 16, 2, 32)
LENS, TABLE = np.array([3, 4], np.int32), np.zeros((2, 2), np.int32)
ARGUMENT_ERRORS = {
    "table without lengths": (lambda: tessel.lean_attention(Q, K, K, block_table=TABLE),
                              ValueError, r"block_table needs seq_lens"),
    "int64 lengths": (lambda: tessel.lean_attention(Q, K, K, block_table=TABLE,
                                                    seq_lens=LENS.astype(np.int64)),
                      TypeError, r"seq_lens must be int32, got int64"),
    "lengths shape": (lambda: tessel.lean_attention(Q, K, K, block_table=TABLE,
                                                    seq_lens=np.zeros(3, np.int32)),
                      ValueError, r"seq_lens must have shape \(2\), got \(3,\)"),
    "table shape": (lambda: tessel.lean_attention(Q, K, K, block_table=np.zeros(2, np.int32),
                                                  seq_lens=LENS),
                    ValueError, r"block_table must have shape \(2, any\), got \(2,\)"),
    "table type": (lambda: tessel.lean_attention(Q, K, K, block_table=[[0]], seq_lens=LENS),
                   TypeError, r"block_table must be a NumPy array or a torch tensor of int32"),
    "cache dims": (lambda: tessel.lean_attention(Q, _a(10, 16, 64), _a(10, 16, 64),
                                                 block_table=TABLE, seq_lens=LENS),
                   ValueError, r"with a block_table, k must be a paged cache \(num_pages, "
                               r"page_size >= 1, HKV, D\), got shape \(10, 16, 64\)"),
    "empty pages": (lambda: tessel.lean_attention(Q, _a(10, 0, 2, 32), _a(10, 0, 2, 32),
                                                  block_table=TABLE, seq_lens=LENS),
                    ValueError, r"with a block_table, k must be a paged cache \(num_pages, "
                                r"page_size >= 1, HKV, D\), got shape \(10, 0, 2, 32\)"),
    "k vs v": (lambda: tessel.lean_attention(Q, K, _a(11, 16, 2, 32), block_table=TABLE,
                                             seq_lens=LENS),
               ValueError, r"the shapes of k and v must match"),
    "gqa": (lambda: tessel.lean_attention(_a(2, 3, 1, 32), K, K, block_table=TABLE,
                                          seq_lens=LENS),
            ValueError, r"the 3 heads of q must be a multiple of the 2 heads of k"),
    "max_seq_len past the table": (lambda: tessel.lean_attention(
        Q, K, K, block_table=TABLE, seq_lens=LENS, max_seq_len=33), ValueError,
        r"max_seq_len must be an integer in \[0, 32\] \(the keys block_table can hold\), got 33"),
    "max_seq_len bool": (lambda: tessel.lean_attention(
        Q, K, K, block_table=TABLE, seq_lens=LENS, max_seq_len=True), ValueError,
        r"max_seq_len must be an integer"),
    "length past max_seq_len": (lambda: tessel.lean_attention(
        Q, K, K, block_table=TABLE, seq_lens=LENS, max_seq_len=3), ValueError,
        r"seq_lens\[1\] = 4 is outside \[0, 3\] \(max_seq_len\)"),
    "check": (lambda: tessel.lean_attention(Q, K, K, block_table=TABLE, seq_lens=LENS,
                                            check="host"),
              ValueError, r"check must be True, False or 'device', got 'host'"),
    "causal short sequence": (lambda: tessel.lean_attention(
        _a(2, 4, 4, 32), K, K, block_table=TABLE, seq_lens=LENS, causal=True), ValueError,
        r"causal decode needs at least as many keys as queries: sequence 0 has 3 keys and 4 "
        r"queries"),
    "contiguous past k": (lambda: tessel.lean_attention(
        Q, _a(2, 2, 5, 32), _a(2, 2, 5, 32), seq_lens=np.array([5, 6], np.int32)), ValueError,
        r"seq_lens\[1\] = 6 is outside \[0, 5\] \(the keys k holds\)"),
    "strategy": (lambda: tessel.lean_attention(Q, K, K, block_table=TABLE, seq_lens=LENS,
                                               strategy="split"),
                 ValueError, r"strategy must be one of stream-k, split-k"),
}


@pytest.mark.parametrize("case", list(ARGUMENT_ERRORS))
def test_argument_errors(case):
    run, error, message = ARGUMENT_ERRORS[case]
    with pytest.raises(error, match=r"tessel.lean_attention: " + message):
        run()


def test_paged_tiles():
    """On the GPU, key blocks of 64 where the split has many of them (and for the device check),
    128 otherwise, and the live rows' bound; every tile the op can pick, for every number of live
    rows, is among the precompiled configurations."""
    from tessel.ops.paged import PAGED_SMALL_BLOCKS_FROM, paged_tiles
    few, many = PAGED_SMALL_BLOCKS_FROM * 64 - 64, PAGED_SMALL_BLOCKS_FROM * 64
    assert paged_tiles(16, True, 1, few)["BLOCK_N"] == 128
    assert paged_tiles(16, True, 1, many)["BLOCK_N"] == 64
    assert paged_tiles(16, True, 8, many // 8)["BLOCK_N"] == 64      # units count too
    assert paged_tiles(16, True, 1, 100, device_check=True)["BLOCK_N"] == 64
    assert paged_tiles(128, True, 1, few)["BLOCK_N"] == 64           # as lean_attention's
    assert paged_tiles(16, False, 1, many) == tessel.ops.lean_tiles(16, False)
    # a unit of fewer live rows than its tile bounds its states (lean_tiles' LIVE_ROWS)
    assert paged_tiles(16, True, 1, few, rows=1)["LIVE_ROWS"] == 1
    assert "LIVE_ROWS" not in paged_tiles(16, True, 1, few, rows=16)
    tile_keys = ("BLOCK_M", "BLOCK_N", "NUM_WARPS", "NUM_STAGES", "LIVE_ROWS")
    configs = [(c[2]["CHECK_TABLES"], c[2]["POW2_PAGES"], c[2]["SAME_KV_STRIDES"],
                {k: c[2][k] for k in tile_keys if k in c[2]})
               for c in tessel.ops.gpu_configurations((64,), ("bf16",), ((3, 5),))
               if c[1] == "lean_attention_paged"]
    for rows in range(1, tessel.ops.LEAN_MAX_ROWS + 1):
        bm = tessel.ops.lean_block_m(rows)
        for check, n in ((False, few), (False, many), (True, few)):
            for usual in (True, False):                 # both forms of usual_cache
                assert (check, usual, usual, paged_tiles(bm, True, 1, n, check, rows)) in configs
    everything = [repr(c) for c in tessel.ops.gpu_configurations((64,), ("bf16",),
                                                                            ((3, 5),))]
    assert len(everything) == len(set(everything))                 # no configuration twice


def test_usual_cache():
    """The paged kernel's form with less integer work: pages of a power of two rows and V's
    strides K's, both or neither."""
    from tessel.ops.paged import usual_cache
    same = (4096, 256, 128)
    assert usual_cache(16, same, same) and usual_cache(1, same, same)
    assert not usual_cache(48, same, same)
    assert not usual_cache(16, same, (4352, 272, 136))


def test_split_length(monkeypatch):
    """The keys split per sequence: max_seq_len if given, else the longest sequence when check=True
    reads the lengths, else what the table holds."""
    from tessel.ops import paged
    (q, k, v, table, lens), _ = _paged_inputs("pages-of-16-gqa2", np.float16)
    seen, forward = [], paged._forward
    monkeypatch.setattr(paged, "_forward",
                        lambda be, *a: seen.append(a[-2]["max_len"]) or forward(be, *a))
    for options in ({}, {"check": "device"}, {"check": False}, {"max_seq_len": 70}):
        tessel.lean_attention(q, k, v, seq_lens=lens, block_table=table, **options)
    assert seen == [64, 80, 80, 70]                  # lengths (37, 5, 64), 5 pages of 16


def test_empty_batch():
    """No sequence (and sequences with no pages): empty or zero outputs, nothing launched."""
    k = np.zeros((3, 16, 2, 32), np.float16)
    for check in tessel.ops.paged.CHECKS:
        o = tessel.lean_attention(np.zeros((0, 4, 1, 32), np.float16), k, k, check=check,
                                  seq_lens=np.zeros(0, np.int32),
                                  block_table=np.zeros((0, 2), np.int32))
        assert o.shape == (0, 4, 1, 32)
    o = tessel.lean_attention(np.ones((2, 4, 1, 32), np.float16), k, k,
                              seq_lens=np.zeros(2, np.int32), block_table=np.zeros((2, 0), np.int32))
    np.testing.assert_array_equal(o, 0.0)
    empty = np.zeros((0, 2, 5, 32), np.float16)
    assert tessel.lean_attention(np.zeros((0, 4, 1, 32), np.float16), empty, empty).shape == \
        (0, 4, 1, 32)
