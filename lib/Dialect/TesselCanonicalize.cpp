//===- TesselCanonicalize.cpp - Canonicalization patterns -----------------===//
//
// Rewrites the canonicalizer applies to tile arithmetic before layouts are
// assigned: each saves work on every element of a tile.
//
//===----------------------------------------------------------------------===//

#include "tessel/TesselDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// x + dot(a, b, 0) -> dot(a, b, x): the product accumulates into x (one
/// tile add fewer, and a warpgroup dot then runs on until x is needed, not
/// until the add). `acc += dot(a, b)` in the DSL is this.
struct AccumulateIntoDot : OpRewritePattern<BinaryOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BinaryOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getKind() != BinaryKind::add)
      return failure();
    for (auto [product, other] : {std::pair(op.getLhs(), op.getRhs()),
                                  std::pair(op.getRhs(), op.getLhs())}) {
      auto dot = product.getDefiningOp<DotOp>();
      if (!dot || !dot->hasOneUse() || !isZeroSplat(dot.getAcc()))
        continue;
      rewriter.replaceOpWithNewOp<DotOp>(op, op.getType(), dot.getA(),
                                         dot.getB(), other);
      rewriter.eraseOp(dot);
      return success();
    }
    return failure();
  }

  static bool isZeroSplat(Value v) {
    auto splat = v.getDefiningOp<SplatOp>();
    return splat && matchPattern(splat.getSrc(), m_AnyZeroFloat());
  }
};

/// exp(x·c − b) -> 2^(x·(c·log2 e) − b′), b′ = b·log2 e, for a scalar c and
/// b broadcast from a smaller tile (the backward's exp(sᵀ·scale − LSE)): the
/// exponent is one fma per element and b′ is computed before the broadcast,
/// where lowering exp would multiply every element by log2 e. The rounding
/// is that of exp's own x·log2 e (the constant folds into c).
struct ExpOfScaledDifference : OpRewritePattern<UnaryOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UnaryOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getKind() != UnaryKind::exp ||
        !getElementTypeOrSelf(op.getType()).isF32())
      return failure();
    auto sub = op.getSrc().getDefiningOp<BinaryOp>();
    if (!sub || sub.getKind() != BinaryKind::sub || !sub->hasOneUse())
      return failure();
    auto product = sub.getLhs().getDefiningOp<BinaryOp>();
    auto broadcast = sub.getRhs().getDefiningOp<BroadcastOp>();
    if (!product || product.getKind() != BinaryKind::mul ||
        !product->hasOneUse() || !broadcast)
      return failure();
    for (auto [x, factor] : {std::pair(product.getLhs(), product.getRhs()),
                             std::pair(product.getRhs(), product.getLhs())}) {
      auto splat = factor.getDefiningOp<SplatOp>();
      if (!splat)
        continue;
      Location loc = op.getLoc();
      Value log2e = arith::ConstantOp::create(
          rewriter, loc, rewriter.getF32FloatAttr(M_LOG2E));
      Value c = arith::MulFOp::create(rewriter, loc, splat.getSrc(), log2e);
      Value cTile = SplatOp::create(rewriter, loc, x.getType(), c);
      Value scaledX =
          BinaryOp::create(rewriter, loc, BinaryKind::mul, x, cTile);
      Value small = broadcast.getSrc();
      Value log2eTile = SplatOp::create(rewriter, loc, small.getType(), log2e);
      Value scaledSmall =
          BinaryOp::create(rewriter, loc, BinaryKind::mul, small, log2eTile);
      Value scaledB =
          BroadcastOp::create(rewriter, loc, broadcast.getType(), scaledSmall);
      Value exponent =
          BinaryOp::create(rewriter, loc, BinaryKind::sub, scaledX, scaledB);
      rewriter.replaceOpWithNewOp<UnaryOp>(op, UnaryKind::exp2, exponent,
                                           op.getFtz());
      return success();
    }
    return failure();
  }
};

} // namespace

void UnaryOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                          MLIRContext *context) {
  patterns.add<ExpOfScaledDifference>(context);
}

void BinaryOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *context) {
  patterns.add<AccumulateIntoDot>(context);
}
