//===- LayoutToLLVM.cpp - Shape and layout changes ------------------------===//
//
// broadcast, expand_dims and (with the permuted layout) trans only rename
// slots: tessel-assign-layouts gives their operands and results layouts
// where every thread already holds the elements it needs. reshape,
// extract_slice, convert_layout and other transposes move elements between
// threads through shared memory.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Result slot i takes operand slot `srcSlotOf(local indices of i)`.
static Slots renameSlots(ValueRange src, const TileLayout &dst,
                         function_ref<int64_t(ArrayRef<int64_t>)> srcSlotOf) {
  Slots result;
  for (int64_t slot = 0, e = dst.getNumSlots(); slot < e; ++slot)
    result.push_back(src[srcSlotOf(dst.getLocalIndices(slot))]);
  return result;
}

/// A size-1 dimension repeats along the same lanes and warps: each result
/// slot reads the operand slot at the same local index modulo the
/// operand's (all of whose slots along that dimension hold element 0).
struct BroadcastLowering : OpConversionPattern<BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto srcType = cast<TileType>(op.getSrc().getType());
    auto dstType = cast<TileType>(op.getType());
    if (srcType.getEncoding() != dstType.getEncoding())
      return rewriter.notifyMatchFailure(
          op, "expects the operand and result in one layout");
    TileLayout src = getLayout(srcType);
    rewriter.replaceOpWithMultiple(
        op, {renameSlots(adaptor.getSrc(), getLayout(dstType),
                         [&](ArrayRef<int64_t> local) {
                           SmallVector<int64_t> from(local);
                           for (unsigned d = 0; d < from.size(); ++d)
                             from[d] %= src.getDim(d).numLocal();
                           return src.getSlot(from);
                         })});
    return success();
  }
};

/// The operand's #tessel.slice layout holds it as the result's layout holds
/// the result: drop the new dimension's index.
struct ExpandDimsLowering : OpConversionPattern<ExpandDimsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ExpandDimsOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto srcType = cast<TileType>(op.getSrc().getType());
    auto dstType = cast<TileType>(op.getType());
    unsigned axis = op.getAxis();
    auto want =
        SliceEncodingAttr::get(getContext(), axis, dstType.getEncoding());
    if (srcType.getEncoding() != want)
      return rewriter.notifyMatchFailure(
          op, "expects the operand in the slice of the result's layout");
    TileLayout src = getLayout(srcType);
    rewriter.replaceOpWithMultiple(
        op, {renameSlots(adaptor.getSrc(), getLayout(dstType),
                         [&](ArrayRef<int64_t> local) {
                           SmallVector<int64_t> from(local);
                           from.erase(from.begin() + axis);
                           return src.getSlot(from);
                         })});
    return success();
  }
};

struct TransLowering : OpConversionPattern<TransOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto srcType = cast<TileType>(op.getSrc().getType());
    auto dstType = cast<TileType>(op.getType());
    TileLayout src = getLayout(srcType), dst = getLayout(dstType);
    ArrayRef<int32_t> perm = op.getOrder();
    Slots result;
    if (dst.sameDistribution(src, perm)) {
      result = renameSlots(adaptor.getSrc(), dst, [&](ArrayRef<int64_t> local) {
        SmallVector<int64_t> from(local.size());
        for (auto [i, d] : llvm::enumerate(perm))
          from[d] = local[i];
        return src.getSlot(from);
      });
    } else {
      result = remapThroughShared(
          rewriter, op.getLoc(), adaptor.getSrc(), srcType, dstType,
          [&](OpBuilder &b, ArrayRef<Value> coords) {
            SmallVector<Value> from(coords.size());
            for (auto [i, d] : llvm::enumerate(perm))
              from[d] = coords[i];
            return linearIndex(b, op.getLoc(), from, srcType.getShape());
          });
    }
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }
};

/// Row-major order is kept, so the element index is the same in both.
struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto dstType = cast<TileType>(op.getType());
    rewriter.replaceOpWithMultiple(
        op, {remapThroughShared(rewriter, op.getLoc(), adaptor.getSrc(),
                                cast<TileType>(op.getSrc().getType()), dstType,
                                [&](OpBuilder &b, ArrayRef<Value> coords) {
                                  return linearIndex(b, op.getLoc(), coords,
                                                     dstType.getShape());
                                })});
    return success();
  }
};

struct ExtractSliceLowering : OpConversionPattern<ExtractSliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ExtractSliceOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = cast<TileType>(op.getSrc().getType());
    auto type = cast<TileType>(op.getType());
    // Every thread already holds its elements of the slice: no data moves.
    if (FailureOr<SmallVector<int64_t>> slots = sliceSlots(op);
        succeeded(slots)) {
      ValueRange src = adaptor.getSrc();
      SmallVector<Value> values;
      for (int64_t slot : *slots)
        values.push_back(src[slot]);
      rewriter.replaceOpWithMultiple(op, {values});
      return success();
    }
    SmallVector<OpFoldResult> origin =
        sliceOrigin(rewriter, loc, op.getStaticOffsets(), adaptor.getOffsets(),
                    type.getShape(), srcType.getShape());
    SmallVector<int64_t> scratch =
        remapScratchShape(srcType, type, op.getStaticOffsets());
    rewriter.replaceOpWithMultiple(
        op, {remapThroughShared(
                rewriter, loc, adaptor.getSrc(), srcType, type,
                [&](OpBuilder &b, ArrayRef<Value> coords) {
                  SmallVector<Value> from;
                  for (auto [c, offset] : llvm::zip(coords, origin))
                    from.push_back(addOffset(b, loc, c, offset));
                  return linearIndex(b, loc, from, scratch);
                },
                scratch)});
    return success();
  }
};

struct ConvertLayoutLowering : OpConversionPattern<ConvertLayoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvertLayoutOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto srcType = cast<TileType>(op.getSrc().getType());
    auto dstType = cast<TileType>(op.getType());
    if (getLayout(srcType).sameDistribution(getLayout(dstType))) {
      rewriter.replaceOpWithMultiple(op, {adaptor.getSrc()});
      return success();
    }
    SmallVector<int64_t> scratch = remapScratchShape(srcType, dstType);
    rewriter.replaceOpWithMultiple(
        op, {remapThroughShared(
                rewriter, op.getLoc(), adaptor.getSrc(), srcType, dstType,
                [&](OpBuilder &b, ArrayRef<Value> coords) {
                  return linearIndex(b, op.getLoc(), coords, scratch);
                },
                scratch)});
    return success();
  }
};

} // namespace

void mlir::tessel::populateLayoutPatterns(LLVMTypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<BroadcastLowering, ExpandDimsLowering, TransLowering,
               ReshapeLowering, ExtractSliceLowering, ConvertLayoutLowering>(
      converter, patterns.getContext());
}
