//===- RotateWarpGroupDots.cpp - Accumulating dots one iteration late -----===//
//
// In a loop such as attention's
//   for i: S = dot(Q, K_i); P, α = softmax(S); O = dot(P, V_i, O · α)
// the tensor cores idle while the threads compute the softmax: the dots are
// the only work they have and each needs the previous step done. Issuing
// P·V of block i in iteration i + 1, after S of block i + 1, lets it run
// while the threads compute the softmax of block i + 1:
//   for i: S = dot(Q, K_i); O = dot(P', V_{i-1}, O')
//          P, α = softmax(S); O' = wait(O) · α; P' = P
//   O = dot(P', V_last, O') if the loop ran
// The loop carries P' (zeros into the first iteration, whose late dot adds
// nothing), O' and the slot of V's buffer; tessel-pipeline gave that buffer
// a slot more, so the refill of iteration i + 1 does not overwrite what the
// late dot still reads.
//
//===----------------------------------------------------------------------===//

#include "tessel/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELROTATEWARPGROUPDOTS
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The B operand of a dot: a slot of a buffer allocated outside the loop,
/// maybe transposed.
struct BufferSlot {
  MemDescIndexOp index;
  MemDescTransOp trans;

  static std::optional<BufferSlot> of(Value b, scf::ForOp loop) {
    BufferSlot slot{};
    if ((slot.trans = b.getDefiningOp<MemDescTransOp>()))
      b = slot.trans.getSrc();
    slot.index = b.getDefiningOp<MemDescIndexOp>();
    if (!slot.index || !loop.isDefinedOutsideOfLoop(slot.index.getSrc()))
      return std::nullopt;
    return slot;
  }

  /// The same view of slot `i` of the buffer.
  Value view(OpBuilder &b, Location loc, Value i) {
    Value v =
        MemDescIndexOp::create(b, loc, index.getType(), index.getSrc(), i);
    if (trans)
      v = MemDescTransOp::create(b, loc, trans.getType(), v);
    return v;
  }
};

/// The op of `block` that is or holds `op`.
static Operation *inBlock(Operation *op, Block *block) {
  return block->findAncestorOpInBlock(*op);
}

/// Where the late dot of `loop` is issued: after the iteration's first other
/// warpgroup dot when that comes before any use of the accumulator `acc`,
/// else before that use.
static void setLateIssuePoint(OpBuilder &b, scf::ForOp loop, WarpGroupDotOp dot,
                              Value acc) {
  Block *body = loop.getBody();
  Operation *firstUse = nullptr;
  for (Operation *user : acc.getUsers()) {
    Operation *op = inBlock(user, body);
    if (!firstUse || op->isBeforeInBlock(firstUse))
      firstUse = op;
  }
  for (auto other : body->getOps<WarpGroupDotOp>())
    if (other != dot && (!firstUse || other->isBeforeInBlock(firstUse))) {
      b.setInsertionPointAfter(other);
      return;
    }
  b.setInsertionPoint(firstUse ? firstUse : dot.getOperation());
}

/// `v` as the loop's first iteration computes it, built before the loop
/// from pure ops; null when it depends on anything else carried or written.
static Value atFirstIteration(OpBuilder &b, scf::ForOp loop, Value v) {
  if (loop.isDefinedOutsideOfLoop(v))
    return v;
  if (v == loop.getInductionVar())
    return loop.getLowerBound();
  Operation *op = v.getDefiningOp();
  if (!op || op->getBlock() != loop.getBody() || !isPure(op) ||
      op->getNumRegions())
    return {};
  IRMapping map;
  for (Value operand : op->getOperands()) {
    Value first = atFirstIteration(b, loop, operand);
    if (!first)
      return {};
    map.map(operand, first);
  }
  return b.clone(*op, map)->getResult(cast<OpResult>(v).getResultNumber());
}

static Value zeros(OpBuilder &b, Location loc, TileType type) {
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  return SplatOp::create(b, loc, type, zero);
}

/// Issues `dot` one iteration late; false (and nothing changed) when the
/// loop is not of the shape above.
static bool rotate(WarpGroupDotOp dot, RewriterBase &rewriter) {
  auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
  // A goes round the loop in registers.
  if (!loop || !dot->hasOneUse() || !isa<TileType>(dot.getA().getType()))
    return false;
  auto wait = dyn_cast<WarpGroupDotWaitOp>(*dot->getUsers().begin());
  if (!wait || wait.getInputs().size() != 1 || !wait->hasOneUse())
    return false;
  OpOperand &yielded = *wait->getUses().begin();
  std::optional<BufferSlot> slot = BufferSlot::of(dot.getB(), loop);
  if (yielded.getOwner() != loop.getBody()->getTerminator() || !slot)
    return false;
  unsigned k = yielded.getOperandNumber();
  unsigned n = loop.getNumRegionIterArgs();
  Location loc = dot.getLoc();
  Type type = dot.getType();

  // The first iteration's late dot adds 0 · B: A starts as zeros and B as
  // the slot that iteration reads itself (written by then), so the loop
  // needs no predicate (a predicated wgmma makes ptxas fence every one).
  rewriter.setInsertionPoint(loop);
  Value firstSlot = atFirstIteration(rewriter, loop, slot->index.getIndex());
  if (!firstSlot)
    return false;
  auto rotated = cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
      rewriter,
      {zeros(rewriter, loc, cast<TileType>(dot.getA().getType())), firstSlot},
      /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
        return SmallVector<Value>{dot.getA(), slot->index.getIndex()};
      }));

  // In the body: the previous iteration's product, none in the first.
  BlockArgument acc = rotated.getRegionIterArg(k);
  setLateIssuePoint(rewriter, rotated, dot, acc);
  auto late = WarpGroupDotOp::create(
      rewriter, loc, type, rotated.getRegionIterArg(n),
      slot->view(rewriter, loc, rotated.getRegionIterArg(n + 1)), acc);
  // The wait keeps A (P') live: the next A, computed while the late dot
  // runs, must not take its registers. That binds LLVM, not ptxas: where
  // the next A is also the loop's exit value, ptxas may still give it P's
  // registers and serialise the function's wgmma (C7513), as a late dK did in
  // the StreamKL backward's middle loop (kernels-ptxas.test checks the tuned
  // forms).
  auto lateDone = WarpGroupDotWaitOp::create(rewriter, loc, ValueRange{late},
                                             late.getA(), 0);
  acc.replaceAllUsesExcept(lateDone.getResult(0), late);
  // The dot's accumulator input goes round instead of its product (the
  // yield is the rotated loop's own).
  rotated.getBody()->getTerminator()->setOperand(k, dot.getAcc());
  rewriter.eraseOp(wait);
  rewriter.eraseOp(dot);

  // After the loop: the last iteration's product, if there was one. A
  // branch rather than a predicate on the wgmma: ptxas serialises a
  // function's warpgroup MMAs around predicated ones it cannot prove taken.
  rewriter.setInsertionPointAfter(rotated);
  Value ran = arith::CmpIOp::create(
      rewriter, loc,
      rotated.getUnsignedCmp() ? arith::CmpIPredicate::ult
                               : arith::CmpIPredicate::slt,
      rotated.getLowerBound(), rotated.getUpperBound());
  Value result = rotated.getResult(k);
  auto ifRan = scf::IfOp::create(rewriter, loc, TypeRange{type}, ran,
                                 /*withElseRegion=*/true);
  rewriter.setInsertionPointToStart(ifRan.thenBlock());
  auto last = WarpGroupDotOp::create(
      rewriter, loc, type, rotated.getResult(n),
      slot->view(rewriter, loc, rotated.getResult(n + 1)), result);
  auto lastDone = WarpGroupDotWaitOp::create(rewriter, loc, ValueRange{last},
                                             last.getA(), 0);
  scf::YieldOp::create(rewriter, loc, lastDone.getResult(0));
  rewriter.setInsertionPointToStart(ifRan.elseBlock());
  auto keep = scf::YieldOp::create(rewriter, loc, result);
  result.replaceUsesWithIf(ifRan.getResult(0), [&](OpOperand &use) {
    return use.getOwner() != last && use.getOwner() != keep;
  });
  // The iteration's own view of B may have had no other reader.
  for (Operation *view :
       {slot->trans.getOperation(), slot->index.getOperation()})
    if (view && view->use_empty())
      rewriter.eraseOp(view);
  return true;
}

struct RotateWarpGroupDotsPass
    : tessel::impl::TesselRotateWarpGroupDotsBase<RotateWarpGroupDotsPass> {
  void runOnOperation() override {
    SmallVector<WarpGroupDotOp> marked;
    getOperation().walk([&](WarpGroupDotOp dot) {
      if (dot->removeAttr(TesselDialect::getRotateAttrName()))
        marked.push_back(dot);
    });
    IRRewriter rewriter(&getContext());
    for (WarpGroupDotOp dot : marked)
      rotate(dot, rewriter);
  }
};

} // namespace
