//===- StageSlices.cpp - One shared copy of a tile sliced many times ------===//

#include "Conversion/TesselToLLVM/SharedBanks.h"
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

/// Where `layout`'s slots of a tile sit, the offsets of `slice` added: its
/// static offsets (a runtime offset moves every thread alike: 0).
SharedAccess accessOf(Type tile, ArrayRef<int64_t> offsets = {}) {
  SharedAccess access{*TileLayout::get(cast<TileType>(tile))};
  if (offsets.size() == 2) {
    access.row = ShapedType::isDynamic(offsets[0]) ? 0 : offsets[0];
    access.col = ShapedType::isDynamic(offsets[1]) ? 0 : offsets[1];
  }
  return access;
}

/// The pitch of the buffer staging an f32 `tile` for `slices` (0: whole
/// 16-byte chunks): of the even pitches up to 32 words beyond that one, the
/// one whose rows the store and the slices' reads take fewest wavefronts and
/// instructions to reach, in the layouts they have. Windows read by the
/// mma.sync accumulator layout want rows 8 or 24 words apart mod 32, those
/// of a blocked layout with runs of 4 rows 2 mod 4 words apart (MTA's
/// backward has both, in different tiles).
int64_t chooseF32Pitch(Value tile, ArrayRef<ExtractSliceOp> slices) {
  auto type = cast<TileType>(tile.getType());
  if (!type.getElementType().isF32() ||
      llvm::any_of(slices,
                   [](ExtractSliceOp s) {
                     return failed(
                         TileLayout::get(cast<TileType>(s.getType())));
                   }) ||
      failed(TileLayout::get(type)))
    return 0;
  SmallVector<SharedAccess> store{accessOf(type)}, reads;
  for (ExtractSliceOp slice : slices)
    reads.push_back(accessOf(slice.getType(), slice.getStaticOffsets()));
  int64_t rowElems = type.getDimSize(1), natural = llvm::alignTo(rowElems, 4);
  auto cost = [&](int64_t pitch) {
    return sharedAccessCost(store, pitch) + sharedAccessCost(reads, pitch);
  };
  int64_t best = natural, bestCost = cost(natural);
  for (int64_t pitch = llvm::alignTo(rowElems, 2); pitch <= natural + 32;
       pitch += 2)
    if (int64_t c = cost(pitch); c < bestCost)
      best = pitch, bestCost = c;
  return best == natural ? 0 : best;
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
                                   type.getElementType(), {1, 0},
                                   chooseF32Pitch(tile, slicesOf(tile)));
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
