"""Stream-K equivalence: the lowered persistent form of a stream_k kernel (tessel-lower-stream-k: a
partial-state workspace, arrival flags, the merge done by the unit's host program) equals the
high-level tessel.stream_k op, for every shape of the schedule.

    TESSEL_BUILD_DIR=build /usr/bin/python3 -m pytest -s test/numerics/test_stream_k.py

The kernel is lean_attention (the only stream_k kernel in kernels/).  Each configuration runs with
G persistent programs at three stages: 'source' (the interpreter executes the stream_k op itself:
body over each program's slice, left-to-right merge, epilogue), 'expanded' (online-softmax ops
expanded to tile arithmetic, stream_k still high-level) and 'lowered' (what the GPU runs).  The
interpreter evaluates the online ops exactly as their expansion rounds them, and the lowered host
merges the same partial states in the same order, so the outputs must be BITWISE equal across
the three stages; the lowered output must also match the float64 reference (tolerances of
test_kernels.py).  Different G give different (equally valid) roundings: the merge tree changes.

Work split: T = units * iters iterations (units = B*HKV: one per (batch, KV head), holding the
(H/HKV)*Nq query rows of its GQA group; iters = max(cdiv(Nk, BLOCK_N), 1)), program p owns
[p*T/G, (p+1)*T/G).  Covered: G = 1, G < units (with unit boundaries inside and on program
boundaries), G = units, G > units (a unit split over several programs), iters not divisible by G,
G > T (programs with no work), partial ranges that see only masked keys (causal), Nk = 0.
The split-K lowering is checked against the stream_k op the same way (see SPLIT_GRIDS).
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_launch as kl  # noqa: E402
import reference as ref  # noqa: E402
from test_kernels import TOL, scaled_tol  # noqa: E402

STAGES = ("source", "expanded", "lowered")

CASES = {  # B, H, HKV, Nq, Nk, D, causal, BM, BN, dtype, programs G (several)
    # units 4 (GQA 2:1, 2 rows each), iters 7 (T = 28): one program does everything; 3 and 5
    # split units unevenly.
    "units4-iters7":             (1, 8, 4, 1, 100, 64, False, 16, 16, "f16", (1, 3, 4, 5)),
    # units 8 (GQA 4:1, 12 rows each), iters 3 (T = 24): G = 3 (8 iterations each: units 2 and 5
    # are cut), G = 6 (4 each: every unit cut), G = 8 (= units: one unit each), G = 12 (2 each).
    "units8-iters3-gqa4":        (2, 16, 4, 3, 45, 64, False, 16, 16, "f16", (3, 6, 8, 12)),
    # units 2 (GQA 2:1, 10 rows each), iters 7 (T = 14): G > units, 14 / G not an integer, G = 9
    # -> 1 or 2 iterations each.
    "units2-iters7-causal":      (1, 4, 2, 5, 100, 64, True, 16, 16, "f16", (2, 3, 5, 9)),
    # units 3 (GQA 3:1: 6 rows each of a tile of 8), iters 3 (T = 9): G < units, = units, > units.
    "units3-iters3-gqa3-causal": (1, 9, 3, 2, 40, 64, True, 8, 16, "f16", (2, 3, 4)),
    # units 1 (MHA, 16 rows), iters 7: a single unit over 2..7 programs (the host merges G-1 peers).
    "units1-iters7":             (1, 1, 1, 16, 103, 32, False, 16, 16, "f16", (2, 4, 7)),
    # units 2 (GQA 2:1, 4 rows = BM), iters 2 (T = 4) on G = 7 > T: programs 0, 2, 4 get no
    # iterations.
    "units2-iters2-G-gt-T":      (1, 4, 2, 2, 20, 32, False, 4, 16, "f16", (7,)),
    # causal, BLOCK_N = 16, Nk = 65: the last block holds key 64 alone, visible only to the newest
    # row of each head; with one iteration per program, that program's partial state is empty
    # (m = -inf, l = 0) for rows 0..3 of both heads of the group: the merge must handle fully
    # masked partials.  units 2 (GQA 2:1, 10 rows each).
    "causal-masked-partial":     (1, 4, 2, 5, 65, 64, True, 16, 16, "f16", (5, 10)),
    # Nk = 0: iters = 1 (a fully masked block), O = 0, LSE = -inf for every unit (units 2).
    "nk0":                       (1, 4, 2, 2, 0, 32, False, 4, 16, "f16", (1, 3, 6)),
    # bf16, D = 128, ragged; units 4 (GQA 2:1, 14 rows each), iters 5.
    "bf16-units4-iters5":        (2, 4, 2, 7, 70, 128, True, 16, 16, "bf16", (3, 11)),
}

PARAMS = [(name, G) for name, case in CASES.items() for G in case[-1]]


def _bitwise_equal(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


@pytest.mark.parametrize("name,G", PARAMS, ids=[f"{n}-G{g}" for n, g in PARAMS])
def test_lowered_equals_stream_k_op(name, G):
    B, H, HKV, Nq, Nk, D, causal, BM, BN, dt, _ = CASES[name]
    assert (H // HKV) * Nq <= BM, f"{name}: the group's rows do not fit in BLOCK_M"
    units, iters = B * HKV, max(kl.cdiv(Nk, BN), 1)
    T = units * iters
    cuts = [p * T // G for p in range(G + 1)]
    print(f"\n  lean_attention {name} [{dt}] G={G}: units {units} x iters {iters} = {T}, "
          f"program ranges {[(cuts[p], cuts[p + 1]) for p in range(G)]}")
    rng = np.random.default_rng(list(repr(("stream_k", name)).encode()))
    q, k, v = kl.randn(rng, (B, H, Nq, D), dt), kl.randn(rng, (B, HKV, Nk, D), dt), kl.randn(rng, (B, HKV, Nk, D), dt)
    scale = kl.f32(1.0 / np.sqrt(D))
    outs = {st: kl.lean_attention(q, k, v, scale, causal, BM, BN, G, st, dt) for st in STAGES}

    for st in ("source", "expanded"):
        for n in ("o", "lse"):
            same = _bitwise_equal(outs["lowered"][n], outs[st][n])
            err = np.max(np.abs(np.nan_to_num(outs["lowered"][n] - outs[st][n], nan=np.inf)), initial=0.0) \
                if not same else 0.0
            print(f"    lowered vs {st:8s} {n:4s} bitwise {'equal' if same else f'DIFFERENT (max {err:.2e})'}")
            assert same, f"{n}: lowered (G={G}) differs from the {st} stream_k op"

    o, lse = outs["lowered"]["o"], outs["lowered"]["lse"]
    assert not np.any(o == 7.0) and not np.any(lse == 7.0), "unwritten outputs"
    if Nk == 0:
        kl.compare("O == 0", o, np.zeros_like(o), (0.0, 0.0))
        kl.compare("LSE == -inf", lse, np.full(lse.shape, -np.inf), (0.0, 0.0))
    else:
        O, L = ref.decode_attention(q, k, v, scale, causal)
        kl.compare("O vs reference", o, O, TOL[dt]["out"])
        kl.compare("LSE vs reference", lse, L, scaled_tol(dt, "f32", np.max(np.abs(L))))


def test_programs_change_only_rounding():
    """The same inputs on G = 1..8 programs agree within the f16 tolerance; the merge tree differs
    with G, so they are not bitwise equal (and some G must differ from G = 1 in the bits)."""
    B, H, HKV, Nq, Nk, D, causal, BM, BN, dt = 1, 2, 1, 3, 90, 64, True, 8, 16, "f16"
    rng = np.random.default_rng(5)
    q, k, v = kl.randn(rng, (B, H, Nq, D), dt), kl.randn(rng, (B, HKV, Nk, D), dt), kl.randn(rng, (B, HKV, Nk, D), dt)
    scale = kl.f32(1.0 / np.sqrt(D))
    base = kl.lean_attention(q, k, v, scale, causal, BM, BN, 1, "lowered", dt)
    print()
    differs = []
    for G in range(2, 9):
        out = kl.lean_attention(q, k, v, scale, causal, BM, BN, G, "lowered", dt)
        kl.compare(f"O, G={G} vs G=1", out["o"], base["o"], TOL[dt]["out"])
        kl.compare(f"LSE, G={G} vs G=1", out["lse"], base["lse"], scaled_tol(dt, "f32", np.max(np.abs(base["lse"]))))
        differs.append(not _bitwise_equal(out["o"], base["o"]))
    # The split shows in the bits (so the bitwise stage comparisons above are not vacuous).
    assert any(differs), "no G changed a bit of O: the split does not reach the result?"


# ---------------------------------------------------------------------------------------------
# split-K (tessel-lower-stream-k strategy=split-k): the split kernel computes work item
# w = unit*S + chunk with S = max(1, min(G // units, iters)) chunks per unit, chunk c covering
# [c*iters/S, (c+1)*iters/S), and the combine kernel merges a unit's chunks in order.  Those are
# exactly the ranges stream-K gives programs unit*S .. unit*S + S-1 of a grid of units*S programs,
# merged in the same order: split-K on G programs must equal the stream_k op on units*S programs
# BITWISE (and so any error in the chunk arithmetic or the merge order shows in the bits).

SPLIT_GRIDS = {  # case of CASES: grids G for split-K
    "units4-iters7": (1, 3, 4, 8, 9, 28, 40),  # S = 1 (G <= units), 2 (G = 9: one idle), 7 = iters (40: capped)
    "units8-iters3-gqa4": (5, 16, 30),         # S = 1 with units > G, 2, 3 = iters (6 idle)
    "units2-iters7-causal": (3, 7, 14),        # S = 1, 3 (one idle), 7
    "units3-iters3-gqa3-causal": (2, 7, 9),    # S = 1 with units > G, 2 (one idle), 3 = iters
    "units1-iters7": (2, 5, 7, 64),            # one unit: S = G up to iters, then capped
    "causal-masked-partial": (10,),            # S = 5 = iters: a chunk sees only masked keys for rows 0..3
    "nk0": (3, 12),                            # Nk = 0: iters = 1, S = 1
    "bf16-units4-iters5": (3, 13),             # S = 1, 3
}

SPLIT_PARAMS = [(name, G) for name, grids in SPLIT_GRIDS.items() for G in grids]


@pytest.mark.parametrize("name,G", SPLIT_PARAMS, ids=[f"{n}-G{g}" for n, g in SPLIT_PARAMS])
def test_split_k_equals_stream_k_op(name, G):
    B, H, HKV, Nq, Nk, D, causal, BM, BN, dt, _ = CASES[name]
    units, iters = B * HKV, max(kl.cdiv(Nk, BN), 1)
    S = max(1, min(G // units, iters))
    print(f"\n  lean_attention split-K {name} [{dt}] G={G}: units {units} x {S} chunks "
          f"{[(c * iters // S, (c + 1) * iters // S) for c in range(S)]}, "
          f"same as the stream_k op on {units * S} programs")
    rng = np.random.default_rng(list(repr(("stream_k", name)).encode()))
    q, k, v = kl.randn(rng, (B, H, Nq, D), dt), kl.randn(rng, (B, HKV, Nk, D), dt), kl.randn(rng, (B, HKV, Nk, D), dt)
    scale = kl.f32(1.0 / np.sqrt(D))
    split = kl.lean_attention(q, k, v, scale, causal, BM, BN, G, "lowered", dt, stream_k="split-k")
    op = kl.lean_attention(q, k, v, scale, causal, BM, BN, units * S, "source", dt)
    for n in ("o", "lse"):
        assert _bitwise_equal(split[n], op[n]), \
            f"{n}: split-K on {G} programs differs from the stream_k op on {units * S}"

    o, lse = split["o"], split["lse"]
    assert not np.any(o == 7.0) and not np.any(lse == 7.0), "unwritten outputs"
    if Nk == 0:
        kl.compare("O == 0", o, np.zeros_like(o), (0.0, 0.0))
        kl.compare("LSE == -inf", lse, np.full(lse.shape, -np.inf), (0.0, 0.0))
    else:
        O, L = ref.decode_attention(q, k, v, scale, causal)
        kl.compare("O vs reference", o, O, TOL[dt]["out"])
        kl.compare("LSE vs reference", lse, L, scaled_tol(dt, "f32", np.max(np.abs(L))))
