//===- TMAToLLVM.cpp - Bulk tensor copies and transaction barriers --------===//
//
// tessel.tma_load: thread 0 announces the tile's bytes to the barrier
// (mbarrier.arrive.expect_tx) and issues one cp.async.bulk.tensor per column
// block of the destination (getTMABox), coordinates innermost first as the
// tensor map orders its dimensions. The barrier's phase completes when the
// copies' bytes have landed, and every thread waits for it with
// mbarrier.try_wait.parity. tessel.mbarrier_alloc: thread 0 initialises
// the barriers (with their expected arrivals), and a fence and a CTA barrier
// make them visible to the copy engine and every thread.
// tessel.mbarrier_arrive: mbarrier.arrive (release) by each thread.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Barrier `index` of the barriers at `base`.
Value barrierAt(OpBuilder &b, Location loc, Value base, Value index) {
  return LLVM::GEPOp::create(b, loc, base.getType(), b.getI64Type(), base,
                             ValueRange{index});
}

struct MBarrierAllocLowering : SharedRegionPattern<MBarrierAllocOp> {
  using SharedRegionPattern::SharedRegionPattern;
  void lowerRegion(MBarrierAllocOp op, Value base,
                   ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t count = cast<MBarriersType>(op.getType()).getCount();
    emitIf(rewriter, loc, isThreadZero(rewriter, loc), [&](OpBuilder &b) {
      for (int64_t i = 0; i < count; ++i)
        NVVM::MBarrierInitOp::create(
            b, loc, barrierAt(b, loc, base, i32Constant(b, loc, i)),
            i32Constant(b, loc, op.getArrivals()), Value());
    });
    NVVM::FenceMbarrierInitOp::create(rewriter, loc);
    emitBarrier(rewriter, loc);
    rewriter.replaceOp(op, base);
  }
};

struct TMALoadLowering : OpConversionPattern<TMALoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TMALoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto desc = cast<TensorDescType>(op.getDesc().getType());
    TMABox box = *getTMABox(desc); // the verifier checked it
    Value issue = isThreadZero(rewriter, loc);
    if (Value cond = adaptor.getIssue())
      issue = andPredicates(rewriter, loc, issue, cond);
    Value barrier =
        barrierAt(rewriter, loc, adaptor.getBarriers(), adaptor.getIndex());
    emitIf(rewriter, loc, issue, [&](OpBuilder &b) {
      NVVM::MBarrierArriveExpectTxOp::create(
          b, loc, Type(), barrier, i32Constant(b, loc, box.bytes),
          NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
      // The tensor map orders dimensions innermost first.
      SmallVector<Value> coords(llvm::reverse(adaptor.getCoords()));
      Value inner = coords.front();
      for (int64_t k = 0; k < box.copies; ++k) {
        coords.front() =
            k ? arith::AddIOp::create(b, loc, inner,
                                      i32Constant(b, loc, k * box.box.back()))
              : inner;
        Value dst = LLVM::GEPOp::create(
            b, loc, adaptor.getDst().getType(), b.getI8Type(), adaptor.getDst(),
            ArrayRef<LLVM::GEPArg>{int32_t(k * box.copyStrideBytes)});
        // The CTA's own shared memory, addressed as shared::cluster memory.
        dst = LLVM::AddrSpaceCastOp::create(
            b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7), dst);
        NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
            b, loc, dst, adaptor.getDesc(), coords, barrier,
            /*im2colOffsets=*/ValueRange(), /*multicastMask=*/Value(),
            /*l2CacheHint=*/Value(), NVVM::TMALoadMode::TILE,
            /*isCTAOnly=*/false, /*group=*/nullptr, /*predicate=*/Value());
      }
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct MBarrierWaitLowering : OpConversionPattern<MBarrierWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MBarrierWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value barrier =
        barrierAt(rewriter, loc, adaptor.getBarriers(), adaptor.getIndex());
    // The hint (ns) lets a waiting warp sleep before it polls again.
    NVVM::MBarrierTryWaitParityOp::create(rewriter, loc, barrier,
                                          adaptor.getPhase(),
                                          i32Constant(rewriter, loc, 1000000));
    rewriter.eraseOp(op);
    return success();
  }
};

struct MBarrierArriveLowering : OpConversionPattern<MBarrierArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MBarrierArriveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value barrier =
        barrierAt(rewriter, loc, adaptor.getBarriers(), adaptor.getIndex());
    emitIf(rewriter, loc, adaptor.getArrive(), [&](OpBuilder &b) {
      NVVM::MBarrierArriveOp::create(
          b, loc, Type(), barrier, Value(),
          NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA));
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct BarrierLowering : OpConversionPattern<BarrierOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    emitBarrier(rewriter, op.getLoc());
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::tessel::populateTMAPatterns(
    LLVMTypeConverter &converter, RewritePatternSet &patterns,
    const DenseMap<Operation *, int64_t> &offsets) {
  patterns.add<MBarrierAllocLowering>(converter, offsets);
  patterns.add<TMALoadLowering, MBarrierWaitLowering, MBarrierArriveLowering,
               BarrierLowering>(converter, patterns.getContext());
}
