"""multiple_of hints on the interpreter: recorded on the parameters, and a launch that breaks one
raises ValueError before anything runs (integers; NumPy arrays have no device address). The GPU
path is in test_gpu_launch.py and test_runtime.py."""

import numpy as np
import pytest

import kernels_for_tests as kt
import tessel

BAD_N = (r"kernel 'hinted': argument 'n' = 12 is not a multiple of 8 "
         r"\(multiple_of in the kernel source\)")


@pytest.fixture(scope="module")
def hinted():
    return tessel.compile(kt.HINTED, interpret=True)


def _rows(stride, rows=2):
    return np.arange(rows * stride, dtype=np.float32)


def test_hints_are_on_the_parameters(hinted):
    assert [(p.name, p.multiple_of) for p in hinted.params] == [
        ("x", 16), ("out", None), ("n", 8), ("stride", 4)]


def test_a_kept_hint_runs(hinted):
    x, out = _rows(20), np.zeros(40, np.float32)
    hinted[(2,)](x, out, 8, 20)
    expected = np.zeros(40, np.float32)
    for row in range(2):
        expected[row * 20:row * 20 + 8] = 2 * x[row * 20:row * 20 + 8]
    np.testing.assert_array_equal(out, expected)
    # Zero and negative multiples keep a hint too.
    hinted[(1,)](x, out, 0, -4)


def test_a_broken_integer_hint_raises_before_the_launch(hinted):
    x, out = _rows(20), np.zeros(40, np.float32)
    with pytest.raises(ValueError, match=BAD_N):
        hinted[(2,)](x, out, 12, 20)
    with pytest.raises(ValueError, match=r"kernel 'hinted': argument 'stride' = 18 is not a "
                                         r"multiple of 4 \(multiple_of in the kernel source\)"):
        hinted[(2,)](x, out, n=8, stride=18)
    np.testing.assert_array_equal(out, 0)                   # nothing ran


def test_jit_checks_hints_too():
    add = tessel.jit(kt.HINTED, interpret=True)
    with pytest.raises(ValueError, match=BAD_N):
        add[(1,)](_rows(16), np.zeros(32, np.float32), 12, 16, BLOCK=16)


def test_arrays_have_no_address_to_check(hinted):
    # 4 bytes past a NumPy allocation (at least 16-byte aligned): on a GPU this address would
    # break the hint on x; the interpreter's buffers are not addresses.
    x = np.zeros(41, np.float32)[1:]
    assert x.ctypes.data % 16 != 0
    x[:] = 1
    out = np.zeros(40, np.float32)
    hinted[(1,)](x, out, 8, 20)
    np.testing.assert_array_equal(out[:8], 2)


def test_the_interpreter_itself_refuses_a_broken_hint(hinted):
    # Past the package's own check: the C++ interpreter stops the launch as well.
    with pytest.raises(tessel.LaunchError, match=r"parameter #2 'n' \(i32\) of kernel 'hinted' "
                                                 r"got 12, which is not a multiple of 8"):
        hinted._program.run("hinted", [_rows(20), np.zeros(40, np.float32), 12, 20], (1, 1, 1))
