//===- ElementwiseToLLVM.cpp - Slot-by-slot ops and thread identity -------===//
//
// Elementwise tile ops apply the arith/math op of their kind to each slot;
// the upstream arith lowering and the math patterns below then take the
// scalars to LLVM. Operands of one elementwise op share a layout
// (tessel-assign-layouts), so slot i of every operand is the same element.
//
// Precision of the math functions (no libdevice: the hardware's approximate
// units, as CUDA's fast intrinsics use them; f16/bf16 compute in f32):
// - exp(x) = ex2.approx.f32(x * log2 e), CUDA's __expf: at most
//   2 + floor(|1.173 x|) ulp, the rounding of x * log2 e growing with |x|
//   (about 1e-5 relative at |x| = 80).
// - log(x) = lg2.approx.f32(x) * ln 2, CUDA's __logf: at most 2^-21.41
//   absolute on [0.5, 2], 3 ulp elsewhere.
// - exp2 and log2 are ex2/lg2.approx alone: 2 ulp (log2: 2^-22 absolute on
//   [0.5, 2]).
// - exp(-inf) = 0, log(0) = -inf and NaN propagates, which the online
//   softmax relies on; subnormal inputs and results are kept (no .ftz)
//   unless the op says `ftz` (then ex2.approx.ftz.f32: results below 2^-126
//   are 0; the hardware unit needs no range fix-up around it).
// - sqrt is IEEE (sqrt.rn); rsqrt(x) = 1 / sqrt(x) with both operations
//   correctly rounded (not rsqrt.approx); + - * / are IEEE round to nearest,
//   except that the code generator contracts a multiply feeding an add into
//   one fma.rn (one rounding instead of two; see createNVPTXTargetMachine).
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Lowers an op that computes each slot of its result from the same slot of
/// its operands (a scalar operand or result is a single slot).
template <typename OpTy> struct SlotwisePattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OneToNOpAdaptor = typename OpConversionPattern<OpTy>::OneToNOpAdaptor;

  LogicalResult
  matchAndRewrite(OpTy op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ArrayRef<ValueRange> operands = adaptor.getOperands();
    size_t numSlots = 1;
    for (ValueRange operand : operands)
      numSlots = std::max(numSlots, operand.size());
    Slots result;
    for (size_t i = 0; i < numSlots; ++i) {
      SmallVector<Value> args;
      for (ValueRange operand : operands)
        args.push_back(operand.size() == 1 ? operand[0] : operand[i]);
      result.push_back(lowerSlot(op, args, rewriter));
    }
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }

  virtual Value lowerSlot(OpTy op, ArrayRef<Value> args,
                          OpBuilder &b) const = 0;
};

static bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

/// Computes `fn` on f32, extending and rounding narrower floats.
static Value inF32(OpBuilder &b, Location loc, Value x,
                   function_ref<Value(Value)> fn) {
  Type type = x.getType();
  Type f32 = b.getF32Type();
  if (type == f32)
    return fn(x);
  Value wide = arith::ExtFOp::create(b, loc, f32, x);
  return arith::TruncFOp::create(b, loc, type, fn(wide));
}

static Value intrinsic(OpBuilder &b, Location loc, StringRef name, Value x) {
  return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                       b.getStringAttr(name), ValueRange{x})
      .getResult(0);
}

static Value ex2(OpBuilder &b, Location loc, Value x) {
  return intrinsic(b, loc, "llvm.nvvm.ex2.approx.f32", x);
}

static Value ex2Ftz(OpBuilder &b, Location loc, Value x) {
  return intrinsic(b, loc, "llvm.nvvm.ex2.approx.ftz.f32", x);
}

static Value lg2(OpBuilder &b, Location loc, Value x) {
  return intrinsic(b, loc, "llvm.nvvm.lg2.approx.f", x);
}

static Value scaled(OpBuilder &b, Location loc, Value x, double factor) {
  Value c = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(factor));
  return arith::MulFOp::create(b, loc, x, c);
}

struct ClockLowering : OpConversionPattern<ClockOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClockOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::Clock64Op>(op, rewriter.getI64Type());
    return success();
  }
};

struct BinaryLowering : SlotwisePattern<BinaryOp> {
  using SlotwisePattern::SlotwisePattern;
  Value lowerSlot(BinaryOp op, ArrayRef<Value> args,
                  OpBuilder &b) const override {
    Location loc = op.getLoc();
    Value x = args[0], y = args[1];
    bool f = isFloat(x);
    switch (op.getKind()) {
    case BinaryKind::add:
      return f ? arith::AddFOp::create(b, loc, x, y).getResult()
               : arith::AddIOp::create(b, loc, x, y).getResult();
    case BinaryKind::sub:
      return f ? arith::SubFOp::create(b, loc, x, y).getResult()
               : arith::SubIOp::create(b, loc, x, y).getResult();
    case BinaryKind::mul:
      return f ? arith::MulFOp::create(b, loc, x, y).getResult()
               : arith::MulIOp::create(b, loc, x, y).getResult();
    case BinaryKind::div:
      return f ? arith::DivFOp::create(b, loc, x, y).getResult()
               : arith::DivSIOp::create(b, loc, x, y).getResult();
    case BinaryKind::rem:
      return f ? arith::RemFOp::create(b, loc, x, y).getResult()
               : arith::RemSIOp::create(b, loc, x, y).getResult();
    // tessel max/min propagate NaN: max.NaN on sm_80+.
    case BinaryKind::max:
      return f ? arith::MaximumFOp::create(b, loc, x, y).getResult()
               : arith::MaxSIOp::create(b, loc, x, y).getResult();
    case BinaryKind::min:
      return f ? arith::MinimumFOp::create(b, loc, x, y).getResult()
               : arith::MinSIOp::create(b, loc, x, y).getResult();
    case BinaryKind::and_:
      return arith::AndIOp::create(b, loc, x, y);
    case BinaryKind::or_:
      return arith::OrIOp::create(b, loc, x, y);
    case BinaryKind::xor_:
      return arith::XOrIOp::create(b, loc, x, y);
    case BinaryKind::shl:
      return arith::ShLIOp::create(b, loc, x, y);
    case BinaryKind::shr:
      return arith::ShRSIOp::create(b, loc, x, y);
    }
    llvm_unreachable("unknown binary kind");
  }
};

struct UnaryLowering : SlotwisePattern<UnaryOp> {
  using SlotwisePattern::SlotwisePattern;
  Value lowerSlot(UnaryOp op, ArrayRef<Value> args,
                  OpBuilder &b) const override {
    Location loc = op.getLoc();
    Value x = args[0];
    switch (op.getKind()) {
    case UnaryKind::neg:
      if (isFloat(x))
        return arith::NegFOp::create(b, loc, x);
      return arith::SubIOp::create(
          b, loc,
          arith::ConstantOp::create(b, loc, b.getIntegerAttr(x.getType(), 0)),
          x);
    case UnaryKind::exp:
      if (op.getFtz())
        return inF32(b, loc, x, [&](Value v) {
          return ex2Ftz(b, loc, scaled(b, loc, v, M_LOG2E));
        });
      return math::ExpOp::create(b, loc, x);
    case UnaryKind::exp2:
      if (op.getFtz())
        return inF32(b, loc, x, [&](Value v) { return ex2Ftz(b, loc, v); });
      return math::Exp2Op::create(b, loc, x);
    case UnaryKind::log:
      return math::LogOp::create(b, loc, x);
    case UnaryKind::log2:
      return math::Log2Op::create(b, loc, x);
    case UnaryKind::sqrt:
      return math::SqrtOp::create(b, loc, x);
    case UnaryKind::rsqrt:
      return math::RsqrtOp::create(b, loc, x);
    case UnaryKind::abs:
      return isFloat(x) ? math::AbsFOp::create(b, loc, x).getResult()
                        : math::AbsIOp::create(b, loc, x).getResult();
    case UnaryKind::not_:
      return arith::XOrIOp::create(
          b, loc, x,
          arith::ConstantOp::create(b, loc, b.getIntegerAttr(x.getType(), -1)));
    }
    llvm_unreachable("unknown unary kind");
  }
};

/// Integers compare signed; float `ne` is unordered (true on NaN), the
/// other float predicates ordered: the interpreter's C semantics.
struct CmpLowering : SlotwisePattern<CmpOp> {
  using SlotwisePattern::SlotwisePattern;
  Value lowerSlot(CmpOp op, ArrayRef<Value> args, OpBuilder &b) const override {
    using I = arith::CmpIPredicate;
    using F = arith::CmpFPredicate;
    static const struct {
      CmpPredicate pred;
      I ipred;
      F fpred;
    } table[] = {
        {CmpPredicate::lt, I::slt, F::OLT}, {CmpPredicate::le, I::sle, F::OLE},
        {CmpPredicate::gt, I::sgt, F::OGT}, {CmpPredicate::ge, I::sge, F::OGE},
        {CmpPredicate::eq, I::eq, F::OEQ},  {CmpPredicate::ne, I::ne, F::UNE}};
    const auto *entry = llvm::find_if(
        table, [&](const auto &e) { return e.pred == op.getPredicate(); });
    if (isFloat(args[0]))
      return arith::CmpFOp::create(b, op.getLoc(), entry->fpred, args[0],
                                   args[1]);
    return arith::CmpIOp::create(b, op.getLoc(), entry->ipred, args[0],
                                 args[1]);
  }
};

struct SelectLowering : SlotwisePattern<SelectOp> {
  using SlotwisePattern::SlotwisePattern;
  Value lowerSlot(SelectOp op, ArrayRef<Value> args,
                  OpBuilder &b) const override {
    return arith::SelectOp::create(b, op.getLoc(), args[0], args[1], args[2]);
  }
};

/// Float to float rounds to nearest even, float to integer truncates toward
/// zero (cvt.rzi saturates), integers sign-extend or wrap, i1 is 0 or 1.
struct CastLowering : SlotwisePattern<CastOp> {
  using SlotwisePattern::SlotwisePattern;
  Value lowerSlot(CastOp op, ArrayRef<Value> args,
                  OpBuilder &b) const override {
    Location loc = op.getLoc();
    Value x = args[0];
    Type from = x.getType();
    Type to = getElementTypeOrSelf(op.getResult().getType());
    if (from == to)
      return x;
    bool fromBool = from.isInteger(1);
    if (isa<FloatType>(from) && isa<FloatType>(to))
      return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
                 ? arith::ExtFOp::create(b, loc, to, x).getResult()
                 : arith::TruncFOp::create(b, loc, to, x).getResult();
    if (isa<FloatType>(from))
      return arith::FPToSIOp::create(b, loc, to, x);
    if (isa<FloatType>(to))
      return fromBool ? arith::UIToFPOp::create(b, loc, to, x).getResult()
                      : arith::SIToFPOp::create(b, loc, to, x).getResult();
    if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      return arith::TruncIOp::create(b, loc, to, x);
    return fromBool ? arith::ExtUIOp::create(b, loc, to, x).getResult()
                    : arith::ExtSIOp::create(b, loc, to, x).getResult();
  }
};

/// f32 to f16/bf16 two slots at a time: one cvt.rn.{f16,bf16}x2.f32 writes
/// both halves of a register, where two scalar conversions each fill a
/// register and a permute packs them (for the A operand of an MMA, whose
/// registers hold element pairs in slot order).
struct NarrowingCastPairs : OpConversionPattern<CastOp> {
  NarrowingCastPairs(TypeConverter &converter, MLIRContext *ctx)
      : OpConversionPattern(converter, ctx, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(CastOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange src = adaptor.getSrc();
    Type to = getElementTypeOrSelf(op.getResult().getType());
    if (src.size() < 2 || src.size() % 2 != 0 ||
        !src.front().getType().isF32() || !(to.isF16() || to.isBF16()))
      return failure();
    Location loc = op.getLoc();
    auto narrow = VectorType::get({2}, to);
    Slots result;
    for (size_t i = 0; i < src.size(); i += 2) {
      Value pair = vectorOf(rewriter, loc, src.slice(i, 2));
      Value packed = LLVM::FPTruncOp::create(rewriter, loc, narrow, pair);
      for (int64_t j = 0; j < 2; ++j)
        result.push_back(laneOf(rewriter, loc, packed, j));
    }
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }
};

struct AddPtrLowering : SlotwisePattern<AddPtrOp> {
  using SlotwisePattern::SlotwisePattern;
  Value lowerSlot(AddPtrOp op, ArrayRef<Value> args,
                  OpBuilder &b) const override {
    auto ptr = cast<PtrType>(getElementTypeOrSelf(op.getPtr().getType()));
    Type pointee = getTypeConverter()->convertType(ptr.getPointeeType());
    return LLVM::GEPOp::create(b, op.getLoc(), args[0].getType(), pointee,
                               args[0], ValueRange{args[1]});
  }
};

struct SplatLowering : OpConversionPattern<SplatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SplatOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value src = llvm::getSingleElement(adaptor.getSrc());
    int64_t n = getLayout(op.getType()).getNumSlots();
    rewriter.replaceOpWithMultiple(op, {Slots(n, src)});
    return success();
  }
};

struct ArangeLowering : OpConversionPattern<ArangeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ArangeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    TileLayout layout = getLayout(op.getType());
    ThreadLayout thread(rewriter, loc, layout);
    Value start = i32Constant(rewriter, loc, op.getStart());
    Slots result;
    for (int64_t j = 0, e = layout.getNumSlots(); j < e; ++j)
      result.push_back(
          arith::AddIOp::create(rewriter, loc, start, thread.coord(0, j)));
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }
};

template <typename OpTy, typename XOp, typename YOp, typename ZOp>
struct GridQueryLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type i32 = rewriter.getI32Type();
    Location loc = op.getLoc();
    Value v;
    switch (op.getAxis()) {
    case 0:
      v = XOp::create(rewriter, loc, i32);
      break;
    case 1:
      v = YOp::create(rewriter, loc, i32);
      break;
    default:
      v = ZOp::create(rewriter, loc, i32);
      break;
    }
    rewriter.replaceOp(op, v);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Scalar math: approximate hardware units instead of libm calls
//===----------------------------------------------------------------------===//

/// A math op on one float, lowered through `fn` on f32.
template <typename OpTy> struct ApproxMathLowering : OpConversionPattern<OpTy> {
  using Fn = Value (*)(OpBuilder &, Location, Value);
  ApproxMathLowering(TypeConverter &converter, MLIRContext *ctx, Fn fn)
      : OpConversionPattern<OpTy>(converter, ctx, /*benefit=*/2), fn(fn) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<FloatType>(op.getType()))
      return failure();
    Location loc = op.getLoc();
    rewriter.replaceOp(op,
                       inF32(rewriter, loc, adaptor.getOperand(),
                             [&](Value x) { return fn(rewriter, loc, x); }));
    return success();
  }

  Fn fn;
};

static Value lowerExp(OpBuilder &b, Location loc, Value x) {
  return ex2(b, loc, scaled(b, loc, x, M_LOG2E));
}
static Value lowerLog(OpBuilder &b, Location loc, Value x) {
  return scaled(b, loc, lg2(b, loc, x), M_LN2);
}
static Value lowerRsqrt(OpBuilder &b, Location loc, Value x) {
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0));
  return arith::DivFOp::create(b, loc, one, math::SqrtOp::create(b, loc, x));
}

} // namespace

void mlir::tessel::populateElementwisePatterns(LLVMTypeConverter &converter,
                                               RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<BinaryLowering, ClockLowering, UnaryLowering, CmpLowering,
               SelectLowering, CastLowering, NarrowingCastPairs, AddPtrLowering,
               SplatLowering, ArangeLowering,
               GridQueryLowering<ProgramIdOp, NVVM::BlockIdXOp,
                                 NVVM::BlockIdYOp, NVVM::BlockIdZOp>,
               GridQueryLowering<NumProgramsOp, NVVM::GridDimXOp,
                                 NVVM::GridDimYOp, NVVM::GridDimZOp>>(converter,
                                                                      ctx);
  patterns.add<ApproxMathLowering<math::ExpOp>>(converter, ctx, lowerExp);
  patterns.add<ApproxMathLowering<math::Exp2Op>>(converter, ctx, ex2);
  patterns.add<ApproxMathLowering<math::LogOp>>(converter, ctx, lowerLog);
  patterns.add<ApproxMathLowering<math::Log2Op>>(converter, ctx, lg2);
  patterns.add<ApproxMathLowering<math::RsqrtOp>>(converter, ctx, lowerRsqrt);
}
