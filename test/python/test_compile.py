"""tessel.compile and tessel.jit: compiling, launching on the interpreter, in-place semantics,
errors."""

import inspect
import json
import os

import numpy as np
import pytest

import kernels_for_tests as kt
import tessel
from tessel.interpreter import from_bf16_bits, to_bf16_bits


@pytest.fixture
def add_path(tmp_path):
    path = tmp_path / "add.tsl"
    path.write_text(kt.ADD)
    return str(path)


def _xy(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def test_version_and_build():
    assert tessel.__version__ == tessel._tessel.version
    assert tessel._tessel.has_compiler
    assert os.path.isfile(os.path.join(tessel.KERNELS_DIR, "attention.tsl"))


def test_compile_and_launch(add_path):
    k = tessel.compile(add_path, constants={"BLOCK": 32})
    assert k.name == "add"
    assert [p.type for p in k.params] == ["ptr[f32]", "ptr[f32]", "ptr[f32]", "i32"]
    assert k.constants == {"BLOCK": 32}
    assert (k.num_warps, k.persistent, k.interpret) == (4, False, True)
    assert "func.func @add" in k.ir
    n = 100  # ragged: 4 programs of 32, the last one masked
    x, y = _xy(n)
    out = np.zeros(n, np.float32)
    k[(tessel.cdiv(n, 32),)](x, y, out, n)
    np.testing.assert_array_equal(out, x + y)


def test_keywords_and_grid_callable(add_path):
    k = tessel.compile(add_path, constants={"BLOCK": 16})
    n = 37
    x, y = _xy(n)
    out = np.zeros(n, np.float32)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tessel.cdiv(meta["n"], meta["BLOCK"]),)

    k[grid](x, y, out=out, n=n)
    np.testing.assert_array_equal(out, x + y)
    assert seen["n"] == n and seen["BLOCK"] == 16 and seen["out"] is out


def test_source_string_and_element_type_constant():
    k = tessel.compile(kt.MIXED, constants={"BLOCK": 8})
    assert k.name == "mixed"
    assert [p.type for p in k.params][:5] == ["ptr[f16]", "ptr[bf16]", "ptr[bf16]", "ptr[i64]",
                                              "ptr[i1]"]
    src = kt.ADD.replace("ptr[f32]", "ptr[DT]").replace(
        "BLOCK: constexpr = 1024", "BLOCK: constexpr = 1024, DT: constexpr = f32")
    assert tessel.compile(src, constants={"DT": tessel.bf16}).constants["DT"] == "bf16"
    assert tessel.compile(src, constants={"DT": np.float16}).constants["DT"] == "f16"


def test_every_element_type_in_place():
    k = tessel.compile(kt.MIXED, constants={"BLOCK": 8})
    n = 6
    a = np.linspace(-2, 2, 8).astype(np.float16)
    w = np.full(8, 0.1, np.float32)        # 0.1 is not a bf16 value
    w.flags.writeable = False              # inputs may be read-only
    b = np.full(8, 0.1, np.float32)
    c = np.arange(8, dtype=np.int64)
    flags = np.ones(8, np.bool_)
    k[1](a, w, b, c, flags, n, 2 ** 40, 0.5, True)
    w_bf16 = from_bf16_bits(to_bf16_bits(w))
    want_b = from_bf16_bits(to_bf16_bits(a[:n].astype(np.float32) * 0.5 + w_bf16[:n]))
    np.testing.assert_array_equal(b[:n], want_b)
    # Unwritten bf16 elements keep their float32 value; bf16 inputs are not rounded in place.
    np.testing.assert_array_equal(b[n:], np.float32(0.1))
    np.testing.assert_array_equal(w, np.float32(0.1))
    np.testing.assert_array_equal(c, np.arange(8) + np.where(np.arange(8) < n, 2 ** 40, 0))
    np.testing.assert_array_equal(flags, [True, False, True, False, True, False, True, True])


def test_same_array_twice_is_one_buffer(add_path):
    k = tessel.compile(add_path, constants={"BLOCK": 16})
    x = np.arange(20, dtype=np.float32)
    k[2](x, x, x, 20)
    np.testing.assert_array_equal(x, 2 * np.arange(20))


def test_write_to_read_only_array_is_refused(add_path):
    k = tessel.compile(add_path, constants={"BLOCK": 16})
    x, y = _xy(16)
    out = np.zeros(16, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="kernel 'add', argument 'out': the kernel wrote to a "
                                         "read-only array"):
        k[1](x, y, out, 16)


def test_jit_specialises_per_constexpr(add_path):
    add = tessel.jit(add_path)
    assert add.name == "add"
    n = 50
    x, y = _xy(n)
    for block in (16, 32, 16):
        out = np.zeros(n, np.float32)
        add[lambda m: (tessel.cdiv(m["n"], m["BLOCK"]),)](x, y, out, n, BLOCK=block)
        np.testing.assert_array_equal(out, x + y)
    assert add.specialize(BLOCK=16) is add.specialize(BLOCK=16)
    out = np.zeros(n, np.float32)
    add[1](x, y, out, n, 64)  # a constexpr by position
    np.testing.assert_array_equal(out, x + y)
    out = np.zeros(n, np.float32)
    add[1](x, y, out, n)  # the default, BLOCK = 1024
    np.testing.assert_array_equal(out, x + y)


def test_jit_function():
    n = 100
    x = np.arange(n, dtype=np.float32)
    out = np.ones(n, np.float32)
    kt.scale_add[lambda m: (tessel.cdiv(m["n"], m["BLOCK"]),)](x, out, n, 2.0, BLOCK=32)
    np.testing.assert_array_equal(out, 2 * x + 1)
    assert kt.scale_add.__name__ == "scale_add" and "alpha" in kt.scale_add.__doc__
    assert kt.scale_add.specialize(BLOCK=32).num_warps == 4


def test_jit_function_errors_point_into_the_python_file():
    lines, first = inspect.getsourcelines(kt.broken_function.__wrapped__)
    line = first + next(i for i, text in enumerate(lines) if "not_defined" in text)
    with pytest.raises(tessel.CompileError) as info:
        kt.broken_function[1](np.zeros(1, np.float32), 1)
    d = info.value.diagnostics[0]
    assert (d.file, d.line) == (kt.__file__, line)
    assert "unknown name 'not_defined'" in d.message


def _decode_case(k, B, H, Nq, Nk, D, seed):
    """run(programs): kernel k's decode (lean_attention, K = V) of fresh random inputs into fresh
    outputs, returning O; and the reference O."""
    import reference as ref
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, H, Nq, D)).astype(np.float16)
    kv = rng.standard_normal((B, H, Nk, D)).astype(np.float16)
    want, _ = ref.decode_attention(q, kv, kv, np.float32(0.25))
    strides = lambda x: (x.shape[1] * x.shape[2] * D, x.shape[2] * D, D)  # noqa: E731

    def run(programs):
        o = np.zeros(q.shape, np.float16)
        k(q, kv, kv, o, np.zeros((B, H, Nq), np.float32), *strides(q), *strides(kv),
          *strides(kv), B, H, H, Nq, Nk, 0.25, programs=programs)
        return o
    return run, want


def test_persistent_kernel():
    k = tessel.compile(os.path.join(tessel.KERNELS_DIR, "lean_attention.tsl"),
                       constants={"D": 16, "BLOCK_M": 4, "BLOCK_N": 8}, kernel="lean_attention")
    assert k.persistent
    run, want = _decode_case(k, 1, 2, 3, 29, 16, seed=1)
    for programs in (None, 1, 5):
        np.testing.assert_allclose(run(programs), want, atol=2e-3)
    with pytest.raises(TypeError, match="persistent"):
        k[1]
    with pytest.raises(ValueError, match="programs must be a positive integer"):
        run(0)


def test_persistent_kernel_in_clusters():
    """A kernel in thread-block clusters (CLUSTER): the interpreter runs whole clusters (the
    default program count rounded up to a multiple of its size) and refuses a count that is not
    one, naming the kernel."""
    k = tessel.compile(os.path.join(tessel.KERNELS_DIR, "lean_attention.tsl"),
                       constants={"D": 16, "BLOCK_M": 4, "BLOCK_N": 8, "CLUSTER": 3},
                       kernel="lean_attention")
    assert k.persistent and k.cluster == 3 and k.resident_clusters is None
    run, want = _decode_case(k, 2, 2, 1, 29, 16, seed=2)
    for programs in (None, 3, 12):
        np.testing.assert_allclose(run(programs), want, atol=2e-3)
    with pytest.raises(ValueError, match="kernel 'lean_attention' runs in thread-block clusters "
                                         "of 3 programs: programs must be a multiple of 3, got 4"):
        run(4)


def test_split_k_binding():
    """_tessel.compile(..., stream_k="split-k"): the kernel and its combine kernel, run as a pair."""
    import reference as ref
    path = os.path.join(tessel.KERNELS_DIR, "lean_attention.tsl")
    with open(path) as f:
        source = f.read()
    defines = {"D": "16", "BLOCK_M": "4", "BLOCK_N": "8"}
    with pytest.raises(ValueError, match="stream_k must be 'persistent' or 'split-k', got 'splitk'"):
        tessel._tessel.compile(source, path, "lean_attention", defines, stream_k="splitk")
    default = tessel._tessel.Program(tessel._tessel.compile(source, path, "lean_attention", defines), "p")
    assert [(k["name"], k["then"]) for k in default.kernels()] == [("lean_attention", None)]
    program = tessel._tessel.Program(
        tessel._tessel.compile(source, path, "lean_attention", defines, stream_k="split-k"), "s")
    kernels = {k["name"]: k for k in program.kernels()}
    assert kernels["lean_attention"]["then"] == "lean_attention__combine"
    assert kernels["lean_attention__combine"]["then"] is None
    assert kernels["lean_attention"]["workspace"] == kernels["lean_attention__combine"]["workspace"]

    rng = np.random.default_rng(2)
    B, H, Nq, Nk, D = 1, 2, 3, 29, 16
    q = rng.standard_normal((B, H, Nq, D)).astype(np.float16)
    kv = rng.standard_normal((B, H, Nk, D)).astype(np.float16)
    want, _ = ref.decode_attention(q, kv, kv, np.float32(0.25))
    strides = lambda x: [x.shape[1] * x.shape[2] * D, x.shape[2] * D, D]  # noqa: E731
    for programs in (1, 5, 9):                       # S = 1, 2 and 4 = iters chunks per unit
        o = np.zeros(q.shape, np.float16)
        lse = np.zeros((B, H, Nq), np.float32)
        args = [q, kv, kv, o, lse, *strides(q), *strides(kv), *strides(kv), B, H, H, Nq, Nk, 0.25]
        program.run("lean_attention", args, (programs, 1, 1))
        np.testing.assert_allclose(o, want, atol=2e-3)
    with pytest.raises(tessel.LaunchError, match="runs after kernel 'lean_attention'"):
        program.run("lean_attention__combine", args, (5, 1, 1))
    bundle = json.loads(tessel._tessel.compile_bundle(source, path, "lean_attention", defines,
                                                      stream_k="split-k"))
    assert bundle["version"] == 5  # "then", multiple_of hints and "workspace_zeroing"
    assert [(k["name"], k["launch"].get("then")) for k in bundle["kernels"]] == \
        [("lean_attention", "lean_attention__combine"), ("lean_attention__combine", None)]
    assert {k["launch"]["workspace_zeroing"] for k in bundle["kernels"]} == {"per_size"}


def test_launch_error_names_the_source(add_path):
    k = tessel.compile(add_path, constants={"BLOCK": 16})
    x, y = _xy(10)
    out = np.zeros(10, np.float32)
    with pytest.raises(tessel.LaunchError, match=r"out-of-bounds load .* at .*add\.tsl:5:\d+ "
                                                 r"\(program \(0, 0, 0\) of kernel 'add'\)"):
        k[1](x, y, out, 16)  # n beyond the arrays


def test_compile_error_has_file_line_col(tmp_path):
    path = tmp_path / "broken.tsl"
    path.write_text(kt.BROKEN)
    with pytest.raises(tessel.CompileError) as info:
        tessel.compile(str(path))
    text = str(info.value)
    assert f"{path}:3:19: error: unknown name 'undefined_name'" in text
    assert "    y = load(x) + undefined_name\n                  ^" in text
    errors = [d for d in info.value.diagnostics if d.severity == "error"]
    assert len(errors) >= 2 and errors[1].line == 4
    assert (errors[0].file, errors[0].line, errors[0].col) == (str(path), 3, 19)
    with pytest.raises(tessel.CompileError, match=r"<string>:3:19: error"):
        tessel.compile(kt.BROKEN)
    with pytest.raises(tessel.CompileError):
        tessel.jit(kt.BROKEN)[1](np.zeros(1, np.float32), 1)


def test_pass_error_is_a_compile_error():
    with pytest.raises(tessel.CompileError) as info:
        tessel.compile(kt.TWO_STREAM_K)
    assert str(info.value).startswith("<string>:12:5: error: 'tessel.stream_k' op is the second "
                                      "stream_k of kernel 'two'; a kernel holds at most one\n")
    assert [d.severity for d in info.value.diagnostics] == ["error"]


def test_syntax_error_is_a_compile_error():
    with pytest.raises(tessel.CompileError, match=r"<string>:2:\d+: error"):
        tessel.compile("@kernel(num_warps=4)\ndef k(x: ptr[f32]:\n    pass\n")


def test_kernel_selection(tmp_path):
    with pytest.raises(ValueError, match="holds kernels first, second: pass kernel=NAME"):
        tessel.compile(kt.TWO_KERNELS)
    with pytest.raises(ValueError, match=r"no kernel named 'third' \(kernels: first, second\)"):
        tessel.compile(kt.TWO_KERNELS, kernel="third")
    k = tessel.compile(kt.TWO_KERNELS, kernel="second")
    x = np.zeros(1, np.float32)
    k[1](x)
    assert x[0] == 2.0
    with pytest.raises(FileNotFoundError):
        tessel.compile(str(tmp_path / "missing.tsl"))


def test_interpret_mode_selection(monkeypatch, add_path):
    monkeypatch.setenv("TESSEL_INTERPRET", "1")
    assert tessel.compile(add_path, interpret=True).interpret
    with pytest.raises(tessel.DeviceError, match="no GPU to launch on"):
        tessel.compile(add_path, interpret=False)


def test_stream_k_option_is_checked(add_path):
    with pytest.raises(ValueError, match="stream_k must be one of persistent, split-k, got 'x'"):
        tessel.compile(add_path, stream_k="x")
    with pytest.raises(ValueError, match="stream_k must be one of"):
        tessel.jit(add_path, stream_k="splitk")


def test_non_finite_constant_defaults():
    """A constexpr whose default is infinite or NaN reaches Kernel.constants as a float (the
    compiler library hands constants over as JSON, which has no such numbers)."""
    k = tessel.compile('@kernel(num_warps=1)\n'
                       'def fill(x: ptr[f32], LO: constexpr = float("-inf"), '
                       'HI: constexpr = float("inf"), NAN: constexpr = float("nan")):\n'
                       '    store(x + arange(0, 4), full((4,), LO, f32))\n', interpret=True)
    assert k.constants["LO"] == float("-inf") and k.constants["HI"] == float("inf")
    assert isinstance(k.constants["NAN"], float) and k.constants["NAN"] != k.constants["NAN"]
    x = np.zeros(4, np.float32)
    k[(1,)](x)
    np.testing.assert_array_equal(x, -np.inf)


def test_exp_ftz_flushes_subnormal_results():
    """exp(x, ftz=True) gives 0 where the result is below 2^-126 (the interpreter's reference
    for the GPU's ex2.approx.ftz); plain exp keeps such results, and normal ones agree."""
    k = tessel.compile('@kernel(num_warps=1)\n'
                       'def e(x: ptr[f32], flushed: ptr[f32], kept: ptr[f32]):\n'
                       '    offs = arange(0, 4)\n'
                       '    v = load(x + offs)\n'
                       '    store(flushed + offs, exp(v, ftz=True))\n'
                       '    store(kept + offs, exp(v, ftz=False))\n', interpret=True)
    x = np.array([-100.0, -80.0, 0.0, 2.0], np.float32)   # e^-100 is subnormal in f32
    flushed, kept = np.empty(4, np.float32), np.empty(4, np.float32)
    k[(1,)](x, flushed, kept)
    expected = np.exp(x.astype(np.float64))
    assert flushed[0] == 0 and 0 < kept[0] < 2.0 ** -126     # a subnormal, kept
    np.testing.assert_allclose(kept[0], expected[0], rtol=0.05)  # of subnormal precision
    np.testing.assert_allclose(kept[1:], expected[1:], rtol=1e-6)
    np.testing.assert_allclose(flushed[1:], expected[1:], rtol=1e-6)


def test_clock_reads_a_monotonic_counter():
    """clock() on the interpreter: nanoseconds of a monotonic clock, each call its own reading
    (the GPU's is the multiprocessor's cycle counter); a loop between two readings shows."""
    k = tessel.compile('@kernel(num_warps=1)\n'
                       'def timed(x: ptr[f32], t: ptr[i64], n: i32):\n'
                       '    start = clock()\n'
                       '    acc = zeros((32,), f32)\n'
                       '    for i in range(0, n):\n'
                       '        acc += load(x + arange(0, 32))\n'
                       '    store(x + arange(0, 32), acc)\n'
                       '    stop = clock()\n'
                       '    store(t, start)\n'
                       '    store(t + 1, stop)\n', interpret=True)
    x = np.ones(32, np.float32)
    t = np.zeros(2, np.int64)
    k[(1,)](x, t, 200)
    np.testing.assert_array_equal(x, 200.0)
    assert t[0] > 0
    assert t[1] > t[0]
