//===- FrontendBindings.cpp - The DSL parser, without MLIR ----------------===//
//
// signatures() needs only the lexer and parser, which are plain C++: it is in
// every build of the extension, so a runtime-only package (no MLIR) still
// sorts launch arguments into constexprs and runtime values and computes the
// keys of precompiled bundles.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "Frontend/Lexer.h"
#include "Frontend/Parser.h"

#include <memory>
#include <sstream>

namespace py = pybind11;
using namespace tessel;

namespace {

/// The kernels of a source with their parameters, from the parser alone:
/// [(kernel, [(param, is_constexpr, has_default)])].
py::list signatures(const std::string &source, const std::string &filename) {
  SourceManager sm(filename, source);
  std::ostringstream printed;
  DiagnosticEngine diag(sm, printed);
  Lexer lexer(sm, diag);
  Parser parser(lexer, diag);
  std::unique_ptr<ast::Module> module = parser.parseModule();
  if (diag.hasErrors())
    python::raiseCompileError(diag, printed.str());
  py::list kernels;
  for (const auto &f : module->getFunctions()) {
    const ast::Decorator *decorator = f->getDecorator();
    if (!decorator || decorator->name != "kernel")
      continue;
    py::list params;
    for (const ast::Param &p : f->getParams()) {
      const auto *ann = ast::rtti::dyn_cast<ast::Name>(p.annotation.get());
      params.append(py::make_tuple(p.name, ann && ann->getName() == "constexpr",
                                   p.defaultValue != nullptr));
    }
    kernels.append(py::make_tuple(f->getName(), params));
  }
  return kernels;
}

} // namespace

void tessel::python::raiseCompileError(const DiagnosticEngine &diag,
                                       const std::string &text) {
  py::list diagnostics;
  for (const Diagnostic &d : diag.getDiagnostics())
    diagnostics.append(diagnosticTuple(severityName(d.severity),
                                       diag.getSource(d.loc.file).getFilename(),
                                       d.loc.line, d.loc.col, d.message));
  raiseCompileError(text, diagnostics);
}

void tessel::python::bindFrontend(py::module_ &m) {
  m.def("signatures", &signatures, py::arg("source"), py::arg("filename"),
        "[(kernel, [(param, is_constexpr, has_default)])] from the parser; "
        "raises tessel.CompileError on a syntax error.");
}
