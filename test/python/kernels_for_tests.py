"""DSL sources shared by the tests, and a kernel written as a Python function for @tessel.jit."""

import tessel
from tessel.language import constexpr, f32, i32, ptr

ADD = """\
@kernel(num_warps=4)
def add(x: ptr[f32], y: ptr[f32], out: ptr[f32], n: i32, BLOCK: constexpr = 1024):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    store(out + offs, load(x + offs, mask=m, other=0.0) + load(y + offs, mask=m, other=0.0), mask=m)
"""

# Every element type and scalar kind: b[i] = a[i] * s + w[i] (bf16), c[i] += big,
# flags[i] = on and i is even, for i < n.
MIXED = """\
@kernel(num_warps=1)
def mixed(a: ptr[f16], w: ptr[bf16], b: ptr[bf16], c: ptr[i64], flags: ptr[i1],
          n: i32, big: i64, s: f32, on: i1, BLOCK: constexpr = 16):
    offs = arange(0, BLOCK)
    m = offs < n
    store(b + offs, load(a + offs, mask=m).to(f32) * s + load(w + offs, mask=m).to(f32), mask=m)
    store(c + offs, load(c + offs, mask=m) + big, mask=m)
    store(flags + offs, (offs % 2 == 0) & on, mask=m)
"""

# y = 2x for the first n elements of x; with a `sums` buffer also each program's sum of them (a
# pointer the caller may leave out: None compiles the kernel without it).
OPTIONAL_SUMS = """\
@func
def write_sum(sums, v):
    if sums is not None:
        store(sums + program_id(0), sum(v, axis=0))

@kernel(num_warps=4)
def double(x: ptr[f32], y: ptr[f32], sums: ptr[f32], n: i32, BLOCK: constexpr = 64):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    m = offs < n
    v = load(x + offs, mask=m, other=0.0)
    store(y + offs, v * 2.0, mask=m)
    write_sum(sums, v)
"""

TWO_KERNELS = """\
@kernel(num_warps=1)
def first(x: ptr[f32]):
    store(x, 1.0)

@kernel(num_warps=1)
def second(x: ptr[f32]):
    store(x, 2.0)
"""

# Two errors, on lines 3 and 4.
BROKEN = """\
@kernel(num_warps=4)
def broken(x: ptr[f32], n: i32):
    y = load(x) + undefined_name
    store(x + arange(0, 8), dot(n, n))
"""

# A pass (lower-stream-k), not the front end, rejects the second stream_k at line 12.
TWO_STREAM_K = """\
@kernel(num_warps=4)
def two(x: ptr[f32], n: i32):
    def body(unit, begin, end):
        return softmax_state(16, 16)

    def epilogue(unit, st):
        out, lse = softmax_finalize(st)
        store(x + unit, sum(lse, axis=0))

    stream_k(units=n, iters=4, body=body, merge=softmax_merge, epilogue=epilogue)

    stream_k(units=n, iters=4, body=body, merge=softmax_merge, epilogue=epilogue)
"""

# Row program_id(0) of a matrix with `stride` elements per row: out = 2 x on its first n columns.
# Hints: x 16-byte aligned, n a multiple of 8, stride of 4.
HINTED = """\
@kernel(num_warps=1)
def hinted(x: ptr[f32], out: ptr[f32], n: i32, stride: i64, BLOCK: constexpr = 16):
    offs = program_id(0) * multiple_of(stride, 4) + arange(0, BLOCK)
    m = arange(0, BLOCK) < multiple_of(n, 8)
    store(out + offs, load(multiple_of(x, 16) + offs, mask=m, other=0.0) * 2.0, mask=m)
"""


@tessel.jit
def scale_add(x: ptr[f32], out: ptr[f32], n: i32, alpha: f32, BLOCK: constexpr = 64):
    """out += alpha * x (the docstring is not DSL code: the decorator drops it)."""
    # DSL built-ins, not Python names: hence the noqa comments.
    offs = program_id(0) * BLOCK + arange(0, BLOCK)  # noqa: F821
    m = offs < n
    y = alpha * load(x + offs, mask=m) + load(out + offs, mask=m)  # noqa: F821
    store(out + offs, y, mask=m)  # noqa: F821


@tessel.jit(num_warps=8)
def broken_function(x: ptr[f32], n: i32):
    store(x, load(x) + not_defined)  # noqa: F821
