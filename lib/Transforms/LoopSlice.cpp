//===- LoopSlice.cpp - What a loop's memory accesses depend on ------------===//

#include "LoopSlice.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::tessel;

Value mlir::tessel::baseArgument(Value ptr) {
  while (Operation *def = ptr.getDefiningOp()) {
    if (isa<AddPtrOp, SplatOp, BroadcastOp, ExpandDimsOp, ConvertLayoutOp>(def))
      ptr = def->getOperand(0);
    else
      return {};
  }
  return isa<BlockArgument>(ptr) ? ptr : Value();
}

bool mlir::tessel::collectSlice(Value v, scf::ForOp loop,
                                SetVector<Operation *> &slice) {
  if (v == loop.getInductionVar() ||
      !loop.getBody()->getParent()->isAncestor(v.getParentRegion()))
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody() || def->getNumRegions() ||
      !isMemoryEffectFree(def))
    return false;
  if (slice.contains(def))
    return true;
  for (Value operand : def->getOperands())
    if (!collectSlice(operand, loop, slice))
      return false;
  slice.insert(def);
  return true;
}
