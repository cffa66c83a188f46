//===- CarryVectorLanes.cpp - Loops carry whole vectors, not their lanes --===//
//
// After the tile-to-slot conversion a loop carries each slot of a tile as its
// own scalar. Where the slots yielded by the body are the lanes of one small
// vector (two bf16 rounded by one cvt.rn.bf16x2.f32, for instance) and the
// next iteration packs them again (an MMA operand register), carrying the
// scalars splits the register at the back edge and re-packs it with permutes;
// the code generator cannot see through the phi. Carrying the vector keeps
// the packed register live instead. Uses of the old scalars become lane
// extracts, which LLVM folds into the repacking.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/TesselToLLVM.h"
#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// A vector yielded lane by lane: for each lane, the iter_arg carrying it.
struct LaneGroup {
  Value vector;
  SmallVector<int64_t> positions;
};

/// The vectors whose every lane the loop yields (each lane's first yield).
static SmallVector<LaneGroup> findLaneGroups(scf::YieldOp yield) {
  llvm::MapVector<Value, SmallVector<int64_t>> lanes;
  for (auto [i, operand] : llvm::enumerate(yield.getOperands())) {
    auto extract = operand.getDefiningOp<LLVM::ExtractElementOp>();
    if (!extract)
      continue;
    auto type = dyn_cast<VectorType>(extract.getVector().getType());
    APInt lane;
    if (!type || type.getRank() != 1 || type.isScalable() ||
        !matchPattern(extract.getPosition(), m_ConstantInt(&lane)) ||
        lane.getZExtValue() >= uint64_t(type.getNumElements()))
      continue;
    SmallVector<int64_t> &positions = lanes[extract.getVector()];
    positions.resize(type.getNumElements(), -1);
    int64_t &position = positions[lane.getZExtValue()];
    if (position < 0)
      position = i;
  }
  SmallVector<LaneGroup> groups;
  for (auto &[vector, positions] : lanes)
    if (llvm::all_of(positions, [](int64_t p) { return p >= 0; }))
      groups.push_back({vector, positions});
  return groups;
}

struct CarryVectorLanes : OpRewritePattern<scf::ForOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(scf::ForOp loop,
                                PatternRewriter &rewriter) const override {
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    SmallVector<LaneGroup> groups = findLaneGroups(yield);
    if (groups.empty())
      return failure();

    // Old iter_arg position -> (group, lane) for the carried lanes.
    DenseMap<int64_t, std::pair<size_t, int64_t>> carried;
    for (auto [g, group] : llvm::enumerate(groups))
      for (auto [lane, position] : llvm::enumerate(group.positions))
        carried[position] = {g, lane};

    Location loc = loop.getLoc();
    int64_t numArgs = loop.getNumRegionIterArgs();
    SmallVector<Value> inits;
    for (int64_t i = 0; i < numArgs; ++i)
      if (!carried.contains(i))
        inits.push_back(loop.getInitArgs()[i]);
    for (const LaneGroup &group : groups) {
      SmallVector<Value> lanes;
      for (int64_t position : group.positions)
        lanes.push_back(loop.getInitArgs()[position]);
      inits.push_back(vectorOf(rewriter, loc, lanes));
    }

    auto newLoop =
        scf::ForOp::create(rewriter, loc, loop.getLowerBound(),
                           loop.getUpperBound(), loop.getStep(), inits);
    newLoop->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
    newLoop.setUnsignedCmp(loop.getUnsignedCmp());
    Block *body = newLoop.getBody();
    int64_t numKept = numArgs - static_cast<int64_t>(carried.size());

    // The old body's arguments: kept iter_args map to the new ones in order,
    // carried lanes to extracts of the new vector arguments.
    auto lanesOf = [&](OpBuilder &b, Location at, ValueRange vectors,
                       ValueRange kept, int64_t count) {
      SmallVector<Value> values;
      int64_t next = 0;
      for (int64_t i = 0; i < count; ++i) {
        auto it = carried.find(i);
        if (it == carried.end()) {
          values.push_back(kept[next++]);
          continue;
        }
        auto [g, lane] = it->second;
        values.push_back(laneOf(b, at, vectors[g], lane));
      }
      return values;
    };
    rewriter.setInsertionPointToStart(body);
    ValueRange newArgs = newLoop.getRegionIterArgs();
    SmallVector<Value> replacements{newLoop.getInductionVar()};
    llvm::append_range(replacements,
                       lanesOf(rewriter, loc, newArgs.drop_front(numKept),
                               newArgs.take_front(numKept), numArgs));
    rewriter.mergeBlocks(loop.getBody(), body, replacements);

    auto oldYield = cast<scf::YieldOp>(body->getTerminator());
    SmallVector<Value> yielded;
    for (auto [i, operand] : llvm::enumerate(oldYield.getOperands()))
      if (!carried.contains(i))
        yielded.push_back(operand);
    for (const LaneGroup &group : groups)
      yielded.push_back(group.vector);
    rewriter.setInsertionPoint(oldYield);
    rewriter.replaceOpWithNewOp<scf::YieldOp>(oldYield, yielded);

    rewriter.setInsertionPointAfter(newLoop);
    ValueRange results = newLoop.getResults();
    rewriter.replaceOp(loop, lanesOf(rewriter, loc, results.drop_front(numKept),
                                     results.take_front(numKept), numArgs));
    return success();
  }
};

} // namespace

void mlir::tessel::populateCarryVectorLanesPatterns(
    RewritePatternSet &patterns) {
  patterns.add<CarryVectorLanes>(patterns.getContext());
}
