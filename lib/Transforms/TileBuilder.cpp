//===- TileBuilder.cpp - Terse construction of tile arithmetic ------------===//

#include "TileBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::tessel;

Value TileBuilder::splat(ArrayRef<int64_t> shape, double value) {
  return splat(shape, arith::ConstantOp::create(b, loc, f32(),
                                                b.getF32FloatAttr(value)));
}

Value TileBuilder::equals(Value x, double value) {
  auto type = llvm::cast<TileType>(x.getType());
  return CmpOp::create(b, loc, type.withElementType(b.getI1Type()),
                       CmpPredicate::eq, x, splat(type.getShape(), value));
}

Value TileBuilder::rowReduce(ReduceKind kind, Value x) {
  auto type = llvm::cast<TileType>(x.getType());
  return ReduceOp::create(
      b, loc, tile({type.getDimSize(0)}, type.getElementType()), kind, x, 1u);
}

Value TileBuilder::rowBroadcast(Value x, int64_t cols) {
  auto type = llvm::cast<TileType>(x.getType());
  int64_t rows = type.getDimSize(0);
  Value col = ExpandDimsOp::create(
      b, loc, tile({rows, 1}, type.getElementType()), x, 1u);
  return BroadcastOp::create(b, loc, tile({rows, cols}, type.getElementType()),
                             col);
}

Value TileBuilder::cast(Value x, Type elt) {
  auto type = llvm::cast<TileType>(x.getType());
  if (type.getElementType() == elt)
    return x;
  return CastOp::create(b, loc, type.withElementType(elt), x);
}
