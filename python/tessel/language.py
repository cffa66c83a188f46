"""Names of the DSL's types, for Python code that holds Tessel kernels.

A kernel written as a Python function for `@tessel.jit` is never executed by Python, but Python
evaluates its annotations and defaults when it runs the `def`; these objects make that work:

    from tessel.language import ptr, f32, i32, constexpr

    @tessel.jit
    def add(x: ptr[f32], y: ptr[f32], out: ptr[f32], n: i32, BLOCK: constexpr = 1024):
        ...

The scalar types also name element types in constants: `tessel.compile(src, constants={"DTYPE":
tessel.bf16})` (the same as the string "bf16").
"""


class dtype:
    """A scalar type of the DSL; str() is its DSL name."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"tessel.{self.name}"

    def __eq__(self, other):
        return isinstance(other, (dtype, str)) and str(other) == self.name

    def __hash__(self):
        return hash(self.name)


i1 = dtype("i1")
i32 = dtype("i32")
i64 = dtype("i64")
f16 = dtype("f16")
bf16 = dtype("bf16")
f32 = dtype("f32")


class _PointerTypes:
    """`ptr[T]`."""

    def __getitem__(self, elem):
        return f"ptr[{elem}]"

    def __repr__(self):
        return "tessel.ptr"


ptr = _PointerTypes()


class constexpr:
    """Annotation of a compile-time parameter."""
