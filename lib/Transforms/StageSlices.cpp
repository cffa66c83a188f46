//===- StageSlices.cpp - One shared copy of a tile sliced many times ------===//

#include "tessel/Passes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELSTAGESLICES
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The slices of `tile` in its own block, if it has two or more there.
SmallVector<ExtractSliceOp> slicesOf(Value tile) {
  SmallVector<ExtractSliceOp> slices;
  for (Operation *user : tile.getUsers())
    if (auto slice = dyn_cast<ExtractSliceOp>(user))
      if (slice->getBlock() == tile.getParentBlock())
        slices.push_back(slice);
  if (slices.size() < 2)
    slices.clear();
  return slices;
}

struct StageSlicesPass : tessel::impl::TesselStageSlicesBase<StageSlicesPass> {
  void runOnOperation() override {
    SmallVector<Value> tiles;
    getOperation().walk([&](Operation *op) {
      for (Value result : op->getResults())
        if (auto tile = dyn_cast<TileType>(result.getType()))
          if (tile.getRank() == 2 && !isa<PtrType>(tile.getElementType()) &&
              !tile.getElementType().isInteger(1) && !slicesOf(result).empty())
            tiles.push_back(result);
    });
    for (Value tile : tiles) {
      auto type = cast<TileType>(tile.getType());
      OpBuilder b(tile.getContext());
      b.setInsertionPointAfterValue(tile);
      Location loc = tile.getLoc();
      auto desc = MemDescType::get(tile.getContext(), type.getShape(),
                                   type.getElementType(), {1, 0});
      Value buffer = LocalAllocOp::create(b, loc, desc);
      LocalStoreOp::create(b, loc, tile, buffer);
      for (ExtractSliceOp slice : slicesOf(tile)) {
        OpBuilder sb(slice);
        Value loaded = LocalLoadOp::create(sb, slice.getLoc(), slice.getType(),
                                           buffer, slice.getOffsetsAttr());
        slice.replaceAllUsesWith(loaded);
        slice.erase();
      }
    }
  }
};

} // namespace
