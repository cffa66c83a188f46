//===- MLIRGen.cpp - Emit tessel IR from the DSL syntax tree --------------===//
//
// Functions, statements, operators and conversions. The built-in calls are
// in Builtins.cpp.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Generator.h"
#include "Frontend/Lexer.h"
#include "Frontend/Parser.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <set>
#include <sstream>

using namespace mlir;
using namespace ::tessel;
namespace tsl = mlir::tessel;

Generator::Generator(MLIRContext &context, DiagnosticEngine &diag,
                     const GenOptions &options)
    : context(context), diag(diag), options(options), builder(&context),
      env(std::make_shared<Env>()) {}

//===----------------------------------------------------------------------===//
// Diagnostics and locations
//===----------------------------------------------------------------------===//

TValue Generator::error(SourceLoc l, const std::string &message) {
  diag.error(l, message);
  // Errors inside an inlined helper also show where it was called from.
  for (auto it = inlineSites.rbegin(); it != inlineSites.rend(); ++it)
    diag.note(*it, "in the helper called here");
  return TValue::invalid();
}

Location Generator::loc(SourceLoc l) const {
  auto fileLoc = [&](SourceLoc s) -> Location {
    return FileLineColLoc::get(&context, diag.getSourceManager().getFilename(),
                               s.line, s.col);
  };
  if (inlineSites.empty())
    return fileLoc(l);
  // As MLIR's inliner nests them: callsite(op at callsite(inner at outer)).
  Location caller = fileLoc(inlineSites.front());
  for (size_t i = 1; i < inlineSites.size(); ++i)
    caller = CallSiteLoc::get(fileLoc(inlineSites[i]), caller);
  return CallSiteLoc::get(fileLoc(l), caller);
}

std::string Generator::describe(Type type) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (auto ptr = dyn_cast<tsl::PtrType>(type)) {
    os << "ptr[" << describe(ptr.getPointeeType()) << "]";
  } else if (auto tile = dyn_cast<tsl::TileType>(type)) {
    os << "tile<";
    for (int64_t d : tile.getShape())
      os << d << "x";
    os << describe(tile.getElementType()) << ">";
  } else if (auto st = dyn_cast<tsl::SoftmaxStateType>(type)) {
    os << "softmax_state<" << st.getRows() << "x" << st.getCols() << ">";
  } else if (auto st = dyn_cast<tsl::KLStateType>(type)) {
    os << "kl_state<" << st.getRows() << ">";
  } else {
    os << type;
  }
  return out;
}

std::string Generator::describe(const TValue &v) const {
  switch (v.kind) {
  case TValue::Kind::Invalid:
    return "<error>";
  case TValue::Kind::Constant:
    switch (v.constant.kind) {
    case Const::Kind::Int:
      return "constexpr int " + std::to_string(v.constant.i);
    case Const::Kind::Float: {
      std::ostringstream os;
      os << "constexpr float " << v.constant.f;
      return os.str();
    }
    case Const::Kind::Bool:
      return v.constant.i ? "constexpr True" : "constexpr False";
    case Const::Kind::None:
      return "None";
    }
    return "constexpr";
  case TValue::Kind::Value:
    return describe(v.value.getType());
  case TValue::Kind::Type:
    return "type " + describe(v.type);
  case TValue::Kind::Function:
    return "function '" + v.function->getName() + "'";
  case TValue::Kind::Builtin:
    return "built-in '" + v.builtin + "'";
  case TValue::Kind::Tuple:
    return "tuple of " + std::to_string(v.elements.size());
  }
  return "?";
}

//===----------------------------------------------------------------------===//
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

static bool isFloat(Type t) { return isa<FloatType>(t); }
static bool isInt(Type t) { return t.isSignlessInteger(); }

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
    if (hint) {
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
  auto isArith = [](const TValue &v) {
    return v.isConst() ||
           (v.isValue() &&
            (isFloat(getElementTypeOrSelf(v.value.getType())) ||
             isInt(getElementTypeOrSelf(v.value.getType()))) &&
            !isa<tsl::SoftmaxStateType, tsl::KLStateType>(v.value.getType()));
  };
  if (!isArith(lhs) || !isArith(rhs)) {
    error(l, std::string("unsupported operands for '") + what +
                 "': " + describe(lhs) + " and " + describe(rhs));
    return false;
  }
  Type elt;
  if (lhs.isValue() && rhs.isValue())
    elt = promote(getElementTypeOrSelf(lhs.value.getType()),
                  getElementTypeOrSelf(rhs.value.getType()));
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
       op == K::BitXor) &&
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
  if (!v.isValue() || tsl::isPtrLike(v.value.getType()) ||
      isa<tsl::SoftmaxStateType, tsl::KLStateType>(v.value.getType()))
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

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

std::optional<int64_t> Generator::genConstInt(const ast::Expr &expr,
                                              const std::string &what) {
  TValue v = genExpr(expr);
  if (v.isInvalid())
    return std::nullopt;
  if (v.isConst() && v.constant.isIntegral())
    return v.constant.i;
  error(expr.getLoc(),
        what + " must be a constexpr integer, got " + describe(v));
  return std::nullopt;
}

static TValue genSubscript(Generator &g, const ast::Subscript &sub) {
  TValue base = g.genExpr(*sub.getValue());
  if (base.isInvalid())
    return base;
  SourceLoc l = sub.getLoc();
  if (!base.isValue() || !isa<tsl::TileType>(base.value.getType()))
    return g.error(l, "only tiles can be indexed, got " + g.describe(base));
  auto tile = cast<tsl::TileType>(base.value.getType());
  ArrayRef<int64_t> shape = tile.getShape();
  SmallVector<int64_t> offsets(shape.size(), 0), sizes(shape);
  SmallVector<int32_t> newAxes;
  size_t dim = 0, outPos = 0;
  for (const ast::ExprPtr &item : sub.getIndices()) {
    if (ast::rtti::isa<ast::NoneLit>(item.get())) {
      newAxes.push_back(outPos++);
      continue;
    }
    auto *slice = ast::rtti::dyn_cast<ast::Slice>(item.get());
    if (!slice)
      return g.error(item->getLoc(),
                     "integer indexing of tiles is not supported; use "
                     "slices with constexpr bounds and None");
    if (dim >= shape.size())
      return g.error(item->getLoc(),
                     "too many indices for " + g.describe(tile));
    int64_t lo = 0, hi = shape[dim];
    if (slice->getLower()) {
      auto v = g.genConstInt(*slice->getLower(), "a slice bound");
      if (!v)
        return TValue::invalid();
      lo = *v;
    }
    if (slice->getUpper()) {
      auto v = g.genConstInt(*slice->getUpper(), "a slice bound");
      if (!v)
        return TValue::invalid();
      hi = *v;
    }
    if (lo < 0 || hi > shape[dim] || lo >= hi)
      return g.error(item->getLoc(), "slice [" + std::to_string(lo) + ":" +
                                         std::to_string(hi) +
                                         "] is out of bounds for "
                                         "dimension " +
                                         std::to_string(dim) + " of size " +
                                         std::to_string(shape[dim]));
    offsets[dim] = lo;
    sizes[dim] = hi - lo;
    ++dim;
    ++outPos;
  }
  Value v = base.value;
  Type elt = tile.getElementType();
  if (ArrayRef<int64_t>(sizes) != shape)
    v = tsl::ExtractSliceOp::create(g.builder, g.loc(l), g.shaped(sizes, elt),
                                    v, g.builder.getDenseI64ArrayAttr(offsets));
  for (int32_t axis : newAxes) {
    sizes.insert(sizes.begin() + axis, 1);
    v = tsl::ExpandDimsOp::create(g.builder, g.loc(l), g.shaped(sizes, elt), v,
                                  g.builder.getI32IntegerAttr(axis));
  }
  return TValue::ofValue(v);
}

TValue Generator::genExpr(const ast::Expr &expr) {
  using K = ast::Expr::Kind;
  SourceLoc l = expr.getLoc();
  switch (expr.getKind()) {
  case K::Name: {
    const std::string &name = ast::rtti::cast<ast::Name>(&expr)->getName();
    if (const TValue *v = env->lookup(name))
      return *v;
    if (const ast::FunctionDef *fn = module->lookup(name)) {
      const ast::Decorator *dec = fn->getDecorator();
      if (dec && dec->name == "kernel")
        return error(l, "kernel '" + name +
                            "' cannot be called or used as a value; only "
                            "@func helpers can");
      TValue v;
      v.kind = TValue::Kind::Function;
      v.function = fn;
      return v;
    }
    if (isBuiltin(name)) {
      TValue v;
      v.kind = TValue::Kind::Builtin;
      v.builtin = name;
      return v;
    }
    if (auto type = scalarTypeByName(name))
      return TValue::ofType(*type);
    if (const std::string *why = env->whyUnknown(name))
      return error(l, "unknown name '" + name + "': " + *why);
    return error(l, "unknown name '" + name + "'");
  }
  case K::IntLit:
    return TValue::ofConst(
        Const::ofInt(ast::rtti::cast<ast::IntLit>(&expr)->getValue()));
  case K::FloatLit:
    return TValue::ofConst(
        Const::ofFloat(ast::rtti::cast<ast::FloatLit>(&expr)->getValue()));
  case K::BoolLit:
    return TValue::ofConst(
        Const::ofBool(ast::rtti::cast<ast::BoolLit>(&expr)->getValue()));
  case K::NoneLit:
    return TValue::ofConst(Const());
  case K::StringLit:
    return error(l, "strings are only allowed in float(\"inf\"), "
                    "float(\"-inf\") and float(\"nan\")");
  case K::BinOp: {
    auto *b = ast::rtti::cast<ast::BinOp>(&expr);
    TValue lhs = genExpr(*b->getLHS());
    TValue rhs = genExpr(*b->getRHS());
    return genBinary(l, b->getOp(), lhs, rhs);
  }
  case K::UnaryOp: {
    auto *u = ast::rtti::cast<ast::UnaryOp>(&expr);
    return genUnary(l, u->getOp(), genExpr(*u->getOperand()));
  }
  case K::Compare: {
    auto *c = ast::rtti::cast<ast::Compare>(&expr);
    TValue lhs = genExpr(*c->getLHS());
    TValue rhs = genExpr(*c->getRHS());
    return genCompare(l, c->getOp(), lhs, rhs);
  }
  case K::BoolOp: {
    auto *b = ast::rtti::cast<ast::BoolOp>(&expr);
    TValue lhs = genExpr(*b->getLHS());
    TValue rhs = genExpr(*b->getRHS());
    if (lhs.isInvalid() || rhs.isInvalid())
      return TValue::invalid();
    bool isAnd = b->getOp() == ast::BoolOpKind::And;
    if (lhs.isConst() && rhs.isConst()) {
      bool x = lhs.constant.asDouble() != 0, y = rhs.constant.asDouble() != 0;
      return TValue::ofConst(Const::ofBool(isAnd ? (x && y) : (x || y)));
    }
    auto isBoolScalar = [](const TValue &v) {
      return (v.isConst() && v.constant.kind == Const::Kind::Bool) ||
             (v.isValue() && v.value.getType().isInteger(1));
    };
    if (!isBoolScalar(lhs) || !isBoolScalar(rhs))
      return error(l, std::string("'") + ast::getBoolOpSpelling(b->getOp()) +
                          "' needs boolean scalars, got " + describe(lhs) +
                          " and " + describe(rhs) +
                          " (use '&' and '|' on tiles)");
    return genBinary(l, isAnd ? ast::BinOpKind::BitAnd : ast::BinOpKind::BitOr,
                     lhs, rhs);
  }
  case K::Call:
    return genCall(*ast::rtti::cast<ast::Call>(&expr));
  case K::Attribute:
    return error(l, "attribute '" +
                        ast::rtti::cast<ast::Attribute>(&expr)->getAttr() +
                        "' is not supported; the only method is x.to(T)");
  case K::Subscript: {
    auto *sub = ast::rtti::cast<ast::Subscript>(&expr);
    if (auto *name = ast::rtti::dyn_cast<ast::Name>(sub->getValue()))
      if (name->getName() == "ptr") {
        if (auto type = parseTypeExpr(expr))
          return TValue::ofType(*type);
        return error(l, "ptr[T] needs a scalar type T");
      }
    return genSubscript(*this, *sub);
  }
  case K::Slice:
    return error(l, "a slice is only allowed inside [...]");
  case K::Tuple: {
    std::vector<TValue> elements;
    for (const ast::ExprPtr &e :
         ast::rtti::cast<ast::Tuple>(&expr)->getElements())
      elements.push_back(genExpr(*e));
    return TValue::ofTuple(std::move(elements));
  }
  }
  return TValue::invalid();
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

/// Helpers (and nested defs) take the types of their arguments at each call:
/// annotations would be ignored, so they are rejected.
static void checkHelperSignature(Generator &g, const ast::FunctionDef &fn) {
  for (const ast::Param &p : fn.getParams())
    if (p.annotation)
      g.error(p.annotation->getLoc(),
              "helper parameters take no annotation: their types come from "
              "each call");
  if (const ast::Expr *ret = fn.getReturnAnnotation())
    g.error(ret->getLoc(), "helpers take no return annotation: their types "
                           "come from each call");
}

void Generator::genBody(const ast::StmtList &body) {
  const ast::Stmt *prev = nullptr;
  for (const ast::StmtPtr &stmt : body) {
    if (diag.shouldStop())
      return;
    if (returned) {
      // A return inside a constexpr `if` ends the function silently, as the
      // rest is what runs when the condition is false.
      if (ast::rtti::isa<ast::Return>(prev))
        error(stmt->getLoc(), "code after 'return' is never run");
      return;
    }
    genStmt(*stmt);
    prev = stmt.get();
  }
}

void Generator::genAssign(const ast::Assign &assign) {
  TValue value = genExpr(*assign.getValue());
  const auto &targets = assign.getTargets();
  if (!assign.isTupleTarget()) {
    bind(targets[0]->getName(), value);
    return;
  }
  if (value.isInvalid()) {
    for (const auto &t : targets)
      bind(t->getName(), TValue::invalid());
    return;
  }
  if (value.kind != TValue::Kind::Tuple ||
      value.elements.size() != targets.size()) {
    error(assign.getLoc(), "cannot unpack " + describe(value) + " into " +
                               std::to_string(targets.size()) + " names");
    for (const auto &t : targets)
      bind(t->getName(), TValue::invalid());
    return;
  }
  for (size_t i = 0; i < targets.size(); ++i)
    bind(targets[i]->getName(), value.elements[i]);
}

void Generator::genStmt(const ast::Stmt &stmt) {
  using K = ast::Stmt::Kind;
  switch (stmt.getKind()) {
  case K::Assign:
    return genAssign(*ast::rtti::cast<ast::Assign>(&stmt));
  case K::AugAssign: {
    auto *aug = ast::rtti::cast<ast::AugAssign>(&stmt);
    const std::string &name = aug->getTarget()->getName();
    const TValue *cur = env->lookup(name);
    if (!cur) {
      error(aug->getTarget()->getLoc(), "unknown name '" + name + "'");
      return;
    }
    TValue lhs = *cur;
    bind(name, genBinary(aug->getLoc(), aug->getOp(), lhs,
                         genExpr(*aug->getValue())));
    return;
  }
  case K::If:
    return genIf(*ast::rtti::cast<ast::If>(&stmt));
  case K::For:
    return genFor(*ast::rtti::cast<ast::For>(&stmt));
  case K::Return: {
    auto *ret = ast::rtti::cast<ast::Return>(&stmt);
    if (controlDepth > 0) {
      error(ret->getLoc(), "'return' inside a run-time 'if' or 'for' is not "
                           "supported; return at the end of the function");
      return;
    }
    returned =
        ret->getValue() ? genExpr(*ret->getValue()) : TValue::ofConst(Const());
    if (callStack.empty() && !returned->isInvalid() &&
        !(returned->isConst() && returned->constant.kind == Const::Kind::None))
      error(ret->getValue()->getLoc(), "a kernel must not return a value; "
                                       "results leave through pointers");
    return;
  }
  case K::Pass:
    return;
  case K::ExprStmt:
    genExpr(*ast::rtti::cast<ast::ExprStmt>(&stmt)->getExpr());
    return;
  case K::FunctionDef: {
    auto *fn = ast::rtti::cast<ast::FunctionDef>(&stmt);
    if (fn->getDecorator()) {
      error(fn->getDecorator()->loc, "nested functions take no decorator");
      return;
    }
    checkHelperSignature(*this, *fn);
    TValue v;
    v.kind = TValue::Kind::Function;
    v.function = fn;
    // A nested def sees the enclosing names as they are when it is defined,
    // and itself, so that recursion is reported as such (without a closure:
    // it is only reached from its own body, where the call is rejected).
    v.closure = std::make_shared<Env>(*env);
    TValue self = v;
    self.closure = nullptr;
    v.closure->names[fn->getName()] = std::move(self);
    bind(fn->getName(), std::move(v));
    return;
  }
  }
}

static bool sameBinding(const TValue &a, const TValue &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case TValue::Kind::Value:
    return a.value == b.value;
  case TValue::Kind::Constant:
    return a.constant.kind == b.constant.kind && a.constant.i == b.constant.i &&
           (a.constant.f == b.constant.f ||
            (std::isnan(a.constant.f) && std::isnan(b.constant.f)));
  case TValue::Kind::Type:
    return a.type == b.type;
  case TValue::Kind::Function:
    return a.function == b.function;
  case TValue::Kind::Builtin:
    return a.builtin == b.builtin;
  case TValue::Kind::Invalid:
    return true;
  case TValue::Kind::Tuple:
    return false;
  }
  return false;
}

/// Sets the insertion point before `block`'s terminator, or at its end.
static void setInsertionBeforeEnd(OpBuilder &b, Block *block) {
  if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
    b.setInsertionPoint(&block->back());
  else
    b.setInsertionPointToEnd(block);
}

void Generator::genIf(const ast::If &stmt) {
  TValue cond = genExpr(*stmt.getCond());
  if (cond.isInvalid())
    return;
  if (cond.isConst()) { // Resolved now: only the taken branch is emitted.
    genBody(cond.constant.asDouble() != 0 ? stmt.getThenBody()
                                          : stmt.getElseBody());
    return;
  }
  if (!cond.isValue() || !cond.value.getType().isInteger(1)) {
    error(stmt.getCond()->getLoc(),
          "an 'if' condition must be a boolean scalar, got " + describe(cond) +
              (cond.isValue() && isa<tsl::TileType>(cond.value.getType())
                   ? " (use where() to choose elementwise)"
                   : ""));
    return;
  }
  SourceLoc l = stmt.getLoc();
  std::shared_ptr<Env> before = env;
  auto thenEnv = std::make_shared<Env>(*before);
  auto elseEnv = std::make_shared<Env>(*before);
  auto ifOp = scf::IfOp::create(builder, loc(l), TypeRange{}, cond.value,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(builder);
  ++controlDepth;
  env = thenEnv;
  setInsertionBeforeEnd(builder, ifOp.thenBlock());
  genBody(stmt.getThenBody());
  env = elseEnv;
  setInsertionBeforeEnd(builder, ifOp.elseBlock());
  genBody(stmt.getElseBody());
  --controlDepth;
  env = before;

  // Names new in one branch only stay in it.
  for (auto [branch, other] :
       {std::pair(thenEnv, elseEnv), std::pair(elseEnv, thenEnv)})
    for (auto &[name, v] : branch->names)
      if (!before->names.count(name) && !other->names.count(name))
        before->leftBehind[name] =
            "it is only assigned in one branch of the run-time 'if' at "
            "line " +
            std::to_string(l.line) +
            "; assign it before the 'if' or in both branches";
  // Names changed in either branch (or new in both) leave the 'if'.
  std::vector<std::string> names;
  for (auto &[name, v] : thenEnv->names) {
    auto old = before->names.find(name);
    auto other = elseEnv->names.find(name);
    if (other == elseEnv->names.end())
      continue;
    bool changed = old == before->names.end() || !sameBinding(v, old->second) ||
                   !sameBinding(other->second, old->second);
    if (changed)
      names.push_back(name);
  }
  SmallVector<Value> thenVals, elseVals;
  SmallVector<Type> types;
  std::vector<std::string> resultNames;
  for (const std::string &name : names) {
    TValue t = thenEnv->names[name], e = elseEnv->names[name];
    if (t.isInvalid() || e.isInvalid()) {
      bind(name, TValue::invalid());
      continue;
    }
    if (sameBinding(t, e)) {
      bind(name, t);
      continue;
    }
    auto isNumeric = [](const TValue &v) {
      return v.isValue() || (v.isConst() && v.constant.isNumber());
    };
    bool ok = isNumeric(t) && isNumeric(e);
    Type hint;
    if (t.isValue())
      hint = t.value.getType();
    else if (e.isValue())
      hint = e.value.getType();
    else if (ok) // Two constants: their common type (int and float: f32).
      hint = promote(naturalType(t.constant), naturalType(e.constant));
    Value tv, ev;
    if (ok) {
      setInsertionBeforeEnd(builder, ifOp.thenBlock());
      tv = toValue(l, t, hint);
      setInsertionBeforeEnd(builder, ifOp.elseBlock());
      ev = toValue(l, e, hint);
      ok = tv && ev && tv.getType() == ev.getType();
    }
    if (!ok) {
      std::string then = describe(t), other = describe(e);
      error(l, then == other
                   ? "'" + name + "' is a different " + then +
                         " in each branch of a run-time 'if'; only values "
                         "may differ"
                   : "'" + name + "' is " + then +
                         " after the 'if' branch but " + other +
                         " after the 'else' branch");
      bind(name, TValue::invalid());
      continue;
    }
    thenVals.push_back(tv);
    elseVals.push_back(ev);
    types.push_back(tv.getType());
    resultNames.push_back(name);
  }
  if (types.empty()) {
    // Drop what is empty: the else region, or the whole op.
    auto isEmpty = [](Block *b) { return b->getOperations().size() == 1; };
    if (isEmpty(ifOp.elseBlock())) {
      if (isEmpty(ifOp.thenBlock()))
        ifOp.erase();
      else
        ifOp.elseBlock()->erase();
    }
    return;
  }
  // Rebuild the op with results now that they are known.
  builder.setInsertionPoint(ifOp);
  auto newIf = scf::IfOp::create(builder, loc(l), types, cond.value,
                                 /*withElseRegion=*/true);
  for (auto [from, to, vals] :
       {std::tuple(&ifOp.getThenRegion(), &newIf.getThenRegion(), &thenVals),
        std::tuple(&ifOp.getElseRegion(), &newIf.getElseRegion(), &elseVals)}) {
    to->front().erase();
    to->takeBody(*from);
    Block &block = to->front();
    block.back().erase(); // The empty scf.yield.
    builder.setInsertionPointToEnd(&block);
    scf::YieldOp::create(builder, loc(l), *vals);
  }
  ifOp.erase();
  for (size_t i = 0; i < resultNames.size(); ++i)
    bind(resultNames[i], TValue::ofValue(newIf.getResult(i)));
}

/// Names assigned anywhere in `body` (not inside nested defs).
static void collectAssigned(const ast::StmtList &body,
                            std::map<std::string, SourceLoc> &out) {
  for (const ast::StmtPtr &stmt : body) {
    if (auto *a = ast::rtti::dyn_cast<ast::Assign>(stmt.get()))
      for (const auto &t : a->getTargets())
        out[t->getName()] = t->getLoc();
    else if (auto *aug = ast::rtti::dyn_cast<ast::AugAssign>(stmt.get()))
      out[aug->getTarget()->getName()] = aug->getTarget()->getLoc();
    else if (auto *i = ast::rtti::dyn_cast<ast::If>(stmt.get())) {
      collectAssigned(i->getThenBody(), out);
      collectAssigned(i->getElseBody(), out);
    } else if (auto *f = ast::rtti::dyn_cast<ast::For>(stmt.get())) {
      out[f->getTarget()->getName()] = f->getTarget()->getLoc();
      collectAssigned(f->getBody(), out);
    } else if (auto *d = ast::rtti::dyn_cast<ast::FunctionDef>(stmt.get()))
      out[d->getName()] = d->getNameLoc();
  }
}

void Generator::genFor(const ast::For &stmt) {
  const ast::Call *iter = stmt.getIter();
  const std::string &callee = iter->getCalleeName();
  SourceLoc l = stmt.getLoc();
  if (callee != "range" && callee != "static_range") {
    error(iter->getLoc(), "a 'for' loop iterates over range(...) or "
                          "static_range(...)");
    return;
  }
  const auto &args = iter->getArgs();
  if (args.empty() || args.size() > 3 || !iter->getKeywords().empty()) {
    error(iter->getLoc(), callee + "() takes 1 to 3 positional arguments");
    return;
  }
  std::vector<TValue> bounds;
  std::vector<SourceLoc> boundLocs; // Implicit bounds point at the call.
  for (const ast::ExprPtr &a : args) {
    bounds.push_back(genExpr(*a));
    boundLocs.push_back(a->getLoc());
  }
  if (bounds.size() == 1) {
    bounds.insert(bounds.begin(), TValue::ofConst(Const::ofInt(0)));
    boundLocs.insert(boundLocs.begin(), iter->getLoc());
  }
  if (bounds.size() == 2) {
    bounds.push_back(TValue::ofConst(Const::ofInt(1)));
    boundLocs.push_back(iter->getLoc());
  }
  for (const TValue &b : bounds)
    if (b.isInvalid())
      return;
  const std::string &target = stmt.getTarget()->getName();

  if (callee == "static_range") {
    for (size_t i = 0; i < 3; ++i)
      if (!bounds[i].isConst() || !bounds[i].constant.isIntegral()) {
        error(boundLocs[i], "static_range bounds must be constexpr integers, "
                            "got " +
                                describe(bounds[i]));
        return;
      }
    int64_t lo = bounds[0].constant.i, hi = bounds[1].constant.i,
            step = bounds[2].constant.i;
    if (step == 0) {
      error(boundLocs[2], "static_range step must not be zero");
      return;
    }
    // In 128 bits: the bounds may be anywhere in int64.
    __int128 span = step > 0 ? __int128(hi) - lo : __int128(lo) - hi;
    __int128 stride = step > 0 ? __int128(step) : -__int128(step);
    __int128 trips = span <= 0 ? 0 : (span + stride - 1) / stride;
    if (trips > 4096) {
      error(iter->getLoc(), "static_range unrolls more than 4096 iterations "
                            "(the limit)");
      return;
    }
    for (int64_t t = 0; t < int64_t(trips); ++t) {
      bind(target, TValue::ofConst(Const::ofInt(lo + t * step)));
      genBody(stmt.getBody());
      if (diag.hasErrors() || returned)
        return;
    }
    return;
  }

  // Run-time loop: i32 induction variable unless a bound is i64.
  Type ivType = builder.getI32Type();
  for (size_t i = 0; i < 3; ++i) {
    const TValue &b = bounds[i];
    if ((b.isValue() && !isInt(b.value.getType())) ||
        (b.isConst() && !b.constant.isIntegral()) ||
        (!b.isValue() && !b.isConst())) {
      error(boundLocs[i],
            "range bounds must be integer scalars, got " + describe(b));
      return;
    }
    if ((b.isValue() && b.value.getType().isInteger(64)) ||
        (b.isConst() && b.constant.i != int32_t(b.constant.i)))
      ivType = builder.getI64Type();
  }
  if (bounds[2].isConst() && bounds[2].constant.i <= 0) {
    error(boundLocs[2], "range step must be positive (a run-time loop counts "
                        "up; use static_range to count down)");
    return;
  }
  SmallVector<Value> b3;
  for (const TValue &b : bounds)
    b3.push_back(convert(l, toValue(l, b, ivType), ivType));

  // Names assigned in the body (at their last assignment) that exist before
  // the loop are carried through it.
  std::map<std::string, SourceLoc> assigned;
  collectAssigned(stmt.getBody(), assigned);
  std::vector<std::string> carried, poisoned;
  SmallVector<Value> inits;
  for (const auto &[name, at] : assigned) {
    auto it = env->names.find(name);
    if (it == env->names.end() || name == target)
      continue;
    const TValue &v = it->second;
    if (v.isInvalid())
      continue;
    if (v.isConst() && v.constant.kind == Const::Kind::None)
      error(at, "'" + name +
                    "' is None before the loop and assigned inside it; give "
                    "it an initial value of the type it gets in the loop");
    else if (!v.isValue() && !v.isConst())
      error(at, "'" + name + "' (" + describe(v) +
                    ") cannot be reassigned inside a run-time loop");
    else if (Value init = toValue(l, v)) {
      carried.push_back(name);
      inits.push_back(init);
      continue;
    }
    poisoned.push_back(name);
  }
  auto forOp = scf::ForOp::create(builder, loc(l), b3[0], b3[1], b3[2], inits);
  std::shared_ptr<Env> before = env;
  env = std::make_shared<Env>(*before);
  Block *body = forOp.getBody();
  bind(target, TValue::ofValue(forOp.getInductionVar()));
  for (size_t i = 0; i < carried.size(); ++i)
    bind(carried[i], TValue::ofValue(forOp.getRegionIterArgs()[i]));
  for (const std::string &name : poisoned)
    bind(name, TValue::invalid());
  std::vector<bool> broken(carried.size(), false);
  {
    OpBuilder::InsertionGuard guard(builder);
    setInsertionBeforeEnd(builder, body);
    ++controlDepth;
    genBody(stmt.getBody());
    --controlDepth;
    SmallVector<Value> yields;
    for (size_t i = 0; i < carried.size(); ++i) {
      const TValue &v = env->names[carried[i]];
      Value y;
      if (v.isValue() || (v.isConst() && v.constant.isNumber()))
        y = toValue(l, v, inits[i].getType());
      if (y && y.getType() != inits[i].getType()) {
        error(assigned[carried[i]],
              "'" + carried[i] + "' changes type inside the loop, from " +
                  describe(inits[i].getType()) + " to " +
                  describe(y.getType()));
        y = {};
      } else if (!y && !v.isInvalid()) {
        error(assigned[carried[i]],
              "'" + carried[i] + "' changes type inside the loop, from " +
                  describe(inits[i].getType()) + " to " + describe(v));
      }
      // Keep the IR well formed after an error; it is never used.
      broken[i] = !y;
      yields.push_back(y ? y : forOp.getRegionIterArgs()[i]);
    }
    if (!carried.empty())
      scf::YieldOp::create(builder, loc(l), yields);
  }
  std::string line = std::to_string(l.line);
  for (auto &[name, v] : env->names)
    if (!before->names.count(name))
      before->leftBehind[name] =
          name == target
              ? "it is the variable of the run-time 'for' at line " + line +
                    ", which is not visible after the loop"
              : "it is first assigned inside the run-time 'for' at line " +
                    line +
                    ", so it stays in the loop; assign it before the loop";
  env = before;
  for (size_t i = 0; i < carried.size(); ++i)
    bind(carried[i],
         broken[i] ? TValue::invalid() : TValue::ofValue(forOp.getResult(i)));
  for (const std::string &name : poisoned)
    bind(name, TValue::invalid());
}

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

TValue Generator::callFunction(SourceLoc l, const TValue &callee,
                               std::vector<TValue> args, SourceLoc callLoc) {
  const ast::FunctionDef *fn = callee.function;
  if (llvm::is_contained(callStack, fn))
    return error(l, "recursive call to '" + fn->getName() +
                        "': helpers are inlined, so recursion is not "
                        "supported");
  const auto &params = fn->getParams();
  if (args.size() > params.size())
    return error(l, "'" + fn->getName() + "' takes " +
                        pluralize(params.size(), "argument") + ", got " +
                        std::to_string(args.size()));
  auto callEnv = std::make_shared<Env>();
  callEnv->parent = callee.closure;
  // Defaults are evaluated in the callee's scope.
  std::shared_ptr<Env> saved = env;
  env = callEnv;
  for (size_t i = 0; i < params.size(); ++i) {
    if (i < args.size() && !args[i].isInvalid() &&
        !(args[i].isConst() && args[i].constant.kind == Const::Kind::None &&
          params[i].defaultValue)) {
      bind(params[i].name, args[i]);
    } else if (i < args.size() && args[i].isInvalid()) {
      bind(params[i].name, args[i]);
    } else if (params[i].defaultValue) {
      bind(params[i].name, genExpr(*params[i].defaultValue));
    } else {
      env = saved;
      return error(l, "'" + fn->getName() + "' is missing argument '" +
                          params[i].name + "'");
    }
  }
  std::optional<TValue> savedReturn = returned;
  unsigned savedDepth = controlDepth;
  returned.reset();
  controlDepth = 0;
  callStack.push_back(fn);
  inlineSites.push_back(callLoc);
  genBody(fn->getBody());
  inlineSites.pop_back();
  callStack.pop_back();
  TValue result = returned.value_or(TValue::ofConst(Const()));
  returned = savedReturn;
  controlDepth = savedDepth;
  env = saved;
  return result;
}

static std::optional<TValue> parseDefine(Generator &g,
                                         const std::string &text) {
  if (text == "True" || text == "False")
    return TValue::ofConst(Const::ofBool(text == "True"));
  if (auto type = g.scalarTypeByName(text))
    return TValue::ofType(*type);
  if (text.empty())
    return std::nullopt;
  char *end = nullptr;
  long long i = std::strtoll(text.c_str(), &end, 0);
  if (end && *end == '\0')
    return TValue::ofConst(Const::ofInt(i));
  double f = std::strtod(text.c_str(), &end);
  if (end && *end == '\0')
    return TValue::ofConst(Const::ofFloat(f));
  return std::nullopt;
}

static void genKernel(Generator &g, const ast::FunctionDef &fn) {
  g.env = std::make_shared<Env>();
  g.returned.reset();
  g.controlDepth = 0;
  OpBuilder &b = g.builder;
  // constexpr parameters first: annotations of the others may use them.
  NamedAttrList constants;
  for (const ast::Param &p : fn.getParams()) {
    auto *ann = ast::rtti::dyn_cast<ast::Name>(p.annotation.get());
    if (!ann || ann->getName() != "constexpr")
      continue;
    std::optional<TValue> value;
    auto def = g.options.defines.find(p.name);
    if (def != g.options.defines.end()) {
      value = parseDefine(g, def->second);
      if (!value) {
        g.error(p.loc, "-D " + p.name + "=" + def->second +
                           ": expected an integer, a float, True, False or "
                           "a type name");
        value = TValue::invalid();
      }
    } else if (p.defaultValue) {
      value = g.genExpr(*p.defaultValue);
      if (!value->isInvalid() && !value->isConst() &&
          value->kind != TValue::Kind::Type) {
        g.error(p.defaultValue->getLoc(),
                "the default of constexpr '" + p.name +
                    "' must be a constexpr value, got " + g.describe(*value));
        value = TValue::invalid();
      }
    } else {
      g.error(p.loc, "constexpr parameter '" + p.name +
                         "' has no value: give it a default or pass -D " +
                         p.name + "=VALUE");
      value = TValue::invalid();
    }
    if (value->isConst())
      constants.append(p.name,
                       value->constant.kind == Const::Kind::Float
                           ? Attribute(b.getF64FloatAttr(value->constant.f))
                       : value->constant.kind == Const::Kind::Bool
                           ? Attribute(b.getBoolAttr(value->constant.i))
                           : Attribute(b.getI64IntegerAttr(value->constant.i)));
    else if (value->kind == TValue::Kind::Type)
      constants.append(p.name, TypeAttr::get(value->type));
    g.bind(p.name, *value);
  }
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  std::vector<const ast::Param *> runtime;
  for (const ast::Param &p : fn.getParams()) {
    auto *ann = ast::rtti::dyn_cast<ast::Name>(p.annotation.get());
    if (ann && ann->getName() == "constexpr")
      continue;
    std::optional<Type> type;
    if (p.annotation)
      type = g.parseTypeExpr(*p.annotation);
    if (!type) {
      g.error(p.annotation ? p.annotation->getLoc() : p.loc,
              "kernel parameter '" + p.name +
                  "' needs a type: a scalar type (i32, f32, ...), ptr[T] "
                  "or constexpr");
      continue;
    }
    if (p.defaultValue)
      g.error(p.defaultValue->getLoc(),
              "only constexpr parameters take defaults");
    argTypes.push_back(*type);
    argLocs.push_back(NameLoc::get(b.getStringAttr(p.name), g.loc(p.loc)));
    runtime.push_back(&p);
  }
  if (const ast::Expr *ret = fn.getReturnAnnotation())
    g.error(ret->getLoc(), "a kernel returns nothing; remove the '->' "
                           "annotation");
  int64_t numWarps = 4;
  for (const ast::Keyword &kw : fn.getDecorator()->keywords) {
    if (kw.name != "num_warps") {
      g.error(kw.loc, "unknown @kernel option '" + kw.name +
                          "' (the only option is num_warps)");
      continue;
    }
    if (auto n = g.genConstInt(*kw.value, "num_warps")) {
      if (*n < 1 || *n > 32 || (*n & (*n - 1)))
        g.error(kw.value->getLoc(), "num_warps must be a power of two in "
                                    "[1, 32], got " +
                                        std::to_string(*n));
      else
        numWarps = *n;
    }
  }
  if (argTypes.size() != runtime.size())
    return;
  auto func = func::FuncOp::create(b, g.loc(fn.getNameLoc()), fn.getName(),
                                   b.getFunctionType(argTypes, {}));
  func->setAttr(tsl::TesselDialect::getKernelAttrName(), b.getUnitAttr());
  func->setAttr(tsl::TesselDialect::getNumWarpsAttrName(),
                b.getI32IntegerAttr(numWarps));
  if (!constants.empty())
    func->setAttr(tsl::TesselDialect::getConstantsAttrName(),
                  constants.getDictionary(&g.context));
  Block *entry = func.addEntryBlock();
  for (size_t i = 0; i < runtime.size(); ++i) {
    entry->getArgument(i).setLoc(argLocs[i]);
    g.bind(runtime[i]->name, TValue::ofValue(entry->getArgument(i)));
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  g.genBody(fn.getBody());
  func::ReturnOp::create(b, g.loc(fn.getLoc()));
}

OwningOpRef<ModuleOp> Generator::run(const ast::Module &m) {
  module = &m;
  // Owned from the start so that a failed compile frees what was built.
  OwningOpRef<ModuleOp> mod = ModuleOp::create(FileLineColLoc::get(
      &context, diag.getSourceManager().getFilename(), 1, 1));
  builder.setInsertionPointToEnd(mod->getBody());
  bool found = options.kernel.empty();
  std::set<std::string> constexprParams;
  std::map<std::string, SourceLoc> defined;
  for (const auto &fn : m.getFunctions()) {
    auto [first, isNew] = defined.emplace(fn->getName(), fn->getNameLoc());
    if (!isNew) {
      error(fn->getNameLoc(), "'" + fn->getName() +
                                  "' is already defined at line " +
                                  std::to_string(first->second.line));
      continue;
    }
    const ast::Decorator *dec = fn->getDecorator();
    if (!dec) {
      error(fn->getLoc(),
            "function '" + fn->getName() + "' needs @kernel or @func");
      continue;
    }
    if (dec->name == "func") {
      if (!dec->keywords.empty())
        error(dec->loc, "@func takes no options");
      checkHelperSignature(*this, *fn);
      continue;
    }
    if (dec->name != "kernel") {
      error(dec->loc, "unknown decorator '@" + dec->name +
                          "' (expected @kernel or @func)");
      continue;
    }
    if (!options.kernel.empty() && fn->getName() != options.kernel)
      continue;
    found = true;
    genKernel(*this, *fn);
    for (const ast::Param &p : fn->getParams())
      if (auto *ann = ast::rtti::dyn_cast<ast::Name>(p.annotation.get()))
        if (ann->getName() == "constexpr")
          constexprParams.insert(p.name);
  }
  if (!found)
    error(SourceLoc{1, 1}, "no kernel named '" + options.kernel + "'");
  // A misspelt -D would otherwise be ignored silently.
  for (const auto &[name, value] : options.defines)
    if (found && !constexprParams.count(name))
      error(SourceLoc{}, "-D " + name + "=" + value +
                             ": no kernel compiled here has a constexpr "
                             "parameter '" +
                             name + "'");
  if (diag.hasErrors())
    return nullptr;
  if (failed(verify(*mod)))
    return nullptr;
  return mod;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

namespace tessel {
void loadFrontendDialects(MLIRContext &context) {
  context.loadDialect<tsl::TesselDialect, arith::ArithDialect,
                      math::MathDialect, scf::SCFDialect, func::FuncDialect>();
}

OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const ast::Module &module,
                              DiagnosticEngine &diag,
                              const GenOptions &options) {
  loadFrontendDialects(context);
  Generator gen(context, diag, options);
  return gen.run(module);
}

OwningOpRef<ModuleOp> compileSource(MLIRContext &context,
                                    const SourceManager &source,
                                    DiagnosticEngine &diag,
                                    const GenOptions &options) {
  // Anything MLIR itself reports (a verifier failure) is a compiler bug; it
  // still reaches the user in the DSL's own format, at the DSL location.
  ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    SourceLoc at;
    d.getLocation()->walk([&](Location l) {
      if (auto file = dyn_cast<FileLineColLoc>(l)) {
        at = {file.getLine(), file.getColumn()};
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    diag.error(at, "internal compiler error: " + d.str());
    return success();
  });
  Lexer lexer(source, diag);
  Parser parser(lexer, diag);
  std::unique_ptr<ast::Module> module = parser.parseModule();
  if (!module || diag.hasErrors())
    return nullptr;
  return mlirGen(context, *module, diag, options);
}
} // namespace tessel
