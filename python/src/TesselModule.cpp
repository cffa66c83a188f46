//===- TesselModule.cpp - The tessel._tessel extension module -------------===//
//
// Low-level bindings; the documented API is the pure-Python package `tessel`
// around them.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

namespace py = pybind11;

namespace tessel::python {

void raise(const char *name, const py::tuple &args) {
  py::object cls = py::module_::import("tessel.errors").attr(name);
  PyErr_SetObject(cls.ptr(), cls(*args).ptr());
  throw py::error_already_set();
}

} // namespace tessel::python

PYBIND11_MODULE(_tessel, m) {
  m.doc() = "Tessel's compiler, CPU interpreter and CUDA runtime (low level; "
            "use the `tessel` package)";
  m.attr("version") = TESSEL_VERSION;
  m.attr("has_runtime") = py::bool_(TESSEL_PY_RUNTIME);
  tessel::python::bindFrontend(m);
  tessel::python::bindCompiler(m);
#if TESSEL_PY_RUNTIME
  tessel::python::bindRuntime(m);
#endif
}
