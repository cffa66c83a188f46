//===- DeferWarpGroupWaits.cpp - Let warpgroup dots run on ---------------===//
//
// tessel-warpgroup-mma waits for each warpgroup dot right after issuing it
// (tessel-order-warpgroup-dots may have issued other dots since). Here each
// such wait moves down its block to where the product is first needed, so
// that the tensor cores work on while the threads issue the next dots and
// compute:
//   %p = warpgroup_dot ...          %p = warpgroup_dot ...
//   %r = wait %p pendings = 0       %q = warpgroup_dot ...      (independent)
//   %q = warpgroup_dot ...    ==>   %r = wait %p pendings = 1
//   %s = wait %q pendings = 0       ... use %r ...
//   ... use %r ...                  %s = wait %q pendings = 0
// Groups complete in the order they were issued, so a wait for %p may leave
// the groups issued after it pending (also those issued before the wait
// already: a wait stands for its own products only). Waits move youngest
// first, so a wait that meets the wait of younger dots finds it as far down
// as it goes and joins it; one of older dots it passes. A wait stops
// before a use of its product, an op with regions that do more than compute
// (dots, waits, memory), the block's end and any
// op that may write a buffer its dots read (an operand in shared memory must
// stay as it was until the dot is done); a store to another buffer of the
// kernel's (the backward's dS while its dK product runs) lets it pass: the
// shared-memory layout keeps a dot's operands live until its wait, so no
// buffer allocated meanwhile shares their bytes. It passes an allocation
// only where that costs no bytes (the operands live through the block).
//
// Then the ops after a wait that only compute and need nothing it returns
// move above it: in attention's rotated loop the late P·V runs while the
// threads compute the exponentials and convert the next P, and only the
// rescale of O comes after the wait.
//
//===----------------------------------------------------------------------===//

#include "WarpGroupDots.h"

#include "tessel/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELDEFERWARPGROUPWAITS
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Whether any buffer the dots `wait` stands for read (nullptr: unknown)
/// satisfies `pred`.
static bool anyOperandBuffer(WarpGroupDotWaitOp wait,
                             function_ref<bool(Operation *)> pred) {
  return llvm::any_of(wait.getInputs(), [&](Value product) {
    return llvm::any_of(product.getDefiningOp()->getOperands(), [&](Value v) {
      return isa<MemDescType>(v.getType()) && pred(bufferOf(v));
    });
  });
}

/// Whether `op` may write shared memory that the dots `wait` stands for
/// read, or take their bytes.
static bool mayOverwriteOperands(Operation *op, WarpGroupDotWaitOp wait) {
  // A buffer allocated while the dots run does not share their operands'
  // bytes (the layout keeps those live until the wait); passing it costs
  // nothing only where they live through the block anyway, allocated in an
  // enclosing region (else the new buffer could have reused them: the
  // causal forward's second loop takes the first one's buffers).
  if (isa<LocalAllocOp>(op))
    return anyOperandBuffer(wait, [&](Operation *read) {
      return !read ||
             !read->getParentRegion()->isProperAncestor(op->getParentRegion());
    });
  Value written;
  if (auto store = dyn_cast<LocalStoreOp>(op))
    written = store.getDst();
  else if (auto copy = dyn_cast<AsyncCopyOp>(op))
    written = copy.getDst();
  else if (auto copy = dyn_cast<TMALoadOp>(op))
    written = copy.getDst();
  else
    return isa<AsyncWaitOp>(op);
  Operation *target = bufferOf(written);
  return !target || anyOperandBuffer(wait, [&](Operation *read) {
    return !read || read == target;
  });
}

/// The warpgroup dots whose products `wait` waits for, and the youngest of
/// them; null when one of them is not a dot of the wait's block.
static WarpGroupDotOp youngestDot(WarpGroupDotWaitOp wait) {
  WarpGroupDotOp youngest;
  for (Value input : wait.getInputs()) {
    auto dot = input.getDefiningOp<WarpGroupDotOp>();
    if (!dot || dot->getBlock() != wait->getBlock())
      return {};
    if (!youngest || youngest->isBeforeInBlock(dot))
      youngest = dot;
  }
  return youngest;
}

/// Moves `wait` down its block; returns the wait that now stands for it (a
/// later one it joined, or itself).
static WarpGroupDotWaitOp defer(WarpGroupDotWaitOp wait) {
  WarpGroupDotOp youngest = youngestDot(wait);
  if (!youngest)
    return wait;
  int64_t issued = 0;
  for (Operation *op = youngest->getNextNode(); op != wait;
       op = op->getNextNode())
    issued += isa<WarpGroupDotOp>(op);
  Operation *stop = wait->getNextNode();
  for (; !stop->hasTrait<OpTrait::IsTerminator>(); stop = stop->getNextNode()) {
    if (!regionsOnlyCompute(stop) || mayOverwriteOperands(stop, wait) ||
        llvm::any_of(wait->getUsers(),
                     [&](Operation *user) { return stop->isAncestor(user); }))
      break;
    if (auto later = dyn_cast<WarpGroupDotWaitOp>(stop)) {
      WarpGroupDotOp next = youngestDot(later);
      if (!next)
        break;
      // The wait of older dots leaves ours to us.
      if (next->isBeforeInBlock(youngest))
        continue;
      // Waiting for younger groups waits for these too.
      if (llvm::any_of(later.getInputs(), [&](Value v) {
            return !youngest->isBeforeInBlock(v.getDefiningOp());
          }))
        break;
      OpBuilder b(later);
      SmallVector<Value> inputs(later.getInputs());
      llvm::append_range(inputs, wait.getInputs());
      SmallVector<Value> reads(later.getReads());
      llvm::append_range(reads, wait.getReads());
      auto joined = WarpGroupDotWaitOp::create(b, later.getLoc(), inputs, reads,
                                               later.getPendings());
      unsigned n = later.getNumResults();
      later.replaceAllUsesWith(joined.getResults().take_front(n));
      wait.replaceAllUsesWith(joined.getResults().drop_front(n));
      later.erase();
      wait.erase();
      return joined;
    }
    if (isa<WarpGroupDotOp>(stop))
      ++issued;
  }
  if (stop != wait->getNextNode())
    wait->moveBefore(stop);
  wait.setPendings(issued);
  return wait;
}

/// Moves the ops after `wait` in its block that only compute and depend
/// neither on it nor on an op staying after it above it, in order.
static void hoistIndependentOps(WarpGroupDotWaitOp wait) {
  DenseSet<Operation *> staying{wait};
  for (Operation *op = wait->getNextNode();
       !op->hasTrait<OpTrait::IsTerminator>();) {
    Operation *next = op->getNextNode();
    SetVector<Value> read(op->operand_begin(), op->operand_end());
    getUsedValuesDefinedAbove(op->getRegions(), read);
    bool dependent = llvm::any_of(
        read, [&](Value v) { return staying.contains(v.getDefiningOp()); });
    if (dependent || !isMemoryEffectFree(op) || !regionsOnlyCompute(op))
      staying.insert(op);
    else
      op->moveBefore(wait);
    op = next;
  }
}

struct DeferWarpGroupWaitsPass
    : tessel::impl::TesselDeferWarpGroupWaitsBase<DeferWarpGroupWaitsPass> {
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks) {
      // Youngest first: a wait that joins a later one finds it where it
      // stays, and the joined wait stays there too (it waits for the later
      // one's products). A join erases only waits done with or being moved.
      SmallVector<WarpGroupDotWaitOp> waits(
          block->getOps<WarpGroupDotWaitOp>());
      for (WarpGroupDotWaitOp wait : llvm::reverse(waits))
        defer(wait);
    }
    getOperation().walk(
        [](WarpGroupDotWaitOp wait) { hoistIndependentOps(wait); });
  }
};

} // namespace
