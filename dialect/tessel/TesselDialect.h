//===- TesselDialect.h - The tessel dialect ---------------------*- C++ -*-===//
//
// Public header of the tessel dialect: the dialect, its types, attributes and
// operations.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TESSELDIALECT_H
#define TESSEL_TESSELDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tessel/TesselOpsDialect.h.inc"

#include "tessel/TesselEnums.h.inc"

#include "tessel/TesselAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessel/TesselAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "tessel/TesselOpsTypes.h.inc"

namespace mlir::tessel {
/// A pointer, or a tile of pointers.
bool isPtrLike(Type type);
/// i1, or a tile of i1.
bool isMaskLike(Type type);
/// The shape of a tile; empty for a scalar.
ArrayRef<int64_t> getShapeOrEmpty(Type type);
/// For a pointer, its pointee; for a tile of pointers, the tile of pointees.
Type getPointeeLikeType(Type ptrLike);
/// i1 with the shape (and encoding) of `type`.
Type getMaskLikeType(Type type);
/// The kernel that `kernel`'s `tessel.then` names, or null.
func::FuncOp getFollowUpKernel(func::FuncOp kernel);
/// The kernel whose `tessel.then` names `kernel`, or null.
func::FuncOp getLeadingKernel(func::FuncOp kernel);
/// The `tessel.multiple_of` hint of argument `index` of `kernel`; 0 when it
/// has none.
int64_t getMultipleOf(func::FuncOp kernel, unsigned index);
/// Whether a kernel argument of `type` may carry `tessel.multiple_of`: i32,
/// i64 and pointers, which a launch passes as integers and addresses.
bool acceptsMultipleOf(Type type);
} // namespace mlir::tessel

#define GET_OP_CLASSES
#include "tessel/TesselOps.h.inc"

#endif // TESSEL_TESSELDIALECT_H
