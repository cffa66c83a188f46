//===- MemoryToLLVM.cpp - Global loads, stores, atomics and flags ---------===//
//
// One scalar access per slot, under its mask (predicated ld/st.global): a
// masked-off load yields `other` without touching memory. Writes come only from
// the owner of each element (a tile's replicated and wrapped copies stay
// silent; a scalar is written by thread 0), so an atomic adds each element
// once.
//
// Not yet vectorised: a thread's `sizePerThread` contiguous elements become
// separate ld/st.global instructions, not one ld.global.v4.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

Value zeroOf(OpBuilder &b, Location loc, Type type) {
  return LLVM::ZeroOp::create(b, loc, type);
}

/// The per-slot write predicates of an access through `ptr`: the owner
/// predicate of each slot of a tile, thread 0 for a scalar.
SmallVector<Value> writerPredicates(OpBuilder &b, Location loc, Value ptr,
                                    size_t numSlots) {
  auto tile = dyn_cast<TileType>(ptr.getType());
  if (!tile)
    return {isThreadZero(b, loc)};
  TileLayout layout = getLayout(tile);
  ThreadLayout thread(b, loc, layout);
  SmallVector<Value> preds;
  for (size_t slot = 0; slot < numSlots; ++slot)
    preds.push_back(thread.isOwner(slot));
  return preds;
}

/// Slot i of an optional mask (it has the pointers' layout).
Value maskAt(ValueRange mask, size_t i) {
  return mask.empty() ? Value() : mask[i];
}

struct LoadLowering : OpConversionPattern<LoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoadOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type elem = getTypeConverter()->convertType(
        getElementTypeOrSelf(op.getResult().getType()));
    ValueRange ptrs = adaptor.getPtr(), mask = adaptor.getMask(),
               other = adaptor.getOther();
    Slots result;
    for (auto [i, ptr] : llvm::enumerate(ptrs)) {
      Value pred = maskAt(mask, i), fallback;
      if (pred)
        fallback = other.empty() ? zeroOf(rewriter, loc, elem) : other[i];
      result.push_back(loadMasked(rewriter, loc, elem, ptr, pred, fallback));
    }
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }
};

struct StoreLowering : OpConversionPattern<StoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StoreOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ValueRange ptrs = adaptor.getPtr(), values = adaptor.getValue();
    SmallVector<Value> writers =
        writerPredicates(rewriter, loc, op.getPtr(), ptrs.size());
    for (auto [i, ptr] : llvm::enumerate(ptrs)) {
      Value pred = andPredicates(rewriter, loc, writers[i],
                                 maskAt(adaptor.getMask(), i));
      storeMasked(rewriter, loc, values[i], ptr, pred);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct AtomicAddLowering : OpConversionPattern<AtomicAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AtomicAddOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ValueRange ptrs = adaptor.getPtr(), values = adaptor.getValue();
    Type elem = values.front().getType();
    auto kind =
        isa<FloatType>(elem) ? LLVM::AtomicBinOp::fadd : LLVM::AtomicBinOp::add;
    SmallVector<Value> writers =
        writerPredicates(rewriter, loc, op.getPtr(), ptrs.size());
    Slots old;
    for (auto [i, ptr] : llvm::enumerate(ptrs)) {
      Value pred = andPredicates(rewriter, loc, writers[i],
                                 maskAt(adaptor.getMask(), i));
      old.push_back(emitIfElse(
          rewriter, loc, pred,
          [&, i = i, ptr = ptr](OpBuilder &b) {
            return LLVM::AtomicRMWOp::create(b, loc, kind, ptr, values[i],
                                             LLVM::AtomicOrdering::monotonic)
                .getResult();
          },
          zeroOf(rewriter, loc, elem)));
    }
    // Only the owner saw the old value; copies get it from the owner.
    if (!op.getResult().use_empty()) {
      if (auto tile = dyn_cast<TileType>(op.getResult().getType()))
        old = remapThroughShared(rewriter, loc, old, tile, tile,
                                 [&](OpBuilder &b, ArrayRef<Value> coords) {
                                   return linearIndex(b, loc, coords,
                                                      tile.getShape());
                                 });
      else
        old = {broadcastFromThreadZero(rewriter, loc, old.front())};
    }
    rewriter.replaceOpWithMultiple(op, {old});
    return success();
  }
};

/// The CTA's writes happen before the barrier; thread 0's release store at
/// GPU scope then publishes them (release is cumulative over what the
/// barrier ordered before it), as CUTLASS's semaphores do.
struct FlagSignalLowering : OpConversionPattern<FlagSignalOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FlagSignalOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    emitBarrier(rewriter, loc);
    emitIf(rewriter, loc, isThreadZero(rewriter, loc), [&](OpBuilder &b) {
      LLVM::StoreOp::create(b, loc, i32Constant(b, loc, 1), adaptor.getFlag(),
                            /*alignment=*/4, /*isVolatile=*/false,
                            /*isNonTemporal=*/false, /*isInvariantGroup=*/false,
                            LLVM::AtomicOrdering::release,
                            b.getStringAttr("device"));
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// Thread 0 spins on an acquire load at GPU scope and clears the flag; the
/// barrier then extends what it acquired to the whole CTA.
struct FlagWaitLowering : OpConversionPattern<FlagWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FlagWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value flag = adaptor.getFlag();
    emitIf(rewriter, loc, isThreadZero(rewriter, loc), [&](OpBuilder &b) {
      scf::WhileOp::create(
          b, loc, TypeRange{}, ValueRange{},
          [&](OpBuilder &b, Location loc, ValueRange) {
            Value v = LLVM::LoadOp::create(
                b, loc, b.getI32Type(), flag, /*alignment=*/4,
                /*isVolatile=*/false, /*isNonTemporal=*/false,
                /*isInvariant=*/false, /*isInvariantGroup=*/false,
                LLVM::AtomicOrdering::acquire, b.getStringAttr("device"));
            Value unset = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::eq, v, i32Constant(b, loc, 0));
            scf::ConditionOp::create(b, loc, unset, ValueRange{});
          },
          [&](OpBuilder &b, Location loc, ValueRange) {
            scf::YieldOp::create(b, loc);
          });
      LLVM::StoreOp::create(b, loc, i32Constant(b, loc, 0), flag);
    });
    emitBarrier(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::tessel::populateMemoryPatterns(LLVMTypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<LoadLowering, StoreLowering, AtomicAddLowering,
               FlagSignalLowering, FlagWaitLowering>(converter,
                                                     patterns.getContext());
}
