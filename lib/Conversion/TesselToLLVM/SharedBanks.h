//===- SharedBanks.h - What a warp's shared accesses cost -------*- C++ -*-===//
//
// A model of the shared-memory pipe for choosing where a tile's rows sit:
// the wavefronts (one per 32 banks served) and instructions that one warp
// needs to read or write a 2-D tile of 1-, 2- or 4-byte elements in plain
// rows (staged f32 tiles, the scratch of layout changes).
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_CONVERSION_SHAREDBANKS_H
#define TESSEL_CONVERSION_SHAREDBANKS_H

#include "Conversion/TesselToLLVM/TileLayout.h"

namespace mlir::tessel {

/// Every slot of `layout` (rows along dimension 0, columns along 1), at
/// element (row, col) of the tile and beyond.
struct SharedAccess {
  TileLayout layout;
  int64_t row = 0, col = 0;
};

/// Every slot of `tile` at `offsets` (a dynamic one moves every thread
/// alike: 0); fails for a layout TileLayout does not know.
FailureOr<SharedAccess> sharedAccessOf(TileType tile,
                                       ArrayRef<int64_t> offsets = {});

/// Wavefronts plus instructions of warp 0 for `accesses` of rows of
/// `elemBytes`-byte elements, `pitch` elements apart. A thread's run of
/// columns goes as the widest accesses (at most 16 bytes) that the alignment
/// of its address allows; accesses of one layout at one row share the loads
/// of their columns (the code generator reuses an element that an earlier
/// window loaded).
int64_t sharedAccessCost(ArrayRef<SharedAccess> accesses, int64_t pitch,
                         int64_t elemBytes);

/// Of the multiples of `step` elements from `rowElems` to 32 words beyond
/// `natural`, the pitch where `writes` and `reads` cost least; `natural` on
/// a tie.
int64_t cheapestPitch(ArrayRef<SharedAccess> writes,
                      ArrayRef<SharedAccess> reads, int64_t rowElems,
                      int64_t natural, int64_t elemBytes, int64_t step);

} // namespace mlir::tessel

#endif // TESSEL_CONVERSION_SHAREDBANKS_H
