//===- FrontendFuzzer.cpp - libFuzzer target for the DSL front end --------===//
//
// Feeds arbitrary bytes through the lexer, parser and IR emitter. Any crash,
// sanitizer report or hang is a bug; so is a failed compile that reported no
// error, and an internal compiler error.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGen.h"

#include "mlir/IR/MLIRContext.h"

#include <cstdlib>
#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // One context for the whole run: creating one per input would dominate.
  static mlir::MLIRContext *context = [] {
    auto *c = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    tessel::loadFrontendDialects(*c);
    return c;
  }();
  tessel::SourceManager source(
      "fuzz.tsl", std::string(reinterpret_cast<const char *>(data), size));
  std::ostringstream sink;
  tessel::DiagnosticEngine diag(source, sink);
  auto module = tessel::compileSource(*context, source, diag, {});
  if (!module && !diag.hasErrors())
    std::abort();
  for (const tessel::Diagnostic &d : diag.getDiagnostics())
    if (d.message.rfind("internal compiler error", 0) == 0)
      std::abort();
  return 0;
}
