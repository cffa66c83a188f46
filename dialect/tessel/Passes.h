//===- Passes.h - tessel passes ---------------------------------*- C++ -*-===//

#ifndef TESSEL_PASSES_H
#define TESSEL_PASSES_H

#include "mlir/Pass/Pass.h"
#include "tessel/TesselDialect.h"

namespace mlir::tessel {
#define GEN_PASS_DECL
#include "tessel/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

#endif // TESSEL_PASSES_H
