//===- LoopSlice.h - What a loop's memory accesses depend on ----*- C++ -*-===//
//
// tessel-pipeline issues a load iterations ahead of the loop body, and
// tessel-lower-tensor-descs keeps a block load for the tensor memory
// accelerator only where tessel-pipeline can do that: both ask which array
// an access reaches and what its addresses are computed from.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRANSFORMS_LOOPSLICE_H
#define TESSEL_TRANSFORMS_LOOPSLICE_H

#include "tessel/TesselDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tessel {

/// The kernel argument a pointer (tile) is an offset of, or null when it
/// cannot be told.
Value baseArgument(Value ptr);

/// Adds to `slice` the ops of `loop`'s body that `v` depends on, in an order
/// that defines before use; false when `v` depends on anything but the
/// induction variable, loop invariants and pure region-free ops. Given the
/// arrays the loop writes, `v` may also depend on loads of other arrays (a
/// page number read from a block table), which then join the slice.
bool collectSlice(Value v, scf::ForOp loop, SetVector<Operation *> &slice,
                  std::optional<ArrayRef<Value>> writtenBases = std::nullopt);

/// The arrays (kernel arguments) `kernel` stores to or atomically adds to;
/// none when one of those writes reaches an array that cannot be told. Reads
/// of an array it never writes may move anywhere in the kernel.
std::optional<DenseSet<Value>> writtenArrays(func::FuncOp kernel);

/// The axis of the expand_dims ops that are the only users of `vector` (a
/// 1-D load's result), all on that one axis: tessel-pipeline carries such a
/// vector through its stages as the 1 x N (N x 1) tile they make. None when
/// it has no users or others.
std::optional<int32_t> expandedAxis(Operation *vector);

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_LOOPSLICE_H
