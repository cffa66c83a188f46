//===- Conversions.cpp - Types and value conversions for the IR emitter
//-----===//
//
// Scalar and tile types, constants, element-type promotion, broadcasting
// and conversions between element types.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Generator.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <set>
#include <sstream>

using namespace mlir;
using namespace ::tessel;
namespace tsl = mlir::tessel;

// Types and conversions
//===----------------------------------------------------------------------===//

std::optional<Type> Generator::scalarTypeByName(const std::string &n) const {
  Builder b(&context);
  if (n == "i1")
    return Type(b.getI1Type());
  if (n == "i32")
    return Type(b.getI32Type());
  if (n == "i64")
    return Type(b.getI64Type());
  if (n == "f16")
    return Type(b.getF16Type());
  if (n == "bf16")
    return Type(b.getBF16Type());
  if (n == "f32")
    return Type(b.getF32Type());
  return std::nullopt;
}

std::optional<Type> Generator::parseTypeExpr(const ast::Expr &expr) {
  if (auto *name = ast::rtti::dyn_cast<ast::Name>(&expr)) {
    if (const TValue *bound = env->lookup(name->getName()))
      if (bound->kind == TValue::Kind::Type)
        return bound->type;
    return scalarTypeByName(name->getName());
  }
  auto *sub = ast::rtti::dyn_cast<ast::Subscript>(&expr);
  if (!sub || sub->getIndices().size() != 1)
    return std::nullopt;
  auto *base = ast::rtti::dyn_cast<ast::Name>(sub->getValue());
  if (!base || base->getName() != "ptr")
    return std::nullopt;
  std::optional<Type> pointee = parseTypeExpr(*sub->getIndices()[0]);
  if (!pointee || isa<tsl::PtrType>(*pointee))
    return std::nullopt;
  return Type(tsl::PtrType::get(&context, *pointee));
}

Type Generator::shaped(ArrayRef<int64_t> shape, Type elementType) {
  if (shape.empty())
    return elementType;
  return tsl::TileType::get(shape, elementType);
}

bool Generator::checkTileSize(SourceLoc l, ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d > kMaxTileElements || (n *= d) > kMaxTileElements) {
      std::string dims;
      for (int64_t e : shape)
        dims += (dims.empty() ? "" : "x") + std::to_string(e);
      error(l, "a tile of shape " + dims +
                   " is too large; tiles hold at most " +
                   std::to_string(kMaxTileElements) + " elements");
      return false;
    }
  return true;
}

Type Generator::promote(Type a, Type b) {
  if (a == b)
    return a;
  if (isFloat(a) && isInt(b))
    return a;
  if (isInt(a) && isFloat(b))
    return b;
  if (isFloat(a) && isFloat(b))
    return builder.getF32Type();
  unsigned width =
      std::max(a.getIntOrFloatBitWidth(), b.getIntOrFloatBitWidth());
  return builder.getIntegerType(width);
}

Value Generator::materialize(SourceLoc l, const Const &c, Type type) {
  Location at = loc(l);
  if (isFloat(type))
    return arith::ConstantOp::create(builder, at, type,
                                     builder.getFloatAttr(type, c.asDouble()));
  if (c.kind == Const::Kind::Float) {
    error(l, "cannot use the float constant " + std::to_string(c.f) + " as " +
                 describe(type));
    return {};
  }
  return arith::ConstantOp::create(builder, at, type,
                                   builder.getIntegerAttr(type, c.i));
}

Type Generator::naturalType(const Const &c) {
  switch (c.kind) {
  case Const::Kind::Int:
    return c.i == int32_t(c.i) ? builder.getI32Type() : builder.getI64Type();
  case Const::Kind::Float:
    return builder.getF32Type();
  case Const::Kind::Bool:
    return builder.getI1Type();
  case Const::Kind::None:
    break;
  }
  return {};
}

Value Generator::materialize(SourceLoc l, const Const &c) {
  if (Type type = naturalType(c))
    return materialize(l, c, type);
  error(l, "None has no value here");
  return {};
}

Value Generator::toValue(SourceLoc l, const TValue &v, Type hint) {
  if (v.isValue())
    return v.value;
  if (v.isConst()) {
    if (hint && v.constant.isNumber()) {
      Type elt = getElementTypeOrSelf(hint);
      if (v.constant.kind == Const::Kind::Float && isInt(elt))
        elt = builder.getF32Type();
      if (isFloat(elt) || isInt(elt))
        return materialize(l, v.constant, elt);
    }
    return materialize(l, v.constant);
  }
  if (!v.isInvalid())
    error(l, "expected a value, got " + describe(v));
  return {};
}

Value Generator::convert(SourceLoc l, Value v, Type elt) {
  Type from = getElementTypeOrSelf(v.getType());
  if (from == elt)
    return v;
  Location at = loc(l);
  if (auto tile = dyn_cast<tsl::TileType>(v.getType()))
    return tsl::CastOp::create(builder, at, tile.withElementType(elt), v);
  if (isFloat(from) && isFloat(elt)) {
    if (from.getIntOrFloatBitWidth() < elt.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(builder, at, elt, v);
    if (from.getIntOrFloatBitWidth() > elt.getIntOrFloatBitWidth())
      return arith::TruncFOp::create(builder, at, elt, v);
    // f16 <-> bf16 goes through f32.
    Value wide = arith::ExtFOp::create(builder, at, builder.getF32Type(), v);
    return arith::TruncFOp::create(builder, at, elt, wide);
  }
  if (isInt(from) && isFloat(elt)) {
    if (from.isInteger(1))
      return arith::UIToFPOp::create(builder, at, elt, v);
    return arith::SIToFPOp::create(builder, at, elt, v);
  }
  if (isFloat(from) && isInt(elt))
    return arith::FPToSIOp::create(builder, at, elt, v);
  if (from.getIntOrFloatBitWidth() > elt.getIntOrFloatBitWidth())
    return arith::TruncIOp::create(builder, at, elt, v);
  // Booleans widen to 0/1, like Python's True + 1.
  if (from.isInteger(1))
    return arith::ExtUIOp::create(builder, at, elt, v);
  return arith::ExtSIOp::create(builder, at, elt, v);
}

std::optional<SmallVector<int64_t>>
Generator::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  // NumPy rules: align trailing dimensions; 1 stretches.
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = std::max(da, db);
  }
  return out;
}

Value Generator::broadcastTo(SourceLoc l, Value v, ArrayRef<int64_t> shape) {
  ArrayRef<int64_t> from = tsl::getShapeOrEmpty(v.getType());
  if (from == shape)
    return v;
  Location at = loc(l);
  Type elt = getElementTypeOrSelf(v.getType());
  if (from.empty())
    return tsl::SplatOp::create(builder, at, shaped(shape, elt), v);
  SmallVector<int64_t> cur(from);
  while (cur.size() < shape.size()) {
    cur.insert(cur.begin(), 1);
    v = tsl::ExpandDimsOp::create(builder, at, shaped(cur, elt), v,
                                  builder.getI32IntegerAttr(0));
  }
  if (ArrayRef<int64_t>(cur) != shape)
    v = tsl::BroadcastOp::create(builder, at, shaped(shape, elt), v);
  return v;
}

bool Generator::unify(SourceLoc l, TValue lhs, TValue rhs, Value &a, Value &b,
                      const char *what) {
  if (!lhs.isNumeric() || !rhs.isNumeric()) {
    error(l, std::string("unsupported operands for '") + what +
                 "': " + describe(lhs) + " and " + describe(rhs));
    return false;
  }
  Type elt;
  if (lhs.isValue() && rhs.isValue())
    elt = promote(getElementTypeOrSelf(lhs.value.getType()),
                  getElementTypeOrSelf(rhs.value.getType()));
  else if (lhs.isConst() && rhs.isConst()) // where(c, 1, 2.0)
    elt = promote(naturalType(lhs.constant), naturalType(rhs.constant));
  else {
    const TValue &val = lhs.isValue() ? lhs : rhs;
    const TValue &cst = lhs.isValue() ? rhs : lhs;
    elt = getElementTypeOrSelf(val.value.getType());
    // A float literal meeting an integer value makes the operation float.
    if (cst.constant.kind == Const::Kind::Float && isInt(elt))
      elt = builder.getF32Type();
    // An integer literal keeps the value's integer type unless it does not
    // fit (i64) or the value is a boolean (i32).
    else if (cst.constant.kind == Const::Kind::Int && isInt(elt))
      elt = promote(elt, naturalType(cst.constant));
  }
  a = toValue(l, lhs, elt);
  b = toValue(l, rhs, elt);
  if (!a || !b)
    return false;
  auto shape = broadcastShapes(tsl::getShapeOrEmpty(a.getType()),
                               tsl::getShapeOrEmpty(b.getType()));
  if (!shape) {
    error(l, std::string("cannot broadcast ") + describe(a.getType()) +
                 " and " + describe(b.getType()) + " in '" + what + "'");
    return false;
  }
  if (!checkTileSize(l, *shape))
    return false;
  a = broadcastTo(l, convert(l, a, elt), *shape);
  b = broadcastTo(l, convert(l, b, elt), *shape);
  return true;
}
