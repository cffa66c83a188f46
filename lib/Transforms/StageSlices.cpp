//===- StageSlices.cpp - One shared copy of a tile sliced many times ------===//

#include "tessel/Passes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELSTAGESLICES
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The slices of `tile` in its own block or in regions nested there, if it
/// is sliced more than once: by two or more slices, or by one that a loop
/// repeats or that has runtime offsets.
SmallVector<ExtractSliceOp> slicesOf(Value tile) {
  SmallVector<ExtractSliceOp> slices;
  bool repeated = false;
  Block *block = tile.getParentBlock();
  for (Operation *user : tile.getUsers())
    if (auto slice = dyn_cast<ExtractSliceOp>(user))
      if (Operation *ancestor = block->findAncestorOpInBlock(*slice)) {
        slices.push_back(slice);
        repeated |= ancestor != slice || !slice.getOffsets().empty();
      }
  if (slices.size() < 2 && !repeated)
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
                                           buffer, slice.getOffsets(),
                                           slice.getStaticOffsetsAttr());
        slice.replaceAllUsesWith(loaded);
        slice.erase();
      }
    }
  }
};

} // namespace
