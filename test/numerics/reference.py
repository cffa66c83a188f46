"""Independent float64 NumPy references for the Tessel attention kernels.

Written from the math (see each function), not from the kernels: everything is materialised
(N x N score matrices), so use small sizes.  Run with Debian's interpreter, which has NumPy:

    /usr/bin/python3 test/numerics/reference.py        # self-test, incl. finite differences

Conventions shared by every function
  * Layout (B, H, N, D).  Queries have H heads; keys/values have HKV heads with H % HKV == 0 (GQA):
    query head h reads KV head h // (H // HKV).  Gradients of K/V sum over the heads of a group.
  * `scale` multiplies Q Kᵀ; LSE is the natural-log log-sum-exp of the (masked) scores.
  * Visibility: `causal=True` lets query row i see key j iff j <= i + causal_offset
    (causal_offset = 0: top-left aligned prefill; causal_offset = Nk - Nq: bottom-right aligned,
    i.e. the queries are the last Nq positions, as in decode).  An optional boolean `mask`
    (broadcastable to [B, H, Nq, Nk]) removes more keys.
  * A row that sees no key ("fully masked") has O = 0, LSE = -inf, KL = 0 and zero gradients.
"""

import numpy as np

NEG_INF = -np.inf


# ----------------------------------------------------------------------------------------------
# helpers

def _f64(*xs):
    return [np.asarray(x, dtype=np.float64) for x in xs]


def expand_kv(x, H):
    """[B, HKV, N, D] -> [B, H, N, D]: query head h gets KV head h // (H // HKV)."""
    HKV = x.shape[1]
    assert H % HKV == 0, (H, HKV)
    return np.repeat(x, H // HKV, axis=1)


def reduce_kv(dx, HKV):
    """[B, H, N, D] gradient -> [B, HKV, N, D]: sum over the query heads of each group."""
    B, H, N, D = dx.shape
    assert H % HKV == 0, (H, HKV)
    return dx.reshape(B, HKV, H // HKV, N, D).sum(axis=2)


def visibility(Nq, Nk, causal=False, causal_offset=0, mask=None):
    """Boolean [.., Nq, Nk]: may query row i attend to key j."""
    i = np.arange(Nq)[:, None]
    j = np.arange(Nk)[None, :]
    vis = np.ones((Nq, Nk), dtype=bool)
    if causal:
        vis &= j <= i + causal_offset
    if mask is not None:
        vis = vis & np.asarray(mask, dtype=bool)
    return vis


def masked_softmax(S, vis):
    """Row softmax of S over the visible entries.  Returns (P, LSE); empty rows: P = 0, LSE = -inf."""
    vis = np.broadcast_to(vis, S.shape)
    Sm = np.where(vis, S, NEG_INF)
    m = Sm.max(axis=-1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    e = np.where(vis, np.exp(np.where(vis, S, m_safe) - m_safe), 0.0)
    l = e.sum(axis=-1, keepdims=True)
    P = e / np.where(l > 0, l, 1.0)
    lse = np.where(l > 0, m_safe + np.log(np.where(l > 0, l, 1.0)), NEG_INF)[..., 0]
    return P, lse


# ----------------------------------------------------------------------------------------------
# flash attention (prefill and decode)

def attention_fwd(q, k, v, scale, causal=False, causal_offset=0, mask=None):
    """O = softmax(Q Kᵀ·scale) V and LSE per row.  q [B,H,Nq,D], k/v [B,HKV,Nk,D]."""
    q, k, v = _f64(q, k, v)
    H, Nq, Nk = q.shape[1], q.shape[2], k.shape[2]
    ke, ve = expand_kv(k, H), expand_kv(v, H)
    S = np.einsum("bhid,bhjd->bhij", q, ke) * scale
    P, lse = masked_softmax(S, visibility(Nq, Nk, causal, causal_offset, mask))
    return P @ ve, lse


def attention_fwd_naive(q, k, v, scale, causal=False, causal_offset=0, mask=None):
    """Same as attention_fwd, one row at a time with explicit loops (a cross-check)."""
    q, k, v = _f64(q, k, v)
    B, H, Nq, D = q.shape
    HKV, Nk = k.shape[1], k.shape[2]
    vis = np.broadcast_to(visibility(Nq, Nk, causal, causal_offset, mask), (B, H, Nq, Nk))
    O = np.zeros((B, H, Nq, v.shape[3]))
    L = np.full((B, H, Nq), NEG_INF)
    for b in range(B):
        for h in range(H):
            hk = h // (H // HKV)
            for i in range(Nq):
                js = [j for j in range(Nk) if vis[b, h, i, j]]
                if not js:
                    continue
                s = np.array([scale * float(np.dot(q[b, h, i], k[b, hk, j])) for j in js])
                m = s.max()
                e = np.exp(s - m)
                O[b, h, i] = sum(e[t] * v[b, hk, j] for t, j in enumerate(js)) / e.sum()
                L[b, h, i] = m + np.log(e.sum())
    return O, L


def decode_attention(q, k, v, scale, causal=False):
    """LeanAttention's contract: the Nq query rows are the last Nq positions (bottom-right causal)."""
    return attention_fwd(q, k, v, scale, causal, causal_offset=k.shape[2] - q.shape[2])


def attention_bwd(q, k, v, do, scale, causal=False, causal_offset=0, mask=None, delta=None):
    """dQ, dK, dV of L = Σ O ∘ dO (LSE treated as auxiliary, no gradient), by materialisation:
    dV = Pᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP - Delta), dQ = scale dS K, dK = scale dSᵀ Q, with
    Delta = rowsum(P ∘ dP) = rowsum(dO ∘ O).  `delta` [B, H, Nq], if given, replaces Delta: a
    FlashAttention backward computes it from the stored (rounded) O, and its contract is this formula
    with that Delta."""
    q, k, v, do = _f64(q, k, v, do)
    H, HKV, Nq, Nk = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    ke, ve = expand_kv(k, H), expand_kv(v, H)
    S = np.einsum("bhid,bhjd->bhij", q, ke) * scale
    P, _ = masked_softmax(S, visibility(Nq, Nk, causal, causal_offset, mask))
    dv = np.einsum("bhij,bhid->bhjd", P, do)
    dP = np.einsum("bhid,bhjd->bhij", do, ve)
    Delta = (P * dP).sum(axis=-1, keepdims=True) if delta is None else _f64(delta)[0][..., None]
    dS = P * (dP - Delta)
    dq = scale * np.einsum("bhij,bhjd->bhid", dS, ke)
    dk = scale * np.einsum("bhij,bhid->bhjd", dS, q)
    return dq, reduce_kv(dk, HKV), reduce_kv(dv, HKV)


# ----------------------------------------------------------------------------------------------
# Multi-Token Attention (arXiv 2504.00927), key-query convolution before the softmax
#
#   S0[i, j] = scale·Q_i·K_j if 0 <= j <= i < N else 0
#   C[i, j]  = Σ_{a<cq} Σ_{b<ck} W[h, a, b] · S0[i - a, j + b - pad],  pad = (ck - 1) // 2
#   P = softmax over j <= i of C,   O = P V
# Query offsets 0..cq-1 look into the past; the key window is centred (pad on the left,
# ck - 1 - pad on the right).  The paper's code pads S0 by (cq-1 top, 0 bottom) and
# (pad left, ck-1-pad right) and applies F.conv2d (a cross-correlation) with a kernel
# Wt[h, 0, cq, ck]; that is mta_conv_corr below with W[h, a, b] = Wt[h, 0, cq-1-a, b].

def mta_pad(ck):
    return (ck - 1) // 2


def mta_s0(q, k, scale):
    q, k = _f64(q, k)
    H, N = q.shape[1], q.shape[2]
    assert k.shape[2] == N, "MTA is causal self-attention: Nq == Nk"
    S = np.einsum("bhid,bhjd->bhij", q, expand_kv(k, H)) * scale
    return np.where(visibility(N, N, causal=True), S, 0.0)


def mta_conv_loop(s0, w):
    """C by the definition, an explicit loop over (i, j, a, b) (vectorised over batch only)."""
    s0, w = _f64(s0, w)
    B, H, N, _ = s0.shape
    _, cq, ck = w.shape
    pad = mta_pad(ck)
    C = np.zeros_like(s0)
    for h in range(H):
        for i in range(N):
            for j in range(N):
                acc = np.zeros(B)
                for a in range(cq):
                    for b in range(ck):
                        ii, jj = i - a, j + b - pad
                        if 0 <= ii < N and 0 <= jj < N:
                            acc += w[h, a, b] * s0[:, h, ii, jj]
                C[:, h, i, j] = acc
    return C


def mta_conv_corr(s0, w, torch_kernel=None):
    """C via zero padding + 2-D cross-correlation, as F.pad + F.conv2d in the paper's code.
    torch_kernel: optional Wt [H, 1, cq, ck] in the PyTorch layout (then w is ignored)."""
    s0 = _f64(s0)[0]
    if torch_kernel is None:
        w = _f64(w)[0]
        Wt = w[:, ::-1, :]                      # Wt[h, a', b] = W[h, cq-1-a', b]
    else:
        Wt = _f64(torch_kernel)[0][:, 0]
    H, cq, ck = Wt.shape
    N = s0.shape[2]
    pad = mta_pad(ck)
    X = np.pad(s0, ((0, 0), (0, 0), (cq - 1, 0), (pad, ck - 1 - pad)))
    C = np.zeros_like(s0)
    for a in range(cq):
        for b in range(ck):
            C += Wt[None, :, a, b, None, None] * X[:, :, a:a + N, b:b + N]
    return C


def mta_conv_adjoint(dc, w):
    """Adjoint of C = conv(S0, W) wrt S0:  dS0[i, j] = Σ_{a,b} W[a, b] · dC[i + a, j - b + pad]."""
    dc, w = _f64(dc, w)
    N = dc.shape[2]
    _, cq, ck = w.shape
    pad = mta_pad(ck)
    Y = np.pad(dc, ((0, 0), (0, 0), (0, cq - 1), (ck - 1 - pad, pad)))
    dS0 = np.zeros_like(dc)
    for a in range(cq):
        for b in range(ck):
            # dC[i + a, j - b + pad] = Y[i + a, j - b + pad + (ck - 1 - pad)] = Y[i + a, j + ck - 1 - b]
            dS0 += w[None, :, a, b, None, None] * Y[:, :, a:a + N, ck - 1 - b:ck - 1 - b + N]
    return dS0


def mta_weight_grad(dc, s0, cq, ck):
    """dW[h, a, b] = Σ_{batch, i, j} dC[i, j] · S0[i - a, j + b - pad]."""
    dc, s0 = _f64(dc, s0)
    N = s0.shape[2]
    pad = mta_pad(ck)
    X = np.pad(s0, ((0, 0), (0, 0), (cq - 1, 0), (pad, ck - 1 - pad)))   # X[i + cq-1 - a, j + b]
    dW = np.zeros((s0.shape[1], cq, ck))
    for a in range(cq):
        for b in range(ck):
            dW[:, a, b] = (dc * X[:, :, cq - 1 - a:cq - 1 - a + N, b:b + N]).sum(axis=(0, 2, 3))
    return dW


def mta_fwd(q, k, v, w, scale):
    """O, LSE of Multi-Token Attention.  q [B,H,N,D], k/v [B,HKV,N,D], w [H,cq,ck]."""
    q, k, v, w = _f64(q, k, v, w)
    H, N = q.shape[1], q.shape[2]
    C = mta_conv_corr(mta_s0(q, k, scale), w)
    P, lse = masked_softmax(C, visibility(N, N, causal=True))
    return P @ expand_kv(v, H), lse


def mta_bwd(q, k, v, w, do, scale, delta=None):
    """dQ, dK, dV, dW of L = Σ O ∘ dO:
    dV = Pᵀ dO;  dP = dO Vᵀ;  dC = P ∘ (dP - Delta), Delta = rowsum(P ∘ dP) (or `delta`, as in
    attention_bwd);  dS0 = conv_adjoint(dC, W);
    dS = dS0 masked to 0 <= j <= i;  dQ = scale dS K;  dK = scale dSᵀ Q;
    dW[a, b] = Σ dC[i, j] S0[i - a, j + b - pad]."""
    q, k, v, w, do = _f64(q, k, v, w, do)
    H, HKV, N = q.shape[1], k.shape[1], q.shape[2]
    _, cq, ck = w.shape
    ke, ve = expand_kv(k, H), expand_kv(v, H)
    vis = visibility(N, N, causal=True)
    s0 = mta_s0(q, k, scale)
    P, _ = masked_softmax(mta_conv_corr(s0, w), vis)
    dv = np.einsum("bhij,bhid->bhjd", P, do)
    dP = np.einsum("bhid,bhjd->bhij", do, ve)
    Delta = (P * dP).sum(axis=-1, keepdims=True) if delta is None else _f64(delta)[0][..., None]
    dC = P * (dP - Delta)
    dS = np.where(vis, mta_conv_adjoint(dC, w), 0.0)
    dq = scale * np.einsum("bhij,bhjd->bhid", dS, ke)
    dk = scale * np.einsum("bhij,bhid->bhjd", dS, q)
    dw = mta_weight_grad(dC, s0, cq, ck)
    return dq, reduce_kv(dk, HKV), reduce_kv(dv, HKV), dw


def mta_dw_term_magnitude(q, k, v, w, do, scale, o):
    """Σ over the terms of dW[h, a, b] of their magnitude: Σ_{i,j} P·(Σ_d|dO·V| + Σ_d|dO·O|)·|S0|.

    dC = P·(dP - Delta) is a difference of two f32 dot products; where a row's softmax is one-hot,
    exact dW is a cancellation of terms this large, and the f32 summation order of dP and Delta
    decides the result (the bound the test adds to dW's tolerance).  o: the kernel's stored O."""
    q, k, v, w, do, o = _f64(q, k, v, w, do, o)
    H, N = q.shape[1], q.shape[2]
    _, cq, ck = w.shape
    vis = visibility(N, N, causal=True)
    P, _ = masked_softmax(mta_conv_corr(mta_s0(q, k, scale), w), vis)
    ke, ve = expand_kv(k, H), expand_kv(v, H)
    s0_abs = np.where(vis, np.einsum("bhid,bhjd->bhij", np.abs(q), np.abs(ke)) * abs(scale), 0.0)
    dp_abs = np.einsum("bhid,bhjd->bhij", np.abs(do), np.abs(ve))
    delta_abs = np.abs(o * do).sum(axis=-1, keepdims=True)
    return mta_weight_grad(P * (dp_abs + delta_abs), s0_abs, cq, ck)


def mta_decode(q, k, v, w, scale):
    """The newest query row N-1 of MTA: (O [B,H,1,D], LSE [B,H,1]).  q holds all N positions."""
    O, lse = mta_fwd(q, k, v, w, scale)
    return O[:, :, -1:], lse[:, :, -1:]


# ----------------------------------------------------------------------------------------------
# StreamKL: per-row KL(P ‖ Q), P = softmax(teacher scores s), Q = softmax(student scores t)

def kl_scores(tq, tk, sq, sk, scale_t, scale_s):
    tq, tk, sq, sk = _f64(tq, tk, sq, sk)
    H = tq.shape[1]
    assert sq.shape[1] == H
    s = np.einsum("bhid,bhjd->bhij", tq, expand_kv(tk, H)) * scale_t
    t = np.einsum("bhid,bhjd->bhij", sq, expand_kv(sk, H)) * scale_s
    return s, t


def kl_rows(s, t, vis):
    """(KL, LSE_teacher, LSE_student, P, Q) from explicit score matrices; KL = Σ p (log p - log q)."""
    P, lse_t = masked_softmax(s, vis)
    Q, lse_s = masked_softmax(t, vis)
    vis = np.broadcast_to(vis, s.shape)
    logp = np.where(vis, s, 0.0) - np.where(np.isfinite(lse_t), lse_t, 0.0)[..., None]
    logq = np.where(vis, t, 0.0) - np.where(np.isfinite(lse_s), lse_s, 0.0)[..., None]
    kl = np.where(vis, P * (logp - logq), 0.0).sum(axis=-1)
    return kl, lse_t, lse_s, P, Q


def kl_fwd(tq, tk, sq, sk, scale_t, scale_s, causal=False, mask=None):
    """(KL, LSE_teacher, LSE_student), each [B, H, Nq].
    tq [B,H,Nq,DT], tk [B,HKT,Nk,DT], sq [B,H,Nq,DS], sk [B,HKS,Nk,DS]."""
    s, t = kl_scores(tq, tk, sq, sk, scale_t, scale_s)
    kl, lse_t, lse_s, _, _ = kl_rows(s, t, visibility(s.shape[2], s.shape[3], causal, 0, mask))
    return kl, lse_t, lse_s


def kl_bwd(tq, tk, sq, sk, g, scale_t, scale_s, causal=False, mask=None):
    """Gradients of L = Σ_rows g · KL wrt the student scores t (dT = g (q - p)), Qs and Ks."""
    sq, sk, g = _f64(sq, sk, g)
    H, HKS = sq.shape[1], sk.shape[1]
    s, t = kl_scores(tq, tk, sq, sk, scale_t, scale_s)
    vis = visibility(s.shape[2], s.shape[3], causal, 0, mask)
    _, _, _, P, Q = kl_rows(s, t, vis)
    dT = g[..., None] * (Q - P)
    dsq = scale_s * np.einsum("bhij,bhjd->bhid", dT, expand_kv(sk, H))
    dsk = scale_s * np.einsum("bhij,bhid->bhjd", dT, sq)
    return dT, dsq, reduce_kv(dsk, HKS)


# ----------------------------------------------------------------------------------------------
# self-test

def _num_grad(f, x, eps=1e-6):
    """Central finite differences of the scalar f() wrt every entry of x (modified in place)."""
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        old = x[idx]
        x[idx] = old + eps
        fp = f()
        x[idx] = old - eps
        fm = f()
        x[idx] = old
        g[idx] = (fp - fm) / (2 * eps)
    return g


def _close(name, got, want, tol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    err = np.max(np.abs(got - want), initial=0.0)
    ref = max(1.0, np.max(np.abs(want), initial=0.0))
    assert np.all(np.isfinite(got)) and err <= tol * ref, f"{name}: max err {err:.3e} (ref {ref:.3e})"
    return err


def _selftest_attention(rng):
    cases = [  # B, H, HKV, Nq, Nk, D, causal, causal_offset, with_mask
        (1, 2, 2, 5, 5, 3, False, 0, False),
        (2, 4, 2, 5, 7, 3, False, 0, False),       # GQA, ragged Nq != Nk
        (1, 4, 1, 6, 6, 4, True, 0, False),        # causal (top-left)
        (1, 2, 1, 3, 8, 3, True, 5, False),        # bottom-right causal (decode rows)
        (1, 2, 2, 4, 5, 3, False, 0, True),        # explicit mask with a fully masked row
    ]
    for (B, H, HKV, Nq, Nk, D, causal, off, with_mask) in cases:
        q = rng.standard_normal((B, H, Nq, D))
        k = rng.standard_normal((B, HKV, Nk, D))
        v = rng.standard_normal((B, HKV, Nk, D))
        do = rng.standard_normal((B, H, Nq, D))
        scale = 1.0 / np.sqrt(D)
        mask = None
        if with_mask:
            mask = rng.random((Nq, Nk)) < 0.7
            mask[1, :] = False                     # row 1 sees nothing
            mask[0, 0] = True
        O, L = attention_fwd(q, k, v, scale, causal, off, mask)
        On, Ln = attention_fwd_naive(q, k, v, scale, causal, off, mask)
        _close("attn O vs naive", O, On, 1e-12)
        assert np.array_equal(np.isinf(L), np.isinf(Ln))
        _close("attn LSE vs naive", np.where(np.isinf(L), 0, L), np.where(np.isinf(Ln), 0, Ln), 1e-12)
        if with_mask:
            assert np.all(O[:, :, 1] == 0) and np.all(L[:, :, 1] == NEG_INF)
        dq, dk, dv = attention_bwd(q, k, v, do, scale, causal, off, mask)
        for got, want in zip(attention_bwd(q, k, v, do, scale, causal, off, mask, (O * do).sum(-1)),
                             (dq, dk, dv)):
            _close("attn bwd with delta = rowsum(dO O)", got, want, 1e-12)
        loss = lambda: float((attention_fwd(q, k, v, scale, causal, off, mask)[0] * do).sum())
        _close("attn dq", dq, _num_grad(loss, q))
        _close("attn dk", dk, _num_grad(loss, k))
        _close("attn dv", dv, _num_grad(loss, v))
        if with_mask:
            assert np.all(dq[:, :, 1] == 0)


def _selftest_mta(rng):
    cases = [  # B, H, HKV, N, D, cq, ck
        (1, 2, 1, 6, 3, 2, 3),
        (2, 2, 2, 7, 2, 3, 4),        # even ck: pad 1 left, 2 right
        (1, 4, 2, 5, 3, 1, 1),        # degenerate kernel: W = scalar per head
        (1, 1, 1, 4, 2, 6, 5),        # kernel taller than the sequence
    ]
    for (B, H, HKV, N, D, cq, ck) in cases:
        q = rng.standard_normal((B, H, N, D))
        k = rng.standard_normal((B, HKV, N, D))
        v = rng.standard_normal((B, HKV, N, D))
        w = rng.standard_normal((H, cq, ck)) * 0.5
        do = rng.standard_normal((B, H, N, D))
        scale = 1.0 / np.sqrt(D)
        s0 = mta_s0(q, k, scale)
        C = mta_conv_loop(s0, w)
        _close("mta conv loop vs corr", mta_conv_corr(s0, w), C, 1e-12)
        _close("mta conv torch layout", mta_conv_corr(s0, None, w[:, None, ::-1, :]), C, 1e-12)
        # identity kernel of the paper's code (Wt[.., -1, ck // 2] = 1, odd ck) gives C = S0
        if ck % 2 == 1:
            Wt = np.zeros((H, 1, cq, ck))
            Wt[:, 0, -1, ck // 2] = 1.0
            _close("mta identity kernel", mta_conv_corr(s0, None, Wt), s0, 1e-15)
        # adjoint: <conv(X), Y> == <X, conv_adjoint(Y)> for arbitrary X, Y
        X = rng.standard_normal(s0.shape)
        Y = rng.standard_normal(s0.shape)
        lhs = float((mta_conv_loop(X, w) * Y).sum())
        rhs = float((X * mta_conv_adjoint(Y, w)).sum())
        assert abs(lhs - rhs) <= 1e-10 * max(1.0, abs(lhs)), ("mta adjoint", lhs, rhs)
        # the conv never reads the future: changing k/v/q at positions > i leaves row i unchanged
        O, _ = mta_fwd(q, k, v, w, scale)
        q2, k2, v2 = q.copy(), k.copy(), v.copy()
        q2[:, :, -1] += 1.0
        k2[:, :, -1] += 1.0
        v2[:, :, -1] += 1.0
        O2, _ = mta_fwd(q2, k2, v2, w, scale)
        _close("mta causality", O2[:, :, :-1], O[:, :, :-1], 1e-12)
        # decode = last row
        Od, Ld = mta_decode(q, k, v, w, scale)
        _close("mta decode", Od, O[:, :, -1:], 0)
        # gradients
        dq, dk, dv, dw = mta_bwd(q, k, v, w, do, scale)
        for got, want in zip(mta_bwd(q, k, v, w, do, scale, (O * do).sum(-1)), (dq, dk, dv, dw)):
            _close("mta bwd with delta = rowsum(dO O)", got, want, 1e-12)
        loss = lambda: float((mta_fwd(q, k, v, w, scale)[0] * do).sum())
        _close("mta dq", dq, _num_grad(loss, q))
        _close("mta dk", dk, _num_grad(loss, k))
        _close("mta dv", dv, _num_grad(loss, v))
        _close("mta dw", dw, _num_grad(loss, w))


def _selftest_kl(rng):
    cases = [  # B, H, HKT, HKS, Nq, Nk, DT, DS, causal, with_mask
        (1, 2, 2, 1, 4, 6, 3, 2, False, False),
        (2, 4, 1, 2, 5, 5, 4, 3, True, False),
        (1, 2, 1, 2, 4, 5, 2, 3, False, True),     # a fully masked row
    ]
    for (B, H, HKT, HKS, Nq, Nk, DT, DS, causal, with_mask) in cases:
        tq = rng.standard_normal((B, H, Nq, DT))
        tk = rng.standard_normal((B, HKT, Nk, DT))
        sq = rng.standard_normal((B, H, Nq, DS))
        sk = rng.standard_normal((B, HKS, Nk, DS))
        g = rng.standard_normal((B, H, Nq))
        st, ss = 1.0 / np.sqrt(DT), 0.7 / np.sqrt(DS)
        mask = None
        if with_mask:
            mask = rng.random((Nq, Nk)) < 0.7
            mask[2, :] = False
            mask[0, 0] = True
        kl, lse_t, lse_s = kl_fwd(tq, tk, sq, sk, st, ss, causal, mask)
        assert np.all(kl >= -1e-12)
        # the identity used by the one-pass kernel: KL = Σ p (s - t) - LSE(s) + LSE(t)
        s, t = kl_scores(tq, tk, sq, sk, st, ss)
        vis = np.broadcast_to(visibility(Nq, Nk, causal, 0, mask), s.shape)
        P, _ = masked_softmax(s, vis)
        fin = np.isfinite(lse_t)
        alt = np.where(vis, P * (np.where(vis, s - t, 0.0)), 0.0).sum(-1) \
            - np.where(fin, lse_t, 0.0) + np.where(fin, lse_s, 0.0)
        _close("kl identity", np.where(fin, alt, 0.0), kl, 1e-12)
        if with_mask:
            assert np.all(kl[:, :, 2] == 0) and np.all(lse_t[:, :, 2] == NEG_INF)
        dT, dsq, dsk = kl_bwd(tq, tk, sq, sk, g, st, ss, causal, mask)
        # gradient wrt the student scores directly
        tt = t.copy()
        loss_t = lambda: float((g * kl_rows(s, tt, vis)[0]).sum())
        _close("kl dT", np.where(vis, dT, 0.0), np.where(vis, _num_grad(loss_t, tt), 0.0))
        loss = lambda: float((g * kl_fwd(tq, tk, sq, sk, st, ss, causal, mask)[0]).sum())
        _close("kl dQs", dsq, _num_grad(loss, sq))
        _close("kl dKs", dsk, _num_grad(loss, sk))
        if with_mask:
            assert np.all(dsq[:, :, 2] == 0) and np.all(dT[:, :, 2] == 0)


if __name__ == "__main__":
    rng = np.random.default_rng(20261122)
    with np.errstate(all="raise", under="ignore"):
        _selftest_attention(rng)
        print("attention: forward vs naive, backward vs finite differences: ok")
        _selftest_mta(rng)
        print("mta: loop == padded correlation (== torch layout), adjoint, causality, "
              "backward (dq, dk, dv, dw) vs finite differences: ok")
        _selftest_kl(rng)
        print("kl: identity, masked rows, dT / dQs / dKs vs finite differences: ok")
    print("reference self-test passed")
