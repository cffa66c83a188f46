"""Bad launch and compile arguments: each raises the right exception, naming the kernel and the
parameter, before anything runs."""

import numpy as np
import pytest

import kernels_for_tests as kt
import tessel

F32 = np.zeros(16, np.float32)


@pytest.fixture(scope="module")
def add():
    return tessel.compile(kt.ADD, constants={"BLOCK": 16})


@pytest.fixture(scope="module")
def mixed():
    return tessel.compile(kt.MIXED, constants={"BLOCK": 8})


LAUNCH_ERRORS = {
    "missing": (lambda k: k[1](F32, F32, F32), TypeError,
                r"kernel 'add': missing argument\(s\) 'n'"),
    "surplus": (lambda k: k[1](F32, F32, F32, 16, 5), TypeError,
                r"kernel 'add': too many positional arguments"),
    "unknown keyword": (lambda k: k[1](F32, F32, F32, n=16, m=3), TypeError,
                        r"kernel 'add': got an unexpected keyword argument 'm'"),
    "twice": (lambda k: k[1](F32, F32, F32, 16, n=16), TypeError,
              r"kernel 'add': multiple values for argument 'n'"),
    "fixed constexpr": (lambda k: k[1](F32, F32, F32, 16, BLOCK=32), TypeError,
                        r"kernel 'add': 'BLOCK' is a constexpr fixed at compile time "
                        r"\(BLOCK=16\)"),
    "dtype": (lambda k: k[1](F32, F32.astype(np.float64), F32, 16), TypeError,
              r"kernel 'add', argument 'y': ptr\[f32\] takes a float32 array, got float64"),
    "list for a pointer": (lambda k: k[1](F32, [0.0] * 16, F32, 16), TypeError,
                           r"argument 'y': ptr\[f32\] takes a NumPy array, got list"),
    "array for a scalar": (lambda k: k[1](F32, F32, F32, F32), TypeError,
                           r"argument 'n': i32 takes a scalar, got an array"),
    "float for an int": (lambda k: k[1](F32, F32, F32, 16.0), TypeError,
                         r"argument 'n': i32 takes an integer, got float"),
    "i32 overflow": (lambda k: k[1](F32, F32, F32, 2 ** 31), ValueError,
                     r"argument 'n': 2147483648 does not fit in i32"),
    "strided": (lambda k: k[1](F32, F32, np.zeros(32, np.float32)[::2], 16), ValueError,
                r"argument 'out': the array must be C-contiguous"),
    "overlap": (lambda k: k[1](F32[:8], F32[4:12], np.zeros(8, np.float32), 8), ValueError,
                r"kernel 'add': arguments 'x' and 'y' overlap in memory"),
    "no grid": (lambda k: k(F32, F32, F32, 16), TypeError,
                r"kernel 'add' needs a grid: kernel\[grid\]\(\*args\)"),
    "negative grid": (lambda k: k[-1](F32, F32, F32, 16), ValueError,
                      r"kernel 'add': the grid must be 1 to 3 non-negative integers"),
    "4-d grid": (lambda k: k[1, 1, 1, 1](F32, F32, F32, 16), ValueError,
                 r"the grid must be 1 to 3"),
    "float grid": (lambda k: k[1.5](F32, F32, F32, 16), ValueError, r"the grid must be"),
}


@pytest.mark.parametrize("case", list(LAUNCH_ERRORS))
def test_launch_errors(add, case):
    call, error, message = LAUNCH_ERRORS[case]
    with pytest.raises(error, match=message):
        call(add)


MIXED_ERRORS = {
    "bf16 takes float32": (dict(w=np.zeros(8, np.float16)), TypeError,
                           r"argument 'w': ptr\[bf16\] takes a float32 array, got float16 "
                           r"\(NumPy has no bfloat16: pass float32, rounded to bf16\)"),
    "i1 array": (dict(flags=np.zeros(8, np.int8)), TypeError,
                 r"argument 'flags': ptr\[i1\] takes a bool array, got int8"),
    "i1 scalar": (dict(on=2), TypeError, r"argument 'on': i1 takes a bool, got 2"),
    "f32 scalar": (dict(s="0.5"), TypeError, r"argument 's': f32 takes a real number, got str"),
    "i64 overflow": (dict(big=2 ** 63), ValueError, r"argument 'big': \d+ does not fit in i64"),
}


@pytest.mark.parametrize("case", list(MIXED_ERRORS))
def test_element_type_errors(mixed, case):
    args = dict(a=np.zeros(8, np.float16), w=np.zeros(8, np.float32), b=np.zeros(8, np.float32),
                c=np.zeros(8, np.int64), flags=np.zeros(8, np.bool_), n=8, big=1, s=0.5, on=True)
    change, error, message = MIXED_ERRORS[case]
    args.update(change)
    with pytest.raises(error, match=r"kernel 'mixed', " + message):
        mixed[1](**args)


def test_jit_argument_errors():
    add = tessel.jit(kt.ADD)
    with pytest.raises(TypeError, match=r"kernel 'add': missing argument\(s\) 'n'"):
        add[1](F32, F32, F32, BLOCK=16)
    src = kt.ADD.replace("BLOCK: constexpr = 1024", "BLOCK: constexpr")
    with pytest.raises(TypeError, match="kernel 'add': missing constexpr 'BLOCK' "
                                        r"\(it has no default\)"):
        tessel.jit(src)[1](F32, F32, F32, 16)
    with pytest.raises(TypeError, match="num_warps= is for functions"):
        tessel.jit(kt.ADD, num_warps=8)


CONSTANT_ERRORS = {
    "unknown": ({"FOO": 1}, r"kernel 'add' has no constexpr parameter 'FOO' \(constexprs: BLOCK\)"),
    "runtime parameter": ({"n": 1}, r"kernel 'add': 'n' is a runtime parameter, not a constexpr"),
    "bad value": ({"BLOCK": [16]}, r"constant 'BLOCK': expected an int, float, bool or element "
                                   r"type"),
}


@pytest.mark.parametrize("case", list(CONSTANT_ERRORS))
def test_constant_errors(case):
    constants, message = CONSTANT_ERRORS[case]
    with pytest.raises(TypeError, match=message):
        tessel.compile(kt.ADD, constants=constants)


def test_bad_constant_value_is_a_compile_error():
    # A number is a valid constant; the kernel's use of it decides.
    with pytest.raises(tessel.CompileError, match=r"<string>:3:46: error: arange's end must be a "
                                                  r"constexpr integer, got constexpr float 0.5"):
        tessel.compile(kt.ADD, constants={"BLOCK": 0.5})


def test_source_type():
    with pytest.raises(TypeError, match="expected DSL source, a .tsl path or a function, got int"):
        tessel.compile(42)
