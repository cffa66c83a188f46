//===- Operators.cpp - Arithmetic, comparison and unary operators
//-----------===//
//
// Constexpr folding, pointer arithmetic and the typed arithmetic of the
// DSL's operators on scalars (arith) and tiles (tessel).
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

//===----------------------------------------------------------------------===//
// Operators
//===----------------------------------------------------------------------===//

static std::optional<Const> foldBinary(ast::BinOpKind op, Const a, Const b,
                                       std::string &err) {
  using K = ast::BinOpKind;
  bool ints = a.isIntegral() && b.isIntegral();
  if (ints) {
    int64_t x = a.i, y = b.i, r = 0;
    bool overflow = false;
    switch (op) {
    case K::Add:
      overflow = __builtin_add_overflow(x, y, &r);
      break;
    case K::Sub:
      overflow = __builtin_sub_overflow(x, y, &r);
      break;
    case K::Mul:
      overflow = __builtin_mul_overflow(x, y, &r);
      break;
    case K::Div:
      if (y == 0) {
        err = "division by zero in a constexpr expression";
        return std::nullopt;
      }
      return Const::ofFloat(double(x) / double(y));
    case K::FloorDiv:
    case K::Mod:
      if (y == 0) {
        err = "division by zero in a constexpr expression";
        return std::nullopt;
      }
      // Truncation toward zero, as the generated code does at run time.
      if (y == -1) // x / -1 overflows for INT64_MIN; x % -1 is 0.
        overflow = op == K::FloorDiv && __builtin_sub_overflow(0, x, &r);
      else
        r = op == K::FloorDiv ? x / y : x % y;
      break;
    case K::Pow:
      if (y < 0)
        return Const::ofFloat(std::pow(double(x), double(y)));
      if (x == 0 || x == 1 || x == -1) {
        r = y == 0 ? 1 : (x == -1 && y % 2 == 0 ? 1 : x);
        break;
      }
      r = 1; // |x| >= 2 overflows within 63 steps.
      for (int64_t i = 0; i < y && !overflow; ++i)
        overflow = __builtin_mul_overflow(r, x, &r);
      break;
    case K::BitAnd:
      return a.kind == Const::Kind::Bool && b.kind == Const::Kind::Bool
                 ? Const::ofBool(x & y)
                 : Const::ofInt(x & y);
    case K::BitOr:
      return a.kind == Const::Kind::Bool && b.kind == Const::Kind::Bool
                 ? Const::ofBool(x | y)
                 : Const::ofInt(x | y);
    case K::BitXor:
      return Const::ofInt(x ^ y);
    case K::LShift:
    case K::RShift:
      // As Python's ints, not C's: a negative count is an error, and a
      // left shift that leaves 64 bits overflows.
      if (y < 0) {
        err = "negative shift count in a constexpr expression";
        return std::nullopt;
      }
      if (op == K::RShift) {
        r = x >> std::min<int64_t>(y, 63);
        break;
      }
      if (y > 63) {
        overflow = x != 0;
        break;
      }
      r = static_cast<int64_t>(static_cast<uint64_t>(x) << y);
      overflow = (r >> y) != x;
      break;
    }
    if (overflow) {
      err = std::string("constexpr integer overflow in '") +
            ast::getBinOpSpelling(op) + "'";
      return std::nullopt;
    }
    return Const::ofInt(r);
  }
  double x = a.asDouble(), y = b.asDouble();
  switch (op) {
  case K::Add:
    return Const::ofFloat(x + y);
  case K::Sub:
    return Const::ofFloat(x - y);
  case K::Mul:
    return Const::ofFloat(x * y);
  case K::Div:
    return Const::ofFloat(x / y);
  case K::Pow:
    return Const::ofFloat(std::pow(x, y));
  default:
    err = std::string("'") + ast::getBinOpSpelling(op) +
          "' needs integer operands";
    return std::nullopt;
  }
}

TValue Generator::genBinary(SourceLoc l, ast::BinOpKind op, TValue lhs,
                            TValue rhs) {
  using K = ast::BinOpKind;
  const char *spelling = ast::getBinOpSpelling(op);
  if (lhs.isInvalid() || rhs.isInvalid())
    return TValue::invalid();
  if (lhs.isConst() && rhs.isConst()) {
    if (!lhs.constant.isNumber() || !rhs.constant.isNumber())
      return error(l, std::string("unsupported operands for '") + spelling +
                          "': " + describe(lhs) + " and " + describe(rhs));
    std::string err;
    if (auto c = foldBinary(op, lhs.constant, rhs.constant, err))
      return TValue::ofConst(*c);
    return error(l, err);
  }
  // Pointer arithmetic: ptr + int, int + ptr, ptr - int.
  bool lptr = lhs.isValue() && tsl::isPtrLike(lhs.value.getType());
  bool rptr = rhs.isValue() && tsl::isPtrLike(rhs.value.getType());
  if (lptr || rptr) {
    if ((lptr && rptr) || (op != K::Add && !(op == K::Sub && lptr)))
      return error(l, std::string("pointer arithmetic supports ptr + int and "
                                  "ptr - int, got '") +
                          spelling + "' on " + describe(lhs) + " and " +
                          describe(rhs));
    Value ptr = lptr ? lhs.value : rhs.value;
    TValue offT = lptr ? rhs : lhs;
    bool negate = op == K::Sub;
    if (negate && offT.isConst()) { // Folded: ptr - 1 is ptr + (-1).
      offT = genUnary(l, ast::UnaryOpKind::Neg, offT);
      negate = false;
    }
    Value off = toValue(l, offT);
    if (!off)
      return TValue::invalid();
    if (!isInt(getElementTypeOrSelf(off.getType())))
      return error(l, "pointer offsets must be integers, got " +
                          describe(off.getType()));
    auto shape = broadcastShapes(tsl::getShapeOrEmpty(ptr.getType()),
                                 tsl::getShapeOrEmpty(off.getType()));
    if (!shape)
      return error(l, "cannot broadcast " + describe(ptr.getType()) + " and " +
                          describe(off.getType()) + " in '" + spelling + "'");
    if (!checkTileSize(l, *shape))
      return TValue::invalid();
    ptr = broadcastTo(l, ptr, *shape);
    off = broadcastTo(l, off, *shape);
    if (negate)
      off = genUnary(l, ast::UnaryOpKind::Neg, TValue::ofValue(off)).value;
    return TValue::ofValue(
        tsl::AddPtrOp::create(builder, loc(l), ptr.getType(), ptr, off));
  }
  Value a, b;
  if (!unify(l, lhs, rhs, a, b, spelling))
    return TValue::invalid();
  Type elt = getElementTypeOrSelf(a.getType());
  bool fl = isFloat(elt);
  if (op == K::Pow)
    return error(l, "'**' is only supported on constexpr values");
  if ((op == K::FloorDiv || op == K::Mod || op == K::BitAnd || op == K::BitOr ||
       op == K::BitXor || op == K::LShift || op == K::RShift) &&
      fl)
    return error(l, std::string("'") + spelling +
                        "' needs integer operands, got " +
                        describe(a.getType()));
  if (op == K::Div && !fl) { // True division, as in Python.
    a = convert(l, a, builder.getF32Type());
    b = convert(l, b, builder.getF32Type());
    fl = true;
  }
  Location at = loc(l);
  if (isa<tsl::TileType>(a.getType())) {
    tsl::BinaryKind kind = tsl::BinaryKind::add;
    switch (op) {
    case K::Add:
      kind = tsl::BinaryKind::add;
      break;
    case K::Sub:
      kind = tsl::BinaryKind::sub;
      break;
    case K::Mul:
      kind = tsl::BinaryKind::mul;
      break;
    case K::Div:
    case K::FloorDiv:
      kind = tsl::BinaryKind::div;
      break;
    case K::Mod:
      kind = tsl::BinaryKind::rem;
      break;
    case K::BitAnd:
      kind = tsl::BinaryKind::and_;
      break;
    case K::BitOr:
      kind = tsl::BinaryKind::or_;
      break;
    case K::BitXor:
      kind = tsl::BinaryKind::xor_;
      break;
    case K::LShift:
      kind = tsl::BinaryKind::shl;
      break;
    case K::RShift:
      kind = tsl::BinaryKind::shr;
      break;
    case K::Pow:
      break;
    }
    return TValue::ofValue(tsl::BinaryOp::create(builder, at, kind, a, b));
  }
  switch (op) {
  case K::Add:
    return TValue::ofValue(
        fl ? Value(arith::AddFOp::create(builder, at, a, b))
           : Value(arith::AddIOp::create(builder, at, a, b)));
  case K::Sub:
    return TValue::ofValue(
        fl ? Value(arith::SubFOp::create(builder, at, a, b))
           : Value(arith::SubIOp::create(builder, at, a, b)));
  case K::Mul:
    return TValue::ofValue(
        fl ? Value(arith::MulFOp::create(builder, at, a, b))
           : Value(arith::MulIOp::create(builder, at, a, b)));
  case K::Div:
    return TValue::ofValue(arith::DivFOp::create(builder, at, a, b));
  case K::FloorDiv:
    return TValue::ofValue(arith::DivSIOp::create(builder, at, a, b));
  case K::Mod:
    return TValue::ofValue(arith::RemSIOp::create(builder, at, a, b));
  case K::BitAnd:
    return TValue::ofValue(arith::AndIOp::create(builder, at, a, b));
  case K::BitOr:
    return TValue::ofValue(arith::OrIOp::create(builder, at, a, b));
  case K::BitXor:
    return TValue::ofValue(arith::XOrIOp::create(builder, at, a, b));
  case K::LShift:
    return TValue::ofValue(arith::ShLIOp::create(builder, at, a, b));
  case K::RShift:
    return TValue::ofValue(arith::ShRSIOp::create(builder, at, a, b));
  case K::Pow:
    break;
  }
  return TValue::invalid();
}

TValue Generator::genCompare(SourceLoc l, ast::CmpOpKind op, TValue lhs,
                             TValue rhs) {
  using K = ast::CmpOpKind;
  if (lhs.isInvalid() || rhs.isInvalid())
    return TValue::invalid();
  if (op == K::Is || op == K::IsNot) {
    // Decided at compile time: a runtime value is never None (a pointer
    // parameter compiled as None is the constant None in the body).
    auto none = [](const TValue &v) {
      return v.isConst() && v.constant.kind == Const::Kind::None;
    };
    if (!none(lhs) && !none(rhs))
      return error(l, std::string("'") + ast::getCmpOpSpelling(op) +
                          "' compares with None only; use '==' or '!=' "
                          "for values");
    return TValue::ofConst(
        Const::ofBool((op == K::Is) == (none(lhs) && none(rhs))));
  }
  if (lhs.isConst() && rhs.isConst()) {
    if (lhs.constant.kind == Const::Kind::None ||
        rhs.constant.kind == Const::Kind::None) {
      bool same = lhs.constant.kind == rhs.constant.kind;
      if (op == K::Eq || op == K::Ne)
        return TValue::ofConst(Const::ofBool((op == K::Eq) == same));
      return error(l, "cannot order None");
    }
    double x = lhs.constant.asDouble(), y = rhs.constant.asDouble();
    bool r = op == K::Lt   ? x < y
             : op == K::Le ? x <= y
             : op == K::Gt ? x > y
             : op == K::Ge ? x >= y
             : op == K::Eq ? x == y
                           : x != y;
    return TValue::ofConst(Const::ofBool(r));
  }
  const char *spelling = ast::getCmpOpSpelling(op);
  Value a, b;
  if (!unify(l, lhs, rhs, a, b, spelling))
    return TValue::invalid();
  Location at = loc(l);
  Type elt = getElementTypeOrSelf(a.getType());
  if (auto tile = dyn_cast<tsl::TileType>(a.getType())) {
    tsl::CmpPredicate pred = static_cast<tsl::CmpPredicate>(op);
    return TValue::ofValue(tsl::CmpOp::create(
        builder, at, tile.withElementType(builder.getI1Type()), pred, a, b));
  }
  if (isFloat(elt)) {
    // Ordered predicates (false on NaN) except '!=' (true on NaN).
    static const arith::CmpFPredicate preds[] = {
        arith::CmpFPredicate::OLT, arith::CmpFPredicate::OLE,
        arith::CmpFPredicate::OGT, arith::CmpFPredicate::OGE,
        arith::CmpFPredicate::OEQ, arith::CmpFPredicate::UNE};
    return TValue::ofValue(
        arith::CmpFOp::create(builder, at, preds[int(op)], a, b));
  }
  static const arith::CmpIPredicate preds[] = {
      arith::CmpIPredicate::slt, arith::CmpIPredicate::sle,
      arith::CmpIPredicate::sgt, arith::CmpIPredicate::sge,
      arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne};
  return TValue::ofValue(
      arith::CmpIOp::create(builder, at, preds[int(op)], a, b));
}

TValue Generator::genUnary(SourceLoc l, ast::UnaryOpKind op, TValue v) {
  using K = ast::UnaryOpKind;
  if (v.isInvalid())
    return v;
  if (v.isConst()) {
    Const c = v.constant;
    if (!c.isNumber())
      return error(l, std::string("unsupported operand for '") +
                          ast::getUnaryOpSpelling(op) + "': None");
    switch (op) {
    case K::Neg:
      if (c.kind == Const::Kind::Float)
        return TValue::ofConst(Const::ofFloat(-c.f));
      if (c.i == INT64_MIN)
        return error(l, "constexpr integer overflow in '-'");
      return TValue::ofConst(Const::ofInt(-c.i));
    case K::Pos:
      return v;
    case K::Invert:
      if (c.kind == Const::Kind::Float)
        return error(l, "'~' needs an integer operand");
      return TValue::ofConst(Const::ofInt(~c.i));
    case K::Not:
      return TValue::ofConst(Const::ofBool(c.asDouble() == 0));
    }
  }
  if (!v.isNumeric())
    return error(l, std::string("unsupported operand for '") +
                        ast::getUnaryOpSpelling(op) + "': " + describe(v));
  Value x = v.value;
  Type elt = getElementTypeOrSelf(x.getType());
  Location at = loc(l);
  bool tile = isa<tsl::TileType>(x.getType());
  switch (op) {
  case K::Pos:
    return v;
  case K::Neg:
    if (tile)
      return TValue::ofValue(
          tsl::UnaryOp::create(builder, at, tsl::UnaryKind::neg, x));
    if (isFloat(elt))
      return TValue::ofValue(arith::NegFOp::create(builder, at, x));
    return TValue::ofValue(arith::SubIOp::create(
        builder, at, materialize(l, Const::ofInt(0), elt), x));
  case K::Invert:
  case K::Not:
    if (!isInt(elt) || (op == K::Not && !elt.isInteger(1)))
      return error(l, std::string("'") + ast::getUnaryOpSpelling(op) +
                          "' needs " +
                          (op == K::Not ? "a boolean" : "an integer") +
                          " operand, got " + describe(x.getType()));
    if (tile)
      return TValue::ofValue(
          tsl::UnaryOp::create(builder, at, tsl::UnaryKind::not_, x));
    return TValue::ofValue(arith::XOrIOp::create(
        builder, at, x, materialize(l, Const::ofInt(-1), elt)));
  }
  return TValue::invalid();
}
