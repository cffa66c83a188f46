//===- TestAxisInfo.cpp - Report the AxisInfo analysis --------------------===//

#include "Analysis/AxisInfo.h"
#include "tessel/Passes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELTESTAXISINFO
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {
struct TestAxisInfoPass
    : tessel::impl::TesselTestAxisInfoBase<TestAxisInfoPass> {
  void runOnOperation() override {
    ModuleAxisInfo info(getOperation());
    getOperation()->walk([&](Operation *op) {
      if (!op->hasAttr("test.axis"))
        return;
      for (Value result : op->getResults()) {
        std::string text;
        llvm::raw_string_ostream os(text);
        info.get(result).print(os);
        op->emitRemark() << text;
      }
    });
  }
};
} // namespace
