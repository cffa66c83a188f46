//===- TileBuilder.h - Terse construction of tile arithmetic ----*- C++ -*-===//
//
// Passes that expand high-level tessel ops into elementwise and reduction ops
// build many small expressions; this keeps them readable.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRANSFORMS_TILEBUILDER_H
#define TESSEL_TRANSFORMS_TILEBUILDER_H

#include "tessel/TesselDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir::tessel {

class TileBuilder {
public:
  TileBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Type f32() { return b.getF32Type(); }
  TileType tile(ArrayRef<int64_t> shape, Type elt) {
    return TileType::get(shape, elt);
  }
  OpBuilder &builder() { return b; }
  Location location() { return loc; }
  /// A tile of `shape` filled with the f32 `value`.
  Value splat(ArrayRef<int64_t> shape, double value);
  /// A tile of `shape` filled with the scalar `value`.
  Value splat(ArrayRef<int64_t> shape, Value value) {
    return SplatOp::create(b, loc, tile(shape, value.getType()), value);
  }
  Value binary(BinaryKind kind, Value lhs, Value rhs) {
    return BinaryOp::create(b, loc, kind, lhs, rhs);
  }
  Value add(Value x, Value y) { return binary(BinaryKind::add, x, y); }
  Value sub(Value x, Value y) { return binary(BinaryKind::sub, x, y); }
  Value mul(Value x, Value y) { return binary(BinaryKind::mul, x, y); }
  Value div(Value x, Value y) { return binary(BinaryKind::div, x, y); }
  Value max(Value x, Value y) { return binary(BinaryKind::max, x, y); }
  /// 2^x with subnormal results flushed to zero (see tessel.unary's `ftz`).
  Value exp2Ftz(Value x) {
    return UnaryOp::create(b, loc, UnaryKind::exp2, x, /*ftz=*/true);
  }
  Value log(Value x) { return UnaryOp::create(b, loc, UnaryKind::log, x); }
  /// Elementwise x == value (f32 constant).
  Value equals(Value x, double value);
  Value select(Value cond, Value x, Value y) {
    return SelectOp::create(b, loc, cond, x, y);
  }
  /// Reduces a 2-D tile along its columns.
  Value rowReduce(ReduceKind kind, Value x);
  /// Broadcasts a per-row tile (R) to R x `cols`.
  Value rowBroadcast(Value x, int64_t cols);
  Value cast(Value x, Type elt);
  Value dot(Value a, Value bv, Value acc) {
    return DotOp::create(b, loc, acc.getType(), a, bv, acc);
  }

private:
  OpBuilder &b;
  Location loc;
};

} // namespace mlir::tessel

#endif // TESSEL_TRANSFORMS_TILEBUILDER_H
