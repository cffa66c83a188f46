//===- DoubleBufferStores.cpp - A loop's shared tile in two buffers -------===//
//
// tessel.local_store starts with a CTA barrier so that the earlier readers
// of its buffer are done before it writes. In a loop that stores a tile to
// shared memory once per iteration and reads it there (the attention
// backward's dSᵀ, read by the warpgroup dot dQ = dS·K), that barrier is one
// of the iteration's two CTA-wide waits (measured: 2-3.5 % of the D64 and
// D128 attention backwards on an H200; the mma.sync kernels' staged tiles,
// read only by threads, ran slower in two buffers and keep one):
//   for i:  ...; %buf = local_alloc; local_store %t, %buf; ... dot %buf
// becomes
//   %bufs = local_alloc (2 buffers); barrier
//   for i:  ...; %buf = memdesc_index %bufs[i % 2];
//           local_store %t, %buf readers_done; ... dot %buf
// Iteration i writes the buffer iteration i - 2 read. Those reads are done
// in iteration i - 2 (a warpgroup dot's with the wait for its product), so
// every thread has finished them before it reaches the barrier that ends
// iteration i - 1's store, which every thread passes before iteration i's.
// The barrier before the loop does the same for what the memory held before
// (another buffer's readers, an earlier entry of the loop).
//
//===----------------------------------------------------------------------===//

#include "WarpGroupDots.h"

#include "tessel/Passes.h"

#include "Conversion/TesselToLLVM/TesselToLLVM.h"
#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELDOUBLEBUFFERSTORES
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Whether the product of `dot` is waited for in `block`, after the dot.
static bool waitedInBlock(WarpGroupDotOp dot, Block *block) {
  return llvm::any_of(dot->getUses(), [&](OpOperand &use) {
    auto wait = dyn_cast<WarpGroupDotWaitOp>(use.getOwner());
    return wait && use.getOperandNumber() < wait.getInputs().size() &&
           wait->getBlock() == block && dot->isBeforeInBlock(wait);
  });
}

/// The store of `alloc`, the only write of its buffer, when a warpgroup dot
/// reads the buffer and every access to it (through its views) is in
/// `alloc`'s block after that store and done within the block; null
/// otherwise.
static LocalStoreOp soleStoreReadInIteration(LocalAllocOp alloc) {
  Block *block = alloc->getBlock();
  LocalStoreOp store;
  bool dotReads = false;
  SmallVector<Operation *> accesses;
  for (Operation *user : accessesOf(alloc.getResult())) {
    if (auto write = dyn_cast<LocalStoreOp>(user)) {
      if (store || write.getDst() != alloc.getResult() ||
          write->getBlock() != block)
        return {};
      store = write;
      continue;
    }
    if (auto dot = dyn_cast<WarpGroupDotOp>(user)) {
      if (dot->getBlock() != block || !waitedInBlock(dot, block))
        return {};
      dotReads = true;
    } else if (!isa<LocalLoadOp>(user) ||
               !block->findAncestorOpInBlock(*user)) {
      return {};
    }
    accesses.push_back(block->findAncestorOpInBlock(*user));
  }
  if (!store || !dotReads || llvm::any_of(accesses, [&](Operation *access) {
        return !store->isBeforeInBlock(access);
      }))
    return {};
  return store;
}

/// Puts `alloc` (stored once per iteration of `loop`, read in it) in two
/// buffers taken in turn; leaves it as it is where the kernel would then
/// exceed its shared memory.
static void doubleBuffer(LocalAllocOp alloc, LocalStoreOp store,
                         scf::ForOp loop) {
  auto type = cast<MemDescType>(alloc.getType());
  SmallVector<int64_t> shape = {2};
  llvm::append_range(shape, type.getShape());
  OpBuilder b(loop);
  Location loc = alloc.getLoc();
  auto buffers =
      LocalAllocOp::create(b, loc, type.withShape(shape, type.getOrder()));
  auto barrier = BarrierOp::create(b, loc);

  // The buffer of iteration (iv - lb) / step, taken modulo 2; `made` lists
  // the ops made in the loop, to undo them.
  b.setInsertionPoint(alloc);
  SmallVector<Operation *> made;
  auto add = [&](Operation *op) {
    made.push_back(op);
    return op->getResult(0);
  };
  Value iv = loop.getInductionVar();
  Value count = add(arith::DivSIOp::create(
      b, loc, add(arith::SubIOp::create(b, loc, iv, loop.getLowerBound())),
      loop.getStep()));
  Value two =
      add(arith::ConstantOp::create(b, loc, b.getIntegerAttr(iv.getType(), 2)));
  Value slot = add(arith::RemSIOp::create(b, loc, count, two));
  if (slot.getType().isIndex())
    slot = add(arith::IndexCastOp::create(b, loc, b.getI32Type(), slot));
  else if (!slot.getType().isInteger(32))
    slot = add(arith::TruncIOp::create(b, loc, b.getI32Type(), slot));
  Value view = add(MemDescIndexOp::create(b, loc, type, buffers, slot));
  alloc.replaceAllUsesWith(view);

  func::FuncOp kernel = loop->getParentOfType<func::FuncOp>();
  if (getKernelSharedBytes(kernel) > getKernelSharedLimit(kernel)) {
    view.replaceAllUsesWith(alloc.getResult());
    for (Operation *op : llvm::reverse(made))
      op->erase();
    barrier.erase();
    buffers.erase();
    return;
  }
  alloc.erase();
  store.setReadersDone(true);
}

struct DoubleBufferStoresPass
    : tessel::impl::TesselDoubleBufferStoresBase<DoubleBufferStoresPass> {
  void runOnOperation() override {
    SmallVector<std::tuple<LocalAllocOp, LocalStoreOp, scf::ForOp>> found;
    getOperation().walk([&](LocalAllocOp alloc) {
      auto loop = dyn_cast<scf::ForOp>(alloc->getParentOp());
      if (!loop)
        return;
      if (LocalStoreOp store = soleStoreReadInIteration(alloc))
        found.emplace_back(alloc, store, loop);
    });
    for (auto [alloc, store, loop] : found)
      doubleBuffer(alloc, store, loop);
  }
};

} // namespace
