//===- tessel-opt.cpp - the opt-style driver for tessel IR ----------------===//
//
// Parses, verifies, transforms and prints tessel IR with every tessel pass
// and the upstream passes a tessel pipeline uses.
//
//===----------------------------------------------------------------------===//

#include "common/ToolOptions.h"
#include "tessel/Passes.h"
#include "tessel/TesselDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  // libLLVM's options behind --help-hidden; MlirOptMain registers MLIR's
  // (passes, pipelines, printing) after this, so --help lists those.
  tessel::hideUnrelatedOptions({});
  mlir::DialectRegistry registry;
  registry.insert<mlir::tessel::TesselDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect>();
  mlir::registerTransformsPasses();
  mlir::tessel::registerTesselPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tessel optimizer driver\n", registry));
}
