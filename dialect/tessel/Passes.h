//===- Passes.h - tessel passes ---------------------------------*- C++ -*-===//

#ifndef TESSEL_PASSES_H
#define TESSEL_PASSES_H

#include "mlir/Pass/Pass.h"
#include "tessel/TesselDialect.h"
#include "llvm/Support/CommandLine.h"

namespace mlir::tessel {
/// The values of a command-line option choosing a StreamKStrategy, spelt
/// as stringifyStreamKStrategy spells them.
inline llvm::cl::ValuesClass streamKStrategyValues() {
  return llvm::cl::ValuesClass(
      {{stringifyStreamKStrategy(StreamKStrategy::Persistent),
        int(StreamKStrategy::Persistent),
        "stream-K: a persistent grid, the host program merges"},
       {stringifyStreamKStrategy(StreamKStrategy::SplitK),
        int(StreamKStrategy::SplitK),
        "split-K: a split kernel, then a combine kernel"}});
}

#define GEN_PASS_DECL
#include "tessel/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

#endif // TESSEL_PASSES_H
