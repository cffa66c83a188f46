//===- StageSlices.cpp - One shared copy of a tile sliced many times ------===//

#include "Conversion/TesselToLLVM/SharedBanks.h"
#include "Conversion/TesselToLLVM/TileLayout.h"
#include "tessel/Passes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELSTAGESLICES
#include "tessel/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The slices of `tile` in its own block or in regions nested there that
/// move data, if it is sliced more than once: by two or more slices, or by
/// one that a loop repeats or that has runtime offsets.
SmallVector<ExtractSliceOp> slicesOf(Value tile) {
  SmallVector<ExtractSliceOp> slices;
  bool repeated = false;
  Block *block = tile.getParentBlock();
  for (Operation *user : tile.getUsers())
    if (auto slice = dyn_cast<ExtractSliceOp>(user);
        slice && failed(sliceSlots(slice)))
      if (Operation *ancestor = block->findAncestorOpInBlock(*slice)) {
        slices.push_back(slice);
        repeated |= ancestor != slice || !slice.getOffsets().empty();
      }
  if (slices.size() < 2 && !repeated)
    slices.clear();
  return slices;
}

/// The pitch of the buffer staging an f32 `tile` for `slices` (0: whole
/// 16-byte chunks): of the even pitches up to 32 words beyond that one, the
/// one whose rows the store and the slices' reads take fewest wavefronts and
/// instructions to reach, in the layouts they have (cheapestPitch). Windows
/// read in the mma.sync accumulator layout want rows 8 or 24 words apart mod
/// 32; the 8- and 4-byte reads of runs of 4 columns, rows 2 words apart mod
/// 4.
int64_t chooseF32Pitch(Value tile, ArrayRef<ExtractSliceOp> slices) {
  auto type = cast<TileType>(tile.getType());
  if (!type.getElementType().isF32())
    return 0;
  FailureOr<SharedAccess> store = sharedAccessOf(type);
  if (failed(store))
    return 0;
  SmallVector<SharedAccess> reads;
  for (ExtractSliceOp slice : slices) {
    FailureOr<SharedAccess> read = sharedAccessOf(
        cast<TileType>(slice.getType()), slice.getStaticOffsets());
    if (failed(read))
      return 0;
    reads.push_back(*read);
  }
  int64_t rowElems = type.getDimSize(1), natural = llvm::alignTo(rowElems, 4);
  int64_t pitch = cheapestPitch(*store, reads, rowElems, natural,
                                /*elemBytes=*/4, /*step=*/2);
  return pitch == natural ? 0 : pitch;
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
      SmallVector<ExtractSliceOp> slices = slicesOf(tile);
      auto desc = MemDescType::get(tile.getContext(), type.getShape(),
                                   type.getElementType(), {1, 0},
                                   chooseF32Pitch(tile, slices), Attribute());
      Value buffer = LocalAllocOp::create(b, loc, desc);
      LocalStoreOp::create(b, loc, tile, buffer);
      for (ExtractSliceOp slice : slices) {
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
