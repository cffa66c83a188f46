//===- WarpSpecializeToLLVM.cpp - Consumer warps and a producer warpgroup -===//
//
// tessel.warp_specialize stays while the tessel ops inside it are lowered
// (barriers and "thread zero" ask it which threads run their code: see
// emitBarrier), then becomes one branch on the thread index:
//   if (tid.x < 32 · consumer_warps) { setmaxnreg.inc; consumers }
//   else                             { setmaxnreg.dec; producer }
// setmaxnreg is warpgroup-wide (.sync.aligned): both sides are whole
// warpgroups, and the producer gives up its registers before the consumers
// take them. The warpgroup index and named barriers (bar.sync / bar.arrive
// with an id and a thread count) that tessel-ping-pong uses are here too.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/TesselToLLVM.h"
#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

struct WarpGroupIdLowering : OpConversionPattern<WarpGroupIdOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WarpGroupIdOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value tid = NVVM::ThreadIdXOp::create(rewriter, loc, rewriter.getI32Type());
    rewriter.replaceOpWithNewOp<LLVM::UDivOp>(op, tid,
                                              i32Constant(rewriter, loc, 128));
    return success();
  }
};

struct NamedBarrierWaitLowering : OpConversionPattern<NamedBarrierWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NamedBarrierWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    emitNamedBarrier(rewriter, op.getLoc(), adaptor.getId(), op.getThreads());
    rewriter.eraseOp(op);
    return success();
  }
};

struct NamedBarrierArriveLowering : OpConversionPattern<NamedBarrierArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NamedBarrierArriveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NVVM::BarrierArriveOp::create(rewriter, loc, adaptor.getId(),
                                  i32Constant(rewriter, loc, op.getThreads()));
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::tessel::populateWarpSpecializePatterns(LLVMTypeConverter &converter,
                                                  RewritePatternSet &patterns) {
  patterns.add<WarpGroupIdLowering, NamedBarrierWaitLowering,
               NamedBarrierArriveLowering>(converter, patterns.getContext());
}

/// Moves the ops of `from` to the start of `to` (before its terminator),
/// after a setmaxnreg when `registers` is given.
static void moveRegion(Region &from, Block *to,
                       std::optional<uint32_t> registers,
                       NVVM::SetMaxRegisterAction action) {
  OpBuilder b = OpBuilder::atBlockBegin(to);
  if (registers)
    NVVM::SetMaxRegisterOp::create(b, from.getLoc(), *registers, action);
  Block &body = from.front();
  to->getOperations().splice(b.getInsertionPoint(), body.getOperations());
}

void mlir::tessel::lowerWarpSpecialize(ModuleOp module) {
  SmallVector<WarpSpecializeOp> splits;
  module.walk([&](WarpSpecializeOp op) { splits.push_back(op); });
  for (WarpSpecializeOp op : splits) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
    Value consumer =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, tid,
                             i32Constant(b, loc, 32 * op.getConsumerWarps()));
    auto branch = scf::IfOp::create(b, loc, consumer, /*withElse=*/true);
    moveRegion(op.getConsumers(), branch.thenBlock(), op.getConsumerRegisters(),
               NVVM::SetMaxRegisterAction::increase);
    moveRegion(op.getProducer(), branch.elseBlock(), op.getProducerRegisters(),
               NVVM::SetMaxRegisterAction::decrease);
    op.erase();
  }
}
