//===- Elementwise.cpp - Scalar and lane-wise arithmetic ------------------===//
//
// tessel.binary/unary/cmp/select/cast on tiles and the arith/math ops on
// scalars share one lane-level implementation:
// - Integers compute on the signed (or, where the op says so, unsigned)
//   reading and wrap to the width. Division and remainder truncate toward
//   zero (floordivsi/ceildivsi round as named); a zero divisor is an error.
// - Floats compute in double and round to their type once per op, which is
//   what an f32 (or f16/bf16) unit gives for + - * / sqrt. Transcendentals
//   are rounded from the double result; the GPU's may differ by an ulp or so.
// - tessel `max`/`min` and maximumf/minimumf propagate NaN; maxnumf/minnumf
//   return the other operand. tessel `ne` is true on NaN, the other
//   comparisons are false (C semantics).
// - Float to integer truncates toward zero and saturates, NaN gives 0 (the
//   GPU's cvt.rzi); i1 converts to 0 or 1 in tessel.cast.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "tessel/TesselDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace ts = mlir::tessel;

namespace tessel {
using namespace detail;

namespace {
enum class BinOp {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  CeilDiv,
  FloorDiv,
  Max,
  Min,
  MaxNum,
  MinNum,
  And,
  Or,
  Xor,
  Shl,
  Shr
};
enum class UnOp {
  Neg,
  Exp,
  Exp2,
  ExpFtz,
  Exp2Ftz,
  Log,
  Log2,
  Sqrt,
  Rsqrt,
  Abs,
  Not,
  Tanh
};
} // namespace

//===----------------------------------------------------------------------===//
// Lane semantics
//===----------------------------------------------------------------------===//

static bool intDivision(BinOp op, int64_t a, int64_t b, int64_t &out,
                        std::string &why) {
  if (b == 0) {
    why = "integer division by zero";
    return false;
  }
  if (a == std::numeric_limits<int64_t>::min() && b == -1) {
    out = op == BinOp::Rem ? 0 : a; // Wraps, as the hardware does.
    return true;
  }
  int64_t q = a / b, r = a % b;
  switch (op) {
  case BinOp::Rem:
    out = r;
    break;
  case BinOp::FloorDiv:
    out = q - (r != 0 && (r < 0) != (b < 0));
    break;
  case BinOp::CeilDiv:
    out = q + (r != 0 && (r < 0) == (b < 0));
    break;
  default:
    out = q;
  }
  return true;
}

static bool intBinary(BinOp op, unsigned width, int64_t a, int64_t b,
                      int64_t &out, std::string &why) {
  int64_t sa = asSigned(a, width), sb = asSigned(b, width);
  auto ua = static_cast<uint64_t>(sa), ub = static_cast<uint64_t>(sb);
  int64_t r = 0;
  switch (op) {
  case BinOp::Add:
    r = static_cast<int64_t>(ua + ub);
    break;
  case BinOp::Sub:
    r = static_cast<int64_t>(ua - ub);
    break;
  case BinOp::Mul:
    r = static_cast<int64_t>(ua * ub);
    break;
  case BinOp::Div:
  case BinOp::Rem:
  case BinOp::CeilDiv:
  case BinOp::FloorDiv:
    if (!intDivision(op, sa, sb, r, why))
      return false;
    break;
  case BinOp::Max:
  case BinOp::MaxNum:
    r = std::max(sa, sb);
    break;
  case BinOp::Min:
  case BinOp::MinNum:
    r = std::min(sa, sb);
    break;
  case BinOp::And:
    r = a & b;
    break;
  case BinOp::Or:
    r = a | b;
    break;
  case BinOp::Xor:
    r = a ^ b;
    break;
  case BinOp::Shl:
  case BinOp::Shr:
    if (sb < 0 || sb >= int64_t(width)) {
      why = "shift by " + std::to_string(sb) + " of a " +
            std::to_string(width) + "-bit integer";
      return false;
    }
    r = op == BinOp::Shl ? static_cast<int64_t>(ua << sb) : sa >> sb;
    break;
  }
  out = wrapInt(r, width);
  return true;
}

static bool floatBinary(BinOp op, FloatFormat format, double a, double b,
                        double &out, std::string &why) {
  double r = 0;
  switch (op) {
  case BinOp::Add:
    r = a + b;
    break;
  case BinOp::Sub:
    r = a - b;
    break;
  case BinOp::Mul:
    r = a * b;
    break;
  case BinOp::Div:
    r = a / b;
    break;
  case BinOp::Rem:
    r = std::fmod(a, b);
    break;
  case BinOp::Max:
    r = maximumF(a, b);
    break;
  case BinOp::Min:
    r = minimumF(a, b);
    break;
  case BinOp::MaxNum:
    r = std::fmax(a, b);
    break;
  case BinOp::MinNum:
    r = std::fmin(a, b);
    break;
  default:
    why = "integer-only operation on floats";
    return false;
  }
  out = roundFloat(format, r);
  return true;
}

static bool unaryLane(UnOp op, const ElemType &type, const Lane &in, Lane &out,
                      std::string &why) {
  if (type.kind == ElemKind::Int) {
    int64_t s = asSigned(in.i, type.width);
    auto u = static_cast<uint64_t>(s);
    if (op == UnOp::Neg)
      out.i = wrapInt(static_cast<int64_t>(0 - u), type.width);
    else if (op == UnOp::Abs)
      out.i = wrapInt(static_cast<int64_t>(s < 0 ? 0 - u : u), type.width);
    else if (op == UnOp::Not)
      out.i = wrapInt(~in.i, type.width);
    else {
      why = "float-only operation on integers";
      return false;
    }
    return true;
  }
  double x = in.f, r = 0;
  switch (op) {
  case UnOp::Neg:
    r = -x;
    break;
  case UnOp::Exp:
    r = std::exp(x);
    break;
  case UnOp::Exp2:
    r = std::exp2(x);
    break;
  case UnOp::ExpFtz:
  case UnOp::Exp2Ftz:
    // The GPU computes these in f32 and flushes results below its smallest
    // normal (the inputs that would flush give exp ≈ 1 either way).
    r = op == UnOp::ExpFtz ? std::exp(x) : std::exp2(x);
    if (r < std::numeric_limits<float>::min())
      r = 0;
    break;
  case UnOp::Log:
    r = std::log(x);
    break;
  case UnOp::Log2:
    r = std::log2(x);
    break;
  case UnOp::Sqrt:
    r = std::sqrt(x);
    break;
  case UnOp::Rsqrt:
    r = 1.0 / std::sqrt(x);
    break;
  case UnOp::Abs:
    r = std::fabs(x);
    break;
  case UnOp::Tanh:
    r = std::tanh(x);
    break;
  case UnOp::Not:
    why = "integer-only operation on floats";
    return false;
  }
  out.f = roundFloat(type.format, r);
  return true;
}

static bool cmpInt(arith::CmpIPredicate pred, unsigned width, int64_t a,
                   int64_t b) {
  int64_t sa = asSigned(a, width), sb = asSigned(b, width);
  uint64_t ua = asUnsigned(a, width), ub = asUnsigned(b, width);
  using P = arith::CmpIPredicate;
  switch (pred) {
  case P::eq:
    return sa == sb;
  case P::ne:
    return sa != sb;
  case P::slt:
    return sa < sb;
  case P::sle:
    return sa <= sb;
  case P::sgt:
    return sa > sb;
  case P::sge:
    return sa >= sb;
  case P::ult:
    return ua < ub;
  case P::ule:
    return ua <= ub;
  case P::ugt:
    return ua > ub;
  case P::uge:
    return ua >= ub;
  }
  return false;
}

static bool cmpFloat(arith::CmpFPredicate pred, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  using P = arith::CmpFPredicate;
  switch (pred) {
  case P::AlwaysFalse:
    return false;
  case P::AlwaysTrue:
    return true;
  case P::ORD:
    return !unordered;
  case P::UNO:
    return unordered;
  case P::OEQ:
  case P::UEQ:
    return a == b || (unordered && pred == P::UEQ);
  case P::ONE:
  case P::UNE:
    return unordered ? pred == P::UNE : a != b;
  case P::OLT:
  case P::ULT:
    return a < b || (unordered && pred == P::ULT);
  case P::OLE:
  case P::ULE:
    return a <= b || (unordered && pred == P::ULE);
  case P::OGT:
  case P::UGT:
    return a > b || (unordered && pred == P::UGT);
  case P::OGE:
  case P::UGE:
    return a >= b || (unordered && pred == P::UGE);
  }
  return false;
}

/// Converts between scalar types; `zeroExtend` reads the source integer as
/// unsigned (extui, and i1 in tessel.cast).
static Lane convertLane(const ElemType &from, const ElemType &to,
                        const Lane &in, bool zeroExtend) {
  Lane out;
  if (from.kind == ElemKind::Int) {
    int64_t v = zeroExtend ? static_cast<int64_t>(asUnsigned(in.i, from.width))
                           : asSigned(in.i, from.width);
    if (to.kind == ElemKind::Int)
      out.i = wrapInt(v, to.width);
    else
      out.f = roundFloat(to.format, static_cast<double>(v));
  } else if (to.kind == ElemKind::Int) {
    out.i = floatToInt(in.f, to.width);
  } else {
    out.f = roundFloat(to.format, in.f);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Op mapping
//===----------------------------------------------------------------------===//

LogicalResult Executor::mapLanes(Operation *op, LaneFn fn) {
  Type resultType = op->getResult(0).getType();
  std::optional<ElemType> resultElem = ElemType::get(resultType);
  if (!resultElem)
    return failType(op, resultType);
  SmallVector<const RtValue *, 3> ins;
  SmallVector<ElemKind, 3> kinds;
  for (Value operand : op->getOperands()) {
    std::optional<ElemType> elem = ElemType::get(operand.getType());
    if (!elem)
      return failType(op, operand.getType());
    ins.push_back(&get(operand));
    kinds.push_back(elem->kind);
  }
  ArrayRef<int64_t> shape = shapeOf(resultType);
  RtValue out = RtValue::lanes(resultElem->kind, shape);
  SmallVector<Lane, 3> lanes(ins.size());
  std::string why;
  for (size_t i = 0, n = out.numLanes(); i < n; ++i) {
    for (size_t k = 0; k < ins.size(); ++k)
      lanes[k] = ins[k]->lane(kinds[k], ins[k]->numLanes() == 1 ? 0 : i);
    Lane result;
    if (!fn(lanes, result, why))
      return fail(op,
                  shape.empty() ? why : why + " in lane " + laneName(shape, i));
    out.setLane(resultElem->kind, i, result);
  }
  set(op->getResult(0), std::move(out));
  return success();
}

static BinOp binOpOf(ts::BinaryKind kind) {
  switch (kind) {
  case ts::BinaryKind::add:
    return BinOp::Add;
  case ts::BinaryKind::sub:
    return BinOp::Sub;
  case ts::BinaryKind::mul:
    return BinOp::Mul;
  case ts::BinaryKind::div:
    return BinOp::Div;
  case ts::BinaryKind::rem:
    return BinOp::Rem;
  case ts::BinaryKind::max:
    return BinOp::Max;
  case ts::BinaryKind::min:
    return BinOp::Min;
  case ts::BinaryKind::and_:
    return BinOp::And;
  case ts::BinaryKind::or_:
    return BinOp::Or;
  case ts::BinaryKind::xor_:
    return BinOp::Xor;
  case ts::BinaryKind::shl:
    return BinOp::Shl;
  case ts::BinaryKind::shr:
    return BinOp::Shr;
  }
  return BinOp::Add;
}

static UnOp unOpOf(ts::UnaryKind kind, bool ftz) {
  switch (kind) {
  case ts::UnaryKind::neg:
    return UnOp::Neg;
  case ts::UnaryKind::exp:
    return ftz ? UnOp::ExpFtz : UnOp::Exp;
  case ts::UnaryKind::exp2:
    return ftz ? UnOp::Exp2Ftz : UnOp::Exp2;
  case ts::UnaryKind::log:
    return UnOp::Log;
  case ts::UnaryKind::log2:
    return UnOp::Log2;
  case ts::UnaryKind::sqrt:
    return UnOp::Sqrt;
  case ts::UnaryKind::rsqrt:
    return UnOp::Rsqrt;
  case ts::UnaryKind::abs:
    return UnOp::Abs;
  case ts::UnaryKind::not_:
    return UnOp::Not;
  }
  return UnOp::Neg;
}

/// tessel.cmp on integers is signed; on floats `ne` is unordered (true on
/// NaN), the others ordered.
static std::pair<arith::CmpIPredicate, arith::CmpFPredicate>
predicatesOf(ts::CmpPredicate pred) {
  using I = arith::CmpIPredicate;
  using F = arith::CmpFPredicate;
  switch (pred) {
  case ts::CmpPredicate::lt:
    return {I::slt, F::OLT};
  case ts::CmpPredicate::le:
    return {I::sle, F::OLE};
  case ts::CmpPredicate::gt:
    return {I::sgt, F::OGT};
  case ts::CmpPredicate::ge:
    return {I::sge, F::OGE};
  case ts::CmpPredicate::eq:
    return {I::eq, F::OEQ};
  case ts::CmpPredicate::ne:
    return {I::ne, F::UNE};
  }
  return {I::eq, F::OEQ};
}

namespace {
/// What an elementwise op computes on each lane.
struct LaneOp {
  enum class Kind { Binary, Unary, Convert, Compare } kind;
  BinOp bin = BinOp::Add;
  UnOp un = UnOp::Neg;
  bool zeroExtend = false; // Convert: read the source integer as unsigned.
  arith::CmpIPredicate ipred = arith::CmpIPredicate::eq;
  arith::CmpFPredicate fpred = arith::CmpFPredicate::OEQ;
};
} // namespace

static LaneOp binary(BinOp op) { return {LaneOp::Kind::Binary, op}; }
static LaneOp unary(UnOp op) { return {LaneOp::Kind::Unary, BinOp::Add, op}; }
static LaneOp convert(bool zeroExtend) {
  return {LaneOp::Kind::Convert, BinOp::Add, UnOp::Neg, zeroExtend};
}
static LaneOp compare(arith::CmpIPredicate ipred, arith::CmpFPredicate fpred) {
  return {LaneOp::Kind::Compare, BinOp::Add, UnOp::Neg, false, ipred, fpred};
}

/// The lane operation of the arith/math ops the interpreter supports.
static std::optional<LaneOp> upstreamLaneOp(Operation *op) {
  using B = BinOp;
  using U = UnOp;
  return llvm::TypeSwitch<Operation *, std::optional<LaneOp>>(op)
      .Case<arith::AddIOp, arith::AddFOp>([](auto) { return binary(B::Add); })
      .Case<arith::SubIOp, arith::SubFOp>([](auto) { return binary(B::Sub); })
      .Case<arith::MulIOp, arith::MulFOp>([](auto) { return binary(B::Mul); })
      .Case<arith::DivSIOp, arith::DivFOp>([](auto) { return binary(B::Div); })
      .Case<arith::RemSIOp, arith::RemFOp>([](auto) { return binary(B::Rem); })
      .Case<arith::CeilDivSIOp>([](auto) { return binary(B::CeilDiv); })
      .Case<arith::FloorDivSIOp>([](auto) { return binary(B::FloorDiv); })
      .Case<arith::MaxSIOp, arith::MaximumFOp>(
          [](auto) { return binary(B::Max); })
      .Case<arith::MinSIOp, arith::MinimumFOp>(
          [](auto) { return binary(B::Min); })
      .Case<arith::MaxNumFOp>([](auto) { return binary(B::MaxNum); })
      .Case<arith::MinNumFOp>([](auto) { return binary(B::MinNum); })
      .Case<arith::AndIOp>([](auto) { return binary(B::And); })
      .Case<arith::OrIOp>([](auto) { return binary(B::Or); })
      .Case<arith::XOrIOp>([](auto) { return binary(B::Xor); })
      .Case<arith::ShLIOp>([](auto) { return binary(B::Shl); })
      .Case<arith::ShRSIOp>([](auto) { return binary(B::Shr); })
      .Case<arith::NegFOp>([](auto) { return unary(U::Neg); })
      .Case<math::ExpOp>([](auto) { return unary(U::Exp); })
      .Case<math::Exp2Op>([](auto) { return unary(U::Exp2); })
      .Case<math::LogOp>([](auto) { return unary(U::Log); })
      .Case<math::Log2Op>([](auto) { return unary(U::Log2); })
      .Case<math::SqrtOp>([](auto) { return unary(U::Sqrt); })
      .Case<math::RsqrtOp>([](auto) { return unary(U::Rsqrt); })
      .Case<math::AbsFOp, math::AbsIOp>([](auto) { return unary(U::Abs); })
      .Case<math::TanhOp>([](auto) { return unary(U::Tanh); })
      // Unsigned sources (the front end makes them of booleans: 0 or 1).
      .Case<arith::ExtUIOp, arith::UIToFPOp>([](auto) { return convert(true); })
      .Case<arith::ExtSIOp, arith::TruncIOp, arith::SIToFPOp, arith::FPToSIOp,
            arith::ExtFOp, arith::TruncFOp, arith::IndexCastOp>(
          [](auto) { return convert(false); })
      .Case([](arith::CmpIOp c) {
        return compare(c.getPredicate(), arith::CmpFPredicate::OEQ);
      })
      .Case([](arith::CmpFOp c) {
        return compare(arith::CmpIPredicate::eq, c.getPredicate());
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The lane operation of tessel's elementwise ops, then of upstream ones.
static std::optional<LaneOp> laneOpOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LaneOp>>(op)
      .Case([](ts::BinaryOp b) { return binary(binOpOf(b.getKind())); })
      .Case(
          [](ts::UnaryOp u) { return unary(unOpOf(u.getKind(), u.getFtz())); })
      .Case([](ts::CastOp c) {
        // i1 converts to 0 or 1.
        return convert(getElementTypeOrSelf(c.getSrc().getType()).isInteger(1));
      })
      .Case([](ts::CmpOp c) {
        auto [ipred, fpred] = predicatesOf(c.getPredicate());
        return compare(ipred, fpred);
      })
      .Default([](Operation *op) { return upstreamLaneOp(op); });
}

static bool applyLaneOp(const LaneOp &op, const ElemType &from,
                        const ElemType &to, ArrayRef<Lane> in, Lane &out,
                        std::string &why) {
  bool isInt = from.kind == ElemKind::Int;
  switch (op.kind) {
  case LaneOp::Kind::Binary:
    return isInt
               ? intBinary(op.bin, from.width, in[0].i, in[1].i, out.i, why)
               : floatBinary(op.bin, from.format, in[0].f, in[1].f, out.f, why);
  case LaneOp::Kind::Unary:
    return unaryLane(op.un, from, in[0], out, why);
  case LaneOp::Kind::Convert:
    out = convertLane(from, to, in[0], op.zeroExtend);
    return true;
  case LaneOp::Kind::Compare:
    out.i = isInt ? cmpInt(op.ipred, from.width, in[0].i, in[1].i)
                  : cmpFloat(op.fpred, in[0].f, in[1].f);
    return true;
  }
  return false;
}

Executor::OptResult Executor::execElementwise(Operation *op) {
  if (op->getNumResults() != 1)
    return std::nullopt;
  if (isa<arith::ConstantOp>(op))
    return execConstant(op);
  if (isa<arith::SelectOp, ts::SelectOp>(op))
    return execSelect(op);
  std::optional<LaneOp> laneOp = laneOpOf(op);
  if (!laneOp)
    return std::nullopt;
  Type fromType = op->getOperand(0).getType();
  Type toType = op->getResult(0).getType();
  std::optional<ElemType> from = ElemType::get(fromType);
  std::optional<ElemType> to = ElemType::get(toType);
  if (!from || from->kind == ElemKind::Ptr)
    return failType(op, fromType);
  if (!to || to->kind == ElemKind::Ptr)
    return failType(op, toType);
  return mapLanes(op, [&](ArrayRef<Lane> in, Lane &out, std::string &why) {
    return applyLaneOp(*laneOp, *from, *to, in, out, why);
  });
}

/// A scalar condition picks a whole value (scalar, tile or online state); a
/// tile condition picks lane by lane.
LogicalResult Executor::execSelect(Operation *op) {
  Value cond = op->getOperand(0);
  if (!isa<ts::TileType>(cond.getType())) {
    set(op->getResult(0), get(op->getOperand((get(cond).ints[0] & 1) ? 1 : 2)));
    return success();
  }
  return mapLanes(op, [](ArrayRef<Lane> in, Lane &out, std::string &) {
    out = (in[0].i & 1) ? in[1] : in[2];
    return true;
  });
}

/// Integer, float and dense (splat or not) constants.
LogicalResult Executor::execConstant(Operation *op) {
  Type type = op->getResult(0).getType();
  std::optional<ElemType> elem = ElemType::get(type);
  if (!elem || elem->kind == ElemKind::Ptr)
    return failType(op, type);
  RtValue out = RtValue::lanes(elem->kind, shapeOf(type));
  auto setFrom = [&](size_t i, Attribute attr) {
    if (auto f = dyn_cast<FloatAttr>(attr))
      out.floats[i] = roundFloat(elem->format, f.getValueAsDouble());
    else
      out.ints[i] = wrapInt(cast<IntegerAttr>(attr).getValue().getSExtValue(),
                            elem->width);
  };
  Attribute value = cast<arith::ConstantOp>(op).getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    auto values = dense.getValues<Attribute>();
    for (size_t i = 0, n = out.numLanes(); i < n; ++i)
      setFrom(i, dense.isSplat() ? values[0] : values[i]);
  } else if (isa<FloatAttr, IntegerAttr>(value)) {
    setFrom(0, value);
  } else {
    return failType(op, type);
  }
  set(op->getResult(0), std::move(out));
  return success();
}

} // namespace tessel
