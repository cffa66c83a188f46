"""The package on a GPU with PyTorch: the ready ops on CUDA tensors against float64 PyTorch
references (materialising), their gradients through loss.backward() against autograd through the
same references, and kernel launches with torch, __cuda_array_interface__ (CuPy) and DLPack
arguments.  Run by scripts/gpu/check.sh on a machine with an NVIDIA GPU and PyTorch:

    TESSEL_BUNDLE_DIR=<precompiled bundles> PYTHONPATH=<build>/python python3 -m pytest -s test/gpu

Tolerances as in test/numerics/test_kernels.py (u: 2^-11 for f16, 2^-8 for bf16): outputs within
4u + 2u·max|ref|; gradients within 2u + 4u·max|ref|; f32 results (KL rows) within 1e-5 + 4e-6·M,
M the magnitude of the terms (the LSEs).  Inputs are fresh random values (seeded per case), with
ragged sizes (never multiples of the tiles), GQA and causal masks.
"""

import math
import os
import sys

import pytest
import torch
import torch.nn.functional as F

import tessel

U = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}
DTYPES = (torch.float16, torch.bfloat16)
IDS = ["f16", "bf16"]
DEV = "cuda"


def _gen(*key):
    g = torch.Generator(device=DEV)
    g.manual_seed(int.from_bytes(repr(key).encode()[:8].ljust(8, b"\0"), "little") % (2 ** 63))
    return g


def _randn(g, shape, dtype, scale=1.0, requires_grad=False):
    x = (torch.randn(shape, generator=g, device=DEV, dtype=torch.float32) * scale).to(dtype)
    return x.requires_grad_(requires_grad)


def _check(label, got, want, atol, rtol):
    got, want = got.double(), want.double()
    err = (got - want).abs().max().item() if got.numel() else 0.0
    scale = want.abs().max().item() if want.numel() else 0.0
    limit = atol + rtol * scale
    rel = err / scale if scale else err
    print(f"    {label:28s} max abs {err:9.2e}  max rel {rel:9.2e}  (limit {limit:8.2e})")
    assert got.shape == want.shape, (label, got.shape, want.shape)
    assert err <= limit, f"{label}: max abs error {err:.3e} > limit {limit:.3e}"


def _out(label, got, want, dtype):
    _check(label, got, want, 4 * U[dtype], 2 * U[dtype])


def _grad(label, got, want, dtype):
    _check(label, got, want, 2 * U[dtype], 4 * U[dtype])


# ---------------------------------------------------------------------------------------------
# float64 references (materialising), differentiable by autograd

def _expand(x, h):
    return x.repeat_interleave(h // x.shape[1], dim=1)


def _softmax_rows(s, visible):
    s = s.masked_fill(~visible, float("-inf"))
    m = s.amax(-1, keepdim=True).clamp_min(-1e300).nan_to_num(neginf=0.0)
    e = torch.exp(s - m) * visible
    l = e.sum(-1, keepdim=True)
    return e / l.clamp_min(1e-300), (m + torch.log(l)).squeeze(-1)


def ref_attention(q, k, v, causal, scale):
    q, k, v = q.double(), _expand(k.double(), q.shape[1]), _expand(v.double(), q.shape[1])
    s = q @ k.transpose(-1, -2) * scale
    nq, nk = s.shape[-2:]
    visible = torch.ones(nq, nk, dtype=torch.bool, device=q.device)
    if causal:
        visible = torch.tril(visible)
    p, _ = _softmax_rows(s, visible)
    return p @ v


def ref_mta(q, k, v, wt, scale):
    """The MTA reference code: S0 = QKᵀ·scale with future positions 0, F.pad by cq - 1 rows on
    top and (ck - 1) // 2 / ck // 2 columns left / right, F.conv2d with the kernel Wt
    (H, 1, cq, ck) per head (groups=H), future positions -inf, softmax, ·V."""
    H, N = q.shape[1], q.shape[2]
    cq, ck = wt.shape[2:]
    pad = (ck - 1) // 2
    q, k, v = q.double(), _expand(k.double(), H), _expand(v.double(), H)
    visible = torch.tril(torch.ones(N, N, dtype=torch.bool, device=q.device))
    s0 = (q @ k.transpose(-1, -2) * scale) * visible
    x = F.pad(s0, (pad, ck - 1 - pad, cq - 1, 0))
    c = F.conv2d(x, wt.double(), groups=H)
    p, _ = _softmax_rows(c, visible)
    return p @ v


def ref_kl_rows(q_t, k_t, q_s, k_s, causal, scale_t, scale_s):
    H = q_t.shape[1]
    s = q_t.double() @ _expand(k_t.double(), H).transpose(-1, -2) * scale_t
    t = q_s.double() @ _expand(k_s.double(), H).transpose(-1, -2) * scale_s
    nq, nk = s.shape[-2:]
    visible = torch.ones(nq, nk, dtype=torch.bool, device=s.device)
    if causal:
        visible = torch.tril(visible)
    p, lse_t = _softmax_rows(s, visible)
    _, lse_s = _softmax_rows(t, visible)
    logp = s - lse_t[..., None]
    logq = t - lse_s[..., None]
    kl = torch.where(visible, p * (logp - logq), torch.zeros_like(s)).sum(-1)
    return kl, lse_t, lse_s


# ---------------------------------------------------------------------------------------------
# the ops

ATTENTION = {  # B, H, HKV, Nq, Nk, D, causal
    "gqa2-ragged-d64": (2, 4, 2, 77, 93, 64, False),
    "causal-d128": (1, 3, 1, 100, 100, 128, True),
    "causal-gqa4-d64": (1, 8, 2, 130, 130, 64, True),
    # More blocks than SMs: on Hopper each program of the tuned D128 forward takes several of its
    # head's query blocks (on 132 SMs: 64 heads x 8 blocks, 2 programs a head; 40 x 12, ragged, 3).
    "causal-gqa8-d128-blocks-in-turn": (1, 64, 8, 1000, 1000, 128, True),
    "ragged-d128-blocks-in-turn": (1, 40, 40, 1500, 1500, 128, False),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", list(ATTENTION))
def test_attention_and_grads(case, dtype):
    B, H, HKV, Nq, Nk, D, causal = ATTENTION[case]
    g = _gen("attention", case, str(dtype))
    q = _randn(g, (B, H, Nq, D), dtype, requires_grad=True)
    k = _randn(g, (B, HKV, Nk, D), dtype, requires_grad=True)
    v = _randn(g, (B, HKV, Nk, D), dtype, requires_grad=True)
    do = _randn(g, (B, H, Nq, D), dtype)
    scale = 1 / math.sqrt(D)
    print(f"\n  attention {case} {dtype}")
    o = tessel.attention(q, k, v, causal=causal)
    assert o.dtype == dtype and o.is_cuda
    want = ref_attention(q, k, v, causal, scale)
    _out("O", o, want, dtype)
    _check_grads(o, want, do, {"dQ": q, "dK": k, "dV": v}, dtype)


def _check_grads(out, want, do, inputs, dtype):
    """Gradients of Σ out·dO (Tessel's backward kernels) against autograd through the reference
    `want`, for `inputs` ({name: tensor}); float32 inputs keep their dtype, the others `dtype`."""
    (out.float() * do.float()).sum().backward()
    got = {name: x.grad.clone() for name, x in inputs.items()}
    for x in inputs.values():
        x.grad = None
    (want * do.double()).sum().backward()
    for name, x in inputs.items():
        assert got[name].dtype == x.dtype
        _grad(name, got[name], x.grad, dtype)


def test_attention_strided_and_no_grad():
    """A (B, N, H, D) view (stride 1 along D only) and a non-contiguous D (copied)."""
    g = _gen("strided")
    x = _randn(g, (2, 70, 4, 64), torch.float16)
    q = x.transpose(1, 2)                                  # (B, H, N, D) view
    kv = _randn(g, (2, 64, 70, 2), torch.float16).permute(0, 3, 2, 1)   # stride(-1) != 1
    with torch.no_grad():
        o = tessel.attention(q, kv, kv)
    _out("O strided", o, ref_attention(q, kv, kv, False, 1 / 8), torch.float16)


LEAN = {  # B, H, HKV, Nq, Nk, D, causal; a unit holds the (H / HKV) * Nq rows of a GQA group
    "gqa8-nq1-d128": (2, 16, 2, 1, 3001, 128, False),
    "causal-nq5-d64": (1, 4, 2, 5, 777, 64, True),
    "nk-lt-block": (3, 2, 1, 1, 9, 128, False),
    "mha-nq16-d128": (2, 4, 4, 16, 1000, 128, True),           # 16 rows, no padding
    "gqa3-nq3-d64": (2, 6, 2, 3, 555, 64, False),              # 9 rows, non-power-of-two group
    "causal-gqa8-nq3-d128": (1, 32, 4, 3, 1234, 128, True),     # 24 rows: tile of 32
    "causal-gqa4-nq16-d128": (1, 32, 8, 16, 1000, 128, True),   # 64 rows
    "causal-gqa8-nq16-d128": (1, 16, 2, 16, 2049, 128, True),   # 128 rows: the largest tile
}


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", list(LEAN))
def test_lean_attention(case, dtype):
    B, H, HKV, Nq, Nk, D, causal = LEAN[case]
    g = _gen("lean", case, str(dtype))
    q, k, v = (_randn(g, s, dtype) for s in ((B, H, Nq, D), (B, HKV, Nk, D), (B, HKV, Nk, D)))
    print(f"\n  lean_attention {case} {dtype}")
    for strategy in tessel.ops.LEAN_STRATEGIES:  # stream-k and split-k
        o = tessel.lean_attention(q, k, v, causal=causal, strategy=strategy)
        # Decode rows are the last Nq positions: bottom-right causal alignment.
        s = q.double() @ _expand(k.double(), H).transpose(-1, -2) / math.sqrt(D)
        visible = torch.ones(Nq, Nk, dtype=torch.bool, device=DEV)
        if causal:
            visible = torch.arange(Nk, device=DEV)[None, :] <= (Nk - Nq) + torch.arange(
                Nq, device=DEV)[:, None]
        p, _ = _softmax_rows(s, visible)
        _out(f"O ({strategy})", o, p @ _expand(v.double(), H), dtype)


PAGED = {  # B, H, HKV, Nq, D, page_size, seq_lens, causal (key blocks of 128 on the GPU)
    "pages-of-16-gqa8": (3, 16, 2, 1, 128, 16, (3001, 0, 777), False),
    "pages-of-256-causal-nq2": (2, 8, 4, 2, 128, 256, (1000, 2), True),
    "pages-of-64-mha-d64": (4, 4, 4, 1, 64, 64, (64, 65, 1, 4097), False),
    "pages-of-32-gqa4-nq16": (2, 8, 2, 16, 128, 32, (999, 200), True),   # 64 rows
    "pages-of-48-gqa8": (2, 16, 2, 1, 128, 48, (2000, 333), False),  # not a power of two
}


def _paged_case(case, dtype, spare_pages=5):
    """q, caches whose pages the sequences use in random order (and some no sequence uses), the
    block table (padded past each sequence's end with pages of others) and the lengths."""
    B, H, HKV, Nq, D, ps, lens, _ = PAGED[case]
    g = _gen("paged", case, str(dtype))
    max_pages = max(-(-n // ps) for n in lens) + 1
    num_pages = B * max_pages + spare_pages
    q = _randn(g, (B, H, Nq, D), dtype)
    k, v = (_randn(g, (num_pages, ps, HKV, D), dtype) for _ in range(2))
    table = torch.randperm(num_pages, generator=g, device=DEV)[:B * max_pages]
    table = table.view(B, max_pages).to(torch.int32)
    return q, k, v, table, torch.tensor(lens, dtype=torch.int32, device=DEV)


def ref_paged(q, k, v, table, lens, causal):
    """float64 decode attention of each sequence over the keys gathered from its pages."""
    B, H, Nq, D = q.shape
    ps = k.shape[1]
    out = torch.zeros(q.shape, dtype=torch.float64, device=DEV)
    for b, n in enumerate(lens.tolist()):
        if n == 0:
            continue
        pages = table[b, :-(-n // ps)].long()
        k_b, v_b = (x[pages].flatten(0, 1)[:n].transpose(0, 1)[None] for x in (k, v))
        s = q[b:b + 1].double() @ _expand(k_b.double(), H).transpose(-1, -2) / math.sqrt(D)
        visible = torch.ones(Nq, n, dtype=torch.bool, device=DEV)
        if causal:
            visible = torch.arange(n, device=DEV)[None, :] <= (n - Nq) + torch.arange(
                Nq, device=DEV)[:, None]
        p, _ = _softmax_rows(s, visible)
        out[b] = (p @ _expand(v_b.double(), H))[0]
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", list(PAGED))
def test_paged_lean_attention(case, dtype):
    q, k, v, table, lens = _paged_case(case, dtype)
    causal = PAGED[case][-1]
    want = ref_paged(q, k, v, table, lens, causal)
    print(f"\n  lean_attention paged {case} {dtype}")
    for strategy in tessel.ops.LEAN_STRATEGIES:
        for check in tessel.ops.paged.CHECKS:
            o = tessel.lean_attention(q, k, v, causal=causal, strategy=strategy, seq_lens=lens,
                                      block_table=table, check=check)
            _out(f"O ({strategy}, check={check})", o, want, dtype)
    o = tessel.lean_attention(q, k, v, causal=causal, seq_lens=lens, block_table=table,
                              max_seq_len=int(lens.max()), check=False)
    _out("O (max_seq_len)", o, want, dtype)


def test_paged_lean_attention_v_strides_of_its_own():
    """V with strides of its own (rows padded past D): the kernel's general form, the same
    result (pages of a power of two with K's strides take the other form)."""
    q, k, v, table, lens = _paged_case("pages-of-16-gqa8", torch.bfloat16)
    padded = torch.zeros(v.shape[:-1] + (v.shape[-1] + 8,), dtype=v.dtype, device=DEV)
    padded[..., :v.shape[-1]] = v
    view = padded[..., :v.shape[-1]]
    assert view.stride() != v.stride()
    want = ref_paged(q, k, v, table, lens, False)
    print("\n  lean_attention paged, V strided")
    _out("O", tessel.lean_attention(q, k, view, seq_lens=lens, block_table=table), want,
         torch.bfloat16)


def test_ragged_contiguous_lean_attention():
    dtype = torch.bfloat16
    B, H, HKV, Nq, Nk, D = 3, 16, 2, 1, 2000, 128
    g = _gen("ragged")
    q = _randn(g, (B, H, Nq, D), dtype)
    k, v = (_randn(g, (B, HKV, Nk, D), dtype) for _ in range(2))
    lens = torch.tensor([2000, 1, 1234], dtype=torch.int32, device=DEV)
    want = torch.cat([ref_attention(q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n], False,
                                    D ** -0.5) for b, n in enumerate(lens.tolist())])
    print("\n  lean_attention ragged contiguous")
    for strategy in tessel.ops.LEAN_STRATEGIES:
        _out(f"O ({strategy})", tessel.lean_attention(q, k, v, strategy=strategy, seq_lens=lens),
             want, dtype)


def test_paged_bad_tables():
    """Bad tables on the GPU: rejected by the host check and by the device check, and with no
    check the kernel reads nothing outside the cache (compute-sanitizer runs this file too)."""
    q, k, v, table, lens = _paged_case("pages-of-16-gqa8", torch.float16)
    bad = table.clone()
    bad[0, 3] = k.shape[0] + 10 ** 6
    with pytest.raises(ValueError, match=r"block_table\[0, 3\] = 1000\d+ is not a page"):
        tessel.lean_attention(q, k, v, seq_lens=lens, block_table=bad)
    with pytest.raises(ValueError, match=r"kernel lean_attention_paged found [1-9]\d* key reads "
                                         r"of pages outside the cache and 0 lengths"):
        tessel.lean_attention(q, k, v, seq_lens=lens, block_table=bad, check="device")
    long = lens.clone()
    long[1] = 10 ** 7
    with pytest.raises(ValueError, match=r"found 0 key reads of pages outside the cache and "
                                         r"[1-9]\d* lengths out of range: seq_lens\[1\]"):
        tessel.lean_attention(q, k, v, seq_lens=long, block_table=table, check="device")
    o = tessel.lean_attention(q, k, v, seq_lens=long, block_table=bad, check=False)
    torch.cuda.synchronize()
    assert torch.isfinite(o).all()
    want = ref_paged(q, k, v, table, lens, False)
    _out("O of the good sequence", o[2], want[2], torch.float16)


def test_paged_lean_attention_in_a_cuda_graph():
    """Paged decode captured with check=False (check=True refuses the capture); replays on new
    tables and lengths written into the captured ones."""
    dtype = torch.bfloat16
    q, k, v, table, lens = _paged_case("pages-of-16-gqa8", dtype)
    run = lambda: tessel.lean_attention(q, k, v, seq_lens=lens, block_table=table, check=False)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = run()
    with pytest.raises(RuntimeError, match=r"check=True reads block_table and seq_lens on the "
                                           r"host, which a CUDA graph capture cannot do"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            tessel.lean_attention(q, k, v, seq_lens=lens, block_table=table)
    g = _gen("paged graph")
    print("\n  paged lean_attention, CUDA graph replays")
    for step in range(2):
        table.copy_(table[torch.randperm(table.shape[0], generator=g, device=DEV)])
        lens.copy_(torch.randint(0, 3002, lens.shape, generator=g, device=DEV).to(torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        _out(f"O (replay {step})", out, ref_paged(q, k, v, table, lens, False), dtype)


def test_ops_in_a_cuda_graph():
    """Decode and prefill captured in a CUDA graph (as serving stacks run decode): after a warm-up
    call (modules loaded, the stream-K workspace allocated), the capture records the workspace
    reset and the launches; replays on new values written into the captured inputs match the
    references on those values."""
    dtype = torch.bfloat16
    B, H, HKV, Nq, Nk, D = 2, 16, 4, 1, 3001, 128
    g = _gen("graph")
    q = _randn(g, (B, H, Nq, D), dtype)
    k, v = (_randn(g, (B, HKV, Nk, D), dtype) for _ in range(2))
    qp, kp, vp = (_randn(g, (1, 4, 333, 64), dtype) for _ in range(3))
    ops = {
        "lean_attention stream-k": lambda: tessel.lean_attention(q, k, v),
        "lean_attention split-k": lambda: tessel.lean_attention(q, k, v, strategy="split-k"),
        "attention causal": lambda: tessel.attention(qp, kp, vp, causal=True),
    }
    refs = {
        "lean_attention stream-k": lambda: ref_attention(q, k, v, False, D ** -0.5),
        "lean_attention split-k": lambda: ref_attention(q, k, v, False, D ** -0.5),
        "attention causal": lambda: ref_attention(qp, kp, vp, True, 64 ** -0.5),
    }
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for run in ops.values():
            run()
    torch.cuda.current_stream().wait_stream(side)
    graphs, outs = {}, {}
    for name, run in ops.items():
        graphs[name] = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graphs[name]):
            outs[name] = run()
    print("\n  CUDA graph replays")
    for step in range(2):
        for x in (q, k, v, qp, kp, vp):
            x.copy_(_randn(g, x.shape, dtype))
        for name, graph in graphs.items():
            graph.replay()
            torch.cuda.synchronize()
            _out(f"{name} (replay {step})", outs[name], refs[name](), dtype)


MTA = {  # B, H, HKV, N, D, cq, ck (windows precompiled by scripts/gpu/record_bundles.sh)
    "cq6-ck11-gqa2": (1, 4, 2, 90, 64, 6, 11),
    "cq6-ck11-d128": (2, 2, 2, 45, 128, 6, 11),
    "cq3-ck4-gqa2": (1, 4, 2, 77, 64, 3, 4),
}


def _mta_inputs(case, dtype, requires_grad):
    """q, k, v and the conv2d kernel Wt (H, 1, cq, ck) float32 near the identity (C ~ S0)."""
    B, H, HKV, N, D, cq, ck = MTA[case]
    g = _gen("mta", case, str(dtype))
    q = _randn(g, (B, H, N, D), dtype, requires_grad=requires_grad)
    k = _randn(g, (B, HKV, N, D), dtype, requires_grad=requires_grad)
    v = _randn(g, (B, HKV, N, D), dtype, requires_grad=requires_grad)
    wt = torch.randn((H, 1, cq, ck), generator=g, device=DEV) * 0.3
    wt[:, 0, cq - 1, (ck - 1) // 2] += 1.0          # the current row, the centred key
    return q, k, v, wt.requires_grad_(requires_grad), g


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", list(MTA))
def test_mta_attention_and_grads(case, dtype):
    """The reference's conv2d kernel as the weight (the default layout): O and every gradient,
    dW in the conv2d layout, against autograd through F.conv2d."""
    q, k, v, wt, g = _mta_inputs(case, dtype, requires_grad=True)
    D = q.shape[3]
    do = _randn(g, q.shape, dtype)
    print(f"\n  mta_attention {case} {dtype}")
    o = tessel.mta_attention(q, k, v, wt)
    want = ref_mta(q, k, v, wt, 1 / math.sqrt(D))
    _out("O", o, want, dtype)
    _check_grads(o, want, do, {"dQ": q, "dK": k, "dV": v, "dW": wt}, dtype)


@pytest.mark.parametrize("case", ["cq6-ck11-gqa2", "cq3-ck4-gqa2"])
def test_mta_tessel_layout(case):
    """layout='tessel': the (H, cq, ck) weight with the query axis flipped gives the same O, and
    its gradient in that layout."""
    dtype = torch.bfloat16
    q, k, v, wt, g = _mta_inputs(case, dtype, requires_grad=True)
    w = wt.detach()[:, 0].flip(1).contiguous().requires_grad_(True)
    do = _randn(g, q.shape, dtype)
    o = tessel.mta_attention(q, k, v, wt)
    o_flipped = tessel.mta_attention(q, k, v, w, layout="tessel")
    assert torch.equal(o, o_flipped)
    (o.float() * do.float()).sum().backward()
    (o_flipped.float() * do.float()).sum().backward()
    assert w.grad.shape == w.shape and wt.grad.shape == wt.shape
    # dW is accumulated with float32 atomics: equal up to the order of the additions
    _check("dW tessel vs conv2d layout", w.grad, wt.grad[:, 0].flip(1), 1e-5, 1e-4)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", list(MTA))
def test_mta_decode(case, dtype):
    """The decode step (split + combine) against row N - 1 of the reference, from a rolling cache
    of the cq newest queries and from all N."""
    q, k, v, wt, _ = _mta_inputs(case, dtype, requires_grad=False)
    N, D, cq = q.shape[2], q.shape[3], wt.shape[2]
    want = ref_mta(q, k, v, wt, 1 / math.sqrt(D))[:, :, -1:]
    print(f"\n  mta_decode {case} {dtype}")
    for qn in (cq, N):
        o = tessel.mta_decode(q[:, :, N - qn:], k, v, wt)
        assert o.dtype == dtype and o.shape == want.shape
        _out(f"O decode (QN={qn})", o, want, dtype)


def test_bench_mta_references():
    """The PyTorch peers of bench/workloads/mta.py, run in float64, against ref_mta: the forward,
    and the decode step from the cq newest queries as the forward's last row."""
    root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    sys.path.insert(0, root)
    from bench.workloads import mta as bench_mta
    q, k, v, wt, _ = _mta_inputs("cq6-ck11-d128", torch.float32, requires_grad=False)
    q, k, v = q.double(), k.double(), v.double()
    N, D, cq = q.shape[2], q.shape[3], wt.shape[2]
    want = ref_mta(q, k, v, wt, 1 / math.sqrt(D))
    _check("bench torch_mta", bench_mta.torch_mta(q, k, v, wt.double(), 1 / math.sqrt(D)), want,
           1e-6, 1e-6)
    _check("bench torch_mta_decode",
           bench_mta.torch_mta_decode(q[:, :, N - cq:], k, v, wt.double(), 1 / math.sqrt(D)),
           want[:, :, -1:], 1e-6, 1e-6)


KL = {  # B, H, HKT, HKS, Nq, Nk, DT, DS, causal
    "dt128-ds64-gqa": (2, 4, 2, 1, 75, 99, 128, 64, False),
    "causal-d64": (1, 4, 4, 2, 120, 120, 64, 64, True),
    # grids of many query blocks: on Hopper the forward's form for long grids, ragged rows
    "long-causal-gqa": (1, 64, 8, 16, 1000, 1000, 128, 128, True),
    "long-dt128-ds64": (2, 48, 48, 24, 600, 700, 128, 64, False),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("case", list(KL))
def test_attention_kl_and_grads(case, dtype, monkeypatch):
    B, H, HKT, HKS, Nq, Nk, DT, DS, causal = KL[case]
    g = _gen("kl", case, str(dtype))
    q_t, k_t = _randn(g, (B, H, Nq, DT), dtype), _randn(g, (B, HKT, Nk, DT), dtype)
    q_s = _randn(g, (B, H, Nq, DS), dtype, requires_grad=True)
    k_s = _randn(g, (B, HKS, Nk, DS), dtype, requires_grad=True)
    st, ss = 1 / math.sqrt(DT), 1 / math.sqrt(DS)
    print(f"\n  attention_kl {case} {dtype}")
    from tessel.ops import common, kl as kl_op
    if case.startswith("long") and tessel.gpu.target() == "sm_90a":
        assert kl_op.forward_table(common.Backend(True), B * H, Nq, max(DT, DS)) == \
            kl_op.LONG_FORWARD
    kl, lse_t, lse_s = ref_kl_rows(q_t, k_t, q_s, k_s, causal, st, ss)
    magnitude = max(kl.abs().max().item(), lse_t.abs().max().item(), lse_s.abs().max().item())
    rows = tessel.attention_kl(q_t, k_t, q_s, k_s, causal=causal, reduction="none")
    _check("KL rows", rows, kl, 1e-5 + 4e-6 * magnitude, 0.0)
    for reduction, want in (("sum", kl.sum()), ("mean", kl.mean()), ("batchmean", kl.sum() / B)):
        got = tessel.attention_kl(q_t, k_t, q_s, k_s, causal=causal, reduction=reduction)
        _check(f"KL {reduction}", got, want, (1e-5 + 4e-6 * magnitude) * kl.numel(), 0.0)
    # Each reduction's gradient reaches the backward as one value for every row (UNIFORM_G);
    # rows weighted by the user's loss do not.
    row_gradients, shapes = kl_op.row_gradients, []
    monkeypatch.setattr(kl_op, "row_gradients",
                        lambda g: shapes.append(tuple(row_gradients(g).shape)) or row_gradients(g))
    weights = torch.rand(B, H, Nq, device=DEV, generator=g)
    losses = {"sum": (lambda x: x.sum(), "sum"), "mean": (lambda x: x.mean(), "mean"),
              "batchmean": (lambda x: x.sum() / B, "batchmean"),
              "weighted rows": (lambda x: (x * weights).sum(), "none")}
    for label, (of_rows, reduction) in losses.items():
        loss = tessel.attention_kl(q_t, k_t, q_s, k_s, causal=causal, reduction=reduction)
        (of_rows(loss) if reduction == "none" else loss).backward()
        got = [q_s.grad.clone(), k_s.grad.clone()]
        q_s.grad = k_s.grad = None
        of_rows(kl).backward(retain_graph=True)
        for name, a, x in zip(("dQs", "dKs"), got, (q_s, k_s)):
            assert a.dtype == dtype
            _grad(f"{name} ({label})", a, x.grad, dtype)
        q_s.grad = k_s.grad = None
        assert shapes.pop() == ((B, H, Nq) if reduction == "none" else (1,)), label


def test_op_argument_errors():
    q = torch.zeros(1, 4, 8, 64, device=DEV, dtype=torch.float16)
    with pytest.raises(TypeError, match=r"unsupported dtype torch.float32"):
        tessel.attention(q.float(), q.float(), q.float())
    with pytest.raises(TypeError, match=r"k is on cpu"):
        tessel.attention(q, q.cpu(), q.cpu())
    with pytest.raises(TypeError, match=r"q is a torch tensor but k is not"):
        tessel.attention(q, q.cpu().numpy(), q)
    with pytest.raises(ValueError, match=r"gradients for the teacher are not computed"):
        tessel.attention_kl(q.clone().requires_grad_(), q, q, q)
    with pytest.raises(ValueError, match=r"head dim 48"):
        x = torch.zeros(1, 4, 8, 48, device=DEV, dtype=torch.float16)
        tessel.attention(x, x, x)


# ---------------------------------------------------------------------------------------------
# kernels from tessel.compile with framework arrays

ADD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "add.tsl")


class CudaArrayInterface:
    """What CuPy arrays expose: __cuda_array_interface__ over a torch tensor's memory."""

    def __init__(self, tensor):
        self._tensor = tensor
        self.__cuda_array_interface__ = tensor.__cuda_array_interface__


class DLPackOnly:
    def __init__(self, tensor):
        self._tensor = tensor

    def __dlpack__(self, stream=None):
        return self._tensor.__dlpack__()

    def __dlpack_device__(self):
        return self._tensor.__dlpack_device__()


def test_repeated_calls_replay_the_plan():
    """A call with inputs of the shapes of an earlier one replays its launch plan
    (tessel.ops.plans): on new inputs, on another stream, and for an input the plan declines
    (a start 8 bytes off 16-byte alignment: the op copies it), each against the reference."""
    from tessel.ops import flash, lean, plans
    g = _gen("plans")
    dtype = torch.bfloat16
    stream = torch.cuda.Stream()
    cases = ((tessel.attention, flash._PLANS, (2, 2, 64, 64, 64), ()),
             (tessel.lean_attention, lean._PLANS, (8, 2, 1, 1000, 128), ("stream-k",)))
    for op, kept, (H, HKV, Nq, Nk, D), extra in cases:
        for i in range(3):
            q = _randn(g, (1, H, Nq, D), dtype)
            k, v = (_randn(g, (1, HKV, Nk, D), dtype) for _ in range(2))
            if i == 2:
                buf = torch.empty(q.numel() + 4, dtype=dtype, device=DEV)
                buf[4:].copy_(q.flatten())
                q = buf[4:].view(q.shape)
                assert q.data_ptr() % 16 == 8
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                o = op(q, k, v)
            stream.synchronize()
            assert kept.get(plans.key((q, k, v), False, None, type(None), *extra)) is not None
            _out(f"{op.__name__} call {i}", o, ref_attention(q, k, v, False, D ** -0.5), dtype)


def _kept_for_autograd(module, before):
    """How many forward plans, backward plans and checked calls an ops module keeps for
    autograd: at least one each, and as many as `before` (a repeated call's) if given."""
    kept = [len(p) for p in (module._FORWARD_PLANS, module._BACKWARD_PLANS,
                             module._AUTOGRAD_CALLS)]
    assert min(kept) >= 1 and kept == (before or kept)
    return kept


def test_autograd_calls_replay_their_plans():
    """Calls for autograd with the shapes of an earlier one skip the op's argument checks and
    replay the launch plans of their forward and their backward (one each, kept by the
    autograd function's passes): the gradients of fresh inputs against the reference, the
    attention's dO a tensor of its own, StreamKL's upstream gradient a broadcast view (a
    sum's), MTA's weight gradient back in the weight's layout."""
    from tessel.ops import flash, kl, mta
    g = _gen("autograd-plans")
    dtype = torch.bfloat16
    B, H, HKV, N, D = 1, 3, 1, 100, 128
    for i in range(3):
        q = _randn(g, (B, H, N, D), dtype, requires_grad=True)
        k, v = (_randn(g, (B, HKV, N, D), dtype, requires_grad=True) for _ in range(2))
        do = _randn(g, (B, H, N, D), dtype)
        o = tessel.attention(q, k, v, causal=True)
        want = ref_attention(q, k, v, True, D ** -0.5)
        _out(f"O call {i}", o, want, dtype)
        _check_grads(o, want, do, {"dQ": q, "dK": k, "dV": v}, dtype)
        kept = _kept_for_autograd(flash, None if i == 0 else kept)
    DT, DS = 128, 64
    for i in range(3):
        q_t, k_t = _randn(g, (B, H, N, DT), dtype), _randn(g, (B, HKV, N, DT), dtype)
        q_s = _randn(g, (B, H, N, DS), dtype, requires_grad=True)
        k_s = _randn(g, (B, HKV, N, DS), dtype, requires_grad=True)
        tessel.attention_kl(q_t, k_t, q_s, k_s, causal=True).backward()
        got = [q_s.grad.clone(), k_s.grad.clone()]
        q_s.grad = k_s.grad = None
        rows, _, _ = ref_kl_rows(q_t, k_t, q_s, k_s, True, DT ** -0.5, DS ** -0.5)
        rows.sum().backward()
        for name, a, x in zip(("dQs", "dKs"), got, (q_s, k_s)):
            _grad(f"{name} call {i}", a, x.grad, dtype)
        kept = _kept_for_autograd(kl, None if i == 0 else kept)
    # The checks kept for those calls are not another call's: a teacher requiring grad.
    with pytest.raises(ValueError, match=r"gradients for the teacher are not computed"):
        tessel.attention_kl(q_t.requires_grad_(), k_t, q_s, k_s, causal=True)
    case = next(iter(MTA))
    for i in range(3):
        q, k, v, wt, g = _mta_inputs(case, dtype, requires_grad=False)
        q, k, v = ((x * (1 + 0.25 * i)).requires_grad_() for x in (q, k, v))
        wt.requires_grad_()
        do = _randn(g, q.shape, dtype)
        o = tessel.mta_attention(q, k, v, wt)
        want = ref_mta(q, k, v, wt, q.shape[3] ** -0.5)
        _out(f"MTA O call {i}", o, want, dtype)
        _check_grads(o, want, do, {"dQ": q, "dK": k, "dV": v, "dW": wt}, dtype)
        kept = _kept_for_autograd(mta, None if i == 0 else kept)


def test_compile_and_launch_with_torch_cai_and_dlpack():
    add = tessel.compile(ADD, {"BLOCK": 256})
    assert isinstance(add, tessel.GPUKernel)
    g = _gen("add")
    n = 1000
    x, y = (torch.randn(n, generator=g, device=DEV) for _ in range(2))
    for wrap in (lambda t: t, CudaArrayInterface, DLPackOnly):
        out = torch.full((n,), 7.0, device=DEV)
        add[(tessel.cdiv(n, 256),)](wrap(x), wrap(y), wrap(out), n)
        torch.cuda.synchronize()
        assert torch.equal(out, x + y), wrap
    with pytest.raises(TypeError, match=r"expected a buffer of f32, got f16"):
        add[(1,)](x.half(), y, out, n)


def test_launch_on_the_current_stream():
    add = tessel.compile(ADD, {"BLOCK": 256})
    n = 1 << 20
    x = torch.randn(n, device=DEV)
    out = torch.zeros(n, device=DEV)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = x * 2                                            # on `stream`
        add[(tessel.cdiv(n, 256),)](x, y, out, n)            # ordered after it
    stream.synchronize()
    assert torch.equal(out, x * 3)


def test_cupy_array_as_a_kernel_argument():
    cupy = pytest.importorskip("cupy")
    add = tessel.compile(ADD, {"BLOCK": 256})
    x = cupy.arange(300, dtype=cupy.float32)
    out = cupy.zeros(300, dtype=cupy.float32)
    add[(2,)](x, x, out, 300)
    cupy.cuda.get_current_stream().synchronize()
    assert bool((out == 2 * x).all())


@pytest.fixture(scope="module", autouse=True)
def _gpu_only():
    assert torch.cuda.is_available(), "test/gpu needs a CUDA GPU"
    assert tessel.has_gpu(), "tessel sees no GPU"
    assert os.environ.get("TESSEL_BUNDLE_DIR") or tessel._tessel.has_compiler
