//===- ExpandOnline.cpp - Online reductions to tile arithmetic ------------===//
//
// A 1:N dialect conversion: each online state value becomes the tiles it is
// made of, and the online ops become max/exp/sum/dot on those tiles. The
// structural SCF patterns carry the state through loops and branches; the
// patterns below do the same for stream_k's regions.
//
//===----------------------------------------------------------------------===//

#include "TileBuilder.h"
#include "tessel/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELEXPANDONLINE
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Converts a state type to its component tiles; everything else is kept.
class StateTypeConverter : public TypeConverter {
public:
  StateTypeConverter() {
    addConversion([](Type type) { return type; });
    addConversion([](SoftmaxStateType type, SmallVectorImpl<Type> &out) {
      Type f32 = Float32Type::get(type.getContext());
      out.push_back(TileType::get({type.getRows()}, f32)); // m
      out.push_back(TileType::get({type.getRows()}, f32)); // l
      out.push_back(
          TileType::get({type.getRows(), type.getCols()}, f32)); // acc
      return success();
    });
    addConversion([](KLStateType type, SmallVectorImpl<Type> &out) {
      // mₛ, lₛ, mₜ, lₜ, A
      out.append(5, TileType::get({type.getRows()},
                                  Float32Type::get(type.getContext())));
      return success();
    });
  }
};

// Every op below gets its own statement: C++ leaves the evaluation order of
// call arguments unspecified, and the IR must not depend on the compiler.

/// The running max with −∞ replaced by 0, so that exp(x − max) of rows that
/// saw nothing yet is exp(−∞) = 0 rather than NaN.
static Value safeMax(TileBuilder &t, Value m) {
  auto type = cast<TileType>(m.getType());
  Value isEmpty = t.equals(m, -INFINITY);
  Value zero = t.splat(type.getShape(), 0);
  return t.select(isEmpty, zero, m);
}

/// x·log2 e.
static Value timesLog2e(TileBuilder &t, Value x) {
  auto type = cast<TileType>(x.getType());
  Value log2e = t.splat(type.getShape(), M_LOG2E);
  return t.mul(x, log2e);
}

/// exp(x·k − max) for a per-row max (of x's rows when x is 2-D), given as
/// maxLog2 = max·log2 e, and a scalar k (null: 1): 2^(x·(k·log2 e) −
/// maxLog2), whose multiply and subtract contract into one fma per element.
/// The result lies in [0, 1] and is summed with the max's own term 1, so
/// flushing results below 2^-126 (ftz) changes nothing the sum keeps.
static Value expBelowMax(TileBuilder &t, Value x, Value maxLog2, Value k = {}) {
  auto type = cast<TileType>(x.getType());
  if (type.getRank() == 2)
    maxLog2 = t.rowBroadcast(maxLog2, type.getDimSize(1));
  OpBuilder &b = t.builder();
  Value factor =
      arith::ConstantOp::create(b, t.location(), b.getF32FloatAttr(M_LOG2E));
  if (k)
    factor = arith::MulFOp::create(b, t.location(), k, factor);
  Value scaledX = t.mul(x, t.splat(type.getShape(), factor));
  Value exponent = t.sub(scaledX, maxLog2);
  return t.exp2Ftz(exponent);
}

/// Folding a block of scores x·k (k a scalar, null: 1) whose row max is
/// blockMax into a running max m: the new max m′, the rescaling exp(m − m′)
/// of the old terms and the block's exp(x·k − m′).
struct Rescaled {
  Value max, scale, p;
};
static Rescaled rescale(TileBuilder &t, Value m, Value blockMax, Value x,
                        Value k = {}) {
  Value mNew = t.max(m, blockMax);
  Value safe = safeMax(t, mNew);
  Value safeLog2 = timesLog2e(t, safe);
  Value scale = expBelowMax(t, m, safeLog2);
  Value p = expBelowMax(t, x, safeLog2, k);
  return {mNew, scale, p};
}
static Rescaled rescale(TileBuilder &t, Value m, Value scores) {
  Value blockMax = t.rowReduce(ReduceKind::max, scores);
  return rescale(t, m, blockMax, scores);
}

/// A tile x·c for one f32 scalar c: x and c.
static std::optional<std::pair<Value, Value>> scalarProduct(Value tile) {
  auto mul = tile.getDefiningOp<BinaryOp>();
  if (!mul || mul.getKind() != BinaryKind::mul)
    return std::nullopt;
  for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())})
    if (auto splat = c.getDefiningOp<SplatOp>())
      if (splat.getSrc().getType().isF32())
        return std::pair(x, splat.getSrc());
  return std::nullopt;
}

/// Scores x·c for one f32 scalar c (attention's softmax scale) that nothing
/// else reads: x and c.
static std::optional<std::pair<Value, Value>> scalarScaled(Value scores) {
  if (!scores.hasOneUse())
    return std::nullopt;
  return scalarProduct(scores);
}

/// Whether `tile` is a splat of a constant, and of which.
static std::optional<double> splatConstant(Value tile) {
  auto splat = tile.getDefiningOp<SplatOp>();
  FloatAttr value;
  if (!splat || !matchPattern(splat.getSrc(), m_Constant(&value)))
    return std::nullopt;
  return value.getValueAsDouble();
}

/// Scores as a kernel masks them: `value` where `mask` holds and −∞
/// elsewhere (a `where`), or the scores themselves (mask null).
struct MaskedScores {
  Value value, mask;
};
static MaskedScores maskedScores(Value scores) {
  if (auto select = scores.getDefiningOp<SelectOp>())
    if (splatConstant(select.getFalseValue()) == -INFINITY)
      return {select.getTrueValue(), select.getCondition()};
  return {scores, {}};
}

/// Whether `x` is finite wherever the kernel's inputs are: a dot onto a
/// finite constant accumulator, optionally times a scalar.
static bool finiteProduct(Value x) {
  if (auto scaled = scalarProduct(x))
    x = scaled->first;
  auto dot = x.getDefiningOp<DotOp>();
  if (!dot)
    return false;
  std::optional<double> acc = splatConstant(dot.getAcc());
  return acc && std::isfinite(*acc);
}

/// rescale() of scores x·c without multiplying the block by c: the row max
/// of x·c is c·max(x) for c ≥ 0 and c·min(x) otherwise (rounding is
/// monotonic, so either is exact), one uniform branch picking the
/// reduction, and c goes into the exponent's fma.
static Rescaled rescaleScaled(TileBuilder &t, Value m, Value x, Value c) {
  auto rowType = cast<TileType>(m.getType());
  OpBuilder &b = t.builder();
  Location loc = t.location();
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  Value nonNegative =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, c, zero);
  auto pick = scf::IfOp::create(b, loc, TypeRange{rowType}, nonNegative,
                                /*withElseRegion=*/true);
  for (auto [block, kind] : {std::pair(pick.thenBlock(), ReduceKind::max),
                             std::pair(pick.elseBlock(), ReduceKind::min)}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(block);
    scf::YieldOp::create(b, loc, t.rowReduce(kind, x));
  }
  Value cRows = t.splat(rowType.getShape(), c);
  Value blockMax = t.mul(pick.getResult(0), cRows);
  return rescale(t, m, blockMax, x, c);
}

/// old·scale + Σ_row p
static Value rescaledSum(TileBuilder &t, Value old, Value scale, Value p) {
  Value blockSum = t.rowReduce(ReduceKind::sum, p);
  Value kept = t.mul(old, scale);
  return t.add(kept, blockSum);
}

/// Two partial states over a common max: the max and each side's scale.
struct MergeScales {
  Value max, scaleA, scaleB;
};
static MergeScales mergeScales(TileBuilder &t, Value ma, Value mb) {
  Value m = t.max(ma, mb);
  Value safe = safeMax(t, m);
  Value safeLog2 = timesLog2e(t, safe);
  Value scaleA = expBelowMax(t, ma, safeLog2);
  Value scaleB = expBelowMax(t, mb, safeLog2);
  return {m, scaleA, scaleB};
}

/// a·scaleA + b·scaleB, with per-row scales broadcast over 2-D tiles.
static Value combine(TileBuilder &t, Value a, Value b, const MergeScales &s) {
  Value sa = s.scaleA, sb = s.scaleB;
  auto type = cast<TileType>(a.getType());
  if (type.getRank() == 2) {
    sa = t.rowBroadcast(sa, type.getDimSize(1));
    sb = t.rowBroadcast(sb, type.getDimSize(1));
  }
  Value scaledA = t.mul(a, sa);
  Value scaledB = t.mul(b, sb);
  return t.add(scaledA, scaledB);
}

/// m + log l, or −∞ for rows that saw nothing (l = 0).
static Value logSumExp(TileBuilder &t, Value m, Value l, Value empty) {
  auto shape = cast<TileType>(l.getType()).getShape();
  Value negInf = t.splat(shape, -INFINITY);
  Value lse = t.add(m, t.log(l));
  return t.select(empty, negInf, lse);
}

struct SoftmaxInitLowering : OpConversionPattern<SoftmaxInitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftmaxInitOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<SoftmaxStateType>(op.getType());
    TileBuilder t(rewriter, op.getLoc());
    int64_t rows = type.getRows();
    Value m = t.splat({rows}, -INFINITY);
    Value l = t.splat({rows}, 0);
    Value acc = t.splat({rows, type.getCols()}, 0);
    rewriter.replaceOpWithMultiple(op, {{m, l, acc}});
    return success();
  }
};

struct OnlineSoftmaxLowering : OpConversionPattern<OnlineSoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OnlineSoftmaxOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange st = adaptor.getState();
    Value scores = llvm::getSingleElement(adaptor.getScores());
    Value values = llvm::getSingleElement(adaptor.getValues());
    TileBuilder t(rewriter, op.getLoc());
    auto valuesType = cast<TileType>(values.getType());
    auto scaled = scalarScaled(op.getScores());
    Rescaled r = scaled ? rescaleScaled(t, st[0], scaled->first, scaled->second)
                        : rescale(t, st[0], scores);
    Value l = rescaledSum(t, st[1], r.scale, r.p);
    Value scaleRows = t.rowBroadcast(r.scale, valuesType.getDimSize(1));
    Value scaledAcc = t.mul(st[2], scaleRows);
    Value p = t.cast(r.p, valuesType.getElementType());
    Value acc = t.dot(p, values, scaledAcc);
    rewriter.replaceOpWithMultiple(op, {{r.max, l, acc}});
    return success();
  }
};

struct SoftmaxMergeLowering : OpConversionPattern<SoftmaxMergeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftmaxMergeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange a = adaptor.getLhs(), b = adaptor.getRhs();
    TileBuilder t(rewriter, op.getLoc());
    MergeScales s = mergeScales(t, a[0], b[0]);
    Value l = combine(t, a[1], b[1], s);
    Value acc = combine(t, a[2], b[2], s);
    rewriter.replaceOpWithMultiple(op, {{s.max, l, acc}});
    return success();
  }
};

struct SoftmaxFinalizeLowering : OpConversionPattern<SoftmaxFinalizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftmaxFinalizeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange st = adaptor.getState();
    TileBuilder t(rewriter, op.getLoc());
    auto accType = cast<TileType>(st[2].getType());
    int64_t cols = accType.getDimSize(1);
    Value empty = t.equals(st[1], 0);
    Value emptyRows = t.rowBroadcast(empty, cols);
    Value zero = t.splat(accType.getShape(), 0);
    // A reciprocal per row, then products: a division per element costs a
    // Newton step each, and an empty row (a decode tile's padding: l = 0)
    // takes the division's slow path for every element of it.
    int64_t rows = accType.getDimSize(0);
    Value one = t.splat({rows}, 1);
    Value inverse = t.div(one, t.select(empty, one, st[1]));
    Value normalised = t.mul(st[2], t.rowBroadcast(inverse, cols));
    Value out = t.select(emptyRows, zero, normalised);
    Value lse = logSumExp(t, st[0], st[1], empty);
    rewriter.replaceOp(op, ValueRange{out, lse});
    return success();
  }
};

struct KLInitLowering : OpConversionPattern<KLInitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KLInitOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rows = cast<KLStateType>(op.getType()).getRows();
    TileBuilder t(rewriter, op.getLoc());
    Value negInf = t.splat({rows}, -INFINITY);
    Value zero = t.splat({rows}, 0);
    rewriter.replaceOpWithMultiple(op, {{negInf, zero, negInf, zero, zero}});
    return success();
  }
};

struct OnlineKLLowering : OpConversionPattern<OnlineKLOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OnlineKLOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange st = adaptor.getState();
    Value s = llvm::getSingleElement(adaptor.getTeacher());
    Value u = llvm::getSingleElement(adaptor.getStudent());
    TileBuilder t(rewriter, op.getLoc());
    // The scores multiplied out (not rescaleScaled): the scale's sign would
    // branch between the teacher's exponentials and the student's product,
    // keeping them live across it (spills in the sm_90a forward).
    Rescaled rs = rescale(t, st[0], s);
    Rescaled ru = rescale(t, st[2], u);
    // Entries masked in both contribute nothing, not NaN (−∞ − −∞). Scores
    // that are products of tiles masked alike differ by a finite value
    // before the mask, whose entries then meet p = 0: no guard per entry.
    MaskedScores ms = maskedScores(op.getTeacher());
    MaskedScores mu = maskedScores(op.getStudent());
    Value diff;
    if (ms.mask == mu.mask && finiteProduct(ms.value) &&
        finiteProduct(mu.value)) {
      diff = t.sub(ms.value, mu.value);
    } else {
      auto shape = cast<TileType>(s.getType()).getShape();
      Value masked = t.equals(s, -INFINITY);
      Value zero = t.splat(shape, 0);
      Value raw = t.sub(s, u);
      diff = t.select(masked, zero, raw);
    }
    Value a = rescaledSum(t, st[4], rs.scale, t.mul(rs.p, diff));
    Value ls = rescaledSum(t, st[1], rs.scale, rs.p);
    Value lu = rescaledSum(t, st[3], ru.scale, ru.p);
    rewriter.replaceOpWithMultiple(op, {{rs.max, ls, ru.max, lu, a}});
    return success();
  }
};

struct KLMergeLowering : OpConversionPattern<KLMergeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KLMergeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange a = adaptor.getLhs(), b = adaptor.getRhs();
    TileBuilder t(rewriter, op.getLoc());
    MergeScales s = mergeScales(t, a[0], b[0]);
    MergeScales u = mergeScales(t, a[2], b[2]);
    Value ls = combine(t, a[1], b[1], s);
    Value lu = combine(t, a[3], b[3], u);
    Value acc = combine(t, a[4], b[4], s);
    rewriter.replaceOpWithMultiple(op, {{s.max, ls, u.max, lu, acc}});
    return success();
  }
};

struct KLFinalizeLowering : OpConversionPattern<KLFinalizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KLFinalizeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange st = adaptor.getState();
    TileBuilder t(rewriter, op.getLoc());
    auto shape = cast<TileType>(st[1].getType()).getShape();
    Value emptyS = t.equals(st[1], 0);
    Value emptyT = t.equals(st[3], 0);
    Value lseS = logSumExp(t, st[0], st[1], emptyS);
    Value lseT = logSumExp(t, st[2], st[3], emptyT);
    // KL = A/lₛ − LSE(s) + LSE(t); rows with no visible key give 0.
    Value cross = t.div(st[4], st[1]);
    Value kl = t.add(t.sub(cross, lseS), lseT);
    Value zero = t.splat(shape, 0);
    kl = t.select(emptyS, zero, kl);
    rewriter.replaceOp(op, ValueRange{kl, lseS, lseT});
    return success();
  }
};

/// stream_k keeps its regions; only their block arguments change type.
struct StreamKSignatureConversion : OpConversionPattern<StreamKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StreamKOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    for (Region *region : {&op.getBody(), &op.getMerge(), &op.getEpilogue()})
      if (failed(rewriter.convertRegionTypes(region, *getTypeConverter())))
        return failure();
    return success();
  }
};

struct YieldConversion : OpConversionPattern<YieldOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(YieldOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> values;
    for (ValueRange v : adaptor.getValues())
      llvm::append_range(values, v);
    rewriter.replaceOpWithNewOp<YieldOp>(op, values);
    return success();
  }
};

struct ExpandOnlinePass
    : tessel::impl::TesselExpandOnlineBase<ExpandOnlinePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    StateTypeConverter converter;
    ConversionTarget target(*ctx);
    target.addIllegalOp<SoftmaxInitOp, OnlineSoftmaxOp, SoftmaxMergeOp,
                        SoftmaxFinalizeOp, KLInitOp, OnlineKLOp, KLMergeOp,
                        KLFinalizeOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addDynamicallyLegalOp<StreamKOp>([&](StreamKOp op) {
      return llvm::all_of(op->getRegions(), [&](Region &r) {
        return converter.isLegal(r.getArgumentTypes());
      });
    });
    target.addDynamicallyLegalOp<YieldOp>(
        [&](YieldOp op) { return converter.isLegal(op.getOperandTypes()); });
    RewritePatternSet patterns(ctx);
    patterns.add<SoftmaxInitLowering, OnlineSoftmaxLowering,
                 SoftmaxMergeLowering, SoftmaxFinalizeLowering, KLInitLowering,
                 OnlineKLLowering, KLMergeLowering, KLFinalizeLowering,
                 StreamKSignatureConversion, YieldConversion>(converter, ctx);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    if (failed(
            applyFullConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
