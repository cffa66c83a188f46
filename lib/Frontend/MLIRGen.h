//===- MLIRGen.h - Emit tessel IR from the DSL syntax tree ------*- C++ -*-===//
//
// The one place of the front end that knows both the AST and MLIR: it type
// checks, evaluates constexprs, inlines helpers and emits tessel IR where
// every op carries the file:line:col of the DSL construct it came from.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_FRONTEND_MLIRGEN_H
#define TESSEL_FRONTEND_MLIRGEN_H

#include "Frontend/AST.h"
#include "Frontend/Diagnostics.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <optional>
#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace tessel {

struct GenOptions {
  /// Only this kernel (all kernels when empty).
  std::string kernel;
  /// `-D NAME=VALUE`: values for constexpr parameters, in DSL syntax
  /// (`64`, `0.5`, `True`, `bf16`).
  std::map<std::string, std::string> defines;
};

/// Emits a module with one func.func per kernel. Errors go to `diag`; the
/// result is null when there was any.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context,
                                          const ast::Module &module,
                                          DiagnosticEngine &diag,
                                          const GenOptions &options);

/// Lexes, parses and emits one source buffer.
mlir::OwningOpRef<mlir::ModuleOp> compileSource(mlir::MLIRContext &context,
                                                const SourceManager &source,
                                                DiagnosticEngine &diag,
                                                const GenOptions &options);

/// Registers the dialects the front end emits.
void loadFrontendDialects(mlir::MLIRContext &context);

/// While it lives, the context's diagnostics (a pass's error about a kernel,
/// with its notes) go to `diag` as errors at the DSL's file:line:col they
/// carry, each message after `prefix`.
class DSLDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  DSLDiagnosticHandler(mlir::MLIRContext &context, DiagnosticEngine &diag,
                       std::string prefix = "");
};

} // namespace tessel

#endif // TESSEL_FRONTEND_MLIRGEN_H
