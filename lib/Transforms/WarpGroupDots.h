//===- WarpGroupDots.h - What moving a warpgroup dot must respect -*- C++
//-*-===//
//
// tessel-order-warpgroup-dots moves the issue of warpgroup dots and
// tessel-defer-warpgroup-waits moves their waits; both ask which buffer a
// dot reads and which ops only compute.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRANSFORMS_WARPGROUPDOTS_H
#define TESSEL_TRANSFORMS_WARPGROUPDOTS_H

#include "tessel/TesselDialect.h"

namespace mlir::tessel {

/// The local_alloc whose region `memdesc` views; null if unknown.
Operation *bufferOf(Value memdesc);

/// The ops that read or write `memdesc` or any view of it (the views left
/// out).
SmallVector<Operation *> accessesOf(Value memdesc);

/// Whether a dot's issue or wait may move past `op`'s regions: it has none,
/// or they only compute (a branch between reductions, say), with no dot or
/// wait inside.
bool regionsOnlyCompute(Operation *op);

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_WARPGROUPDOTS_H
