//===- ReduceToLLVM.cpp - Reductions along an axis ------------------------===//
//
// Three steps, each combining in a fixed order so that every thread ends
// with bit-identical results (the slice layout of the result replicates
// them): the thread's own elements along the axis, then the lanes along it
// by butterfly shuffles, then the warps along it through shared memory.
// Wrapped copies (a layout wider than the axis) contribute the identity, so
// a sum counts each element once.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessel;

namespace {

Value combine(OpBuilder &b, Location loc, ReduceKind kind, Value x, Value y) {
  bool f = isa<FloatType>(x.getType());
  switch (kind) {
  case ReduceKind::sum:
    return f ? arith::AddFOp::create(b, loc, x, y).getResult()
             : arith::AddIOp::create(b, loc, x, y).getResult();
  case ReduceKind::max:
    return f ? arith::MaximumFOp::create(b, loc, x, y).getResult()
             : arith::MaxSIOp::create(b, loc, x, y).getResult();
  case ReduceKind::min:
    return f ? arith::MinimumFOp::create(b, loc, x, y).getResult()
             : arith::MinSIOp::create(b, loc, x, y).getResult();
  }
  llvm_unreachable("unknown reduce kind");
}

Value identity(OpBuilder &b, Location loc, ReduceKind kind, Type type) {
  if (auto f = dyn_cast<FloatType>(type)) {
    double v = kind == ReduceKind::sum   ? 0.0
               : kind == ReduceKind::max ? -INFINITY
                                         : INFINITY;
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f, v));
  }
  unsigned width = type.getIntOrFloatBitWidth();
  APInt v = kind == ReduceKind::sum   ? APInt::getZero(width)
            : kind == ReduceKind::max ? APInt::getSignedMinValue(width)
                                      : APInt::getSignedMaxValue(width);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
}

struct ReduceLowering : OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = cast<TileType>(op.getSrc().getType());
    unsigned axis = op.getAxis();
    auto resultTile = dyn_cast<TileType>(op.getType());
    if (resultTile &&
        resultTile.getEncoding() !=
            SliceEncodingAttr::get(getContext(), axis, srcType.getEncoding()))
      return rewriter.notifyMatchFailure(
          op, "expects the result in the slice of the operand's layout");
    TileLayout layout = getLayout(srcType);
    const DimLayout &along = layout.getDim(axis);
    ThreadLayout thread(rewriter, loc, layout);
    ValueRange src = adaptor.getSrc();
    Type elem = src.front().getType();
    ReduceKind kind = op.getKind();

    // Result slots enumerate the other dimensions' local indices row-major,
    // as the slice layout numbers them.
    SmallVector<int64_t> others;
    for (unsigned d = 0; d < layout.getRank(); ++d)
      if (d != axis)
        others.push_back(layout.getDim(d).numLocal());
    int64_t numResults = 1;
    for (int64_t n : others)
      numResults *= n;

    SmallVector<SmallVector<int64_t>> resultLocals;
    Slots partial;
    for (int64_t r = 0; r < numResults; ++r) {
      SmallVector<int64_t> local(others.size());
      for (int64_t i = others.size(), rest = r; i-- > 0; rest /= others[i])
        local[i] = rest % others[i];
      resultLocals.push_back(local);
      Value acc;
      for (int64_t j = 0; j < along.numLocal(); ++j) {
        SmallVector<int64_t> at(local);
        at.insert(at.begin() + axis, j);
        Value v = src[layout.getSlot(at)];
        if (Value inside = thread.isInside(axis, j))
          v = arith::SelectOp::create(rewriter, loc, inside, v,
                                      identity(rewriter, loc, kind, elem));
        acc = acc ? combine(rewriter, loc, kind, acc, v) : v;
      }
      for (unsigned k = 1; k < along.lanes; k *= 2)
        acc = combine(rewriter, loc, kind, acc,
                      shuffleXor(rewriter, loc, acc, along.laneStride * k));
      partial.push_back(acc);
    }

    if (along.warps > 1)
      partial = combineWarps(rewriter, loc, op, layout, thread, resultLocals,
                             partial);
    rewriter.replaceOpWithMultiple(op, {partial});
    return success();
  }

  /// Every thread writes its warp's partials (threads of a warp hold equal
  /// ones), then reads and combines all warps' in warp order. Where the
  /// layout is wider than the other dimensions, the positions past their end
  /// wrap onto real ones: only the real ones write (two writers of one slot
  /// race), all read.
  Slots combineWarps(OpBuilder &b, Location loc, ReduceOp op,
                     const TileLayout &layout, ThreadLayout &thread,
                     ArrayRef<SmallVector<int64_t>> resultLocals,
                     ArrayRef<Value> partial) const {
    unsigned axis = op.getAxis();
    unsigned warps = layout.getDim(axis).warps;
    SmallVector<int64_t> resultShape(
        cast<TileType>(op.getSrc().getType()).getShape());
    resultShape.erase(resultShape.begin() + axis);
    Type elem = partial.front().getType();
    // (dimension, local index) of each dimension but the axis.
    auto forOtherDims = [&](ArrayRef<int64_t> local,
                            function_ref<void(unsigned, int64_t)> fn) {
      unsigned d = 0;
      for (int64_t j : local) {
        d += d == axis;
        fn(d++, j);
      }
    };
    auto rowBase = [&](ArrayRef<int64_t> local) -> Value {
      SmallVector<Value> coords;
      forOtherDims(local, [&](unsigned d, int64_t j) {
        coords.push_back(thread.coord(d, j));
      });
      Value row = coords.empty() ? i32Constant(b, loc, 0)
                                 : linearIndex(b, loc, coords, resultShape);
      return arith::MulIOp::create(b, loc, row, i32Constant(b, loc, warps));
    };
    auto inside = [&](ArrayRef<int64_t> local) -> Value {
      Value all;
      forOtherDims(local, [&](unsigned d, int64_t j) {
        if (Value in = thread.isInside(d, j))
          all = all ? arith::AndIOp::create(b, loc, all, in) : in;
      });
      return all;
    };
    emitBarrier(b, loc);
    Value warp = thread.warpIndex(axis);
    for (auto [local, value] : llvm::zip(resultLocals, partial)) {
      Value index = arith::AddIOp::create(b, loc, rowBase(local), warp);
      emitIf(b, loc, inside(local), [&](OpBuilder &b) {
        storeShared(b, loc, value, sharedElementPtr(b, loc, elem, 0, index));
      });
    }
    emitBarrier(b, loc);
    Slots result;
    for (ArrayRef<int64_t> local : resultLocals) {
      Value base = rowBase(local);
      Value acc;
      for (unsigned w = 0; w < warps; ++w) {
        Value index =
            arith::AddIOp::create(b, loc, base, i32Constant(b, loc, w));
        Value v =
            loadShared(b, loc, elem, sharedElementPtr(b, loc, elem, 0, index));
        acc = acc ? combine(b, loc, op.getKind(), acc, v) : v;
      }
      result.push_back(acc);
    }
    return result;
  }
};

} // namespace

void mlir::tessel::populateReducePatterns(LLVMTypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<ReduceLowering>(converter, patterns.getContext());
}
