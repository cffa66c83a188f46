//===- OrderWarpGroupDots.cpp - Issue dots in the order they are needed ---===//
//
// Warpgroup dots run in the background, and their groups complete in the
// order they were issued: a wait for one dot also waits for every dot issued
// before it. So a dot whose product is needed soon should be issued early,
// and ahead of dots needed later. In the attention backward, as written,
//   Sᵀ = K Qᵀ; Pᵀ = exp(..); dV += Pᵀ dO; dPᵀ = V dOᵀ; dSᵀ = Pᵀ ∘ (dPᵀ - Δ);
//   dK += dSᵀ Q; store dSᵀ; barrier; dQ = dS K; atomic_add(dQ)
// dPᵀ waits for the exponentials and dQ's wait for dV and dK; here
//   Sᵀ; dPᵀ; Pᵀ = exp(..); dSᵀ; store; barrier; dQ; dV; dK
// so dPᵀ runs while the threads compute the exponentials, and dV and dK
// while they add dQ to memory (tessel-defer-warpgroup-waits then waits for
// each product where it is needed).
//
// Each dot moves up its block past ops that only compute, waits, and dots
// whose products are needed after its own, taking along the ops that only
// compute its operands (the view of a pipeline slot); never past anything
// else that touches memory (the mbarrier or CTA barrier that makes its
// operands ready, a store). Then a dot whose product is needed after the
// next dot's moves below that one, past stores to other buffers and CTA
// barriers (a dot reads its operands until its wait, not at its issue, so
// issuing it later is safe where nothing in between writes them).
//
//===----------------------------------------------------------------------===//

#include "WarpGroupDots.h"

#include "tessel/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELORDERWARPGROUPDOTS
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The first op of `dot`'s block that reads its product (through the waits
/// for it); the block's terminator if none does before.
static Operation *firstNeed(WarpGroupDotOp dot) {
  Block *block = dot->getBlock();
  Operation *first = block->getTerminator();
  SmallVector<Value> products{dot.getResult()};
  while (!products.empty()) {
    Value product = products.pop_back_val();
    for (OpOperand &use : product.getUses()) {
      Operation *user = block->findAncestorOpInBlock(*use.getOwner());
      if (!user)
        continue;
      if (auto wait = dyn_cast<WarpGroupDotWaitOp>(user);
          wait && use.getOperandNumber() < wait.getInputs().size()) {
        products.push_back(wait.getResult(use.getOperandNumber()));
        continue;
      }
      if (user->isBeforeInBlock(first))
        first = user;
    }
  }
  return first;
}

/// Moves `dot` up its block past the ops that only compute, the waits, and
/// the dots whose products are needed after its own, taking along the ops
/// that only compute its operands (the view of a pipeline slot) and stopping
/// at any other op that defines one.
static void issueEarly(WarpGroupDotOp dot) {
  Operation *need = firstNeed(dot);
  SmallVector<Operation *> moving{dot};
  SetVector<Value> operands(dot->operand_begin(), dot->operand_end());
  Operation *above = dot->getPrevNode();
  for (; above; above = above->getPrevNode()) {
    bool pure = isMemoryEffectFree(above) && regionsOnlyCompute(above);
    if (llvm::any_of(above->getResults(),
                     [&](Value v) { return operands.contains(v); })) {
      if (!pure || above->getNumRegions())
        break;
      moving.push_back(above);
      operands.insert(above->operand_begin(), above->operand_end());
      continue;
    }
    auto other = dyn_cast<WarpGroupDotOp>(above);
    bool passable = isa<WarpGroupDotWaitOp>(above) ||
                    (other ? need->isBeforeInBlock(firstNeed(other)) : pure);
    if (!passable)
      break;
  }
  Operation *first = above ? above->getNextNode() : &dot->getBlock()->front();
  for (Operation *op : llvm::reverse(moving))
    if (op != first)
      op->moveBefore(first);
    else
      first = op->getNextNode();
}

/// Whether `dot` reads the buffer that `memdesc` views (true if unknown).
static bool readsBuffer(WarpGroupDotOp dot, Value memdesc) {
  Operation *target = bufferOf(memdesc);
  return !target || llvm::any_of(dot->getOperands(), [&](Value v) {
    return isa<MemDescType>(v.getType()) && bufferOf(v) == target;
  });
}

/// Issues `dot` after the next dot of its block when that one's product is
/// needed first and `dot` may wait: what lies between only computes, waits,
/// synchronises the CTA, allocates or stores to a buffer `dot` does not read
/// (the backward's dK goes after dQ, whose operand dSᵀ is stored and fenced
/// by a CTA barrier in between, so dQ's wait leaves dK running). The waits
/// for `dot` alone in between move with it. Returns whether it moved.
static bool issueAfterNext(WarpGroupDotOp dot) {
  SmallVector<Operation *> waits;
  WarpGroupDotOp next;
  for (Operation *op = dot->getNextNode(); op && !next;
       op = op->getNextNode()) {
    if ((next = dyn_cast<WarpGroupDotOp>(op)))
      continue;
    if (auto wait = dyn_cast<WarpGroupDotWaitOp>(op)) {
      // A wait that also stands for other dots would have to be split.
      if (llvm::is_contained(wait.getInputs(), dot.getResult())) {
        if (wait.getNumOperands() != 1)
          return false;
        waits.push_back(wait);
      }
      continue;
    }
    if (auto store = dyn_cast<LocalStoreOp>(op)) {
      if (readsBuffer(dot, store.getDst()))
        return false;
      continue;
    }
    // An allocation cannot take the bytes of the dot's operands: the dot,
    // issued after it, still reads them.
    bool pure = isMemoryEffectFree(op) && regionsOnlyCompute(op);
    if (!pure && !isa<BarrierOp, LocalAllocOp>(op))
      return false;
  }
  if (!next || !firstNeed(next)->isBeforeInBlock(firstNeed(dot)))
    return false;
  // Nothing reads the product before `next` (it is needed after next's), so
  // only its waits move along.
  dot->moveAfter(next);
  Operation *after = dot;
  for (Operation *wait : waits) {
    wait->moveAfter(after);
    after = wait;
  }
  return true;
}

struct OrderWarpGroupDotsPass
    : tessel::impl::TesselOrderWarpGroupDotsBase<OrderWarpGroupDotsPass> {
  void runOnOperation() override {
    getOperation().walk([](WarpGroupDotOp dot) { issueEarly(dot); });
    // Then dots needed later than the next one go after it, where only a
    // store or barrier kept that one from moving up.
    SmallVector<WarpGroupDotOp> dots;
    getOperation().walk([&](WarpGroupDotOp dot) { dots.push_back(dot); });
    for (WarpGroupDotOp dot : llvm::reverse(dots))
      while (issueAfterNext(dot)) {
      }
  }
};

} // namespace
