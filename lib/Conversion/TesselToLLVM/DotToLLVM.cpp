//===- DotToLLVM.cpp - Matrix products on the CUDA cores ------------------===//
//
// Correct before fast: both operands go to shared memory (row-major A, then
// B), and each thread accumulates its slots of the result with f32 FMAs over
// K, reading the rows of A and the columns of B its slots need. This is the
// place mma.sync (and wgmma) will take, fed by MMA operand layouts.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

struct DotLowering : OpConversionPattern<DotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DotOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto aType = cast<TileType>(op.getA().getType());
    auto bType = cast<TileType>(op.getB().getType());
    int64_t k = aType.getDimSize(1);
    int64_t n = bType.getDimSize(1);
    int64_t bOffset = getDotBOffset(op);
    Type aElem = adaptor.getA().front().getType();
    Type bElem = adaptor.getB().front().getType();

    emitBarrier(rewriter, loc);
    auto stage = [&](ValueRange values, TileType type, int64_t byteOffset) {
      ThreadLayout thread(rewriter, loc, getLayout(type));
      for (auto [slot, value] : llvm::enumerate(values)) {
        Value index =
            linearIndex(rewriter, loc, thread.coords(slot), type.getShape());
        Value ptr =
            sharedElementPtr(rewriter, loc, value.getType(), byteOffset, index);
        storeOwned(rewriter, loc, value, ptr, thread.isOwner(slot),
                   getDotBytes(op));
      }
    };
    stage(adaptor.getA(), aType, 0);
    stage(adaptor.getB(), bType, bOffset);
    emitBarrier(rewriter, loc);

    TileLayout acc = getLayout(op.getType());
    ThreadLayout thread(rewriter, loc, acc);
    int64_t rows = acc.getDim(0).numLocal(), cols = acc.getDim(1).numLocal();
    // Element offsets of the thread's rows in A and columns in B.
    SmallVector<Value> rowStarts, colStarts;
    for (int64_t i = 0; i < rows; ++i) {
      Value row = thread.coord(0, i);
      rowStarts.push_back(arith::MulIOp::create(rewriter, loc, row,
                                                i32Constant(rewriter, loc, k)));
    }
    for (int64_t j = 0; j < cols; ++j)
      colStarts.push_back(thread.coord(1, j));

    Type f32 = rewriter.getF32Type();
    auto toF32 = [&](OpBuilder &b, Value v) -> Value {
      return v.getType() == f32 ? v : arith::ExtFOp::create(b, loc, f32, v);
    };
    Value lower = i32Constant(rewriter, loc, 0);
    Value upper = i32Constant(rewriter, loc, k);
    Value step = i32Constant(rewriter, loc, 1);
    auto loop = scf::ForOp::create(
        rewriter, loc, lower, upper, step, adaptor.getAcc(),
        [&](OpBuilder &b, Location loc, Value kk, ValueRange sums) {
          SmallVector<Value> as, bs;
          for (Value start : rowStarts) {
            Value index = arith::AddIOp::create(b, loc, start, kk);
            as.push_back(toF32(
                b, loadShared(b, loc, aElem,
                              sharedElementPtr(b, loc, aElem, 0, index))));
          }
          Value bRow =
              arith::MulIOp::create(b, loc, kk, i32Constant(b, loc, n));
          for (Value start : colStarts) {
            Value index = arith::AddIOp::create(b, loc, bRow, start);
            bs.push_back(toF32(
                b,
                loadShared(b, loc, bElem,
                           sharedElementPtr(b, loc, bElem, bOffset, index))));
          }
          SmallVector<Value> next;
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j)
              next.push_back(LLVM::FMAOp::create(b, loc, as[i], bs[j],
                                                 sums[i * cols + j]));
          scf::YieldOp::create(b, loc, next);
        });
    rewriter.replaceOpWithMultiple(op, {SmallVector<Value>(loop.getResults())});
    return success();
  }
};

} // namespace

int64_t mlir::tessel::getDotBOffset(DotOp op) {
  return llvm::alignTo(getTileBytes(cast<TileType>(op.getA().getType())), 16);
}

int64_t mlir::tessel::getDotBytes(DotOp op) {
  return getDotBOffset(op) + getTileBytes(cast<TileType>(op.getB().getType()));
}

void mlir::tessel::populateDotPatterns(LLVMTypeConverter &converter,
                                       RewritePatternSet &patterns) {
  patterns.add<DotLowering>(converter, patterns.getContext());
}
