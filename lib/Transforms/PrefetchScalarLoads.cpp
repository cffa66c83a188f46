//===- PrefetchScalarLoads.cpp - A loop's scalar loads an iteration ahead -===//
//
// A scalar load whose address moves with a loop's induction variable
// (Multi-Token Attention's weights W[h, a, kb], eleven per query offset a
// of its convolution loop) is issued right before the arithmetic that
// needs it, with nothing else in flight: each iteration waits a trip to
// memory. Issued one iteration ahead, the loads of iteration i + 1 run
// while iteration i computes:
//   v0 = load(p(lb)) if lb < ub
//   for iv in [lb, ub) step st iter_args(v = v0):
//     next = load(p(iv + st < ub ? iv + st : iv))
//     ... v ...
//     yield next
// Only loads of arrays the kernel never writes move (their reads may then
// run in any order), whose pointer, mask and `other` come from the
// induction variable, loop invariants and pure ops of the body.
//
//===----------------------------------------------------------------------===//

#include "LoopSlice.h"
#include "tessel/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELPREFETCHSCALARLOADS
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The scalar loads of `loop`'s body that may run an iteration ahead, and
/// the body's ops their operands are computed from (defined before used).
struct Prefetchable {
  SmallVector<LoadOp> loads;
  SetVector<Operation *> slice;
};

/// Whether `values`, or the ops of `slice`, read `iv`.
static bool readsInductionVariable(ValueRange values,
                                   const SetVector<Operation *> &slice,
                                   Value iv) {
  auto reads = [&](ValueRange operands) {
    return llvm::is_contained(operands, iv);
  };
  return reads(values) || llvm::any_of(slice, [&](Operation *op) {
           return reads(op->getOperands());
         });
}

/// (`written`: the arrays the loop's kernel writes, writtenArrays.)
static Prefetchable prefetchable(scf::ForOp loop,
                                 const DenseSet<Value> &written) {
  Prefetchable found;
  for (auto load : loop.getBody()->getOps<LoadOp>()) {
    if (isa<TileType>(load.getType()))
      continue;
    Value base = baseArgument(load.getPtr());
    if (!base || written.contains(base))
      continue;
    SetVector<Operation *> slice;
    ValueRange operands = load->getOperands();
    if (!llvm::all_of(operands,
                      [&](Value v) { return collectSlice(v, loop, slice); }) ||
        !readsInductionVariable(operands, slice, loop.getInductionVar()))
      continue;
    found.loads.push_back(load);
    // Slices of earlier loads were collected the same way: each op's
    // operands join before it.
    found.slice.insert(slice.begin(), slice.end());
  }
  return found;
}

/// `a < bound` in the comparison of `loop`'s bounds (signed or unsigned).
static Value lessThan(OpBuilder &b, Location loc, scf::ForOp loop, Value a,
                      Value bound) {
  auto predicate = loop.getUnsignedCmp() ? arith::CmpIPredicate::ult
                                         : arith::CmpIPredicate::slt;
  return b.createOrFold<arith::CmpIOp>(loc, predicate, a, bound);
}

/// Clones `found`'s loads (and their slice) for iteration `at` of `loop`;
/// returns their values. Before the loop they are masked off unless `at`
/// is an iteration (known or not); inside it, past the end, they load
/// iteration `current`'s again instead: unmasked, LLVM folds their
/// addresses' offsets into the loads.
static SmallVector<Value> loadsAt(OpBuilder &b, scf::ForOp loop,
                                  const Prefetchable &found, Value at,
                                  Value current = {}) {
  Location loc = loop.getLoc();
  Value inRange = lessThan(b, loc, loop, at, loop.getUpperBound());
  if (current)
    at = arith::SelectOp::create(b, loc, inRange, at, current);
  IRMapping map;
  map.map(loop.getInductionVar(), at);
  for (Operation *op : found.slice)
    b.clone(*op, map);
  SmallVector<Value> values;
  for (LoadOp load : found.loads) {
    // A loop of constant bounds that runs needs no mask before it.
    if (current || matchPattern(inRange, m_One())) {
      values.push_back(b.clone(*load, map)->getResult(0));
      continue;
    }
    Value mask = inRange;
    if (Value m = load.getMask())
      mask = arith::AndIOp::create(b, loc, map.lookupOrDefault(m), inRange);
    auto clone = cast<LoadOp>(b.clone(*load, map));
    clone.getMaskMutable().assign(mask);
    values.push_back(clone);
  }
  return values;
}

static void prefetch(scf::ForOp loop, const Prefetchable &found) {
  OpBuilder before(loop);
  SmallVector<Value> first = loadsAt(before, loop, found, loop.getLowerBound());
  IRRewriter rewriter(loop);
  // Called before the body moves to the new loop: `loop`'s values stand
  // for the new loop's there.
  auto yieldNext = [&](OpBuilder &b, Location loc,
                       ArrayRef<BlockArgument>) -> SmallVector<Value> {
    // At the top of the body, so that the loads are in flight through it.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value next =
        arith::AddIOp::create(b, loc, loop.getInductionVar(), loop.getStep());
    return loadsAt(b, loop, found, next, loop.getInductionVar());
  };
  FailureOr<LoopLikeOpInterface> replaced = loop.replaceWithAdditionalYields(
      rewriter, first, /*replaceInitOperandUsesInLoop=*/false, yieldNext);
  auto newLoop = cast<scf::ForOp>(replaced->getOperation());
  ArrayRef<BlockArgument> carried =
      newLoop.getRegionIterArgs().take_back(found.loads.size());
  for (auto [load, value] : llvm::zip(found.loads, carried)) {
    LoadOp moved = load;
    moved.replaceAllUsesWith(value);
    moved.erase();
  }
}

struct PrefetchScalarLoadsPass
    : tessel::impl::TesselPrefetchScalarLoadsBase<PrefetchScalarLoadsPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp kernel) {
      std::optional<DenseSet<Value>> written = writtenArrays(kernel);
      if (!written)
        return;
      SmallVector<scf::ForOp> loops;
      kernel.walk([&](scf::ForOp loop) { loops.push_back(loop); });
      for (scf::ForOp loop : loops) {
        Prefetchable found = prefetchable(loop, *written);
        if (!found.loads.empty())
          prefetch(loop, found);
      }
    });
  }
};

} // namespace
