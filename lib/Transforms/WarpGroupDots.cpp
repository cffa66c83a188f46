//===- WarpGroupDots.cpp - What moving a warpgroup dot must respect -------===//

#include "WarpGroupDots.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

Operation *mlir::tessel::bufferOf(Value memdesc) {
  while (Operation *def = memdesc.getDefiningOp()) {
    if (isa<LocalAllocOp>(def))
      return def;
    memdesc = getViewedMemDesc(def);
    if (!memdesc)
      return nullptr;
  }
  return nullptr;
}

SmallVector<Operation *> mlir::tessel::accessesOf(Value memdesc) {
  SmallVector<Operation *> accesses;
  SmallVector<Value> views = {memdesc};
  while (!views.empty())
    for (Operation *user : views.pop_back_val().getUsers()) {
      if (getViewedMemDesc(user))
        views.push_back(user->getResult(0));
      else
        accesses.push_back(user);
    }
  return accesses;
}

bool mlir::tessel::regionsOnlyCompute(Operation *op) {
  if (!op->getNumRegions())
    return true;
  if (!isMemoryEffectFree(op))
    return false;
  WalkResult inner = op->walk([](Operation *nested) {
    return isa<WarpGroupDotOp, WarpGroupDotWaitOp>(nested)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return !inner.wasInterrupted();
}
