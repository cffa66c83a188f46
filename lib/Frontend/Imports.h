//===- Imports.h - Helpers imported from other DSL files --------*- C++ -*-===//
//
// `from common import aligned_rows` makes the @func `aligned_rows` of
// common.tsl, in the importing file's directory, callable as if it were
// defined there; its body calls what its own file defines or imports.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_FRONTEND_IMPORTS_H
#define TESSEL_FRONTEND_IMPORTS_H

#include "Frontend/AST.h"
#include "Frontend/Diagnostics.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel {

/// Parses the files a module imports from, recursively, each once, and binds
/// the imported helpers in the modules that import them. It owns the parsed
/// modules: keep it alive while the importing module is compiled.
class ImportResolver {
public:
  explicit ImportResolver(DiagnosticEngine &diag) : diag(diag) {}

  /// Resolves the imports of `module`, the file `diag` numbers `file`.
  /// False after an error (reported to `diag`).
  bool resolve(ast::Module &module, unsigned file);

private:
  bool resolveImports(ast::Module &module, unsigned file);
  /// The module of the file at `path` (parsed and resolved on first use),
  /// or null after an error reported at `importLoc`.
  ast::Module *load(const std::string &path, const std::string &shown,
                    SourceLoc importLoc);

  DiagnosticEngine &diag;
  std::vector<std::unique_ptr<ast::Module>> modules;
  std::map<std::string, ast::Module *> byPath;
  /// The files being resolved, importer first: a cycle's evidence.
  std::vector<std::string> active;
};

} // namespace tessel

#endif // TESSEL_FRONTEND_IMPORTS_H
