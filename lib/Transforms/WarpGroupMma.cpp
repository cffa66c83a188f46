//===- WarpGroupMma.cpp - Tensor-core dots as Hopper warpgroup MMA --------===//
//
// On sm_90a a dot whose accumulator layout is made of whole warpgroups along
// M becomes
//   %p = tessel.warpgroup_dot %a, %b_smem, %acc
//   %r = tessel.warpgroup_dot_wait %p pendings = 0
// B must be in shared memory in a layout a wgmma matrix descriptor
// describes: tessel-pipeline's buffers usually are (SharedTileLayout is the
// tensor cores' swizzle); a B in registers is stored to a buffer of its own.
//
//===----------------------------------------------------------------------===//

#include "tessel/Passes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELWARPGROUPMMA
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The dimension along which the threads of a B tile hold runs of elements
/// (stored contiguous, its copy to shared memory is vectorisable).
static unsigned runDimension(TileType b) {
  if (auto blocked = dyn_cast_if_present<BlockedEncodingAttr>(b.getEncoding()))
    return blocked.getOrder()[0];
  return 1;
}

/// B of `dot` in shared memory in a layout wgmma reads, adding the buffer
/// and the store for a B in registers (once per B, where B is defined: a
/// loop-invariant B is stored before the loop); null if there is none.
static Value operandBInSharedMemory(DotOp dot,
                                    DenseMap<Value, Value> &buffers) {
  Value b = dot.getB();
  if (auto desc = dyn_cast<MemDescType>(b.getType())) {
    auto a = cast<TileType>(dot.getA().getType());
    auto acc = cast<TileType>(dot.getAcc().getType());
    return whyNotWarpGroupDot(a, desc, acc).empty() ? b : Value();
  }
  if (Value buffer = buffers.lookup(b))
    return buffer;
  auto tile = cast<TileType>(b.getType());
  unsigned preferred = runDimension(tile);
  MemDescType type;
  for (unsigned dim : {preferred, 1 - preferred})
    if ((type = getWarpGroupDotOperandB(dot.getContext(), tile.getShape(),
                                        tile.getElementType(), dim)))
      break;
  if (!type)
    return {};
  OpBuilder builder(dot);
  if (Operation *def = b.getDefiningOp())
    builder.setInsertionPointAfter(def);
  else
    builder.setInsertionPointToStart(cast<BlockArgument>(b).getOwner());
  Value buffer = LocalAllocOp::create(builder, dot.getLoc(), type);
  LocalStoreOp::create(builder, dot.getLoc(), b, buffer);
  return buffers[b] = buffer;
}

struct WarpGroupMmaPass
    : tessel::impl::TesselWarpGroupMmaBase<WarpGroupMmaPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!hasWarpGroupMma(module))
      return;
    SmallVector<DotOp> dots;
    module.walk([&](DotOp dot) { dots.push_back(dot); });
    DenseMap<Value, Value> buffers;
    for (DotOp dot : dots) {
      auto a = cast<TileType>(dot.getA().getType());
      auto acc = cast<TileType>(dot.getAcc().getType());
      if (!whyNotWarpGroupDot(a, MemDescType(), acc).empty())
        continue;
      Value b = operandBInSharedMemory(dot, buffers);
      if (!b)
        continue;
      OpBuilder builder(dot);
      Location loc = dot.getLoc();
      auto product = WarpGroupDotOp::create(builder, loc, acc, dot.getA(), b,
                                            dot.getAcc(), Value());
      if (dot->hasAttr(TesselDialect::getRotateAttrName()))
        product->setAttr(TesselDialect::getRotateAttrName(),
                         builder.getUnitAttr());
      auto wait =
          WarpGroupDotWaitOp::create(builder, loc, ValueRange{product}, 0);
      dot.getResult().replaceAllUsesWith(wait.getResults().front());
      dot.erase();
    }
  }
};

} // namespace
