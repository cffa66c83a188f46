"""Helpers imported from another DSL file (`from MODULE import NAME`): a kernel runs with them, a
changed helper file recompiles the kernels that import it, and errors inside an imported file
name that file."""

import numpy as np
import pytest

import tessel

HELPERS = """\
@func
def combine(a, b):
    return a * SCALE + b
"""

KERNEL = """\
from helpers import combine

@kernel(num_warps=1)
def k(x: ptr[f32], y: ptr[f32], out: ptr[f32], n: i32, BLOCK: constexpr = 16):
    offs = arange(0, BLOCK)
    m = offs < n
    store(out + offs, combine(load(x + offs, mask=m), load(y + offs, mask=m)), mask=m)
"""

# A helper that runs stream_k: called twice, the second stream_k is a pass's error at the line
# of the helper.
STREAM_K_HELPERS = """\
@func
def run_units(n, body, epilogue):
    stream_k(units=n, iters=4, body=body, merge=softmax_merge, epilogue=epilogue)
"""

STREAM_K_TWICE = """\
from sk import run_units

@kernel(num_warps=4)
def two(x: ptr[f32], n: i32):
    def epilogue(unit, st):
        out, lse = softmax_finalize(st)
        store(x + unit * 16 + arange(0, 16), lse)

    def body(unit, begin, end):
        return softmax_state(16, 8)

    run_units(n, body, epilogue)
    run_units(n, body, epilogue)
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(path))
    return path


def _run(path, n=11):
    x = np.arange(16, dtype=np.float32)
    y = np.full(16, 0.5, np.float32)
    out = np.zeros(16, np.float32)
    kernel = tessel.compile(path, interpret=True)
    kernel[(1,)](x, y, out, n)
    return kernel, x, y, out


def test_imported_helper_runs_and_its_changes_recompile(tmp_path, cache_dir):
    (tmp_path / "helpers.tsl").write_text(HELPERS.replace("SCALE", "2.0"))
    path = tmp_path / "kernel.tsl"
    path.write_text(KERNEL)
    first, x, y, out = _run(str(path))
    assert not first.cache_hit
    np.testing.assert_array_equal(out[:11], x[:11] * 2.0 + y[:11])
    assert (out[11:] == 0).all()
    assert _run(str(path))[0].cache_hit
    # Only the imported file changes: the kernel's entry must not be reused.
    (tmp_path / "helpers.tsl").write_text(HELPERS.replace("SCALE", "3.0"))
    again, x, y, out = _run(str(path))
    assert not again.cache_hit
    np.testing.assert_array_equal(out[:11], x[:11] * 3.0 + y[:11])


def test_source_text_imports_from_the_working_directory(tmp_path, cache_dir, monkeypatch):
    (tmp_path / "helpers.tsl").write_text(HELPERS.replace("SCALE", "4.0"))
    monkeypatch.chdir(tmp_path)
    _, x, y, out = _run(KERNEL)
    np.testing.assert_array_equal(out[:11], x[:11] * 4.0 + y[:11])


def test_error_in_an_imported_helper_names_its_file(tmp_path, cache_dir):
    helpers = tmp_path / "helpers.tsl"
    helpers.write_text(HELPERS.replace("SCALE", "undefined_scale"))
    path = tmp_path / "kernel.tsl"
    path.write_text(KERNEL)
    with pytest.raises(tessel.CompileError) as info:
        tessel.compile(str(path), interpret=True)
    error, note = info.value.diagnostics[:2]
    assert (error.severity, error.file, error.line, error.col) == ("error", str(helpers), 3, 16)
    assert "unknown name 'undefined_scale'" in error.message
    assert (note.severity, note.file, note.line) == ("note", str(path), 7)
    assert f"{helpers}:3:16: error: unknown name 'undefined_scale'" in str(info.value)


def test_pass_error_in_an_imported_helper_names_its_file(tmp_path, cache_dir):
    helpers = tmp_path / "sk.tsl"
    helpers.write_text(STREAM_K_HELPERS)
    path = tmp_path / "two.tsl"
    path.write_text(STREAM_K_TWICE)
    with pytest.raises(tessel.CompileError) as info:
        tessel.compile(str(path), interpret=True)
    error = info.value.diagnostics[0]
    assert (error.file, error.line) == (str(helpers), 3)
    assert "is the second stream_k of kernel 'two'" in error.message


def test_missing_module_is_a_compile_error(tmp_path, cache_dir):
    path = tmp_path / "kernel.tsl"
    path.write_text(KERNEL)
    with pytest.raises(tessel.CompileError, match=r"kernel.tsl:1:6: error: cannot import from "
                                                  r"'helpers.tsl'"):
        tessel.compile(str(path), interpret=True)
