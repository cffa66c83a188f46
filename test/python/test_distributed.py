"""tessel.distributed on the CPU: context-parallel decode and StreamKL across 1, 2 and 4 processes
(torch.distributed with gloo, kernels on the interpreter), against the one-process ops and the
float64 references; the merge kernels alone; argument errors raised on every rank; a rank that
hangs or exits gives an error on every other rank, never a hang; the tensor-parallel example.

The keys are cut into uneven chunks, one empty.  Each spawned group runs all its cases in one
process group (a spawn and its PyTorch import cost seconds on two cores) and reports every rank's
outcome of every case; the tests below read those reports.  The parent runs the one-process ops
first, so the children find every kernel compiled in the session's cache."""

import datetime
import multiprocessing
import os
import queue as queues
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
import torch.distributed as dist

import reference as ref
import tessel
import tessel.distributed as td
from tessel.interpreter import from_bf16_bits, to_bf16_bits
from tessel.ops.merge import merge_attention_states, merge_kl_states

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
U = {np.float16: 2.0 ** -11, np.float32: 2.0 ** -8}
DTYPES = {"f16": np.float16, "bf16": np.float32}   # float32 arrays run in bf16
# The process groups' timeout, and the short one of the cases where a rank hangs or exits.
TIMEOUT_S, SHORT_TIMEOUT_S = 60, 3
# A spawned group must finish within this (it fails the tests, never hangs them).
DEADLINE_S = 240

DECODE = {  # B, H, HKV, Nq, Nk, D, causal, dtype
    "gqa2-nq3": (2, 4, 2, 3, 150, 32, False, "f16"),
    "causal-nq4": (1, 4, 4, 4, 97, 64, True, "bf16"),
}
KL = {  # B, H, HKT, HKS, Nq, Nk, DT, DS, scale, dtype
    "gqa-dt64-ds32": (1, 4, 2, 1, 37, 90, 64, 32, None, "f16"),
    "scales": (2, 2, 2, 2, 20, 41, 16, 16, (0.3, 0.2), "bf16"),
}


def _cuts(n, world):
    """Rank r's keys are [cuts[r], cuts[r + 1]): uneven, with an empty chunk from 4 ranks."""
    return {1: [0, n], 2: [0, 2 * n // 5, n], 4: [0, n // 4, n // 4, 3 * n // 5, n]}[world]


def _inputs(seed, dtype, *shapes):
    """Seeded standard normal arrays, and their float64 values as the kernels see them."""
    rng = np.random.default_rng(list(seed.encode()))
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    seen = [from_bf16_bits(to_bf16_bits(a)) if dtype == np.float32 else a for a in arrays]
    return arrays, [s.astype(np.float64) for s in seen]


def _decode_inputs(name):
    B, H, HKV, Nq, Nk, D, causal, dtype = DECODE[name]
    return _inputs(name, DTYPES[dtype], (B, H, Nq, D), (B, HKV, Nk, D), (B, HKV, Nk, D))


def _kl_inputs(name):
    B, H, HKT, HKS, Nq, Nk, DT, DS, scale, dtype = KL[name]
    return _inputs(name, DTYPES[dtype], (B, H, Nq, DT), (B, HKT, Nk, DT), (B, H, Nq, DS),
                   (B, HKS, Nk, DS))


def _chunk(x, rank, world):
    cuts = _cuts(x.shape[2], world)
    return np.ascontiguousarray(x[:, :, cuts[rank]:cuts[rank + 1]])


# ---------------------------------------------------------------------------------------------
# the cases every rank runs

def _cp_decode(name, rank, world, **options):
    (q, k, v), _ = _decode_inputs(name)
    causal = DECODE[name][6]
    return td.context_parallel_decode(q, _chunk(k, rank, world), _chunk(v, rank, world),
                                      causal=causal, return_lse=True, **options)


def _cp_kl(name, rank, world):
    (qt, kt, qs, ks), _ = _kl_inputs(name)
    scale = KL[name][8]
    kt, ks = _chunk(kt, rank, world), _chunk(ks, rank, world)
    return (td.context_parallel_attention_kl(qt, kt, qs, ks, scale=scale, reduction="none"),
            td.context_parallel_attention_kl(qt, kt, qs, ks, scale=scale, reduction="sum"))


def _bad_argument(rank, world):
    """Rank 1's v has another head dim than its k."""
    (q, k, v), _ = _decode_inputs("gqa2-nq3")
    k, v = _chunk(k, rank, world), _chunk(v, rank, world)
    return td.context_parallel_decode(q, k, v[..., :16] if rank == 1 else v)


def _disagree_shape(rank, world):
    """Rank 0 has one query row fewer."""
    (q, k, v), _ = _decode_inputs("gqa2-nq3")
    return td.context_parallel_decode(q[:, :, 1:] if rank == 0 else q, _chunk(k, rank, world),
                                      _chunk(v, rank, world))


def _disagree_dtype(rank, world):
    """The last rank passes float32 arrays (bf16), the others float16."""
    (q, k, v), _ = _decode_inputs("gqa2-nq3")
    if rank == world - 1:
        q, k, v = (x.astype(np.float32) for x in (q, k, v))
    return td.context_parallel_decode(q, _chunk(k, rank, world), _chunk(v, rank, world))


def _disagree_scale(rank, world):
    (qt, kt, qs, ks), _ = _kl_inputs("scales")
    return td.context_parallel_attention_kl(qt, _chunk(kt, rank, world), qs,
                                            _chunk(ks, rank, world), scale=0.1 * (rank + 1))


def _cases(rank, world):
    """(name, function) of the cases that keep the process group usable."""
    cases = [(("decode", n), lambda n=n: _cp_decode(n, rank, world)) for n in DECODE]
    cases += [(("decode-unvalidated", "gqa2-nq3"),
               lambda: _cp_decode("gqa2-nq3", rank, world, validate=False))]
    cases += [(("kl", n), lambda n=n: _cp_kl(n, rank, world)) for n in KL]
    cases += [(("error", f.__name__), lambda f=f: f(rank, world))
              for f in (_bad_argument, _disagree_shape, _disagree_dtype, _disagree_scale)]
    return cases


def _hang(rank, world, group):
    """Rank 1 reaches the collective only after the group's timeout."""
    if rank == 1:
        time.sleep(SHORT_TIMEOUT_S + 2)
    return _cp_decode("gqa2-nq3", rank, world, group=group)


def _exit(rank, world, group, queue):
    """Rank 2 exits instead of calling."""
    if rank == 2:
        queue.put((rank, ("failure", "exit"), "exited", ""))
        queue.close()
        queue.join_thread()
        os._exit(3)
    return _cp_decode("gqa2-nq3", rank, world, group=group)


def _worker(rank, world, init_file, queue):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=TIMEOUT_S))

    def report(name, run):
        try:
            queue.put((rank, name, "ok", run()))
        except Exception as e:   # noqa: BLE001 -- every outcome goes back to the test
            queue.put((rank, name, type(e).__name__, str(e)))

    for name, run in _cases(rank, world):
        report(name, run)
    # Last, as they leave the group unusable: a group whose timeout is short.
    short = dist.new_group(list(range(world)), timeout=datetime.timedelta(seconds=SHORT_TIMEOUT_S))
    if world == 2:
        report(("failure", "hang"), lambda: _hang(rank, world, short))
    else:
        report(("failure", "exit"), lambda: _exit(rank, world, short, queue))


def _spawn(world, tmp_path):
    """{(rank, case): (outcome, value)} of a group of `world` spawned processes, and how long the
    slowest ran.  Fails if the group does not end within DEADLINE_S."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    init = str(tmp_path / f"init-{world}")
    procs = [ctx.Process(target=_worker, args=(r, world, init, queue)) for r in range(world)]
    start = time.monotonic()
    for p in procs:
        p.start()
    results = {}
    while any(p.is_alive() for p in procs) or not queue.empty():
        try:
            rank, name, outcome, value = queue.get(timeout=0.5)
            results[(rank, name)] = (outcome, value)
        except queues.Empty:
            pass
        if time.monotonic() - start > DEADLINE_S:
            for p in procs:
                p.kill()
            pytest.fail(f"{world} processes still running after {DEADLINE_S} s: a hang "
                        f"(outcomes so far: {sorted(results)})")
    return results


@pytest.fixture(scope="module")
def references():
    """One-process results of every case (compiling every kernel the children use)."""
    out = {}
    for name in DECODE:
        B, H, HKV, Nq, Nk, D, causal, dtype = DECODE[name]
        (q, k, v), (q64, k64, v64) = _decode_inputs(name)
        want = ref.decode_attention(q64, k64, v64, np.float32(1 / np.sqrt(D)), causal)
        out[("decode", name)] = (tessel.lean_attention(q, k, v, causal=causal), want)
    for name in KL:
        (qt, kt, qs, ks), xs = _kl_inputs(name)
        DT, DS, scale = KL[name][6:9]
        scales = scale or (1 / np.sqrt(DT), 1 / np.sqrt(DS))
        want = ref.kl_fwd(*xs, *map(np.float32, scales))
        out[("kl", name)] = (tessel.attention_kl(qt, kt, qs, ks, scale=scale, reduction="none"),
                             want)
    # The merge path alone (parts computed here, merged by one kernel), as the ranks of 4 do.
    for name in DECODE:
        _merge_decode_in_process(name, 4)
    for name in KL:
        _merge_kl_in_process(name, 4)
    return out


@pytest.fixture(scope="module", params=[2, 4])
def spawned(request, tmp_path_factory, references):
    world = request.param
    start = time.monotonic()
    results = _spawn(world, tmp_path_factory.mktemp(f"world{world}"))
    print(f"\n  {world} processes: {time.monotonic() - start:.1f} s")
    return world, results


# ---------------------------------------------------------------------------------------------
# checks

def _check_out(got, want, dtype):
    """Output in the element type: within 4u + 2u·max|want| (u: 2^-11 f16, 2^-8 bf16)."""
    u = U[dtype]
    assert got.dtype == dtype and got.shape == want.shape
    err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0.0)
    assert err <= 4 * u + 2 * u * np.max(np.abs(want), initial=0.0), err


def _f32_tol(*magnitudes):
    """f32 rows (KL, LSE): 1e-5 + 4e-6 · the magnitude of the terms (the LSEs)."""
    return 1e-5 + 4e-6 * max(np.max(np.abs(m[np.isfinite(m)]), initial=0.0) for m in magnitudes)


def _check_decode(name, o, lse, references):
    dtype = DTYPES[DECODE[name][7]]
    single, (want, want_lse) = references[("decode", name)]
    _check_out(o, want, dtype)                    # the float64 reference
    _check_out(o, single, dtype)                  # the one-process op: up to reassociation
    np.testing.assert_allclose(lse, want_lse, rtol=0, atol=_f32_tol(want_lse))


def _check_kl(name, rows, total, references):
    single, (want, lse_t, lse_s) = references[("kl", name)]
    tol = _f32_tol(want, lse_t, lse_s)
    assert rows.dtype == np.float32 and rows.shape == want.shape
    np.testing.assert_allclose(rows, want, rtol=0, atol=tol)
    np.testing.assert_allclose(rows, single, rtol=0, atol=tol)
    assert isinstance(total, np.float32) and abs(total - want.sum()) <= tol * want.size


def _outcome(results, rank, case):
    assert (rank, case) in results, f"rank {rank} did not report {case}"
    return results[(rank, case)]


def _ok(results, rank, case):
    outcome, value = _outcome(results, rank, case)
    assert outcome == "ok", f"rank {rank}, {case}: {outcome}: {value}"
    return value


def _merge_decode_in_process(name, world):
    (q, k, v), _ = _decode_inputs(name)
    B, H, HKV, Nq, Nk, D, causal, dtype = DECODE[name]
    from tessel.ops.lean import _lean_attention_forward, check_lean_args
    parts = []
    for r in range(world):
        kr, vr = _chunk(k, r, world), _chunk(v, r, world)
        last = causal and r == world - 1
        be, dt, scale, stream_k = check_lean_args("test", q, kr, vr, last, None, "stream-k")
        parts.append(_lean_attention_forward(be, q, kr, vr, last, scale, dt, stream_k))
    return merge_attention_states(np.stack([p[0] for p in parts]),
                                  np.stack([p[1] for p in parts]))


def _merge_kl_in_process(name, world):
    (qt, kt, qs, ks), _ = _kl_inputs(name)
    scale = KL[name][8]
    from tessel.ops.kl import _attention_kl_forward, check_kl_args
    states = []
    for r in range(world):
        ktr, ksr = _chunk(kt, r, world), _chunk(ks, r, world)
        _, be, dt, st, ss = check_kl_args("test", qt, ktr, qs, ksr, False, scale, "none")
        state = np.empty((3,) + qt.shape[:3], np.float32)
        _attention_kl_forward(be, qt, ktr, qs, ksr, False, st, ss, dt, out=tuple(state))
        states.append(state)
    return merge_kl_states(np.stack(states))


# ---------------------------------------------------------------------------------------------
# the merge kernels in one process

@pytest.mark.parametrize("name", list(DECODE))
def test_merge_attention_states(name, references):
    o, lse = _merge_decode_in_process(name, 4)
    _check_decode(name, o, lse, references)


@pytest.mark.parametrize("name", list(KL))
def test_merge_kl_states(name, references):
    kl, lse_t, lse_s = _merge_kl_in_process(name, 4)
    _check_kl(name, kl, np.float32(kl.sum(dtype=np.float64)), references)
    _, (_, want_t, want_s) = references[("kl", name)]
    np.testing.assert_allclose(lse_t, want_t, rtol=0, atol=_f32_tol(want_t))
    np.testing.assert_allclose(lse_s, want_s, rtol=0, atol=_f32_tol(want_s))


def test_merge_empty_rows():
    """Rows empty in every part: O = 0, KL = 0, LSE = -inf (the ops' contract); an empty part
    weighs nothing next to a full one."""
    o_parts = np.ones((3, 1, 2, 1, 16), np.float16)
    lse_parts = np.full((3, 1, 2, 1), -np.inf, np.float32)
    lse_parts[1, 0, 1] = 2.0
    o, lse = merge_attention_states(o_parts, lse_parts)
    np.testing.assert_array_equal(o[0, 0], 0.0)
    np.testing.assert_array_equal(o[0, 1], 1.0)
    np.testing.assert_array_equal(lse, [[[-np.inf], [2.0]]])
    parts = np.zeros((2, 3, 1, 1, 5), np.float32)
    parts[:, 1:] = -np.inf
    kl, lse_t, lse_s = merge_kl_states(parts)
    np.testing.assert_array_equal(kl, 0.0)
    np.testing.assert_array_equal(lse_t, -np.inf)
    np.testing.assert_array_equal(lse_s, -np.inf)


MERGE_ERRORS = {
    "rank": (lambda: merge_attention_states(np.zeros((2, 1, 1, 16), np.float16),
                                            np.zeros((2, 1, 1), np.float32)), ValueError,
             r"tessel.merge_attention_states: o_parts must have 5 dimensions"),
    "lse shape": (lambda: merge_attention_states(np.zeros((2, 1, 1, 1, 16), np.float16),
                                                 np.zeros((3, 1, 1, 1), np.float32)),
                  ValueError, r"lse_parts must have shape \(P, B, H, Nq\) = \(2, 1, 1, 1\)"),
    "lse dtype": (lambda: merge_attention_states(np.zeros((2, 1, 1, 1, 16), np.float16),
                                                 np.zeros((2, 1, 1, 1), np.float16)),
                  TypeError, r"lse_parts must be float32, got float16"),
    "kl shape": (lambda: merge_kl_states(np.zeros((2, 2, 1, 1, 4), np.float32)), ValueError,
                 r"tessel.merge_kl_states: parts must have shape \(P, 3, B, H, Nq\)"),
}


@pytest.mark.parametrize("case", list(MERGE_ERRORS))
def test_merge_errors(case):
    call, error, message = MERGE_ERRORS[case]
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------------------------------------
# one process: a group of one, and no group

def test_world_of_one(tmp_path, references):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/init", rank=0,
                            world_size=1, timeout=datetime.timedelta(seconds=TIMEOUT_S))
    try:
        for name in DECODE:
            _check_decode(name, *_cp_decode(name, 0, 1), references)
        for name in KL:
            _check_kl(name, *_cp_kl(name, 0, 1), references)
    finally:
        dist.destroy_process_group()


def test_no_process_group():
    q = np.zeros((1, 1, 1, 16), np.float16)
    with pytest.raises(RuntimeError, match=r"tessel.context_parallel_decode: torch.distributed "
                                           r"is not initialised"):
        td.context_parallel_decode(q, q, q)


# ---------------------------------------------------------------------------------------------
# 2 and 4 processes

@pytest.mark.parametrize("name", list(DECODE))
def test_context_parallel_decode(spawned, references, name):
    world, results = spawned
    for rank in range(world):
        o, lse = _ok(results, rank, ("decode", name))
        _check_decode(name, o, lse, references)
        if rank:   # every rank holds the same result
            np.testing.assert_array_equal(o, _ok(results, 0, ("decode", name))[0])


def test_context_parallel_decode_unvalidated(spawned, references):
    world, results = spawned
    for rank in range(world):
        o, lse = _ok(results, rank, ("decode-unvalidated", "gqa2-nq3"))
        np.testing.assert_array_equal(o, _ok(results, rank, ("decode", "gqa2-nq3"))[0])


@pytest.mark.parametrize("name", list(KL))
def test_context_parallel_attention_kl(spawned, references, name):
    world, results = spawned
    for rank in range(world):
        _check_kl(name, *_ok(results, rank, ("kl", name)), references)


ERRORS = {  # case: (the rank at fault or None, its error, the others' error)
    "_bad_argument": (1, ("ValueError", r"tessel.context_parallel_decode: the shapes of k and v "
                                        r"must match"),
                      ("ValueError", r"tessel.context_parallel_decode: the arguments of rank 1 "
                                     r"of \d failed its checks")),
    "_disagree_shape": (None, None,
                        ("ValueError", r"tessel.context_parallel_decode: the ranks must agree "
                                       r"on q's shape \(B, H, Nq, D\), got rank 0 \(2, 4, 2, 32\), "
                                       r"rank 1 \(2, 4, 3, 32\)")),
    "_disagree_dtype": (None, None,
                        ("ValueError", r"the ranks must agree on the dtype \(0: f16, 1: bf16\), "
                                       r"got rank 0 0, ")),
    "_disagree_scale": (None, None,
                        ("ValueError", r"tessel.context_parallel_attention_kl: the ranks must "
                                       r"agree on the scales, got rank 0 \(0.1, 0.1\), rank 1 "
                                       r"\(0.2, 0.2\)")),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_on_every_rank(spawned, case):
    world, results = spawned
    culprit, own, others = ERRORS[case]
    for rank in range(world):
        outcome, message = _outcome(results, rank, ("error", case))
        kind, pattern = own if rank == culprit else others
        assert outcome == kind, (rank, outcome, message)
        assert re.search(pattern, message), (rank, message)


def test_failed_rank(spawned):
    """2 processes: rank 1 reaches the collective after the timeout.  4 processes: rank 2 exits.
    Every other rank raises CommunicationError naming the op and itself (within the group's
    timeout: the spawn's deadline would fail the test)."""
    world, results = spawned
    case = ("failure", "hang" if world == 2 else "exit")
    for rank in range(world):
        outcome, message = _outcome(results, rank, case)
        if world == 4 and rank == 2:
            assert outcome == "exited"
            continue
        assert outcome == "CommunicationError", (rank, outcome, message)
        assert f"tessel.context_parallel_decode: the all-gather failed on rank {rank} of " \
               f"{world}" in message


# ---------------------------------------------------------------------------------------------
# the tensor-parallel example

def test_tensor_parallel_example(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "distributed",
                                                        "tensor_parallel.py"),
                           "--cpu", "--world-size", "2"],
                          capture_output=True, text=True, timeout=DEADLINE_S, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tensor parallel over 2 ranks: prefill and decode match one process" in proc.stdout


class _SilentGather:
    """A stand-in torch.distributed whose all-gather returns without writing the other ranks'
    rows, as an NCCL all-gather that timed out does (the host sees no error)."""

    def get_backend(self, group):
        return "gloo"

    def all_gather(self, outs, x, group=None, async_op=False):
        outs[0].copy_(x)

        class Work:
            def wait(self):
                return True
        return Work()


def test_unwritten_exchange_is_a_communication_error():
    fields = {"q's shape (B, H, Nq, D)": (1, 32, 1, 128)}
    with pytest.raises(tessel.CommunicationError,
                       match=r"context_parallel_decode: rank 1 of 2 did not take part"):
        td._agree("context_parallel_decode", _SilentGather(), None, 0, 2, 4, fields, None, True)
    # Every row written: agreement passes.
    td._agree("context_parallel_decode", _SilentGather(), None, 0, 1, 4, fields, None, True)


class _StuckNccl:
    """A stand-in NCCL group whose all-gather never completes (a peer that never joins)."""

    class group:
        WORLD = None

    class _Backend:
        class options:
            _timeout = datetime.timedelta(seconds=0.2)

    def get_backend(self, group):
        return "nccl"

    def all_gather_into_tensor(self, out, x, group=None, async_op=False):
        class Work:
            def is_completed(self):
                return False

            def wait(self):
                raise AssertionError("waited without a deadline")
        return Work()


def test_stuck_nccl_exchange_times_out_on_the_host():
    stuck = _StuckNccl()
    group = type("Group", (), {"_get_backend": lambda self, device: stuck._Backend()})()
    start = time.monotonic()
    with pytest.raises(tessel.CommunicationError,
                       match=r"^tessel.context_parallel_decode: the argument exchange did not "
                             r"complete on rank 0 of 2 within the process group's "
                             r"timeout \(0.2 s\)"):
        td._collect("context_parallel_decode", stuck, group, 0, 2, torch.zeros(3))
    assert time.monotonic() - start < 5
