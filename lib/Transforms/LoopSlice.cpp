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

/// Whether `op` loads from an array that is not among `writtenBases`.
static bool readsUnwritten(Operation *op,
                           std::optional<ArrayRef<Value>> writtenBases) {
  auto load = dyn_cast<LoadOp>(op);
  if (!load || !writtenBases)
    return false;
  Value base = baseArgument(load.getPtr());
  return base && !llvm::is_contained(*writtenBases, base);
}

bool mlir::tessel::collectSlice(Value v, scf::ForOp loop,
                                SetVector<Operation *> &slice,
                                std::optional<ArrayRef<Value>> writtenBases) {
  if (v == loop.getInductionVar() ||
      !loop.getBody()->getParent()->isAncestor(v.getParentRegion()))
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody() || def->getNumRegions() ||
      !(isMemoryEffectFree(def) || readsUnwritten(def, writtenBases)))
    return false;
  if (slice.contains(def))
    return true;
  for (Value operand : def->getOperands())
    if (!collectSlice(operand, loop, slice, writtenBases))
      return false;
  slice.insert(def);
  return true;
}

std::optional<DenseSet<Value>>
mlir::tessel::writtenArrays(func::FuncOp kernel) {
  DenseSet<Value> written;
  WalkResult result = kernel.walk([&](Operation *op) {
    if (!isa<StoreOp, AtomicAddOp>(op))
      return WalkResult::advance();
    Value base = baseArgument(op->getOperand(0));
    if (!base)
      return WalkResult::interrupt();
    written.insert(base);
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return std::nullopt;
  return written;
}

std::optional<int32_t> mlir::tessel::expandedAxis(Operation *vector) {
  std::optional<int32_t> axis;
  for (Operation *user : vector->getUsers()) {
    auto expand = dyn_cast<ExpandDimsOp>(user);
    if (!expand || (axis && *axis != int32_t(expand.getAxis())))
      return std::nullopt;
    axis = expand.getAxis();
  }
  return axis;
}
