"""The exceptions of the tessel package (the C++ extension raises these same classes).

Bad arguments are TypeError (wrong kind or dtype) or ValueError (wrong shape, size or value), raised
before anything is launched; their messages name the kernel or op and the parameter.
"""

import collections

Diagnostic = collections.namedtuple("Diagnostic", "severity file line col message")
Diagnostic.__doc__ = """One compiler message: severity ('error', 'warning', 'note'), file,
1-based line and column (0 when the message has no location) and the message text."""


class TesselError(Exception):
    """Base class of the errors tessel raises itself."""


class CompileError(TesselError):
    """The DSL source does not compile.

    str(error) is the compiler's report, clang style (FILE:LINE:COL: error: MESSAGE, the source line
    and a caret), one entry per problem; `diagnostics` holds the same as Diagnostic tuples.
    """

    def __init__(self, text, diagnostics=()):
        super().__init__(text)
        self.text = text
        self.diagnostics = [Diagnostic(*d) for d in diagnostics]

    def __str__(self):
        return self.text.rstrip("\n")


class LaunchError(TesselError, RuntimeError):
    """A launched kernel failed: on the interpreter, an out-of-bounds access, a division by zero
    or another fault, reported with the op's file:line:col and the program; on a GPU, the
    driver's error naming the kernel."""


class DeviceError(TesselError, RuntimeError):
    """The CUDA runtime failed: no driver or device, a bundle that does not load, memory."""


class CommunicationError(TesselError, RuntimeError):
    """A collective of tessel.distributed failed: a rank of the process group failed, exited, or
    did not reach it within the group's timeout.  The message names the op and the rank."""


class BundleNotFoundError(TesselError, LookupError):
    """A package without the compiler (a runtime-only build) has no precompiled bundle for the
    kernel specialisation asked for (see tessel.precompile and $TESSEL_BUNDLE_DIR)."""
