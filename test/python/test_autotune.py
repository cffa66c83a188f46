"""tessel.autotune on the CPU interpreter: the fastest candidate is launched and kept per key, in
memory and on disk (a warm cache never tunes), the tuning budget, restored arguments, errors.
Times come from an injected clock, so the choice is deterministic."""

import numpy as np
import pytest

import tessel
from kernels_for_tests import OPTIONAL_SUMS

ACCUMULATE = """
@kernel(num_warps=4)
def accumulate(x: ptr[f32], out: ptr[f32], n: i32, BLOCK: constexpr = 64, SCALE: constexpr = 1):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    store(out + offs, load(out + offs, mask=m) + SCALE * load(x + offs, mask=m), mask=m)
"""
CONFIGS = [{"BLOCK": 32}, {"BLOCK": 64}, {"BLOCK": 128}]


def grid(meta):
    return (tessel.cdiv(meta["n"], meta["BLOCK"]),)


class Clock:
    """Hands out the next of `times` per timed run, and counts the runs."""

    def __init__(self, times):
        self.times, self.runs = list(times), 0

    def __call__(self, run):
        run()
        self.runs += 1
        return self.times.pop(0)


def tuner(tmp_path, times, **options):
    kernel = tessel.jit(ACCUMULATE, interpret=True)
    options = {"key": ["n"], "warmup": 0, "rep": 1, "cache_dir": str(tmp_path), **options}
    tuned = tessel.autotune(kernel, configs=CONFIGS, **options)
    tuned._timer = clock = Clock(times)
    return tuned, clock


def arrays(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(np.float32), np.ones(n, np.float32)


def test_fastest_candidate_is_kept_and_cached(tmp_path):
    tuned, clock = tuner(tmp_path, [3.0, 1.0, 2.0], restore=["out"])
    x, out = arrays(300)
    tuned[grid](x, out, 300)
    assert clock.runs == 3 and tuned.tunings == 1
    assert tuned._best[(300,)] == {"BLOCK": 64}
    np.testing.assert_allclose(out, 1.0 + x, atol=1e-5)      # added once: trials were undone
    tuned[grid](x, out, 300)                                   # same key: no tuning
    assert clock.runs == 3 and tuned.tunings == 1
    np.testing.assert_allclose(out, 1.0 + 2 * x, atol=1e-5)
    # Another process (a new tuner on the same cache) finds the choice on disk.
    fresh, fresh_clock = tuner(tmp_path, [])
    x2, out2 = arrays(300, seed=1)
    fresh[grid](x2, out2, 300)
    assert fresh.tunings == 0 and fresh_clock.runs == 0
    assert fresh._best[(300,)] == {"BLOCK": 64}


def test_refused_candidates_are_left_out(tmp_path):
    """A candidate the compiler (or, on a GPU, the device: shared memory) refuses is not timed;
    when every one is refused, the first refusal is raised."""
    kernel = tessel.jit(ACCUMULATE, interpret=True)
    tuned = tessel.autotune(kernel, configs=[{"BLOCK": 0}, {"BLOCK": 64}, {"BLOCK": 1 << 30}],
                            key=["n"], warmup=0, rep=1, restore=["out"],
                            cache_dir=str(tmp_path))
    tuned._timer = clock = Clock([1.0])
    x, out = arrays(100)
    tuned[grid](x, out, 100)
    assert clock.runs == 1 and tuned._best[(100,)] == {"BLOCK": 64}
    assert [c for c, _ in tuned.refused] == [{"BLOCK": 0}, {"BLOCK": 1 << 30}]
    assert all(isinstance(e, tessel.CompileError) for _, e in tuned.refused)
    np.testing.assert_allclose(out, 1.0 + x, atol=1e-5)
    hopeless = tessel.autotune(kernel, configs=[{"BLOCK": 0}, {"BLOCK": -4}], key=["n"],
                               cache_dir=str(tmp_path))
    with pytest.raises(tessel.CompileError, match=r"arange\(\): needs start < end .*\[0, 0\)"):
        hopeless[grid](x, out, 100)


def test_candidates_failing_at_launch_are_left_out(tmp_path):
    """A candidate that compiles but faults when it runs (here: an unmasked load past the end)
    is left out like a refused one, and the arrays are put back as the call found them."""
    kernel = tessel.jit("""
@kernel(num_warps=4)
def double(x: ptr[f32], out: ptr[f32], BLOCK: constexpr = 64):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    store(out + offs, 2.0 * load(x + offs) + load(out + offs))
""", interpret=True)
    tuned = tessel.autotune(kernel, configs=[{"BLOCK": 128}, {"BLOCK": 50}], key=["x"],
                            warmup=0, rep=1, restore=["out"], cache_dir=str(tmp_path))
    tuned._timer = Clock([1.0])
    x, out = arrays(100)
    tuned[lambda meta: (tessel.cdiv(100, meta["BLOCK"]),)](x, out)
    assert list(tuned._best.values()) == [{"BLOCK": 50}]
    assert [c for c, _ in tuned.refused] == [{"BLOCK": 128}]
    assert isinstance(tuned.refused[0][1], tessel.LaunchError)
    np.testing.assert_allclose(out, 1.0 + 2 * x, atol=1e-5)


def test_a_new_key_tunes_again(tmp_path):
    tuned, clock = tuner(tmp_path, [1.0, 2.0, 3.0, 3.0, 2.0, 1.0])
    for n in (100, 1000):
        x, out = arrays(n)
        tuned[grid](x, out, n)
    assert tuned.tunings == 2
    assert tuned._best == {(100,): {"BLOCK": 32}, (1000,): {"BLOCK": 128}}


def test_array_keys_are_shapes_and_dtypes(tmp_path):
    tuned, _ = tuner(tmp_path, [1.0, 2.0, 3.0], key=["x"])
    x, out = arrays(50)
    tuned[grid](x, out, 50)
    assert list(tuned._best) == [(((50,), "float32"),)]


def test_budget_stops_timing_new_candidates(tmp_path):
    tuned, clock = tuner(tmp_path, [5.0, 1.0, 1.0], budget_s=0.0)
    x, out = arrays(64)
    tuned[grid](x, out, 64)
    assert clock.runs == 1 and tuned._best[(64,)] == {"BLOCK": 32}


def test_candidates_and_call_constexprs_combine(tmp_path):
    """A constexpr outside the candidates is given at the call, as to the kernel itself."""
    tuned, _ = tuner(tmp_path, [2.0, 1.0, 3.0], restore=["out"])
    x, out = arrays(90)
    tuned[grid](x, out, 90, SCALE=3)
    np.testing.assert_allclose(out, 1.0 + 3 * x, atol=1e-5)
    # What was compiled ahead of the trials is what they launch: the call's SCALE with each
    # candidate, nothing else.
    compiled = sorted((k.constants["BLOCK"], k.constants["SCALE"])
                      for k in tuned.kernel._specializations.values())
    assert compiled == [(32, 3), (64, 3), (128, 3)]


def test_none_pointers_specialise_the_candidates(tmp_path):
    """A pointer passed None compiles each candidate without it, nothing else."""
    kernel = tessel.jit(OPTIONAL_SUMS, interpret=True)
    tuned = tessel.autotune(kernel, configs=CONFIGS, key=["n"], warmup=0, rep=1,
                            cache_dir=str(tmp_path))
    tuned._timer = Clock([2.0, 1.0, 3.0])
    x, _ = arrays(200)
    y = np.zeros_like(x)
    tuned[grid](x, y, None, 200)
    np.testing.assert_array_equal(y, 2 * x)
    compiled = sorted((k.constants["BLOCK"], k.params[2].none)
                      for k in tuned.kernel._specializations.values())
    assert compiled == [(32, True), (64, True), (128, True)]


def test_timed_on_the_interpreter_without_a_clock(tmp_path):
    kernel = tessel.jit(ACCUMULATE, interpret=True)
    tuned = tessel.autotune(configs=CONFIGS[:2], key=["n"], rep=1, cache_dir=str(tmp_path),
                            restore=["out"])(kernel)
    x, out = arrays(40)
    tuned[grid](x, out, 40)
    assert tuned._best[(40,)] in CONFIGS[:2]
    np.testing.assert_allclose(out, 1.0 + x, atol=1e-5)


def test_candidates_of_any_constexpr_value_are_cached(tmp_path):
    """A candidate holding a type (not a JSON value) is kept on disk by its index."""
    kernel = tessel.jit(ACCUMULATE.replace("SCALE: constexpr = 1", "T: constexpr = f32").replace(
        "SCALE * load(x + offs, mask=m)", "load(x + offs, mask=m).to(T)"), interpret=True)
    configs = [{"BLOCK": 32, "T": tessel.f32}, {"BLOCK": 64, "T": tessel.f32}]
    for times, tunings in (([2.0, 1.0], 1), ([], 0)):
        tuned = tessel.autotune(kernel, configs=configs, key=["n"], warmup=0, rep=1,
                                cache_dir=str(tmp_path))
        tuned._timer = Clock(times)
        x, out = arrays(70)
        tuned[grid](x, out, 70)
        assert tuned.tunings == tunings and tuned._best[(70,)] == configs[1]


ERRORS = {
    "not jit": (lambda: tessel.autotune(lambda: None, configs=CONFIGS), TypeError,
                r"tessel.autotune: expected a tessel.jit kernel, got function"),
    "no candidates": (lambda: tessel.autotune(tessel.jit(ACCUMULATE, interpret=True), configs=[]),
                      ValueError, r"configs must hold at least one candidate"),
    "unknown constexpr": (lambda: tessel.autotune(tessel.jit(ACCUMULATE, interpret=True),
                                                  configs=[{"BLOCK": 32, "TILE": 2}]),
                          ValueError, r"kernel 'accumulate' has no constexpr parameter 'TILE' "
                                      r"\(its constexprs: BLOCK, SCALE\)"),
    "runtime value as a candidate": (lambda: tessel.autotune(
        tessel.jit(ACCUMULATE, interpret=True), configs=[{"n": 3}]), ValueError,
        r"has no constexpr parameter 'n'"),
    "unknown key": (lambda: tessel.autotune(tessel.jit(ACCUMULATE, interpret=True),
                                            configs=CONFIGS, key=["m"]),
                    ValueError, r"kernel 'accumulate' has no parameter 'm'"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors(case):
    run, error, message = ERRORS[case]
    with pytest.raises(error, match=message):
        run()


def test_margin_keeps_the_first_candidate(tmp_path):
    """With margin=0.1 the first candidate (a known default) stays unless another measures more
    than 10 % faster."""
    close, _ = tuner(tmp_path / "a", [1.0, 0.95, 2.0], restore=["out"], margin=0.1)
    x, out = arrays(64)
    close[grid](x, out, 64)
    assert close._best[(64,)] == {"BLOCK": 32}
    clear, _ = tuner(tmp_path / "b", [1.0, 0.85, 2.0], restore=["out"], margin=0.1)
    clear[grid](x, out, 64)
    assert clear._best[(64,)] == {"BLOCK": 64}


def test_long_runs_are_measured_once(tmp_path):
    """`rep` measurements per candidate, fewer once they add up to LONG_S (long runs are not
    noisy, and a first call must stay bounded)."""
    short, short_clock = tuner(tmp_path / "a", [0.001] * 9, rep=3, restore=["out"])
    x, out = arrays(64)
    short[grid](x, out, 64)
    assert short_clock.runs == 9
    long, long_clock = tuner(tmp_path / "b", [1.0, 2.0, 3.0], rep=3, restore=["out"])
    long[grid](x, out, 64)
    assert long_clock.runs == 3 and long._best[(64,)] == {"BLOCK": 32}
