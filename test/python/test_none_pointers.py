"""Pointer parameters compiled as None (docs/dsl.md, "Optional buffers") on the interpreter: a call
that passes None gets a specialisation without the buffer, one that passes a buffer the other,
each checked against NumPy; the errors name the kernel and the argument (or file:line:col)."""

import numpy as np
import pytest

import kernels_for_tests as kt
import tessel


def _inputs(n, seed):
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    return x, np.zeros_like(x)


def _block_sums(x, block):
    return np.array([x[i:i + block].sum(dtype=np.float64) for i in range(0, len(x), block)])


def test_none_and_buffer_calls_take_their_own_specialisations():
    double = tessel.jit(kt.OPTIONAL_SUMS, interpret=True)
    n = 200                                    # ragged: the last of 4 programs is partial
    for seed, with_sums in enumerate((False, True, False, True)):
        x, y = _inputs(n, seed)
        sums = np.full(4, np.nan, np.float32) if with_sums else None
        double[4](x, y, sums, n)
        np.testing.assert_array_equal(y, 2 * x)
        if with_sums:
            np.testing.assert_allclose(sums, _block_sums(x, 64), rtol=1e-5, atol=1e-5)
    kinds = {k.params[2].none for k in double._specializations.values()}
    assert kinds == {True, False}


def test_none_by_keyword_and_compiled_directly():
    double = tessel.jit(kt.OPTIONAL_SUMS, interpret=True)
    x, y = _inputs(70, 7)
    double[2](x, y, sums=None, n=70, BLOCK=64)
    np.testing.assert_array_equal(y, 2 * x)
    kernel = tessel.compile(kt.OPTIONAL_SUMS, {"sums": None}, interpret=True)
    assert [p.none for p in kernel.params] == [False, False, True, False]
    y[:] = 0
    kernel[2](x, y, None, 70)
    np.testing.assert_array_equal(y, 2 * x)


def test_none_argument_errors():
    without = tessel.compile(kt.OPTIONAL_SUMS, {"sums": None}, interpret=True)
    with_sums = tessel.compile(kt.OPTIONAL_SUMS, interpret=True)
    x, y = _inputs(64, 1)
    with pytest.raises(TypeError, match=r"kernel 'double', argument 'sums': the kernel was "
                                        r"compiled with it None; pass None"):
        without[1](x, y, np.zeros(1, np.float32), 64)
    with pytest.raises(TypeError, match=r"kernel 'double', argument 'sums': None where the "
                                        r"kernel uses the buffer"):
        with_sums[1](x, y, None, 64)
    with pytest.raises(TypeError, match=r"kernel 'double', argument 'x': None where the kernel "
                                        r"uses the buffer"):
        with_sums[1](None, y, np.zeros(1, np.float32), 64)
    # None only for pointers: the compiler names the parameter.
    with pytest.raises(tessel.CompileError, match=r"<string>:7:54: error: 'n' given as None: "
                                                  r"only a pointer parameter can be None"):
        tessel.compile(kt.OPTIONAL_SUMS, {"n": None}, interpret=True)
    with pytest.raises(TypeError, match=r"kernel 'double': 'n' is a runtime parameter, not a "
                                        r"constexpr \(a pointer parameter may be given as None\)"):
        tessel.compile(kt.OPTIONAL_SUMS, {"n": 3}, interpret=True)
    # A buffer the body uses unguarded is an error where it is used.
    unguarded = kt.OPTIONAL_SUMS.replace("    if sums is not None:\n        store(", "    store(")
    with pytest.raises(tessel.CompileError, match=r"<string>:3:16: error: unsupported operands "
                                                  r"for '\+': None and i32(.|\n)*<string>:11:5: "
                                                  r"note: in the helper called here"):
        tessel.compile(unguarded, {"sums": None}, interpret=True)


def test_none_by_keyword_after_a_positional_constexpr():
    """Calls that give a constexpr by position and a None pointer by keyword bind by name
    every time (the fast path keeps only calls whose keywords are constexprs)."""
    source = kt.OPTIONAL_SUMS.replace(
        "def double(x: ptr[f32], y: ptr[f32], sums: ptr[f32], n: i32, BLOCK: constexpr = 64)",
        "def double(x: ptr[f32], y: ptr[f32], n: i32, BLOCK: constexpr, sums: ptr[f32])")
    assert source != kt.OPTIONAL_SUMS
    double = tessel.jit(source, interpret=True)
    for seed in range(3):
        x, y = _inputs(100, seed)
        double[2](x, y, 100, 64, sums=None)
        np.testing.assert_array_equal(y, 2 * x)
