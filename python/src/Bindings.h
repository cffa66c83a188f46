//===- Bindings.h - Parts of the tessel._tessel extension -------*- C++ -*-===//
//
// The extension is assembled from parts that depend on what the build has;
// none needs MLIR: the compiler and the interpreter are a library it opens at
// import (CompilerBindings.cpp), so a GPU machine without MLIR builds the
// extension and compiles with a compiler library built elsewhere.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_PYTHON_BINDINGS_H
#define TESSEL_PYTHON_BINDINGS_H

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#if TESSEL_PY_RUNTIME
#include "tessel/Runtime.h"
#endif

namespace tessel {
class DiagnosticEngine;
} // namespace tessel

namespace tessel::python {

/// Raises the exception class `name` of the pure-Python module tessel.errors
/// with `args`, so that C++ and Python raise the same documented types.
[[noreturn]] void raise(const char *name, const pybind11::tuple &args);
[[noreturn]] inline void raise(const char *name, const std::string &message) {
  raise(name, pybind11::make_tuple(message));
}

/// One entry of tessel.CompileError's diagnostics.
inline pybind11::tuple diagnosticTuple(const std::string &severity,
                                       const std::string &file, unsigned line,
                                       unsigned col,
                                       const std::string &message) {
  return pybind11::make_tuple(severity, file, line, col, message);
}

/// Raises tessel.CompileError(text, diagnostics): `text` their printed form,
/// `diagnostics` a list of diagnosticTuple()s.
[[noreturn]] inline void raiseCompileError(const std::string &text,
                                           const pybind11::list &diagnostics) {
  raise("CompileError", pybind11::make_tuple(text, diagnostics));
}

/// raiseCompileError from the diagnostics of `diag`.
[[noreturn]] void raiseCompileError(const DiagnosticEngine &diag,
                                    const std::string &text);

/// A kernel parameter's multiple_of hint as Python sees it: the int, or None
/// for no hint (0).
inline pybind11::object multipleOfObject(int64_t multipleOf) {
  return multipleOf ? pybind11::object(pybind11::int_(multipleOf))
                    : pybind11::object(pybind11::none());
}

/// signatures(): the parser alone (no MLIR), in every build.
void bindFrontend(pybind11::module_ &m);

/// compile(), compile_bundle() and the Program class (the CPU interpreter)
/// from the compiler library, where it is found (has_compiler says so).
void bindCompiler(pybind11::module_ &m);
#if TESSEL_PY_RUNTIME
/// The Runtime, Module and Kernel classes (CUDA Driver API).
void bindRuntime(pybind11::module_ &m);
/// The launch fast path: Runtime.try_launch, Runtime.prepare and the
/// PreparedLaunch class, set_tensor_adapter().
void bindFastLaunch(pybind11::module_ &m, pybind11::class_<Runtime> &runtime);
/// Python values -> the kernel's arguments, as Runtime.launch takes them.
std::vector<Arg> toArgs(const Kernel &kernel, const pybind11::sequence &values);
/// Raises tessel.<error> with the message of a failed `status`.
void check(const Status &status, const char *error = "DeviceError");
#endif

} // namespace tessel::python

#endif // TESSEL_PYTHON_BINDINGS_H
